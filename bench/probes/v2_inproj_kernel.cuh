// The device half of kernel v2's in_proj probe (bench/probes/v2_inproj_probe.cu, whose header
// describes the design and the modes): the kernel's arguments, its shared-memory layout, the
// producer's walk over the CTA's weight run, and the kernel itself (producer, reducer, consumers).
// What the plan has (core/plan_v2.hpp) the kernel reads from it: the reducer its program and entries
// from the flat table, the producer and consumers the unit range, tile counts, run offsets and chunk
// sizes (as kernel parameters filled from the plan, or from the flat table); where it counts instead
// (ring slots and rounds, offsets, receive slots and free rounds), v2_inproj_walk.hpp's counters,
// which the host holds to the plan's tables.
#pragma once
#include "kernels/vendor/gpu.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probes/probe_wait.hpp"
#include "bench/probes/v2_inproj_host.hpp"
#include "bench/probes/v2_inproj_walk.hpp"
#include "bench/probes/v2_seam.cuh"
#include "bench/probes/v2_tail_hop.cuh"
#include "bench/probes/v2_tail_kernel.cuh"

#include <cstdint>

namespace monokda::probe::v2 {

using namespace monokda::gpu;

constexpr int kThreads = 384;  // warp 0 producer, warp 1 reducer, warps 2-3 spare (the seam's), warps 4-11 consumers
constexpr int kConsumers = 8, kFirstConsumer = 4;
constexpr int kXStride = kSliceCols + 8;  // x row in shared memory (bf16): 16-byte rows, no bank conflicts
constexpr int kMaxStages = 16, kMaxSlots = 4, kMaxUnits = 128, kMaxRunChunks = 64;
constexpr int kSmemMax = 227 * 1024;
constexpr int kCopies = 4;  // weight copies rotated so that L2 never holds the one read
// Args::tail: the plan's tail in the same launch (the fused mode): the reducer runs each PUBLISH of its
// program after the entry's REDUCE, warps 2-3 (the seam team's spare warps, after the seam) the CTA's
// tasks, POLL, DECAY, REC and NORM (v2_tail_kernel.cuh), on named barrier 7, joined by the consumer
// warps once the stream is done (run_tail), on the tail's V2TailLayout after in_proj's and the seam's
// shared memory
constexpr int kTailPlan = 8, kTailTeam = 64, kTailBar = 7;

struct Args {
    const unsigned char* w;       // packed weight, one copy (PlanV2::pack_weight)
    PlanV2View plan;              // the plan's flat table in device memory (PlanV2::serialize)
    // the plan's run offsets, unit ranges, tile counts and chunk sizes as kernel parameters too: a
    // CTA's first copy then waits for no global load (the host fills them from the plan)
    int run_off[kCtas], first_p[kClusters + 1];
    unsigned char mt_p[kMaxUnits];
    unsigned short bytes_p[kClusters][kMaxRunChunks];  // chunk j's bytes, the same on every rank of a cluster
    int param_tables;             // read the parameters above, else the flat table's entries
    int poll;                     // the waits: 0 try_wait (the thread may sleep), 1 test_wait in a spin, 2 try_wait with a 32 ns hint
    int fp_clusters;              // > 0: only clusters below it run `compute`, the others compute 4 (is the clock a CTA's own)
    int fp_warps;                 // > 0, compute 3: only consumer warps below it do the math
    int xfrag;                    // 0: no ldmatrix of x (constant fragments; the clock's question)
    int products;                 // 0: the products replaced by one dependent add each (the clock's question; not at
                                  // NT = 8, whose registers do not hold the second path)
    const uint16_t* x;            // [S][D] bf16
    uint16_t* proj;               // [S][N] bf16
    unsigned long long* stamps;   // [kCtas][kStamps]
    int S, stages, slots;
    int inflight;                 // copies outstanding at most (≤ stages)
    int early;                    // copies issued before the entry cluster barrier (≤ inflight)
    int early_free;               // a consumer frees its slot once its tiles are in registers
    int entry_release;            // the entry cluster barrier's arrive with release (else relaxed after the init fence)
    int compute;                  // 0 stream only; 1 in_proj; 2 stream, each warp reading its tiles of every chunk (no
                                  // math); 3 in_proj's products without the partials' hand-offs (no sends, no reducer);
                                  // 4 as 2 with x staged first
    unsigned long long x_delay_ns;
    int seam;                     // x computed by the seam (v2_seam.cuh) from the step's inputs, not loaded
    SeamArgs sa;
    SeamPlan seam_plan;           // the plan's seam entries (filled from it)
    int tail;                     // 1: the owners publish proj as tagged words, head h's cluster (h < 12) polls its rows
                                  // (v2_tail_hop.cuh); 2: published, not polled; 3: polled with a 256 ns sleep a round;
                                  // 4: each group polled once the CTA's own cluster has sent its last unit of it;
                                  // 5: both warps poll each group together, 16 pieces a lane a round; 6: the shared poll,
                                  // rank t polling its share of q, k, f_a and forwarding it to its peers (await_tail); 7: 6 in one
                                  // batch (kShareBatch pieces a lane); kTailPlan: the plan's tail (ta)
    signed char tail_after[kClusters][3];  // cluster c's last unit (index in the cluster) of f_a+beta, head c's q, k, v, g
    int free_first;               // the reducer frees a receive slot before it stores the rows it summed
    int tail_idle;                // kTailPlan: 1 the tasks' warps arm their barriers and stop (the reducers' PUBLISH alone); 2 also
                                  // each PUBLISH's body skipped (the staging alone); 3 the staging skipped too (the rows' copy alone)
    uint32_t* tagged;             // [S][N] tagged words, never cleared
    uint32_t tag;                 // the step's tag (16 bits, never 0)
    uint32_t* assembled;          // tail 6, 7: [kTailHeads * kRanks][kShareMaxS][kAssembledRows] each rank's assembled q, k,
                                  // f_a as tagged words, written after in_proj's end (for the check)
    v2tail::TailArgs ta;          // kTailPlan: the tail's inputs and outputs (proj this launch's, words `tagged`, tag `tag`)
    __device__ bool ready(uint64_t* bar, uint32_t parity) const {  // this CTA's barrier, completed in this CTA
        return poll == 1 ? mbar_test_wait(bar, parity) : poll == 2 ? mbar_try_wait_hint(bar, parity, 32) : mbar_try_wait(bar, parity);
    }
    __device__ bool ready_cluster(uint64_t* bar, uint32_t parity) const {  // completed by peers: acquire at cluster scope
        return poll == 1 ? mbar_test_wait_cluster(bar, parity) : mbar_try_wait_cluster(bar, parity);
    }
    __device__ int first(int cl) const { return param_tables ? first_p[cl] : plan.cluster_first(cl); }
    __device__ int mt(int u) const { return param_tables ? int(mt_p[u]) : plan.unit(u).tiles; }
    __device__ int off(int cta) const { return param_tables ? run_off[cta] : plan.run_offset(cta); }
    __device__ int chunk_bytes(int cl, int cta, int j) const { return param_tables ? int(bytes_p[cl][j]) : plan.chunk(cta, j).bytes; }
};

enum Stamp { kEntry, kFirstChunk, kLastChunk, kXReady, kLastProj, kExit, kSynced, kCycles, kSm, kUnit0 };
// per unit u: kUnit0 + 4u + {0: m-tile 0's even warp done with its k-steps, 1: its partials sent,
// 2: the reducer saw the unit's partials, 3: the reducer freed the slot}; per chunk j: kChunk0 + 2j +
// {0: its copy issued, 1: consumer warp 0 saw it}
constexpr int kMaxTracedUnits = 16, kChunk0 = kUnit0 + 4 * kMaxTracedUnits, kMaxTracedChunks = 64;
// per chunk j < kWarpChunks and consumer warp w: kWarp0 + 2 (8j + w) + {0: the warp saw it, 1: it freed it}
constexpr int kWarp0 = kChunk0 + 2 * kMaxTracedChunks, kWarpChunks = 24;
// the seam's phases (SeamPhase), on its first thread (x ready: kXReady)
constexpr int kSeam0 = kWarp0 + 2 * 8 * kWarpChunks;
// the tail's hop (tail): when this rank of head h's cluster has f_a and beta, q, k and its v rows, its g rows;
// tail 6, 7: its own share polled (before the peers' have landed)
enum TailStamp { kTailGate, kTailQkv, kTailG, kTailOwn, kTailStamps };
constexpr int kTail0 = kSeam0 + kSeamPhases;
constexpr int kStamps = kTail0 + kTailStamps;

struct Smem {  // offsets into dynamic shared memory
    int ring, x, recv, red, bytes;
    __host__ __device__ static Smem layout(int nt, int chunk, int stages, int slots) {
        Smem s{};
        s.ring = 0;
        s.x = stages * chunk;
        s.recv = s.x + nt * 8 * kXStride * 2;
        s.red = s.recv + slots * kRanks * 8 * nt * 8 * 4;
        s.bytes = s.red + 4 * 32 * nt * 4 * 4;  // the odd k-steps' partials, a warp pair an m-tile
        return s;
    }
};


// What every role of a CTA reads: the arguments, the layout, the CTA's barriers and unit range.
struct Cta {
    const Args& a;
    Smem L;
    unsigned char* smem;
    uint64_t *full, *empty, *recv_bar, *free_bar;  // the ring's (a slot each), the receive slots'
    int rank, cl, cta, u0, units;
    unsigned long long* st;
    unsigned long long t0;
    int compute;  // a.compute, or 4 on the clusters past a.fp_clusters
    int* sent;    // units whose partials consumer warp 0 has sent (shared memory: the tail's gate, tail 4)
    uint16_t* share;      // tail 6, 7: the ranks' shares of q, k, f_a ([rank][column][kShareRows] bf16, after the layout)
    uint64_t* share_bar;  // tail 6, 7: the 7 peers' shares landed (armed at entry for their bytes)
};

// The producer's place in its CTA's run (v2_inproj_walk.hpp's counters, held to the plan's chunk
// table by the host): the next chunk, and the oldest copy still counted in flight.
struct Producer {
    ChunkPos at;
    RingPos old;
    int issued = 0;
};

// Issues the next chunk's copy (its bytes the plan's), first waiting for the oldest copy in flight
// (once `inflight` are) and for the slot's last consumers; false once the run is done.
template <int KQ>
__device__ bool produce(Producer& p, const Cta& k, const unsigned char* run, uint64_t policy) {
    constexpr int kSlotBytes = KQ * 4 * kTileBytes, kChunksPerUnit = kKSteps / KQ;
    const Args& a = k.a;
    if (p.at.unit == k.units) return false;
    if (p.issued >= a.inflight) {
        probe::spin([&] { return a.ready(&k.full[p.old.slot], uint32_t(p.old.round) & 1u); });
        p.old.next(a.stages);
    }
    const int s = p.at.ring.slot;
    if (p.at.ring.round > 0) probe::spin([&] { return a.ready(&k.empty[s], uint32_t(p.at.ring.round - 1) & 1u); });
    const int bytes = a.chunk_bytes(k.cl, k.cta, p.issued);
    mbar_arrive_expect(&k.full[s], uint32_t(bytes));
    bulk_copy_1d(k.smem + k.L.ring + size_t(s) * kSlotBytes, run + p.at.off, uint32_t(bytes), &k.full[s], policy);
    if (p.issued < kMaxTracedChunks) k.st[kChunk0 + 2 * p.issued] = now_ns();
    ++p.issued;
    p.at.next(bytes, a.stages, kChunksPerUnit);
    return true;
}

// The reducer: its program in the plan's flat table, step by step. REDUCE e: the owner arms its
// receive slot's use (its arrival and the entry's bytes) and waits for it (partials that landed first
// took the byte count below zero; the phase cannot complete before the arrival), sums the 8 ranks in
// rank order, rounds once (#3) and stores the entry's 8 rows; RELEASE e: the slot freed on every rank
// with the plan's count (rank 0 making up for the owners a short unit lacks).
template <int NT>
__device__ void reduce(const Cta& k, int lane, const v2tail::Cta& t, bool tail) {
    constexpr int kCols = (NT * 8 + 31) / 32;  // columns a lane sums
    const Args& a = k.a;
    const PlanV2View& v = a.plan;
    const float* recv = reinterpret_cast<const float*>(k.smem + k.L.recv);
    const int p = PlanV2::proc(k.cta, V2Role::reducer);
    auto release = [&](const V2Free& f) {
        __syncwarp();  // every lane's sums read before the slot is freed
        if (lane < kRanks) mbar_arrive_peer(peer_addr(&k.free_bar[f.slot], uint32_t(lane)), uint32_t(f.count));
        if (lane == 0 && f.unit - k.u0 < kMaxTracedUnits) k.st[kUnit0 + 4 * (f.unit - k.u0) + 3] = now_ns();
    };
    int freed = -1;  // free_first: the RELEASE already run
    unsigned long long pub_ns = 0;  // the PUBLISHes' time
    unsigned long long* const tst = a.ta.stamps + size_t(k.cta) * v2tail::kStamps;
    if (tail && lane == 0) tst[v2tail::kStaged] = now_ns();  // its inputs staged (before the entry barrier's wait: the kernel)
    for (int i = v.prog_begin(p), end = v.prog_begin(p + 1), pubs = 0; i < end; ++i) {
        const V2Instr in = v.instr(i);
        if (in.op == int32_t(V2Op::REDUCE)) {
            const V2Recv rv = v.recv(in.a);
            const int u = rv.unit - k.u0, s = rv.slot;
            if (lane == 0) mbar_arrive_expect(&k.recv_bar[s], uint32_t(rv.bytes));
            probe::spin([&] { return a.ready_cluster(&k.recv_bar[s], uint32_t(rv.round) & 1u); });
            if (lane == 0 && u < kMaxTracedUnits) k.st[kUnit0 + 4 * u + 2] = now_ns();
            const float* slot = recv + size_t(s) * kRanks * 8 * NT * 8;
            uint32_t packed[kCols][4];
#pragma unroll
            for (int c = 0; c < kCols; ++c) {
                const int col = lane + 32 * c;
                if (col >= a.S) continue;
#pragma unroll
                for (int r = 0; r < 8; ++r) {
                    float acc = slot[(0 * 8 + r) * NT * 8 + col];
                    for (int src = 1; src < kRanks; ++src) acc += slot[(src * 8 + r) * NT * 8 + col];
                    const uint32_t b = bf16::round(acc).bits;  // #3
                    packed[c][r / 2] = r % 2 ? (packed[c][r / 2] | b << 16) : b;
                }
            }
            // free_first: the slot freed before the stores (its arrive's CTA fence then waits for no store)
            if (a.free_first && i + 1 < end && v.instr(i + 1).op == int32_t(V2Op::RELEASE)) release(v.free_entry(v.instr(i + 1).a)), freed = i + 1;
#pragma unroll
            for (int c = 0; c < kCols; ++c) {
                const int col = lane + 32 * c;
                if (col >= a.S) continue;
                const uint4 rows = make_uint4(packed[c][0], packed[c][1], packed[c][2], packed[c][3]);
                *reinterpret_cast<uint4*>(a.proj + size_t(col) * N + rv.row0) = rows;
                if (tail) *reinterpret_cast<uint4*>(t.rows() + col * kV2OwnerRows) = rows;  // for its PUBLISH
                if (a.tail && !tail) publish_tagged(a.tagged, col, rv.row0, packed[c], a.tag);
            }
        } else if (in.op == int32_t(V2Op::PUBLISH) && tail) {
            const unsigned long long t0 = now_ns();
            __syncwarp();  // every lane's rows in: PUBLISH reads them by (row, request)
            if (a.tail_idle < 2) t.publish(pubs, lane);
            ++pubs;
            __syncwarp();  // read before the next REDUCE's
            pub_ns += now_ns() - t0;
        } else if (in.op == int32_t(V2Op::RELEASE) && i != freed) {
            release(v.free_entry(in.a));
        }
    }
    if (lane == 0) k.st[kLastProj] = now_ns();
    if (tail && lane == 0) tst[v2tail::kPublishNs] = pub_ns;  // once: a global load beside the stream waits a round
}

// This rank's slice of x into shared memory, S rows (zeros up to the n-tile), by the consumer warps.
template <int NT>
__device__ void stage_x(const Cta& k) {
    const Args& a = k.a;
    uint16_t* xs = reinterpret_cast<uint16_t*>(k.smem + k.L.x);
    constexpr int kVecs = NT * 8 * (kSliceCols / 8), kBatch = NT >= 8 ? 4 : 8;  // 16-byte pieces; loads in flight a thread
    while (now_ns() - k.t0 < a.x_delay_ns) {}
    for (int i0 = threadIdx.x - kFirstConsumer * 32; i0 < kVecs; i0 += kBatch * kConsumers * 32) {
        uint4 v[kBatch];  // every load of the batch issued before the first store: one latency, not eight
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
            const int i = i0 + j * kConsumers * 32, r = i / (kSliceCols / 8), q = i % (kSliceCols / 8);
            v[j] = i < kVecs && r < a.S ? *reinterpret_cast<const uint4*>(a.x + size_t(r) * D + k.rank * kSliceCols + q * 8)
                                        : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
            const int i = i0 + j * kConsumers * 32, r = i / (kSliceCols / 8), q = i % (kSliceCols / 8);
            if (i < kVecs) *reinterpret_cast<uint4*>(xs + r * kXStride + q * 8) = v[j];
        }
    }
    team_bar(1, kConsumers * 32);
    if (threadIdx.x == kFirstConsumer * 32) k.st[kXReady] = now_ns();
}

