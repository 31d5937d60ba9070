// The one place that knows which GPU vendor the kernel is built for. Everything under kernels/
// includes this and speaks HIP; the NVIDIA build gets the HIP names through hip_to_cuda.hpp.
// Below the #if chain: the few shims with no one-to-one name (memory-model loads and stores,
// a wall clock, a short sleep), each written once per vendor.
#pragma once
#include <cstdint>

#include "kernels/kda_ordering.hpp"  // the copy ring's depth, the peek's PTX marker

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>
#define MONOKDA_AMD 1
#define MONOKDA_VENDOR "amd"
#elif defined(__CUDACC__)
#include "kernels/vendor/hip_to_cuda.hpp"
#define MONOKDA_NVIDIA 1
#define MONOKDA_VENDOR "nvidia"
#else
#error "kernels/: unknown GPU platform: compile with nvcc (NVIDIA) or hipcc (AMD)"
#endif

// The in_proj weight as the copy engine sees it (NVIDIA: tensor maps the launcher encodes, read by
// the gemv pass through their kernel-parameter address; AMD: unused, the weight is read directly).
#if MONOKDA_NVIDIA
#include <cuda.h>  // CUtensorMap and its enums (types only; the encoder is fetched at run time)
struct WeightMap {
    CUtensorMap band[6];  // band[i]: boxes of a gemv pass's band of i + 1 groups (16·(i + 1) rows; kda_gemv_batch.hpp)
    CUtensorMap x;       // x [S, D] (the step's hand-off) as boxes of S rows × 64 columns, re-encoded when x moves
};
#define MONOKDA_GRID_CONSTANT __grid_constant__
#else
struct WeightMap {
    int unused;
};
#define MONOKDA_GRID_CONSTANT
#endif

