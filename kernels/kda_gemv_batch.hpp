// The NVIDIA body of a CTA's gemv instructions: its consecutive GEMV_PREFETCH / GEMV_GROUP pairs
// (up to kBatchGroups groups) run as one pass over x, 256 columns (two attn slices) a step.
//
// Why, measured (monokda-stream-probe, docs/results/2026-11-30-h200-stream-probe.md): the copy
// engine (TMA) streams the weight near cuBLAS's rate only in few, large requests: one box of a
// CTA's whole band of rows (the plan deals each gemv CTA one contiguous band of groups) a
// 64-column step, where one thread issuing a small box a group caps the stream at about a third.
// So a step is 256 columns: 4 band boxes (96 rows × 64 columns, 128-byte swizzle) issued by one
// thread, completing on the step's mbarrier; two steps are in flight while one is used. A CTA whose
// groups are not one band (a hand-edited plan) gets one 16-row box a group, one box a lane. x goes
// through cp.async, as many steps ahead as its share of shared memory holds for this S (all 28 at
// S = 1). The first steps' weights are in flight before x exists. Same instructions, same waits
// (XRDY of every slice) and products (PROJ of every group, released when the pass ends) as the
// plan's; only the interleaving differs. (Inside kda_pre this stream has so far run at less than
// half the probe's rate; the same results file has the trace.)
//
// Sum order, the same whatever S is (so a token's proj does not depend on its batch): warp w's
// k-quarter kw = w % 4 owns k-steps 4kw .. 4kw+3 of every step and accumulates them in step order
// (the matrix unit's order inside a 16-column k-step); the four quarters are added in kw order.
// Warps w / 4 = 0, 1 split the token tiles (8 tokens a tile) between them.
#pragma once
#include "kernels/kda_gemv.hpp"