// A unit's end for the warp pair of m-tile m: the odd warp's partials added to the even warp's
// (even + odd, in that order), then the even warp sends them to their owners, rows g (rank 2m) and
// g + 8 (2m + 1), once the unit's receive slot (sp) is free of its use before.
template <int NT>
__device__ void send_partials(const Cta& k, float (&acc)[NT][4], const SendPos& sp, int m, int half, int lane) {
    const int s = sp.slot, g = lane / 4, c = lane % 4, pair_bar = 2 + m;  // named barriers 2..5: a pair
    float* red = reinterpret_cast<float*>(k.smem + k.L.red) + (m * 32 + lane) * NT * 4;
    if (half == 1) {
#pragma unroll
        for (int t = 0; t < NT; ++t) *reinterpret_cast<float4*>(red + t * 4) = make_float4(acc[t][0], acc[t][1], acc[t][2], acc[t][3]);
    }
    asm volatile("bar.sync %0, 64;" ::"r"(pair_bar) : "memory");
    if (half == 0) {
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            const float4 o = *reinterpret_cast<const float4*>(red + t * 4);
            acc[t][0] += o.x, acc[t][1] += o.y, acc[t][2] += o.z, acc[t][3] += o.w;
        }
    }
    asm volatile("bar.sync %0, 64;" ::"r"(pair_bar) : "memory");  // red may be written again
    if (half == 1) return;
    if (sp.use > 0) probe::spin([&] { return k.a.ready_cluster(&k.free_bar[s], uint32_t(sp.use - 1) & 1u); });
    float* rs = reinterpret_cast<float*>(k.smem + k.L.recv) + size_t(s) * kRanks * 8 * NT * 8;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        float* lo = rs + (k.rank * 8 + g) * NT * 8 + t * 8 + 2 * c;
        st_async_f2(peer_addr(lo, uint32_t(2 * m)), acc[t][0], acc[t][1], peer_addr(&k.recv_bar[s], uint32_t(2 * m)));
        st_async_f2(peer_addr(lo, uint32_t(2 * m + 1)), acc[t][2], acc[t][3], peer_addr(&k.recv_bar[s], uint32_t(2 * m + 1)));
    }
}

