"""The plan's third interpreter: TensorRT shape expressions, and dtype names.

:class:`TrtEvaluator` evaluates resolved plan expressions over ``trtp.TensorDesc``
inputs. TensorRT's ``ShapeExpr`` (10.15 to 11.4, the pinned 10.15.1 and 11.0 among them) has
forward operators only (no ``__radd__``, ``__rmul__``): an int on the left of ``+``/``*`` is
swapped to the right, and on the left of ``-``/``//`` it becomes a constant ``trtp.ShapeExpr``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from trt_kernels.dtypes import TENSOR_TYPES
from trt_kernels.expr import Evaluator


def trt_dtype(trt, dtype: torch.dtype):
    name = TENSOR_TYPES[dtype].trt if dtype in TENSOR_TYPES else None
    if name is None:
        raise TypeError(f"TensorRT has no dtype for {dtype}")
    return getattr(trt.DataType, name)


def torch_dtype(trt, value) -> Optional[torch.dtype]:
    """The torch dtype of a ``trt.DataType`` value (None for one no kernel may declare)."""
    for d, t in TENSOR_TYPES.items():
        if t.trt is not None and value == getattr(trt.DataType, t.trt, object()):
            return d
    return None


class TrtEvaluator(Evaluator):
    """Evaluates plan expressions to ``trtp.ShapeExpr`` (or plain ints where everything is constant)."""

    def __init__(self, trtp, inputs: Sequence[Any], scalars: Sequence[Any] = ()):
        self.trtp = trtp
        self.inputs = inputs
        self.scalars = scalars  # the attributes' values: constants in the shape expressions

    def dim(self, tensor: int, axis: int):
        return self.inputs[tensor].shape_expr[axis]

    def numel(self, tensor: int):
        return self.inputs[tensor].shape_expr.numel()

    def _const(self, v):
        return self.trtp.ShapeExpr(v) if isinstance(v, int) else v

    def add(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        return b + a if isinstance(a, int) else a + b

    def mul(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        return b * a if isinstance(a, int) else a * b

    def sub(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        return self._const(a) - b

    def floordiv(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        return self._const(a) // b

    def cdiv(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return -(-a // b)
        return self.trtp.cdiv(a, b)

    def max(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return max(a, b)
        return self.trtp.max(a, b)

    def min(self, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return min(a, b)
        return self.trtp.min(a, b)


def autotune_type_string(io_dtypes: List[List[torch.dtype]]) -> str:
    """``AutoTuneCombination`` type string: one comma-separated position per input/output, each a
    ``|``-list with one entry per combination (``io_dtypes[k]`` = the I/O dtypes of combination k),
    so the k-th alternatives go together (dependent combinations)."""
    from trt_kernels.dtypes import trt_name

    cols = []
    for per_dtype in zip(*io_dtypes):  # per I/O position, its dtype under each kernel dtype
        names = []
        for d in per_dtype:
            n = trt_name(d)
            if n is None:
                raise TypeError(f"TensorRT has no type for {d}")
            names.append(n)
        cols.append("|".join(names))
    return ", ".join(cols)


def bound_shapes(kop, shapes: Sequence[Sequence[int]], scalars: Sequence[Any]) -> Dict[int, Tuple[int, ...]]:
    """``{output index: its shape at the bound}`` of each output of ``kop`` whose size the kernel writes
    (:class:`~trt_kernels.spec.Written`), at input ``shapes`` and scalar values ``scalars``: what the plugin's
    buffer for it holds when TensorRT runs the plugin, whose descriptor shows -1 in that axis."""
    from trt_kernels.plan import concrete

    sig = kop.sig
    sizes = concrete(kop.plan(tuple(len(s) for s in shapes)), shapes, sig.tensor_names, scalars,
                     [d.name for d in sig.scalar_decls])
    return {i: sizes.outputs[i] for i, o in enumerate(sig.outputs) if o.written >= 0}
