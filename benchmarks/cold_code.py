"""How much of a warm start is loading code it never runs: an upper bound of what moving that code out of the
modules a warm start imports could gain.

A first child records every function a warm start calls (``import trt_kernels``, its API, the seven seed
declarations of ``benchmarks/seed_specs.py``, under ``sys.setprofile``). The tree is then copied to a temporary
directory with the body of every other function of ``trt_kernels`` replaced by ``raise NotImplementedError``:
the same modules, classes and functions load, with a third less bytecode, which is as far as splitting the
package's modules into warm and cold halves could go. Fresh processes then alternate between the two trees (ABBA)
over one warm cache, timing the import and the declarations as ``benchmarks/startup.py`` does.

Without CUDA the arch is given as TRT_KERNELS_ARCH=sm_90 (unless set already or --arch is passed). The copy is
fit only for this measurement (a cold start, a launch or a TensorRT build in it raises).

Run: python benchmarks/cold_code.py [--runs 21] [--arch sm_90]
"""

from __future__ import annotations

import argparse
import ast
import json
import marshal
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, FrozenSet, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
Called = FrozenSet[Tuple[str, int, str]]  # (file, first line, name) of each code object run

_RECORD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
called = set()
def seen(frame, event, arg):
    if event == "call":
        c = frame.f_code
        called.add((c.co_filename, c.co_firstlineno, c.co_name))
sys.setprofile(seen)
import trt_kernels as ttk
ttk.cuda_kernel_op
import seed_specs
seed_specs.declare()
sys.setprofile(None)
files = sorted(m.__file__ for n, m in sys.modules.items()
               if n.startswith("trt_kernels") and getattr(m, "__file__", None))
print("RECORD " + json.dumps({"called": sorted(called), "files": files}))
"""

_TIME = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
t0 = time.perf_counter()
import trt_kernels as ttk
ttk.cuda_kernel_op
t1 = time.perf_counter()
assert ttk.__file__.startswith(sys.argv[2]), (ttk.__file__, sys.argv[2])
import seed_specs
t2 = time.perf_counter()
seed_specs.declare()
t3 = time.perf_counter()
print("TIME " + json.dumps([(t1 - t0) * 1e3, (t3 - t2) * 1e3]))
"""


def _child(code: str, tree: Path, env: Dict[str, str], tag: str):
    # run from the tree's benchmarks folder, the tree first on the path: it is that tree's trt_kernels that loads
    bench = tree / "benchmarks"
    r = subprocess.run([sys.executable, "-c", code, str(bench), str(tree)], cwd=bench, capture_output=True, text=True,
                       env=dict(env, PYTHONPATH=os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))))
    if r.returncode != 0:
        raise SystemExit(f"child failed ({r.returncode}):\n{r.stdout}\n{r.stderr[-4000:]}")
    return json.loads([ln for ln in r.stdout.splitlines() if ln.startswith(tag + " ")][-1][len(tag) + 1:])


def strip_source(source: str, path: str, called: Called) -> Tuple[str, int]:
    """``source`` with the body of every function not in ``called`` replaced by ``raise NotImplementedError``
    (a function that ran keeps its body, and the functions nested in it are looked at in turn), and how many
    were replaced."""
    replaced = 0

    class Strip(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            nonlocal replaced
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])  # co_firstlineno's line
            if (path, first, node.name) in called:
                self.generic_visit(node)
                return node
            replaced += 1
            node.body = [ast.Raise(exc=ast.Name(id="NotImplementedError", ctx=ast.Load()), cause=None)]
            return node

        visit_AsyncFunctionDef = visit_FunctionDef

    tree = Strip().visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree)), replaced


def bytecode_size_of(source: str) -> int:
    """Bytes of the code object of a module's source, as its bytecode cache holds it."""
    return len(marshal.dumps(compile(source, "<module>", "exec")))


