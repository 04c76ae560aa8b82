"""Row-wise softmax with explicit row strides, for rows of any length.

Programs step over the rows (row = program id, then + the number of programs, ...). Each row is read
in BLOCK_SIZE-wide chunks three times: for its maximum, for the sum of exponentials, and to write the
normalized values. Element (r, c) of the input is at input_ptr + r * input_row_stride + c.
"""

import triton
import triton.language as tl


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        in_row = input_ptr + tl.cast(row, tl.int64) * input_row_stride
        out_row = output_ptr + tl.cast(row, tl.int64) * output_row_stride

        row_max = tl.full([BLOCK_SIZE], -float("inf"), tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            x = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            row_max = tl.maximum(row_max, x)
        m = tl.max(row_max, axis=0)

        acc = tl.zeros([BLOCK_SIZE], tl.float32)
        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            x = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            acc += tl.where(cols < n_cols, tl.exp(x - m), 0.0)
        denom = tl.sum(acc, axis=0)

        for start in range(0, n_cols, BLOCK_SIZE):
            cols = start + tl.arange(0, BLOCK_SIZE)
            x = tl.load(in_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - m) / denom
            tl.store(out_row + cols, y.to(output_ptr.dtype.element_ty), mask=cols < n_cols)
