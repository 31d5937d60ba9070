// monokda-gpc-probe: which SMs share a GPC, and whether an SM's share of the memory stream depends
// on where it sits.
//
// kda_pre's traces show the gemv pass's band CTAs splitting into a faster and a slower group at 1×1,
// the same CTAs (and SMs) in every launch (docs/decisions/0004-cta-placement.md). This probe asks
// the hardware two things:
//   topology: thread-block clusters never span GPCs, so launching clusters of 2, 4, 8 and 16 CTAs
//     (one CTA an SM) many times and joining the SMs that met in a cluster partitions the SMs into
//     their GPCs (a lower bound on each: SMs never seen together stay apart);
//   stream: a one-CTA-an-SM grid of 1024 threads, each CTA reading its own contiguous 4 MB with
//     16-byte loads, eight in flight a thread (128 KB a CTA, as much as kda_pre's weight stages hold),
//     on a chosen set of SMs: all of them; the 16 SMs of one GPC, or 8 of them (one a TPC); 8 SMs in
//     each GPC against 16 in each of four GPCs (the same 64 SMs' worth). Buffers rotate over 4 copies
//     so L2 never holds what is read.
// Usage: monokda-gpc-probe [REPS]  (default 10 launches a case; prints the GPCs, then each case's
// streaming SMs, the median of their per-SM rates and the rate of all of them together)
#include "kernels/vendor/gpu.hpp"  // sm_id, now_ns: the kernel's own shims

#include "bench/probes/probe_util.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;

using monokda::gpu::now_ns;
using monokda::gpu::sm_id;

constexpr int kThreads = 256;        // the cluster launches
constexpr int kStreamThreads = 1024;
constexpr size_t kPerCta = size_t(4) << 20;  // bytes a CTA streams
constexpr int kCopies = 4;

void check(cudaError_t e, const char* what) { probe::check("monokda-gpc-probe", e, what); }

__global__ void where(int* sm_of_block) {
    extern __shared__ unsigned char pad[];  // sized by the launch so one CTA fits an SM
    if (threadIdx.x == 0) {
        pad[0] = 0;
        sm_of_block[blockIdx.x] = int(sm_id());
    }
}

// CTA b streams its own kPerCta bytes if its SM is on (on_sm[smid]) and records its time (0: off).
__global__ void stream(const uint4* base, const int* on_sm, float* us, uint4* sink) {
    extern __shared__ unsigned char pad[];
    const int b = blockIdx.x;
    const uint32_t sm = sm_id();
    if (threadIdx.x == 0) us[b] = 0.f, pad[0] = 0;
    if (!on_sm[sm]) return;
    __syncthreads();
    const uint64_t t0 = now_ns();
    const uint4* p = base + size_t(b) * (kPerCta / 16);
    uint4 acc = make_uint4(0, 0, 0, 0);
    constexpr int kUnroll = 8;
    static_assert(kPerCta / 16 % (kStreamThreads * kUnroll) == 0, "whole rounds");
    for (size_t i = threadIdx.x; i < kPerCta / 16; i += size_t(kStreamThreads) * kUnroll) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) v[u] = __ldcs(p + i + size_t(u) * kStreamThreads);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) acc.x ^= v[u].x, acc.y ^= v[u].y, acc.z ^= v[u].z, acc.w ^= v[u].w;
    }
    __syncthreads();
    if (threadIdx.x == 0) us[b] = float(now_ns() - t0) * 1e-3f;
    if (acc.x == 0x12345678u) sink[threadIdx.x] = acc;  // keeps the loads
}

struct Dsu {
    std::vector<int> p;
    explicit Dsu(int n) : p(n) { std::iota(p.begin(), p.end(), 0); }
    int find(int x) { return p[x] == x ? x : p[x] = find(p[x]); }
    void join(int a, int b) { p[find(a)] = find(b); }
};

}  // namespace