// Consumer warp cw = (m-tile m, k parity half): the m-tile's k-steps of parity `half`, every n-tile,
// chunk by chunk; the same split whatever S, so a column's sum runs the same way at every S.
template <int KQ, int NT>
__device__ void consume(const Cta& k, int cw, int lane) {
    constexpr int kSlotBytes = KQ * 4 * kTileBytes, kChunksPerUnit = kKSteps / KQ;
    const Args& a = k.a;
    const int m = cw / 2, half = cw % 2, compute = k.compute;
    const uint16_t* xs = reinterpret_cast<const uint16_t*>(k.smem + k.L.x);
    if ((compute == 1 || compute >= 3) && !a.seam) stage_x<NT>(k);
    RingPos ring;  // the next chunk's slot and round (v2_inproj_walk.hpp)
    int seen = 0;
    auto take = [&] {  // wait for the next chunk: its address
        probe::spin([&] { return a.ready(&k.full[ring.slot], uint32_t(ring.round) & 1u); });
        if (cw == 0 && lane == 0 && seen < kMaxTracedChunks) k.st[kChunk0 + 2 * seen + 1] = now_ns();
        if (lane == 0 && seen < kWarpChunks) k.st[kWarp0 + 2 * (8 * seen + cw)] = now_ns();
        ++seen;
        return k.smem + k.L.ring + size_t(ring.slot) * kSlotBytes;
    };
    auto give = [&] {  // free it
        if (lane == 0) mbar_arrive(&k.empty[ring.slot]);
        if (lane == 0 && seen - 1 < kWarpChunks) k.st[kWarp0 + 2 * (8 * (seen - 1) + cw) + 1] = now_ns();
        ring.next(a.stages);
    };
    SendPos sp;  // the unit's receive slot and its use of it
    for (int u = 0; u < k.units; ++u, sp.next(a.slots)) {
        const int mt = a.mt(k.u0 + u);
        // compute 3 with fp_warps: only warps below it do the math, the others read their tiles
        const bool mine = (compute == 1 || (compute == 3 && (a.fp_warps == 0 || cw < a.fp_warps))) && m < mt;
        float acc[NT][4] = {};
        for (int q = 0; q < kChunksPerUnit; ++q) {
            uint32_t b[KQ / 2][NT][2];  // x fragments do not depend on the chunk: loaded while it streams
            if (mine && !a.xfrag) {
#pragma unroll
                for (int i = 0; i < KQ / 2; ++i)
#pragma unroll
                    for (int t = 0; t < NT; ++t) b[i][t][0] = uint32_t(lane + i), b[i][t][1] = uint32_t(t);
            } else if (mine) {
#pragma unroll
                for (int i = 0; i < KQ / 2; ++i)
#pragma unroll
                    for (int t = 0; t < NT; ++t)
                        ldmatrix_x2(b[i][t], xs + (t * 8 + lane % 8) * kXStride + (q * KQ + 2 * i + half) * 16 + (lane / 8) % 2 * 8);
            }
            const unsigned char* chunk = take();
            if (u == 0 && q == 0 && cw == 0 && lane == 0) k.st[kFirstChunk] = now_ns();
            if (!mine) {
                if (compute == 0) {
                    const uint32_t touch = *reinterpret_cast<const uint32_t*>(chunk + lane * 4);
                    asm volatile("" ::"r"(touch));  // the chunk is read
                } else if (compute >= 2 && m < mt) {  // the same shared-memory reads as in_proj's
                    uint32_t sink = 0;
#pragma unroll
                    for (int i = 0; i < KQ / 2; ++i) {
                        const uint4 v = *reinterpret_cast<const uint4*>(chunk + ((2 * i + half) * mt + m) * kTileBytes + lane * 16);
                        sink ^= v.x ^ v.y ^ v.z ^ v.w;
                    }
                    asm volatile("" ::"r"(sink));
                }
                give();
                continue;
            }
            uint4 w[KQ / 2];  // this warp's KQ/2 tiles of the chunk
#pragma unroll
            for (int i = 0; i < KQ / 2; ++i)
                w[i] = *reinterpret_cast<const uint4*>(chunk + ((2 * i + half) * mt + m) * kTileBytes + lane * 16);
            if (a.early_free) give();  // the tiles are in registers: the slot may be refilled
#pragma unroll
            for (int i = 0; i < KQ / 2; ++i)
#pragma unroll
                for (int t = 0; t < NT; ++t)
                    if (NT == 8 || a.products) mma_bf16_16816(acc[t], w[i].x, w[i].y, w[i].z, w[i].w, b[i][t][0], b[i][t][1]);
                    else acc[t][0] += __uint_as_float((w[i].x ^ b[i][t][0]) & 0x3f800000u);
            if (!a.early_free) give();
        }
        if (!mine) continue;
        if (compute == 3) {  // keep the sums live without sending them
            asm volatile("" ::"f"(acc[0][0]), "f"(acc[0][1]), "f"(acc[0][2]), "f"(acc[0][3]));
            continue;
        }
        const bool traced = cw == 0 && lane == 0 && u < kMaxTracedUnits;
        if (traced) k.st[kUnit0 + 4 * u] = now_ns();
        send_partials<NT>(k, acc, sp, m, half, lane);
        if (cw == 0 && lane == 0) *reinterpret_cast<volatile int*>(k.sent) = u + 1;
        if (traced) k.st[kUnit0 + 4 * u + 1] = now_ns();
    }
    if (cw == 0 && lane == 0) k.st[kLastChunk] = now_ns();
}

