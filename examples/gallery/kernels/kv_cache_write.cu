// Writes the keys and values of this step's tokens into a paged KV cache, at the slot the scheduler
// assigned each token (slot = block * block_size + offset, flattened; -1 marks a padding token).
//
// The cache tensors are updated in place; one block per token, threads stride over the head
// dimension.

#include <stdint.h>

__global__ void reshape_and_cache(const float* __restrict__ key, const float* __restrict__ value,
                                  float* __restrict__ key_cache, float* __restrict__ value_cache,
                                  const int64_t* __restrict__ slot_mapping, int num_tokens, int head_size) {
    const int token = blockIdx.x;
    if (token >= num_tokens) return;
    const int64_t slot = slot_mapping[token];
    if (slot < 0) return;
    const int64_t src = (int64_t)token * head_size;
    const int64_t dst = slot * head_size;
    for (int i = threadIdx.x; i < head_size; i += blockDim.x) {
        key_cache[dst + i] = key[src + i];
        value_cache[dst + i] = value[src + i];
    }
}
