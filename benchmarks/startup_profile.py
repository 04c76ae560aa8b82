"""Where a warm start's milliseconds go: ``import trt_kernels`` and the seven seed declarations, profiled.

A first child fills a cache directory of its own (the cold start); then ``--runs`` fresh children each
import the package and declare the seed ops over that warm cache under ``cProfile``; the table lists the
functions with the largest median cumulative time across the children (the package's own, torch's, the
CUDA bindings'), so a regression, or the extra cost of a GPU machine over a CPU one, has a name.

``--phases``: no profiler (cProfile roughly doubles Python-heavy code and leaves C calls as they are, so its
shares mislead): each child times the import, the package modules a first declaration imports, and a fixed
list of steps of the seven declarations (the package's and torch's registration calls) with
``time.perf_counter`` around each, plus the time the garbage collector runs inside each (``gc.callbacks``);
the table lists medians across the children, in real milliseconds. Steps nest (a row includes the rows it
calls); a step a declaration never reached is reported as such.

    python benchmarks/startup_profile.py --runs 5 --top 25
    python benchmarks/startup_profile.py --phases --runs 11
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent

_CHILD = r"""
import cProfile, json, pstats, sys, time
sys.path.insert(0, sys.argv[1])
import torch  # (not profiled: every user of the package has imported it already)
prof = cProfile.Profile()
t0 = time.perf_counter()
prof.enable()
import trt_kernels as ttk
import seed_specs
seed_specs.declare()
prof.disable()
total = (time.perf_counter() - t0) * 1e3
stats = pstats.Stats(prof)
rows = {}
for (file, line, name), (cc, nc, tt, ct, callers) in stats.stats.items():
    rows[f"{name} ({file.rsplit('/site-packages/', 1)[-1].rsplit('/work/', 1)[-1]}:{line})"] = ct * 1e3
print("PROFILE " + json.dumps({"total_ms": total, "cuda": torch.cuda.is_available(), "rows": rows}))
"""


_PHASES = r"""
import gc, importlib, json, sys, time
sys.path.insert(0, sys.argv[1])
import torch  # (not timed: every user of the package has imported it already)
clock = time.perf_counter
gc_ms = [0.0]
gc_t = [0.0]
def on_gc(phase, info):
    if phase == "start":
        gc_t[0] = clock()
    else:
        gc_ms[0] += (clock() - gc_t[0]) * 1e3
gc.callbacks.append(on_gc)
rows = {}  # row -> [ms, of which garbage collection, calls]
def timing(row, fn):  # fn, adding each call's time to row
    acc = rows.setdefault(row, [0.0, 0.0, 0])
    def w(*a, **k):
        g0, t0 = gc_ms[0], clock()
        try:
            return fn(*a, **k)
        finally:
            acc[0] += (clock() - t0) * 1e3
            acc[1] += gc_ms[0] - g0
            acc[2] += 1
    return w
timing("import trt_kernels (+ its API)", lambda: importlib.import_module("trt_kernels").cuda_kernel_op)()
import seed_specs  # (not timed: the seed's kernel sources)
LAZY = ("eager.native", "eager.build", "cache_trust", "library.definition", "sources.cuda_source",
        "eager.cuda_kernel", "library.schema", "eager.dispatcher")
