// monokda-v2-hop-probe: what a hand-off costs kernel v2, by kind, idle and beside the weight stream.
//
// 15 clusters of 8 CTAs, 384 threads and ~200 KB of shared memory each (v2's footprint), one CTA an
// SM, cooperative. Two CTAs ping-pong a word 200 times and the first times the round trips: through
// global memory (release/acquire, relaxed, relaxed after one fence) between CTAs of two clusters, or
// inside cluster 0 between ranks 0 and 1 (st.async completing on the peer's mbarrier; stores to the
// peer's shared memory with release/acquire), or the cluster barrier of cluster 0's 8 CTAs. Beside the
// stream, every other CTA's warp 0 streams its own part of 2 GiB through the copy engine (1-D bulk
// copies, 16 KB chunks, 8 in flight) into a ring that warp 4 frees, as v2's producers do; with "own
// copies" the two pinging CTAs stream as well. So it answers: which hops stay fast beside the stream,
// and whether an SM with copies in flight can release to global memory without waiting for them.
// Usage: monokda-v2-hop-probe [LAUNCHES]   (default 20; prints each case's median round trip in µs)
#include "kernels/vendor/gpu.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probes/probe_util.hpp"
#include "bench/probes/probe_wait.hpp"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;
using namespace monokda::gpu;

constexpr int kRanks = 8, kClusters = 15, kCtas = kRanks * kClusters, kThreads = 384;
constexpr int kChunk = 16384, kStages = 8, kSmem = kStages * kChunk + 64 * 1024;  // ring + the rest of v2's footprint
constexpr size_t kStreamBytes = size_t(2) << 30;
constexpr size_t kPerCta = kStreamBytes / kCtas / kChunk * kChunk;  // a CTA's part, chunk-aligned
constexpr int kIters = 200;

void check(cudaError_t e, const char* what) { probe::check("monokda-v2-hop-probe", e, what); }

