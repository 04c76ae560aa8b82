// Indices of the non-zero elements of a rows x cols matrix, in row-major order (as torch.nonzero gives
// them): indices[k] = (row, col) of the k-th non-zero element, and *num_nonzero = how many there are.
//
// One block walks the matrix a tile of THREADS elements at a time. Each thread flags its element; a
// block-wide exclusive scan of the flags (warp shuffles, then one scan of the per-warp totals) gives each
// flagged element its slot after those of earlier tiles, so the output keeps the input's order without
// atomics. The count is written once, at the end, by thread 0: the kernel never reads it, so the caller
// need not clear it. Launch with one block of THREADS threads.

#define THREADS 256
#define WARPS (THREADS / 32)

// Exclusive prefix sum of `flag` over the block; *tile_total gets the sum of all flags.
__device__ __forceinline__ int block_exclusive_scan(int flag, int* warp_totals, int* tile_total)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;

    int inclusive = flag;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        int up = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += up;
    }
    if (lane == 31) warp_totals[warp] = inclusive;
    __syncthreads();

    if (warp == 0) {
        int total = lane < WARPS ? warp_totals[lane] : 0;
#pragma unroll
        for (int offset = 1; offset < WARPS; offset <<= 1) {
            int up = __shfl_up_sync(0xffffffffu, total, offset);
            if (lane >= offset) total += up;
        }
        if (lane < WARPS) warp_totals[lane] = total;  // now inclusive over warps
    }
    __syncthreads();

    const int before = warp > 0 ? warp_totals[warp - 1] : 0;
    *tile_total = warp_totals[WARPS - 1];
    __syncthreads();  // warp_totals is rewritten by the next tile
    return before + inclusive - flag;
}

extern "C" __global__ void nonzero_2d(const float* __restrict__ x, long long* __restrict__ indices,
                                      int* __restrict__ num_nonzero, int rows, int cols)
{
    __shared__ int warp_totals[WARPS];
    const long long n = (long long)rows * cols;

    int found = 0;
    for (long long base = 0; base < n; base += THREADS) {
        const long long i = base + threadIdx.x;
        const int flag = i < n && x[i] != 0.0f;  // NaN is non-zero, -0.0 is zero, as in torch.nonzero
        int tile_total;
        const int slot = found + block_exclusive_scan(flag, warp_totals, &tile_total);
        if (flag) {
            indices[2 * (long long)slot] = i / cols;
            indices[2 * (long long)slot + 1] = i % cols;
        }
        found += tile_total;
    }
    if (threadIdx.x == 0) *num_nonzero = found;
}
