/*
 * Vector addition: c = a + b, elementwise over n floats.
 *
 * The element count is a size_t and comes first, the way the CUDA samples write their vector
 * kernels; a grid-stride loop lets any grid cover any n.
 */
extern "C" __global__ void vector_add(size_t n, const float *a, const float *b, float *c)
{
    const size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        c[i] = a[i] + b[i];
    }
}
