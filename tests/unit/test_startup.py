"""Warm start: a process whose kernels are all cached loads no NVRTC, looks up no headers,
queries no GPU, starts no process (no compiler run) and imports none of sympy / tensorrt /
torch_tensorrt while declaring ops; importing the package compiles no generated source; and
it never uses an entry that another NVRTC built.

Each case runs in a fresh interpreter (what is loaded is per process), declaring the
seed's seven ops from ``benchmarks/seed_specs.py`` into a private cache directory. The processes are
independent but for the cache the cold one fills: those that need nothing else are queued at the session's
start (tests/support.py, early jobs), the warm ones start together when the cold one is done (the ``children``
fixture), and each test reads its own.
"""

import json
import os
import pathlib
import textwrap

import pytest

from support import ROOT, early, early_jobs, job

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps (Linux)")

CHILD = textwrap.dedent(r"""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    def nvrtc_mapped():
        with open("/proc/self/maps") as f:
            return "libnvrtc" in f.read()
    by_torch = nvrtc_mapped()  # torch's CUDA builds may map libnvrtc themselves
    def nvrtc_used():
        # whether trt_kernels reached NVRTC: only through cuda.bindings.nvrtc, or a new mapping
        return "cuda.bindings.nvrtc" in sys.modules or (nvrtc_mapped() and not by_torch)
    events = {"generated": [], "generated_declaring": [], "processes": [], "phase": None}
    def audit(event, args):
        # source compiled from a string while importing (dataclass / NamedTuple methods are; a
        # module's own code comes from its bytecode cache or its file) or declaring (generated
        # dispatchers), and any process started
        # (torch's infer_schema evaluating the string annotations of the seed's case-6 meta_fn is
        # torch reading the user's function, not code of ours)
        if event == "compile" and events["phase"] is not None and not str(args[1]).endswith(".py"):
            caller = sys._getframe(1).f_code.co_filename.replace("\\", "/")
            if not caller.endswith("torch/_library/infer_schema.py"):
                events[events["phase"]].append(f"{args[1]}: {str(args[0])[:80]}")
        elif event in ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork"):
            events["processes"].append(f"{event} {str(args)[:200]}")
    events["phase"] = "generated"
    sys.addaudithook(audit)
    import trt_kernels as ttk
    events["phase"] = None
    import seed_specs
    from trt_kernels import registry
    from trt_kernels.sources import toolchain

    events["phase"] = "generated_declaring"
    names = seed_specs.declare()
    events["phase"] = None
    nvrtc = nvrtc_used()
    from trt_kernels import _record, expr, spec
    registered = sorted(c.__qualname__ for m in (spec, expr) for c in vars(m).values()
                        if isinstance(c, type) and "__dataclass_fields__" in vars(c) and _record.registered(c))
    print("RESULT " + json.dumps({
        "dataclasses_registered": registered,
        "nvrtc_loaded": nvrtc,
        "headers": toolchain.headers_resolved(),
        "cuda_initialized": torch.cuda.is_initialized(),
        "modules": sorted(m for m in ("sympy", "tensorrt", "torch_tensorrt", "trt_kernels.plugins",
                                      "trt_kernels.converters") if m in sys.modules),
        "launch_code": sorted(m for m in ("trt_kernels.eager.fastpath", "trt_kernels.eager.driver",
                                          "trt_kernels.eager.compiled_launcher", "trt_kernels.plan")
                              if m in sys.modules),
        "compile_code": sorted(m for m in ("trt_kernels.sources.std_headers",) if m in sys.modules),
        "programs": {n: {a: p.from_cache for a, p in registry.get(n).builds().items()} for n in names},
        "generated_at_import": events["generated"],
        "generated_declaring": events["generated_declaring"],
        "processes": events["processes"],
    }))
""")


def _child_env(cache, arch="sm_90"):
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(cache))
    env.pop("TRT_KERNELS_CACHE", None)
    env.pop("TRT_KERNELS_ARCH", None)
    if arch:
        env["TRT_KERNELS_ARCH"] = arch
    return env


def probe(cache, arch="sm_90", extra=""):
    """The probe (CHILD, then ``extra``) in a fresh process over ``cache``: a Job (tests/support.py), not
    started yet."""
    return job(["-c", CHILD + extra, str(ROOT / "benchmarks")], env=_child_env(cache, arch))


def result(child):
    """The probe's RESULT, from its finished Job."""
    r = child.result(timeout=300)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def _trt_installed():
    import importlib.util

    return all(importlib.util.find_spec(n) is not None for n in ("tensorrt", "torch_tensorrt"))


ABI_MISMATCH = textwrap.dedent(r"""
    try:
        ttk.cuda_kernel_op("kern_seed_bad::sigmoid", ttk.KernelSpec(
            kernel_source=seed_specs.CU_SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
            outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
            extras=[ttk.SizeArg("n", ttk.Numel("x"), "long long")],  # the kernel has int n
            geometry=ttk.Elementwise(block=(256,))))
    except ttk.KernelABIError as e:
        print("ABI " + str(e).splitlines()[0])
    print("NVRTC_AFTER", nvrtc_used())
""")