lazy = [f"trt_kernels.{m}" for m in LAZY if f"trt_kernels.{m}" not in sys.modules]
timing("modules a first declaration imports", lambda: [importlib.import_module(m) for m in lazy])()
STEPS = [  # (row, module, attribute path): wrapped where the declarations call them through that attribute
    ("api._register (schema, checks, torch registration, op packet)", "trt_kernels.api", "_register"),
    ("op.KernelOp.prepare (cache lookup, ABI check)", "trt_kernels.op", "KernelOp.prepare"),
    ("definition.register (torch + native)", "trt_kernels.library.definition", "register"),
    ("definition._point (launcher shell, boxes)", "trt_kernels.library.definition", "_point"),
    ("definition._register_kernels (fake, CUDA, CPU)", "trt_kernels.library.definition", "_register_kernels"),
    ("native.prepare (locate, key, load the module)", "trt_kernels.eager.native", "prepare"),
    ("native.register (one op, native)", "trt_kernels.eager.native", "register"),
    ("api._init_tensorrt_side", "trt_kernels.api", "_init_tensorrt_side"),
    ("torch.library.Library()", "torch.library", "Library.__init__"),
    ("torch Library.define", "torch.library", "Library.define"),
    ("torch Library.impl", "torch.library", "Library.impl"),
    ("torch.library.register_fake", "torch.library", "register_fake"),
]
def wrap(row, modname, path):
    obj = importlib.import_module(modname)
    *owners, attr = path.split(".")
    for o in owners:
        obj = getattr(obj, o)
    setattr(obj, attr, timing(row, getattr(obj, attr)))  # (this child's own process: measured, then it exits)
for step in STEPS:
    wrap(*step)
timing("declare 7 seed ops", seed_specs.declare)()
print("PHASES " + json.dumps({"rows": rows, "cuda": torch.cuda.is_available()}))
"""


def _phases(env, runs: int) -> int:
    out = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", _PHASES, str(HERE)], env=env, capture_output=True, text=True,
                           timeout=600)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("PHASES ")]
        if r.returncode != 0 or not lines:
            raise SystemExit(f"startup_profile.py: the child failed ({r.returncode}):\n{r.stderr[-3000:]}")
        out.append(json.loads(lines[-1][len("PHASES "):]))
    order = list(out[0]["rows"])
    print(f"warm start step by step, {runs} fresh processes ({'CUDA' if out[0]['cuda'] else 'no CUDA'}), "
          "ms: median (of which the garbage collector), calls")
    print(f"| {'step':66s} | {'ms':>7s} | {'gc ms':>6s} | {'calls':>5s} |")
    print(f"| {'-' * 66} | {'-' * 7}:| {'-' * 6}:| {'-' * 5}:|")
    for name in order:
        vals = [r["rows"].get(name, [0.0, 0.0, 0]) for r in out]
        calls = vals[0][2]
        ms = statistics.median(v[0] for v in vals)
        gcm = statistics.median(v[1] for v in vals)
        print(f"| {name[:66]:66s} | {ms:7.2f} | {gcm:6.2f} | {calls if calls else 'never':>5} |")
    return 0


def _child(env) -> dict:
    r = subprocess.run([sys.executable, "-c", _CHILD, str(HERE)], env=env, capture_output=True, text=True,
                       timeout=600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("PROFILE ")]
    if r.returncode != 0 or not lines:
        raise SystemExit(f"startup_profile.py: the child failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(lines[-1][len("PROFILE "):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--phases", action="store_true", help="time steps without a profiler (real milliseconds)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ttk-startup-profile-") as cache:
        env = dict(os.environ, TRT_KERNELS_CACHE_DIR=cache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed package has its bytecode caches)
        _child(env)  # cold: fills the cache
        if args.phases:
            _child(env)  # (writes the bytecode caches of anything the first child compiled)
            return _phases(env, args.runs)
        runs = [_child(env) for _ in range(args.runs)]
    names = set().union(*(r["rows"] for r in runs))
    med = {n: statistics.median(r["rows"].get(n, 0.0) for r in runs) for n in names}
    total = statistics.median(r["total_ms"] for r in runs)
    print(f"warm import + 7 declarations under cProfile, {args.runs} fresh processes "
          f"({'CUDA' if runs[0]['cuda'] else 'no CUDA'}): median total {total:.1f} ms (profiling slows it)")
    print(f"| {'function (file:line)':90s} | {'cumulative ms':>13s} |")
    print(f"| {'-' * 90} | {'-' * 13}:|")
    for n in sorted(med, key=med.get, reverse=True)[:args.top]:
        print(f"| {n[:90]:90s} | {med[n]:13.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
