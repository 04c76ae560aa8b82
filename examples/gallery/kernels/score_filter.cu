// Keep the boxes whose score is above a threshold, in their input order: the post-processing step of a
// detector before non-maximum suppression.
//
// boxes is num_boxes x 4 (x1, y1, x2, y2), scores has num_boxes entries. kept_boxes / kept_scores get the
// kept rows packed at the front, and *num_kept how many were kept (a 64-bit count). One block scans the
// boxes a tile of THREADS at a time; a warp ballot and a scan of the per-warp counts give each kept box
// its slot, so the order is kept without atomics. Thread 0 writes the count at the end. Launch with one
// block of THREADS threads.

#include <stdint.h>

#define THREADS 256
#define WARPS (THREADS / 32)

extern "C" __global__ void filter_boxes(const float* __restrict__ boxes, const float* __restrict__ scores,
                                        float score_threshold, int num_boxes, float* __restrict__ kept_boxes,
                                        float* __restrict__ kept_scores, int64_t* __restrict__ num_kept)
{
    __shared__ int warp_offset[WARPS + 1];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;

    int64_t kept = 0;
    for (int base = 0; base < num_boxes; base += THREADS) {
        const int i = base + threadIdx.x;
        const float s = i < num_boxes ? scores[i] : 0.0f;
        const bool keep = i < num_boxes && s > score_threshold;  // a NaN score is never kept

        const unsigned ballot = __ballot_sync(0xffffffffu, keep);
        if (lane == 0) warp_offset[warp + 1] = __popc(ballot);
        __syncthreads();
        if (threadIdx.x == 0) {
            warp_offset[0] = 0;
            for (int w = 1; w <= WARPS; ++w) warp_offset[w] += warp_offset[w - 1];
        }
        __syncthreads();

        if (keep) {
            const int64_t slot = kept + warp_offset[warp] + __popc(ballot & ((1u << lane) - 1u));
            for (int c = 0; c < 4; ++c) kept_boxes[4 * slot + c] = boxes[4 * (int64_t)i + c];
            kept_scores[slot] = s;
        }
        kept += warp_offset[WARPS];
        __syncthreads();  // warp_offset is rewritten by the next tile
    }
    if (threadIdx.x == 0) *num_kept = kept;
}
