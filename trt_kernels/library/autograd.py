"""The op's autograd formula: the user's ``backward`` and ``setup_context`` (or the default that saves the
tensor inputs, the outputs and the scalars), checked for the number of gradients it returns."""

from __future__ import annotations

from trt_kernels.op import KernelOp


def make_setup_context(kop: KernelOp):
    if kop.setup_context is not None:
        return kop.setup_context
    kinds = kop.sig.arg_kinds
    names = [d.name for d in kop.sig.inputs]

    def setup_context(ctx, inputs, output):
        outs = output if isinstance(output, (tuple, list)) else (output,)
        ctx.save_for_backward(*[a for a, k in zip(inputs, kinds) if k == "tensor"], *outs)
        ctx.scalars = {n: a for n, a, k in zip(names, inputs, kinds) if k == "scalar"}

    return setup_context


def make_backward(kop: KernelOp):
    n_in = len(kop.sig.inputs)
    op = kop.op_name

    def backward(ctx, *grads):
        res = kop.backward(ctx, *grads)
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) != n_in:
            raise RuntimeError(f"{op}: backward returned {len(res)} gradients; the op has {n_in} inputs "
                               "(return None for scalars and inputs without a gradient)")
        return res

    return backward


# ---------------- registration ----------------
#
# torch's dispatcher does not synchronize its tables with calls in flight (registering or removing
# a kernel while another thread calls the op can crash the process), so each op name is registered
# with torch once: a definition and one set of kernels (fake, CUDA, CPU, autograd when declared)
