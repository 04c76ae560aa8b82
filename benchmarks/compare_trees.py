"""Eager per-call cost of two source trees of trt_kernels, side by side (GPU machine).

For a change that must not slow the hot path down: ``OLD`` is a checkout of an earlier commit
(``git worktree add /tmp/old <commit>``, or ``git archive <commit> | tar -x -C /tmp/old``),
``NEW`` this checkout. Fresh processes alternate between the trees (old, new, old, new, ...);
each imports ``trt_kernels`` from its tree, declares a CUDA C++ sigmoid (the seed's case 1) and,
where Triton imports, a Triton one, and times per call (medians of batches of 2000 calls,
interleaved round-robin with ``torch.sigmoid`` in the same process) in grad mode and under
``torch.inference_mode()``. Rows: each op as a ratio to ``torch.sigmoid`` (the ratio cancels
drift in the machine's speed between processes), median over the processes of a tree.

Run: python benchmarks/compare_trees.py OLD [NEW] [--procs 6]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, statistics, sys, time
import torch
import trt_kernels as ttk
sys.path.insert(0, sys.argv[1])  # tests/, for the Triton kernel
assert ttk.__file__.startswith(sys.argv[2]), (ttk.__file__, sys.argv[2])
SRC = '''
extern "C" __global__ void cmp_sigmoid(const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}
'''
ops = {"cuda": ttk.cuda_kernel_op("cmp_trees::sigmoid", ttk.KernelSpec(
    kernel_source=SRC, kernel_name="cmp_sigmoid", inputs=[ttk.InputDecl("x")],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")], geometry=ttk.Elementwise())).default}
try:
    import triton  # noqa: F401
    import triton_kernels as tk
    name = "cmp_trees::scale_shift"
    tk.declare_scale(name)
    ops["triton"] = torch.ops.cmp_trees.scale_shift.default
except ImportError:
    pass
x = torch.randn(1024, device="cuda")
calls = {"torch.sigmoid": lambda: torch.sigmoid(x)}
for k, op in ops.items():
    if k == "triton":
        calls[k] = lambda op=op: op(x, 0.5)
    else:
        calls[k] = lambda op=op: op(x)
for f in calls.values():
    for _ in range(200):
        f()
torch.cuda.synchronize()
res = {}
for mode in ("grad", "inference"):
    times = {k: [] for k in calls}
    for _ in range(15):
        for k, f in calls.items():
            with (torch.inference_mode() if mode == "inference" else torch.enable_grad()):
                t0 = time.perf_counter()
                for _ in range(2000):
                    f()
                t1 = time.perf_counter()
            torch.cuda.synchronize()
            times[k].append((t1 - t0) / 2000 * 1e6)
    res[mode] = {k: statistics.median(v) for k, v in times.items()}
print("RESULT " + json.dumps(res))
"""


def run_child(tree: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TRT_KERNELS_CACHE_DIR=os.environ.get("TRT_KERNELS_CACHE_DIR", "/tmp/ttk-compare-cache"))
    cmd = [sys.executable, "-c", _CHILD, str(ROOT / "tests"), str(tree / "trt_kernels")]
    if sys.platform == "linux":
        cmd = ["taskset", "-c", "1"] + cmd
    # run outside the repository: `python -c` puts the working directory ahead of PYTHONPATH
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tempfile.gettempdir())
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode or not line:
        raise SystemExit(f"child for {tree} failed:\n{r.stderr[-3000:]}")
    return json.loads(line[-1][len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=ROOT)
    ap.add_argument("--procs", type=int, default=6, help="processes per tree (alternating)")
    a = ap.parse_args()
    trees = {"old": a.old.resolve(), "new": a.new.resolve()}
    runs = {k: [] for k in trees}
    for _ in range(a.procs):
        for k, tree in trees.items():
            runs[k].append(run_child(tree))
    print(f"old: {trees['old']}\nnew: {trees['new']}\n{a.procs} processes per tree, alternating; 1K float32")
    print(f"{'op':<8} {'mode':<10} {'old us':>8} {'new us':>8} {'old x':>7} {'new x':>7}  (x: ratio to torch.sigmoid)")
    for mode in ("grad", "inference"):
        for op in [k for k in runs["old"][0][mode] if k != "torch.sigmoid"]:
            cells = []
            for k in trees:
                us = statistics.median(r[mode][op] for r in runs[k])
                ratio = statistics.median(r[mode][op] / r[mode]["torch.sigmoid"] for r in runs[k])
                cells.append((us, ratio))
            print(f"{op:<8} {mode:<10} {cells[0][0]:8.2f} {cells[1][0]:8.2f} {cells[0][1]:6.2f}x {cells[1][1]:6.2f}x")
        base = [statistics.median(r[mode]["torch.sigmoid"] for r in runs[k]) for k in trees]
        print(f"{'sigmoid':<8} {mode:<10} {base[0]:8.2f} {base[1]:8.2f}")


if __name__ == "__main__":
    main()
