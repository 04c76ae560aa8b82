"""The launch plan: one symbolic description of a launch, built per input ranks and tactic.

A :class:`LaunchPlan` holds, as resolved size expressions over the inputs'
dims, everything a launch needs: output shapes and where their dtypes come
from, grid, block, dynamic shared memory, and the kernel's extra int
arguments. Eager launches, the fake impl and the TensorRT plugin are three
evaluations of the same plan (see :mod:`trt_kernels.expr`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import torch

from .errors import InputError
from .expr import Const, DimSize, Dim, Expr, Numel, NumelOf, binop, lift, product, resolve
from .spec import Custom, Elementwise, KernelSpec, ReduceDims, Reduction, SameAs, Validated, resolve_tensor

INT32_MAX = 2**31 - 1
GRID_LIMITS = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class OutputPlan:
    shape: Tuple[Expr, ...]
    numel: Expr
    like: Optional[int]  # tensor input whose shape this output has exactly (SameAs)
    dtype_src: Optional[int]  # tensor input whose dtype this output takes
    dtype: Optional[torch.dtype]  # fixed dtype


@dataclass(frozen=True)
class LaunchPlan:
    op_name: str
    ranks: Tuple[int, ...]
    tactic: int
    outputs: Tuple[OutputPlan, ...]
    grid: Tuple[Expr, Expr, Expr]
    block: Tuple[int, int, int]
    shared_mem: Expr
    extras: Tuple[Expr, ...]

    def describe(self) -> str:
        outs = ", ".join("(" + ", ".join(map(str, o.shape)) + ")" for o in self.outputs)
        return (
            f"{self.op_name} ranks={self.ranks} tactic={self.tactic}: outputs [{outs}] "
            f"grid ({', '.join(map(str, self.grid))}) block {self.block} smem {self.shared_mem} "
            f"extras [{', '.join(map(str, self.extras))}]"
        )


def tactic_count(spec: KernelSpec) -> int:
    """How many launch variants TensorRT may choose from (tactic ids 1..n; eager uses the first)."""
    g = spec.geometry
    if isinstance(g, (Elementwise, Reduction)):
        return 1 + len(g.tactics)
    return 1


def _bad(op: str, where: str, msg: str, fix: str) -> InputError:
    return InputError(f"{op}: {where}: {msg}. Fix: {fix}")


def _norm_axis(op: str, where: str, axis: int, rank: int, name: str) -> int:
    if not -rank <= axis < rank:
        raise _bad(op, where, f"axis {axis} is out of range for input {name!r} of rank {rank}",
                   f"pass a tensor with at least {axis + 1 if axis >= 0 else -axis} dims")
    return axis % rank


def build_plan(v: Validated, spec: KernelSpec, ranks: Sequence[int], tactic: int = 0) -> LaunchPlan:
    """Resolve the spec against concrete input ranks (and a tactic: 0 or 1 = the default block)."""
    op = v.op_name
    ranks = tuple(int(r) for r in ranks)
    names = v.tensor_names

    def leaf(node: Expr, where: str) -> Expr:
        if isinstance(node, Numel):
            return NumelOf(resolve_tensor(op, where, node.input_name, names))
        if isinstance(node, DimSize):
            t = resolve_tensor(op, where, node.input_name, names)
            return Dim(t, _norm_axis(op, where, node.axis, ranks[t], names[t]))
        if isinstance(node, (Dim, NumelOf)):
            return node
        raise TypeError(f"{op}: {where}: unexpected expression node {node!r}")

    def res(e, where: str) -> Expr:
        return resolve(lift(e), lambda n: leaf(n, where))

    outputs = []
    for i, o in enumerate(spec.outputs or ()):
        where = f"outputs[{i}].shape"
        s = o.shape
        like = None
        if isinstance(s, SameAs):
            t = resolve_tensor(op, where, s.input_idx, names)
            shape = tuple(Dim(t, a) for a in range(ranks[t]))
            numel: Expr = NumelOf(t)
            like = t
            src = t
        elif isinstance(s, ReduceDims):
            t = resolve_tensor(op, where, s.input_idx, names)
            dims = {_norm_axis(op, where, a, ranks[t], names[t]) for a in s.dims}
            if len(dims) != len(s.dims):
                raise _bad(op, where, f"dims {tuple(s.dims)} name the same axis twice at rank {ranks[t]}", "pass a tensor of higher rank")
            shape = tuple(
                (Const(1) if s.keepdim else None) if a in dims else Dim(t, a) for a in range(ranks[t])
            )
            shape = tuple(d for d in shape if d is not None)
            numel = product(shape)
            src = t
        else:
            shape = tuple(res(e, f"{where}[{j}]") for j, e in enumerate(s))
            numel = product(shape)
            src = 0
        if o.dtype is not None:
            dsrc, dfix = None, o.dtype
        elif o.dtype_from is not None:
            dsrc, dfix = names.index(o.dtype_from), None
        else:
            dsrc, dfix = src, None
        outputs.append(OutputPlan(shape=shape, numel=numel, like=like, dtype_src=dsrc, dtype=dfix))

    g = spec.geometry
    smem: Expr = Const(0)
    if isinstance(g, Elementwise):
        blk = tuple(g.block) if tactic <= 1 else tuple(g.tactics[tactic - 2])
        out0 = outputs[0]
        if g.layout == "flat":
            grid = (binop("cdiv", out0.numel, Const(blk[0])), Const(1), Const(1))
        else:
            grid = _nd_grid(out0.shape, blk)
        block = tuple(blk) + (1,) * (3 - len(blk))
    elif isinstance(g, Reduction):
        t = None
        bs = g.block_size if tactic <= 1 else g.tactics[tactic - 2]
        src = spec.outputs[0].shape
        if isinstance(src, (SameAs, ReduceDims)):
            t = resolve_tensor(op, "geometry", src.input_idx, names)
            for a in g.reduce_dims:
                _norm_axis(op, "geometry.reduce_dims", a, ranks[t], names[t])
        grid = (outputs[0].numel, Const(1), Const(1))
        block = (bs, 1, 1)
    elif isinstance(g, Custom):
        gs = [res(e, f"geometry.grid[{j}]") for j, e in enumerate(g.grid)]
        grid = tuple(gs) + (Const(1),) * (3 - len(gs))
        block = tuple(g.block) + (1,) * (3 - len(g.block))
        smem = res(g.shared_mem, "geometry.shared_mem")
    else:  # override path: no plan geometry
        grid = (Const(0), Const(0), Const(0))
        block = (0, 0, 0)
    extras = tuple(res(e, f"extras[{i}]") for i, e in enumerate(spec.extras))
    return LaunchPlan(
        op_name=op, ranks=ranks, tactic=max(tactic, 1), outputs=tuple(outputs), grid=grid,
        block=block, shared_mem=smem, extras=extras,
    )


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


__all__ = ["LaunchPlan", "OutputPlan", "build_plan", "tactic_count", "INT32_MAX", "GRID_LIMITS"]
