"""The launch plan: one symbolic description of a launch, built from a :class:`~trt_kernels.signature.Signature`
per input ranks and tactic.

A :class:`LaunchPlan` holds, as resolved size expressions over the inputs'
dims, everything a launch needs: output shapes and where their dtypes come
from, grid, block, dynamic shared memory, and the kernel's extra int
arguments. Eager launches, the fake impl and the TensorRT plugin are three
evaluations of the same plan (see :mod:`trt_kernels.expr`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import torch

from trt_kernels._record import Frozen, plain_record
from trt_kernels.dtypes import INT_NAMES, INT_RANGES, SIZE_TYPES
from trt_kernels.errors import InputError
from trt_kernels.expr import (
    BinOp,
    Const,
    Dim,
    Expr,
    NumelOf,
    ScalarOf,
    SizesEvaluator,
    binop,
    evaluate,
    leaves,
    lower,
    product,
    resolve,
)
from trt_kernels.limits import GRID_LIMITS, INT32_MAX, INT64_MAX
from trt_kernels.signature import Signature


@plain_record
class OutputPlan(Frozen):
    """One output of a plan: shape and element count as resolved expressions, and where its dtype comes from.

    A size the kernel writes (:class:`~trt_kernels.spec.Written`): the data output's ``shape`` holds the bound
    at axis ``written`` (what eager allocates) and ``count`` is the index of the ``count`` output, a 0-D tensor
    whose ``bounds`` are the size's ``(max, opt)``."""

    shape: Tuple[Expr, ...]
    numel: Expr
    like: Optional[int]  # tensor input whose shape this output has exactly (SameAs)
    dtype_src: Optional[int]  # tensor input whose dtype this output takes
    dtype: Optional[torch.dtype]  # fixed dtype
    written: int = -1  # the axis whose size the kernel writes (-1: none)
    count: int = -1  # the output holding that size
    bounds: Tuple[Expr, ...] = ()  # a count output's (max, opt)

    def __init__(self, shape: Tuple[Expr, ...], numel: Expr, like: Optional[int], dtype_src: Optional[int],
                 dtype: Optional[torch.dtype], written: int = -1, count: int = -1, bounds: Tuple[Expr, ...] = ()
                 ) -> None:
        self.__dict__.update(shape=shape, numel=numel, like=like, dtype_src=dtype_src, dtype=dtype, written=written,
                             count=count, bounds=bounds)


@plain_record
class CheckPlan(Frozen):
    """A declared size relation at the plan's ranks: every ``(a, b)`` of ``pairs`` must be equal."""

    index: int  # position in the spec's checks
    label: str  # as declared
    kind: str  # "shape" or "dims"
    tensors: Tuple[int, ...]  # the inputs a SameShape relates
    texts: Tuple[str, ...]  # each operand as declared
    pairs: Tuple[Tuple[Expr, Expr], ...]

    def __init__(self, index: int, label: str, kind: str, tensors: Tuple[int, ...], texts: Tuple[str, ...],
                 pairs: Tuple[Tuple[Expr, Expr], ...]) -> None:
        self.__dict__.update(index=index, label=label, kind=kind, tensors=tensors, texts=texts, pairs=pairs)


@plain_record
class LaunchPlan(Frozen):
    """One launch of an op at given input ranks and tactic, in resolved size expressions."""

    op_name: str
    ranks: Tuple[int, ...]
    tactic: int
    outputs: Tuple[OutputPlan, ...]
    grid: Tuple[Expr, Expr, Expr]
    block: Tuple[int, int, int]
    shared_mem: Expr
    extras: Tuple[Expr, ...]
    checks: Tuple[CheckPlan, ...] = ()
    extra_ctypes: Tuple[str, ...] = ()  # each extra's C type (Signature.extra_ctypes); (): all "int"

    def __init__(self, op_name: str, ranks: Tuple[int, ...], tactic: int, outputs: Tuple[OutputPlan, ...],
                 grid: Tuple[Expr, Expr, Expr], block: Tuple[int, int, int], shared_mem: Expr,
                 extras: Tuple[Expr, ...], checks: Tuple[CheckPlan, ...] = (), extra_ctypes: Tuple[str, ...] = ()
                 ) -> None:
        self.__dict__.update(op_name=op_name, ranks=ranks, tactic=tactic, outputs=outputs, grid=grid, block=block,
                             shared_mem=shared_mem, extras=extras, checks=checks, extra_ctypes=extra_ctypes)

    def lowered(self) -> "LaunchPlan":
        """This plan with every expression through :func:`~trt_kernels.expr.lower`: what eager launches
        evaluate."""
        outs = tuple(OutputPlan(tuple(lower(e) for e in o.shape), lower(o.numel), o.like, o.dtype_src, o.dtype,
                                o.written, o.count, tuple(lower(e) for e in o.bounds))
                     for o in self.outputs)
        checks = tuple(CheckPlan(c.index, c.label, c.kind, c.tensors, c.texts,
                                 tuple((lower(a), lower(b)) for a, b in c.pairs)) for c in self.checks)
        return LaunchPlan(self.op_name, self.ranks, self.tactic, outs, tuple(lower(e) for e in self.grid), self.block,
                          lower(self.shared_mem), tuple(lower(e) for e in self.extras), checks, self.extra_ctypes)

    def describe(self) -> str:
        outs = ", ".join("(" + ", ".join(map(str, o.shape)) + ")" for o in self.outputs)
        return (
            f"{self.op_name} ranks={self.ranks} tactic={self.tactic}: outputs [{outs}] "
            f"grid ({', '.join(map(str, self.grid))}) block {self.block} smem {self.shared_mem} "
            f"extras [{', '.join(map(str, self.extras))}]"
        )


