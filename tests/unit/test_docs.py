"""Every command and example the README and docs/ show is run here (CPU) or by the GPU tier
(tests/gpu/test_docs_gpu.py), as its block's marker says (tests/docs_blocks.py): the docs cannot drift
from what the package does. A block without a marker fails the first test.

Each command runs once: a ``trt-kernels`` line whose words the shell passes on unchanged runs in this process
(``trt_kernels.cli.main``, the console script's function) and its result is shared with the tests of tests/cli that
check the same command (tests/conftest.py's ``shared_runs``); every other line runs as written, by bash, in a fresh
process. The fresh processes of this file (those lines, one child for the Python blocks, one for the benchmarks'
--help) are queued at the session's start to run in the background (tests/support.py, early jobs), or started
together when the first test here needs one."""

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

import pytest

import docs_blocks as db
import support
from support import Job, collected_markers, job, plain_words

ALL = db.blocks()


def _ids(items):
    return [f"{b.where}:{c[:40]}" if isinstance(c, str) else b.where for b, c in items]


def _by_kind(*kinds):
    return [b for b in ALL if b.kind in kinds]


def test_every_block_says_how_it_is_tested():
    bad = [f"{b.where}: {b.kind or 'no <!-- docs-test: ... --> marker'}" for b in ALL if b.kind not in db.KINDS]
    assert not bad, "blocks the docs tests do not know how to run:\n" + "\n".join(bad)
    assert len(ALL) >= 15 and {b.path for b in ALL} >= {"README.md", "docs/cli.md", "docs/triton.md"}


def test_readme_is_a_first_hour_page_linking_the_docs():
    readme = (db.ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 220, "README.md grows past a first-hour page: move reference text to docs/"
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme))
    pages = {f"docs/{p.name}" for p in (db.ROOT / "docs").glob("*.md")}
    assert pages == linked, f"docs pages not linked from README.md: {sorted(pages - linked)}; " \
                            f"links to missing pages: {sorted(linked - pages)}"
    for page in (db.ROOT / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), f"{page.name} links to missing {target}"


