"""The op's host-side kernels: the fake (meta) impl ``torch.compile`` and ``torch.export`` trace through, a
``meta_fn`` with the spec's size checks in front, and the CPU kernel (a clear error naming the fix)."""

from __future__ import annotations

import torch

from trt_kernels.errors import InputError, NoCudaDeviceError
from trt_kernels.expr import ShapeEvaluator, evaluate
from trt_kernels.library.arguments import check_scalar_args, check_sizes, check_tensor_args, make_size_check
from trt_kernels.op import KernelOp


def checked_meta_fn(kop: KernelOp):
    check = make_size_check(kop)
    meta_fn = kop.meta_fn

    def fake(*args, **kwargs):
        check(args)
        return meta_fn(*args, **kwargs)

    fake.__name__ = f"{kop.name}_fake"
    return fake


def make_fake_impl(kop: KernelOp):
    tpos = kop.sig.tensor_pos
    returned = kop.sig.returned
    single = len(returned) == 1
    none = not returned  # an op that writes its inputs in place and returns nothing
    snames = [d.name for d in kop.sig.scalar_decls]

    def fake(*args):
        args = kop.with_defaults(args)
        ts = [args[i] for i in tpos]
        check_tensor_args(kop, ts)
        scalars = check_scalar_args(kop, args)
        plan = kop.plan(tuple(t.dim() for t in ts))
        shapes = [tuple(t.shape) for t in ts]
        static = all(type(d) is int for s in shapes for d in s) and \
            all(type(v) is not torch.SymInt for s in scalars for v in (s if isinstance(s, (list, tuple)) else (s,)))
        if static:  # static sizes: the eager launch's checks, here too
            from trt_kernels.plan import concrete

            out_shapes = concrete(plan, shapes, kop.sig.tensor_names, scalars, snames).outputs
        else:
            check_sizes(kop, plan, ts, scalars)
            ev = ShapeEvaluator(ts, scalars)
            try:
                out_shapes = [[evaluate(e, ev) for e in o.shape] for o in plan.outputs]
            except ZeroDivisionError:
                raise InputError(f"{kop.op_name}: an output size expression divides by zero at input sizes "
                                 f"{shapes}. Fix: pass inputs whose sizes keep the divisor non-zero") from None
        if kop.sig.counts:
            out_shapes = _written_shapes(plan, out_shapes)
        dts = kop.sig.out_dtypes([t.dtype for t in ts])
        outs = [ts[0].new_empty(out_shapes[i], dtype=dts[i]) for i in returned]
        return None if none else outs[0] if single else tuple(outs)

    fake.__name__ = f"{kop.name}_fake"
    return fake


def _written_shapes(plan, out_shapes):
    """The output shapes with each size the kernel writes (:class:`~trt_kernels.spec.Written`) as a new unbacked
    SymInt in ``[0, bound]``, one per count (outputs that share a count share it): what ``torch.export`` and
    ``torch.compile(fullgraph=True)`` trace."""
    ctx = torch.library.get_ctx()
    sizes = {}
    shapes = [list(s) for s in out_shapes]
    for o, shape in zip(plan.outputs, shapes):
        if o.written < 0:
            continue
        bound = shape[o.written]
        n = sizes.get(o.count)
        if n is None:
            # new_dynamic_size takes plain ints; a symbolic bound is told to the shape env by torch._check
            n = sizes[o.count] = ctx.new_dynamic_size(min=0, max=bound if type(bound) is int else None)
            if type(bound) is not int:
                torch._check(n <= bound)
        shape[o.written] = n
    return shapes


def _meta_args(args) -> str:
    """The call's tensor arguments as meta tensors, written out: ``(torch.empty(4, 128, device='meta'),)``."""
    def one(a):
        dims = ", ".join(str(int(n)) for n in a.shape) if a.dim() else "()"
        dtype = "" if a.dtype == torch.float32 else f", dtype={a.dtype}"
        return f"torch.empty({dims}, device='meta'{dtype})"

    try:
        items = [one(a) for a in args if isinstance(a, torch.Tensor)] or ["torch.empty(4, 128, device='meta')"]
    except Exception:  # noqa: BLE001 - an odd argument only costs the example its shapes
        items = ["torch.empty(4, 128, device='meta')"]
    return f"({', '.join(items)},)" if len(items) == 1 else f"({', '.join(items)})"


def make_cpu_impl(kop: KernelOp):
    op = kop.op_name

    def cpu(*args):
        args = kop.with_defaults(args)
        tensors = [f"{d.name} on {args[i].device}" for i, d in enumerate(kop.sig.inputs)
                   if isinstance(args[i], torch.Tensor)]
        if torch.cuda.is_available():
            raise InputError(f"{op} runs on CUDA devices only; got {', '.join(tensors)}. "
                             "Move the inputs to the GPU (x.cuda())")
        # torch.export / torch.compile trace through the fake impl, which needs no GPU: say so
        raise NoCudaDeviceError(
            f"{op} runs on CUDA devices only; got {', '.join(tensors)}. No CUDA device is visible here "
            "(torch.cuda.is_available() is False). To trace or export without a GPU, pass meta tensors as the example "
            f"inputs, e.g. torch.export.export(model, {_meta_args(args)})")

    return cpu
