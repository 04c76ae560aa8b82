"""Per-call host cost of an eager launch, side by side, and registration cost (GPU machine).

Rows, all at 1K float32 elements, medians of 21 timed batches of 2000 calls, interleaved:
  torch.sigmoid                        the bar (goal: ours <= 1.3x this, and below CuPy)
  trt_kernels op, native kernel       torch.ops.kern_n.sigmoid(x) (the seed's case 1): the CUDA kernel torch
                                       calls is trt_kernels' native one (trt_kernels/eager/native.py)
  ... .default                         the OpOverload, as compiled graphs call it
  ... Python kernel + compiled launcher  the same op declared under native.disabled() (torch calls the Python
                                       kernel), its launcher built with
                                       trt_kernels.eager.compiled_launcher.using("compiled")
  ... Python kernel + cuda.bindings    the same, with trt_kernels.eager.compiled_launcher.using("python")
  Triton op, the same three            x * alpha + 1 through triton_kernel_op (tests/triton_kernels.py),
                                       "not installed" without triton
  anchor launch method                 cuda.core ``launch`` with a stream wrapper built per call,
                                       as torch_tensorrt.kernels' eager path does (seed case 6)
  CuPy RawKernel                       the same source through cupy.RawKernel, output via cupy.empty_like
                                       ("not installed" without cupy)
each in grad mode and under torch.inference_mode().

Then per seed kernel: cold compile + registration (empty cache, fresh process) and warm
registration (disk cache hit, fresh process), in ms. Goal: warm <= 2 ms.

Run: python benchmarks/eager_overhead.py   (needs a CUDA GPU; without one it says so and exits 1)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

import trt_kernels as ttk

ROOT = Path(__file__).resolve().parents[1]
N = 1024


def bench_all(fns: dict, calls=2000, reps=21) -> dict:
    """Median per-call microseconds of each ``(mode, name) -> fn``. Batches are interleaved
    round-robin over every row and mode, so drift in the machine's speed hits all rows alike;
    each batch runs inside its mode's context (grad mode or ``torch.inference_mode()``)."""
    def ctx(mode):
        return torch.inference_mode() if mode == "inference" else torch.enable_grad()

    for (mode, _), fn in fns.items():
        with ctx(mode):
            for _ in range(300):
                fn()
    torch.cuda.synchronize()
    samples = {k: [] for k in fns}
    for _ in range(reps):
        for (mode, name), fn in fns.items():
            with ctx(mode):
                t0 = time.perf_counter_ns()
                for _ in range(calls):
                    fn()
                t1 = time.perf_counter_ns()
            torch.cuda.synchronize()
            samples[(mode, name)].append((t1 - t0) / calls / 1000.0)
    return {k: statistics.median(v) for k, v in samples.items()}


GOAL = 1.3  # ours <= GOAL x torch.sigmoid per call
NATIVE, COMPILED, PYTHON = "native kernel", "Python kernel + compiled launcher", "Python kernel + cuda.bindings"
VARIANTS = (("n", "auto", NATIVE), ("c", "compiled", COMPILED), ("py", "python", PYTHON))


def _twin_rows(fns, mode, label, op, x, args, launched_by):
    """``op(x, *args)`` and ``op.default(x, *args)`` under ``label`` (the launcher its launchers use)."""
    fns[(mode, f"{label}, {launched_by}")] = lambda: op(x, *args)
    fns[(mode, f"{label} .default, {launched_by}")] = lambda: op.default(x, *args)


def _built_with(op_name: str) -> set:
    from trt_kernels import registry
    from trt_kernels.eager import native
    from trt_kernels.library import definition

    slot = definition.native_slot(op_name)
    if slot is not None and native.variants(slot):
        return {"auto"}
    return {"compiled" if fn.claunch is not None else "python"
            for fn in registry.get(op_name).cuda_impl.launchers.values()}