def make_copy(dest: Path, called: Called) -> int:
    """The tree at ``dest`` with ``trt_kernels``'s uncalled function bodies replaced; how many were."""
    skip = shutil.ignore_patterns(".*", "__pycache__", "build", "*.egg-info", "gpu-logs", "tests", "docs", "examples",
                                  "notes")
    shutil.copytree(ROOT, dest, ignore=skip)
    replaced = 0
    for src in sorted((ROOT / "trt_kernels").rglob("*.py")):
        text, n = strip_source(src.read_text(), str(src), called)
        (dest / src.relative_to(ROOT)).write_text(text)
        replaced += n
    return replaced


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21, help="fresh processes per tree (default 21)")
    ap.add_argument("--arch", default=None, help="set TRT_KERNELS_ARCH for the children (default: only without CUDA)")
    args = ap.parse_args()

    import torch  # (the header line only; children are fresh processes)

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed packages run: with bytecode caches
    env.pop("TRT_KERNELS_CACHE", None)
    if args.arch:
        env["TRT_KERNELS_ARCH"] = args.arch
    elif not torch.cuda.is_available():
        env.setdefault("TRT_KERNELS_ARCH", "sm_90")
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    print(f"device {device} | torch {torch.__version__} | python {sys.version.split()[0]} | "
          f"TRT_KERNELS_ARCH={env.get('TRT_KERNELS_ARCH', '(the GPU)')}")

    with tempfile.TemporaryDirectory() as tmp:
        env["TRT_KERNELS_CACHE_DIR"] = os.path.join(tmp, "cache")  # one warm cache: the same keys in both trees
        _child(_RECORD, ROOT, env, "RECORD")  # fills the cache
        rec = _child(_RECORD, ROOT, env, "RECORD")  # the warm start's calls
        called = frozenset(tuple(c) for c in rec["called"])
        copy = Path(tmp) / "stripped"
        replaced = make_copy(copy, called)
        trees = {"as written": ROOT, "cold bodies removed": copy}
        # (the package's Python modules: not its extension modules, which load from the cache; nor
        # trt_kernels.cli, which holds the seed's declarations, imported between the timed phases)
        files = [Path(f) for f in rec["files"] if f.endswith(".py") and Path(f).is_relative_to(ROOT / "trt_kernels")
                 and not Path(f).is_relative_to(ROOT / "trt_kernels" / "cli")]
        kb = {k: sum(bytecode_size_of((t / f.relative_to(ROOT)).read_text()) for f in files) / 1024
              for k, t in trees.items()}
        for t in trees.values():
            _child(_TIME, t, env, "TIME")  # writes its bytecode caches
        times: Dict[str, List[List[float]]] = {k: [] for k in trees}
        for i in range(args.runs):
            for k in (list(trees) if i % 2 else list(trees)[::-1]):  # ABBA: no position bias
                times[k].append(_child(_TIME, trees[k], env, "TIME"))

    print(f"\nwarm start of {len(files)} modules, fresh processes alternating, {args.runs} runs each, ms (median)")
    heads = ("import", "declare", "total", "fastest")
    print(f"| {'tree':20s} | {'bytecode KB':>11s} | " + " | ".join(f"{h:>7s}" for h in heads) + " |")
    print(f"| {'-' * 20} | {'-' * 11}:| {'-' * 7}:| {'-' * 7}:| {'-' * 7}:| {'-' * 7}:|")
    tot = {}
    for k, v in times.items():
        tot[k] = statistics.median(a + b for a, b in v)
        cells = (statistics.median(a for a, _ in v), statistics.median(b for _, b in v), tot[k],
                 min(a + b for a, b in v))
        print(f"| {k:20s} | {kb[k]:11.0f} | " + " | ".join(f"{c:7.2f}" for c in cells) + " |")
    a, b = trees
    print(f"{replaced} function bodies replaced; {kb[b] / kb[a]:.0%} of the bytecode left; "
          f"total {tot[b] - tot[a]:+.2f} ms ({tot[b] / tot[a]:.3f}x)")


if __name__ == "__main__":
    main()
