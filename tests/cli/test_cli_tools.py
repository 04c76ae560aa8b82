"""trt-kernels inspect, compile, doctor and selftest on CPU (NVRTC runs without a GPU).

The commands run in this process (tests/support.py, run_cli: the CLI's main with the environment a test gives
it, stdout and stderr captured, the compile memos emptied first, as a fresh process has them), each module file
declaring its ops under a namespace of its own. Fresh processes where that is what a test checks: the processes
that declare the ops after ``compile`` (that one compiles nothing and loads no NVRTC) and selftest's child
processes."""

import copy
import json
import os
import stat
import textwrap

import pytest
import torch

from support import finish, run_cli, start
from trt_kernels.cli import doctor, main, selftest

HAS_CUDA = torch.cuda.is_available()

SEED_FILE = """
from trt_kernels.cli import seed_cases
seed_cases.declare({ns!r})
"""

BAD_FILE = """
import trt_kernels as ttk
ttk.cuda_kernel_op("{ns}::swapped", ttk.KernelSpec(
    kernel_source='extern "C" __global__ void k(const float* a, float* b, int n) '
                  '{{ int i = threadIdx.x; if (i < n) b[i] = a[i]; }}',
    kernel_name="k", inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
    extras=[ttk.Numel("x")], geometry=ttk.Elementwise(block=(256,))))
"""

JIT_FILE = """
import torch
import trt_kernels as ttk
SRC = ('extern "C" __global__ void dbl(const float* x, int n, float* y) '
       '{{ int i = threadIdx.x; if (i < n) y[i] = 2 * x[i]; }}')
def meta(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)
def eager(x):
    return 2 * x
ttk.cuda_kernel_op("{ns}::dbl", ttk.KernelSpec(kernel_source=SRC, kernel_name="dbl", inputs=[ttk.InputDecl("x")]),
                   meta_fn=meta, eager_fn=eager)
"""

_count = [0]


def _write(tmp_path, template, ns=None):
    _count[0] += 1
    ns = ns or f"ttk_cli{os.getpid()}_{_count[0]}"
    p = tmp_path / f"ops_{ns}.py"
    p.write_text(textwrap.dedent(template.format(ns=ns)))
    return p, ns


