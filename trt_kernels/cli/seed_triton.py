"""The selftest's Triton case: a ``@triton.jit`` kernel (Triton reads its source from this file).

Imported only where Triton is installed (``trt_kernels.cli.seed_cases`` asks first)."""

import triton
import triton.language as tl

from trt_kernels.api import triton_kernel_op
from trt_kernels.expr import Numel, cdiv
from trt_kernels.spec import InputDecl, OutputDecl, SameAs, ScalarInput


@triton.jit
def ttk_selftest_scale(x_ptr, alpha, n, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


def declare(op_name: str):
    return triton_kernel_op(
        op_name, ttk_selftest_scale, inputs=[InputDecl("x"), ScalarInput("alpha", float)],
        outputs=[OutputDecl("y", shape=SameAs("x"))], extras=[Numel("x")],
        grid=lambda meta: (cdiv(Numel("x"), meta["BLOCK"]),), constexprs={"BLOCK": 256}, num_warps=4,
        supports_dynamic_shapes=True)
