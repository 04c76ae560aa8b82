"""Triton kernels through trt_kernels vs the other ways to call them (GPU machine; prints tables).

1. Per-call eager host cost, 1K float32 elements, one run, batches interleaved round-robin
   (medians of 21 batches of 2000 calls; grad mode and ``torch.inference_mode()``):
     torch.sigmoid                         the bar the CUDA ops are held to
     trt_kernels Triton op                 torch.ops.tri_bench.scale(x, alpha): our cuLaunchKernel fast path
     @triton.jit called directly           y = empty_like(x); scale_shift_kernel[grid](x, alpha, n, y, BLOCK=1024)
     torch.library.triton_op               the same kernel wrapped with wrap_triton, called as an op
2. RMSNorm over the last axis at a large size (GPU time per call, CUDA events around 10 calls queued
   back to back, median of 50): the Triton op through us, the same kernel launched by Triton itself
   (both specialize the compile on the call's arguments: 16-byte aligned pointers, sizes divisible
   by 16), torch's reference composition, ``torch.nn.functional.rms_norm``, and ``y.copy_(x)`` (copy
   bandwidth: the floor for a kernel that reads x once and writes y once); then the ratio of each of
   our two configs to Triton's launch of the same config.

Run: python benchmarks/triton_ops.py [--rows 16384 --cols 4096 --dtype bf16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import triton  # noqa: E402

import triton_kernels as tk  # noqa: E402
import trt_kernels as ttk  # noqa: E402
from eager_overhead import bench_all  # noqa: E402 - the same interleaved host-cost harness

N = 1024


def gpu_ms(fn, reps=50, inner=10) -> float:
    """GPU time per call of ``fn``: the median over ``reps`` of ``inner`` calls queued back to back between two
    events, behind one more call that keeps the GPU busy while they are queued, so the time is the kernels'
    and not the host's (a host cost per call below the kernel's time never leaves the GPU idle)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        fn()
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return statistics.median(times)


def host_table():
    tk.declare_scale("tri_bench::scale", tactics=False)
    ours = torch.ops.tri_bench.scale
    kernel = tk.scale_shift_kernel

    def direct(x, alpha):
        y = torch.empty_like(x)
        n = x.numel()
        kernel[(triton.cdiv(n, 1024),)](x, alpha, n, y, BLOCK=1024)
        return y

    @torch.library.triton_op("tri_bench::scale_tl", mutates_args=())
    def scale_tl(x: torch.Tensor, alpha: float) -> torch.Tensor:
        y = torch.empty_like(x)
        n = x.numel()
        torch.library.wrap_triton(kernel)[(triton.cdiv(n, 1024),)](x, alpha, n, y, BLOCK=1024)
        return y

    tl_op = torch.ops.tri_bench.scale_tl
    x = torch.randn(N, device="cuda")
    ref = x * 0.5 + 1.0
    for f in (ours, direct, tl_op):
        torch.testing.assert_close(f(x, 0.5), ref)
    rows = {
        "torch.sigmoid": lambda: torch.sigmoid(x),
        "trt_kernels Triton op, torch.ops.tri_bench.scale(x, a)": lambda: ours(x, 0.5),
        "trt_kernels Triton op, .default": lambda: ours.default(x, 0.5),
        "@triton.jit called directly, kernel[grid](...)": lambda: direct(x, 0.5),
        "torch.library.triton_op": lambda: tl_op(x, 0.5),
    }
    fns = {(m, k): f for m in ("grad", "inference") for k, f in rows.items()}
    res = bench_all(fns)
    base = {m: res[(m, "torch.sigmoid")] for m in ("grad", "inference")}
    print(f"\nPer-call host cost, {N} float32 elements (medians of 21 batches of 2000 calls, interleaved)\n")
    print("| per call | grad mode | `inference_mode` |\n| --- | --- | --- |")
    for k in rows:
        cells = [f"{res[(m, k)]:.2f} us ({res[(m, k)] / base[m]:.2f}x)" for m in ("grad", "inference")]
        print(f"| {k} | {cells[0]} | {cells[1]} |")


def rmsnorm_table(rows: int, cols: int, dtype: torch.dtype):
    tk.declare_rmsnorm("tri_bench::rmsnorm", block_d=1024, num_warps=4)
    tk.declare_rmsnorm("tri_bench::rmsnorm8", block_d=4096, num_warps=8)
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    w = torch.randn(cols, device="cuda", dtype=dtype)
    eps = 1e-6
    y = torch.empty_like(x)
    ref = tk.rmsnorm_ref(x, w, eps)
    for op in (torch.ops.tri_bench.rmsnorm, torch.ops.tri_bench.rmsnorm8):
        torch.testing.assert_close(op(x, w, eps), ref, atol=2e-2, rtol=2e-2)

    def direct(block_d, nw):
        def f():
            out = torch.empty_like(x)
            tk.rmsnorm_kernel[(rows,)](x, w, eps, cols, out, BLOCK_D=block_d, num_warps=nw)
            return out
        return f

    torch.testing.assert_close(direct(1024, 4)(), ref, atol=2e-2, rtol=2e-2)
    cases = {
        "trt_kernels Triton op (BLOCK_D=1024, 4 warps)": lambda: torch.ops.tri_bench.rmsnorm(x, w, eps),
        "trt_kernels Triton op (BLOCK_D=4096, 8 warps)": lambda: torch.ops.tri_bench.rmsnorm8(x, w, eps),
        "same kernel launched by Triton (BLOCK_D=1024, 4 warps; Triton's specialization)": direct(1024, 4),
        "same kernel launched by Triton (BLOCK_D=4096, 8 warps)": direct(4096, 8),
        "torch reference composition (fp32 math)": lambda: tk.rmsnorm_ref(x, w, eps),
        "torch.nn.functional.rms_norm": lambda: torch.nn.functional.rms_norm(x, (cols,), w, eps),
        "y.copy_(x) (copy bandwidth)": lambda: y.copy_(x),
    }
    nbytes = 2 * x.numel() * x.element_size()  # read x, write y (w is negligible)
    copy_ms = None
    res = {k: gpu_ms(f) for k, f in cases.items()}
    copy_ms = res["y.copy_(x) (copy bandwidth)"]
    print(f"\nRMSNorm over the last axis, x {rows} x {cols} {str(dtype).replace('torch.', '')} "
          f"(GPU time per call, median of 50 x 10 queued calls; bandwidth = read x + write y)\n")
    print("| kernel | ms | GB/s | vs copy |\n| --- | --- | --- | --- |")
    for k, ms in res.items():
        print(f"| {k} | {ms:.4f} | {nbytes / ms / 1e6:.0f} | {copy_ms / ms:.2f}x |")
    names = list(cases)
    for ours, theirs in ((names[0], names[2]), (names[1], names[3])):
        print(f"\n{ours}: {res[ours] / res[theirs]:.3f}x the GPU time of Triton's own launch", end="")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=16384)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--dtype", default="bf16", choices=["fp32", "fp16", "bf16"])
    a = ap.parse_args()
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[a.dtype]
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; triton {triton.__version__}; "
          f"trt_kernels {ttk.__version__}")
    host_table()
    rmsnorm_table(a.rows, a.cols, dt)


if __name__ == "__main__":
    main()