def _env(tmp_path, **extra):
    env = dict(os.environ)
    env.pop("TRT_KERNELS_ARCH", None)
    env["TRT_KERNELS_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def _cli(args, env):
    return run_cli(args, env=env)


# ---------------- inspect ----------------


@pytest.fixture(scope="module")
def seed_inspect(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inspect")
    path, ns = _write(tmp, SEED_FILE)
    r = _cli(["inspect", str(path), "--json"], _env(tmp))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), ns, tmp, path


def test_inspect_reports_every_seed_op(seed_inspect):
    data, ns, _, _ = seed_inspect
    assert data["schema"] == "trt-kernels.inspect/1" and data["ok"] is True
    assert [d["op"] for d in data["ops"]] == [f"{ns}::{n}" for n in
                                              ("sigmoid", "add", "scale", "relu_2d", "row_sum", "repeat2", "sin_cos")]
    if not HAS_CUDA:
        assert data["arch"] == "sm_90" and "no GPU visible" in data["arch_note"]


def test_inspect_abi_signature_and_ptx_params(seed_inspect):
    data, ns, _, _ = seed_inspect
    ops = {d["op"].split("::")[1]: d for d in data["ops"]}
    scale = ops["scale"]
    assert scale["schema"] == "(Tensor x, float alpha) -> Tensor"
    row = scale["abi"][0]
    assert row["c_signature"] == ("__global__ void my_scale(const float* x, float alpha, int extra0 /* Numel('x') */, "
                                  "float* y)")
    assert [p["type"] for p in row["ptx_params"]] == ["u64", "f32", "u32", "u64"]
    assert row["matches"] is True and row["param_ok"] == [True] * 4 and row["symbol"] == "my_scale"
    sc = ops["sin_cos"]["abi"][0]
    assert sc["c_signature"].endswith("float* s, float* c)") and len(sc["ptx_params"]) == 4
    rep = ops["repeat2"]
    assert rep["abi"][0]["c_signature"] is None and rep["abi"][0]["matches"] is None
    assert [p["type"] for p in rep["abi"][0]["ptx_params"]] == ["u64", "u32", "u64"]


def test_inspect_launch_plan_is_written_over_input_names(seed_inspect):
    data, _, _, _ = seed_inspect
    ops = {d["op"].split("::")[1]: d for d in data["ops"]}
    sig = ops["sigmoid"]["plan"]
    assert sig["grid"] == ["cdiv(x.numel(), 256)", "1", "1"] and sig["block"] == [256, 1, 1]
    assert sig["arguments"] == ["x.data_ptr()", "x.numel()", "y.data_ptr()"] and sig["ranks_assumed"] == ["x"]
    relu = ops["relu_2d"]["plan"]
    assert relu["grid"] == ["cdiv(x.shape[1], 16)", "cdiv(x.shape[0], 16)", "1"] and relu["block"] == [16, 16, 1]
    rs = ops["row_sum"]["plan"]
    assert rs["outputs"] == [{"name": "y", "shape": ["x.shape[0]"], "dtype": "dtype of x"}]
    assert rs["arguments"] == ["x.data_ptr()", "x.shape[1]", "y.data_ptr()"]
    assert ops["scale"]["plan"]["arguments"][1] == "alpha"
    assert ops["repeat2"]["plan"]["derived"] is False and "aot_fn" in ops["repeat2"]["plan"]["note"]
    assert ops["row_sum"]["tactics"] == [{"id": 1, "block": [256, 1, 1], "note": "eager uses this"}]
    assert all(d["dtypes"] == ["float32"] for d in data["ops"])


def test_inspect_cache_entry_is_the_file_on_disk(seed_inspect):
    data, _, tmp, _ = seed_inspect
    for d in data["ops"]:
        c = d["cache"]
        assert c["path"].startswith(str(tmp / "cache")) and os.path.getsize(c["path"]) == c["bytes"] > 0
        assert c["state"] == "compiled by NVRTC in this process"


def test_inspect_tensorrt_mode_and_reason(seed_inspect, tmp_path):
    data, _, _, _ = seed_inspect
    ops = {d["op"].split("::")[1]: d for d in data["ops"]}
    assert all(d["tensorrt"]["plugin"] == "AOT" for d in data["ops"])
    assert "scalars (alpha) are baked" in ops["scale"]["tensorrt"]["why"]
    assert "aot_fn given" in ops["repeat2"]["tensorrt"]["why"]
    if data["tensorrt_side"].get("available") != "yes":
        assert all(d["tensorrt"]["converter"].startswith("not registered: ") for d in data["ops"])
    path, ns = _write(tmp_path, JIT_FILE)
    jit_data = _inspect_json(path, "sm_80")
    assert jit_data["_rc"] == 0
    (jit,) = jit_data["ops"]
    assert jit["tensorrt"]["plugin"] == "JIT" and "Fix for AOT" in jit["tensorrt"]["why"]
    assert jit["arch"] == "sm_80" and jit["cache"]["arch"] == "sm_80"


def _inspect_json(path, arch, *extra):
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["inspect", str(path), "--json", "--arch", arch, *extra])
    data = json.loads(buf.getvalue())
    data["_rc"] = rc
    return data


def test_inspect_text_output(seed_inspect):
    _, ns, tmp, path = seed_inspect
    r = _cli(["inspect", str(path), "--op", f"{ns}::scale", "--arch", "sm_90"], _env(tmp))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"{ns}::scale(Tensor x, float alpha) -> Tensor" in out and f"{ns}::sigmoid" not in out
    assert "expects       __global__ void my_scale(const float* x, float alpha" in out
    assert "spec and PTX agree" in out and "grid        (cdiv(x.numel(), 256), 1, 1)" in out
    assert "plugin AOT" in out


def test_inspect_rank_option(tmp_path):
    path, ns = _write(tmp_path, SEED_FILE)
    data = _inspect_json(path, "sm_90", "--op", f"{ns}::sigmoid", "--rank", "x=3")
    plan = data["ops"][0]["plan"]
    assert plan["ranks"] == {"x": 3} and plan["ranks_assumed"] == []
    assert plan["outputs"][0]["shape"] == ["x.shape[0]", "x.shape[1]", "x.shape[2]"]


