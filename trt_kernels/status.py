"""What each declared op has: torch op, fake impl, eager launch, TensorRT plugin and converter."""

from __future__ import annotations

from typing import Dict, List, Optional

from . import registry


def _trt_state() -> Dict[str, str]:
    """Ask the TensorRT side (``trt_kernels.plugins``) for its state without importing tensorrt here."""
    try:
        from .plugins import tensorrt_status  # the boundary that may import tensorrt
    except ImportError as e:  # the plugins package is missing or older than this core
        return {"available": "no", "reason": f"trt_kernels.plugins unavailable ({e})"}
    return tensorrt_status()


def status(trt: Optional[Dict[str, str]] = None) -> List[Dict[str, str]]:
    """One dict per op registered with trt_kernels (in registration order). ``trt``: the TensorRT
    side's state, if the caller has it already."""
    trt = trt if trt is not None else _trt_state()
    rows = []
    for kop in registry.all_ops():
        compiled = ", ".join(sorted(kop._programs)) or "not yet (compiles at first launch)"
        if kop.ptx is not None:
            compiled = "from PTX (ptx_op)"
        row = {
            "op": kop.op_name,
            "schema": kop.schema,
            "torch_op": "registered" if kop.library is not None else "missing",
            "fake": "meta_fn" if kop.meta_fn is not None else "derived from the plan",
            "eager": "eager_fn" if kop.eager_fn is not None else "derived launch",
            "compiled_for": compiled,
            "dtypes": ", ".join(str(d).replace("torch.", "") for d in kop.dtypes),
            "plugin": kop.trt.get("plugin", "not registered: " + trt.get("reason", "TensorRT side not initialised")),
            "converter": kop.trt.get("converter", "not registered"),
        }
        extra = getattr(kop, "status_fields", None)  # e.g. a Triton op's source, configs and AOT decision
        if extra is not None:
            row.update(extra())
        rows.append(row)
    return rows


def format_status() -> str:
    trt = _trt_state()
    lines = [f"TensorRT side: {'available' if trt.get('available') == 'yes' else 'not available'}"
             + (f" ({trt['reason']})" if trt.get("reason") else "")
             + (f" [{trt['backend']}]" if trt.get("backend") else "")]
    if trt.get("notes"):
        lines.append(f"    note: {trt['notes']}")
    rows = status(trt)
    if not rows:
        lines.append("no ops registered")
    for r in rows:
        lines.append(f"{r['op']}{r['schema']}")
        for k in ("torch_op", "fake", "eager", "compiled_for", "dtypes", "plugin", "converter") + (
                ("source",) if "source" in r else ()):
            lines.append(f"    {k:13s} {r[k]}")
    return "\n".join(lines)
