// Thread-block clusters: the parts of Hopper that have no AMD counterpart (distributed shared memory,
// st.async completing on a peer's mbarrier, the cluster barrier, 1-D bulk copies into a ring), behind
// one capability constant. Code that uses them tests kHasClusters with `if constexpr`; nothing else
// in kernels/ names a vendor. Included after kernels/vendor/gpu.hpp.
#pragma once
#include "kernels/vendor/gpu.hpp"

namespace monokda::gpu {

#if MONOKDA_NVIDIA
constexpr bool kHasClusters = true;

__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t cluster_id() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t cluster_size() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}
// The shared::cluster address of `p` (this CTA's shared memory) in the CTA of rank `rank`.
__device__ __forceinline__ uint32_t peer_addr(const void* p, uint32_t rank) {
    uint32_t a;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_u32(p)), "r"(rank));
    return a;
}
// Stores into a peer's shared memory that count their bytes on the peer's mbarrier (both addresses
// from peer_addr): the peer's wait on that barrier sees the data, with no fence on either side.
__device__ __forceinline__ void st_async_u32(uint32_t addr, uint32_t v, uint32_t bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%0], %1, [%2];" ::"r"(addr), "r"(v), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void st_async_u2(uint32_t addr, uint32_t x, uint32_t y, uint32_t bar) {  // 8 bytes, bits as they are
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.u32 [%0], {%1, %2}, [%3];" ::"r"(addr), "r"(x), "r"(y),
                 "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void st_async_f2(uint32_t addr, float x, float y, uint32_t bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(addr), "f"(x),
                 "f"(y), "r"(bar)
                 : "memory");
}
// `count` arrivals on a peer's mbarrier. Relaxed: a release at cluster scope compiles to
// MEMBAR.ALL.GPU, which waits for this SM's bulk copies in flight (docs/kernel-v2.md); a consumer
// freeing a buffer it has read needs only its reads done, which the CTA-scope fence before gives.
__device__ __forceinline__ void mbar_arrive_peer(uint32_t bar, uint32_t count = 1) {
    asm volatile("fence.acq_rel.cta;\n mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0], %1;" ::"r"(bar), "r"(count)
                 : "memory");
}
// The same with release semantics at cluster scope (measured against the relaxed form only).
__device__ __forceinline__ void mbar_arrive_peer_release(uint32_t bar, uint32_t count = 1) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// One arrival on this CTA's mbarrier (a consumer freeing a ring slot).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
// A wait on this CTA's mbarrier for a phase completed by peers (acquire at cluster scope).
__device__ __forceinline__ bool mbar_try_wait_cluster(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
    return done != 0;
}
// The same two waits without suspending: the phase's state now (a spin calls them in a loop), and
// try_wait with a suspend-time hint in ns (how long the thread may sleep before it looks again).
__device__ __forceinline__ bool mbar_test_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done)
                 : "r"(smem_u32(bar)), "r"(parity)
                 : "memory");
    return done != 0;
}
__device__ __forceinline__ bool mbar_test_wait_cluster(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
    return done != 0;
}
__device__ __forceinline__ bool mbar_try_wait_hint(uint64_t* bar, uint32_t parity, uint32_t ns) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity), "r"(ns)
        : "memory");
    return done != 0;
}
// Plain and ordered accesses to a peer's shared memory.
__device__ __forceinline__ void st_peer_u32(uint32_t addr, uint32_t v) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void st_release_peer_u32(uint32_t addr, uint32_t v) {
    asm volatile("st.release.cluster.shared::cluster.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_acquire_cluster_u32(const uint32_t* p) {  // this CTA's shared memory
    uint32_t v;
    asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(smem_u32(p)) : "memory");
    return v;
}
__device__ __forceinline__ uint32_t ld_relaxed_cluster_u32(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.relaxed.cluster.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(smem_u32(p)) : "memory");
    return v;
}
// The cluster barrier, split: every thread of every CTA arrives, then waits (warp-aligned forms).
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_sync() { cluster_arrive(); cluster_wait(); }
// A contiguous run of global memory (16-byte aligned, a multiple of 16 bytes) into this CTA's shared
// memory through the copy engine, counted in bytes on `bar`.
__device__ __forceinline__ void bulk_copy_1d(void* smem, const void* gmem, uint32_t bytes, uint64_t* bar, uint64_t policy) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
            smem_u32(smem)),
        "l"(gmem), "r"(bytes), "r"(smem_u32(bar)), "l"(policy)
        : "memory");
}
// Shared memory back to global memory through the copy engine (the state a token); the group is
// waited for with bulk_wait_read before the source is written again.
__device__ __forceinline__ void bulk_store_1d(void* gmem, const void* smem, uint32_t bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem), "r"(smem_u32(smem)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int Pending> __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(Pending) : "memory");
}
// Hands the registers a warpgroup does not need to the ones that do (takes effect with a register
// cap at entry: __launch_bounds__(threads, 1)).
template <int Regs> __device__ __forceinline__ void regs_release() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs)); }
template <int Regs> __device__ __forceinline__ void regs_claim() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs)); }
#else
constexpr bool kHasClusters = false;  // gfx90a / gfx940: no clusters; kernels that need them are NVIDIA-only
#endif

}  // namespace monokda::gpu