namespace monokda::gpu {

// Threads a wave executes in lockstep: gfx90a/gfx940 run wave64, NVIDIA warps are 32.
#if MONOKDA_AMD
constexpr int kWave = 64;
#else
constexpr int kWave = 32;
#endif

// A barrier over part of a CTA (NVIDIA named barriers 1 and 2, n threads, a multiple of 32), so
// two halves of a CTA can run separate instruction streams. AMD has only the workgroup barrier:
// its CTAs run one stream (kda_pre.cu, kKdaTeams).
#if MONOKDA_NVIDIA
// ids 1 and 2 only, as immediates: a barrier id in a register makes ptxas reserve all 16
__device__ __forceinline__ void team_bar(int id, int n) {
    if (id == 1) asm volatile("bar.sync 1, %0;" ::"r"(n) : "memory");
    else asm volatile("bar.sync 2, %0;" ::"r"(n) : "memory");
}
__device__ __forceinline__ bool team_bar_or(int id, int n, bool p) {
    uint32_t r;
    if (id == 1)
        asm volatile(
            "{\n .reg .pred pi, po;\n setp.ne.u32 pi, %1, 0;\n bar.red.or.pred po, 1, %2, pi;\n selp.u32 %0, 1, 0, po;\n}"
            : "=r"(r)
            : "r"(uint32_t(p)), "r"(n)
            : "memory");
    else
        asm volatile(
            "{\n .reg .pred pi, po;\n setp.ne.u32 pi, %1, 0;\n bar.red.or.pred po, 2, %2, pi;\n selp.u32 %0, 1, 0, po;\n}"
            : "=r"(r)
            : "r"(uint32_t(p)), "r"(n)
            : "memory");
    return r != 0;
}
#endif

// Device-scope acquire load / release store of a 32-bit flag; relaxed (single-copy atomic)
// 64-bit load / store of a tagged pair.
#if MONOKDA_AMD
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
    return __hip_atomic_load(p, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
    __hip_atomic_store(p, v, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ uint64_t ld_relaxed(const uint64_t* p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ void st_relaxed(uint64_t* p, uint64_t v) {
    __hip_atomic_store(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
__device__ __forceinline__ uint32_t ld_relaxed32(const uint32_t* p) {
    return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
// Four tagged words (p 16-byte aligned), each single-copy atomic: a relaxed load / store of each
__device__ __forceinline__ uint4 ld_relaxed128(const uint32_t* p) {
    return make_uint4(ld_relaxed32(p), ld_relaxed32(p + 1), ld_relaxed32(p + 2), ld_relaxed32(p + 3));
}
__device__ __forceinline__ void st_relaxed128(uint32_t* p, uint4 v) {
    __hip_atomic_store(p, v.x, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    __hip_atomic_store(p + 1, v.y, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    __hip_atomic_store(p + 2, v.z, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
    __hip_atomic_store(p + 3, v.w, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
// A flag read relaxed, re-read with ld_acquire before what it guards is read (kernels/kda_ordering.hpp)
__device__ __forceinline__ uint32_t ld_flag_peek(const uint32_t* p) { return ld_relaxed32(p); }
// A CTA's hand-off: every thread writes, the block barrier, one thread's release store; the reader
// acquires, the barrier, every thread reads. Here every thread also fences at device scope on both
// sides (not measured without: no AMD GPU to run on).
__device__ __forceinline__ void fence_before_cta_release() { __threadfence(); }
__device__ __forceinline__ void fence_after_cta_acquire() { __threadfence(); }
// s_memrealtime counts at a fixed 100 MHz on gfx9 parts.
__device__ __forceinline__ uint64_t now_ns() { return __builtin_amdgcn_s_memrealtime() * 10ull; }
__device__ __forceinline__ void pause(uint32_t = 0) { __builtin_amdgcn_s_sleep(2); }
// The compute unit this workgroup runs on (HW_ID's CU field; for traces only).
__device__ __forceinline__ uint32_t sm_id() { return (__builtin_amdgcn_s_getreg((4 << 0) | (0 << 6) | (31 << 11)) >> 8) & 0xf; }
// Bulk hand-off data (x, proj, qkv) is read after an agent-scope acquire, which invalidates the
// CU's L1, so a plain load is coherent.
__device__ __forceinline__ uint4 ld_cg16(const void* p) { return *static_cast<const uint4*>(p); }
__device__ __forceinline__ uint16_t ld_cg_u16(const void* p) { return *static_cast<const uint16_t*>(p); }
// No asynchronous global-to-LDS copy is used on AMD: the copy completes in place, so a later
// poll of this wave never queues behind it (a wave retires its loads in order).
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem) {
    *static_cast<uint4*>(smem) = *static_cast<const uint4*>(gmem);
}
__device__ __forceinline__ void async_commit() {}
template <int Pending> __device__ __forceinline__ void async_wait() {}
// gfx9 has no L2 prefetch instruction: the later load pays the trip
__device__ __forceinline__ void prefetch_l2(const void*) {}
__device__ __forceinline__ void prefetch_l1(const void*) {}
// Keeps a value the program computes only for its side effect on the instruction cache
__device__ __forceinline__ void keep(float v) { asm volatile("" ::"v"(v)); }
// A state row's 16 bytes (see the NVIDIA one; a plain store here: not measured on AMD)
__device__ __forceinline__ void st_state_f4(float* p, float x, float y, float z, float w) {
    *reinterpret_cast<float4*>(p) = make_float4(x, y, z, w);
}
#else
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint64_t ld_relaxed(const uint64_t* p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed(uint64_t* p, uint64_t v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"((unsigned long long)v) : "memory");
}
__device__ __forceinline__ uint32_t ld_relaxed32(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// Four tagged words (p 16-byte aligned), each single-copy atomic: one 16-byte relaxed access
__device__ __forceinline__ uint4 ld_relaxed128(const uint32_t* p) {
    uint4 v;
    asm volatile("ld.relaxed.gpu.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_relaxed128(uint32_t* p, uint4 v) {
    asm volatile("st.relaxed.gpu.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
// A flag read relaxed, re-read with ld_acquire before what it guards is read: the same load, marked
// in the PTX so that the ordering check tells it from a relaxed poll (kernels/kda_ordering.hpp)
__device__ __forceinline__ uint32_t ld_flag_peek(const uint32_t* p) {
    uint32_t v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1]; // " MONOKDA_PEEK_MARKER : "=r"(v) : "l"(p) : "memory");
    return v;
}
// A CTA's hand-off: every thread writes, the block barrier, one thread's release store (or: the
// reader's acquire, the barrier, every thread reads). The PTX memory model orders it as it stands
// (base causality order runs through the barrier into the release, and from the acquire through the
// barrier), so no fence: a device-scope fence in every thread as well made every hop, and every
// shape of the step, slower (docs/decisions/0010-hand-off-fences.md; monokda-hop-probe).
__device__ __forceinline__ void fence_before_cta_release() {}
__device__ __forceinline__ void fence_after_cta_acquire() {}
__device__ __forceinline__ uint4 ld_acquire128(const uint32_t* p) {  // four flags, p 16-byte aligned
    uint4 v;
    asm volatile("ld.acquire.gpu.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ void pause(uint32_t ns = 100) { __nanosleep(ns); }
// The multiprocessor this CTA runs on (for traces: which SMs a role's CTAs landed on).
__device__ __forceinline__ uint32_t sm_id() {
    uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}
// L2-coherent 16-byte load for data another CTA wrote in this launch.
__device__ __forceinline__ uint4 ld_cg16(const void* p) { return __ldcg(static_cast<const uint4*>(p)); }
__device__ __forceinline__ uint16_t ld_cg_u16(const void* p) { return __ldcg(static_cast<const unsigned short*>(p)); }
__device__ __forceinline__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
// cp.async: the copy is in flight while the thread goes on (polls, other loads).
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(smem)), "l"(gmem) : "memory");
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int Pending> __device__ __forceinline__ void async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}
// 16 bytes of a written recurrent state (p 16-byte aligned), as one store: a float4 assignment
// through a cast pointer came out of nvcc as four 4-byte stores. Streaming (.cs, evict-first): a
// step writes a state a token (50 MB at 8 × 8) that only a later step reads, and with the default
// policy those lines crowded L2; .cs made every shape of 8 rows and more faster on the H200
// (docs/decisions/0014-state-stores-streaming.md). No "memory" clobber: nothing in the launch
// reads a state back, and the clobber alone measured nothing either way.
__device__ __forceinline__ void st_state_f4(float* p, float x, float y, float z, float w) {
    asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(w));
}
// Brings a 128-byte line into L2 and goes on (nothing to wait for)
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
// Brings a line into this SM's L1 (and L2) and goes on
__device__ __forceinline__ void prefetch_l1(const void* p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }
// Keeps a value the program computes only for its side effect on the instruction cache
__device__ __forceinline__ void keep(float v) { asm volatile("" ::"f"(v)); }
// Hopper's bulk copy engine (TMA): global to shared, completion counted in bytes on an mbarrier.
// The copies do not go through the SM's load/store unit, so a weight stream kept deep in flight
// this way does not hold up the thread's own loads (x, flags) behind it.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_inval(uint64_t* bar) {
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
    return done != 0;
}
// Global memory this thread acquired through the generic proxy (another CTA's release) is about to
// be read by the copy engine (the async proxy).
__device__ __forceinline__ void fence_async_proxy_global() { asm volatile("fence.proxy.async.global;" ::: "memory"); }
// Shared memory the threads wrote or read before is about to be written by the copy engine.
__device__ __forceinline__ void fence_async_proxy() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// An L2 eviction policy for the copies below: evict_first for data read once a launch (the weight),
// so that it leaves before what the next launch reads again (code, states); evict_normal otherwise.
__device__ __forceinline__ uint64_t l2_policy(bool evict_first) {
    uint64_t p;
    if (evict_first) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    else asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
    return p;
}
// One box of a 2D tensor map (its address: a __grid_constant__ kernel parameter) at column c0, row c1.
__device__ __forceinline__ void bulk_tensor_2d(void* smem, const void* map, int c0, int c1, uint64_t* bar, uint64_t policy) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(
            smem_u32(smem)),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "l"(policy)
        : "memory");
}
// Four (x4) or two (x2) 8×8 b16 matrices from shared memory, one 16-byte row address a lane (lanes
// 8i..8i+7 give matrix i's rows); lane t receives row t / 4, elements 2(t % 4), 2(t % 4) + 1 of
// each: the matrix unit's fragment layout.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(row))
                 : "memory");
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(smem_u32(row))
                 : "memory");
}
// The matrix unit, one m16n8k16 tile: d += a·b, bf16 in, f32 accumulate, warp-wide. With
// g = lane / 4, c = lane % 4: a0..a3 = A (row g | g+8, k 2c | 2c+8), b0, b1 = B (k 2c | 2c+8,
// column g), d = (row g | g+8, column 2c, 2c+1).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                               uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif

}  // namespace monokda::gpu