def _scratch(tmp):
    """A folder like the repository root for the docs' relative paths, with its own cache: (folder, env)."""
    for name in ("examples", "benchmarks"):
        (tmp / name).symlink_to(db.ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_KERNELS_")}
    env["TRT_KERNELS_CACHE_DIR"] = str(tmp / "cache")
    return tmp, env


def _distinct(pairs):
    """One (block, command) per distinct command: the README and docs/ show some commands twice."""
    seen = {}
    for b, c in pairs:
        seen.setdefault(" ".join(shlex_split_command(c)), (b, c))
    return list(seen.values())


def shlex_split_command(command):
    return shlex.split(command, comments=True)


SHELL = _distinct([(b, c) for b in _by_kind("cpu") for c in b.commands()] +
                  [(b, c) for b in _by_kind("gpu") if "cpu-rc" in b.opts for c in b.commands()])


def _in_process(command):
    """The arguments of a plain ``trt-kernels`` line (run in this process); None for a line bash runs."""
    words = plain_words(command)
    return words[1:] if words and words[0] == "trt-kernels" else None


def _skip_reason(block):
    if block.opts.get("needs") and importlib.util.find_spec(block.opts["needs"]) is None:
        return f"needs {block.opts['needs']}, which is not installed"
    if block.kind != "cpu" and int(block.opts["cpu-rc"]) != 0 and _has_cuda():
        return "runs on the GPU tier where a GPU is visible"
    return None


def _children(tmp_path_factory):
    """This file's fresh processes (see the module's docstring), not started yet: {what: Job}."""
    jobs = {}
    for block, command in SHELL:
        if _skip_reason(block) is not None or _in_process(command) is not None:
            continue
        if plain_words(command) is not None:  # e.g. `python examples/...`: tests/cli runs it too
            jobs[command] = support.shared_runs(tmp_path_factory).shell_job(command)
            continue
        cwd, env = _scratch(tmp_path_factory.mktemp("docs-shell"))
        jobs[command] = Job(["bash", "-c", command], cwd=cwd, env=env)
    jobs["python blocks"] = _python_blocks(tmp_path_factory.mktemp("docs-python"))
    jobs["benchmarks --help"] = job(["-c", BENCH_HELP, *_benchmark_scripts()], cwd=db.ROOT)
    return jobs


support.early("docs", __file__, "children", _children)  # queued at the session's start (tests/support.py)


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    return {k: j.start() for k, j in support.early_jobs("docs", tmp_path_factory).items()}


@pytest.mark.parametrize("block,command", SHELL, ids=_ids(SHELL))
def test_shell_command_runs_on_the_cpu(block, command, children, shared_runs):
    reason = _skip_reason(block)
    if reason is not None:
        pytest.skip(f"{command!r}: {reason}")
    want = 0 if block.kind == "cpu" else int(block.opts["cpu-rc"])
    args = _in_process(command)
    r = shared_runs.cli(*args) if args is not None else children[command].result()
    out = r.stdout + r.stderr
    assert r.returncode == want, (f"{block.where}: {command!r} exited {r.returncode}, the docs say {want}:\n"
                                  f"{out[-4000:]}")
    assert "Traceback" not in out, out[-4000:]


def _has_cuda():
    import torch

    return torch.cuda.is_available()


COLLECT = _distinct([(b, c) for b in _by_kind("collect") for c in b.commands()])


def _marker_of(args):
    """``NAME`` of a ``python -m pytest [-m NAME]`` command (None: no ``-m``); anything else is not for one
    shared collection."""
    rest = args[3:]
    if not rest:
        return None
    if len(rest) == 2 and rest[0] == "-m" and rest[1].isidentifier():
        return rest[1]
    raise AssertionError(f"a collect block's command {' '.join(args)!r} is not `python -m pytest [-m NAME]`")


def _markers(tmp_path_factory):
    """Each test's markers, as ``python -m pytest`` collects them: this session's own collection where it was
    that one (tests/support.py, collected_markers), else one ``--collect-only`` run that records them
    (tests/marker_counts.py)."""
    marks = collected_markers()
    if marks is not None:
        return marks
    path = tmp_path_factory.mktemp("markers") / "markers.txt"
    env = dict(os.environ, TTK_MARKER_COUNTS=str(path),
               PYTHONPATH=os.pathsep.join([str(db.ROOT / "tests"), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-p", "marker_counts"], cwd=db.ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return [set(filter(None, line.split(","))) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """How many tests each distinct pytest command of the docs selects (``-m NAME``: the tests marked NAME)."""
    marks = _markers(tmp_path_factory)
    out = {}
    for block, command in COLLECT:
        args = shlex_split_command(command)
        assert args[:3] == ["python", "-m", "pytest"], f"{block.where}: a collect block holds {command!r}"
        name = _marker_of(args)
        out[command] = sum(1 for m in marks if name is None or name in m)
    return out


@pytest.mark.parametrize("block,command", COLLECT, ids=_ids(COLLECT))
def test_pytest_command_selects_tests(block, command, collected):
    assert collected[command] > 0, f"{command!r} selects no tests"


PYTHON = [b for b in _by_kind("python") if "gpu" not in b.flags]
# what a block must leave behind, beyond running without an exception
CHECKS = {
    "cpu-export": "calls = [n.target for n in ep.graph.nodes if n.op == 'call_function']\n"
                  "assert calls == [torch.ops.my_kernels.sigmoid.default], calls\n"
                  "val = [n for n in ep.graph.nodes if n.op == 'output'][0].args[0][0].meta['val']\n"
                  "assert tuple(val.shape) == (4, 1000) and val.dtype == torch.float32 and val.device.type == 'meta'\n",
}
ERRORS = _by_kind("error")


# The Python and error blocks, each in a namespace of its own, in one child process (a block is checked for what
# it does, not for what a process loads): a block's code from a file run as __main__ (as `python block.py` runs
# it) must end without an exception; an error block's code must raise, and the child prints the message. The
# error blocks go first, before their `after=` block declares the op for good.
BLOCKS_CHILD = r"""
import json, runpy, sys, traceback
results = {}
for key, kind, path in json.load(open(sys.argv[1])):
    try:
        if kind == "error":
            try:
                exec(compile(open(path).read(), "b", "exec"), {})
            except Exception as e:
                results[key] = {"ok": True, "out": str(e)}
            else:
                results[key] = {"ok": False, "out": "no error raised"}
        else:
            runpy.run_path(path, run_name="__main__")
            results[key] = {"ok": True, "out": ""}
    except BaseException:
        results[key] = {"ok": False, "out": traceback.format_exc()}
print("RESULT " + json.dumps(results))
"""


def _python_block_skip(block):
    if block.opts.get("prelude") == "triton" and importlib.util.find_spec("triton") is None:
        return "needs triton (pip install 'trt-kernels[triton]')"
    return None


def _error_block_code(block):
    base = db.named(ALL, block.opts["after"]).text
    drop = block.opts["drop"]
    kept = [ln for ln in base.splitlines() if drop not in ln]
    assert len(kept) < len(base.splitlines()), f"{block.where}: no line of {block.opts['after']!r} contains {drop!r}"
    return "\n".join(kept) + "\n"


def _python_blocks(tmp):
    """The child that runs every Python block (and error block) this machine can, in a scratch folder."""
    cwd, env = _scratch(tmp)
    todo = []
    for i, block in enumerate(ERRORS):
        path = tmp / f"error{i}.py"
        path.write_text(_error_block_code(block))
        todo.append([block.where, "error", str(path)])
    for i, block in enumerate(PYTHON):
        if _python_block_skip(block) is None:
            path = tmp / f"block{i}.py"
            path.write_text(db.program(ALL, block) + CHECKS.get(block.opts.get("name"), ""))
            todo.append([block.where, "python", str(path)])
    (tmp / "blocks.json").write_text(json.dumps(todo))
    return job(["-c", BLOCKS_CHILD, str(tmp / "blocks.json")], cwd=cwd, env=env)


def _block_result(children, block):
    r = children["python blocks"].result(timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, f"the docs blocks' child exited {r.returncode}:\n{r.stderr[-4000:]}"
    return json.loads(lines[-1][len("RESULT "):])[block.where]


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_block_runs_on_the_cpu(block, children):
    if _python_block_skip(block) is not None:
        pytest.skip(_python_block_skip(block))
    res = _block_result(children, block)
    assert res["ok"], f"{block.where}:\n{res['out'][-4000:]}"


def test_every_named_block_with_a_check_exists():
    for name in CHECKS:
        db.named(ALL, name)


@pytest.mark.parametrize("block", ERRORS, ids=[b.where for b in ERRORS])
def test_error_block_is_the_error_raised(block, children):
    res = _block_result(children, block)
    assert res["ok"], f"{block.where}: {res['out'][-3000:]}"
    got = res["out"].splitlines()
    for i, want in enumerate(block.text.rstrip("\n").splitlines()):
        assert i < len(got), f"{block.where}: the error has {len(got)} lines:\n{res['out']}"
        if want.endswith("..."):
            assert got[i].startswith(want[:-3].rstrip(", ")), f"line {i}: {got[i]!r} vs the docs' {want!r}"
        else:
            assert got[i] == want, f"line {i}: {got[i]!r} vs the docs' {want!r}"


FRAGMENTS = _by_kind("fragment")


@pytest.mark.parametrize("block", FRAGMENTS, ids=[b.where for b in FRAGMENTS])
def test_fragment_lines_are_in_the_example(block):
    source = {ln.strip() for ln in (db.ROOT / block.opts["file"]).read_text().splitlines()}
    missing = [ln for ln in block.commands() if ln.strip() not in source]
    assert not missing, f"{block.where}: lines not in {block.opts['file']}:\n" + "\n".join(missing)


def test_synopsis_options_exist():
    """Each synopsis line's options and choices are in its subcommand's --help (one process: the CLI's parser)."""
    lines = [(b, shlex_split_command(c)) for b in _by_kind("synopsis") for c in b.commands()]
    assert lines and all(w[0] == "trt-kernels" for _, w in lines), lines
    subs = sorted({w[1] for _, w in lines})
    code = ("import contextlib, io, sys\nfrom trt_kernels import cli\nfor sub in sys.argv[1:]:\n"
            "    buf = io.StringIO()\n    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):\n"
            "        cli.main([sub, '--help'])\n    print('=== ' + sub)\n    print(buf.getvalue())\n")
    r = subprocess.run([sys.executable, "-c", code, *subs], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    helps = dict(part.split("\n", 1) for part in r.stdout.split("=== ")[1:])
    for block, words in lines:
        text = helps[words[1]]
        assert "usage" in text, f"trt-kernels {words[1]} --help printed:\n{text}"
        for word in words[2:]:
            for opt in re.findall(r"--[\w-]+", word):
                assert opt in text, f"{block.where}: `trt-kernels {words[1]} --help` does not list {opt}"
            for choice in re.findall(r"^([a-z]+(?:\|[a-z]+)+)$", word):
                for c in choice.split("|"):
                    assert c in text, f"{block.where}: `trt-kernels {words[1]}` has no {c!r}"


def _run_commands():
    return {c for b in _by_kind("cpu", "gpu") for c in b.commands()}


def test_output_sessions_show_commands_the_tests_run():
    run = {shlex_split_command(c) and " ".join(shlex_split_command(c)) for c in _run_commands()}
    for block in _by_kind("output"):
        shown = [ln[2:] for ln in block.text.splitlines() if ln.startswith("$ ")]
        assert shown, f"{block.where}: an output block without a `$ ` command"
        for cmd in shown:
            assert " ".join(shlex_split_command(cmd)) in run, f"{block.where}: `{cmd}` is not a command the tests run"


def test_pip_blocks_name_extras_that_exist_and_ci_installs_the_test_extra():
    extras = set(tomllib.loads((db.ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    ci = (db.ROOT / ".ci" / "run").read_text()
    for block in _by_kind("pip"):
        for cmd in block.commands():
            assert cmd.startswith("pip install "), f"{block.where}: {cmd!r}"
            for named in re.findall(r"\[([\w,-]+)\]", cmd):
                assert set(named.split(",")) <= extras, f"{block.where}: {cmd!r} names an extra pyproject lacks"
            if '".[test]"' in cmd:
                assert 'pip install -q -e ".[test]"' in ci, ".ci/run no longer installs the test extra"
            if "--index-url" in cmd:
                assert "torch" in cmd and "download.pytorch.org/whl/cpu" in cmd
    assert ci.index('"torch==') < ci.index('".[test]"'), ".ci/run must install CPU torch before the package"


def test_device_blocks_parse():
    for block in _by_kind("device"):
        for cmd in block.commands():
            words = shlex_split_command(cmd)
            assert words[0] == "bash" and (db.ROOT / words[1]).is_file(), cmd
            r = subprocess.run(["bash", "-n", str(db.ROOT / words[1])], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr


def test_inline_commands_name_what_exists():
    """Commands quoted in the prose: the subcommand, the file or the pytest marker must exist."""
    subs = set(re.findall(r"\{([\w,-]+)\}", subprocess.run([sys.executable, "-m", "trt_kernels", "--help"],
                                                           capture_output=True, text=True).stdout)[0].split(","))
    markers = {m.split(":")[0] for m in tomllib.loads((db.ROOT / "pyproject.toml").read_text())
               ["tool"]["pytest"]["ini_options"]["markers"]}
    checked = 0
    for where, cmd in db.inline_commands():
        words = cmd.split()
        if words[0] == "trt-kernels" and not words[1].startswith("-"):
            assert words[1].split("|")[0] in subs, f"{where}: `{cmd}`"
        elif words[0] in ("python", "python3", "bash") and words[1].endswith((".py", ".sh")) or \
                words[0] == "bash" and words[1].startswith(".ci/"):
            assert (db.ROOT / words[1]).is_file(), f"{where}: `{cmd}`: no such file"
        elif words[:3] == ["python", "-m", "pytest"] and "-m" in words[3:]:
            marker = words[words.index("-m", 3) + 1].strip("\"'")
            assert marker in markers, f"{where}: `{cmd}`: no marker {marker!r}"
        else:
            continue
        checked += 1
    assert checked >= 10


# Each benchmark script's --help, one after the other in one child process: run as `python benchmarks/NAME.py
# --help` runs it (run as __main__, its folder first on sys.path, its arguments in sys.argv); the child prints
# each one's exit status and output.
BENCH_HELP = r"""
import contextlib, io, json, os, runpy, sys
out = {}
for script in sys.argv[1:]:
    buf, saved = io.StringIO(), list(sys.path)
    sys.argv[:] = [script, "--help"]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    code = 0
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) or e.code is None else 1
    except BaseException as e:
        code = f"{type(e).__name__}: {e}"
    sys.path[:] = saved
    out[script] = [code or 0, buf.getvalue()]
print("RESULT " + json.dumps(out))
"""


def _benchmark_scripts():
    return sorted({w.split()[1] for _, w in db.inline_commands() if w.split()[1].startswith("benchmarks/")})


def test_benchmarks_the_docs_name_parse_their_arguments(children):
    """The benchmark scripts the docs name answer --help without a GPU (their runs are GPU-tier work)."""
    scripts = _benchmark_scripts()
    assert scripts, "the docs name no benchmark"
    r = children["benchmarks --help"].result()
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, f"the --help child exited {r.returncode}:\n{r.stderr[-3000:]}"
    got = json.loads(lines[-1][len("RESULT "):])
    for s in scripts:
        code, text = got[s]
        assert code == 0 and "usage" in text.lower(), f"{s} --help exited {code}:\n{text[-1500:]}{r.stderr[-1500:]}"


def test_shutil_which_finds_the_console_script():
    assert shutil.which("trt-kernels"), "the docs' `trt-kernels` commands need the package installed (pip install -e .)"
