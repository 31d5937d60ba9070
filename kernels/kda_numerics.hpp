// The arithmetic of SPEC §3 as the kernel evaluates it, matched to the reference
// (reference/reference.cpp) operation by operation: no contraction into FMA (the build passes
// --fmad=false / -ffp-contract=off), IEEE division and sqrt, and exp as core/exp_once.hpp defines
// it for host and device alike: in double, rounded once.
#pragma once
#include "core/bf16.hpp"
#include "core/exp_once.hpp"
#include "kernels/vendor/gpu.hpp"

namespace monokda::gpu {

__device__ __forceinline__ float bf(bf16 b) { return b.to_float(); }
__device__ __forceinline__ float bf_lo(uint32_t pair) { return f32_from_bits(pair << 16); }
__device__ __forceinline__ float bf_hi(uint32_t pair) { return f32_from_bits(pair & 0xffff0000u); }
__device__ __forceinline__ uint16_t rnd(float f) { return bf16::round(f).bits; }
__device__ __forceinline__ uint32_t pack(float lo, float hi) { return uint32_t(rnd(lo)) | (uint32_t(rnd(hi)) << 16); }

// One out-of-line copy: the double exp is long, and every inlined copy is more code the SM fetches
// cold (the kda bodies run once a launch; instruction fetch sets their pace,
// docs/decisions/0020-kda-code-size.md).
__device__ __noinline__ float exp_f(float x) { return exp_once(x); }
__device__ __forceinline__ float sigmoid_f(float z) { return 1.0f / (1.0f + exp_f(-z)); }
// One exp_f on a warp that would otherwise wait: its code is then in this SM's instruction cache
// before a chain that needs it (the gate's softmax, the kda gates) fetches it cold.
__device__ __forceinline__ void warm_exp() { keep(exp_f(float(threadIdx.x % 32) * 0.125f)); }

// Pairwise sum (ReductionOrder "pairwise") of 128 terms held 8 a lane by 16 consecutive lanes,
// lane l holding terms 8l..8l+7: the in-lane tree (pairwise8) and then the butterfly over lanes 1,
// 2, 4, 8 build exactly pair_sum(0, 128). With lane l holding 4l..4l+3 and 64+4l..64+4l+3 instead
// (the recurrence's state layout), the two halves' pairwise4 trees each through the butterfly are
// pair_sum(0, 64) and pair_sum(64, 128), and their sum is again exactly pair_sum(0, 128). Every
// lane of the 16 gets the same bits (addition commutes). All lanes of the wave must call it.
__device__ __forceinline__ float pairwise4(float a, float b, float c, float d) { return (a + b) + (c + d); }
__device__ __forceinline__ float pairwise8(const float (&t)[8]) {
    return pairwise4(t[0], t[1], t[2], t[3]) + pairwise4(t[4], t[5], t[6], t[7]);
}
// N such butterflies at once, each the one below: they are independent, so their shuffles issue
// back to back instead of waiting out one another's latency.
template <int N>
__device__ __forceinline__ void pairwise_16_lanes(float (&part)[N]) {
#pragma unroll
    for (int m = 1; m < 16; m *= 2) {
        float other[N];
#pragma unroll
        for (int b = 0; b < N; ++b) other[b] = __shfl_xor(part[b], m);
#pragma unroll
        for (int b = 0; b < N; ++b) part[b] = part[b] + other[b];
    }
}
__device__ __forceinline__ float pairwise_16_lanes(float part) {
    float p[1] = {part};
    pairwise_16_lanes(p);
    return p[0];
}

}  // namespace monokda::gpu
