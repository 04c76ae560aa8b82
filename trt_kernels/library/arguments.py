"""The checks of one call's arguments, shared by the fake impl, the eager CUDA kernel and ``launch_into``:
the tensor dtypes against the declared combinations, the scalars, and the spec's size checks (as guards where
sizes are symbolic)."""

from __future__ import annotations

from typing import Any, List, Sequence

import torch

from trt_kernels import dtypes as _dt
from trt_kernels.errors import InputError
from trt_kernels.expr import ShapeEvaluator, evaluate
from trt_kernels.op import KernelOp
from trt_kernels.signature import scalar_len, scalar_misfit, scalar_value


def check_tensor_args(kop: KernelOp, ts: Sequence[Any]):
    """dtype rules shared by fake and eager: the kernel's dtype comes from the first input whose
    dtype is T; fixed-dtype inputs must match exactly. Returns the kernel dtype (with several type
    parameters, the declared combination the inputs' dtypes select)."""
    op = kop.op_name
    decls = kop.sig.tensor_decls
    for d, t in zip(decls, ts):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{op}: argument {d.name!r} must be a Tensor, got {type(t).__name__}")
    if len(kop.sig.type_params) > 1:
        return _combination(kop, ts)
    kdt = None
    for d, t in zip(decls, ts):
        if kop.sig.type_param_of(d) is not None and kdt is None:
            kdt = t.dtype
    if kdt is None:
        kdt = kop.dtypes[0]
    if kdt not in kop.dtypes:
        raise InputError(
            f"{op}: input dtype {_dt.short(kdt)} is not one the kernel declares "
            f"({', '.join(_dt.short(d) for d in kop.dtypes)}); the kernel would misread the bytes. "
            f"Fix: convert the input (e.g. x.to(torch.{_dt.short(kop.dtypes[0])}))"
            + ("" if len(kop.dtypes) > 1 else ", or declare the kernel as a template with dtypes=[...]")
        )
    for d, t, want in zip(decls, ts, kop.sig.in_dtypes(kdt)):
        if t.dtype != want:
            raise InputError(
                f"{op}: input {d.name!r} has dtype {_dt.short(t.dtype)} but the kernel takes "
                f"{_dt.short(want)} there. Fix: pass a {_dt.short(want)} tensor "
                f"(e.g. {d.name}.to(torch.{_dt.short(want)}))"
            )
    return kdt


def check_scalar_args(kop: KernelOp, args: Sequence[Any]) -> List[Any]:
    """The scalar arguments of a call (in schema order), each tuple input checked for its length and
    element types, and every value that is a number for the kernel's C type (:class:`InputError` naming the
    op, the argument and the fix, as an eager launch raises it): torch's own parsing of an ``int[4]``
    argument checks none of that, and a traced graph would keep a value no launch can pass."""
    out = []
    for d, a, kind in zip(kop.sig.inputs, args, kop.sig.arg_kinds):
        if kind == "scalar":
            value = a if scalar_len(d) is None else scalar_value(kop.op_name, d, a)
            misfit = scalar_misfit(kop.op_name, d, value)
            if misfit is not None:
                raise misfit
            out.append(value)
    return out


def _combination(kop: KernelOp, ts: Sequence[Any]):
    """The declared combination of type parameters the inputs' dtypes select (several type parameters)."""
    sig = kop.sig
    op = kop.op_name
    got = [t.dtype for t in ts]
    kdt = sig.kernel_dtype_of(got)
    if kdt is not None:
        return kdt
    names = sig.tensor_names
    for d, t in zip(sig.tensor_decls, ts):  # a fixed-dtype input: the plain message
        if isinstance(d.dtype, torch.dtype) and t.dtype != d.dtype:
            want = _dt.short(d.dtype)
            raise InputError(f"{op}: input {d.name!r} has dtype {_dt.short(t.dtype)} but the kernel takes {want} "
                             f"there. Fix: pass a {want} tensor (e.g. {d.name}.to(torch.{want}))")
    typed = [(sig.type_param_of(d), n) for d, n in zip(sig.tensor_decls, names)]
    declared = "; ".join(", ".join(f"{n}: {_dt.short(dt)}" for (p, n), dt in zip(typed, sig.in_dtypes(k)) if p)
                         for k in kop.dtypes)
    passed = ", ".join(f"{n}: {_dt.short(dt)}" for (p, n), dt in zip(typed, got) if p)
    raise InputError(f"{op}: input dtypes ({passed}) are not a combination the kernel declares ({declared}); "
                     "the kernel would misread the bytes. Fix: convert the inputs to a declared combination (e.g. "
                     + ", ".join(f"{n}.to(torch.{_dt.short(dt)})"
                                 for (p, n), dt in zip(typed, sig.in_dtypes(kop.dtypes[0])) if p)
                     + ")")


def check_sizes(kop: KernelOp, plan, ts: Sequence[Any], scalars: Sequence[Any] = ()) -> None:
    """The spec's size checks at the inputs' shapes: :class:`InputError` at static sizes; with symbolic
    sizes (``torch.compile`` / ``torch.export``) each equality is a guard (``torch._check``), so a trace
    records it rather than assuming it."""
    if not plan.checks:
        return
    shapes = [tuple(t.shape) for t in ts]
    from trt_kernels.plan import check_message, concrete

    if all(type(d) is int for s in shapes for d in s):
        concrete(plan, shapes, kop.sig.tensor_names, scalars)
        return
    ev = ShapeEvaluator(ts, scalars)
    for c in plan.checks:
        vals = [evaluate(a, ev) for a, _ in c.pairs[:1]] + [evaluate(b, ev) for _, b in c.pairs]
        for a, b in c.pairs:
            va, vb = evaluate(a, ev), evaluate(b, ev)
            torch._check_with(InputError, va == vb,
                              lambda c=c, vals=vals: check_message(plan, c, shapes, kop.sig.tensor_names, vals))


def make_size_check(kop: KernelOp):
    """``check(args)``: the spec's size checks on the op's arguments, for ops whose ``meta_fn`` /
    ``eager_fn`` replace the derived fake impl / launch (which check them themselves)."""
    tpos = kop.sig.tensor_pos

    def check(args) -> None:
        args = kop.with_defaults(tuple(args))
        ts = [args[i] for i in tpos]
        if all(isinstance(t, torch.Tensor) for t in ts):
            scalars = [a for a, k in zip(args, kop.sig.arg_kinds) if k == "scalar"]
            check_sizes(kop, kop.plan(tuple(t.dim() for t in ts)), ts, scalars)

    return check
