#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

// Euclidean norm of each row of x (rows x cols), one 32-thread tile per row.
//
// The block is split with cg::tiled_partition<32>; tile t of block b owns row b * (tiles per
// block) + t. The tile's threads stride over the row summing squares, then cg::reduce combines
// them. An empty row has norm 0. blockDim.x must be a multiple of 32.
__global__ void row_l2norm(const float* __restrict__ x, float* __restrict__ norms, int rows, int cols)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);

    const int row = blockIdx.x * (blockDim.x / 32) + tile.meta_group_rank();
    if (row >= rows) return;  // the whole tile leaves together

    const float* xr = x + (size_t)row * cols;
    float ss = 0.0f;
    for (int j = tile.thread_rank(); j < cols; j += 32) {
        ss += xr[j] * xr[j];
    }
    const float total = cg::reduce(tile, ss, cg::plus<float>());
    if (tile.thread_rank() == 0) {
        norms[row] = sqrtf(total);
    }
}