def _bad(op: str, where: str, msg: str, fix: str) -> InputError:
    return InputError(f"{op}: {where}: {msg}. Fix: {fix}")


def _norm_axis(op: str, where: str, axis: int, rank: int, name: str) -> int:
    if not -rank <= axis < rank:
        raise _bad(op, where, f"axis {axis} is out of range for input {name!r} of rank {rank}",
                   f"pass a tensor with at least {axis + 1 if axis >= 0 else -axis} dims")
    return axis % rank


def build_plan(sig: Signature, ranks: Sequence[int], tactic: int = 0) -> LaunchPlan:
    """Resolve the signature against concrete input ranks (and a tactic: 0 or 1 = the default launch)."""
    op = sig.op_name
    ranks = tuple(int(r) for r in ranks)
    names = sig.tensor_names
    for decl, r in zip(sig.tensor_decls, ranks):
        if decl.ndim is not None and r != decl.ndim:
            raise _bad(op, f"input {decl.name!r}", f"has {r} dims but is declared with ndim={decl.ndim}",
                       f"pass a {decl.ndim}-dim tensor (e.g. {decl.name}.reshape(...)), or change InputDecl(ndim=)")

    def res(e: Expr, where: str) -> Expr:
        def leaf(node: Expr) -> Expr:
            if isinstance(node, Dim):
                return Dim(node.tensor, _norm_axis(op, where, node.axis, ranks[node.tensor], names[node.tensor]))
            return node

        return resolve(e, leaf)

    outputs = []
    for i, o in enumerate(sig.outputs):
        where = f"outputs[{i}].shape"
        like = None
        t = o.tensor
        if o.kind == "like":
            shape = tuple(Dim(t, a) for a in range(ranks[t]))
            numel: Expr = NumelOf(t)
            like = t
        elif o.kind == "reduce":
            dims = {_norm_axis(op, where, a, ranks[t], names[t]) for a in o.dims}
            if len(dims) != len(o.dims):
                raise _bad(op, where, f"dims {o.dims} name the same axis twice at rank {ranks[t]}",
                           "pass a tensor of higher rank")
            shape = tuple((Const(1) if o.keepdim else None) if a in dims else Dim(t, a) for a in range(ranks[t]))
            shape = tuple(d for d in shape if d is not None)
            numel = product(shape)
        elif o.kind == "count":
            outputs.append(OutputPlan(shape=(), numel=Const(1), like=None, dtype_src=None, dtype=o.dtype,
                                      bounds=tuple(res(e, f"{where}.{k}") for e, k in zip(o.exprs, ("max", "opt")))))
            continue
        else:
            shape = tuple(res(e, f"{where}[{j}]") for j, e in enumerate(o.exprs))
            numel = product(shape)
        outputs.append(OutputPlan(shape=shape, numel=numel, like=like, dtype_src=o.dtype_src, dtype=o.dtype,
                                  written=o.written, count=o.count))

    smem: Expr = Const(0)
    if not sig.launches:  # eager_fn / aot_fn launch: no plan geometry
        grid: Tuple[Expr, ...] = (Const(0), Const(0), Const(0))
        block: Tuple[int, ...] = (0, 0, 0)
    else:
        g = sig.launch(tactic)
        block = tuple(g.block) + (1,) * (3 - len(g.block))
        if g.kind == "flat":
            grid = (binop("cdiv", outputs[0].numel, Const(g.block[0])), Const(1), Const(1))
        elif g.kind == "nd":
            grid = _nd_grid(outputs[0].shape, g.block)
        elif g.kind == "reduce":
            o0 = sig.outputs[0]
            if o0.kind != "exprs":
                for a in g.reduce_dims:
                    _norm_axis(op, "geometry.reduce_dims", a, ranks[o0.tensor], names[o0.tensor])
            grid = (outputs[0].numel, Const(1), Const(1))
        else:
            gs = [res(e, f"geometry.grid[{j}]") for j, e in enumerate(g.grid)]
            grid = tuple(gs) + (Const(1),) * (3 - len(gs))
            smem = res(g.shared_mem, "geometry.shared_mem")
    extras = tuple(res(e, f"extras[{i}]") for i, e in enumerate(sig.extras))
    checks = []
    for k, c in enumerate(sig.checks):
        where = f"checks[{k}] {c.label}"
        if c.kind == "shape":
            t0 = c.tensors[0]
            if any(ranks[t] != ranks[t0] for t in c.tensors[1:]):  # never equal: the check's message shows the shapes
                pairs = ((Const(0), Const(1)),)
            else:
                pairs = tuple((Dim(t0, a), Dim(t, a)) for t in c.tensors[1:] for a in range(ranks[t0]))
        else:
            es = [res(e, where) for e in c.exprs]
            pairs = tuple((es[0], e) for e in es[1:])
        checks.append(CheckPlan(index=k, label=c.label, kind=c.kind, tensors=c.tensors, texts=c.texts, pairs=pairs))
    return LaunchPlan(
        op_name=op, ranks=ranks, tactic=min(max(int(tactic or 1), 1), sig.tactics), outputs=tuple(outputs), grid=grid,
        block=block, shared_mem=smem, extras=extras, checks=tuple(checks), extra_ctypes=sig.extra_ctypes,
    )


