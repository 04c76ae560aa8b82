// dst = transpose(src), where src is a rows x cols matrix whose element (r, c) is
// src[r * src_stride_row + c * src_stride_col], and dst is cols x rows with row stride
// dst_stride_row (its columns are contiguous).
//
// Strides are 64-bit element counts, so a view into a tensor of more than 2**31 elements indexes
// correctly. A TILE_DIM x TILE_DIM tile passes through shared memory, padded by one column so the
// transposed reads hit distinct banks; a block of TILE_DIM x BLOCK_ROWS threads moves one tile.
// Grid: ceil(cols / TILE_DIM) by ceil(rows / TILE_DIM).

#define TILE_DIM 32
#define BLOCK_ROWS 8

extern "C" __global__ void transpose_strided(float* dst, const float* src, int rows, int cols,
                                             long long src_stride_row, long long src_stride_col,
                                             long long dst_stride_row)
{
    __shared__ float tile[TILE_DIM][TILE_DIM + 1];

    const int c = blockIdx.x * TILE_DIM + threadIdx.x;
    const int r0 = blockIdx.y * TILE_DIM;
    for (int j = threadIdx.y; j < TILE_DIM; j += BLOCK_ROWS) {
        const int r = r0 + j;
        if (r < rows && c < cols) {
            tile[j][threadIdx.x] = src[r * src_stride_row + c * src_stride_col];
        }
    }
    __syncthreads();

    // dst row = a column of src (blockIdx.x * TILE_DIM + j), dst column = a row of src (r0 + threadIdx.x)
    const int dst_col = r0 + threadIdx.x;
    for (int j = threadIdx.y; j < TILE_DIM; j += BLOCK_ROWS) {
        const int dst_row = blockIdx.x * TILE_DIM + j;
        if (dst_row < cols && dst_col < rows) {
            dst[dst_row * dst_stride_row + dst_col] = tile[threadIdx.x][j];
        }
    }
}
