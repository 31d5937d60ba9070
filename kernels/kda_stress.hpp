// The GPU stress mode's hooks (docs/kernel.md, "The stress mode"; tests/gpu/test_stress.cpp). In a
// kernel built with MONOKDA_STRESS (the library monokda_kernels_stress, never the default one) they
// widen the races the ordering contract closes: before every hand-off store (a flag's release, a
// tagged pair) a spin of 0..release_ns drawn from (launch, CTA, mailbox, entry), so that producers
// which normally finish together do not, and a consumer that reads past its wait reads what is not
// there yet; and at entry a drawn share of the CTAs held for 0..hold_ns, so that fewer CTAs spin while
// the rest run ahead (a gemv CTA held until x is ready runs its copy ring back to back). The draws
// change every launch (the tag is in them), so graph replays see new interleavings. Without
// MONOKDA_STRESS the hooks are empty and the kernel's PTX is the same instruction for instruction.
// The stress test also plants two bugs here, to show what the mode catches (a stress build only): a
// flag poll that reads relaxed, and the copy ring's wait one stage short.
#pragma once
#include "kernels/kda_args.hpp"

namespace monokda::gpu {

// KdaArgs::stress.plant (LaunchOptions::stress.plant)
constexpr uint32_t kPlantNone = 0, kPlantRelaxedPoll = 1, kPlantRingShort = 2;

// A mailbox flag's poll read: an acquire, as kernels/kda_ordering.hpp requires (planted: relaxed).
__device__ __forceinline__ uint32_t flag_poll_load(const KdaArgs& a, const uint32_t* f) {
#if MONOKDA_STRESS
    if (a.stress.plant == kPlantRelaxedPoll) return ld_relaxed32(f);
#endif
    (void)a;
    return ld_acquire(f);
}
// The copy ring's wait for all but Pending groups (planted: one stage short).
template <int Pending>
__device__ __forceinline__ void ring_wait(const KdaArgs& a) {
#if MONOKDA_STRESS
    if (a.stress.plant == kPlantRingShort) return async_wait<Pending + 1>();
#endif
    (void)a;
    async_wait<Pending>();
}

#if MONOKDA_STRESS
__device__ __forceinline__ uint32_t stress_draw(uint32_t seed, uint32_t tag, uint32_t a, uint32_t b) {
    uint32_t h = seed * 0x9e3779b9u ^ tag;
    for (uint32_t v : {a, b}) {
        h ^= v + 0x7f4a7c15u + (h << 6) + (h >> 2);
        h *= 0x85ebca6bu;
        h ^= h >> 13;
    }
    return h;
}
__device__ __forceinline__ void stress_spin(uint32_t ns) {
    const uint64_t t0 = now_ns();
    while (now_ns() - t0 < ns) {
    }
}
// Before a hand-off store of mailbox `box`, entry `entry` (or word: any value that tells stores apart).
__device__ __forceinline__ void stress_before_store(const KdaArgs& a, uint32_t tag, uint32_t box, uint32_t entry) {
    if (a.stress.release_ns == 0) return;
    stress_spin(stress_draw(a.stress.seed, tag, blockIdx.x * 16u + box, entry) % (a.stress.release_ns + 1));
}
// At entry (every thread calls it): a drawn share of the CTAs waits, thread 0 spinning, the rest at
// the barrier.
__device__ __forceinline__ void stress_hold(const KdaArgs& a, uint32_t tag) {
    if (a.stress.hold_ns == 0) return;
    if (threadIdx.x == 0) {
        const uint32_t d = stress_draw(a.stress.seed, tag, blockIdx.x, ~0u);
        if (d % 100u < a.stress.hold_percent) stress_spin((d >> 8) % (a.stress.hold_ns + 1));
    }
    __syncthreads();
}
#else
__device__ __forceinline__ void stress_before_store(const KdaArgs&, uint32_t, uint32_t, uint32_t) {}
__device__ __forceinline__ void stress_hold(const KdaArgs&, uint32_t) {}
#endif

}  // namespace monokda::gpu
