// The host half of kernel v2's in_proj probe (bench/probes/v2_inproj_probe.cu): the layout constants
// both halves share, the unit table, the weight packed into each CTA's run in the matrix unit's
// A-fragment order, and the fp32 host reference the proj check compares with.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace monokda::probe::v2 {

constexpr int D = 7168, N = 6288;
constexpr int kRanks = 8, kClusters = 15, kCtas = kRanks * kClusters;
constexpr int kSliceCols = D / kRanks, kKSteps = kSliceCols / 16;  // 896 columns, 56 k-steps a slice
constexpr int kUnitRows = 64, kTileBytes = 512;                    // a 16×16 A tile: 32 lanes × 16 bytes

inline uint16_t to_bf16(float f) {  // round to nearest even
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float from_bf16(uint16_t b) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

struct Rng {
    uint64_t s;
    uint32_t next() { s ^= s << 13, s ^= s >> 7, s ^= s << 17; return uint32_t(s >> 11); }
    float uniform() { return float(next() & 0xffffff) / float(1 << 24) * 2.f - 1.f; }
    float normalish() { return (uniform() + uniform() + uniform()) * 1.f; }
};

struct Units {  // the unit table: cluster c's units are first[c] .. first[c+1]-1, each up to 4 tiles
    std::vector<int> first, row0, mt;  // row0: 4 a unit (a tile's first row; unused entries 0)
};

// Every cluster's 16-row groups: 64-row blocks dealt round-robin, then the tail's groups one by one,
// so that every cluster has 26 or 27; then cut into units of 4 tiles (any groups: a tile's rows are its
// own), the last of a cluster shorter. Whole 4-tile units keep every chunk KQ k-steps × 4 tiles.
inline Units deal_units() {
    Units t;
    std::vector<std::vector<int>> groups(kClusters);
    const int blocks = (N / kUnitRows) / kClusters * kClusters;  // 90: six rounds over 15 clusters
    for (int b = 0; b < blocks; ++b)
        for (int k = 0; k < 4; ++k) groups[b % kClusters].push_back(b * kUnitRows + 16 * k);
    int g = 0;
    for (int row = blocks * kUnitRows; row < N; row += 16, ++g) groups[g % kClusters].push_back(row);
    for (int c = 0; c < kClusters; ++c) {
        t.first.push_back(int(t.mt.size()));
        for (size_t i = 0; i < groups[c].size(); i += 4) {
            const int mt = int(std::min<size_t>(4, groups[c].size() - i));
            t.mt.push_back(mt);
            for (int k = 0; k < 4; ++k) t.row0.push_back(k < mt ? groups[c][i + k] : 0);
        }
    }
    t.first.push_back(int(t.mt.size()));
    return t;
}

// Each CTA's run: for its cluster's units, k-step by k-step, the unit's 16-row tiles of its slice in
// A-fragment order (lane g + 4c: rows g and g + 8, columns 2c, 2c + 1, 2c + 8, 2c + 9).
inline std::vector<uint16_t> pack(const std::vector<uint16_t>& w, const Units& t, std::vector<int>& off) {
    std::vector<uint16_t> out;
    off.assign(kCtas + 1, 0);
    for (int c = 0; c < kClusters; ++c)
        for (int r = 0; r < kRanks; ++r) {
            off[size_t(c * kRanks + r)] = int(out.size() * 2);
            for (int u = t.first[c]; u < t.first[c + 1]; ++u)
                for (int ks = 0; ks < kKSteps; ++ks)
                    for (int m = 0; m < t.mt[u]; ++m)
                        for (int lane = 0; lane < 32; ++lane) {
                            const int g = lane / 4, cq = lane % 4, rb = t.row0[size_t(u) * 4 + m], kb = r * kSliceCols + ks * 16;
                            const int rows[8] = {g, g, g + 8, g + 8, g, g, g + 8, g + 8};
                            const int cols[8] = {2 * cq, 2 * cq + 1, 2 * cq, 2 * cq + 1, 2 * cq + 8, 2 * cq + 9, 2 * cq + 8, 2 * cq + 9};
                            for (int e = 0; e < 8; ++e) out.push_back(w[size_t(rb + rows[e]) * D + kb + cols[e]]);
                        }
        }
    off[kCtas] = int(out.size() * 2);
    return out;
}

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
