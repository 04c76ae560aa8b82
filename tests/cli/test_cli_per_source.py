"""trt-kernels status, inspect, compile and doctor on CPU, once per kernel source.

The same small elementwise op, ``y = x * a + 1`` (a tensor input, a float scalar, the element
count as an extra, one output), declared from each of the three sources, one module file each:

- ``cuda``: CUDA C++ through ``ttk.cuda_kernel_op``, a template over float32/float16;
- ``ptx``: PTX text through ``ttk.ptx_op``, compiled at test time by NVRTC (``compile_program``)
  for sm_90 and written into the module file;
- ``triton``: a ``@triton.jit`` kernel through ``ttk.triton_kernel_op`` (float32/float16; skipped
  where triton does not import).

Every command has its own disk cache (``TRT_KERNELS_CACHE_DIR``). ``status``, ``inspect`` and the first
``compile`` run in this process (tests/support.py, run_cli: the CLI's main, stdout and stderr captured, the
compile memos emptied first, as a fresh process has them; each source's file declares its op under a namespace
of its own). What must be a fresh process is one: the second ``compile`` (it reads the cache the first
filled, from disk) and the process that declares the ops after ``compile`` (it runs no compiler and loads no
NVRTC); those of the three sources are started together (they are independent) and run while the in-process
commands of the next source run.

``selftest`` has no per-source test: it runs the seed's seven ``cuda_kernel_op`` cases
(``trt_kernels/cli/seed_cases.py``) and one per other source, and takes no module
(``tests/cli/test_cli_tools.py::test_selftest_on_cpu_checks_what_runs_without_a_gpu``). ``doctor`` takes
no module either and has no check per source: one test below, on the session's one ``doctor --json`` run.
"""

import importlib.util
import json
import os
import pathlib
import re
import subprocess
import textwrap
from dataclasses import dataclass, field
from typing import Dict, List

import pytest
import torch

from support import finish, run_cli, start

ARCH = "sm_90"
HAS_CUDA = torch.cuda.is_available()
SOURCES = ("cuda", "ptx", "triton")
ENTRY_POINT = {"cuda": "cuda_kernel_op", "ptx": "ptx_op", "triton": "triton_kernel_op"}
PTX_PARAM_TYPES = ["u64", "f32", "u32", "u64"]  # x, a, Numel(x), y
ARGUMENTS = ["x.data_ptr()", "a", "x.numel()", "y.data_ptr()"]
SCHEMA = "(Tensor x, float a) -> Tensor"

CUDA_FILE = '''
import torch
import trt_kernels as ttk

SRC = r"""
template <typename T>
__global__ void ps_axpb(const T* x, float a, int n, T* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = static_cast<T>(static_cast<float>(x[i]) * a + 1.0f);
}
"""
ttk.cuda_kernel_op("@NS@::axpb", ttk.KernelSpec(
    kernel_source=SRC, kernel_name="ps_axpb<T>", dtypes=[torch.float32, torch.float16],
    inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
    geometry=ttk.Elementwise(block=(256,))))
'''

PTX_KERNEL = """
extern "C" __global__ void ps_ptx_axpb(const float* x, float a, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * a + 1.0f;
}
"""

PTX_FILE = '''
import trt_kernels as ttk

PTX = @PTX@
ttk.ptx_op("@NS@::axpb", PTX, "ps_ptx_axpb",
           inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)],
           outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
           geometry=ttk.Elementwise(block=(128,)))
'''

TRITON_FILE = '''
import torch
import triton
import triton.language as tl
import trt_kernels as ttk


@triton.jit
def ps_axpb_tri(x_ptr, a, n, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (x * a + 1.0).to(y_ptr.dtype.element_ty), mask=m)


ttk.triton_kernel_op(
    "@NS@::axpb", ps_axpb_tri,
    inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
    grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),),
    constexprs={"BLOCK": 512}, num_warps=4, dtypes=[torch.float32, torch.float16])
'''