// The tail's side of the hop on rank t of head h's cluster (h = the cluster): warp 2 waits for f_a
// and beta, then the head's q and k and v's rows 16t .. 16t + 15; warp 3 for g's same rows. tail 5:
// both warps wait for each group in turn, twice the lanes and pieces a round.
template <int NT>
__device__ void await_tail(const Cta& k, int warp, int lane) {
    const Args& a = k.a;
    const int h = k.cl, rows = h * kHeadRows + k.rank * kTaskRows;
    const uint32_t sleep = a.tail == 3 ? 256u : 0u;
    const TagRows gate_rows{{kRowFa}, {kRowBeta + kTailHeads - kRowFa}, 1};  // f_a and beta
    const TagRows qkv{{kRowQ + h * kHeadRows, kRowK + h * kHeadRows, kRowV + rows}, {kHeadRows, kHeadRows, kTaskRows}, 3};
    const TagRows g_rows{{kRowG + rows}, {kTaskRows}, 1};
    auto gate = [&](int g) {  // tail 4: not before this cluster has sent its part of the group
        const int after = a.tail == 4 ? a.tail_after[k.cl][g] : -1;
        if (after >= 0) probe::spin([&] { return *reinterpret_cast<volatile int*>(k.sent) > after; });
    };
    auto stamp = [&](int s) {
        if (lane == 0) k.st[kTail0 + s] = now_ns();
    };
    if (shared_poll(a.tail) && warp == kSeamWarp0) {
        // the shared poll: this rank's share of q, k and f_a (kSharePieces pieces a column, first),
        // beta's rows and its v rows; each piece of the share forwarded, tags dropped, to the 7 peers
        // as it comes in (and kept in the own slot); the rows seen once the peers' shares have landed
        const int sh = k.rank * kTaskRows, S = a.S;
        const TagRows own{{kRowQ + h * kHeadRows + sh, kRowK + h * kHeadRows + sh, kRowFa + sh, kRowBeta, kRowV + rows},
                          {kTaskRows, kTaskRows, kTaskRows, kTailHeads, kTaskRows}, 5};
        const auto forward = [&](int col, int p, uint4 v) {
            if (p >= kSharePieces) return;  // beta's and v's pieces: this rank's own
            const uint32_t lo = (v.x & 0xffffu) | v.y << 16, hi = (v.z & 0xffffu) | v.w << 16;
            uint16_t* at = k.share + (k.rank * S + col) * kShareRows + 4 * p;
            *reinterpret_cast<uint2*>(at) = make_uint2(lo, hi);
            for (int r = 1; r < kRanks; ++r) {
                const uint32_t peer = uint32_t((k.rank + r) % kRanks);
                st_async_u2(peer_addr(at, peer), lo, hi, peer_addr(k.share_bar, peer));
            }
        };
        if (a.tail == 7) await_tagged<kShareBatch>(a.tagged, own, S, a.tag, lane, 32, 0, forward);
        else await_tagged<8>(a.tagged, own, S, a.tag, lane, 32, 0, forward);
        __syncwarp();
        stamp(kTailOwn);
        probe::spin([&] { return a.ready_cluster(k.share_bar, 0); });
        __syncwarp();
        if (lane == 0) k.st[kTail0 + kTailGate] = k.st[kTail0 + kTailQkv] = now_ns();
    } else if (a.tail == 5) {
        const int th = (warp - kSeamWarp0) * 32 + lane;
        await_tagged<16>(a.tagged, gate_rows, a.S, a.tag, th, 64, 0);
        tail_bar();
        if (warp == kSeamWarp0) stamp(kTailGate);
        await_tagged<16>(a.tagged, qkv, a.S, a.tag, th, 64, 0);
        tail_bar();
        if (warp == kSeamWarp0) stamp(kTailQkv);
        await_tagged<16>(a.tagged, g_rows, a.S, a.tag, th, 64, 0);
        tail_bar();
        if (warp == kSeamWarp0) stamp(kTailG);
    } else if (warp == kSeamWarp0) {
        gate(0);
        await_tagged<8>(a.tagged, gate_rows, a.S, a.tag, lane, 32, sleep);
        __syncwarp();
        stamp(kTailGate);
        gate(1);
        await_tagged<8>(a.tagged, qkv, a.S, a.tag, lane, 32, sleep);
        __syncwarp();
        stamp(kTailQkv);
    } else {
        gate(2);
        await_tagged<8>(a.tagged, g_rows, a.S, a.tag, lane, 32, sleep);
        __syncwarp();
        stamp(kTailG);
    }
}

