"""Output shapes of an override-path op (``meta_fn``) as plan expressions.

TensorRT's descriptor needs output shapes as symbolic expressions of the input
dims. For ops declared with ``meta_fn`` instead of ``outputs``, the meta function
is run once per input-rank signature on fake tensors whose sizes are symbols
(``torch.fx`` symbolic shapes); the sympy expressions of the result are then
translated into this package's expressions, which every interpreter evaluates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

import torch

from trt_kernels.errors import SpecError
from trt_kernels.expr import Const, Dim, Expr, binop


@dataclass(frozen=True)
class MetaOutput:
    shape: Tuple[Expr, ...]
    dtype: torch.dtype


def _to_expr(op_name: str, e: Any, symbols: Dict[Any, Expr]) -> Expr:
    import sympy
    from torch.utils._sympy import functions as F

    if isinstance(e, (int,)) or getattr(e, "is_Integer", False):
        return Const(int(e))
    if e in symbols:
        return symbols[e]
    args = [_to_expr(op_name, a, symbols) for a in e.args]
    if isinstance(e, sympy.Add):
        op = "add"
    elif isinstance(e, sympy.Mul):
        op = "mul"
    elif isinstance(e, F.FloorDiv):
        op = "floordiv"
    elif hasattr(F, "CeilDiv") and isinstance(e, F.CeilDiv):
        op = "cdiv"
    elif isinstance(e, sympy.Max):
        op = "max"
    elif isinstance(e, sympy.Min):
        op = "min"
    elif isinstance(e, sympy.Pow) and getattr(e.args[1], "is_Integer", False) and int(e.args[1]) > 0:
        out = args[0]
        for _ in range(int(e.args[1]) - 1):
            out = binop("mul", out, args[0])
        return out
    else:
        raise SpecError(
            f"{op_name}: meta_fn's output size {e} cannot be written as a TensorRT shape expression "
            "(only + - * //, ceil-div, max and min of input sizes). Fix: declare outputs= on the spec"
        )
    out = args[0]
    for a in args[1:]:
        out = binop(op, out, a)
    return out


def meta_outputs(op_name: str, meta_fn, arg_kinds: Sequence[str], ranks: Sequence[int],
                 dtypes: Sequence[torch.dtype], scalars: Sequence[Any]) -> List[MetaOutput]:
    """Run ``meta_fn`` on fake inputs of symbolic sizes; its outputs' shapes as plan expressions."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env)
    sizes = iter([7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83])
    tensors = []
    symbols: Dict[Any, Expr] = {}
    for t, (rank, dt) in enumerate(zip(ranks, dtypes)):
        real = torch.empty([next(sizes) for _ in range(rank)], dtype=dt, device="meta")
        ctx = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * rank)
        fake = mode.from_tensor(real, symbolic_context=ctx)
        for a, s in enumerate(fake.shape):
            symbols[s.node.expr] = Dim(t, a)
        tensors.append(fake)
    args = []
    ti = iter(tensors)
    si = iter(scalars)
    for kind in arg_kinds:
        args.append(next(ti) if kind == "tensor" else next(si))
    with mode:
        out = meta_fn(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    result = []
    for o in outs:
        shape = tuple(
            Const(int(s)) if isinstance(s, int) else _to_expr(op_name, s.node.expr, symbols) for s in o.shape
        )
        result.append(MetaOutput(shape=shape, dtype=o.dtype))
    return result
