"""trt-kernels inspect, compile and doctor on engines for a fleet of GPU generations (issue 35), on CPU.

TensorRT's AOT plugins embed PTX, which loads on every GPU of its ``.target``'s compute capability and newer:
``inspect`` says which arch the PTX targets, where it loads and whether a hardware-compatible engine may hold it;
``compile --min-arch`` fills the cache with that PTX; ``doctor`` says which generations the plugins load on.
The commands run in this process (tests/support.py, run_cli), one module file per run declaring four ops under
a namespace of its own: a plain copy, a TMA copy (``cp.async.bulk``: sm_90 and newer) declared with
``min_arch='sm_90'``, the same TMA copy declared without it, and a ``ptx_op`` of PTX compiled for sm_80. NVRTC
compiles; nothing is launched.
"""

import json
import os
import runpy
import textwrap

import pytest

from support import counting_compile_cache, run_cli
from trt_kernels import registry
from trt_kernels.cli import doctor
from trt_kernels.sources import archs

OPS = '''
import os
import pathlib

import torch
import trt_kernels as ttk
from trt_kernels.sources.nvrtc import compile_program

# what the user's module sees of the floor's variable while the command imports it
pathlib.Path(__file__).with_suffix(".env").write_text(os.environ.get("TRT_KERNELS_MIN_ARCH", "<unset>"))

COPY = r"""
extern "C" __global__ void fleet_copy(const float* x, unsigned n, float* y) {{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}}
"""
# TMA: one thread starts a bulk copy of the block's 128 floats into shared memory (sm_90 and newer only)
TMA = r"""
extern "C" __global__ void fleet_tma(const float* x, unsigned n, float* y) {{
    __shared__ alignas(128) float staged[128];
    __shared__ alignas(8) unsigned long long arrived;
    const unsigned first = blockIdx.x * 128u;
    if (threadIdx.x == 0) {{
        const unsigned to = (unsigned)__cvta_generic_to_shared(staged);
        const unsigned bar = (unsigned)__cvta_generic_to_shared(&arrived);
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 512, [%2];"
                     :: "r"(to), "l"(x + first), "r"(bar) : "memory");
    }}
    __syncthreads();
    if (first + threadIdx.x < n) y[first + threadIdx.x] = staged[threadIdx.x];
}}
"""
IO = dict(inputs=[ttk.InputDecl("x", dtype=torch.float32)], outputs=[ttk.OutputDecl("y", ttk.SameAs("x"))],
          extras=[ttk.Numel("x")])

ttk.cuda_kernel_op("{ns}::copy", ttk.KernelSpec(COPY, "fleet_copy", geometry=ttk.Elementwise(block=256), **IO))
ttk.cuda_kernel_op("{ns}::tma90", ttk.KernelSpec(TMA, "fleet_tma", geometry=ttk.Elementwise(block=128),
                                                  min_arch="sm_90", **IO))
ttk.cuda_kernel_op("{ns}::tma", ttk.KernelSpec(TMA, "fleet_tma", geometry=ttk.Elementwise(block=128), **IO))
ttk.ptx_op("{ns}::ptx80", compile_program(COPY, ["fleet_copy"], arch="sm_80").ptx, "fleet_copy",
           geometry=ttk.Elementwise(block=256), **IO)
'''

_count = [0]


def _ops_file(folder):
    """A new module file declaring the four ops under a namespace of its own: (path, namespace)."""
    _count[0] += 1
    ns = f"ttk_fleet{os.getpid()}_{_count[0]}"
    path = folder / f"ops_{ns}.py"
    path.write_text(textwrap.dedent(OPS.format(ns=ns)))
    return path, ns


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(a folder, its cache, a function running ``trt-kernels ARGS`` in this process with a fresh ops file
    (``{file}`` in ARGS; ``{ns}`` its namespace) and the environment ``TRT_KERNELS_ARCH=sm_90`` plus ``extra``:
    (result, namespace))."""
    root = tmp_path_factory.mktemp("fleet")
    cache = root / "cache"
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_KERNELS_")}
    base.update(TRT_KERNELS_CACHE_DIR=str(cache), TRT_KERNELS_ARCH="sm_90")

    def cli(*args, **extra):
        path, ns = _ops_file(root)
        args = [a.replace("{file}", str(path)).replace("{ns}", ns) for a in args]
        return run_cli(args, env=dict(base, **extra)), ns

    return root, cache, cli


def _aot_lines(text, op):
    """The "AOT plugin PTX" lines of ``op`` in inspect's text, and its ERROR lines."""
    block = text.split(f"\n{op}(", 1)[1].split("\n\n", 1)[0]
    lines = block.splitlines()
    at = next(i for i, ln in enumerate(lines) if "AOT plugin PTX:" in ln)
    aot = [lines[at]] + [ln for ln in lines[at + 1:] if ln.startswith(" " * 18)]
    return "\n".join(aot), "\n".join(ln for ln in lines if "ERROR" in ln or ln.startswith(" " * 16))