// kTailPlan: the CTA's tasks from the seam team's program, on warps 2-3 while the stream runs and on
// warps 2-11 once the consumers are done with it: the pairs' barriers armed by warps 2-3 (after the
// entry barrier: a send that lands first cannot complete a phase before its arm), then the POLL,
// DECAY, REC and NORM steps in order. At each step's start the two warps ask (one vote, so they agree)
// whether the 8 consumer warps have all finished; the first time they have, or after the last step,
// the two meet them on named barrier kTailJoin and the rest of the program runs as one team of 10 warps
// (the tail probe's team=10) on kTailBig. idle: no steps (what the reducers' PUBLISH costs in_proj
// without the tasks' polls); the meeting still happens, as the consumers wait at it.
__device__ __forceinline__ bool team_any(int bar, int threads, bool q) {
    uint32_t r;
    asm volatile("{ .reg .pred p, q; setp.ne.u32 q, %3, 0; bar.red.or.pred p, %1, %2, q; selp.u32 %0, 1, 0, p; }"
                 : "=r"(r) : "r"(bar), "r"(threads), "r"(uint32_t(q)) : "memory");
    return r != 0;
}
constexpr int kTailMaxNt = 2, kTailJoin = 8, kTailBig = 9, kTailBigTeam = kTailTeam + kConsumers * 32;
// The meeting, then the program's steps from the one the two warps stopped at, as the big team (both
// sides: the two warps and each consumer warp).
__device__ void tail_rest(const v2tail::Cta& big, const int* join_gi, v2tail::Tally& tl) {
    asm volatile("bar.sync %0, %1;" ::"n"(kTailJoin), "n"(kTailBigTeam) : "memory");
    const PlanV2View& v = big.a.plan;
    for (int gi = *join_gi, end = v.prog_begin(PlanV2::proc(big.cta, V2Role::seam) + 1); gi < end; ++gi) big.step(v.instr(gi), gi, now_ns(), tl);
}
__device__ void run_tail(const v2tail::Cta& small, const v2tail::Cta& big, volatile int* done, int* join_gi, bool idle) {
    const PlanV2View& v = small.a.plan;
    const int seam = PlanV2::proc(small.cta, V2Role::seam), end = v.prog_begin(seam + 1);
    small.arm(seam, small.tid, small.team);
    v2tail::Tally tl;
    int gi = idle ? end : v.prog_begin(seam);
    for (; gi < end; ++gi) {
        if (team_any(small.bar, small.team, small.tid == 0 && *done == kConsumers)) break;
        small.step(v.instr(gi), gi, now_ns(), tl);
    }
    if (small.tid == 0) *join_gi = gi;
    tail_rest(big, join_gi, tl);
    small.store(tl);  // its first thread's (the big team's first too)
}
// A consumer warp once its stream is done: counted, then at the meeting, then the rest of the
// program in the big team (nothing where the small one had finished it).
__device__ void join_tail(const v2tail::Cta& big, volatile int* done, const int* join_gi, int lane) {
    __syncwarp();
    if (lane == 0) atomicAdd(const_cast<int*>(done), 1);
    v2tail::Tally tl;  // not stored: the big team's first thread is the two warps'
    tail_rest(big, join_gi, tl);
}

