// The NVIDIA body of a CTA's gemv instructions: its consecutive GEMV_PREFETCH / GEMV_GROUP pairs of
// contiguous groups (up to kBatchGroups) run as one pass over x, 256 columns (two attn slices) a step.
//
// Why (docs/decisions/0005-gemv-pass-band-boxes.md; monokda-stream-probe): the copy engine (TMA)
// streams the weight near cuBLAS's rate only in few, large requests: one box of a CTA's whole
// band of rows (the plan deals each gemv CTA one contiguous band of groups) a
// 64-column step, where one thread issuing a small box a group caps the stream at about a third.
// So a step is 256 columns: 4 band boxes (G groups tall × 64 columns, in stages of a wide band, 4–6
// groups: 96 rows, or a narrow one, up to 3: 48 rows; 128-byte swizzle) issued by one thread, completing on the step's
// mbarrier; up to 16 rows 3 wide steps or 7 narrow ones are in flight while one is used, above
// 16 rows 3 narrow ones (2 wide) (BatchStage::count). The plan's bands are wide up to 15 rows and
// narrow from 16 (PlanPolicy::kSpreadGemvMinS), where it deals them over every CTA and an attn
// CTA's pass starts after its ATTN_X (docs/decisions/0002-gemv-bands-every-cta.md). Groups that
// are not contiguous (a hand-edited plan) run as passes of their contiguous runs. x goes through the copy engine
// too, 4 boxes of the step's S rows × 64 columns, up to 3 steps ahead (XBatch); through cp.async,
// 16 bytes a thread, its copies had set the step's pace from ~8 rows
// (docs/decisions/0007-x-through-copy-engine.md). The first steps' weights are in flight before x
// exists. Same instructions, same waits (XRDY of every slice) and products (PROJ of every group, released when
// the pass ends) as the plan's; only the interleaving differs.
//
// The products of a step are a fixed, branch-free instruction sequence per warp (batch_steps is
// instantiated per warp mapping): ncu showed the earlier loop, with its token tiles and groups
// guarded at run time, issuing ~630 instructions a warp a step (96 matrix products, 3 of 4 predicated
// off at S = 1), instruction-bound while every weight step had already landed when waited for
// (docs/results/2026-11-30-h200-ncu-gemv.md).
//
// Sum order, the same whatever S is (so a token's proj does not depend on its batch): warp w's
// k-quarter kw = w % 4 owns k-steps 4kw .. 4kw+3 of every step and accumulates them in step order
// (the matrix unit's order inside a 16-column k-step); the four quarters are added in kw order.
// Warps w / 4 = 0, 1 split the token tiles (8 tokens a tile) between them, or, with one tile
// (S <= 8), the groups.
#pragma once
#include "kernels/kda_gemv.hpp"