def test_inspect_abi_mismatch_names_op_param_and_fix(tmp_path):
    path, ns = _write(tmp_path, BAD_FILE)
    data = _inspect_json(path, "sm_90")
    assert data["_rc"] == 1 and data["ok"] is False
    assert data["error"].startswith(f"1 of 1 op failed, first {ns}::swapped: {ns}::swapped: kernel 'k' takes 3")
    assert data["error"].endswith(op_error := data["ops"][0]["errors"][0])  # whole: its first line cut the fix
    assert "\n" in op_error and "Fix:" in data["error"]
    (op,) = data["ops"]
    row = op["abi"][0]
    assert row["matches"] is False and row["param_ok"] == [True, False, False]
    assert [p["type"] for p in row["ptx_params"]] == ["u64", "u64", "u32"]
    assert op["errors"] and f"{ns}::swapped" in op["errors"][0] and "Fix:" in op["errors"][0]
    # with an arch known at import (or a GPU), inspect still imports the module (declarations compile
    # nothing under the command) and reports the op's ABI error itself: non-zero exit, no traceback
    r = _cli(["inspect", str(path)], _env(tmp_path, TRT_KERNELS_ARCH="sm_90"))
    assert r.returncode == 1 and f"{ns}::swapped" in r.stdout and "Fix:" in r.stdout and "<-- differs" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


def test_inspect_unknown_op_and_missing_target(tmp_path, capsys):
    path, ns = _write(tmp_path, SEED_FILE)
    assert main(["inspect", str(path), "--op", f"{ns}::nope"]) == 1
    err = capsys.readouterr().err
    assert f"declares no op '{ns}::nope'" in err and f"{ns}::sigmoid" in err
    assert main(["inspect", "no_such_module_ttk"]) == 1
    assert "no module named 'no_such_module_ttk'" in capsys.readouterr().err


# ---------------- compile ----------------