IDENTITY = textwrap.dedent(r"""
    import sys
    import torch
    def mapped():
        with open("/proc/self/maps") as f:
            return "libnvrtc" in f.read()
    by_torch = mapped()  # torch's CUDA builds may map libnvrtc themselves
    from trt_kernels.sources import toolchain
    ident = toolchain.identity()
    loaded = "cuda.bindings.nvrtc" in sys.modules or (mapped() and not by_torch)
    print(ident is not None and "libnvrtc" in ident, loaded)
""")


def _foreign_copy(warm_cache, cache):
    """A copy of the warm cache whose entries record another NVRTC (a valid checksum, the right path)."""
    import shutil

    from trt_kernels import cache_store
    from trt_kernels.sources import nvrtc as comp

    shutil.copytree(warm_cache, cache)
    entries = sorted(cache.glob("*/*.bin"))
    assert len(entries) == 7
    for path in entries:
        payload = cache_store.unframe(path.read_bytes(), comp._MAGIC)
        header, (ptx, cubin) = cache_store.unpack_payload(payload, "ptx", "cubin")
        header["toolchain"] = "nvidia-cuda-nvrtc==0.0.0@/elsewhere/libnvrtc.so.0:1:1"
        # framed and checksummed again: a sound entry that records another NVRTC
        path.write_bytes(cache_store.frame(comp._MAGIC, cache_store.pack_payload(header, ptx=ptx, cubin=cubin)))


def _first(tmp_path_factory):
    """The fresh processes that need nothing but a folder, not started yet: the benchmarks' runs, the identity
    check, and the cold probe (it fills the cache the others read)."""
    bench, profile = tmp_path_factory.mktemp("startup-bench"), tmp_path_factory.mktemp("startup-profile")
    cold = probe(tmp_path_factory.mktemp("warm"))
    cold.cache = pathlib.Path(cold.popen_kw["env"]["TRT_KERNELS_CACHE_DIR"])
    return {
        "benchmark": job([ROOT / "benchmarks" / "startup.py", "--runs", "1"], cwd=bench,
                         env=dict(os.environ, XDG_CACHE_HOME=str(bench))),
        "profile": job([ROOT / "benchmarks" / "startup_profile.py", "--phases", "--runs", "1"], cwd=profile,
                       env=dict(os.environ, TRT_KERNELS_ARCH="sm_90")),
        "identity": job(["-c", IDENTITY]),
        "cold": cold,
    }


early("startup", __file__, "children", _first)  # queued at the session's start (tests/support.py)


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    """Every fresh process of this file, {name: Job}: those of _first (queued at the session's start, or started
    here); when the cold probe has filled its cache (and is checked), the warm ones, started together."""
    jobs = {k: j.start() for k, j in early_jobs("startup", tmp_path_factory).items()}
    warm_cache = jobs["cold"].cache
    cold = result(jobs["cold"])
    # the probe itself works: compiling does load NVRTC and look up headers
    assert cold["nvrtc_loaded"] and cold["headers"]
    assert all(progs == {"sm_90": False} for progs in cold["programs"].values()), cold["programs"]
    foreign = tmp_path_factory.mktemp("foreign") / "cache"
    _foreign_copy(warm_cache, foreign)
    jobs.update({
        "warm": probe(warm_cache).start(),  # one warm start (import and the seven declarations): 4 tests
        # no arch: the warm start's RESULT, then (after it is printed) the declaration whose ABI disagrees
        "no arch": probe(warm_cache, arch=None, extra=ABI_MISMATCH).start(),
        "foreign": probe(foreign).start(),
    })
    return jobs


@pytest.fixture(scope="module")
def warm(children):
    return result(children["warm"])


def test_warm_declarations_load_nothing_they_do_not_need(warm):
    res = warm
    assert res["nvrtc_loaded"] is False
    assert res["headers"] is False
    assert res["cuda_initialized"] is False
    if _trt_installed():  # the TensorRT side is initialised where both are installed
        assert "sympy" not in res["modules"], res["modules"]
    else:  # no sympy, tensorrt, torch_tensorrt, nor our TensorRT side
        assert res["modules"] == []
    assert all(progs == {"sm_90": True} for progs in res["programs"].values()), res["programs"]
    # no process started (no compiler run, nothing probed) by importing and declaring
    assert res["processes"] == []
    # the launch code (its generator, the driver wrappers, the compiled launcher, the plans) waits
    # for the first launch
    assert res["launch_code"] == []
    # and what only compiling needs (the built-in headers' texts; the cache key carries their digest)
    assert res["compile_code"] == []


def test_importing_generates_no_code(warm):
    """No dataclass or NamedTuple method source is generated and compiled at ``import trt_kernels``
    (the records of trt_kernels._record are written out; tests/unit/test_records.py)."""
    res = warm
    assert res["generated_at_import"] == []