namespace monokda::gpu {

#if MONOKDA_NVIDIA
constexpr int kBatchGroups = 6;  // the most groups a pass takes (Plan::gemv_bands); more take more passes
constexpr int kChunkCols = 2 * k3::kSlice;   // a step: two attn slices
constexpr int kChunks = k3::D / kChunkCols;  // 28
constexpr int kChunkKSteps = kChunkCols / 16;
constexpr int kKQuarters = 4;                // fixed: the sum order must not depend on S
constexpr int kTileWarps = kThreads / 32 / kKQuarters;
constexpr int kMaxTilesPerWarp = (k3::kMaxS / 8) / kTileWarps;
// A weight box: 16 rows (one group) × 64 columns = 128 bytes a row, stored with the copy engine's
// 128-byte swizzle (16-byte piece j of row r lands at piece j ^ (r % 8)), so the fragment loads of
// 8 rows hit 8 different bank groups. Four 64-column pieces a step; a k-quarter reads one of them.
// A band's piece is one box of its G groups, in a stage piece of 48 rows (up to 3 groups) or 96 (up to 6).
constexpr int kBoxCols = 64, kBoxWords = kBoxCols / 2, kBoxesPerStep = kChunkCols / kBoxCols;
constexpr uint32_t kBoxBytes = k3::kGroupRows * kBoxCols * 2;
constexpr int kBoxGroups = 3, kBandRows = kBoxGroups * k3::kGroupRows;
constexpr uint32_t kBandBytes = kBandRows * kBoxCols * 2;  // a narrow stage's piece (wide: twice); rows past N arrive as zeros
static_assert(kBoxesPerStep == kKQuarters, "a quarter a box");
static_assert(kBatchGroups == 2 * kBoxGroups, "a band's box is narrow or wide");

// x of a step: 4 boxes (one a k-quarter) of S rows × 64 columns, 128 bytes a row with the weight's
// 128-byte swizzle, each box on a 1024-byte boundary (the swizzle's period). Up to kAhead steps
// ahead of the one being used; the ring's barriers sit at the end of the pass's buffer.
struct XBatch {
    static constexpr int kAhead = 3;
    static constexpr int kBarWords = 2 * (kAhead + 1);
    __host__ __device__ static constexpr int box_words(int S) { return (S * kBoxWords + 255) / 256 * 256; }
    __host__ __device__ static constexpr int stage_words(int S) { return kBoxesPerStep * box_words(S); }
};

struct GemvBatchSmem {
    static constexpr int kWideStageWords = kBoxesPerStep * 2 * kBandRows * kBoxWords;  // a step of 6 groups: 48 KB
    static constexpr int kMaxWStages = 8;
    static constexpr int kDeepRingMaxS = 16;  // up to this S the pass keeps 4 steps of 6 groups (8 of 3) (BatchStage::count)
    // weight stages first, then the x ring in what is left, then the ring's barriers (the buffer's
    // start also holds the pass's partials, red, after the pass)
    static constexpr int kBufWords =
        4 * kWideStageWords + (XBatch::kAhead + 1) * XBatch::stage_words(kDeepRingMaxS) + XBatch::kBarWords;
    union {
        uint32_t buf[kBufWords];
        float red[kKQuarters * kBatchGroups * k3::kGroupRows * k3::kMaxS];  // after the pass
    };
    uint64_t full[kMaxWStages];  // weight step landed (the boxes' bytes), one phase a use
};
// A pass's stages, for a band of kBandGroups (3 or 6) groups: a step is 4 pieces of 16·kBandGroups
// rows. Compile-time in the pass's loop: with the band's shape read at run time, the steps measured
// 5-20 % slower. count(S): fewer stages than the buffer holds, chosen by measurement on the H200
// (docs/decisions/0006-gemv-weight-stages.md): from 17 rows on, a deep weight ring left the x ring
// 1–2 steps and its copies, read from L2 behind the weight's own traffic, set the step's pace. With
// x through the copy engine (XBatch: 32 KB a step at 64 rows) 4 narrow stages and a 4-step x ring
// fit together and measured faster than 3; wide bands there (hand-edited plans only) keep 3. Up to
// 16 rows the x ring holds 4 steps anyway and the ring stays as deep as it fits (4 wide, 8 narrow):
// 3 wide stages there measured slower.
template <int kBandGroups>
struct BatchStage {
    static_assert(kBandGroups == kBoxGroups || kBandGroups == kBatchGroups, "a narrow or a wide band");
    static constexpr int kRows = kBandGroups * k3::kGroupRows, kWords = kBoxesPerStep * kRows * kBoxWords;
    __device__ static int count(int S) {
        if (S <= GemvBatchSmem::kDeepRingMaxS) return 4 * (kBatchGroups / kBandGroups);
        return kBandGroups == kBoxGroups ? 4 : 3;
    }
    __device__ static uint32_t* at(GemvBatchSmem& sm, int st) { return sm.buf + st * kWords; }  // [piece][row][word]
};
static_assert(BatchStage<kBoxGroups>::kWords * 8 == GemvBatchSmem::kWideStageWords * 4, "stages of either width fill the same room");
// the swizzle pattern repeats every 1024 bytes, so the stages start on a 1024-byte boundary
constexpr size_t kGemvBatchSmemBytes = sizeof(GemvBatchSmem) + 1024;
static_assert(kThreads == 256 && kChunkKSteps % kKQuarters == 0, "the batch body maps 8 warps");
static_assert(kBoxBytes % 1024 == 0 && kBandBytes % 1024 == 0, "every box starts on a 1024-byte boundary");
static_assert(sizeof(float) * kKQuarters * kBatchGroups * k3::kGroupRows * k3::kMaxS <=
                  sizeof(uint32_t) * GemvBatchSmem::kBufWords,
              "the quarters' partials fit in the pass's buffer");
static_assert(GemvBatchSmem::kBufWords - XBatch::kBarWords - 3 * GemvBatchSmem::kWideStageWords >=
                  2 * XBatch::stage_words(k3::kMaxS),
              "with 3 steps of 6 groups, two steps of x fit at the largest S");
static_assert(GemvBatchSmem::kBufWords - XBatch::kBarWords - 4 * BatchStage<kBoxGroups>::kWords >=
                  (XBatch::kAhead + 1) * XBatch::stage_words(k3::kMaxS),
              "above 16 rows, 4 steps of 3 groups and the whole x ring fit at the largest S");
static_assert((GemvBatchSmem::kBufWords - XBatch::kBarWords) % 2 == 0, "x's barriers are 8-byte aligned");

__device__ __forceinline__ GemvBatchSmem& batch_smem(unsigned char* smem) {
    return *reinterpret_cast<GemvBatchSmem*>(smem + ((1024u - (smem_u32(smem) & 1023u)) & 1023u));
}
__device__ __forceinline__ uint64_t* x_bars(GemvBatchSmem& sm) {
    return reinterpret_cast<uint64_t*>(sm.buf + GemvBatchSmem::kBufWords - XBatch::kBarWords);
}

// Step ch: thread 0 issues the band's 4 boxes, G groups tall (one a piece: a box instruction costs
// about as much whatever its height, so two 48-row boxes instead of one 96-row box slowed 6-group
// bands' steps; spreading the boxes over 4 warps measured the same as thread 0;
// docs/decisions/0005-gemv-pass-band-boxes.md). A pass is one band (run_instructions splits a CTA's groups where they stop being contiguous).
template <int kBandGroups>
__device__ __forceinline__ void batch_issue_w(const WeightMap* map, GemvBatchSmem& sm, int group0, int G, int ch, int st,
                                              uint64_t policy) {
    using Stage = BatchStage<kBandGroups>;
    if (threadIdx.x != 0) return;
    uint32_t* w = Stage::at(sm, st);
    mbar_arrive_expect(&sm.full[st], uint32_t(kBoxesPerStep * G) * kBoxBytes);
    for (int b = 0; b < kBoxesPerStep; ++b)
        bulk_tensor_2d(w + b * Stage::kRows * kBoxWords, &map->band[G - 1], ch * kChunkCols + b * kBoxCols,
                       group0 * k3::kGroupRows, &sm.full[st], policy);
}

// Step ch's weights (in stage st, its barrier's phase parity) have landed (every thread waits: the
// wait is what makes the bytes visible). Bounded like a mailbox poll; a timeout names the step (box
// kBoxWeightCopy).
__device__ __forceinline__ bool batch_wait_w(const KdaArgs& a, const Ctl& c, GemvBatchSmem& sm, int st, uint32_t parity,
                                             int ch) {
    uint64_t* bar = &sm.full[st];
    if (mbar_try_wait(bar, parity)) return true;
    return spin(a, c, [&] { return mbar_try_wait(bar, parity); }, [](bool done) { return done; },
                kBoxWeightCopy, uint32_t(ch));
}

// x of step ch (S rows) into ring stage xst through the copy engine, counted on xbar[xst]; issued by
// warp 1's lane 0 (warp 0 issues the weight's boxes and polls XRDY). Called by every thread.
__device__ __forceinline__ void batch_issue_x(const WeightMap* map, uint32_t* xring, uint64_t* xbar, int S, int xst, int ch) {
    if (ch >= kChunks || threadIdx.x != 32) return;
    uint32_t* stage = xring + xst * XBatch::stage_words(S);
    fence_async_proxy_global();  // x was acquired through XRDY (generic proxy); the copy engine reads it
    fence_async_proxy();         // the stage was last read by ldmatrix, before the step's barrier
    mbar_arrive_expect(&xbar[xst], uint32_t(S) * kChunkCols * 2);
    const uint64_t policy = l2_policy(false);  // every CTA reads the same x
    for (int b = 0; b < kBoxesPerStep; ++b)
        bulk_tensor_2d(stage + b * XBatch::box_words(S), &map->x, ch * kChunkCols + b * kBoxCols, 0, &xbar[xst], policy);
}

// Step ch's x (in stage st, its barrier's phase parity) has landed; as batch_wait_w (box kBoxXCopy).
__device__ __forceinline__ bool batch_wait_x_landed(const KdaArgs& a, const Ctl& c, uint64_t* xbar, int st, uint32_t parity,
                                                    int ch) {
    uint64_t* bar = &xbar[st];
    if (mbar_try_wait(bar, parity)) return true;
    return spin(a, c, [&] { return mbar_try_wait(bar, parity); }, [](bool done) { return done; }, kBoxXCopy, uint32_t(ch));
}

// XRDY of both slices of step ch (every part of each: a slice's parts are consecutive entries).
// Flags only ever turn ready within a launch, and every attn CTA publishes at about the same time,
// so warp 0 reads all 56 or 112 flags at once (four a lane, one load: XRDY's flags open the flag
// memory, kda_pre.cu; an acquire load, so no fence after it: relaxed loads and a fence after them
// measured slower) and records how far the ready prefix of entries reaches; later steps inside
// it poll nothing. While waiting only lane 0 polls, on the first entry not ready, with the
// mailboxes' pause (spin): up to 132 CTAs keep reading the flag lines that the attn CTAs write, so
// one load a poll, not 32.
// `seen` is each thread's copy of the prefix (the same in every thread): deciding on the shared
// c.x_seen instead let a late warp see lane 0's new value and skip the barrier the others were at
// (racecheck and an illegal instruction under memcheck: docs/results/2026-11-30-h200-sanitize.md).
__device__ __forceinline__ bool batch_wait_x(const KdaArgs& a, Ctl& c, int& seen, int ch) {
    constexpr int per = kChunkCols / k3::kSlice;
    static_assert(k3::kAttn * k3::kMaxAttnParts <= 4 * 32 && k3::kAttn % 4 == 0, "four whole flags a lane");
    const int n = k3::kAttn * a.attn_parts, need = (ch + 1) * per * a.attn_parts;
    if (ch >= kChunks || seen >= need) return true;
    bool ok = true;
    if (threadIdx.x < 32) {
        const uint32_t* f = a.flags + c.flag_off[int(Mailbox::XRDY)];
        const int lane = threadIdx.x;
        for (;;) {
            // the lane's ready entries before its first one not ready (none past n)
            int k = 0;
            if (4 * lane < n) {
                const uint4 v = ld_acquire128(f + 4 * lane);
                k = v.x != c.tag ? 0 : v.y != c.tag ? 1 : v.z != c.tag ? 2 : v.w != c.tag ? 3 : 4;
            }
            const uint32_t short_lanes = __ballot_sync(~0u, k < 4);
            const int first = short_lanes ? __ffs(short_lanes) - 1 : 31;
            const int prefix = 4 * first + __shfl_sync(~0u, k, first);
            if (prefix >= need) {
                if (lane == 0) c.x_seen = prefix;
                break;
            }
            int stop = 0;
            if (lane == 0)
                stop = !spin(a, c, [&] { return ld_flag_peek(f + prefix); }, [&](uint32_t v) { return v == c.tag; },
                             uint32_t(Mailbox::XRDY), uint32_t(prefix));
            if (__shfl_sync(~0u, stop, 0)) {
                ok = false;
                break;
            }
        }
    }
    if (__syncthreads_or(!ok)) return false;
    seen = c.x_seen;
    __syncthreads();  // every thread has read it before lane 0 may write it again
    return true;
}

// What one warp computes in a pass: groups g0 .. g0 + kGroupsPerWarp - 1 of the band (groups past G
// are computed and dropped: no guard inside the step), token tiles t0, t0 + 2, ... (kTilesPerWarp
// of them; tokens past S are the last token again, computed and dropped).
struct BatchWarp {
    int kw, g0, t0;
};

// The pass's steps for one warp mapping; leaves the k-quarter partials in sm.red. False if a wait
// gave up (the error word is set).
template <int kTilesPerWarp, int kGroupsPerWarp, int kBandGroups>
__device__ __forceinline__ bool batch_steps(const KdaArgs& a, Ctl& c, const WeightMap* map, GemvBatchSmem& sm, int group0,
                                            int G, bool paced, int nst, BatchWarp m) {
    using Stage = BatchStage<kBandGroups>;
    const int S = a.S, lane = threadIdx.x % 32, g = lane / 4, cq = lane % 4;
    uint32_t* xring = Stage::at(sm, nst);
    uint64_t* xbar = x_bars(sm);
    // the x ring: as many steps as fit, up to XBatch::kAhead + 1 (4 for every band the plan deals,
    // with BatchStage::count); x runs nx - 1 steps ahead. Not more: with cp.async copies, x up to 6
    // steps ahead measured the same or slower (docs/results/2026-11-30-h200-pass-bounds.md), and the
    // room goes to the weight's stages.
    const int nx = min(XBatch::kAhead + 1, (GemvBatchSmem::kBufWords - XBatch::kBarWords - nst * Stage::kWords) /
                                               XBatch::stage_words(S)),
              x_ahead = nx - 1, w_ahead = nst - 1;
    // Fragments through ldmatrix. x: lane l gives row l % 8 of tile u's matrix (l / 8) % 2 (k words
    // 0..3 or 4..7 of the k-step): token tile·8 + l % 8, the last token past S, 16-byte piece 2·st +
    // (l / 8) % 2 of its k-quarter's box, swizzled by the token's row % 8. Weights: lane l gives row
    // R = ((l / 8) % 2)·8 + l % 8 of a group, 16-byte piece 2·st + l / 16 (swizzled by R % 8).
    const int lr = lane % 8, lhalf = (lane / 8) % 2, lpiece = lane / 16, wrow = lhalf * 8 + lr;
    int tok[kTilesPerWarp], tsw[kTilesPerWarp];
#pragma unroll
    for (int u = 0; u < kTilesPerWarp; ++u) {
        const int row = min((m.t0 + u * kTileWarps) * 8 + lr, S - 1);
        tok[u] = row * kBoxWords;
        tsw[u] = row % 8;
    }
    // A warp reads groups g0.. of the piece. With as many groups as the band (g0 = 0, or a narrow
    // band's second warp at one tile, whose groups are all dropped) it reads groups 0.., so its
    // reads stay inside the band and the offsets are constants.
    const int g0 = kGroupsPerWarp == kBandGroups ? 0 : m.g0;
    float acc[kGroupsPerWarp][kTilesPerWarp][4];
#pragma unroll
    for (int gi = 0; gi < kGroupsPerWarp; ++gi)
#pragma unroll
        for (int u = 0; u < kTilesPerWarp; ++u) acc[gi][u][0] = acc[gi][u][1] = acc[gi][u][2] = acc[gi][u][3] = 0.0f;

    const uint64_t policy = l2_policy(a.w_evict_first);
    // before x exists (a CTA's first pass: `paced`), a.w_pace_ns apart: issued together, the 66
    // bands' first 9.5 MB held up the attn role's hand-offs through L2; paced, the gate ends earlier
    // at one token (docs/decisions/0008-weight-pacing.md)
    for (int ch = 0; ch < w_ahead; ++ch) {
        if (ch && paced && a.w_pace_ns && threadIdx.x == 0) {
            const uint64_t t0 = now_ns();
            while (now_ns() - t0 < uint64_t(a.w_pace_ns)) {
            }
        }
        batch_issue_w<kBandGroups>(map, sm, group0, G, ch, ch, policy);
    }
    if (threadIdx.x >= kThreads - 32) warm_exp();  // for the kda tasks after the pass, while x is awaited
    bool ok = true;
    int x_seen = 0;  // XRDY entries 0..x_seen-1 seen ready (batch_wait_x)
    for (int ch = 0; ch < x_ahead && ok; ++ch) {
        ok = batch_wait_x(a, c, x_seen, ch);
        if (ch == 0 && a.trace && threadIdx.x == 0) a.trace[blockIdx.x * kTraceWords + kTraceXFirst] = now_ns();
        if (ok) batch_issue_x(map, xring, xbar, S, ch, ch);
    }
    if (a.trace && threadIdx.x == 0) a.trace[blockIdx.x * kTraceWords + 1] = now_ns();
    // the rings' stages of step ch and the weight barrier's phase, kept as counters: a run-time
    // modulo is a chain of dependent instructions, and the step is a chain of them
    int wst = 0, xst = 0;
    uint32_t wpar = 0, xpar = 0;
    for (int ch = 0; ch < kChunks && ok; ++ch) {
        if (!batch_wait_x(a, c, x_seen, ch + x_ahead)) {  // polled now, issued once step ch-1's stages are free
            ok = false;
            break;
        }
        const bool landed = batch_wait_x_landed(a, c, xbar, xst, xpar, ch) && batch_wait_w(a, c, sm, wst, wpar, ch);
        if (__syncthreads_or(!landed)) {  // for every thread: W(ch), x(ch); step ch-1's stages are free
            ok = false;
            break;
        }
        if (a.trace && threadIdx.x == 0) a.trace[blockIdx.x * kTraceWords + 2 + ch] = now_ns();
        // steps ch + nst - 1 and ch + nx - 1 go where step ch - 1 was
        if (ch + w_ahead < kChunks)
            batch_issue_w<kBandGroups>(map, sm, group0, G, ch + w_ahead, wst ? wst - 1 : nst - 1, policy);
        batch_issue_x(map, xring, xbar, S, xst ? xst - 1 : nx - 1, ch + x_ahead);
        // this warp's box (its k-quarter's 64 columns), rows of its groups
        const uint32_t* w = Stage::at(sm, wst) + (m.kw * Stage::kRows + g0 * k3::kGroupRows + wrow) * kBoxWords;
        const uint32_t* xs = xring + xst * XBatch::stage_words(S) + m.kw * XBatch::box_words(S);
#pragma unroll
        for (int st = 0; st < kChunkKSteps / kKQuarters; ++st) {  // k-step 4kw + st: box kw, its piece pair st
            const int piece = ((2 * st + lpiece) ^ lr) * 4;  // this lane's weight row address (swizzled)
            uint32_t b[kTilesPerWarp][2];
#pragma unroll
            for (int u = 0; u < kTilesPerWarp; ++u) ldmatrix_x2(b[u], xs + tok[u] + ((2 * st + lhalf) ^ tsw[u]) * 4);
#pragma unroll
            for (int gi = 0; gi < kGroupsPerWarp; ++gi) {
                uint32_t a[4];  // a0..a3: rows g | g+8, k pieces 2st | 2st+1
                ldmatrix_x4(a, w + gi * k3::kGroupRows * kBoxWords + piece);
#pragma unroll
                for (int u = 0; u < kTilesPerWarp; ++u) mma_bf16_16816(acc[gi][u], a[0], a[1], a[2], a[3], b[u][0], b[u][1]);
            }
        }
        if (++wst == nst) wst = 0, wpar ^= 1u;
        if (++xst == nx) xst = 0, xpar ^= 1u;
    }
    if (!ok) return false;  // the error word is set
    __syncthreads();  // every step has landed and been used: the barriers retire, the stages hold partials
    if (threadIdx.x == 0) {
        for (int st = 0; st < nst; ++st) mbar_inval(&sm.full[st]);
        for (int st = 0; st <= XBatch::kAhead; ++st) mbar_inval(&xbar[st]);
    }
    // every quarter's partials, red[((kw·G + gi)·16 + row)·kMaxS + token]
#pragma unroll
    for (int gi = 0; gi < kGroupsPerWarp; ++gi)
#pragma unroll
        for (int u = 0; u < kTilesPerWarp; ++u)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int gg = m.g0 + gi, row = g + (i >= 2 ? 8 : 0);
                const int t = (m.t0 + u * kTileWarps) * 8 + cq * 2 + (i & 1);
                if (gg < G && t < S) sm.red[((m.kw * G + gg) * 16 + row) * k3::kMaxS + t] = acc[gi][u][i];
            }
    return true;
}