def test_compile_fills_the_cache_and_a_fresh_process_compiles_nothing(tmp_path):
    path, ns = _write(tmp_path, SEED_FILE)
    env = _env(tmp_path)
    r = _cli(["compile", str(path), "--arch", "sm_90", "--json"], env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["archs"] == ["sm_90"] and data["nvrtc_compiles"] == 7 and data["cache_hits"] == 0
    for row in data["rows"]:
        assert row["result"] == "compiled by NVRTC" and os.path.getsize(row["entry"]) == row["bytes"] > 0
        assert row["ms"] > 0
    probe = textwrap.dedent(f"""
        import runpy, json, sys
        from trt_kernels import registry
        runpy.run_path({str(path)!r})
        ops = [k for k in registry.all_ops() if k.op_name.startswith({ns + '::'!r})]
        print(json.dumps({{k.op_name: k.builds()[k.resolve_arch()].from_cache for k in ops}}))
        print(json.dumps("cuda.bindings.nvrtc" in sys.modules))  # our only way to NVRTC
    """)
    wants = {"sm_90": True, "sm_80": False}  # sm_80 was not compiled ahead: NVRTC runs
    probes = finish({arch: start(["-c", probe], env=_env(tmp_path, TRT_KERNELS_ARCH=arch)) for arch in wants})
    for arch, want in wants.items():
        p = probes[arch]
        assert p.returncode == 0, p.stderr
        got, nvrtc = (json.loads(ln) for ln in p.stdout.strip().splitlines()[-2:])
        assert len(got) == 7 and set(got.values()) == {want}, (arch, got)
        assert nvrtc is (not want), "a process whose kernels are all cached must not load NVRTC"
    again = json.loads(_cli(["compile", str(path), "--arch", "90", "--json"], env).stdout)
    assert again["nvrtc_compiles"] == 0 and again["cache_hits"] == 7


def test_op_is_repeatable_and_each_name_is_checked(tmp_path):
    path, ns = _write(tmp_path, SEED_FILE)
    env = _env(tmp_path)
    data = json.loads(_cli(["compile", str(path), "--arch", "sm_90", "--op", f"{ns}::scale", "--op", f"{ns}::add",
                            "--json"], env).stdout)
    assert [r["op"] for r in data["rows"]] == [f"{ns}::add", f"{ns}::scale"]  # (in declaration order)
    doc = json.loads(_cli(["inspect", str(path), "--arch", "sm_90", "--op", f"{ns}::add", "--op", f"{ns}::scale",
                           "--json"], env).stdout)
    assert sorted(o["op"] for o in doc["ops"]) == [f"{ns}::add", f"{ns}::scale"]
    r = _cli(["inspect", str(path), "--op", f"{ns}::add", "--op", f"{ns}::nope"], env)
    assert r.returncode == 1 and f"declares no op '{ns}::nope'" in r.stderr and "Fix: --op NS::NAME" in r.stderr


def test_compile_text_lists_what_it_wrote(tmp_path):
    path, ns = _write(tmp_path, SEED_FILE)
    r = _cli(["compile", str(path), "--arch", "sm_90", "--arch", "sm_80", "--op", f"{ns}::add"], _env(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(f"{ns}::add") == 2 and ".bin (" in r.stdout
    assert "total: 2 programs, 2 compiled by NVRTC" in r.stdout
    assert "[" not in r.stderr  # no progress bar when stderr is not a terminal


def test_compile_without_arch_takes_the_compile_arch_and_says_so_and_refuses_without_a_cache(tmp_path):
    path, _ = _write(tmp_path, SEED_FILE)
    r = _cli(["compile", str(path)], _env(tmp_path))
    assert r.returncode == 0, r.stderr
    if not HAS_CUDA:  # the one rule's default, said as info says it
        assert "(sm_90, from the default: no GPU visible and TRT_KERNELS_ARCH unset)" in r.stdout, r.stdout
        info = _cli(["info"], _env(tmp_path))
        assert "compile arch  sm_90 (the default: no GPU visible and TRT_KERNELS_ARCH unset)" in info.stdout
        status = _cli(["status", str(path)], _env(tmp_path))
        assert "compile arch: sm_90 (the default: no GPU visible and TRT_KERNELS_ARCH unset)" in status.stdout
    r = _cli(["compile", str(path)], _env(tmp_path, TRT_KERNELS_ARCH="sm_80"))
    assert r.returncode == 0 and "(sm_80, from TRT_KERNELS_ARCH)" in r.stdout, r.stdout + r.stderr
    r = _cli(["compile", str(path), "--arch", "sm_90"], _env(tmp_path, TRT_KERNELS_CACHE="0"))
    assert r.returncode == 1 and "cache is disabled" in r.stderr


def test_compile_refuses_a_cache_others_can_write(tmp_path):
    path, _ = _write(tmp_path, SEED_FILE)
    shared = tmp_path / "open-to-all"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    r = _cli(["compile", str(path), "--arch", "sm_90"], _env(tmp_path, TRT_KERNELS_CACHE_DIR=str(shared)))
    assert r.returncode == 1 and "is not private to you" in r.stderr and f"Fix: chmod go-w {shared}" in r.stderr
    assert not list(shared.iterdir())


def test_compile_fails_where_the_cache_keeps_nothing(tmp_path):
    """A cache directory that cannot be written: every compiled row is a failure saying so, never "compiled"
    with the promise that a process now reads it from there."""
    path, ns = _write(tmp_path, SEED_FILE)
    (tmp_path / "a-file").write_text("not a directory")
    env = _env(tmp_path, TRT_KERNELS_CACHE_DIR=str(tmp_path / "a-file" / "cache"))
    r = _cli(["compile", str(path), "--arch", "sm_90", "--op", f"{ns}::add", "--json"], env)
    data = json.loads(r.stdout)
    assert r.returncode == 1 and data["ok"] is False and data["failed"] == 1
    (row,) = data["rows"]
    assert row["result"] == "failed" and "not written" in row["detail"] and "Fix:" in row["detail"]
    text = _cli(["compile", str(path), "--arch", "sm_90", "--op", f"{ns}::add"], env)
    assert text.returncode == 1 and "now reads them from this cache" not in text.stdout
    assert "1 failed" in text.stdout


def test_compile_copies_what_the_shared_cache_holds_into_the_cache_it_fills(tmp_path):
    """A program found in the shared read-only cache (TRT_KERNELS_SHARED_CACHE_DIR) is copied into the
    cache being filled, so the shipped cache holds every program the command lists."""
    path, ns = _write(tmp_path, SEED_FILE)
    team = tmp_path / "team"
    r = _cli(["compile", str(path), "--arch", "sm_90", "--op", f"{ns}::add"], _env(tmp_path,
                                                                                  TRT_KERNELS_CACHE_DIR=str(team)))
    assert r.returncode == 0, r.stderr
    for p in [team, *team.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    (team_entry,) = [p for p in team.rglob("*.bin") if "launcher" not in p.parts]
    env = _env(tmp_path, TRT_KERNELS_SHARED_CACHE_DIR=str(team))
    data = json.loads(_cli(["compile", str(path), "--arch", "sm_90", "--arch", "sm_80", "--op", f"{ns}::add",
                            "--json"], env).stdout)
    assert data["ok"] is True and data["nvrtc_compiles"] == 1 and data["copied_from_shared"] == 1
    rows = {row["arch"]: row for row in data["rows"]}
    copy = tmp_path / "cache" / team_entry.relative_to(team)
    assert rows["sm_90"]["result"] == "copied from the shared cache" and rows["sm_90"]["entry"] == str(copy)
    assert copy.read_bytes() == team_entry.read_bytes() and stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert rows["sm_80"]["result"] == "compiled by NVRTC" and rows["sm_80"]["entry"].startswith(str(tmp_path / "cache"))
    again = json.loads(_cli(["compile", str(path), "--arch", "sm_90", "--op", f"{ns}::add", "--json"], env).stdout)
    assert again["rows"][0]["result"] == "read from the cache" and again["copied_from_shared"] == 0


MIN_ARCH_FILE = """
import trt_kernels as ttk
ttk.cuda_kernel_op("{ns}::dbl", ttk.KernelSpec(
    kernel_source='extern "C" __global__ void dbl(const float* x, int n, float* y) '
                  '{{ int i = threadIdx.x; if (i < n) y[i] = 2 * x[i]; }}',
    kernel_name="dbl", inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
    extras=[ttk.Numel("x")], geometry=ttk.Elementwise(block=(256,)), min_arch="sm_90"))
"""


def test_compile_skips_an_arch_below_the_ops_min_arch(tmp_path):
    """An op declared with min_arch=sm_90 refuses sm_80 GPUs: nothing is compiled or promised for sm_80."""
    path, ns = _write(tmp_path, MIN_ARCH_FILE)
    r = _cli(["compile", str(path), "--arch", "sm_80", "--arch", "sm_90", "--json"], _env(tmp_path))
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["ok"] is True and data["nvrtc_compiles"] == 1
    rows = {row["arch"]: row for row in data["rows"]}
    assert rows["sm_80"]["result"] == "skipped" and "min_arch='sm_90'" in rows["sm_80"]["detail"]
    assert rows["sm_90"]["result"] == "compiled by NVRTC"
    assert [p.name for p in (tmp_path / "cache").rglob("sm_*.bin")] == ["sm_90.bin"]


OVERRIDE_FILE = """
import trt_kernels as ttk
SRC = 'extern "C" __global__ void k(const float* x, int n, float* y) {{ int i = threadIdx.x; if (i < n) y[i] = x[i]; }}'
def spec(**kw):
    return ttk.KernelSpec(SRC, "k", inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                          extras=[ttk.Numel("x")], geometry=ttk.Elementwise(), **kw)
ttk.cuda_kernel_op("{ns}::own", spec(arch_override="sm_80"))
ttk.cuda_kernel_op("{ns}::plain", spec())
"""


def test_compile_without_arch_takes_an_ops_arch_override_as_declaring_does(tmp_path):
    """compile compiled sm_90 only for an op declared with arch_override='sm_80', and promised a process would read
    it from the cache; that process compiled sm_80 at its declaration."""
    path, ns = _write(tmp_path, OVERRIDE_FILE)
    r = _cli(["compile", str(path), "--json"], _env(tmp_path, TRT_KERNELS_ARCH="sm_90"))
    rows = {row["op"]: row["arch"] for row in json.loads(r.stdout)["rows"]}
    assert r.returncode == 0 and rows == {f"{ns}::own": "sm_80", f"{ns}::plain": "sm_90"}, r.stdout
    text = _cli(["compile", str(path)], _env(tmp_path, TRT_KERNELS_ARCH="sm_90")).stdout
    assert f"(sm_90, from TRT_KERNELS_ARCH; {ns}::own: its arch_override)" in text and "arch_override wins" in text
    # --arch is the command's arch for every op, as before
    r = _cli(["compile", str(path), "--arch", "sm_89", "--json"], _env(tmp_path))
    assert {row["arch"] for row in json.loads(r.stdout)["rows"]} == {"sm_89"}


def test_compile_reports_an_abi_mismatch(tmp_path):
    path, ns = _write(tmp_path, BAD_FILE)
    r = _cli(["compile", str(path), "--arch", "sm_90", "--json"], _env(tmp_path))
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    (row,) = doc["rows"]
    assert row["result"] == "failed" and f"{ns}::swapped" in row["detail"] and "Fix:" in row["detail"]
    assert doc["error"].startswith(f"1 of 1 programs failed, first {ns}::swapped for sm_90: {ns}::swapped: kernel")


# ---------------- doctor ----------------


@pytest.fixture(scope="module")
def facts():
    return doctor.gather()


def _status(checks, name):
    return [c for c in checks if c["check"] == name][0]


def test_doctor_runs_and_its_exit_status_follows_the_checks(shared_runs):
    r = shared_runs.cli("doctor", "--json")
    rc, data = r.returncode, json.loads(r.stdout)
    assert data["schema"] == "trt-kernels.doctor/1" and rc == data["exit_status"]
    assert rc == (1 if any(c["status"] == "error" for c in data["checks"]) else 0)
    names = [c["check"] for c in data["checks"]]
    for n in ("torch", "GPU", "CUDA driver", "cuda-bindings", "NVRTC", "CUDA headers", "probe compile",
              "TensorRT", "AOT/JIT replay tier", "emulated Torch-TensorRT tier", "eager launcher", "compile cache"):
        assert n in names
    f = data["facts"]
    assert f["torch"] == torch.__version__ and f["nvrtc"] and f["probe"].startswith("ok")
    text = shared_runs.cli("doctor")  # the README's `trt-kernels doctor` (tests/unit/test_docs.py)
    assert text.returncode == rc
    assert "check" in text.stdout and "NVRTC" in text.stdout and "doctor:" in text.stdout


def _paren_depth(text: str) -> int:
    """How deep non-empty parentheses nest in ``text`` (a call's ``()`` does not count)."""
    depth = most = 0
    for ch in text.replace("()", ""):
        depth += (ch == "(") - (ch == ")")
        most = max(most, depth)
    return most


def test_doctor_lines_read_as_sentences(facts):
    """Each fix is one command to run (not two run together), and no detail nests parentheses."""
    for tensorrt_side in ({"available": "no", "reason": "tensorrt is not installed (pip install 'trt-kernels[x]')"},
                          facts.get("tensorrt_side") or {}):
        f = copy.deepcopy(facts)
        f["tensorrt_side"] = tensorrt_side
        f["include_dirs"] = f["include_dirs"] or [{"path": "/x", "from": "test", "cuda_fp16.h": True}]
        for c in doctor.assess(f):
            assert c["fix"].count("pip install") <= 1, c
            assert _paren_depth(c["detail"]) <= 1 and _paren_depth(c["fix"]) <= 1, c


def test_doctor_nvrtc_newer_than_driver_is_an_error_with_the_fix(facts):
    f = copy.deepcopy(facts)
    f["nvrtc"], f["driver"], f["ptx_load"] = [13, 5], [13, 0], None
    checks = doctor.assess(f)
    c = _status(checks, "driver loads NVRTC's PTX")
    assert c["status"] == "error" and "NVRTC 13.5 is newer than the CUDA driver (CUDA 13.0)" in c["detail"]
    assert "nvidia-cuda-nvrtc==13.0.*" in c["fix"]
    assert doctor.exit_status(checks) == 1
    f["nvrtc"], f["driver"] = [13, 0], [13, 0]
    assert _status(doctor.assess(f), "driver loads NVRTC's PTX")["status"] != "error"


def test_doctor_driver_refusing_the_probe_ptx_is_an_error(facts):
    f = copy.deepcopy(facts)
    f["driver"], f["ptx_load"] = [13, 0], "LaunchError: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)"
    c = _status(doctor.assess(f), "driver loads NVRTC's PTX")
    assert c["status"] == "error" and "UNSUPPORTED_PTX_VERSION" in c["detail"] and "nvidia-cuda-nvrtc" in c["fix"]


def test_doctor_missing_eager_needs_are_errors_missing_tensorrt_is_a_note(facts):
    base = copy.deepcopy(facts)
    base["driver"], base["ptx_load"], base["nvrtc"] = None, None, base["nvrtc"] or [13, 0]
    base["gpus"] = []
    base["include_dirs"] = [d for d in base["include_dirs"] if d["cuda_fp16.h"]] or \
        [{"path": "/x", "from": "test", "cuda_fp16.h": True}]
    base["probe"] = "ok"
    base["tensorrt_side"] = {"available": "no", "reason": "tensorrt is not installed"}
    checks = doctor.assess(base)
    assert _status(checks, "TensorRT")["status"] == "note" and doctor.exit_status(checks) == 0
    for key, value, check in (("include_dirs", [], "CUDA headers"), ("nvrtc", None, "NVRTC"),
                              ("cuda_bindings_import", "ImportError: no cuda", "cuda-bindings"),
                              ("torch", None, "torch")):
        f = copy.deepcopy(base)
        f[key] = value
        checks = doctor.assess(f)
        assert _status(checks, check)["status"] == "error" and _status(checks, check)["fix"], check
        assert doctor.exit_status(checks) == 1


# ---------------- selftest (CPU: every row skipped with its reason) ----------------


@pytest.mark.skipif(HAS_CUDA, reason="the GPU tier runs selftest for real (test_cli_selftest_gpu.py)")
def test_selftest_on_cpu_checks_what_runs_without_a_gpu(shared_runs):
    """On a CPU machine selftest compiles every case (ABI checked), runs the fake impls and torch.export, and
    builds each op's QDP plugin through NVIDIA's tensorrt.plugin layer; the GPU tiers skip with the reason."""
    import importlib.util

    from trt_kernels.testing._standin import unavailable_reason

    r = shared_runs.cli("selftest", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads(r.stdout)
    assert data["schema"] == "trt-kernels.selftest/1" and data["exit_status"] == 0 and data["failed"] == 0
    # the seed's seven, then one case per other kernel source (ptx_op, triton_kernel_op)
    assert data["cases"] == ["sigmoid", "add", "scale", "relu_2d", "row_sum", "repeat2", "sin_cos", "ptx_sigmoid",
                             "triton_scale"]
    assert data["tiers"] == ["compile", "qdp_build", "eager", "aot_replay", "jit_replay", "torch_tensorrt_emulated",
                             "tensorrt"]
    has_triton = importlib.util.find_spec("triton") is not None
    cpu_tiers = ["compile"] + (["qdp_build"] if unavailable_reason() is None else [])
    for r in data["results"]:
        if r["tier"] in cpu_tiers and (r["case"] != "triton_scale" or has_triton):
            assert r["status"] == "passed", r
        elif r["tier"] not in ("compile", "qdp_build"):
            assert r["status"] == "skipped" and "needs a CUDA GPU" in r["reason"], r
    cap = shared_runs.cli("selftest")  # the README's `trt-kernels selftest` (tests/unit/test_docs.py)
    assert cap.returncode == 0, cap.stderr[-3000:]
    cap.out, cap.err = cap.stdout, cap.stderr
    assert "[1] needs a CUDA GPU" in cap.out and "nothing was checked" not in cap.out
    # NVIDIA's "tensorrt.plugin module is experimental" warning comes with each import of it: once, not per case
    assert cap.err.count("module is experimental") <= 1, cap.err


def test_selftest_that_checked_nothing_exits_non_zero():
    rows = [selftest.Result("sigmoid", "eager", "skipped", "needs a CUDA GPU")]
    assert selftest.exit_status(rows) == 1
    assert "nothing was checked here" in selftest.format_table(rows)


def test_selftest_failure_gives_a_non_zero_exit():
    rows = [selftest.Result("sigmoid", "eager", "passed"), selftest.Result("add", "eager", "failed", "output 0: ...")]
    assert selftest.exit_status(rows) == 1 and selftest.exit_status(rows[:1]) == 0
    text = selftest.format_table(rows + [selftest.Result("add", "tensorrt", "skipped", "tensorrt is not installed")])
    assert "FAILED [1]" in text and "[1] output 0: ..." in text and "[2] tensorrt is not installed" in text
    assert "1 passed, 1 failed, 1 skipped" in text


@pytest.mark.skipif(HAS_CUDA, reason="on a GPU the child would run the tier for real")
def test_selftest_child_process_failure_is_a_failed_row():
    """The emulated tier's child cannot emulate without a GPU: its crash must come back as failed rows."""
    from concurrent.futures import ThreadPoolExecutor

    # the two children side by side (each call starts its process and waits for it)
    with ThreadPoolExecutor(2) as pool:
        emulated, trt = pool.map(lambda tier: selftest.run_child(tier, "ttk_selftest_cpu"),
                                 ["torch_tensorrt_emulated", "tensorrt"])
    rows = emulated
    assert len(rows) == 9 and all(r.status == "failed" and "cannot emulate TensorRT here" in r.reason for r in rows)
    assert selftest.exit_status(rows) == 1
    # the parent runs the TensorRT child only where tensorrt is installed: there, one that does not
    # import is a broken install, a failure (run directly here, where it is absent)
    assert selftest.skip_reasons()["tensorrt"] is not None
    rows = trt
    assert len(rows) == 9 and all(r.status == "failed" and "do not import" in r.reason for r in rows)


def test_selftest_source_cases_declare_and_trace_without_a_gpu():
    """The selftest's ptx_op and triton_kernel_op cases declare here (NVRTC and Triton compile without a
    GPU), each through its own entry point, and their fake impls agree with the references on meta tensors."""
    import importlib.util

    from trt_kernels import registry
    from trt_kernels.cli import seed_cases

    ns = "ttk_selftest_sources_cpu"
    declared = {c.name: c for c in seed_cases.declare(ns, seed_cases.SOURCE_CASES)}
    want = {"ptx_sigmoid": "ptx_op"}
    if importlib.util.find_spec("triton") is not None:
        want["triton_scale"] = "triton_kernel_op"
    assert set(declared) == set(want)
    for name, c in declared.items():
        assert registry.get(c.op_name(ns)).source.entry_point == want[name]
        tensors, scalars = c.make_inputs(torch.device("meta"))
        out, ref = seed_cases.op(c, ns)(*tensors, *scalars), c.reference(*tensors, *scalars)
        assert out.shape == ref.shape and out.dtype == ref.dtype and out.device.type == "meta"


def test_doctor_verdict_agrees_with_its_table():
    """A machine without a GPU is a compile-only machine, said so; problems are named; otherwise all is there."""
    checks = [{"check": "GPU", "status": "warn", "detail": "no CUDA GPU visible", "fix": ""},
              {"check": "NVRTC", "status": "ok", "detail": "13.0", "fix": ""}]
    assert doctor.verdict(checks).startswith("compile-only machine") and "eager" in doctor.verdict(checks)
    checks[0]["status"] = "ok"
    assert doctor.verdict(checks) == "nothing a user needs is missing"
    checks[1]["status"] = "error"
    assert doctor.verdict(checks) == "1 problem (NVRTC)"