def check_message(plan: LaunchPlan, c: CheckPlan, shapes: Sequence[Sequence[Any]], names: Sequence[str],
                  values: Optional[Sequence[Any]] = None) -> str:
    """The :class:`InputError` text of a size check that failed at input ``shapes`` (``values``: each
    operand's size, for a ``SameDim``)."""
    where = f"{plan.op_name}: checks[{c.index}] {c.label}"
    if c.kind == "shape":
        listed = " and ".join(f"{names[t]!r} {_shape_text(shapes[t])}" for t in c.tensors)
        return (f"{where}: inputs {listed} must have equal shapes; the kernel would read or write past the end of "
                "the smaller one. Fix: pass tensors of equal shapes")
    sizes = ", ".join(f"{n}={_shape_text(s)}" for n, s in zip(names, shapes))
    vals = " and ".join(f"{t} = {v}" for t, v in zip(c.texts, values or ()))
    return (f"{where}: {vals} must be equal (input sizes {sizes}); the kernel would read or write out of bounds. "
            "Fix: pass inputs whose sizes agree")


def _shape_text(shape) -> str:
    dims = tuple(int(d) if type(d) is int else d for d in shape)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def render(e: Expr, names: Sequence[str]) -> str:
    """A resolved expression written with the inputs' names: ``(x.shape[0] - 5)``."""
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Dim):
        return f"{names[e.tensor]}.shape[{e.axis}]"
    if isinstance(e, NumelOf):
        return f"{names[e.tensor]}.numel()"
    if isinstance(e, BinOp):
        sym = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//"}.get(e.op)
        lhs, rhs = render(e.lhs, names), render(e.rhs, names)
        return f"({lhs} {sym} {rhs})" if sym else f"{e.op}({lhs}, {rhs})"
    return str(e)


@plain_record
class Sizes(Frozen):
    """A plan evaluated at concrete input shapes, every value checked."""

    outputs: Tuple[Tuple[int, ...], ...]
    grid: Tuple[int, int, int]
    shared_mem: int
    extras: Tuple[int, ...]

    def __init__(self, outputs: Tuple[Tuple[int, ...], ...], grid: Tuple[int, int, int], shared_mem: int,
                 extras: Tuple[int, ...]) -> None:
        self.__dict__.update(outputs=outputs, grid=grid, shared_mem=shared_mem, extras=extras)


