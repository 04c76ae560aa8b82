"""The TensorRT side (``trt_kernels.plugins``): QDP plugins built from each op's launch plan.

This package is the only place that imports ``tensorrt``; the core reports its
state through :func:`tensorrt_status`.
"""

from __future__ import annotations

from typing import Dict


def tensorrt_status() -> Dict[str, str]:
    """Whether TensorRT's QDP layer can be used here, and if not, why."""
    try:
        import tensorrt  # noqa: F401
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken native install
        return {"available": "no", "reason": f"tensorrt not importable: {type(e).__name__}: {e}"}
    return {"available": "no", "reason": "TensorRT plugin registration is not implemented yet"}
