"""C = A @ B + bias for A (M x K), B (K x N) and bias (N), autotuned over its tile shapes.

Each program computes one BLOCK_M x BLOCK_N tile of C, stepping through K BLOCK_K columns at a time and
accumulating in float32; the bias is added to the accumulator before the single rounding to C's type.
Tiles are handed out in bands of GROUP_M tile rows, column by column within a band, so programs that
run together read the same few tiles of B and neighbouring rows of A (better L2 reuse than row order).
Every operand is addressed through its strides, so any row-major or column-major layout works.

Triton's autotuner times the configs at the first launch for each (M, N, K) and keeps the fastest. The
fourth one holds a 128x128 tile of A and one of B, 128 deep, at once: more than 48 KB of shared memory.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 4}, num_warps=2, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_bias_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_band = GROUP_M * tiles_n
    band_start = (pid // per_band) * GROUP_M
    band_rows = tl.minimum(tiles_m - band_start, GROUP_M)
    tile_m = band_start + (pid % per_band) % band_rows
    tile_n = (pid % per_band) // band_rows

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = rk < K - k0
        a = tl.load(a_tile, mask=(rm[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_tile, mask=k_ok[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    c_tile = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))