int main(int argc, char** argv) {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "device properties");
    const int n_sm = prop.multiProcessorCount;
    const int smem = int(prop.sharedMemPerBlockOptin) - 1024;  // one CTA an SM
    check(cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
    check(cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), "cluster 16");
    int* d_sm = nullptr;
    check(cudaMalloc(&d_sm, 4096 * sizeof(int)), "alloc");

    // --- topology
    Dsu dsu(n_sm);
    for (int cs : {2, 4, 8, 16}) {
        cudaLaunchConfig_t cfg{};
        cudaLaunchAttribute attr{};
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = unsigned(cs), attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
        cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = size_t(smem), cfg.attrs = &attr, cfg.numAttrs = 1;
        cfg.gridDim = dim3(unsigned(cs));
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, where, &cfg) != cudaSuccess || clusters == 0) {
            cudaGetLastError();
            std::printf("cluster size %d: not launchable\n", cs);
            continue;
        }
        cfg.gridDim = dim3(unsigned(clusters * cs));
        std::printf("cluster size %d: %d clusters at once (%d SMs)\n", cs, clusters, clusters * cs);
        std::vector<int> sm(size_t(clusters) * cs);
        for (int r = 0; r < 40; ++r) {
            check(cudaLaunchKernelEx(&cfg, where, d_sm), "cluster launch");
            check(cudaMemcpy(sm.data(), d_sm, sm.size() * sizeof(int), cudaMemcpyDeviceToHost), "copy");
            for (int c = 0; c < clusters; ++c)
                for (int i = 1; i < cs; ++i) dsu.join(sm[size_t(c) * cs], sm[size_t(c) * cs + i]);
        }
    }
    std::vector<int> gpc_of(n_sm, -1);
    std::vector<std::vector<int>> gpcs;
    for (int s = 0; s < n_sm; ++s) {
        const int root = dsu.find(s);
        int g = -1;
        for (size_t k = 0; k < gpcs.size(); ++k)
            if (dsu.find(gpcs[k][0]) == root) g = int(k);
        if (g < 0) g = int(gpcs.size()), gpcs.push_back({});
        gpcs[size_t(g)].push_back(s), gpc_of[size_t(s)] = g;
    }
    for (size_t g = 0; g < gpcs.size(); ++g) {
        std::printf("gpc %zu (%zu SMs):", g, gpcs[g].size());
        for (int s : gpcs[g]) std::printf(" %d", s);
        std::printf("\n");
    }

    // --- stream
    const size_t bytes = size_t(n_sm) * kPerCta;
    std::vector<uint4*> bufs(kCopies);
    for (auto& b : bufs) {
        check(cudaMalloc(&b, bytes), "stream buffer");
        check(cudaMemset(b, 1, bytes), "fill");
    }
    int* d_on = nullptr;
    float* d_us = nullptr;
    uint4* d_sink = nullptr;
    check(cudaMalloc(&d_on, size_t(n_sm) * sizeof(int)), "alloc");
    check(cudaMalloc(&d_us, size_t(n_sm) * sizeof(float)), "alloc");
    check(cudaMalloc(&d_sink, kStreamThreads * sizeof(uint4)), "alloc");
    struct Case {
        std::string name;
        std::vector<int> on;  // by SM
    };
    std::vector<Case> cases;
    cases.push_back({"all SMs", std::vector<int>(size_t(n_sm), 1)});
    std::vector<size_t> full;  // GPCs with 16 SMs
    for (size_t g = 0; g < gpcs.size(); ++g)
        if (gpcs[g].size() == 16) full.push_back(g);
    for (size_t k = 0; k < std::min<size_t>(2, full.size()); ++k) {
        const auto& gs = gpcs[full[k]];
        std::vector<int> on16(size_t(n_sm), 0), on8(size_t(n_sm), 0);
        for (size_t i = 0; i < gs.size(); ++i) on16[size_t(gs[i])] = 1, on8[size_t(gs[i])] = i % 2 == 0;
        cases.push_back({"gpc " + std::to_string(full[k]) + ", 16 SMs", on16});
        cases.push_back({"gpc " + std::to_string(full[k]) + ", 8 SMs (one a TPC)", on8});
    }
    if (full.size() >= 4) {
        std::vector<int> spread(size_t(n_sm), 0), packed(size_t(n_sm), 0);
        int n_spread = 0;
        for (size_t g : full)
            for (size_t i = 0; i < gpcs[g].size(); i += 2)
                if (n_spread < 64) spread[size_t(gpcs[g][i])] = 1, ++n_spread;
        for (size_t k = 0; k < 4; ++k)
            for (int sm : gpcs[full[k]]) packed[size_t(sm)] = 1;
        cases.push_back({std::to_string(n_spread) + " SMs, 8 in each of " + std::to_string((n_spread + 7) / 8) + " GPCs",
                         spread});
        cases.push_back({"64 SMs, 16 in each of 4 GPCs", packed});
    }
    check(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
    std::vector<float> us(static_cast<size_t>(n_sm));
    std::printf("case | SMs streaming | median µs a SM (4 MB) | median GB/s a SM | all together TB/s (median launch)\n");
    for (const Case& cs : cases) {
        check(cudaMemcpy(d_on, cs.on.data(), size_t(n_sm) * sizeof(int), cudaMemcpyHostToDevice), "on");
        std::vector<float> per_sm, total;
        int n_on = 0;
        for (int v : cs.on) n_on += v;
        for (int r = 0; r < reps; ++r) {
            stream<<<n_sm, kStreamThreads, size_t(smem)>>>(bufs[size_t(r % kCopies)], d_on, d_us, d_sink);
            check(cudaDeviceSynchronize(), "stream");
            check(cudaMemcpy(us.data(), d_us, us.size() * sizeof(float), cudaMemcpyDeviceToHost), "copy");
            float slowest = 0.f;
            for (float u : us)
                if (u > 0.f) per_sm.push_back(u), slowest = std::max(slowest, u);
            if (slowest > 0.f) total.push_back(float(double(n_on) * double(kPerCta) / (double(slowest) * 1e6)));
        }
        const float m = median(per_sm);
        std::printf("%s | %d | %.2f | %.1f | %.2f\n", cs.name.c_str(), n_on, m, double(kPerCta) / (double(m) * 1e3),
                    median(total));
    }
    return 0;
}
