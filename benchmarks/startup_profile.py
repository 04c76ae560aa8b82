"""Where a warm start's milliseconds go: ``import trt_kernels`` and the seven seed declarations, profiled.

A first child fills a cache directory of its own (the cold start); then ``--runs`` fresh children each
import the package and declare the seed ops over that warm cache under ``cProfile``; the table lists the
functions with the largest median cumulative time across the children (the package's own, torch's, the
CUDA bindings'), so a regression, or the extra cost of a GPU machine over a CPU one, has a name.

    python benchmarks/startup_profile.py --runs 5 --top 25
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
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ttk-startup-profile-") as cache:
        env = dict(os.environ, TRT_KERNELS_CACHE_DIR=cache)
        _child(env)  # cold: fills the cache
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
