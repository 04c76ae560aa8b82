"""Start-up cost of trt_kernels in fresh processes, warm and cold disk cache, phase by phase.

Each run is a new Python process that times, in order:
  import torch           the baseline every user pays anyway
  import trt_kernels     our import, after torch
  declare 7 seed ops     benchmarks/seed_specs.py (the seed's seven cases)
  first launch           GPU only: the first op's first call, synchronized (CUDA context,
                         CUBIN load, launcher build); skipped without CUDA
  other 6 first launches GPU only: the first call of each remaining op
and reports what the process loaded: NVRTC (cuda.bindings.nvrtc imported, or libnvrtc mapped
in /proc/self/maps where torch had not mapped it already), whether CUDA header
directories were looked up, whether CUDA was initialised during declaration, whether
importing and declaring started a process (a compiler run: an audit hook sees every
subprocess / exec / fork; it runs Python on every audited event, imports and file opens
included, so it is installed only in one extra, untimed run per column), and whether
sympy / tensorrt / torch_tensorrt were imported.

Goal (warm): ``import trt_kernels`` plus declaring the seven ops at most 15 ms beyond
``import torch``.

"warm": the cache already holds every kernel (one unmeasured priming run fills it, and
writes Python bytecode caches, as an installed package has them);
"cold": an empty cache directory per run (NVRTC compiles everything). Medians of --runs
runs (default 7), with min-max.

Without CUDA the arch is given as TRT_KERNELS_ARCH=sm_90 (unless set already or --arch is
passed), so declarations compile and read the cache as they would on an H100.

``--old TREE`` (a checkout of an earlier commit, e.g. ``git worktree add /tmp/old <commit>``): warm
start only, fresh processes alternating between that tree and this one in ABBA order (the second of two
back-to-back processes was measured faster), each importing trt_kernels from its own tree with its own
warm cache; medians side by side: for a change that must not slow the warm start down.

Run: python benchmarks/startup.py [--runs 7] [--arch sm_90] [--json] [--old TREE]
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

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
import torch
audit = os.environ.get("TTK_STARTUP_AUDIT") == "1"
started = []  # processes started from here on (a C compiler, a probe): import and declarations start none
if audit:  # a Python call on every audited event (imports, opens, code objects): only in the untimed runs
    sys.addaudithook(lambda ev, args: started.append(ev) if ev in (
        "subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.fork") else None)
with open("/proc/self/maps") as f:
    by_torch = "libnvrtc" in f.read()  # torch's CUDA builds may map libnvrtc themselves
t1 = time.perf_counter()  # (after reading the maps: the probe's cost is not ours)
import trt_kernels as ttk
ttk.cuda_kernel_op  # the package's API as a first declaration loads it (its public names import when first used)
t2 = time.perf_counter()
tree = os.environ.get("TTK_STARTUP_TREE")  # --old: the tree this child must import trt_kernels from
assert tree is None or ttk.__file__.startswith(tree), (ttk.__file__, tree)
sys.path.insert(0, sys.argv[1])
import seed_specs
t3 = time.perf_counter()
names = seed_specs.declare()
t4 = time.perf_counter()

def nvrtc_mapped():
    # whether trt_kernels reached NVRTC: only through cuda.bindings.nvrtc, or a mapping torch did not make
    if "cuda.bindings.nvrtc" in sys.modules:
        return True
    try:
        with open("/proc/self/maps") as f:
            return "libnvrtc" in f.read() and not by_torch
    except OSError:
        return None

def headers_looked_up():
    try:
        from trt_kernels.sources import toolchain
    except ImportError:  # a tree from before trt_kernels.sources (issue 29)
        from trt_kernels import toolchain
    return toolchain.headers_resolved()

res = {
    "import torch": (t1 - t0) * 1e3,
    "import trt_kernels": (t2 - t1) * 1e3,
    "declare 7 seed ops": (t4 - t3) * 1e3,
    "NVRTC loaded by trt_kernels": nvrtc_mapped(),
    "headers looked up": headers_looked_up(),
    "CUDA initialised": torch.cuda.is_initialized(),
    "process started": bool(started) if audit else None,
    "sympy imported": "sympy" in sys.modules,
    "tensorrt imported": "tensorrt" in sys.modules,
    "torch_tensorrt imported": "torch_tensorrt" in sys.modules,
    "cuda": torch.cuda.is_available(),
}
if torch.cuda.is_available():
    args = seed_specs.inputs("cuda")
    torch.cuda.synchronize()
    ops = [getattr(getattr(torch.ops, n.split("::")[0]), n.split("::")[1]) for n in names]
    t5 = time.perf_counter()
    ops[0](*args[0])
    torch.cuda.synchronize()
    t6 = time.perf_counter()
    for op, a in zip(ops[1:], args[1:]):
        op(*a)
    torch.cuda.synchronize()
    t7 = time.perf_counter()
    res["first launch"] = (t6 - t5) * 1e3
    res["other 6 first launches"] = (t7 - t6) * 1e3
    res["NVRTC loaded by us after launches"] = nvrtc_mapped()
print("STARTUP " + json.dumps(res))
"""

