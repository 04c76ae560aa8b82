// C = A * B for row-major matrices: A is M x K, B is K x N, C is M x N.
//
// Launch a 2-D grid of TILE x TILE blocks, ceil(N / TILE) by ceil(M / TILE): block (bx, by)
// computes the tile of C at rows by * TILE.., columns bx * TILE... It walks K in TILE-wide steps,
// staging one tile of A and one of B in shared memory per step; threads that fall outside a matrix
// stage zeros, so ragged edges need no special case in the inner loop.

#define TILE 16

__global__ void matmul_tiled(const float* A, const float* B, float* C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();

#pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }

    if (row < M && col < N) {
        C[(size_t)row * N + col] = acc;
    }
}