def concrete(plan: LaunchPlan, shapes: Sequence[Sequence[int]], names: Sequence[str], scalars: Sequence = (),
             scalar_names: Sequence[str] = ()) -> Sizes:
    """Evaluate ``plan`` at input ``shapes`` (and the scalar inputs' values ``scalars``, which ``Scalar``
    leaves read); :class:`InputError` naming the op, the expression and the input sizes for a division by
    zero, a negative dimension, grid or shared memory, an output over int64 elements, an extra over a C
    int or a grid over CUDA's limits."""
    ev = SizesEvaluator(shapes, scalars)
    sizes = ", ".join(f"{n}={tuple(int(d) for d in s)}" for n, s in zip(names, shapes))
    if scalar_names and _reads_scalars(plan):
        sizes += " and scalars " + ", ".join(f"{n}={_shown(v)}" for n, v in zip(scalar_names, scalars))
    for c in plan.checks:  # first: a size mismatch explains whatever else is off
        for a, b in c.pairs:
            try:
                va, vb = int(evaluate(a, ev)), int(evaluate(b, ev))
            except ZeroDivisionError:
                raise _bad(plan.op_name, f"checks[{c.index}]", f"a size divides by zero at input sizes {sizes}",
                           "pass inputs whose sizes keep the divisor non-zero") from None
            if va != vb:
                values = [int(evaluate(p, ev)) for p in (c.pairs[0][0], *(q for _, q in c.pairs))] \
                    if c.kind == "dims" else None
                raise InputError(check_message(plan, c, shapes, names, values))

    def value(e: Expr, where: str, lo: Optional[int] = None, hi: Optional[int] = None, what: str = "") -> int:
        try:
            v = int(evaluate(e, ev))
        except ZeroDivisionError:
            raise _bad(plan.op_name, where, f"{render(e, names)} divides by zero at input sizes {sizes}",
                       "pass inputs whose sizes keep the divisor non-zero") from None
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _bad(plan.op_name, where, f"{render(e, names)} = {v} is out of range for {what} ([{lo}, {hi}]) at "
                       f"input sizes {sizes}", "pass inputs for which the size expressions stay in range")
        return v

    outs = []
    for i, o in enumerate(plan.outputs):
        dims = tuple(value(e, f"outputs[{i}].shape[{j}]", 0, INT64_MAX, "an output dimension")
                     for j, e in enumerate(o.shape))
        n = 1
        for d in dims:
            n *= d
        if n > INT64_MAX:
            raise _bad(plan.op_name, f"outputs[{i}]",
                       f"shape {dims} has {n} elements, over int64 at input sizes {sizes}",
                       "pass smaller inputs")
        outs.append(dims)
    ctypes = plan.extra_ctypes or ("int",) * len(plan.extras)
    extras = tuple(value(e, f"extras[{i}]", *INT_RANGES[SIZE_TYPES[c].code], f"the kernel's C {c} ("
                         f"{INT_NAMES[SIZE_TYPES[c].code]})") for i, (e, c) in enumerate(zip(plan.extras, ctypes)))
    grid = tuple(value(e, f"grid[{'xyz'[i]}]", 0, GRID_LIMITS[i], f"CUDA grid axis {'xyz'[i]}")
                 for i, e in enumerate(plan.grid))
    smem = value(plan.shared_mem, "shared_mem", 0, INT32_MAX, "dynamic shared memory (bytes)")
    return Sizes(outputs=tuple(outs), grid=grid, shared_mem=smem, extras=extras)


def _reads_scalars(plan: LaunchPlan) -> bool:
    exprs = list(plan.extras) + list(plan.grid) + [plan.shared_mem] + [e for o in plan.outputs for e in o.shape]
    return any(isinstance(leaf, ScalarOf) for e in exprs for leaf in leaves(e))


def _shown(v) -> str:
    return repr(tuple(v)) if isinstance(v, (list, tuple)) else repr(v)


def _nd_grid(shape: Sequence[Expr], blk: Sequence[int]) -> Tuple[Expr, Expr, Expr]:
    """``block[i]`` covers output axis ``-1-i``; axes before those fold into grid z."""
    r = len(shape)
    k = len(blk)

    def axis_from_end(i: int) -> Expr:
        return shape[r - 1 - i] if i < r else Const(1)

    lead = product(shape[: max(r - k, 0)])
    gx = binop("cdiv", axis_from_end(0), Const(blk[0]))
    gy = binop("cdiv", axis_from_end(1), Const(blk[1])) if k >= 2 else Const(1)
    if k >= 3:
        gz = binop("mul", binop("cdiv", axis_from_end(2), Const(blk[2])), lead)
    elif k == 2:
        gz = lead
    else:
        gz = product(shape[: max(r - 1, 0)])
        gy = Const(1)
    return gx, gy, gz


__all__ = ["CheckPlan", "LaunchPlan", "OutputPlan", "check_message", "Sizes", "build_plan", "concrete", "render",
           "INT32_MAX", "INT64_MAX", "GRID_LIMITS"]