def test_inspect_shows_the_compile_arch_by_default(fleet):
    _, _, cli = fleet
    r, ns = cli("inspect", "{file}")
    assert r.returncode == 0, r.stdout + r.stderr
    aot, _ = _aot_lines(r.stdout, f"{ns}::copy")
    assert "AOT plugin PTX: sm_90, from the compile arch (TRT_KERNELS_ARCH); the PTX's .target: sm_90" in aot
    assert "loads on compute capability 9.0 and newer (Hopper (H100, H200)" in aot and "Ampere" not in aot
    assert "hardware-compatible engines (AMPERE_PLUS, hardware_compatible=True): no (it must target sm_80" in aot
    aot, _ = _aot_lines(r.stdout, f"{ns}::tma90")
    assert "sm_90, from the declaration's min_arch; the PTX's .target: sm_90" in aot
    aot, _ = _aot_lines(r.stdout, f"{ns}::ptx80")
    assert "AOT plugin PTX: the PTX as given; the PTX's .target: sm_80" in aot and "8.0 and newer" in aot
    assert "AOT plugin PTX floor" not in r.stdout


def test_inspect_under_a_min_arch_floor(fleet):
    """TRT_KERNELS_MIN_ARCH=sm_80: sm_80 PTX where the kernel can have it; a declared min_arch above the floor and
    a kernel that does not compile for it are the op's errors, with their fixes (exit status 1, no traceback)."""
    _, _, cli = fleet
    r, ns = cli("inspect", "{file}", "--json", TRT_KERNELS_MIN_ARCH="sm_80")
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["ok"] is False and data["min_arch"] == "sm_80" and data["min_arch_from"] == "TRT_KERNELS_MIN_ARCH"
    ops = {d["op"].split("::")[1]: d for d in data["ops"]}
    copy = ops["copy"]["aot_ptx"]
    assert (copy["target_arch"], copy["from"], copy["ptx_target"]) == ("sm_80", "TRT_KERNELS_MIN_ARCH", "sm_80")
    assert copy["loads_on"] == archs.loads_on("sm_80") and copy["hardware_compatible"] is True
    assert copy["in_hardware_compatible_engines"] == "yes" and copy["error"] is None and not ops["copy"]["errors"]
    refused = ops["tma90"]["aot_ptx"]
    assert refused["min_arch"] == "sm_90" and refused["target_arch"] is None
    assert refused["error"].startswith(f"{ns}::tma90: TRT_KERNELS_MIN_ARCH asks for code that loads on compute "
                                       "capability 8.0 and newer")
    assert "min_arch='sm_90'" in refused["error"] and "Fix:" in refused["error"]
    assert ops["tma90"]["errors"] == [refused["error"]]
    failed = ops["tma"]["aot_ptx"]
    assert failed["target_arch"] == "sm_80" and failed["ptx_target"] is None
    assert "could not compile the kernel source for sm_80" in failed["error"]
    assert "Fix: declare the kernel's own minimum, min_arch='sm_90'" in failed["error"]
    assert "cp.async.bulk" in failed["error"] and ops["tma"]["abi"][0]["matches"] is True  # its sm_90 build is fine
    ptx = ops["ptx80"]["aot_ptx"]
    assert ptx["target_arch"] is None and ptx["ptx_target"] == "sm_80" and ptx["hardware_compatible"] is True


