"""``trt-kernels selftest``: the seed's seven cases, and one case per other kernel source (``ptx_op``,
``triton_kernel_op``), end to end on every tier this machine has.

Tiers (one column each):

- ``compile`` (runs without a GPU): the kernel compiled for the GPU's arch (``sm_90`` without one, or
  ``TRT_KERNELS_ARCH``) and its parameters checked against the declaration, the fake impl on meta
  tensors against the reference's shapes and dtypes, and ``torch.export`` of a model calling the op;
- ``qdp_build`` (runs without a GPU, with NVIDIA's ``tensorrt.plugin`` sources, the
  ``tensorrt-cu13-bindings`` wheel): the op's TensorRT plugin built into a one-layer network by the
  emulated builder through NVIDIA's layer, its output shapes and dtypes against the fake impl's;
- ``eager``: the op on fresh random inputs vs a torch reference (needs CUDA);
- ``aot_replay`` / ``jit_replay``: what the TensorRT plugin's ``aot_impl`` describes (or its
  ``impl``, through NVIDIA's ``enqueue``) launched as TensorRT launches it, bit for bit equal to
  eager and close to the reference (needs CUDA and NVIDIA's ``tensorrt.plugin`` sources, the
  ``tensorrt-cu13-bindings`` wheel);
- ``torch_tensorrt_emulated``: real Torch-TensorRT ``compile(..., min_block_size=1)`` over the
  emulated libnvinfer (:func:`trt_kernels.testing.emulate_tensorrt`), the op inside the engine,
  vs the reference; run in a child process, since emulation changes the process for good;
- ``tensorrt``: real TensorRT: compile, run, ``torch_tensorrt.save`` and ``load``, run again
  (child process).

Each cell is passed, failed (with what differed) or skipped (with why). Exit status 1 on any
failure. Skipped is never shown as passed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Sequence, Tuple

SCHEMA = "trt-kernels.selftest/1"
TIERS: Tuple[Tuple[str, str], ...] = (
    ("compile", "compile"),
    ("qdp_build", "QDP build"),
    ("eager", "eager"),
    ("aot_replay", "AOT replay"),
    ("jit_replay", "JIT replay"),
    ("torch_tensorrt_emulated", "Torch-TRT emulated"),
    ("tensorrt", "TensorRT"),
)
TIER_IDS = tuple(t for t, _ in TIERS)
_MARK = "TTK_SELFTEST_RESULT "
NAMESPACE = "ttk_selftest"


@dataclass
class Result:
    case: str
    tier: str
    status: str  # passed | failed | skipped
    reason: str = ""
    seconds: Optional[float] = None


def _fail_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    return text if len(text) <= 600 else text[:600] + " ..."


# ---------------- what can run here ----------------


def skip_reasons() -> Dict[str, Optional[str]]:
    """Per tier: None when it can be tried here, else why not."""
    import torch

    from trt_kernels.testing import unavailable_reason

    reasons: Dict[str, Optional[str]] = {t: None for t in TIER_IDS}
    st = unavailable_reason()
    if st is not None:
        reasons["qdp_build"] = f"NVIDIA's tensorrt.plugin sources unavailable: {st}"
    if not torch.cuda.is_available():
        for t in TIER_IDS[2:]:
            reasons[t] = "needs a CUDA GPU (torch.cuda.is_available() is False)"
        if importlib.util.find_spec("tensorrt") is None:
            reasons["tensorrt"] += "; tensorrt is not installed"
        return reasons
    from trt_kernels.testing import emulation_unavailable_reason

    if st is not None:
        reasons["aot_replay"] = reasons["jit_replay"] = f"NVIDIA's tensorrt.plugin sources unavailable: {st}"
    em = emulation_unavailable_reason()
    if em is not None:
        reasons["torch_tensorrt_emulated"] = em
    import torch

    minor = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    for mod in ("tensorrt", "torch_tensorrt"):
        if importlib.util.find_spec(mod) is None:
            reasons["tensorrt"] = (f"{mod} is not installed (pip install 'trt-kernels[tensorrt]' "
                                   f"'torch-tensorrt=={minor}.*', which brings the TensorRT it requires; "
                                   "see docs/tensorrt.md)")
            break
    return reasons


# ---------------- tiers in this process ----------------


def _timed(fn, case: str, tier: str) -> Result:
    t0 = time.perf_counter()
    try:
        problem = fn()
    except Exception as e:  # noqa: BLE001 - a failing case is a row, not a crash
        return Result(case, tier, "failed", _fail_text(e), time.perf_counter() - t0)
    dt = time.perf_counter() - t0
    return Result(case, tier, "failed" if problem else "passed", problem or "", dt)


def _meta_inputs(case):
    import torch

    return case.make_inputs(torch.device("meta"))


def run_compile(cases, namespace: str) -> List[Result]:
    import torch

    from trt_kernels import registry
    from trt_kernels.cli import seed_cases as sc
    from trt_kernels.op import CHECK_ARCH

    out = []
    for c in cases:
        def check(c=c):
            kop = registry.get(c.op_name(namespace))
            kop.binary(kop.known_arch() or CHECK_ARCH)  # compiled for that arch, parameters checked
            tensors, scalars = _meta_inputs(c)
            got, ref = (sc.as_tuple(sc.op(c, namespace)(*tensors, *scalars)),
                        sc.as_tuple(c.reference(*tensors, *scalars)))
            shapes = [(tuple(t.shape), t.dtype) for t in got]
            if shapes != [(tuple(t.shape), t.dtype) for t in ref]:
                return f"the fake impl gives {shapes}, the reference {[(tuple(t.shape), t.dtype) for t in ref]}"
            model = sc.CaseModel(namespace, c.name, scalars, len(tensors)).eval()
            ep = torch.export.export(model, tuple(tensors))
            if not any(f"{namespace}.{c.name}" in str(n.target) for n in ep.graph.nodes):
                return "torch.export traced a graph without the op"
            return None

        out.append(_timed(check, c.name, "compile"))
    return out


def run_qdp_build(cases, namespace: str) -> List[Result]:
    from trt_kernels import registry
    from trt_kernels.cli import seed_cases as sc
    from trt_kernels.dtypes import TENSOR_TYPES
    from trt_kernels.op import CHECK_ARCH
    from trt_kernels.plugins.qdp import register_plugin
    from trt_kernels.plugins.shapes import torch_dtype
    from trt_kernels.testing import standin

    out: List[Result] = []
    # one stand-in for every case: NVIDIA's tensorrt.plugin warns that it is experimental each time it is imported
    with standin() as env:
        for c in cases:
            def check(c=c):
                kop = registry.get(c.op_name(namespace))
                tensors, scalars = _meta_inputs(c)
                want = [(tuple(t.shape), t.dtype) for t in sc.as_tuple(sc.op(c, namespace)(*tensors, *scalars))]
                attrs = {d.name: v for d, v in zip(kop.sig.scalar_decls, scalars)}
                inputs = [(TENSOR_TYPES[t.dtype].trt, tuple(t.shape)) for t in tensors]
                # without a GPU or TRT_KERNELS_ARCH the AOT impl embeds PTX for CHECK_ARCH, as the compile tier builds
                register_plugin(kop, env.trt, env.trtp, arch=kop.known_arch() or CHECK_ARCH)
                res = env.build(kop.op_name, inputs=inputs, attrs=attrs, aot=kop.aot.aot)
                got = [(tuple(s), torch_dtype(env.trt, d)) for s, d in zip(res.output_shapes, res.output_dtypes)]
                return None if got == want else f"the built layer's outputs are {got}, the fake impl's {want}"

            out.append(_timed(check, c.name, "qdp_build"))
    return out


def run_eager(cases, namespace: str) -> List[Result]:
    import torch

    from trt_kernels.cli import seed_cases as sc

    dev = torch.device("cuda")
    out = []
    for c in cases:
        def check(c=c):
            tensors, scalars = c.make_inputs(dev)
            got = sc.op(c, namespace)(*tensors, *scalars)
            torch.cuda.synchronize()
            return sc.mismatch(c, got, c.reference(*tensors, *scalars))

        out.append(_timed(check, c.name, "eager"))
    return out


def run_replay(cases, namespace: str, kind: str) -> List[Result]:
    import torch

    from trt_kernels.cli import seed_cases as sc
    from trt_kernels.testing import aot_replay, jit_replay

    fn = aot_replay if kind == "aot_replay" else jit_replay
    dev = torch.device("cuda")
    out = []
    for c in cases:
        def check(c=c):
            tensors, scalars = c.make_inputs(dev)
            res = fn(c.op_name(namespace), *tensors, *scalars)
            if not res.bitwise_equal:
                return f"differs from the eager op (max abs difference {res.max_abs_diff():.3g})"
            return sc.mismatch(c, tuple(res.outputs), c.reference(*tensors, *scalars))

        out.append(_timed(check, c.name, kind))
    return out


# ---------------- tiers in a child process ----------------


def _converted_problem(trt_model, namespace: str) -> Optional[str]:
    """None if the op ran inside a TensorRT engine, else what shows it did not."""
    import torch

    if isinstance(trt_model, torch.fx.GraphModule):
        left = sorted({str(n.target) for n in trt_model.graph.nodes
                       if n.op == "call_function" and f"{namespace}." in str(n.target)})
        if left:
            return f"the op stayed a PyTorch call ({', '.join(left)}): no converter ran"
    if not any("TensorRTModule" in type(m).__name__ for m in trt_model.modules()):
        return "the compiled module holds no TensorRT engine"
    return None


def _compile(torch_tensorrt, model, tensors):
    import torch

    return torch_tensorrt.compile(model, ir="dynamo", inputs=list(tensors), enabled_precisions={torch.float32},
                                  min_block_size=1)


def child_tier(tier: str, namespace: str) -> List[Result]:
    """Run the emulated or the real TensorRT tier in this (fresh) process."""
    import torch

    from trt_kernels.cli import seed_cases as sc

    if tier == "torch_tensorrt_emulated":
        from trt_kernels.testing import emulate_tensorrt

        _, torch_tensorrt = emulate_tensorrt()
    else:
        try:
            import tensorrt  # noqa: F401
            import torch_tensorrt
        except Exception as e:  # noqa: BLE001 - installed (the parent checked) but broken: a failure
            return [Result(c.name, tier, "failed", f"tensorrt / torch_tensorrt do not import: {_fail_text(e)}")
                    for c in sc.ALL_CASES]
        from trt_kernels.testing import is_emulated  # sees through Torch-TensorRT's proxy module

        if is_emulated():
            return [Result(c.name, tier, "skipped", "tensorrt here is trt_kernels' emulator, not TensorRT")
                    for c in sc.ALL_CASES]
    cases = sc.declare(namespace, sc.ALL_CASES)
    from trt_kernels.plugins import init, tensorrt_status

    init()
    st = tensorrt_status()
    if st.get("available") != "yes":  # importable but unusable (e.g. a TensorRT without working QDP): a failure
        return [Result(c.name, tier, "failed", f"TensorRT side unavailable: {st.get('reason')}") for c in cases]
    if tier == "tensorrt" and st.get("backend"):
        return [Result(c.name, tier, "skipped", f"tensorrt here is {st['backend']}") for c in cases]
    dev = torch.device("cuda")
    out = _unavailable(sc.ALL_CASES, tier)
    for c in cases:
        def check(c=c):
            tensors, scalars = c.make_inputs(dev)
            ref = c.reference(*tensors, *scalars)
            model = sc.CaseModel(namespace, c.name, scalars, len(tensors)).eval()
            trt_model = _compile(torch_tensorrt, model, tensors)
            problem = _converted_problem(trt_model, namespace)
            if problem:
                return problem
            with torch.no_grad():
                for _ in range(3):
                    problem = sc.mismatch(c, trt_model(*tensors), ref)
                    if problem:
                        return "engine output: " + problem
            if tier == "tensorrt":  # save and reload the real engine
                with tempfile.TemporaryDirectory() as d:
                    path = os.path.join(d, f"{c.name}.ep")
                    torch_tensorrt.save(trt_model, path, inputs=list(tensors))
                    reloaded = torch_tensorrt.load(path).module()
                    with torch.no_grad():
                        problem = sc.mismatch(c, reloaded(*tensors), ref)
                    if problem:
                        return "after save and reload: " + problem
            return None

        out.append(_timed(check, c.name, tier))
    return out


def run_child(tier: str, namespace: str, timeout: float = 1200) -> List[Result]:
    from trt_kernels.cli import seed_cases as sc

    cmd = [sys.executable, "-m", "trt_kernels.cli.selftest", "--child", tier, "--namespace", namespace]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return [Result(c.name, tier, "failed", f"the {tier} child process ran past {timeout:.0f} s")
                for c in sc.ALL_CASES]
    for line in reversed(p.stdout.splitlines()):
        if line.startswith(_MARK):
            return [Result(**r) for r in json.loads(line[len(_MARK):])]
    tail = (p.stderr or p.stdout).strip()[-800:]
    return [Result(c.name, tier, "failed", f"the {tier} child process exited with {p.returncode}: {tail}",
                   time.perf_counter() - t0) for c in sc.ALL_CASES]


def _unavailable(cases, tier: str) -> List[Result]:
    """A skipped row for each case whose kernel source cannot be declared here (Triton not installed)."""
    return [Result(c.name, tier, "skipped", c.unavailable()) for c in cases if c.unavailable() is not None]


# ---------------- all of it ----------------


def selftest(cases=None, tiers: Sequence[str] = TIER_IDS, namespace: str = NAMESPACE) -> List[Result]:
    """Run ``cases`` (default: the seed's seven and one per other kernel source) on ``tiers``; one Result per
    (case, tier). Child-process tiers always run all of them."""
    from trt_kernels.cli import seed_cases as sc

    cases = list(sc.ALL_CASES if cases is None else cases)
    reasons = skip_reasons()
    results: List[Result] = []
    runnable = [t for t in tiers if reasons[t] is None]
    in_process = [t for t in runnable if t in ("compile", "qdp_build", "eager", "aot_replay", "jit_replay")]
    declared = sc.declare(namespace, cases) if in_process else []
    for t in tiers:
        if reasons[t] is not None:
            results += [Result(c.name, t, "skipped", reasons[t]) for c in cases]
        elif t == "compile":
            results += _unavailable(cases, t) + run_compile(declared, namespace)
        elif t == "qdp_build":
            results += _unavailable(cases, t) + run_qdp_build(declared, namespace)
        elif t == "eager":
            results += _unavailable(cases, t) + run_eager(declared, namespace)
        elif t in ("aot_replay", "jit_replay"):
            results += _unavailable(cases, t) + run_replay(declared, namespace, t)
        else:
            results += run_child(t, namespace)
    order = {c.name: i for i, c in enumerate(cases)}
    results.sort(key=lambda r: (TIER_IDS.index(r.tier), order.get(r.case, len(order))))
    return results


def exit_status(results: Sequence[Result]) -> int:
    """1 on any failure, and when nothing was checked at all (every row skipped)."""
    return 1 if any(r.status == "failed" for r in results) or not any(r.status == "passed" for r in results) else 0


def format_table(results: Sequence[Result]) -> str:
    tiers = [t for t in TIER_IDS if any(r.tier == t for r in results)]
    cases = list(dict.fromkeys(r.case for r in results))
    by = {(r.case, r.tier): r for r in results}
    notes: Dict[str, int] = {}

    def cell(r: Optional[Result]) -> str:
        if r is None:
            return "-"
        if r.status == "passed":
            return "passed"
        n = notes.setdefault(r.reason, len(notes) + 1)
        return f"{'FAILED' if r.status == 'failed' else 'skipped'} [{n}]"

    labels = dict(TIERS)
    cw = max([len(c) for c in cases] + [4])
    rows = [[cell(by.get((c, t))) for t in tiers] for c in cases]
    widths = [max([len(labels[t])] + [len(r[i]) for r in rows]) for i, t in enumerate(tiers)]
    lines = ["  ".join([f"{'case':<{cw}}"] + [f"{labels[t]:<{w}}" for t, w in zip(tiers, widths)]).rstrip()]
    for c, r in zip(cases, rows):
        lines.append("  ".join([f"{c:<{cw}}"] + [f"{x:<{w}}" for x, w in zip(r, widths)]).rstrip())
    if notes:
        lines.append("")
        for reason, n in notes.items():
            lines.append(f"[{n}] {reason}")
    p = sum(r.status == "passed" for r in results)
    f = sum(r.status == "failed" for r in results)
    s = sum(r.status == "skipped" for r in results)
    lines.append("")
    lines.append(f"selftest: {p} passed, {f} failed, {s} skipped"
                 + ("; nothing was checked here (every row skipped, for the reasons above)" if not p else ""))
    return "\n".join(lines)


def run(as_json: bool) -> int:
    from trt_kernels.cli.inspect import gather_or_report

    results, failed = gather_or_report("selftest", selftest, as_json, SCHEMA, _fail_text)
    if failed is not None:
        return failed
    status = exit_status(results)
    if as_json:
        print(json.dumps({"schema": SCHEMA, "tiers": list(TIER_IDS),
                          "cases": list(dict.fromkeys(r.case for r in results)),
                          "results": [asdict(r) for r in results],
                          "passed": sum(r.status == "passed" for r in results),
                          "failed": sum(r.status == "failed" for r in results),
                          "skipped": sum(r.status == "skipped" for r in results),
                          "exit_status": status, "ok": status == 0}, indent=2))
    else:
        print(format_table(results))
    return status


def _child_main(argv: Sequence[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--child", choices=["torch_tensorrt_emulated", "tensorrt"], required=True)
    ap.add_argument("--namespace", default=NAMESPACE)
    a = ap.parse_args(argv)
    results = child_tier(a.child, a.namespace)
    print(_MARK + json.dumps([asdict(r) for r in results]))
    return 0


if __name__ == "__main__":
    raise SystemExit(_child_main(sys.argv[1:]))
