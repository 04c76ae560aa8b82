// Softmax over each row of inp (rows x cols), one block per row.
//
// The row is read from global memory once, into dynamic shared memory; the launch sizes it:
//   (cols + blockDim.x / 32) * sizeof(float) bytes
// (the row, then one slot per warp). Max and sum are reduced inside each warp with
// __shfl_xor_sync butterflies, then across warps through the per-warp slots. blockDim.x must be
// a multiple of 32; with the default 48 KB of dynamic shared memory, cols is at most about 12k.

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_max(float v) {
    for (int m = 16; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, m));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(FULL_MASK, v, m);
    return v;
}

__global__ void softmax_rows(float* __restrict__ out, const float* __restrict__ inp, int rows, int cols)
{
    extern __shared__ float smem[];
    float* row_buf = smem;          // cols floats
    float* warp_buf = smem + cols;  // blockDim.x / 32 floats

    const int row = blockIdx.x;
    if (row >= rows) return;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int n_warps = blockDim.x >> 5;
    const float* x = inp + (size_t)row * cols;

    // pass 1: stage the row and find its maximum
    float m = -3.402823466e+38f;  // -FLT_MAX
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        const float v = x[i];
        row_buf[i] = v;
        m = fmaxf(m, v);
    }
    m = warp_max(m);
    if (lane == 0) warp_buf[warp] = m;
    __syncthreads();
    m = warp_buf[0];
    for (int w = 1; w < n_warps; ++w) m = fmaxf(m, warp_buf[w]);
    __syncthreads();  // every thread has read the slots before they are reused

    // pass 2: exponentials (kept in shared memory) and their sum
    float s = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        const float e = expf(row_buf[i] - m);
        row_buf[i] = e;
        s += e;
    }
    s = warp_sum(s);
    if (lane == 0) warp_buf[warp] = s;
    __syncthreads();
    s = 0.0f;
    for (int w = 0; w < n_warps; ++w) s += warp_buf[w];

    // pass 3: normalize
    const float inv = 1.0f / s;
    float* y = out + (size_t)row * cols;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        y[i] = row_buf[i] * inv;
    }
}
