// monokda-v2-inproj-probe: kernel v2's in_proj on its own, at the footprint the kernel will have, to
// decide whether the design holds before the kernel is built (docs/kernel-v2.md).
//
// The design: 15 clusters of 8 CTAs (one CTA an SM, cooperative). Rank r of a cluster owns columns
// 896r .. 896r + 895 of D (its K-slice of x stays in shared memory). A cluster produces in_proj rows
// in units of four 16-row tiles (a table per cluster: 64-row blocks dealt round-robin, then the tail's
// 16-row groups, cut into 4-tile units, so that every cluster's rows end together). Each CTA streams its slices of its cluster's
// units as one contiguous byte run, packed on the host in the matrix unit's A-fragment order, through
// the copy engine (1-D bulk copies) into a ring of `stages` chunks from the launch's first instant (a
// chunk: 8 or 14 k-steps of a unit, all its tiles); it never waits for x to issue. Eight consumer
// warps (m-tile, k parity) take each chunk and run m16n8k16 products on their rows (x as the N side;
// the two warps of an m-tile take the even and the odd k-steps, summed in that order through shared
// memory); at a unit's end the even warp sends its fp32 partials to the rows' owner CTA (8 rows a
// rank) with st.async, counted on the owner's mbarrier; the owner's reducer warp sums the 8 ranks in
// rank order, rounds once (#3), stores proj, and frees the receive slot on every rank. So proj is
// deterministic and independent of S (every column's sum runs the same way whatever the other columns).
//
// Modes:
//   rate     stream only (consumers touch and free each chunk): the copy rate against chunk size
//            and depth, on the 15×8 clusters.
//   inproj   the whole unit at S = 1, 4, 16, 64 and the same ring settings: launch-to-last-proj time.
//   delay    inproj at S = 1 and 16 with x made late by 0..6 µs: how much of a late x the ring hides.
//   trace    one S = 1 launch's unit timeline (in_proj, without the products, without the weight loads).
//   check    proj against an fp32 host reference in sequential order (the reference path's), bit
//            identity (teacher-forced: the same bf16 x), and the same rows bit for bit at every S.
//   residency  cooperative launches of clusters of 1, 2, 4, 8, 16 at this footprint: how many fit.
// Usage: monokda-v2-inproj-probe [residency|rate|inproj|delay|trace|check|all] [REPS]
#include "kernels/vendor/gpu.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probes/probe_util.hpp"
#include "bench/probes/probe_wait.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace probe = monokda::probe;
using probe::median;
using namespace monokda::gpu;

constexpr int D = 7168, N = 6288;
constexpr int kRanks = 8, kClusters = 15, kCtas = kRanks * kClusters;
constexpr int kSliceCols = D / kRanks, kKSteps = kSliceCols / 16;  // 896 columns, 56 k-steps a slice
constexpr int kUnitRows = 64, kTileBytes = 512;                    // a 16×16 A tile: 32 lanes × 16 bytes
constexpr int kThreads = 384;  // warp 0 producer, warp 1 reducer, warps 2-3 spare, warps 4-11 consumers
constexpr int kConsumers = 8, kFirstConsumer = 4;
constexpr int kXStride = kSliceCols + 8;  // x row in shared memory (bf16): 16-byte rows, no bank conflicts
constexpr int kMaxStages = 16, kMaxSlots = 4;
constexpr int kSmemMax = 227 * 1024;
constexpr int kCopies = 4;  // weight copies rotated so that L2 never holds the one read

void check(cudaError_t e, const char* what) { probe::check("monokda-v2-inproj-probe", e, what); }

struct Args {
    const unsigned char* w;       // packed weight, one copy
    const int* stream_off;        // [kCtas + 1] byte offsets of each CTA's run (multiples of 512)
    const int* unit_first;        // [kClusters + 1] into the unit arrays
    const int* unit_row0;         // [unit][4]: the first in_proj row of each of the unit's 16-row tiles
    const int* unit_mt;           // 16-row tiles of each unit (1..4)
    const uint16_t* x;            // [S][D] bf16
    uint16_t* proj;               // [S][N] bf16
    unsigned long long* stamps;   // [kCtas][8]
    int S, chunk, stages, slots;  // chunk: the ring's slot bytes, KQ · 4 tiles (KQ 8 or 14)
    int compute;                  // 0 stream only; 1 in_proj; 2 in_proj without the products; 3 without the weight loads
    int release_free;             // free the receive slots with a release arrive (else relaxed, after a CTA fence)
    unsigned long long x_delay_ns;
};