// KQ k-steps a chunk, NT n-tiles of 8 columns of x (S ≤ 8·NT): a unit of mt tiles is kKSteps / KQ
// chunks of KQ·mt tiles (the plan's packing order, [k-step][m-tile], so a chunk is contiguous); the
// ring's slots hold KQ·4 tiles. Warp 0 produces, warp 1 reduces, warps 4-11 consume.
template <int KQ, int NT>
__global__ void __cluster_dims__(kRanks, 1, 1) __launch_bounds__(kThreads, 1) inproj(const __grid_constant__ Args a) {
    static_assert(kKSteps % KQ == 0 && KQ % 2 == 0, "a unit is whole chunks, each split evenly by parity");
    extern __shared__ __align__(1024) unsigned char smem[];
    __shared__ uint64_t full[kMaxStages], empty[kMaxStages], recv_bar[kMaxSlots], free_bar[kMaxSlots];
    __shared__ SeamBars seam_bars;
    __shared__ int sent;
    __shared__ int tail_done, tail_gi;  // kTailPlan: consumer warps done with the stream; the step the big team starts at
    __shared__ uint64_t share_bar;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int rank = int(cluster_rank()), cl = int(cluster_id()), cta = cl * kRanks + rank;
    const Smem L = Smem::layout(NT, KQ * 4 * kTileBytes, a.stages, a.slots);
    const int rest = a.seam ? SeamSmem::layout(L.bytes, a.S, a.sa.nb).bytes : L.bytes;
    const int share_at = share_offset(rest);  // the host's smem_bytes
    const bool plan_tail = NT <= kTailMaxNt && a.tail == kTailPlan;  // compiled where it can fit (S ≤ 16): its code costs registers
    const V2TailLayout tail_at = V2TailLayout::make(rest, a.ta.dims);
    auto tail_cta = [&](int tid) { return v2tail::Cta{a.ta, reinterpret_cast<char*>(smem), tail_at, cta, tid, kTailTeam, kTailBar}; };
    auto big_cta = [&] { return v2tail::Cta{a.ta, reinterpret_cast<char*>(smem), tail_at, cta, int(threadIdx.x) - kSeamWarp0 * 32, kTailBigTeam, kTailBig}; };
    const bool shares = shared_poll(a.tail) && cl < kTailHeads;
    const Cta k{a, L, smem, full, empty, recv_bar, free_bar, rank, cl, cta,
                a.first(cl), a.first(cl + 1) - a.first(cl), a.stamps + size_t(cta) * kStamps, now_ns(),
                a.fp_clusters > 0 && cl >= a.fp_clusters ? 4 : a.compute, &sent,
                reinterpret_cast<uint16_t*>(smem + share_at), &share_bar};
    const long long c0 = clock64();
    const unsigned char* run = a.w + a.off(cta);
    const Seam z{a.sa, a.seam_plan, SeamSmem::layout(k.L.bytes, a.S, a.sa.nb), smem, seam_bars, a.S, rank, cl,
                 int(threadIdx.x) - kSeamWarp0 * 32, threadIdx.x == kSeamWarp0 * 32 ? k.st + kSeam0 : nullptr};
    Producer prod;  // thread 0's (the producer lane)
    uint64_t policy = 0;
    if (threadIdx.x == 0) {
        k.st[kEntry] = k.t0, k.st[kSm] = sm_id();
        sent = 0, tail_done = 0;  // before the entry barrier, which every warp passes
        for (int s = 0; s < a.stages; ++s) mbar_init(&full[s], 1), mbar_init(&empty[s], kConsumers);
        for (int s = 0; s < a.slots; ++s) mbar_init(&recv_bar[s], 1), mbar_init(&free_bar[s], kRanks);
        if (a.seam) seam_arm(seam_bars, a.seam_plan.cta[rank]);
        if (shares) mbar_init(&share_bar, 1), mbar_arrive_expect(&share_bar, uint32_t((kRanks - 1) * kShareRows * a.S * 2));
        if (plan_tail) tail_cta(0).make_bars();
        mbar_init_fence();
        // the ring's barriers are this CTA's own: its first copies need no peer, only the partials do
        policy = l2_policy(true);
        if (a.seam) seam_copy_in(z, policy);  // ahead of the stream's first copy (waiting for them to land first: later x)
        while (prod.issued < a.early && produce<KQ>(prod, k, run, policy)) {}
    }
    // every rank's barriers exist before a peer sends to them: the init fence orders them, so the
    // arrive may be relaxed; a release arrive would wait for the copies just issued (MEMBAR.ALL.GPU)
    if (a.entry_release) cluster_arrive();
    else cluster_arrive_relaxed();
    // the reducer stages what its PUBLISHes read that is no sum between its arrive and its wait: the
    // loads go out before the stream fills the SM's memory path (beside it each dependent round waits
    // behind the copies in flight), and the wait is passed by then or soon after
    if (warp == 1 && k.compute == 1 && plan_tail && a.tail_idle < 3) tail_cta(lane).stage_conv(PlanV2::proc(cta, V2Role::reducer), lane);
    cluster_wait();
    if (threadIdx.x == 0) k.st[kSynced] = now_ns();
    if (warp == 0 && lane == 0)  // the producer: the CTA's run, chunk by chunk, from the first instant
        while (produce<KQ>(prod, k, run, policy)) {}
    else if (warp == 1 && k.compute == 1) {
        const v2tail::Cta tc = tail_cta(lane);
        reduce<NT>(k, lane, tc, plan_tail);  // by reference, not a pointer that may be null: the view stays in registers and
                                             // its arguments' reads are the kernel parameter's (a null-or-not pointer put it
                                             // in local memory and made every read a generic load)
    }
    else if (warp >= kSeamWarp0) {
        if (a.seam) {
            seam_x_pad(z, reinterpret_cast<uint16_t*>(smem + k.L.x), kXStride, NT * 8);
            seam_load(z);
            seam_bar();  // the slice's P', bank rows and gains in shared memory
            z.stamp(kPrimed);
            seam_part(z);
            z.stamp(kPartSent);
            seam_gate(z);
            seam_mix(z);
            z.stamp(kMsqSent);
            seam_x<NT>(z, reinterpret_cast<uint16_t*>(smem + k.L.x), kXStride);
            if (threadIdx.x == kSeamWarp0 * 32) k.st[kXReady] = now_ns();
        }
        if (warp >= kFirstConsumer) {
            consume<KQ, NT>(k, warp - kFirstConsumer, lane);
            if (plan_tail) join_tail(big_cta(), &tail_done, &tail_gi, lane);
        } else if (plan_tail) {
            run_tail(tail_cta(int(threadIdx.x) - kSeamWarp0 * 32), big_cta(), &tail_done, &tail_gi, a.tail_idle != 0);
        }
        else if (a.tail != 0 && a.tail != 2 && cl < kTailHeads) await_tail<NT>(k, warp, lane);
    }
    __syncthreads();
    if (shares && warp == kSeamWarp0) {  // the assembled rows for the check, after in_proj's end (the warp that waited)
        uint32_t* out = a.assembled + size_t(cta) * kShareMaxS * kAssembledRows;
        for (int e = lane; e < a.S * kAssembledRows; e += 32) {
            const int s = e / kAssembledRows, j = e % kAssembledRows, part = j / kHeadRows, src = j % kHeadRows / kTaskRows;
            out[e] = tagged_word(k.share[(src * a.S + s) * kShareRows + part * kTaskRows + j % kTaskRows], a.tag);
        }
    }
    cluster_sync();  // no rank leaves while a peer may still send to it
    if (threadIdx.x == 0) k.st[kExit] = now_ns(), k.st[kCycles] = (unsigned long long)(clock64() - c0);
}

}  // namespace monokda::probe::v2