def test_inspect_min_arch_option_reports_as_the_variable_would(fleet):
    _, _, cli = fleet
    r, ns = cli("inspect", "{file}", "--min-arch", "80")
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr
    assert "AOT plugin PTX floor: --min-arch sm_80 (as TRT_KERNELS_MIN_ARCH=sm_80 would)" in r.stdout.splitlines()[0]
    aot, _ = _aot_lines(r.stdout, f"{ns}::copy")
    assert "AOT plugin PTX: sm_80, from --min-arch (as TRT_KERNELS_MIN_ARCH); the PTX's .target: sm_80" in aot
    assert "loads on compute capability 8.0 and newer (Ampere (A100, A30, A10" in aot
    assert "hardware-compatible engines (AMPERE_PLUS, hardware_compatible=True): yes" in aot
    aot, errors = _aot_lines(r.stdout, f"{ns}::tma90")
    assert "AOT plugin PTX: refused (declared min_arch sm_90): the ERROR below says why, and the fix" in aot
    assert f"ERROR         {ns}::tma90: TRT_KERNELS_MIN_ARCH asks for code" in errors
    aot, errors = _aot_lines(r.stdout, f"{ns}::tma")
    assert "sm_80 does not build" in aot and "min_arch='sm_90'" in errors and "cp.async.bulk" in errors
    assert "TRT_KERNELS_MIN_ARCH" not in os.environ  # the option's floor was for the report only