enum Stamp { kEntry, kFirstChunk, kLastChunk, kXReady, kLastProj, kExit, kSynced, kCycles, kUnit0 };
// per unit u (trace mode): kUnit0 + 4u + {0: m-tile 0's even warp done with its k-steps, 1: its partials
// sent, 2: the reducer saw the unit's partials, 3: the reducer freed the slot}
constexpr int kMaxTracedUnits = 16, kStamps = kUnit0 + 4 * kMaxTracedUnits;

struct Smem {  // offsets into dynamic shared memory
    int ring, x, recv, red, bytes;
    __host__ __device__ static Smem layout(int S, int chunk, int stages, int slots) {
        const int nt = (S + 7) / 8;
        Smem s{};
        s.ring = 0;
        s.x = stages * chunk;
        s.recv = s.x + nt * 8 * kXStride * 2;
        s.red = s.recv + slots * kRanks * 8 * nt * 8 * 4;
        s.bytes = s.red + 4 * 32 * nt * 4 * 4;  // the odd k-steps' partials, a warp pair an m-tile
        return s;
    }
};

__device__ __forceinline__ uint16_t bf16_rne(float f) {  // #3: round to nearest even
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// KQ k-steps a chunk: a unit of mt tiles is kKSteps / KQ chunks of KQ·mt tiles (the host's packing
// order, [k-step][m-tile], so a chunk is contiguous); the ring's slots hold KQ·4 tiles.
template <int KQ>
__global__ void __cluster_dims__(kRanks, 1, 1) __launch_bounds__(kThreads, 1) inproj(const Args a) {
    static_assert(kKSteps % KQ == 0 && KQ % 2 == 0, "a unit is whole chunks, each split evenly by parity");
    constexpr int kSlotBytes = KQ * 4 * kTileBytes, kChunksPerUnit = kKSteps / KQ;
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ uint64_t full[kMaxStages], empty[kMaxStages], recv_bar[kMaxSlots], free_bar[kMaxSlots];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rank = int(cluster_rank()), cl = int(cluster_id()), cta = cl * kRanks + rank;
    const Smem L = Smem::layout(a.S, kSlotBytes, a.stages, a.slots);
    const int nt = (a.S + 7) / 8;
    unsigned long long* st = a.stamps + size_t(cta) * kStamps;
    const unsigned long long t0 = now_ns();
    const long long c0 = clock64();
    if (threadIdx.x == 0) {
        st[kEntry] = t0;
        for (int s = 0; s < a.stages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], kConsumers);
        for (int s = 0; s < a.slots; ++s) mbar_init(&recv_bar[s], 1), mbar_init(&free_bar[s], kRanks);
        mbar_init_fence();
    }
    cluster_sync();  // every rank's barriers exist before a peer sends to them
    if (threadIdx.x == 0) st[kSynced] = now_ns();

    const int u0 = a.unit_first[cl], units = a.unit_first[cl + 1] - u0;
    const unsigned char* run = a.w + a.stream_off[cta];

    if (warp == 0) {  // the producer: the CTA's run, chunk by chunk, from the first instant
        if (lane == 0) {  // slot and phase kept as counters: a division by a run-time value is ~25 instructions
            const uint64_t policy = l2_policy(true);
            int s = 0, round = 0, off = 0;
            for (int u = 0; u < units; ++u) {
                const int bytes = KQ * a.unit_mt[u0 + u] * kTileBytes;
                for (int q = 0; q < kChunksPerUnit; ++q, off += bytes) {
                    if (round > 0) probe::spin([&] { return mbar_try_wait(&empty[s], uint32_t(round - 1) & 1u); });
                    mbar_arrive_expect(&full[s], uint32_t(bytes));
                    bulk_copy_1d(smem + L.ring + size_t(s) * kSlotBytes, run + off, uint32_t(bytes), &full[s], policy);
                    if (++s == a.stages) s = 0, ++round;
                }
            }
        }
    } else if (warp == 1 && a.compute) {  // the reducer: this rank's 8 rows of every unit it owns rows in
        const float* recv = reinterpret_cast<const float*>(smem + L.recv);
        uint32_t phase = 0;  // bit s: parity of recv_bar[s]'s next phase
        for (int u = 0; u < units; ++u) {
            const int s = u % a.slots, mt = a.unit_mt[u0 + u], row0 = a.unit_row0[(u0 + u) * 4 + rank / 2] + 8 * (rank % 2);
            if (rank >= 2 * mt) continue;  // a unit of mt tiles has 2·mt owners
            const bool traced = lane == 0 && u < kMaxTracedUnits;
            if (lane == 0) mbar_arrive_expect(&recv_bar[s], uint32_t(kRanks * 8 * nt * 8 * 4));
            probe::spin([&] { return mbar_try_wait_cluster(&recv_bar[s], (phase >> s) & 1u); });
            phase ^= 1u << s;
            if (traced) st[kUnit0 + 4 * u + 2] = now_ns();
            const float* slot = recv + size_t(s) * kRanks * 8 * nt * 8;
            for (int col = lane; col < a.S; col += 32) {
                uint32_t packed[4];
#pragma unroll
                for (int i = 0; i < 8; ++i) {
                    float acc = slot[(0 * 8 + i) * nt * 8 + col];
                    for (int src = 1; src < kRanks; ++src) acc += slot[(src * 8 + i) * nt * 8 + col];
                    const uint32_t b = bf16_rne(acc);
                    packed[i / 2] = i % 2 ? (packed[i / 2] | b << 16) : b;
                }
                *reinterpret_cast<uint4*>(a.proj + size_t(col) * N + row0) =
                    make_uint4(packed[0], packed[1], packed[2], packed[3]);
            }
            __syncwarp();
            // slot s free on every rank: kRanks arrivals a use whatever the owners (rank 0 makes up the rest)
            if (lane < kRanks) {
                const uint32_t bar = peer_addr(&free_bar[s], uint32_t(lane)), n = rank == 0 ? 9u - 2u * mt : 1u;
                if (a.release_free) mbar_arrive_peer_release(bar, n);
                else mbar_arrive_peer(bar, n);
            }
            if (traced) st[kUnit0 + 4 * u + 3] = now_ns();
        }
        if (lane == 0) st[kLastProj] = now_ns();
    } else if (warp >= kFirstConsumer) {  // the consumers
        const int cw = warp - kFirstConsumer, m = cw / 2, half = cw % 2;
        uint16_t* xs = reinterpret_cast<uint16_t*>(smem + L.x);
        if (a.compute) {  // this rank's slice of x, S rows (zeros up to the n-tile)
            while (now_ns() - t0 < a.x_delay_ns) {}
            for (int i = threadIdx.x - kFirstConsumer * 32; i < nt * 8 * (kSliceCols / 8); i += kConsumers * 32) {
                const int r = i / (kSliceCols / 8), q = i % (kSliceCols / 8);
                uint4 v = make_uint4(0, 0, 0, 0);
                if (r < a.S) v = *reinterpret_cast<const uint4*>(a.x + size_t(r) * D + rank * kSliceCols + q * 8);
                *reinterpret_cast<uint4*>(xs + r * kXStride + q * 8) = v;
            }
            team_bar(1, kConsumers * 32);
            if (threadIdx.x == kFirstConsumer * 32) st[kXReady] = now_ns();
        }
        int slot = 0;
        uint32_t phase = 0;
        auto take = [&] {  // wait for the next chunk: its address
            probe::spin([&] { return mbar_try_wait(&full[slot], phase); });
            return smem + L.ring + size_t(slot) * kSlotBytes;
        };
        auto give = [&] {  // free it
            if (lane == 0) mbar_arrive(&empty[slot]);
            if (++slot == a.stages) slot = 0, phase ^= 1u;
        };
        const int g = lane / 4, c = lane % 4;
        float* recv = reinterpret_cast<float*>(smem + L.recv);
        float* red = reinterpret_cast<float*>(smem + L.red) + (m * 32 + lane) * nt * 4;
        for (int u = 0; u < units; ++u) {
            const int mt = a.unit_mt[u0 + u], s = u % a.slots;
            // warp (m, half): the m-tile's k-steps of parity `half`, every n-tile; the same split
            // whatever S, so a column's sum runs the same way at every S
            float acc[8][4] = {};
            for (int q = 0; q < kChunksPerUnit; ++q) {
                const unsigned char* chunk = take();
                if (u == 0 && q == 0 && cw == 0 && lane == 0) st[kFirstChunk] = now_ns();
                if (a.compute && m < mt) {
                    uint4 w[KQ / 2];  // this warp's KQ/2 tiles of the chunk, loaded before any product
#pragma unroll
                    for (int i = 0; i < KQ / 2; ++i) {
                        const unsigned char* p = chunk + ((2 * i + half) * mt + m) * kTileBytes + lane * 16;
                        w[i] = a.compute == 3 ? make_uint4(lane, i, 0, 0) : *reinterpret_cast<const uint4*>(p);
                    }
#pragma unroll
                    for (int i = 0; i < KQ / 2; ++i) {
                        const int ks = q * KQ + 2 * i + half;
#pragma unroll
                        for (int t = 0; t < 8; ++t) {
                            if (t >= nt) break;
                            uint32_t b[2];
                            ldmatrix_x2(b, xs + (t * 8 + lane % 8) * kXStride + ks * 16 + (lane / 8) % 2 * 8);
                            if (a.compute == 2) acc[t][0] += __uint_as_float((w[i].x ^ b[0]) & 0x3f800000u);
                            else mma_bf16_16816(acc[t], w[i].x, w[i].y, w[i].z, w[i].w, b[0], b[1]);
                        }
                    }
                } else if (!a.compute) {
                    const uint32_t touch = *reinterpret_cast<const uint32_t*>(chunk + lane * 4);
                    asm volatile("" ::"r"(touch));  // the chunk is read
                }
                give();
            }
            if (!a.compute || m >= mt) continue;
            const bool traced = cw == 0 && lane == 0 && u < kMaxTracedUnits;
            if (traced) st[kUnit0 + 4 * u] = now_ns();
            const int pair_bar = 2 + m;  // named barriers 2..5: the two warps of m-tile m
            if (half == 1) {
#pragma unroll
                for (int t = 0; t < 8; ++t)
                    if (t < nt) *reinterpret_cast<float4*>(red + t * 4) = make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
            }
            asm volatile("bar.sync %0, 64;" ::"r"(pair_bar) : "memory");
            if (half == 0) {  // even + odd, then the unit's partials to their owners: rows g (rank 2m), g + 8 (2m + 1)
#pragma unroll
                for (int t = 0; t < 8; ++t)
                    if (t < nt) {
                        const float4 o = *reinterpret_cast<const float4*>(red + t * 4);
                        acc[t][0] += o.x, acc[t][1] += o.y, acc[t][2] += o.z, acc[t][3] += o.w;
                    }
            }
            asm volatile("bar.sync %0, 64;" ::"r"(pair_bar) : "memory");  // red may be written again
            if (half == 0) {
                if (u >= a.slots)
                    probe::spin([&] { return mbar_try_wait_cluster(&free_bar[s], uint32_t(u / a.slots - 1) & 1u); });
                float* rs = recv + size_t(s) * kRanks * 8 * nt * 8;
#pragma unroll
                for (int t = 0; t < 8; ++t) {
                    if (t >= nt) break;
                    float* lo = rs + (rank * 8 + g) * nt * 8 + t * 8 + 2 * c;
                    st_async_f2(peer_addr(lo, uint32_t(2 * m)), acc[t][0], acc[t][1], peer_addr(&recv_bar[s], uint32_t(2 * m)));
                    st_async_f2(peer_addr(lo, uint32_t(2 * m + 1)), acc[t][2], acc[t][3],
                                peer_addr(&recv_bar[s], uint32_t(2 * m + 1)));
                }
                if (traced) st[kUnit0 + 4 * u + 1] = now_ns();
            }
        }
        if (cw == 0 && lane == 0) st[kLastChunk] = now_ns();
    }
    __syncthreads();
    cluster_sync();  // no rank leaves while a peer may still send to it
    if (threadIdx.x == 0) st[kExit] = now_ns(), st[kCycles] = (unsigned long long)(clock64() - c0);
}