// Orderings the kernel does not use, measured here only.
__device__ __forceinline__ void st_relaxed32(uint32_t* p, uint32_t v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

enum Kind : int { kGlobalAcqRel, kGlobalRelaxed, kGlobalFence, kStAsync, kDsmemAcqRel, kArriveRelaxed, kArriveRelease, kClusterBarrier, kKinds };
const char* kKindName[kKinds] = {"global release/acquire", "global relaxed", "global relaxed + fence.acq_rel",
                                 "st.async + mbarrier", "dsmem release/acquire", "peer arrive (cta fence, relaxed)",
                                 "peer arrive (release)", "cluster barrier (8 CTAs)"};

struct Args {
    const unsigned char* buf;  // the stream's source
    uint32_t* flags;           // [2] global ping-pong words (zeroed before each launch)
    uint32_t* stop;            // set when the timed CTA is done: the streams end
    float* us;                 // [1] round trip
    int kind, stream, own;
};

__device__ __forceinline__ bool pinger(int cl, int rank) { return cl == 0 && rank == 0; }
__device__ __forceinline__ bool ponger(int cl, int rank, int kind) {
    return kind <= kGlobalFence ? (cl == 1 && rank == 0) : (kind != kClusterBarrier && cl == 0 && rank == 1);
}

__global__ void __cluster_dims__(kRanks, 1, 1) __launch_bounds__(kThreads, 1) hops(const Args a) {
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ uint64_t full[kStages], empty[kStages], bar;
    __shared__ uint32_t word;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rank = int(cluster_rank()), cl = int(cluster_id()), cta = cl * kRanks + rank;
    const bool ping = pinger(cl, rank), pong = ponger(cl, rank, a.kind);
    const bool in_barrier = a.kind == kClusterBarrier && cl == 0;
    const bool streams = a.stream && !in_barrier && (!(ping || pong) || a.own);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], 1);
        mbar_init(&bar, 1);
        word = 0;
        mbar_init_fence();
    }
    cluster_sync();
    if (warp == 0 && streams) {  // the producer: chunks (its part of the buffer, over and over) until told to stop
        if (lane == 0) {
            const unsigned char* src = a.buf + kPerCta * size_t(cta);
            const int per_cta = int(kPerCta / kChunk);
            const uint64_t policy = l2_policy(true);
            int j = 0;
            for (bool stop = false; !stop; ++j) {
                const int s = j % kStages;
                if (j >= kStages)
                    while (!mbar_try_wait(&empty[s], uint32_t(j / kStages - 1) & 1u))
                        if ((stop = ld_relaxed32(a.stop) != 0)) break;
                if (stop || (j % kStages == 0 && ld_relaxed32(a.stop))) break;
                mbar_arrive_expect(&full[s], kChunk);
                bulk_copy_1d(smem + size_t(s) * kChunk, src + size_t(j % per_cta) * kChunk, kChunk, &full[s], policy);
            }
            for (int k = j > kStages ? j - kStages : 0; k < j; ++k)  // no copy still in flight at exit
                probe::spin([&] { return mbar_try_wait(&full[k % kStages], uint32_t(k / kStages) & 1u); });
        }
    } else if (warp == 4 && streams) {  // the consumer: frees each chunk as it lands
        for (int j = 0;; ++j) {
            const int s = j % kStages;
            bool stop = false;
            while (!mbar_try_wait(&full[s], uint32_t(j / kStages) & 1u))
                if ((stop = ld_relaxed32(a.stop) != 0)) break;
            if (stop) break;
            if (lane == 0) mbar_arrive(&empty[s]);
        }
    } else if (warp == 1 && lane == 0 && (ping || pong) && a.kind != kClusterBarrier) {
        const unsigned long long t0 = now_ns();
        const uint32_t peer = ping ? 1u : 0u;
        for (uint32_t i = 1; i <= kIters; ++i) {
            uint32_t* mine = a.flags + (ping ? 0 : 1);
            uint32_t* theirs = a.flags + (ping ? 1 : 0);
            if (ping) {  // send i, wait for the echo
                switch (a.kind) {
                case kGlobalAcqRel: st_release(theirs, i); probe::spin([&] { return ld_acquire(mine) == i; }); break;
                case kGlobalRelaxed: st_relaxed32(theirs, i); probe::spin([&] { return ld_relaxed32(mine) == i; }); break;
                case kGlobalFence: fence_acq_rel_gpu(); st_relaxed32(theirs, i); probe::spin([&] { return ld_relaxed32(mine) == i; }); fence_acq_rel_gpu(); break;
                case kStAsync:
                    mbar_arrive_expect(&bar, 4);
                    st_async_u32(peer_addr(&word, peer), i, peer_addr(&bar, peer));
                    probe::spin([&] { return mbar_try_wait_cluster(&bar, (i - 1) & 1u); });
                    break;
                case kDsmemAcqRel: st_release_peer_u32(peer_addr(&word, peer), i); probe::spin([&] { return ld_acquire_cluster_u32(&word) == i; }); break;
                case kArriveRelaxed:
                case kArriveRelease:
                    if (a.kind == kArriveRelaxed) mbar_arrive_peer(peer_addr(&bar, peer));
                    else mbar_arrive_peer_release(peer_addr(&bar, peer));
                    probe::spin([&] { return mbar_try_wait_cluster(&bar, (i - 1) & 1u); });
                    break;
                }
            } else {  // wait for i, echo it
                switch (a.kind) {
                case kGlobalAcqRel: probe::spin([&] { return ld_acquire(mine) == i; }); st_release(theirs, i); break;
                case kGlobalRelaxed: probe::spin([&] { return ld_relaxed32(mine) == i; }); st_relaxed32(theirs, i); break;
                case kGlobalFence: probe::spin([&] { return ld_relaxed32(mine) == i; }); fence_acq_rel_gpu(); st_relaxed32(theirs, i); break;
                case kStAsync:
                    mbar_arrive_expect(&bar, 4);
                    probe::spin([&] { return mbar_try_wait_cluster(&bar, (i - 1) & 1u); });
                    st_async_u32(peer_addr(&word, peer), i, peer_addr(&bar, peer));
                    break;
                case kDsmemAcqRel: probe::spin([&] { return ld_acquire_cluster_u32(&word) == i; }); st_release_peer_u32(peer_addr(&word, peer), i); break;
                case kArriveRelaxed:
                case kArriveRelease:
                    probe::spin([&] { return mbar_try_wait_cluster(&bar, (i - 1) & 1u); });
                    if (a.kind == kArriveRelaxed) mbar_arrive_peer(peer_addr(&bar, peer));
                    else mbar_arrive_peer_release(peer_addr(&bar, peer));
                    break;
                }
            }
        }
        if (ping) a.us[0] = float(now_ns() - t0) / 1000.f / kIters, st_relaxed32(a.stop, 1u);
    }
    if (in_barrier) {  // every thread of cluster 0's CTAs: kIters barriers in a row
        const unsigned long long t0 = now_ns();
        for (int i = 0; i < kIters; ++i) cluster_sync();
        if (ping && threadIdx.x == 0) a.us[0] = float(now_ns() - t0) / 1000.f / kIters, st_relaxed32(a.stop, 1u);
    }
    __syncthreads();
    cluster_sync();
}

}  // namespace

int main(int argc, char** argv) {
    const int launches = argc > 1 ? std::atoi(argv[1]) : 20;
    check(cudaSetDevice(0), "device");
    unsigned char* buf;
    uint32_t* words;
    float* us;
    check(cudaMalloc(&buf, kStreamBytes), "stream buffer");
    check(cudaMemset(buf, 1, kStreamBytes), "stream fill");
    check(cudaMalloc(&words, 16), "words"), check(cudaMalloc(&us, 4), "result");
    check(cudaFuncSetAttribute(hops, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem), "smem attr");
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = kSmem;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative, attr[0].val.cooperative = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    std::printf("monokda-v2-hop-probe: round trip (µs, median of %d launches of %d round trips)\n", launches, kIters);
    std::printf("%-32s %8s %14s %14s\n", "kind", "idle", "beside stream", "+ own copies");
    for (int kind = 0; kind < kKinds; ++kind) {
        float col[3];
        for (int env = 0; env < 3; ++env) {
            std::vector<float> v;
            for (int l = 0; l < launches + 1; ++l) {
                check(cudaMemset(words, 0, 16), "words clear");
                Args a{buf, words, words + 2, us, kind, env >= 1, env == 2};
                check(cudaLaunchKernelEx(&cfg, hops, a), "launch");
                check(cudaDeviceSynchronize(), "kernel");
                float h;
                check(cudaMemcpy(&h, us, 4, cudaMemcpyDeviceToHost), "result");
                if (l > 0) v.push_back(h);
            }
            col[env] = median(v);
        }
        std::printf("%-32s %8.3f %14.3f %14.3f\n", kKindName[kind], col[0], col[1], col[2]);
    }
    return 0;
}