@pytest.mark.parametrize("command", ["inspect", "compile"])
def test_the_min_arch_option_changes_no_environment(fleet, monkeypatch, command):
    """--min-arch is handed to the rule (KernelOp.aot_target), not put in TRT_KERNELS_MIN_ARCH for the command's
    run: the user's module sees the environment as it is, and nothing reads the variable back."""
    root, _, cli = fleet
    read = []
    monkeypatch.setattr(archs, "env_min_arch", lambda: read.append(1))
    r, ns = cli(command, "{file}", "--op", "{ns}::copy", "--min-arch", "sm_80", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (root / f"ops_{ns}.env").read_text() == "<unset>" and read == []
    data = json.loads(r.stdout)
    if command == "inspect":
        assert data["ops"][0]["aot_ptx"]["target_arch"] == "sm_80" and data["min_arch"] == "sm_80"
    else:
        assert [row["arch"] for row in data["rows"] if "AOT" in row["role"]] == ["sm_80"]


def test_a_bad_min_arch_is_the_commands_arch_error(fleet):
    _, _, cli = fleet
    for args, problem in ((("compile", "{file}", "--min-arch", "ampere"), "expected something like 'sm_90'"),
                          (("inspect", "{file}", "--min-arch", "70", "--json"), "sm_70 is below sm_75")):
        r, _ = cli(*args)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.startswith(f"error: --min-arch {args[3]}: ") and problem in r.stderr
        assert r.stderr.rstrip().endswith("Fix: --min-arch sm_80")
    assert json.loads(r.stdout)["ok"] is False
    r, _ = cli("inspect", "{file}", TRT_KERNELS_MIN_ARCH="sm_8x")
    assert r.returncode == 1 and "error: TRT_KERNELS_MIN_ARCH=sm_8x: " in r.stderr and "Fix:" in r.stderr


def test_compile_min_arch_fills_the_cache_with_the_aot_ptx(fleet, monkeypatch):
    """compile --min-arch sm_80: each op's --arch row, and its AOT PTX row for sm_80 (refusals and compile
    failures as failed rows with the fix, a ptx_op's row naming its PTX's own target); a build with
    TRT_KERNELS_MIN_ARCH=sm_80 then reads that PTX from the cache."""
    root, cache, cli = fleet
    r, ns = cli("compile", "{file}", "--arch", "sm_90", "--min-arch", "sm_80", "--json")
    assert r.returncode == 1, r.stderr
    data = json.loads(r.stdout)
    assert data["min_arch"] == "sm_80" and data["archs"] == ["sm_90"] and data["failed"] == 2
    rows = {(row["op"].split("::")[1], row["role"]): row for row in data["rows"]}
    assert [(row["op"].split("::")[1], row["arch"], row["role"]) for row in data["rows"]] == [
        ("copy", "sm_90", "--arch"), ("copy", "sm_80", "AOT PTX (min arch)"),
        ("tma90", "sm_90", "--arch"), ("tma90", "sm_80", "AOT PTX (min arch)"),
        ("tma", "sm_90", "--arch"), ("tma", "sm_80", "AOT PTX (min arch)"),
        ("ptx80", "sm_90", "--arch"), ("ptx80", "sm_80", "AOT PTX (min arch)")]
    aot = rows[("copy", "AOT PTX (min arch)")]
    assert aot["aot_ptx"] is True and aot["ptx_target"] == "sm_80" and aot["entry"].endswith("sm_80.bin")
    assert rows[("copy", "--arch")]["aot_ptx"] is False and rows[("copy", "--arch")]["entry"].endswith("sm_90.bin")
    refused = rows[("tma90", "AOT PTX (min arch)")]
    assert refused["result"] == "failed" and "declared with min_arch='sm_90'" in refused["detail"]
    failed = rows[("tma", "AOT PTX (min arch)")]
    assert failed["result"] == "failed" and "min_arch='sm_90'" in failed["detail"]
    assert "cp.async.bulk" in failed["detail"]
    ptx = rows[("ptx80", "AOT PTX (min arch)")]
    assert ptx["result"] == "skipped" and ptx["ptx_target"] == "sm_80" and "targets sm_80" in ptx["detail"]

    # the op that builds: text, the role column, and the sentence saying how builds use it
    r, ns = cli("compile", "{file}", "--op", "{ns}::copy", "--min-arch", "sm_80", "--arch", "sm_80", "--arch", "sm_90")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].endswith(f"+ AOT plugin PTX for --min-arch sm_80 into {cache}")
    row = next(ln for ln in lines if " sm_80 " in ln and f"{ns}::copy" in ln)
    assert "--arch, AOT PTX (min arch)" in row and "read from the cache" in row and "PTX .target sm_80" in row
    assert ("TensorRT builds with TRT_KERNELS_MIN_ARCH=sm_80 (or ops declared with min_arch='sm_80') embed this "
            "sm_80 PTX from the cache") in r.stdout
    assert "run them with TRT_KERNELS_MIN_ARCH=sm_80 and the same TRT_KERNELS_CACHE_DIR" in r.stdout
    # a ptx_op alone: its PTX is as given, so nothing is said to come from the cache
    r, ns = cli("compile", "{file}", "--op", "{ns}::ptx80", "--min-arch", "sm_86")
    assert r.returncode == 0 and "targets sm_80" in r.stdout and "TensorRT builds with" not in r.stdout

    # a process building with that floor: the AOT PTX comes from the cache, NVRTC compiles nothing
    calls = counting_compile_cache(cache, monkeypatch)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "sm_80")
    path = root / f"ops_{ns}.py"
    with registry.deferred_compile():
        runpy.run_path(str(path))
    kop = registry.get(f"{ns}::copy")
    target = kop.aot_target()[0]
    assert target == "sm_80" and kop.binary(target).from_cache and calls == []
    assert archs.ptx_target(kop.binary(target).kernel(kop.dtypes[0], 1).aot_ptx) == "sm_80"


def _check(checks, name):
    found = [c for c in checks if c["check"] == name]
    assert len(found) == 1, [c["check"] for c in checks]
    return found[0]


