// One AdamW step over a flat parameter buffer, updated in place with its two moment buffers.
//
// Written as training codebases write their fused optimizer kernels: every buffer is a raw pointer,
// the parameter count is a 64-bit integer, and the bias corrections (1 - beta^t) are computed on the
// host and passed in. Launch one thread per parameter.

__device__ inline float lerp(float start, float end, float weight) {
    return fmaf(weight, end, fmaf(-weight, start, start));
}

__global__ void adamw_kernel(float* params_memory, const float* grads_memory, float* m_memory, float* v_memory,
                             long num_parameters, float learning_rate, float beta1, float beta2,
                             float beta1_correction, float beta2_correction, float eps, float weight_decay) {
    long idx = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (idx >= num_parameters) return;
    float grad = grads_memory[idx];
    float m = lerp(grad, m_memory[idx], beta1);
    float v = lerp(grad * grad, v_memory[idx], beta2);
    m_memory[idx] = m;
    v_memory[idx] = v;
    m /= beta1_correction;
    v /= beta2_correction;
    params_memory[idx] -= learning_rate * (m / (sqrtf(v) + eps) + weight_decay * params_memory[idx]);
}
