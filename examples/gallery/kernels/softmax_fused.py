"""Row softmax with each row held whole in registers: one program per row.

The launcher sizes the block to the row: BLOCK_SIZE is the smallest power of two covering n_cols, and
more warps share the wider blocks (4 for blocks up to 1024, 8 for 2048, 16 from 4096), so a row is
read from memory once and written once. Lanes past the end of the row load -inf, which adds nothing to the
maximum nor, after exp, to the sum. The arithmetic is float32 whatever the element type.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    col = tl.arange(0, BLOCK_SIZE)
    in_row = col < n_cols

    logits = tl.load(input_ptr + row * input_row_stride + col, mask=in_row, other=-float("inf"))
    logits = logits.to(tl.float32)
    shifted = logits - tl.max(logits, axis=0)
    weights = tl.exp(shifted)
    probs = weights / tl.sum(weights, axis=0)

    tl.store(output_ptr + row * output_row_stride + col, probs.to(output_ptr.dtype.element_ty), mask=in_row)
