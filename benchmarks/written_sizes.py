"""What reading back a size the kernel writes (``ttk.Written``) costs in eager (GPU machine; prints a table).

An op whose kernel decides an output's size returns it at that size, so each eager call waits for the kernel and
reads the count (one stream synchronisation). Per call, wall time from the first call of a batch to the end of a
``torch.cuda.synchronize()`` after its last (so a row that never waits is charged its GPU time too, overlapped
with the host's), median of 21 batches of 200 calls interleaved round-robin:

  torch.nonzero(x) / boxes[scores > t]         torch's own, which also synchronise to size their outputs
  trt_kernels op (ttk.Written)                 the gallery's nonzero_scan / score_filter: launch, read the count,
                                               return the outputs at their size
  the same kernel, outputs at the bound        the same .cu file declared with a plain 0-D count output and outputs
                                               at the bound: the launch without the read-back (what the
                                               synchronisation costs is the difference)
  ... + count.item() by hand                   that launch, then the caller reads the count and slices: the
                                               pattern the op replaces

Run: python benchmarks/written_sizes.py [--sizes 64x64,512x512]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import trt_kernels as ttk  # noqa: E402
from support import load_example  # noqa: E402

gallery = load_example("gallery/declare")


def per_call_us(fns: dict, calls=200, reps=21) -> dict:
    """Median wall microseconds per call of each ``name -> fn``, batches interleaved round-robin, each ended by a
    synchronisation that is counted."""
    for fn in fns.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    samples = {k: [] for k in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            samples[name].append((time.perf_counter_ns() - t0) / calls / 1000.0)
    return {k: statistics.median(v) for k, v in samples.items()}


def at_the_bound(spec: ttk.KernelSpec) -> ttk.KernelSpec:
    """``spec`` with each ttk.Written axis at its bound and the count a plain 0-D output (same kernel file)."""
    outs, counts = [], {}
    for o in spec.outputs:
        shape = []
        for e in o.shape:
            if isinstance(e, ttk.Written):
                counts[e.count] = e.dtype
                e = e.max
            shape.append(e)
        outs.append(ttk.OutputDecl(o.name, shape=tuple(shape), dtype_from=o.dtype_from, dtype=o.dtype))
    outs += [ttk.OutputDecl(c, shape=(), dtype=dt) for c, dt in counts.items()]
    from dataclasses import replace

    return replace(spec, outputs=outs)


def table(sizes):
    nz = gallery.declare_nonzero(name="ttk_bench_written::nonzero")
    nz_bound = ttk.cuda_kernel_op("ttk_bench_written::nonzero_bound", at_the_bound(gallery.nonzero_spec()))
    sf = gallery.declare_score_filter(name="ttk_bench_written::score_filter")
    sf_bound = ttk.cuda_kernel_op("ttk_bench_written::score_filter_bound", at_the_bound(gallery.score_filter_spec()))
    print("\nPer call, wall time to the end of a synchronisation after each batch (median of 21 batches of 200 calls, "
          "interleaved)\n")
    print("| input | torch | trt_kernels op (ttk.Written) | same kernel, outputs at the bound | ... + count.item() "
          "by hand | op / torch | sync cost (op - bound) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for rows, cols in sizes:
        (x,) = gallery.nonzero_inputs("cuda", rows, cols=cols)
        boxes, scores, t = gallery.score_filter_inputs("cuda", rows * cols)
        assert torch.equal(nz(x), torch.nonzero(x))
        assert all(torch.equal(a, b) for a, b in zip(sf(boxes, scores, t), (boxes[scores > t], scores[scores > t])))

        def nz_by_hand():
            idx, count = nz_bound(x)
            return idx[:count.item()]

        def sf_by_hand():
            kb, ks, count = sf_bound(boxes, scores, t)
            n = count.item()
            return kb[:n], ks[:n]

        res = per_call_us({
            "nz torch": lambda: torch.nonzero(x), "nz op": lambda: nz(x), "nz bound": lambda: nz_bound(x),
            "nz hand": nz_by_hand,
            "sf torch": lambda: (boxes[scores > t], scores[scores > t]), "sf op": lambda: sf(boxes, scores, t),
            "sf bound": lambda: sf_bound(boxes, scores, t), "sf hand": sf_by_hand})
        for key, label in (("nz", f"nonzero {rows}x{cols} float32"), ("sf", f"score filter {rows * cols} boxes")):
            r = [res[f"{key} {k}"] for k in ("torch", "op", "bound", "hand")]
            print(f"| {label} | {r[0]:.1f} us | {r[1]:.1f} us | {r[2]:.1f} us | {r[3]:.1f} us | {r[1] / r[0]:.2f}x | "
                  f"{r[1] - r[2]:+.1f} us |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64x64,512x512", help="matrix sizes ROWSxCOLS, comma-separated")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("benchmarks/written_sizes.py: needs a CUDA GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        return 1
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    table([tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
