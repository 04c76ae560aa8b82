"""What each declared op has: torch op, fake impl, eager launch, TensorRT plugin and converter."""

from __future__ import annotations

from typing import Dict, List, Optional

from trt_kernels import dtypes as _dt
from trt_kernels import registry


def trt_state() -> Dict[str, str]:
    """Ask the TensorRT side (``trt_kernels.plugins``) for its state without importing tensorrt here."""
    try:
        from trt_kernels.plugins import tensorrt_status  # the boundary that may import tensorrt
    except ImportError as e:  # the plugins package is missing or older than this core
        return {"available": "no", "reason": f"trt_kernels.plugins unavailable ({e})"}
    return tensorrt_status()


def status(trt: Optional[Dict[str, str]] = None) -> List[Dict[str, str]]:
    """One dict per op registered with trt_kernels (in registration order). ``trt``: the TensorRT
    side's state, if the caller has it already."""
    trt = trt if trt is not None else trt_state()
    rows = []
    for kop in registry.all_ops():
        builds = kop.builds()
        archs = sorted(a or "every arch" for a in builds)
        row = {
            "op": kop.op_name,
            "schema": kop.schema,
            "torch_op": "registered" if kop.library is not None else "missing",
            "fake": "meta_fn" if kop.meta_fn is not None else "derived from the plan",
            "eager": "eager_fn" if kop.eager_fn is not None else "derived launch",
            "compiled_for": ", ".join(archs) or "not yet (compiles at first launch)",
            "dtypes": ", ".join(_dt.label(d, kop.sig.type_params) for d in kop.dtypes),
            "plugin": kop.tensorrt.plugin or "not registered: " + trt.get("reason", "TensorRT side not initialised"),
            "converter": kop.tensorrt.converter or "not registered",
            "source": f"{kop.source.describe()} [{kop.source.entry_point}]",
        }
        for b in builds.values():
            if b.aot_reason:  # what the op's AOT decision made of it (a tactic left out, or the JIT plugin)
                row["source"] += f"; {kop.aot_of(b).why}"
                break
        for b in builds.values():
            if kop.eager_fn is None and any(k.needs_scratch for (_, t), k in b.kernels.items() if t <= 1):
                row["eager"] = "derived launch, with a scratch buffer per call (the kernel's compiler asks for one)"
        rows.append(row)
    return rows


def format_status() -> str:
    trt = trt_state()
    lines = [f"TensorRT side: {'available' if trt.get('available') == 'yes' else 'not available'}"
             + (f" ({trt['reason']})" if trt.get("reason") else "")
             + (f" [{trt['backend']}]" if trt.get("backend") else "")]
    if trt.get("notes"):
        lines.append(f"    note: {trt['notes']}")
    from trt_kernels.cache_store import trust
    from trt_kernels.sources.nvrtc import compile_arch

    lines.append("compile arch: {} ({})".format(*compile_arch()))
    tr = trust()
    if tr["cache"] is None:
        lines.append("compile cache: off (TRT_KERNELS_CACHE=0)")
    elif tr["trusted"]:
        lines.append(f"compile cache: {tr['cache']} (private to you)")
    else:
        where = (f"its private directory {tr['using']}, removed when it exits" if tr["using"] else
                 "memory only (no private directory could be made)")
        lines.append(f"compile cache: {tr['cache']} NOT TRUSTED ({tr['problem']}); this process compiles into "
                     f"{where}. Fix: {tr['fix']}")
    if tr["shared"]:
        lines.append(f"shared cache: {tr['shared']}, read-only"
                     + (f", NOT TRUSTED ({tr['shared_problem']})" if tr["shared_problem"] else ""))
    from trt_kernels.eager.compiled_launcher import describe

    lau = describe()
    lines.append(f"eager launcher: {lau['launcher']} ({lau['reason']})")
    from trt_kernels.eager.native import describe as native_describe

    nat = native_describe()
    lines.append(f"native eager kernel: {nat['native']} ({nat['reason']})")
    rows = status(trt)
    if not rows:
        lines.append("no ops registered")
    for r in rows:
        lines.append(f"{r['op']}{r['schema']}")
        for k in ("source", "torch_op", "fake", "eager", "compiled_for", "dtypes", "plugin", "converter"):
            lines.append(f"    {k:13s} {r[k]}")
    return "\n".join(lines)
