// The host half of kernel v2's in_proj probe (bench/probes/v2_inproj_probe.cu): the shape the kernel
// is compiled for (the production shape, on the plan's 15 clusters of 8: the probe refuses a plan of
// another), bf16 conversions, the probe's random draws, and the fp32 host reference the proj check
// compares with. The unit table, the runs and the packed weight are the plan's (core/plan_v2.hpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "core/plan_v2.hpp"
#include "core/shape.hpp"

namespace monokda::probe::v2 {

constexpr int D = kProductionShape.D, N = kProductionShape.N();
constexpr int kRanks = 8, kClusters = 15, kCtas = kRanks * kClusters;  // PlanV2Params' default clusters
constexpr int kSliceCols = D / kRanks, kKSteps = kSliceCols / kV2KStep;  // 896 columns, 56 k-steps a slice
constexpr int kTileBytes = kV2TileBytes;                                 // a 16×16 A tile: 32 lanes × 16 bytes

// the project's bf16 (core/bf16.hpp: round to nearest even), as bits
inline uint16_t to_bf16(float f) { return bf16::round(f).bits; }
inline float from_bf16(uint16_t b) { return bf16::from_bits(b).to_float(); }

struct Rng {
    uint64_t s;
    uint32_t next() { s ^= s << 13, s ^= s >> 7, s ^= s << 17; return uint32_t(s >> 11); }
    float uniform() { return float(next() & 0xffffff) / float(1 << 24) * 2.f - 1.f; }
    float normalish() { return (uniform() + uniform() + uniform()) * 1.f; }
};

// fp32 host reference, sequential over d (the reference path's default order), rounded once:
// proj[s][n] for S rows of x ([S][D] bf16) and the weight ([N][D] bf16).
inline std::vector<uint16_t> host_proj(const std::vector<uint16_t>& w, const std::vector<uint16_t>& x, int S) {
    std::vector<uint16_t> out(size_t(S) * N);
    std::vector<float> xf(size_t(S) * D), wf(size_t(N) * D);
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = from_bf16(x[i]);
    for (size_t i = 0; i < wf.size(); ++i) wf[i] = from_bf16(w[i]);
    const int T = int(std::max(1u, std::min(16u, std::thread::hardware_concurrency())));
    std::vector<std::thread> pool;
    for (int t = 0; t < T; ++t)
        pool.emplace_back([&, t] {
            for (int n = t; n < N; n += T)
                for (int s = 0; s < S; ++s) {
                    float acc = 0.f;
                    const float *xr = &xf[size_t(s) * D], *wr = &wf[size_t(n) * D];
                    for (int k = 0; k < D; ++k) acc += xr[k] * wr[k];  // built with -ffp-contract=off: no fused multiply-add
                    out[size_t(s) * N + n] = to_bf16(acc);
                }
        });
    for (auto& th : pool) th.join();
    return out;
}

}  // namespace monokda::probe::v2
