#include <cuda_fp16.h>

// out = alpha * x + y over n halves, two at a time as packed half2.
//
// x, y and out must be 4-byte aligned (freshly allocated buffers are). Each packed step multiplies
// with __hmul2 and adds with __hadd2; an odd last element is done on its own, in scalar half, by
// thread 0 of block 0. A grid-stride loop lets any grid cover the ceil(n / 2) pairs.
__global__ void haxpy_half2(int n, float alpha, const __half* x, const __half* y, __half* out)
{
    const __half2 alpha2 = __float2half2_rn(alpha);
    const __half2* x2 = reinterpret_cast<const __half2*>(x);
    const __half2* y2 = reinterpret_cast<const __half2*>(y);
    __half2* out2 = reinterpret_cast<__half2*>(out);

    const int pairs = n / 2;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += blockDim.x * gridDim.x) {
        out2[i] = __hadd2(__hmul2(alpha2, x2[i]), y2[i]);
    }
    if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) {
        const __half a = __float2half_rn(alpha);
        out[n - 1] = __hadd(__hmul(a, x[n - 1]), y[n - 1]);
    }
}