// Groups a pass takes at S rows: above 32 rows (5 token tiles and more) the products have
// instantiations for 3 groups only, as the plan's bands there are 3 (more take more passes).
__device__ __forceinline__ int batch_capacity(int S) { return (S + 7) / 8 > 4 ? kBoxGroups : kBatchGroups; }

// One pass: the band of G groups from group0 (contiguous). `paced`: the CTA's first pass, whose first
// steps go out before x exists.
__device__ bool gemv_batch(const KdaArgs& a, Ctl& c, const WeightMap* map, GemvBatchSmem& sm, int group0, int G, bool paced) {
    const int S = a.S, tiles = (S + 7) / 8;
    const bool narrow = G <= kBoxGroups;
    const int nst = narrow ? BatchStage<kBoxGroups>::count(S) : BatchStage<kBatchGroups>::count(S);
    if (threadIdx.x == 0) {
        c.x_seen = 0;  // (re)established by the first poll of this pass
        for (int st = 0; st < nst; ++st) mbar_init(&sm.full[st], 1);
        for (int st = 0; st <= XBatch::kAhead; ++st) mbar_init(&x_bars(sm)[st], 1);
        mbar_init_fence();
    }
    fence_async_proxy();  // the copy engine writes what threads of an earlier role wrote
    __syncthreads();
    const int warp = threadIdx.x / 32, kw = warp % kKQuarters, ts = warp / kKQuarters;
    bool ok;
    // One token tile: the two warps of a k-quarter take 3 groups each (with a narrow band the second
    // warp's are dropped). More: half the tiles each, all the band's groups; above 4 tiles only narrow
    // bands (batch_capacity). The plan's bands: wide below PlanPolicy::kSpreadGemvMinS rows, narrow
    // from there.
    static_assert(kTileWarps == 2 && kMaxTilesPerWarp == 4 && kBatchGroups == 2 * kBoxGroups, "the mappings below");
    constexpr int N3 = kBoxGroups, N6 = kBatchGroups;
    if (tiles == 1 && narrow) ok = batch_steps<1, N3, N3>(a, c, map, sm, group0, G, paced, nst, {kw, ts * N3, 0});
    else if (tiles == 1) ok = batch_steps<1, N3, N6>(a, c, map, sm, group0, G, paced, nst, {kw, ts * N3, 0});
    else if (tiles <= 2 && narrow) ok = batch_steps<1, N3, N3>(a, c, map, sm, group0, G, paced, nst, {kw, 0, ts});
    else if (tiles <= 2) ok = batch_steps<1, N6, N6>(a, c, map, sm, group0, G, paced, nst, {kw, 0, ts});
    else if (tiles <= 4 && narrow) ok = batch_steps<2, N3, N3>(a, c, map, sm, group0, G, paced, nst, {kw, 0, ts});
    else if (tiles <= 4) ok = batch_steps<2, N6, N6>(a, c, map, sm, group0, G, paced, nst, {kw, 0, ts});
    else if (tiles <= 6) ok = batch_steps<3, N3, N3>(a, c, map, sm, group0, G, paced, nst, {kw, 0, ts});  // G <= 3: batch_capacity
    else ok = batch_steps<4, N3, N3>(a, c, map, sm, group0, G, paced, nst, {kw, 0, ts});
    if (!ok) return false;
    __syncthreads();
    // the four quarters added in kw order
    for (int p = threadIdx.x; p < G * k3::kGroupRows * S; p += kThreads) {
        const int tok = p / (G * k3::kGroupRows), gi = p / k3::kGroupRows % G, row = p % k3::kGroupRows;
        float sum = sm.red[(gi * 16 + row) * k3::kMaxS + tok];
        for (int k = 1; k < kKQuarters; ++k) sum = sum + sm.red[((k * G + gi) * 16 + row) * k3::kMaxS + tok];
        a.proj[size_t(tok) * k3::N + (group0 + gi) * k3::kGroupRows + row] = bf16::from_bits(rnd(sum));  // #3
    }
    fence_before_cta_release();
    __syncthreads();
    if (threadIdx.x < G) {
        stress_before_store(a, c.tag, uint32_t(Mailbox::PROJ), uint32_t(group0) + threadIdx.x);
        st_release(a.flags + c.flag_off[int(Mailbox::PROJ)] + group0 + threadIdx.x, c.tag);
    }
    if (a.trace && threadIdx.x == 0) {
        const uint64_t t = now_ns();
        a.trace[blockIdx.x * kTraceWords + kTraceWords - 2] = t;
        if (paced) a.trace[blockIdx.x * kTraceWords + kTraceFirstPassEnd] = t;
    }
    __syncthreads();
    return true;
}
#endif

}  // namespace monokda::gpu
