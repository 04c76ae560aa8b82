// Sum of each row of x (a rows x cols matrix), one block of BLOCK threads per row.
//
// T is the element type (float, __half or __nv_bfloat16). Partial sums are kept in float and the
// row's sum is rounded to T once. BLOCK is a compile-time block size, a power of two: it sizes the
// shared-memory tree and lets the tree's loop unroll. Launch with blockDim.x == BLOCK.

template <typename T, int BLOCK>
__global__ void block_sum(const T* __restrict__ x, T* __restrict__ sums, int cols)
{
    static_assert((BLOCK & (BLOCK - 1)) == 0, "BLOCK must be a power of two");
    __shared__ float partial[BLOCK];

    const T* row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK) {
        acc += static_cast<float>(row[j]);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();

#pragma unroll
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = static_cast<T>(partial[0]);
    }
}
