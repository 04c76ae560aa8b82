"""Bias add fused with GELU (the erf form): out = gelu(x + b), for x of n_rows x n_cols and b of n_cols.

Each program handles BLOCK consecutive elements of the flattened x; the bias column of an element is
its offset modulo n_cols. The math runs in float32 whatever the element type, rounded once on store.
"""

import triton
import triton.language as tl


@triton.jit
def fused_bias_gelu(out_ptr, x_ptr, b_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_rows.to(tl.int64) * n_cols
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs % n_cols, mask=mask, other=0.0).to(tl.float32)
    v = x + b
    y = 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