def eager_rows():
    """``({mode: {row: us}}, {row: why it has no number})``."""
    sys.path.insert(0, str(ROOT / "examples"))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "tests"))
    from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

    import cuda_kernel_op as ex  # the seed ops (kern_ex), for the anchor's method below
    import seed_specs
    from trt_kernels.eager import compiled_launcher, native

    missing = {}
    dev = Device()
    dev.set_current()
    kernel = (
        Program(ex.CU_SIGMOID, code_type="c++", options=ProgramOptions(std="c++17", arch=f"sm_{dev.arch}"))
        .compile("cubin", name_expressions=("my_sigmoid",))
        .get_kernel("my_sigmoid")
    )

    class _PTStream:
        def __cuda_stream__(self):
            return (0, torch.cuda.current_stream().cuda_stream)

    def anchor_style(x):
        n = x.numel()
        y = torch.empty_like(x)
        launch(dev.create_stream(_PTStream()), LaunchConfig(grid=((n + 255) // 256,), block=(256,)), kernel,
               x.data_ptr(), n, y.data_ptr())
        return y

    try:
        import cupy

        ck = cupy.RawKernel(ex.CU_SIGMOID, "my_sigmoid")
    except Exception as e:  # noqa: BLE001
        cupy = None
        missing["CuPy RawKernel"] = f"not installed ({type(e).__name__})"
    try:
        import triton_kernels as tk  # imports triton
    except Exception as e:  # noqa: BLE001
        tk = None
        for _, _, lab in VARIANTS:
            missing[f"Triton op, {lab}"] = missing[f"Triton op .default, {lab}"] = f"not installed ({type(e).__name__})"

    # triplets: the same ops with the native kernel, and with the Python kernel only (declared under
    # native.disabled()), whose launchers are built with the compiled launcher or with cuda.bindings'
    seed_specs.declare("kern_n")
    if tk is not None:
        tk.declare_scale("tri_n::scale", tactics=False)
    with native.disabled():
        seed_specs.declare("kern_c")
        seed_specs.declare("kern_py")
        if tk is not None:
            tk.declare_scale("tri_c::scale", tactics=False)
            tk.declare_scale("tri_py::scale", tactics=False)
    twins = [("trt_kernels op", "kern_{}::sigmoid", (), lambda t: torch.sigmoid(t))]
    if tk is not None:
        twins.append(("Triton op", "tri_{}::scale", (0.5,), lambda t: t * 0.5 + 1.0))
    x = torch.randn(N, device="cuda")
    with torch.inference_mode():
        xi = torch.randn(N, device="cuda")
    ops = {}
    for label, pattern, args, ref in twins:
        for tag, kind, launched_by in VARIANTS:
            name = pattern.format(tag)
            ns, short = name.split("::")
            op = getattr(getattr(torch.ops, ns), short)
            try:
                with compiled_launcher.using(kind):  # the launchers are built at the first call of each key
                    for t in (x, xi):
                        torch.testing.assert_close(op(t, *args), ref(t), atol=1e-6, rtol=1e-5)
                        torch.testing.assert_close(op.default(t, *args), ref(t), atol=1e-6, rtol=1e-5)
            except ttk.LaunchError as e:  # the compiled launcher cannot be had here: say why
                missing[f"{label}, {launched_by}"] = missing[f"{label} .default, {launched_by}"] = str(e)
                continue
            if _built_with(name) != {kind}:
                why = native.describe()["reason"] if kind == "auto" else f"built with {_built_with(name)}"
                missing[f"{label}, {launched_by}"] = missing[f"{label} .default, {launched_by}"] = f"not in use: {why}"
                continue
            ops[(label, launched_by)] = (op, args)
    fns = {}
    for mode, t in (("grad", x), ("inference", xi)):
        torch.testing.assert_close(anchor_style(t), torch.sigmoid(t), atol=1e-6, rtol=1e-5)
        fns[(mode, "torch.sigmoid")] = lambda t=t: torch.sigmoid(t)
        for label, _, _, _ in twins:
            for _, _, launched_by in VARIANTS:
                if (label, launched_by) in ops:
                    op, args = ops[(label, launched_by)]
                    _twin_rows(fns, mode, label, op, t, args, launched_by)
        fns[(mode, "anchor launch method")] = lambda t=t: anchor_style(t)
        if cupy is not None:
            cx = cupy.asarray(t)
            n32 = cupy.int32(N)
            grid = ((N + 255) // 256,)

            def cupy_call(cx=cx):
                y = cupy.empty_like(cx)
                ck(grid, (256,), (cx, n32, y))
                return y

            assert cupy.allclose(cupy_call(), cupy.asarray(torch.sigmoid(t)), atol=1e-6)
            fns[(mode, "CuPy RawKernel")] = cupy_call
    res = bench_all(fns)
    return {mode: {name: v for (m, name), v in res.items() if m == mode} for mode in ("grad", "inference")}, missing


ROW_ORDER = ["torch.sigmoid"] + [f"{label}{d}, {lb}" for label in ("trt_kernels op", "Triton op")
                                  for _, _, lb in VARIANTS for d in ("", " .default")] + \
            ["anchor launch method", "CuPy RawKernel"]


def format_eager(eager: dict, missing: dict) -> str:
    """The per-call table (medians and ratios to torch.sigmoid, both modes side by side) and the verdicts."""
    names = [n for n in ROW_ORDER if n in eager["grad"] or n in missing]
    w = max(len(n) for n in names)
    lines = [f"per-call host cost at {N} float32 elements, median us (ratio to torch.sigmoid)",
             f"| {'method':{w}s} | {'grad mode':>18s} | {'inference_mode':>18s} |",
             f"| {'-' * w} | {'-' * 18} | {'-' * 18} |"]
    for name in names:
        if name in missing:
            lines.append(f"| {name:{w}s} | {missing[name]} |")
            continue
        cells = []
        for mode in ("grad", "inference"):
            v = eager[mode][name]
            cells.append(f"{v:7.2f} ({v / eager[mode]['torch.sigmoid']:.2f}x)")
        lines.append(f"| {name:{w}s} | {cells[0]:>18s} | {cells[1]:>18s} |")
    for mode in ("grad", "inference"):
        row = eager[mode]
        bar = row["torch.sigmoid"]
        for label in ("trt_kernels op", "Triton op"):
            for _, _, lb in VARIANTS:
                got = [row[n] for n in (f"{label}, {lb}", f"{label} .default, {lb}") if n in row]
                if not got:
                    continue
                worst = max(got)
                verdict = (f"{mode}: {label} with the {lb}: worst {worst:.2f} us = {worst / bar:.2f}x torch.sigmoid "
                           f"({'meets' if worst <= GOAL * bar else 'misses'} the {GOAL}x goal)")
                if "CuPy RawKernel" in row:
                    verdict += (f"; {'faster' if worst < row['CuPy RawKernel'] else 'NOT faster'} than CuPy RawKernel "
                                f"({row['CuPy RawKernel']:.2f} us)")
                lines.append(verdict)
    return "\n".join(lines)


_REG_SCRIPT = r"""
import json, runpy, sys, time
import torch
t0 = time.perf_counter()
import trt_kernels as ttk
t_import = time.perf_counter() - t0
from trt_kernels.sources import nvrtc
t0 = time.perf_counter()
nvrtc.default_arch()  # first CUDA query of the process (initializes CUDA)
t_cuda = time.perf_counter() - t0
t0 = time.perf_counter()
nvrtc.nvrtc_version()  # loads libnvrtc
t_nvrtc = time.perf_counter() - t0
orig = ttk.cuda_kernel_op
times = {}
def timed(name, spec, **kw):
    t = time.perf_counter()
    r = orig(name, spec, **kw)
    times[name] = (time.perf_counter() - t) * 1e3
    return r
ttk.cuda_kernel_op = timed
runpy.run_path(sys.argv[1], run_name="bench_registration")
print(json.dumps({"import_ms": t_import * 1e3, "cuda_init_ms": t_cuda * 1e3, "nvrtc_load_ms": t_nvrtc * 1e3,
                  "ops": times}))
"""


def registration_rows():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRT_KERNELS_CACHE_DIR=cache)
        out = []
        for label in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", _REG_SCRIPT, str(ROOT / "examples" / "cuda_kernel_op.py")],
                               env=env, capture_output=True, text=True, check=True)
            out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})  # one core: fewer migrations
    import cuda.bindings
    from cuda.bindings import nvrtc

    print(f"device {torch.cuda.get_device_name()} | torch {torch.__version__} | cuda-bindings "
          f"{cuda.bindings.__version__} | nvrtc {nvrtc.nvrtcVersion()[1:]} | python {sys.version.split()[0]}")
    eager, missing = eager_rows()
    cold, warm = registration_rows()
    from trt_kernels.eager import compiled_launcher, native

    d = compiled_launcher.describe()
    print(f"compiled launcher of this process: {d['launcher']} ({d['reason']})")
    d = native.describe()
    print(f"native kernel of this process: {d['native']} ({d['reason']})")
    print()
    print(format_eager(eager, missing))
    print()
    print(f"registration per kernel, ms (once per process, measured separately here: import trt_kernels after "
          f"torch {warm['import_ms']:.0f} ms, first CUDA query {warm['cuda_init_ms']:.0f} ms, "
          f"loading NVRTC {warm['nvrtc_load_ms']:.0f} ms; a warm start needs neither of the last two before "
          "the first launch: see benchmarks/startup.py)")
    print(f"| {'op':24s} | {'cold (compile)':>15s} | {'warm (cache hit)':>17s} |")
    print(f"| {'-' * 24} | {'-' * 15} | {'-' * 17} |")
    for name in cold["ops"]:
        print(f"| {name:24s} | {cold['ops'][name]:15.2f} | {warm['ops'][name]:17.2f} |")


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/eager_overhead.py: needs a CUDA GPU (torch.cuda.is_available() is False)")
    main()