namespace monokda::gpu {

#if MONOKDA_NVIDIA
constexpr int kBatchGroups = 6;  // ceil(393 / 76) for k3 on 132 SMs; more groups take more passes
constexpr int kChunkCols = 2 * k3::kSlice;   // a step: two attn slices
constexpr int kChunks = k3::D / kChunkCols;  // 28
constexpr int kChunkKSteps = kChunkCols / 16;
constexpr int kKQuarters = 4;                // fixed: the sum order must not depend on S
constexpr int kTileWarps = kThreads / 32 / kKQuarters;
constexpr int kTilesPerWarp = (k3::kMaxS / 8) / kTileWarps;
// A weight box: 16 rows (one group) × 64 columns = 128 bytes a row, stored with the copy engine's
// 128-byte swizzle (16-byte piece j of row r lands at piece j ^ (r % 8)), so the fragment loads of
// 8 rows hit 8 different bank groups. Four boxes a group a step; a k-quarter reads one of them.
constexpr int kBoxCols = 64, kBoxWords = kBoxCols / 2, kBoxesPerStep = kChunkCols / kBoxCols;
constexpr uint32_t kBoxBytes = k3::kGroupRows * kBoxCols * 2;
constexpr int kBandRows = kBatchGroups * k3::kGroupRows;
constexpr uint32_t kBandBytes = kBandRows * kBoxCols * 2;  // a band box; rows past N arrive as zeros
static_assert(kBoxesPerStep == kKQuarters && kBatchGroups * kBoxesPerStep <= 32, "a lane a box, a quarter a box");

struct GemvBatchSmem {
    static constexpr int kWStages = 3;                     // steps of weights: 2 in flight, 1 in use
    static constexpr int kXRowWords = kChunkCols / 2 + 4;  // 16-byte rows shifted 4 banks each
    static constexpr int kXWords = 2 * k3::kMaxS * kXRowWords;  // x ring: S rows a step, as many steps as fit
    union {
        uint32_t w[kWStages][kBoxesPerStep][kBandRows][kBoxWords];  // row 16·gi + r: row r of group gi
        float red[kKQuarters * kBatchGroups * k3::kGroupRows * k3::kMaxS];  // after the pass
    };
    uint32_t x[kXWords];
    uint64_t full[kWStages];  // weight step landed (the boxes' bytes), one phase a use
};
// the swizzle pattern repeats every 1024 bytes, so the stages start on a 1024-byte boundary
constexpr size_t kGemvBatchSmemBytes = sizeof(GemvBatchSmem) + 1024;
static_assert(kThreads == 256 && kChunkKSteps % kKQuarters == 0, "the batch body maps 8 warps");
static_assert(kBoxBytes % 1024 == 0 && kBandBytes % 1024 == 0, "every box starts on a 1024-byte boundary");
static_assert(sizeof(float) * kKQuarters * kBatchGroups * k3::kGroupRows * k3::kMaxS <=
                  sizeof(uint32_t) * GemvBatchSmem::kWStages * kBoxesPerStep * kBandRows * kBoxWords,
              "the quarters' partials fit where the weight stages were");

__device__ __forceinline__ GemvBatchSmem& batch_smem(unsigned char* smem) {
    return *reinterpret_cast<GemvBatchSmem*>(smem + ((1024u - (smem_u32(smem) & 1023u)) & 1023u));
}

// Step ch: thread 0 issues the band's 4 boxes; without a band, lane i of warp 0 issues box i
// (group i / 4, columns 64·(i % 4)).
__device__ __forceinline__ void batch_issue_w(const WeightMap* map, GemvBatchSmem& sm, const int* groups, int G,
                                              bool band, int ch) {
    if (threadIdx.x >= 32) return;
    const int st = ch % GemvBatchSmem::kWStages, i = threadIdx.x;
    if (band) {
        if (i == 0) {
            mbar_arrive_expect(&sm.full[st], kBoxesPerStep * kBandBytes);
            for (int b = 0; b < kBoxesPerStep; ++b)
                bulk_tensor_2d(&sm.w[st][b][0][0], &map->band, ch * kChunkCols + b * kBoxCols,
                               groups[0] * k3::kGroupRows, &sm.full[st]);
        }
        return;
    }
    if (i == 0) mbar_arrive_expect(&sm.full[st], uint32_t(G * kBoxesPerStep) * kBoxBytes);
    __syncwarp();
    if (i < G * kBoxesPerStep)
        bulk_tensor_2d(&sm.w[st][i % kBoxesPerStep][(i / kBoxesPerStep) * k3::kGroupRows][0], &map->group,
                       ch * kChunkCols + (i % kBoxesPerStep) * kBoxCols, groups[i / kBoxesPerStep] * k3::kGroupRows,
                       &sm.full[st]);
}

// Step ch's weights have landed (every thread waits: the wait is what makes the bytes visible).
// Bounded like a mailbox poll; a timeout names the step (box kBoxWeightCopy).
__device__ __forceinline__ bool batch_wait_w(const KdaArgs& a, const Ctl& c, GemvBatchSmem& sm, int ch) {
    uint64_t* bar = &sm.full[ch % GemvBatchSmem::kWStages];
    const uint32_t parity = uint32_t(ch / GemvBatchSmem::kWStages) & 1u;
    if (mbar_try_wait(bar, parity)) return true;
    return spin(a, c, [&] { return mbar_try_wait(bar, parity); }, [](bool done) { return done; },
                kBoxWeightCopy, uint32_t(ch));
}

// x of step ch (S rows) into ring stage ch % nx, through cp.async; one commit group a step.
__device__ __forceinline__ void batch_issue_x(const KdaArgs& a, GemvBatchSmem& sm, int S, int nx, int ch) {
    if (ch < kChunks) {
        uint32_t* stage = sm.x + (ch % nx) * S * GemvBatchSmem::kXRowWords;
        for (int i = threadIdx.x; i < S * (kChunkCols / 8); i += kThreads) {
            const int s = i / (kChunkCols / 8), q = i % (kChunkCols / 8);
            copy16_async(stage + s * GemvBatchSmem::kXRowWords + q * 4, a.x + size_t(s) * k3::D + ch * kChunkCols + q * 8);
        }
    }
    async_commit();
}

// Waits until at most n of this thread's newest commit groups are pending (n clamped to 7: waiting
// for more than needed is still correct).
__device__ __forceinline__ void async_wait_upto(int n) {
    switch (n < 7 ? n : 7) {
        case 0: async_wait<0>(); break;
        case 1: async_wait<1>(); break;
        case 2: async_wait<2>(); break;
        case 3: async_wait<3>(); break;
        case 4: async_wait<4>(); break;
        case 5: async_wait<5>(); break;
        case 6: async_wait<6>(); break;
        default: async_wait<7>(); break;
    }
}

// XRDY of both slices of step ch. Flags only ever turn ready within a launch, so once a poll has
// seen slices 0..x_seen-1 ready, the pass stops polling them: after a wait, one sweep (a thread a
// flag, acquire) finds how far the ready prefix reaches.
__device__ __forceinline__ bool batch_wait_x(const KdaArgs& a, Ctl& c, int ch) {
    constexpr int per = kChunkCols / k3::kSlice;
    if (ch >= kChunks || c.x_seen >= (ch + 1) * per) return true;
    if (!wait_flags(a, c, Mailbox::XRDY, per, [&](int i) { return ch * per + i; })) return false;
    __shared__ int ready[k3::kAttn];
    if (threadIdx.x < k3::kAttn) {
        ready[threadIdx.x] = ld_acquire(a.flags + c.flag_off[int(Mailbox::XRDY)] + threadIdx.x) == c.tag;
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int n = (ch + 1) * per;
        while (n < k3::kAttn && ready[n]) ++n;
        c.x_seen = n;
    }
    __syncthreads();
    return true;
}

__device__ bool gemv_batch(const KdaArgs& a, Ctl& c, const WeightMap* map, GemvBatchSmem& sm, const int* groups, int G) {
    constexpr int kAhead = GemvBatchSmem::kWStages - 1;
    if (threadIdx.x == 0) {
        c.x_seen = 0;  // (re)established by the first poll of this pass
        for (int st = 0; st < GemvBatchSmem::kWStages; ++st) mbar_init(&sm.full[st], 1);
        mbar_init_fence();
    }
    fence_async_proxy();  // the copy engine writes what threads of an earlier role wrote
    __syncthreads();
    const int S = a.S, tiles = (S + 7) / 8;
    // the x ring: as many steps as fit (2 at S = 64, all 28 at S = 1); x runs nx - 1 steps ahead
    const int nx = min(kChunks, GemvBatchSmem::kXWords / (S * GemvBatchSmem::kXRowWords)), x_ahead = nx - 1;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, cq = lane % 4;
    const int kw = warp % kKQuarters, ts = warp / kKQuarters;
    bool band = true;  // the groups are one contiguous block of rows (as the plan deals them)
    for (int gi = 1; gi < G; ++gi) band = band && groups[gi] == groups[0] + gi;
    float acc[kBatchGroups][kTilesPerWarp][4];
#pragma unroll
    for (int gi = 0; gi < kBatchGroups; ++gi)
#pragma unroll
        for (int u = 0; u < kTilesPerWarp; ++u) acc[gi][u][0] = acc[gi][u][1] = acc[gi][u][2] = acc[gi][u][3] = 0.0f;

    for (int ch = 0; ch < kAhead; ++ch) batch_issue_w(map, sm, groups, G, band, ch);  // before x exists
    bool ok = true;
    for (int ch = 0; ch < x_ahead && ok; ++ch) {
        ok = batch_wait_x(a, c, ch);
        if (ok) batch_issue_x(a, sm, S, nx, ch);
    }
    if (a.trace && threadIdx.x == 0) a.trace[blockIdx.x * kTraceWords + 1] = now_ns();
    for (int ch = 0; ch < kChunks && ok; ++ch) {
        if (!batch_wait_x(a, c, ch + x_ahead)) {  // polled now, issued once step ch-1's stages are free
            ok = false;
            break;
        }
        async_wait_upto(x_ahead - 1);  // x steps 0..ch+x_ahead-1 issued: x(ch) has landed for this thread
        const bool landed = batch_wait_w(a, c, sm, ch);
        if (__syncthreads_or(!landed)) {  // for every thread: W(ch), x(ch); step ch-1's stages are free
            ok = false;
            break;
        }
        if (a.trace && threadIdx.x == 0) a.trace[blockIdx.x * kTraceWords + 2 + ch] = now_ns();
        if (ch + kAhead < kChunks) batch_issue_w(map, sm, groups, G, band, ch + kAhead);
        batch_issue_x(a, sm, S, nx, ch + x_ahead);
        const auto& w = sm.w[ch % GemvBatchSmem::kWStages];
        const uint32_t* xs = sm.x + (ch % nx) * S * GemvBatchSmem::kXRowWords;
#pragma unroll
        for (int st = 0; st < kChunkKSteps / kKQuarters; ++st) {  // k-step 4kw + st: box kw, its piece pair st
            const int p0 = ((2 * st) ^ g) * 4 + cq, p1 = ((2 * st + 1) ^ g) * 4 + cq;  // swizzled (g = row % 8)
            const int word = (kw * (kChunkKSteps / kKQuarters) + st) * 8 + cq;
            uint32_t b[kTilesPerWarp][2];
#pragma unroll
            for (int u = 0; u < kTilesPerWarp; ++u) {
                const int tok = min((ts + u * kTileWarps) * 8 + g, S - 1);  // columns past S: discarded
                b[u][0] = xs[tok * GemvBatchSmem::kXRowWords + word];
                b[u][1] = xs[tok * GemvBatchSmem::kXRowWords + word + 4];
            }
#pragma unroll
            for (int gi = 0; gi < kBatchGroups; ++gi) {
                if (gi < G) {
                    const int r = gi * k3::kGroupRows + g;
                    const uint32_t a0 = w[kw][r][p0], a1 = w[kw][r + 8][p0];
                    const uint32_t a2 = w[kw][r][p1], a3 = w[kw][r + 8][p1];
#pragma unroll
                    for (int u = 0; u < kTilesPerWarp; ++u)
                        if (ts + u * kTileWarps < tiles) mma_bf16_16816(acc[gi][u], a0, a1, a2, a3, b[u][0], b[u][1]);
                }
            }
        }
    }
    async_wait<0>();
    if (!ok) return false;  // the error word is set
    __syncthreads();  // every step has landed and been used: the barriers retire, the stages hold partials
    if (threadIdx.x == 0)
        for (int st = 0; st < GemvBatchSmem::kWStages; ++st) mbar_inval(&sm.full[st]);
    // every quarter's partials, red[((kw·G + gi)·16 + row)·kMaxS + token], then added in kw order
#pragma unroll
    for (int gi = 0; gi < kBatchGroups; ++gi)
        if (gi < G)
#pragma unroll
            for (int u = 0; u < kTilesPerWarp; ++u)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int row = g + (i >= 2 ? 8 : 0), tok = (ts + u * kTileWarps) * 8 + cq * 2 + (i & 1);
                    if (tok < S) sm.red[((kw * G + gi) * 16 + row) * k3::kMaxS + tok] = acc[gi][u][i];
                }
    __syncthreads();
    for (int p = threadIdx.x; p < G * k3::kGroupRows * S; p += kThreads) {
        const int tok = p / (G * k3::kGroupRows), gi = p / k3::kGroupRows % G, row = p % k3::kGroupRows;
        float sum = sm.red[(gi * 16 + row) * k3::kMaxS + tok];
        for (int k = 1; k < kKQuarters; ++k) sum = sum + sm.red[((k * G + gi) * 16 + row) * k3::kMaxS + tok];
        a.proj[size_t(tok) * k3::N + groups[gi] * k3::kGroupRows + row] = bf16::from_bits(rnd(sum));  // #3
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x < G) st_release(a.flags + c.flag_off[int(Mailbox::PROJ)] + groups[threadIdx.x], c.tag);
    if (a.trace && threadIdx.x == 0) a.trace[blockIdx.x * kTraceWords + kTraceWords - 2] = now_ns();
    __syncthreads();
    return true;
}
#endif

}  // namespace monokda::gpu