TIMES = ("import torch", "import trt_kernels", "declare 7 seed ops", "first launch", "other 6 first launches")
FLAGS = ("NVRTC loaded by trt_kernels", "headers looked up", "CUDA initialised", "process started", "sympy imported",
         "tensorrt imported", "torch_tensorrt imported", "NVRTC loaded by us after launches")
GOAL_MS = 15.0  # warm import + declare


def run_child(env, bench_dir: Path = HERE) -> dict:
    # (run from the benchmarks folder: from the repository root, '' on sys.path would import its trt_kernels)
    r = subprocess.run([sys.executable, "-c", _CHILD, str(bench_dir)], env=env, capture_output=True, text=True,
                       cwd=bench_dir)
    if r.returncode != 0:
        raise SystemExit(f"child failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("STARTUP ")][-1]
    return json.loads(line[len("STARTUP "):])


def cuda_available() -> bool:
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip().endswith("True")


def summarize(samples):
    out = {}
    for k in TIMES:
        vals = [s[k] for s in samples if k in s]
        if vals:
            out[k] = (statistics.median(vals), min(vals), max(vals))
    for k in FLAGS:
        vals = {s.get(k) for s in samples if s.get(k) is not None}
        if vals:
            out[k] = "yes" if vals == {True} else "no" if vals == {False} else "/".join(map(str, sorted(vals, key=str)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--arch", default=None, help="set TRT_KERNELS_ARCH for the children (default: only without CUDA)")
    ap.add_argument("--json", action="store_true", help="also print the raw medians as JSON")
    ap.add_argument("--old", type=Path, default=None, metavar="TREE",
                    help="warm start only, alternating with this earlier checkout of the repository")
    args = ap.parse_args()

    has_cuda = cuda_available()
    base = dict(os.environ)
    base.pop("TRT_KERNELS_CACHE", None)
    # as installed packages run: with bytecode caches (the priming run writes any that are missing)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    note = ""
    if args.arch:
        base["TRT_KERNELS_ARCH"] = args.arch
    elif not has_cuda and "TRT_KERNELS_ARCH" not in base:
        base["TRT_KERNELS_ARCH"] = "sm_90"
        note = " (no CUDA: TRT_KERNELS_ARCH=sm_90, launches skipped)"

    import platform

    import torch  # for the header line only; children are fresh processes
    try:
        from importlib.metadata import version
        nvrtc = version("nvidia-cuda-nvrtc")
        bindings = version("cuda-bindings")
    except Exception:  # noqa: BLE001
        nvrtc = bindings = "?"
    device = torch.cuda.get_device_name() if has_cuda else f"CPU ({platform.processor() or platform.machine()})"
    print(f"device {device} | torch {torch.__version__} | cuda-bindings {bindings} | nvidia-cuda-nvrtc {nvrtc} | "
          f"python {platform.python_version()}{note}")

    if args.old is not None:
        compare(args.old.resolve(), base, args.runs)
        return
    warm, cold = [], []
    with tempfile.TemporaryDirectory() as tmp:
        warm_dir = os.path.join(tmp, "warm")
        run_child(dict(base, TRT_KERNELS_CACHE_DIR=warm_dir))  # priming run: fills the cache
        for i in range(args.runs):
            warm.append(run_child(dict(base, TRT_KERNELS_CACHE_DIR=warm_dir)))
            cold.append(run_child(dict(base, TRT_KERNELS_CACHE_DIR=os.path.join(tmp, f"cold{i}"))))
        # one more run each with the audit hook, for the "process started" row only (times dropped)
        for runs, cdir in ((warm, warm_dir), (cold, os.path.join(tmp, "cold-audit"))):
            flags = run_child(dict(base, TRT_KERNELS_CACHE_DIR=cdir, TTK_STARTUP_AUDIT="1"))
            runs.append({k: v for k, v in flags.items() if k not in TIMES})
    w, c = summarize(warm), summarize(cold)

    print()
    print(f"start-up phases, fresh process each, ms: median (min-max) of {args.runs} runs")
    print(f"| {'phase':28s} | {'warm cache':>24s} | {'cold cache':>24s} |")
    print(f"| {'-' * 28} | {'-' * 24} | {'-' * 24} |")
    for k in TIMES:
        if k not in w:
            print(f"| {k:28s} | {'skipped (no CUDA)':>24s} | {'skipped (no CUDA)':>24s} |")
            continue
        cells = [f"{d[k][0]:7.1f} ({d[k][1]:.1f}-{d[k][2]:.1f})" for d in (w, c)]
        print(f"| {k:28s} | {cells[0]:>24s} | {cells[1]:>24s} |")
    tot = [d["import trt_kernels"][0] + d["declare 7 seed ops"][0] for d in (w, c)]
    print(f"| {f'import + declare (goal<={GOAL_MS:g})':28s} | {tot[0]:24.1f} | {tot[1]:24.1f} |")
    for k in FLAGS:
        if k in w:
            print(f"| {k:28s} | {w[k]:>24s} | {c[k]:>24s} |")
    if args.json:
        print(json.dumps({"warm": w, "cold": c}))


def compare(old: Path, base: dict, runs: int) -> None:
    """Warm start of ``old`` and of this tree, fresh processes alternating, medians side by side."""
    trees = {"old": old, "new": HERE.parent}
    phases = ("import trt_kernels", "declare 7 seed ops")
    samples = {k: [] for k in trees}
    parts = {(k, p): [] for k in trees for p in phases}
    with tempfile.TemporaryDirectory() as tmp:
        envs = {k: dict(base, TRT_KERNELS_CACHE_DIR=os.path.join(tmp, k), TTK_STARTUP_TREE=str(t),
                        PYTHONPATH=os.pathsep.join(filter(None, [str(t), base.get("PYTHONPATH")])))
                for k, t in trees.items()}
        for k, t in trees.items():
            run_child(envs[k], t / "benchmarks")  # priming run: fills that tree's cache
        for i in range(runs):
            for k, t in (list(trees.items()) if i % 2 else list(trees.items())[::-1]):  # ABBA: no position bias
                s = run_child(envs[k], t / "benchmarks")
                samples[k].append(sum(s[p] for p in phases))
                for p in phases:
                    parts[(k, p)].append(s[p])
    med = {k: statistics.median(v) for k, v in samples.items()}
    print()
    print(f"warm start (import trt_kernels + declare 7 seed ops), ms, fresh processes alternating, {runs} runs each")
    print(f"| {'tree':5s} | {'median':>7s} | {'min':>7s} | {'max':>7s} | {'import':>7s} | {'declare':>7s} |")
    for k, v in samples.items():
        im, de = (statistics.median(parts[(k, p)]) for p in phases)
        print(f"| {k:5s} | {med[k]:7.2f} | {min(v):7.2f} | {max(v):7.2f} | {im:7.2f} | {de:7.2f} |")
    print(f"new / old: {med['new'] / med['old']:.3f}  (old: {old})")


if __name__ == "__main__":
    main()