def test_doctor_says_where_the_aot_plugins_load(monkeypatch, tmp_path):
    """The "AOT plugin PTX" line; with TRT_KERNELS_MIN_ARCH set, a warning with its fix for a value that is no
    arch, one above the GPU, and an op declared in this process whose min_arch is above it."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    monkeypatch.delenv(archs.MIN_ARCH_ENV, raising=False)
    line = _check(doctor.assess({"aot_ptx": doctor.aot_facts()}), "AOT plugin PTX")
    assert line["status"] == "ok" and line["detail"].startswith("sm_90, the compile arch (TRT_KERNELS_ARCH): AOT "
                                                                 "plugins load on compute capability 9.0 and newer")
    assert "TRT_KERNELS_MIN_ARCH=sm_80 makes every build do so" in line["detail"]

    path, ns = _ops_file(tmp_path)
    with registry.deferred_compile():
        runpy.run_path(str(path))
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "sm_80")
    facts = {"aot_ptx": doctor.aot_facts(), "gpus": [{"index": 0, "name": "Tesla T4", "arch": "sm_75"}]}
    assert [r["op"] for r in facts["aot_ptx"]["refused_by"] if r["op"].startswith(ns)] == [f"{ns}::tma90"]
    checks = doctor.assess(facts)
    line = _check(checks, "AOT plugin PTX")
    assert line["status"] == "ok" and line["detail"].startswith("sm_80 (TRT_KERNELS_MIN_ARCH): AOT plugins load on "
                                                                 "compute capability 8.0 and newer (Ampere")
    gpu = _check(checks, "TRT_KERNELS_MIN_ARCH vs cuda:0")
    assert gpu["status"] == "warn" and "above cuda:0 Tesla T4 (sm_75)" in gpu["detail"]
    op = _check(checks, f"AOT PTX of {ns}::tma90")
    assert op["status"] == "warn" and "declared with min_arch='sm_90'" in op["detail"]
    assert "declare min_arch='sm_80'" in op["fix"]
    assert doctor.exit_status([line, gpu, op]) == 0  # warnings: doctor's exit status stays the installation's
    assert f"AOT PTX of {ns}::tma90: " in doctor.format_checks(checks).split("to fix:")[1]

    # an arch no NVRTC here compiles for: the AOT line is the warning (not "ok" beside one), with the fix
    nv = {"nvrtc": [13, 0], "nvrtc_archs": [75, 80, 86, 89, 90, 100, 120]}
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "sm_999")
    line = _check(doctor.assess({"aot_ptx": doctor.aot_facts(), **nv}), "AOT plugin PTX")
    assert line["status"] == "warn" and line["detail"].startswith("TRT_KERNELS_MIN_ARCH=sm_999: NVRTC 13.0 cannot")
    assert line["fix"] == "TRT_KERNELS_MIN_ARCH=sm_80, or install an nvidia-cuda-nvrtc that supports sm_999"
    monkeypatch.delenv(archs.MIN_ARCH_ENV)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_10")
    checks = doctor.assess({"aot_ptx": doctor.aot_facts(), **nv, "probe": "CompileError: ...", "probe_arch": "sm_10"})
    line = _check(checks, "AOT plugin PTX")
    assert line["status"] == "warn" and line["detail"].startswith("TRT_KERNELS_ARCH=sm_10: NVRTC 13.0 cannot")
    assert line["fix"].startswith("TRT_KERNELS_ARCH=sm_90, or install")
    assert _check(checks, "probe compile")["fix"].startswith("compile for an arch NVRTC 13.0 has (TRT_KERNELS_ARCH=")
    # a GPU whose arch this NVRTC lacks (an arch-specific one included): an error line naming it
    gpus = [{"index": 0, "name": "Future GPU", "arch": "sm_130a"}, {"index": 1, "name": "NVIDIA H100", "arch": "sm_90"}]
    flagged = [c for c in doctor.assess({**nv, "gpus": gpus}) if c["check"].startswith("NVRTC arch ")]
    assert [(c["check"], c["status"]) for c in flagged] == [("NVRTC arch sm_130a", "error")]
    assert flagged[0]["detail"] == "NVRTC 13.0 cannot compile for Future GPU (sm_130a)"
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")

    monkeypatch.setenv(archs.MIN_ARCH_ENV, "ampere")
    bad = _check(doctor.assess({"aot_ptx": doctor.aot_facts()}), "AOT plugin PTX")
    assert bad["status"] == "warn" and bad["detail"].startswith("TRT_KERNELS_MIN_ARCH=ampere: ")
    assert bad["fix"] == "TRT_KERNELS_MIN_ARCH=sm_80, or unset it"

    # a TRT_KERNELS_ARCH that is no arch: its own warning (doctor used to stop with a traceback), no AOT line
    monkeypatch.delenv(archs.MIN_ARCH_ENV)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "hopper")
    checks = doctor.assess({"aot_ptx": doctor.aot_facts(), "arch_error": "arch 'hopper': expected an arch"})
    assert _check(checks, "TRT_KERNELS_ARCH")["detail"].startswith("TRT_KERNELS_ARCH=hopper: expected an arch")
    assert not [c for c in checks if c["check"] == "AOT plugin PTX"]