def test_importing_and_declaring_register_no_dataclass(warm):
    """The spec's and expressions' records are registered with ``dataclasses`` only when something asks
    for their fields (``trt_kernels._record.record``): neither the import nor the declarations do."""
    res = warm
    assert res["dataclasses_registered"] == []


def test_declaring_compiles_no_source(warm):
    """A declaration installs its dispatcher without compiling any source: the code specialized to the
    inputs is written and compiled at the op's first call (tests/unit/test_fastpath.py)."""
    res = warm
    assert res["generated_declaring"] == [], "\n".join(res["generated_declaring"])


def test_without_an_arch_the_abi_is_checked_against_any_cached_build(children):
    """No TRT_KERNELS_ARCH and no GPU: the cached sm_90 build serves the declaration's ABI check."""
    res = result(children["no arch"])
    assert res["nvrtc_loaded"] is False and res["cuda_initialized"] is False
    assert all(progs == {"sm_90": True} for progs in res["programs"].values()), res["programs"]


def test_abi_mismatch_is_still_caught_from_the_cache(children):
    """Same source as a cached seed kernel, a spec that disagrees with it: refused at declaration,
    with nothing compiled (the cached PTX says what the kernel takes)."""
    r = children["no arch"].result(timeout=300)  # after the RESULT that test above reads
    assert r.returncode == 0, r.stderr
    assert "ABI kern_seed_bad::sigmoid: kernel 'my_sigmoid' takes 3 parameters" in r.stdout
    assert "NVRTC_AFTER False" in r.stdout


def test_an_entry_built_by_another_nvrtc_is_not_used(children):
    """Entries whose recorded toolchain differs from this process's (a valid checksum, the right
    path) are recompiled, not returned."""
    res = result(children["foreign"])
    assert res["nvrtc_loaded"] is True  # it had to compile
    assert all(progs == {"sm_90": False} for progs in res["programs"].values()), res["programs"]


def test_the_key_depends_on_the_toolchain_identity():
    from trt_kernels.sources import nvrtc as comp

    a = comp.program_key("src", ["k"], [], "c++17", None, "nvidia-cuda-nvrtc==13.0.88@/x/libnvrtc.so.13:1:2")
    b = comp.program_key("src", ["k"], [], "c++17", None, "nvidia-cuda-nvrtc==13.0.88@/x/libnvrtc.so.13:1:3")
    assert a != b


def test_identity_is_read_from_disk_without_loading_nvrtc(children):
    r = children["identity"].result(timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "False"]


def test_the_distribution_lookup_agrees_with_importlib_metadata():
    """toolchain reads the nvidia wheels' version and file list from their .dist-info directly (cheaper
    than importlib.metadata at start-up): the same answers, and importlib.metadata's where none is found."""
    from importlib import metadata

    from trt_kernels.sources import toolchain

    for name in ("nvidia-cuda-nvrtc", "nvidia-cuda-runtime", "nvidia-no-such-wheel-here"):
        try:
            want = metadata.version(name)
        except metadata.PackageNotFoundError:
            want = None
        assert toolchain._dist_version(name) == want, name
    assert toolchain._dist_info("nvidia-no-such-wheel-here") is None
    try:
        dist = metadata.distribution("nvidia-cuda-nvrtc")
    except metadata.PackageNotFoundError:
        pytest.skip("nvidia-cuda-nvrtc is not installed")
    libs = [str(dist.locate_file(f)) for f in dist.files or () if toolchain._is_nvrtc_library(str(f))]
    assert toolchain._pip_library() == next((p for p in libs if os.path.isfile(p)), None)


def test_the_startup_benchmark_runs_and_reports_a_clean_warm_start(children):
    """README's `python benchmarks/startup.py` (one run each): the table, the goal row, and a warm start
    that loads no NVRTC, looks up no headers, initialises no CUDA and starts no process."""
    r = children["benchmark"].result()
    assert r.returncode == 0, r.stderr
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in ln.strip("|").split("|")]
                                              for ln in r.stdout.splitlines() if ln.startswith("| "))}
    assert "import + declare (goal<=15)" in rows
    for flag in ("NVRTC loaded by trt_kernels", "headers looked up", "CUDA initialised", "process started"):
        assert rows[flag][0] == "no", (flag, rows[flag])
    assert rows["NVRTC loaded by trt_kernels"][1] == "yes"  # the cold run compiles


def test_the_phase_profile_times_the_declarations_steps(children):
    """docs/benchmarks.md's `python benchmarks/startup_profile.py --phases`: every step of a warm declaration it
    lists is reached (the native kernel's only where torch has CUDA), so a renamed function shows here."""
    r = children["profile"].result()
    assert r.returncode == 0, r.stderr
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in ln.strip("|").split("|")]
                                              for ln in r.stdout.splitlines() if ln.startswith("| "))}
    never = {step for step, cells in rows.items() if cells[-1] == "never"}
    import torch

    assert never == (set() if torch.version.cuda else {"native.prepare (locate, key, load the module)",
                                                       "native.register (one op, native)"}), never
    assert float(rows["declare 7 seed ops"][0]) > 0 and rows["torch.library.register_fake"][-1] == "7"