# what each declaration implies
DTYPES = {"cuda": ["float32", "float16"], "ptx": ["float32"], "triton": ["float32", "float16"]}
GRID = {"cuda": "cdiv(x.numel(), 256)", "ptx": "cdiv(x.numel(), 128)", "triton": "cdiv(x.numel(), 512)"}
BLOCK = {"cuda": [256, 1, 1], "ptx": [128, 1, 1], "triton": [128, 1, 1]}  # Triton: num_warps * 32

# a fresh process that declares the ops for ARCH with the cache `compile` filled: which compilers ran
PROBE = """
import json, runpy, sys
from trt_kernels.sources import nvrtc as comp
from trt_kernels import registry

calls = {"nvrtc": 0, "triton": 0}
real_nvrtc = comp._nvrtc_compile


def counting_nvrtc(*a, **k):
    calls["nvrtc"] += 1
    return real_nvrtc(*a, **k)


comp._nvrtc_compile = counting_nvrtc
if SOURCE == "triton":
    import triton
    import triton.compiler

    real_triton = triton.compile

    def counting_triton(*a, **k):
        calls["triton"] += 1
        return real_triton(*a, **k)

    triton.compile = triton.compiler.compile = counting_triton
runpy.run_path(PATH, run_name="ttk_probe")
kop = registry.get(OP)
kop.binary(ARCH)  # whether or not the declaration built it already
calls["nvrtc_loaded"] = "cuda.bindings.nvrtc" in sys.modules  # our only way to NVRTC
print(json.dumps(calls))
"""


# ---------------- helpers ----------------


def _env(cache: pathlib.Path, **extra) -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("TRT_KERNELS_ARCH", None)
    env.pop("TRT_KERNELS_CACHE", None)
    env["TRT_KERNELS_CACHE_DIR"] = str(cache)
    env.update(extra)
    return env


def _cli(*args: str) -> List[str]:
    return ["-m", "trt_kernels", *args]


