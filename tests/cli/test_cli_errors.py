"""What a new user meets first: a wrong target, a wrong --rank or --arch, --json on failure, --version,
--help. Every failure is one ``error: ...`` line on stderr (and one JSON document on stdout under --json),
exit status 1, no traceback."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from trt_kernels.cli import main

ONE_OP = """
import trt_kernels as ttk
ttk.cuda_kernel_op("{ns}::dbl", ttk.KernelSpec(
    kernel_source='extern "C" __global__ void dbl(const float* x, int n, float* y) '
                  '{{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }}',
    kernel_name="dbl", inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
    extras=[ttk.Numel("x")], geometry=ttk.Elementwise(block=(256,))))
"""

SPEC_ERROR = """
import trt_kernels as ttk
ttk.cuda_kernel_op("{ns}::bad", ttk.KernelSpec(
    kernel_source='extern "C" __global__ void k(const float* x, float* y) {{}}',
    kernel_name="k", inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("nope"))]))
"""

_count = [0]


def _write(tmp_path, template):
    _count[0] += 1
    ns = f"ttk_clierr{os.getpid()}_{_count[0]}"
    p = tmp_path / f"ops_{ns}.py"
    p.write_text(textwrap.dedent(template.format(ns=ns)))
    return str(p), ns


def _one_error_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _targets(tmp_path):
    spec, ns = _write(tmp_path, SPEC_ERROR)
    missing = str(tmp_path / "no_such_file.py")
    return [(missing, "no such file"), ("no_such_module_ttk_cli", "no module named 'no_such_module_ttk_cli'"),
            (spec, f"{ns}::bad"), (str(tmp_path), "is a directory. Fix: pass the .py file in it")]


# ---------------- 1: a target that does not load ----------------


@pytest.mark.parametrize("cmd", [["status"], ["inspect"], ["compile", "--arch", "sm_90"]])
def test_every_command_taking_a_target_reports_a_bad_target_in_one_line(tmp_path, capsys, cmd):
    for target, what in _targets(tmp_path):
        assert main([*cmd, target]) == 1
        cap = capsys.readouterr()
        line = _one_error_line(cap.err)
        assert target in line and what in line and "Fix:" in line, line
        assert cap.out == ""


def test_status_bad_target_in_a_fresh_process_prints_no_traceback(tmp_path):
    spec, ns = _write(tmp_path, SPEC_ERROR)
    r = subprocess.run([sys.executable, "-m", "trt_kernels", "status", spec], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 1
    line = _one_error_line(r.stderr)
    assert f"{ns}::bad" in line and "SpecError" in line and "Fix:" in line


def test_status_still_reports_a_good_target(tmp_path, capsys):
    path, ns = _write(tmp_path, ONE_OP)
    assert main(["status", path]) == 0
    assert f"{ns}::dbl" in capsys.readouterr().out


@pytest.mark.parametrize("cmd", [["status"], ["inspect"], ["compile", "--arch", "sm_90"]])
def test_a_file_importing_a_sibling_module_loads_as_python_runs_it(tmp_path, capsys, cmd):
    """``python ops.py`` puts the file's folder first on sys.path; so do the commands taking a file, and they
    leave sys.path as it was."""
    ns = f"ttk_clisib{os.getpid()}_{cmd[0]}"
    mod = f"ttk_sibling_{cmd[0]}"
    (tmp_path / f"{mod}.py").write_text(textwrap.dedent(ONE_OP.format(ns=ns)))
    user = tmp_path / "ops_using_sibling.py"
    user.write_text(f"import {mod}  # noqa: F401  (declares {ns}::dbl)\n")
    path_before = list(sys.path)
    try:
        assert main([*cmd, str(user)]) == 0, capsys.readouterr().err
        assert f"{ns}::dbl" in capsys.readouterr().out
        assert sys.path == path_before
    finally:
        sys.modules.pop(mod, None)


def test_a_bad_trt_kernels_arch_is_one_error_line_naming_it(tmp_path, capsys, monkeypatch):
    """TRT_KERNELS_ARCH that is no arch: every command that compiles or says the compile arch fails with one
    line naming the variable and the fix (one JSON document under --json), before importing the user's file;
    doctor reports it among its checks."""
    path, _ = _write(tmp_path, ONE_OP)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "foo")
    for argv in (["info"], ["status", path], ["inspect", path], ["inspect", path, "--arch", "sm_80"],
                 ["compile", path, "--arch", "sm_90"]):
        assert main(argv) == 1, argv
        line = _one_error_line(capsys.readouterr().err)
        assert "TRT_KERNELS_ARCH=foo" in line and "Fix:" in line and "unset it" in line, line
    for cmd in ("status", "inspect", "compile", "selftest"):
        doc = _json_error(capsys, [cmd, *([path] if cmd != "selftest" else []), "--json"], f"trt-kernels.{cmd}/1")
        assert "TRT_KERNELS_ARCH=foo" in doc["error"]


def test_status_says_an_arch_nvrtc_cannot_compile_for_as_such(tmp_path, capsys, monkeypatch):
    """TRT_KERNELS_ARCH=sm_10 is an arch, but no NVRTC compiles for it: status says so with the archs it can (as
    inspect and compile do), not "importing it failed ... correct the declaration"."""
    path, _ = _write(tmp_path, ONE_OP)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_10")
    assert main(["status", path]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "TRT_KERNELS_ARCH=sm_10: NVRTC" in line and "cannot compile for sm_10 (it compiles for sm_" in line, line
    assert "correct the declaration" not in line and "Fix: TRT_KERNELS_ARCH=sm_90, or unset it" in line


# ---------------- 2: --json prints one document, errors included ----------------


def _json_error(capsys, argv, schema):
    assert main(argv) == 1
    cap = capsys.readouterr()
    doc = json.loads(cap.out)  # exactly one document
    assert doc["schema"] == schema and doc["ok"] is False and doc["error"], doc
    assert "Fix:" in doc["error"]
    _one_error_line(cap.err)
    return doc


def test_inspect_json_on_error_prints_one_document(tmp_path, capsys):
    path, ns = _write(tmp_path, ONE_OP)
    for target, what in _targets(tmp_path):
        doc = _json_error(capsys, ["inspect", target, "--json"], "trt-kernels.inspect/1")
        assert what in doc["error"] and doc["target"] == target
    doc = _json_error(capsys, ["inspect", path, "--json", "--op", f"{ns}::nope"], "trt-kernels.inspect/1")
    assert f"{ns}::nope" in doc["error"]
    _json_error(capsys, ["inspect", path, "--json", "--rank", "x"], "trt-kernels.inspect/1")
    _json_error(capsys, ["inspect", path, "--json", "--arch", "bogus"], "trt-kernels.inspect/1")


def test_a_usage_mistake_under_json_is_one_document_too(tmp_path, capsys):
    path, _ = _write(tmp_path, ONE_OP)
    for cmd in ("status", "inspect", "compile", "doctor", "selftest"):
        argv = [cmd, *([path] if cmd in ("status", "inspect", "compile") else []), "--json", "--bogus"]
        doc = _json_error(capsys, argv, f"trt-kernels.{cmd}/1")
        assert "unrecognized arguments: --bogus" in doc["error"]
    assert main(["info", "--json"]) == 1  # (info has no --json: a usage mistake, said in one line)
    cap = capsys.readouterr()
    assert cap.out == "" and "unrecognized arguments: --json" in _one_error_line(cap.err)


def test_compile_json_on_error_prints_one_document(tmp_path, capsys, monkeypatch):
    path, ns = _write(tmp_path, ONE_OP)
    for target, what in _targets(tmp_path):
        doc = _json_error(capsys, ["compile", target, "--arch", "sm_90", "--json"], "trt-kernels.compile/1")
        assert what in doc["error"]
    doc = _json_error(capsys, ["compile", path, "--arch", "sm_90", "--json", "--op", f"{ns}::nope"],
                      "trt-kernels.compile/1")
    assert f"{ns}::nope" in doc["error"]
    _json_error(capsys, ["compile", path, "--arch", "bogus", "--json"], "trt-kernels.compile/1")
    monkeypatch.setenv("TRT_KERNELS_CACHE", "0")
    doc = _json_error(capsys, ["compile", path, "--arch", "sm_90", "--json"], "trt-kernels.compile/1")
    assert "cache is disabled" in doc["error"]


def test_compile_json_success_says_ok(tmp_path, capsys):
    path, ns = _write(tmp_path, ONE_OP)
    assert main(["compile", path, "--arch", "sm_90", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["failed"] == 0


def test_doctor_and_selftest_json_print_a_document_when_they_fail_early(capsys, monkeypatch):
    from trt_kernels.cli import doctor, selftest

    def boom(*a, **k):
        raise RuntimeError("something broke")

    monkeypatch.setattr(doctor, "gather", boom)
    monkeypatch.setattr(selftest, "selftest", boom)
    for cmd, schema in (("doctor", "trt-kernels.doctor/1"), ("selftest", "trt-kernels.selftest/1")):
        assert main([cmd, "--json"]) == 1
        cap = capsys.readouterr()
        doc = json.loads(cap.out)
        assert doc["schema"] == schema and doc["ok"] is False and "something broke" in doc["error"]
        assert doc["exit_status"] == 1


# ---------------- 3: --rank names a tensor input of a selected op ----------------


def test_inspect_rank_for_an_unknown_name_is_an_error(tmp_path, capsys):
    path, ns = _write(tmp_path, ONE_OP)
    assert main(["inspect", path, "--arch", "sm_90", "--rank", "y=3"]) == 1
    cap = capsys.readouterr()
    line = _one_error_line(cap.err)
    assert "--rank" in line and "'y'" in line and "'x'" in line and "Fix:" in line, line
    assert "[" not in line, line  # names as words, not a Python list
    assert cap.out == ""
    assert main(["inspect", path, "--arch", "sm_90", "--rank", "x=3"]) == 0
    assert "at ranks x=3" in capsys.readouterr().out
    doc = _json_error(capsys, ["inspect", path, "--arch", "sm_90", "--rank", "y=3", "--json"],
                      "trt-kernels.inspect/1")
    assert "'y'" in doc["error"]


def test_inspect_rank_checked_against_the_selected_op_only(tmp_path, capsys):
    path, ns = _write(tmp_path, ONE_OP + ONE_OP.replace("::dbl", "::dbl2").replace('"x"', '"z"'))
    # z is an input of dbl2, not of dbl: with --op dbl it is unknown; without --op it applies to dbl2
    assert main(["inspect", path, "--arch", "sm_90", "--op", f"{ns}::dbl", "--rank", "z=3"]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert f"{ns}::dbl" in line and "'z'" in line
    assert main(["inspect", path, "--arch", "sm_90", "--rank", "z=3", "--json"]) == 0
    ops = json.loads(capsys.readouterr().out)["ops"]
    assert ops[0]["plan"]["ranks"] == {"x": 2} and ops[1]["plan"]["ranks"] == {"z": 3}


# ---------------- 4: an arch NVRTC does not support ----------------


def _nvrtc_archs():
    from trt_kernels.sources.nvrtc import nvrtc_supported_archs

    return nvrtc_supported_archs()


@pytest.mark.parametrize("cmd", ["inspect", "compile"])
def test_unsupported_arch_names_the_supported_ones(tmp_path, capsys, cmd):
    archs = _nvrtc_archs()
    assert archs and 50 not in archs
    path, ns = _write(tmp_path, ONE_OP)
    assert main([cmd, path, "--arch", "sm_50"]) == 1
    cap = capsys.readouterr()
    line = _one_error_line(cap.err)
    assert "sm_50" in line and f"sm_{archs[0]}" in line and f"sm_{archs[-1]}" in line and "Fix:" in line, line
    assert "invalid value for --gpu-architecture" not in cap.out + cap.err
    doc = _json_error(capsys, [cmd, path, "--arch", "sm_50", "--json"], f"trt-kernels.{cmd}/1")
    assert "sm_50" in doc["error"] and f"sm_{archs[0]}" in doc["error"]


def test_unsupported_arch_from_the_environment(tmp_path, capsys, monkeypatch):
    path, ns = _write(tmp_path, ONE_OP)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_50")
    assert main(["inspect", path]) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert "TRT_KERNELS_ARCH" in line and "sm_50" in line


def test_doctor_reads_nvrtc_archs_through_the_shared_helper(monkeypatch):
    from trt_kernels.cli import doctor
    from trt_kernels.sources import nvrtc as _compile

    monkeypatch.setattr(_compile, "nvrtc_supported_archs", lambda: (80, 90))
    assert doctor.gather()["nvrtc_archs"] == [80, 90]


# ---------------- 5, 6: --version, --help ----------------


def test_version(capsys):
    import torch

    import trt_kernels

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"trt-kernels {trt_kernels.__version__}") and "\n" not in out
    assert f"torch {torch.__version__}" in out


@pytest.mark.parametrize("cmd", [[], ["info"], ["status"], ["cache"], ["inspect"], ["compile"], ["doctor"],
                                 ["selftest"]])
def test_help_is_plain_text(capsys, cmd):
    with pytest.raises(SystemExit) as e:
        main([*cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: trt-kernels" in out
    for markup in ("``", ":func:", ":meth:", ":class:"):
        assert markup not in out, out
    # a description under the usage, not only the usage and the options
    blocks = [x.strip() for x in out.split("\n\n") if x.strip()]
    assert not blocks[1].startswith(("positional arguments", "options")), out


def test_a_reader_that_stops_reading_gets_no_traceback(tmp_path):
    """``trt-kernels ... | head -1``: the reader gone, the rest of the output is dropped, status 1, nothing on
    stderr. (A pipe on purpose, its reading end closed before the command writes.)"""
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.Popen([sys.executable, "-m", "trt_kernels", "cache", "path"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    err = p.stderr.read().decode()
    p.stderr.close()
    assert p.wait(timeout=120) == 1 and err == "", err


def test_help_version_and_cache_answer_without_importing_torch(tmp_path):
    """A fresh process: ``--help``, ``--version``, ``cache path|clear`` and a usage mistake never import torch, and
    ``--help`` costs well under a second (0.3 s here: the CPU time of importing the command and answering, which the
    machine's other work does not stretch as it does the wall time)."""
    code = textwrap.dedent("""
        import sys, time
        t0 = time.process_time()
        from trt_kernels.cli import main
        for argv in (["--help"], ["--version"], ["cache", "path"], ["cache", "clear"]):
            try:
                main(argv)
            except SystemExit as e:
                assert e.code in (0, None), (argv, e.code)
            if argv == ["--help"]:
                print("HELP_SECONDS", time.process_time() - t0, file=sys.stderr)
        assert main(["stat"]) == 1 and main(["inspect", "x.py", "--bogus"]) == 1  # usage mistakes, said as quickly
        print("TORCH", "torch" in sys.modules, file=sys.stderr)
    """)
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = dict(ln.split(" ", 1) for ln in r.stderr.splitlines() if ln.startswith(("HELP_SECONDS", "TORCH")))
    assert lines["TORCH"] == "False", r.stderr
    assert float(lines["HELP_SECONDS"]) < 0.3, lines


@pytest.mark.parametrize("argv, says", [(["cache"], "the following arguments are required: action"),
                                        (["cache", "wipe"], "invalid choice: 'wipe'"),
                                        (["stat"], "invalid choice: 'stat'"),
                                        (["doctor", "--jsn"], "unrecognized arguments: --jsn"),
                                        ([], "no command given (the commands: info, status, cache, inspect, "),
                                        (["--bogus"], "unrecognized arguments: --bogus (the commands: info, "),
                                        (["--bogus", "status"], "unrecognized arguments: --bogus.")])
def test_usage_mistakes_are_one_error_line_and_exit_status_1(capsys, argv, says):
    assert main(argv) == 1
    line = _one_error_line(capsys.readouterr().err)
    assert says in line and "Fix: see `trt-kernels" in line, line


def test_status_json_is_one_document(tmp_path, capsys):
    path, ns = _write(tmp_path, ONE_OP)
    assert main(["status", path, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "trt-kernels.status/1" and doc["ok"] is True
    assert f"{ns}::dbl" in [row["op"] for row in doc["ops"]] and "available" in doc["tensorrt"]
    _json_error(capsys, ["status", str(tmp_path / "missing.py"), "--json"], "trt-kernels.status/1")
