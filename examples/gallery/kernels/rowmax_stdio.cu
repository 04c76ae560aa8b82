#include <stdio.h>

// Maximum of each row of x (n_rows x n_cols) and the column where it first occurs, one block of
// ROWMAX_THREADS threads per row. -INFINITY is the identity of max; a row without columns gives
// (-inf, 0). Compile with -DROWMAX_TRACE to have thread 0 print each row's result.

#define ROWMAX_THREADS 128

__global__ void rowmax(const float* __restrict__ x, float* __restrict__ values, long long* __restrict__ indices,
                       int n_rows, int n_cols)
{
    __shared__ float best_val[ROWMAX_THREADS];
    __shared__ int best_col[ROWMAX_THREADS];

    const int row = blockIdx.x;
    if (row >= n_rows) return;
    const float* xr = x + (size_t)row * n_cols;

    float v = -INFINITY;
    int col = n_cols;  // "none yet": after every real column
    for (int j = threadIdx.x; j < n_cols; j += ROWMAX_THREADS) {
        const float xj = xr[j];
        if (xj > v) {  // strict: the first occurrence wins within a thread
            v = xj;
            col = j;
        }
    }
    best_val[threadIdx.x] = v;
    best_col[threadIdx.x] = col;
    __syncthreads();

    for (int s = ROWMAX_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            const float ov = best_val[threadIdx.x + s];
            const int oc = best_col[threadIdx.x + s];
            if (ov > best_val[threadIdx.x] || (ov == best_val[threadIdx.x] && oc < best_col[threadIdx.x])) {
                best_val[threadIdx.x] = ov;
                best_col[threadIdx.x] = oc;
            }
        }
        __syncthreads();
    }

    if (threadIdx.x == 0) {
        values[row] = best_val[0];
        indices[row] = best_col[0] < n_cols ? best_col[0] : 0;
#ifdef ROWMAX_TRACE
        printf("rowmax: row %d max %f at column %d\n", row, best_val[0], best_col[0]);
#endif
    }
}