def _tail(text: str, n: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _ok(r: subprocess.CompletedProcess, what: str) -> str:
    """stdout of a run that must exit 0; otherwise fail with the end of its stderr (the traceback)."""
    assert r.returncode == 0, f"{what} exited {r.returncode}:\n{_tail(r.stderr)}\n--- stdout:\n{_tail(r.stdout, 10)}"
    return r.stdout


def _ok_json(r: subprocess.CompletedProcess, what: str) -> dict:
    return json.loads(_ok(r, what))


def _files(root: pathlib.Path) -> Dict[str, tuple]:
    """Every file under ``root``: relative path -> (size, mtime_ns)."""
    if not root.is_dir():
        return {}
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def _named_paths(obj) -> List[dict]:
    """The cache entries a report names: ``{"path"|"entry": ..., "bytes": ...}`` dicts, alone, in a list,
    or under ``"entries"``."""
    if obj is None:
        return []
    if isinstance(obj, list):
        return [e for o in obj for e in _named_paths(o)]
    if "entries" in obj:
        return _named_paths(obj["entries"])
    return [obj] if (obj.get("path") or obj.get("entry")) else []


def _assert_on_disk(entries: List[dict], root: pathlib.Path, what: str) -> None:
    assert entries, f"{what}: names no cache entry"
    for e in entries:
        path = e.get("path") or e.get("entry")
        assert path.startswith(str(root)), f"{what}: {path} is not under the cache {root}"
        assert os.path.isfile(path), f"{what}: {path} does not exist"
        assert os.path.getsize(path) == e["bytes"] > 0, (what, path, e["bytes"])


# ---------------- one module file per source, every command run once ----------------


@dataclass
class Runs:
    source: str
    ns: str
    path: pathlib.Path
    tmp: pathlib.Path
    r: Dict[str, subprocess.CompletedProcess] = field(default_factory=dict)
    compile_cache_after_first: Dict[str, tuple] = field(default_factory=dict)

    @property
    def op(self) -> str:
        return f"{self.ns}::axpb"

    def cache(self, command: str) -> pathlib.Path:
        return self.tmp / f"cache-{command}"


def _module_text(source: str, ns: str) -> str:
    if source == "cuda":
        text = CUDA_FILE
    elif source == "ptx":
        from trt_kernels.sources.nvrtc import compile_program

        prog = compile_program(PTX_KERNEL, ["ps_ptx_axpb"], arch=ARCH, label="per-source ptx_op test")
        assert prog.lowered == {"ps_ptx_axpb": "ps_ptx_axpb"}
        text = PTX_FILE.replace("@PTX@", repr(prog.ptx.decode()))
    else:
        text = TRITON_FILE
    return textwrap.dedent(text).replace("@NS@", ns)


def _available(source: str) -> bool:
    return source != "triton" or importlib.util.find_spec("triton") is not None


@pytest.fixture(scope="module")
def all_runs(tmp_path_factory) -> Dict[str, Runs]:
    """Every source's commands: the in-process ones of each source, while the fresh processes of the sources
    before it run."""
    done, fresh = {}, {}
    for source in filter(_available, SOURCES):
        tmp = tmp_path_factory.mktemp(f"per_source_{source}")
        ns = f"ttk_ps{os.getpid()}_{source}"
        path = tmp / f"ops_{ns}.py"
        path.write_text(_module_text(source, ns))
        R = done[source] = Runs(source, ns, path, tmp)
        p = str(path)
        R.r["status"] = run_cli(["status", p], env=_env(R.cache("status")))
        R.r["inspect_json"] = run_cli(["inspect", p, "--arch", ARCH, "--json"], env=_env(R.cache("inspect")))
        R.r["inspect_text"] = run_cli(["inspect", p, "--op", R.op, "--arch", ARCH], env=_env(R.cache("inspect-text")))
        R.r["compile_json"] = run_cli(["compile", p, "--arch", ARCH, "--json"], env=_env(R.cache("compile")))
        # then, in fresh processes over the cache `compile --json` filled: compile again (the text output),
        # and declare the ops
        R.compile_cache_after_first = _files(R.cache("compile"))
        probe = f"SOURCE = {source!r}\nPATH = {p!r}\nOP = {R.op!r}\nARCH = {ARCH!r}\n" + PROBE
        fresh[source] = {
            "compile_again": start(_cli("compile", p, "--arch", ARCH), env=_env(R.cache("compile"))),
            "probe": start(["-c", probe], env=_env(R.cache("compile"), TRT_KERNELS_ARCH=ARCH)),
        }
    for source, procs in fresh.items():
        done[source].r.update(finish(procs))
    return done


@pytest.fixture(scope="module", params=SOURCES)
def runs(request, all_runs) -> Runs:
    if not _available(request.param):
        pytest.skip("triton is not installed (pip install 'trt-kernels[triton]'); the triton_kernel_op rows need it")
    return all_runs[request.param]


# ---------------- status ----------------


def _status_fields(out: str, op_line: str) -> Dict[str, str]:
    lines = out.splitlines()
    assert op_line in lines, f"{op_line!r} not in the status output:\n{out}"
    fields = {}
    for ln in lines[lines.index(op_line) + 1:]:
        if not ln.startswith("    "):
            break
        key, _, value = ln.strip().partition(" ")
        fields[key] = value.strip()
    return fields


def test_status_reports_the_op(runs):
    out = _ok(runs.r["status"], "status")
    f = _status_fields(out, f"{runs.op}{SCHEMA}")
    assert f["torch_op"] == "registered" and f["fake"] == "derived from the plan" and f["eager"] == "derived launch"
    assert f["dtypes"] == ", ".join(DTYPES[runs.source])
    if runs.source == "ptx":  # one build (the PTX, loaded by the driver's JIT) serves every arch
        assert f["compiled_for"] == "every arch"
    else:  # no GPU, no arch, an empty cache: the declaration compiles for sm_90 to check the kernel
        # (registry.KernelOp.prepare, api.triton_kernel_op: CHECK_ARCH); with a GPU, for its arch
        assert f["compiled_for"] == ARCH if not HAS_CUDA else re.fullmatch(r"sm_\d+a?", f["compiled_for"])
    if runs.source == "triton":
        assert f["source"].startswith("Triton 'ps_axpb_tri' (triton ") and "num_warps=4" in f["source"]
    assert f["source"].endswith(f"[{ENTRY_POINT[runs.source]}]")


# ---------------- inspect ----------------


def _inspect_op(runs) -> dict:
    data = _ok_json(runs.r["inspect_json"], "inspect --json")
    assert data["schema"] == "trt-kernels.inspect/1" and data["ok"] is True and data["arch"] == ARCH
    assert data["arch_note"] is None  # --arch given
    (op,) = data["ops"]
    assert op["op"] == runs.op and op["schema"] == SCHEMA and op["errors"] == []
    return op


def test_inspect_json_abi_row_per_dtype_matches_the_ptx(runs):
    op = _inspect_op(runs)
    assert op["dtypes"] == DTYPES[runs.source]
    assert [row["dtype"] for row in op["abi"]] == DTYPES[runs.source]
    for row in op["abi"]:
        ctype = {"float32": "float", "float16": "__half"}[row["dtype"]]
        assert row["symbol"], row
        assert row["c_signature"].endswith(f"(const {ctype}* x, float a, int extra0 /* Numel('x') */, {ctype}* y)")
        assert [p["bytes"] for p in row["expected"]] == [8, 4, 4, 8]
        assert row["ptx_params"] is not None, f"{row['dtype']}: no PTX parameters read (symbol {row['symbol']!r})"
        # Triton appends two scratch pointers after the declared parameters; the others append nothing
        hidden = 2 if runs.source == "triton" else 0
        assert row["hidden_params"] == hidden
        assert [p["type"] for p in row["ptx_params"]] == PTX_PARAM_TYPES + ["u64"] * hidden, row
        assert row["param_ok"] == [True] * 4 and row["matches"] is True, row
    if runs.source == "cuda":  # one instantiation per dtype, each its own mangled symbol
        assert [row["kernel_name"] for row in op["abi"]] == ["ps_axpb<float>", "ps_axpb<__half>"]
        assert len({row["symbol"] for row in op["abi"]}) == 2
    if runs.source == "ptx":
        assert op["abi"][0]["symbol"] == op["abi"][0]["kernel_name"] == "ps_ptx_axpb"


def test_inspect_json_launch_plan(runs):
    op = _inspect_op(runs)
    plan = op["plan"]
    assert plan["derived"] is True and "error" not in plan
    assert plan["grid"] == [GRID[runs.source], "1", "1"] and plan["block"] == BLOCK[runs.source]
    assert plan["arguments"] == ARGUMENTS and plan["ranks_assumed"] == ["x"]
    assert plan["outputs"] == [{"name": "y", "shape": ["x.shape[0]", "x.shape[1]"], "dtype": "dtype of x"}]
    assert op["tensorrt"]["plugin"] == "AOT" and "scalars (a) are baked" in op["tensorrt"]["why"]


def test_inspect_says_what_a_call_specializes(runs):
    """Triton ops: the pointers (16-byte alignment) and the size (a multiple of 16, or 1), not the float scalar;
    CUDA C++ and PTX ops: nothing (one code for every call)."""
    op = _inspect_op(runs)
    out = _ok(runs.r["inspect_text"], "inspect (text)")
    if runs.source != "triton":
        assert op["specializes"] == [] and "specializes" not in out
        return
    assert [(r["position"], r["facts"]) for r in op["specializes"]] == [
        (0, ["16-byte aligned"]), (2, ["a multiple of 16", "1 (a constant of the code)"]), (3, ["16-byte aligned"])]
    assert "specializes   per call, as Triton's launcher" in out


def test_inspect_json_declared_by_names_the_entry_point(runs):
    op = _inspect_op(runs)
    assert op["declared_by"] == ENTRY_POINT[runs.source]
    assert op["overrides"] == []
    assert op["arch"] == (None if runs.source == "ptx" else ARCH)


def test_inspect_json_cache_entry_is_on_disk(runs):
    op = _inspect_op(runs)
    if runs.source == "ptx":
        assert op["cache"] is None  # nothing compiled
        return
    _assert_on_disk(_named_paths(op["cache"]), runs.cache("inspect"), "inspect's cache")
    if runs.source == "cuda":
        c = op["cache"]
        assert c["state"] == "compiled by NVRTC in this process" and c["arch"] == ARCH and c["ptx_isa"]


def test_inspect_text(runs):
    out = _ok(runs.r["inspect_text"], "inspect (text)")
    assert f"{runs.op}{SCHEMA}" in out
    assert f"declared      {ENTRY_POINT[runs.source]}\n" in out
    assert out.count("spec and PTX agree") == len(DTYPES[runs.source]) and "<-- differs" not in out
    assert f"grid        ({GRID[runs.source]}, 1, 1)" in out
    assert f"block       ({', '.join(map(str, BLOCK[runs.source]))})" in out
    assert "arguments   (x.data_ptr(), a, x.numel(), y.data_ptr())" in out
    assert f"dtypes        {', '.join(DTYPES[runs.source])}" in out
    if runs.source == "ptx":
        assert "cache         no entry (nothing compiled" in out
    else:
        assert f"for {ARCH}" in out and str(runs.cache("inspect-text")) in out
    assert "ERROR" not in out and "Traceback" not in runs.r["inspect_text"].stderr


# ---------------- compile ----------------


def test_compile_json_fills_the_cache(runs):
    data = _ok_json(runs.r["compile_json"], "compile --json")
    cache = runs.cache("compile")
    assert data["schema"] == "trt-kernels.compile/1" and data["archs"] == [ARCH] and data["failed"] == 0
    assert data["cache_dir"] == str(cache)
    (row,) = data["rows"]
    assert row["op"] == runs.op and row["arch"] == ARCH
    if runs.source == "ptx":  # documented: a ptx_op has nothing to compile
        assert row["result"] == "skipped" and "ptx_op" in row["detail"] and "nothing to compile" in row["detail"]
        assert row["ms"] is None and data["nvrtc_compiles"] == 0 and data["cache_hits"] == 0
        assert runs.compile_cache_after_first == {}, "compile wrote cache entries for a ptx_op"
        return
    assert row["ms"] > 0
    if runs.source == "cuda":
        assert row["result"] == "compiled by NVRTC" and row["nvrtc"] is True and row["kernels"] == 2
        assert data["nvrtc_compiles"] == 1 and data["cache_hits"] == 0
    else:  # Triton compiled it, not NVRTC
        assert row["result"].startswith("compiled by") and "NVRTC" not in row["result"], row
    _assert_on_disk(_named_paths(row), cache, "compile's row")
    assert runs.compile_cache_after_first, "compile wrote nothing into the cache"


def test_compile_text_in_a_fresh_process_reads_the_cache(runs):
    """The second ``compile`` (text output), over the cache the first filled, compiles and writes nothing."""
    out = _ok(runs.r["compile_again"], "compile (text, second run)")
    cache = runs.cache("compile")
    assert _files(cache) == runs.compile_cache_after_first, "the second run rewrote or added cache files"
    assert f"{runs.path}: 1 op x 1 arch ({ARCH}, from --arch) into {cache}" in out
    (line,) = [ln for ln in out.splitlines() if ln.strip().startswith(runs.op)]
    assert f" {ARCH} " in line
    if runs.source == "ptx":  # documented: a ptx_op has nothing to compile
        assert "skipped" in line and "ptx_op" in line and "nothing to compile" in line
        assert "total: 1 programs, 0 compiled (0 bytes written), 0 already cached, 0 failed" in out
        assert runs.compile_cache_after_first == {}
        return
    assert "read from the cache" in line and str(cache) in line and " B)" in line, line  # the entry, its size
    assert re.search(r"total: 1 programs, 0 compiled\b.* \(0 bytes written\), 1 already cached, 0 failed;", out), out
    assert "now reads them from this cache" in out


def test_declaring_the_ops_after_compile_runs_no_compiler(runs):
    """A fresh process that declares the module's ops for sm_90 over the cache ``compile`` filled."""
    calls = json.loads(_ok(runs.r["probe"], "the probe process").strip().splitlines()[-1])
    assert calls == {"nvrtc": 0, "triton": 0, "nvrtc_loaded": False}, calls


# ---------------- doctor: no module, nothing per source ----------------


def test_doctor_json_runs_and_reports_nvrtc(shared_runs):
    """``doctor`` takes no module; it checks each source's toolchain: NVRTC (CUDA C++), the driver's PTX JIT
    (with a GPU), Triton. On CPU: NVRTC and the probe compiles work, the exit status follows the checks."""
    r = shared_runs.cli("doctor", "--json")  # also read by test_cli_tools.py
    data = json.loads(r.stdout)
    assert data["schema"] == "trt-kernels.doctor/1" and r.returncode == data["exit_status"]
    checks = {c["check"]: c for c in data["checks"]}
    assert r.returncode == (1 if any(c["status"] == "error" for c in checks.values()) else 0)
    assert checks["NVRTC"]["status"] == "ok" and checks["probe compile"]["status"] == "ok"
    assert re.search(r"for sm_\d+a?: ok", checks["probe compile"]["detail"]), checks["probe compile"]
    # the Triton source's toolchain: an installed Triton compiles the probe kernel; a missing one is a note
    if importlib.util.find_spec("triton") is not None:
        assert (checks["Triton"]["status"] == "ok"
                and re.search(r"probe compile for sm_\d+a?: ok", checks["Triton"]["detail"]))
    else:
        assert checks["Triton"]["status"] == "note" and "triton_kernel_op" in checks["Triton"]["detail"]


# ---------------- the README's commands on the Triton example ----------------


def test_triton_example_inspect_and_compile_as_the_readme_shows(tmp_path):
    """``trt-kernels inspect examples/triton_kernel_op.py --arch sm_90`` and ``compile`` (README, Triton
    kernels) on a machine without a GPU: both used to crash on Triton ops."""
    pytest.importorskip("triton", reason="the Triton example needs triton (pip install 'trt-kernels[triton]')")
    root = pathlib.Path(__file__).resolve().parents[2]
    example = str(root / "examples" / "triton_kernel_op.py")
    env = _env(tmp_path / "cache")
    ins = _ok_json(run_cli(["inspect", example, "--arch", ARCH, "--json"], env=env),
                   "inspect examples/triton_kernel_op.py")
    assert ins["ok"] is True and [d["declared_by"] for d in ins["ops"]].count("triton_kernel_op") == 2
    for d in ins["ops"]:
        assert d["errors"] == [] and all(row["matches"] is True for row in d["abi"]), d["op"]
    done = _ok_json(run_cli(["compile", example, "--arch", ARCH, "--json"], env=env),
                    "compile examples/triton_kernel_op.py")
    assert done["failed"] == 0 and len(done["rows"]) == len(ins["ops"])
    assert all(r["result"] == "read from the cache" for r in done["rows"]), done["rows"]  # inspect filled it
    _assert_on_disk(_named_paths(done["rows"]), tmp_path / "cache", "compile's rows")