// For the residency question: a kernel of the same footprint, cluster size chosen at launch.
__global__ void __launch_bounds__(kThreads, 1) footprint(int* out) {
    extern __shared__ __align__(1024) unsigned char smem[];
    if (threadIdx.x == 0) smem[0] = 1, out[blockIdx.x] = int(sm_id());
}

// ---- host ----

uint16_t to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t b) {
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
// own), the last of a cluster shorter. Whole 4-tile units keep every chunk 8 k-steps × 4 tiles.
Units deal_units() {
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
std::vector<uint16_t> pack(const std::vector<uint16_t>& w, const Units& t, std::vector<int>& off) {
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

struct Device {
    Units units;
    std::vector<uint16_t> w, x;
    unsigned char* d_w = nullptr;  // kCopies packed copies
    size_t packed_bytes = 0;
    int *d_off, *d_first, *d_row0, *d_mt;
    uint16_t *d_x, *d_proj;
    unsigned long long* d_stamps;
};

Device setup() {
    Device d;
    d.units = deal_units();
    Rng rng{0x9e3779b97f4a7c15ull};
    d.w.resize(size_t(N) * D);
    for (auto& v : d.w) v = to_bf16(rng.uniform() * 0.03f);
    for (int r = 6284; r < N; ++r)  // the four zero pad rows
        std::fill(d.w.begin() + size_t(r) * D, d.w.begin() + size_t(r + 1) * D, uint16_t(0));
    d.x.resize(size_t(64) * D);
    for (auto& v : d.x) v = to_bf16(rng.normalish());
    std::vector<int> off;
    const std::vector<uint16_t> packed = pack(d.w, d.units, off);
    d.packed_bytes = packed.size() * 2;
    check(cudaMalloc(&d.d_w, d.packed_bytes * kCopies), "weight");
    for (int k = 0; k < kCopies; ++k)
        check(cudaMemcpy(d.d_w + k * d.packed_bytes, packed.data(), d.packed_bytes, cudaMemcpyHostToDevice), "weight copy");
    auto up = [](int** p, const std::vector<int>& v) {
        check(cudaMalloc(p, v.size() * 4), "table");
        check(cudaMemcpy(*p, v.data(), v.size() * 4, cudaMemcpyHostToDevice), "table copy");
    };
    up(&d.d_off, off), up(&d.d_first, d.units.first), up(&d.d_row0, d.units.row0), up(&d.d_mt, d.units.mt);
    check(cudaMalloc(&d.d_x, d.x.size() * 2), "x");
    check(cudaMemcpy(d.d_x, d.x.data(), d.x.size() * 2, cudaMemcpyHostToDevice), "x copy");
    check(cudaMalloc(&d.d_proj, size_t(64) * N * 2), "proj");
    check(cudaMalloc(&d.d_stamps, size_t(kCtas) * kStamps * 8), "stamps");
    check(cudaFuncSetAttribute(inproj<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax - 4096), "smem attr");
    check(cudaFuncSetAttribute(inproj<14>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax - 4096), "smem attr");
    return d;
}

struct Case {  // one launch configuration
    int S, chunk, stages, slots, compute;
    unsigned long long delay_ns;
    int release_free;
};

struct Run {
    float event_us;   // median launch time by events
    float span_us;    // median of (last exit − first entry)
    float proj_us;    // median of (last proj stored − first entry)
    float skew_us;    // median of (last entry − first entry)
    float sync_us;    // median of (last CTA past the first cluster barrier − first entry)
    float chunk1_us;  // median of (the last CTA's first chunk − first entry)
    float bytes_tbs;  // packed bytes / span
    float mhz;        // median SM clock over the launch (CTA 0's cycles / its time)
    bool ok;
};

bool fits(const Case& c) {
    return (c.chunk == 8 * 4 * kTileBytes || c.chunk == 14 * 4 * kTileBytes) && c.stages <= kMaxStages && c.slots <= kMaxSlots &&
           Smem::layout(c.S, c.chunk, c.stages, c.slots).bytes <= kSmemMax - 4096;
}

Run run(Device& d, const Case& c, int reps) {
    Run out{};
    if (!fits(c)) return out;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = size_t(Smem::layout(c.S, c.chunk, c.stages, c.slots).bytes);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative, attr[0].val.cooperative = 1;
    cfg.attrs = attr, cfg.numAttrs = 1;
    cudaEvent_t e0, e1;
    check(cudaEventCreate(&e0), "event"), check(cudaEventCreate(&e1), "event");
    std::vector<float> ev, span, proj, skew, sync, first, mhz;
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    for (int i = 0; i < reps + 2; ++i) {
        Args a{d.d_w + size_t(i % kCopies) * d.packed_bytes, d.d_off, d.d_first, d.d_row0, d.d_mt, d.d_x, d.d_proj,
               d.d_stamps, c.S, c.chunk, c.stages, c.slots, c.compute, c.release_free, c.delay_ns};
        check(cudaMemset(d.d_stamps, 0, h.size() * 8), "stamps clear");
        check(cudaEventRecord(e0), "record");
        check(c.chunk == 14 * 4 * kTileBytes ? cudaLaunchKernelEx(&cfg, inproj<14>, a) : cudaLaunchKernelEx(&cfg, inproj<8>, a),
              "launch");
        check(cudaEventRecord(e1), "record");
        check(cudaEventSynchronize(e1), "sync");
        check(cudaGetLastError(), "kernel");
        if (i < 2) continue;  // warm-up
        float ms;
        check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
        check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
        unsigned long long t0 = ~0ull, t_last_in = 0, t_exit = 0, t_proj = 0, t_first = 0, t_sync = 0;
        for (int k = 0; k < kCtas; ++k) {
            const unsigned long long* s = &h[size_t(k) * kStamps];
            t0 = std::min(t0, s[kEntry]), t_last_in = std::max(t_last_in, s[kEntry]), t_exit = std::max(t_exit, s[kExit]);
            t_proj = std::max(t_proj, s[kLastProj]), t_first = std::max(t_first, s[kFirstChunk]);
            t_sync = std::max(t_sync, s[kSynced]);
        }
        auto us = [&](unsigned long long t) { return float(t - t0) / 1000.f; };
        ev.push_back(ms * 1000.f), span.push_back(us(t_exit)), proj.push_back(c.compute ? us(t_proj) : 0.f);
        skew.push_back(us(t_last_in)), sync.push_back(us(t_sync)), first.push_back(us(t_first));
        mhz.push_back(float(h[kCycles]) / float(h[kExit] - h[kEntry]) * 1000.f);
    }
    out.event_us = median(ev), out.span_us = median(span), out.proj_us = median(proj), out.chunk1_us = median(first);
    out.skew_us = median(skew), out.sync_us = median(sync), out.mhz = median(mhz);
    out.bytes_tbs = float(d.packed_bytes) / (out.span_us * 1e-6f) / 1e12f;
    out.ok = true;
    check(cudaEventDestroy(e0), "event"), check(cudaEventDestroy(e1), "event");
    return out;
}

void print_row(const char* mode, const Case& c, const Run& r) {
    std::printf("%-7s S %2d  chunk %5d x %2d (%3d KB)  slots %d  %s  delay %4llu ns", mode, c.S, c.chunk, c.stages,
                c.chunk * c.stages / 1024, c.slots, c.release_free ? "rel" : "rlx", c.delay_ns);
    if (!r.ok) {
        std::printf("  does not fit\n");
        return;
    }
    std::printf("  event %6.1f  span %6.1f  proj %6.1f  skew %4.2f  synced %4.2f  1st chunk %4.2f us  %.2f TB/s  %4.0f MHz\n",
                r.event_us, r.span_us, r.proj_us, r.skew_us, r.sync_us, r.chunk1_us, r.bytes_tbs, r.mhz);
}

// fp32 host reference, sequential over d (the reference path's default order), rounded once.
std::vector<uint16_t> host_proj(const Device& d, int S) {
    std::vector<uint16_t> out(size_t(S) * N);
    std::vector<float> xf(size_t(S) * D), wf(size_t(N) * D);
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = from_bf16(d.x[i]);
    for (size_t i = 0; i < wf.size(); ++i) wf[i] = from_bf16(d.w[i]);
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

// Cooperative launches of clusters of 1..16 at v2's footprint: how many clusters the occupancy query
// allows, and whether that many launch and one more is refused.
void residency() {
    int* d_out;
    check(cudaMalloc(&d_out, 1024 * 4), "out");
    check(cudaFuncSetAttribute(footprint, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax - 4096), "smem attr");
    check(cudaFuncSetAttribute(footprint, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), "cluster 16");
    std::printf("residency at %d threads, %d B shared memory a CTA (cooperative, one CTA an SM):\n", kThreads, kSmemMax - 4096);
    for (int size : {1, 2, 4, 8, 16}) {
        cudaLaunchConfig_t cfg{};
        cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = size_t(kSmemMax - 4096);
        cudaLaunchAttribute attr[2];
        attr[0].id = cudaLaunchAttributeClusterDimension, attr[0].val.clusterDim.x = unsigned(size);
        attr[0].val.clusterDim.y = attr[0].val.clusterDim.z = 1;
        attr[1].id = cudaLaunchAttributeCooperative, attr[1].val.cooperative = 1;
        cfg.attrs = attr, cfg.numAttrs = 2;
        cfg.gridDim = dim3(unsigned(size));
        int n = 0;
        check(cudaOccupancyMaxActiveClusters(&n, footprint, &cfg), "max active clusters");
        cfg.gridDim = dim3(unsigned(n * size));
        const cudaError_t fit = cudaLaunchKernelEx(&cfg, footprint, d_out);
        cudaDeviceSynchronize();
        cfg.gridDim = dim3(unsigned((n + 1) * size));
        const cudaError_t over = cudaLaunchKernelEx(&cfg, footprint, d_out);
        cudaDeviceSynchronize();
        cudaGetLastError();
        std::printf("  clusters of %2d: %3d clusters (%3d SMs) by the query; that many: %s; one more: %s\n", size, n, n * size,
                    cudaGetErrorString(fit), cudaGetErrorString(over));
    }
    check(cudaFree(d_out), "free");
}

// One S = 1 launch's unit timeline on two ranks of cluster 0 (µs from the first entry).
void trace_mode(Device& d, int compute) {
    const Case c{1, 16384, 4, 4, compute, 0, 0};
    std::printf("trace, compute mode %d (1 in_proj, 2 no products, 3 no weight loads): span %.1f us\n", compute, run(d, c, 3).span_us);
    std::vector<unsigned long long> h(size_t(kCtas) * kStamps);
    check(cudaMemcpy(h.data(), d.d_stamps, h.size() * 8, cudaMemcpyDeviceToHost), "stamps");
    unsigned long long t0 = ~0ull;
    for (int k = 0; k < kCtas; ++k) t0 = std::min(t0, h[size_t(k) * kStamps + kEntry]);
    auto us = [&](unsigned long long t) { return t ? double(t - t0) / 1000.0 : -1.0; };
    for (int cta : {0, 7}) {
        const unsigned long long* s = &h[size_t(cta) * kStamps];
        std::printf("trace CTA %d: entry %.2f synced %.2f x %.2f first chunk %.2f last chunk %.2f last proj %.2f exit %.2f\n", cta,
                    us(s[kEntry]), us(s[kSynced]), us(s[kXReady]), us(s[kFirstChunk]), us(s[kLastChunk]), us(s[kLastProj]),
                    us(s[kExit]));
        for (int u = 0; u < kMaxTracedUnits; ++u) {
            const unsigned long long* t = s + kUnit0 + 4 * u;
            if (!t[0] && !t[2]) continue;
            std::printf("  unit %2d: k-steps done %7.2f  sent %7.2f  partials seen %7.2f  slot freed %7.2f\n", u, us(t[0]),
                        us(t[1]), us(t[2]), us(t[3]));
        }
    }
}

int check_mode(Device& d) {
    std::printf("check: proj against an fp32 sequential host reference; the same rows at every S; twice\n");
    std::vector<uint16_t> ref = host_proj(d, 64), first_rows;
    int bad = 0;
    for (int S : {1, 4, 16, 64}) {
        check(cudaMemset(d.d_proj, 0xff, size_t(64) * N * 2), "proj poison");
        const Case c{S, 16384, S >= 64 ? 3 : 6, 2, 1, 0, 0};
        if (!run(d, c, 1).ok) { std::printf("  S %d does not fit\n", S); ++bad; continue; }
        std::vector<uint16_t> got(size_t(S) * N), again(size_t(S) * N);
        check(cudaMemcpy(got.data(), d.d_proj, got.size() * 2, cudaMemcpyDeviceToHost), "proj");
        run(d, c, 1);
        check(cudaMemcpy(again.data(), d.d_proj, again.size() * 2, cudaMemcpyDeviceToHost), "proj");
        size_t same = 0, unwritten = 0, over1 = 0;
        int maxulp = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            if (got[i] == 0xffff) ++unwritten;
            const int du = std::abs(int(int16_t(got[i])) - int(int16_t(ref[i])));
            same += du == 0, maxulp = std::max(maxulp, du), over1 += du > 1;
        }
        const bool det = got == again;
        bool inv = true;
        if (first_rows.empty()) first_rows.assign(got.begin(), got.begin() + N);
        else inv = std::equal(first_rows.begin(), first_rows.end(), got.begin());
        std::printf("  S %2d: identical %.4f %%  max %d ulp (%zu over 1)  unwritten %zu  deterministic %s  row 0 as at S 1 %s\n",
                    S, 100.0 * double(same) / double(got.size()), maxulp, over1, unwritten, det ? "yes" : "NO",
                    inv ? "yes" : "NO");
        bad += unwritten > 0 || !det || !inv || double(same) / double(got.size()) < 0.995;
    }
    std::printf("check: %s\n", bad ? "FAIL" : "pass");
    return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "all";
    const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
    int dev = 0;
    check(cudaSetDevice(dev), "device");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, dev), "properties");
    std::printf("monokda-v2-inproj-probe on %s, %d SMs; weight %d x %d bf16 packed for %d clusters x %d\n", prop.name,
                prop.multiProcessorCount, N, D, kClusters, kRanks);
    Device d = setup();
    {
        int active = 0;
        cudaLaunchConfig_t cfg{};
        cfg.gridDim = dim3(kCtas), cfg.blockDim = dim3(kThreads), cfg.dynamicSmemBytes = size_t(kSmemMax - 4096);
        check(cudaOccupancyMaxActiveClusters(&active, inproj<8>, &cfg), "max active clusters");
        std::printf("clusters of %d co-resident at %d B shared memory, %d threads: %d (need %d)\n", kRanks, kSmemMax - 4096,
                    kThreads, active, kClusters);
    }
    int rc = 0;
    if (mode == "residency" || mode == "all") residency();
    constexpr int kq8 = 8 * 4 * kTileBytes, kq14 = 14 * 4 * kTileBytes;  // 16 KB and 28 KB slots
    if (mode == "rate" || mode == "all")
        for (int chunk : {kq8, kq14})
            for (int stages : {2, 3, 4, 6, 8, 12})
                if (chunk * stages <= 200 * 1024) {
                    const Case c{1, chunk, stages, 2, 0, 0, 0};
                    print_row("rate", c, run(d, c, reps));
                }
    if (mode == "inproj" || mode == "all")
        for (int S : {1, 4, 16, 64})
            for (auto [chunk, stages] : {std::pair{kq8, 3}, {kq8, 4}, {kq8, 6}, {kq8, 8}, {kq14, 2}, {kq14, 3}, {kq14, 5}})
                for (int rel : {0, 1}) {
                    if (rel && !(chunk == kq8 && stages == 4)) continue;  // the release form: one setting is enough
                    const Case c{S, chunk, stages, S >= 64 ? 2 : 4, 1, 0, rel};
                    if (fits(c)) print_row("inproj", c, run(d, c, reps));
                }
    if (mode == "delay" || mode == "all")
        for (int S : {1, 16})
            for (unsigned long long delay : {0ull, 1000ull, 2000ull, 3000ull, 4500ull, 6000ull}) {
                const Case c{S, 16384, 8, 4, 1, delay, 0};
                print_row("delay", c, run(d, c, reps));
            }
    if (mode == "trace" || mode == "all")
        for (int compute : {1, 2, 3}) trace_mode(d, compute);
    if (mode == "check" || mode == "all") rc |= check_mode(d);
    return rc;
}
