// The NVIDIA body of a CTA's gemv instructions: its consecutive GEMV_PREFETCH / GEMV_GROUP pairs
// (up to kBatchGroups groups) run as one pass over x, one 128-column slice an iteration.
//
// Why: the weight stream is latency-bound unless each SM keeps ~100 KB of it in flight the whole
// time. The copy engine (TMA) keeps kWStages - 1 slices of every group's weights in flight
// (~147 KB a CTA; a slice's boxes complete on the slice's mbarrier), in few large requests and
// off the SM's load/store path, so x and flag loads never queue behind the weights. x goes
// through cp.async two slices ahead. The first slices' weights are in flight before x exists.
// Same instructions, same waits (XRDY of every slice) and products (PROJ of every group, released
// when the pass ends) as the plan's; only the interleaving differs.
//
// Sum order, the same whatever S is (so a token's proj does not depend on its batch): warp w's
// k-quarter kw = w % 4 owns k-steps 2kw, 2kw+1 of every slice and accumulates them in slice order
// (the matrix unit's order inside a 16-column k-step); the four quarters are added in kw order.
// Warps w / 4 = 0, 1 split the token tiles (8 tokens a tile) between them.
#pragma once
#include "kernels/kda_gemv.hpp"

namespace monokda::gpu {

#if MONOKDA_NVIDIA
constexpr int kBatchGroups = 6;  // ceil(393 / 76) for k3 on 132 SMs; more groups take more passes
constexpr int kChunkCols = k3::kSlice;       // one attn slice: its XRDY flag guards exactly this
constexpr int kChunks = k3::D / kChunkCols;  // 56
constexpr int kChunkKSteps = kChunkCols / 16;
constexpr int kKQuarters = 4;                // fixed: the sum order must not depend on S
constexpr int kTileWarps = kThreads / 32 / kKQuarters;
constexpr int kTilesPerWarp = (k3::kMaxS / 8) / kTileWarps;
// A weight box: 16 rows (one group) × 64 columns = 128 bytes a row, stored with the copy engine's
// 128-byte swizzle (16-byte piece j of row r lands at piece j ^ (r % 8)), so the fragment loads of
// 8 rows hit 8 different bank groups. Two boxes a group a slice.
constexpr int kBoxCols = 64, kBoxWords = kBoxCols / 2;
constexpr uint32_t kBoxBytes = k3::kGroupRows * kBoxCols * 2;

struct GemvBatchSmem {
    static constexpr int kWStages = 7;  // slices of weights: 6 in flight, 1 in use
    static constexpr int kXStages = 3;  // slices of x: 2 in flight, 1 in use
    static constexpr int kXRowWords = kChunkCols / 2 + 4;  // 16-byte rows shifted 4 banks each
    union {
        uint32_t w[kWStages][kBatchGroups][kChunkCols / kBoxCols][k3::kGroupRows][kBoxWords];
        float red[kKQuarters * kBatchGroups * k3::kGroupRows * k3::kMaxS];  // after the pass
    };
    uint32_t x[kXStages][k3::kMaxS][kXRowWords];
    uint64_t full[kWStages];  // weight slice landed (the boxes' bytes), one phase a use
};
// the swizzle pattern repeats every 1024 bytes, so the stages start on a 1024-byte boundary
constexpr size_t kGemvBatchSmemBytes = sizeof(GemvBatchSmem) + 1024;
static_assert(kThreads == 256 && kChunkKSteps % kKQuarters == 0, "the batch body maps 8 warps");
static_assert(sizeof(uint32_t) * kBatchGroups * 2 * k3::kGroupRows * kBoxWords % 1024 == 0, "stages keep 1024-byte alignment");
static_assert(sizeof(float) * kKQuarters * kBatchGroups * k3::kGroupRows * k3::kMaxS <=
                  sizeof(uint32_t) * GemvBatchSmem::kWStages * kBatchGroups * 2 * k3::kGroupRows * kBoxWords,
              "the quarters' partials fit where the weight stages were");

__device__ __forceinline__ GemvBatchSmem& batch_smem(unsigned char* smem) {
    return *reinterpret_cast<GemvBatchSmem*>(smem + ((1024u - (smem_u32(smem) & 1023u)) & 1023u));
}

// Thread 0 issues slice ch of every group: two 16 × 64 boxes a group, on the slice's mbarrier.
__device__ __forceinline__ void batch_issue_w(const WeightMap* map, GemvBatchSmem& sm, const int* groups, int G, int ch) {
    if (threadIdx.x != 0) return;
    const int st = ch % GemvBatchSmem::kWStages;
    mbar_arrive_expect(&sm.full[st], uint32_t(G * 2) * kBoxBytes);
    for (int gi = 0; gi < G; ++gi)
        for (int h = 0; h < 2; ++h)
            bulk_tensor_2d(&sm.w[st][gi][h][0][0], map, ch * kChunkCols + h * kBoxCols, groups[gi] * k3::kGroupRows,
                           &sm.full[st]);
}

// Slice ch's weights have landed (every thread waits: the wait is what makes the bytes visible).
// Bounded like a mailbox poll; a timeout names the slice (box kMailboxCount: the weight copy).
__device__ __forceinline__ bool batch_wait_w(const KdaArgs& a, const Ctl& c, GemvBatchSmem& sm, int ch) {
    uint64_t* bar = &sm.full[ch % GemvBatchSmem::kWStages];
    const uint32_t parity = uint32_t(ch / GemvBatchSmem::kWStages) & 1u;
    if (mbar_try_wait(bar, parity)) return true;
    return spin(a, c, [&] { return mbar_try_wait(bar, parity); }, [](bool done) { return done; },
                uint32_t(kMailboxCount), uint32_t(ch));
}

// x slice ch, all S rows, through cp.async (one commit group a slice, possibly empty).
__device__ __forceinline__ void batch_issue_x(const KdaArgs& a, GemvBatchSmem& sm, int S, int ch) {
    if (ch < kChunks)
        for (int i = threadIdx.x; i < S * (kChunkCols / 8); i += kThreads) {
            const int s = i / (kChunkCols / 8), q = i % (kChunkCols / 8);
            copy16_async(&sm.x[ch % GemvBatchSmem::kXStages][s][q * 4], a.x + size_t(s) * k3::D + ch * kChunkCols + q * 8);
        }
    async_commit();
}

// XRDY[ch]. Flags only ever turn ready within a launch, so once a poll has seen slices
// 0..x_seen-1 ready, the pass stops polling them: after its wait, one sweep (a thread a flag,
// acquire) finds how far the ready prefix reaches.
__device__ __forceinline__ bool batch_wait_x(const KdaArgs& a, Ctl& c, int ch) {
    if (ch >= kChunks || c.x_seen > ch) return true;
    if (!wait_flags(a, c, Mailbox::XRDY, 1, [&](int) { return ch; })) return false;
    __shared__ int ready[k3::kAttn];
    if (threadIdx.x < k3::kAttn) {
        ready[threadIdx.x] = ld_acquire(a.flags + c.flag_off[int(Mailbox::XRDY)] + threadIdx.x) == c.tag;
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int n = ch + 1;
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
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, cq = lane % 4;
    const int kw = warp % kKQuarters, ts = warp / kKQuarters;
    float acc[kBatchGroups][kTilesPerWarp][4];
#pragma unroll
    for (int gi = 0; gi < kBatchGroups; ++gi)
#pragma unroll
        for (int u = 0; u < kTilesPerWarp; ++u) acc[gi][u][0] = acc[gi][u][1] = acc[gi][u][2] = acc[gi][u][3] = 0.0f;

    for (int ch = 0; ch < kAhead; ++ch) batch_issue_w(map, sm, groups, G, ch);  // before x exists
    bool ok = batch_wait_x(a, c, 0);
    if (ok) batch_issue_x(a, sm, S, 0);
    ok = ok && batch_wait_x(a, c, 1);
    if (ok) batch_issue_x(a, sm, S, 1);
    for (int ch = 0; ch < kChunks && ok; ++ch) {
        if (!batch_wait_x(a, c, ch + 2)) {  // polled now, issued once slice ch-1's x stage is free
            ok = false;
            break;
        }
        async_wait<1>();  // x slices 0..ch+1 issued: x(ch) has landed for this thread's pieces
        const bool landed = batch_wait_w(a, c, sm, ch);
        if (__syncthreads_or(!landed)) {  // for every thread: W(ch), x(ch); slice ch-1's stages are free
            ok = false;
            break;
        }
        if (ch + kAhead < kChunks) batch_issue_w(map, sm, groups, G, ch + kAhead);
        batch_issue_x(a, sm, S, ch + 2);
        const auto& w = sm.w[ch % GemvBatchSmem::kWStages];
        const uint32_t(*xs)[GemvBatchSmem::kXRowWords] = sm.x[ch % GemvBatchSmem::kXStages];
#pragma unroll
        for (int st = 0; st < kChunkKSteps / kKQuarters; ++st) {
            const int kstep = kw * (kChunkKSteps / kKQuarters) + st;
            const int h = kstep / (kBoxCols / 16), kl = kstep % (kBoxCols / 16);
            const int p0 = ((2 * kl) ^ g) * 4 + cq, p1 = ((2 * kl + 1) ^ g) * 4 + cq;  // swizzled pieces (g = row % 8)
            const int word = kstep * 8 + cq;
            uint32_t b[kTilesPerWarp][2];
#pragma unroll
            for (int u = 0; u < kTilesPerWarp; ++u) {
                const int tok = min((ts + u * kTileWarps) * 8 + g, k3::kMaxS - 1);
                b[u][0] = xs[tok][word];
                b[u][1] = xs[tok][word + 4];
            }
#pragma unroll
            for (int gi = 0; gi < kBatchGroups; ++gi) {
                if (gi < G) {
                    const uint32_t a0 = w[gi][h][g][p0], a1 = w[gi][h][g + 8][p0];
                    const uint32_t a2 = w[gi][h][g][p1], a3 = w[gi][h][g + 8][p1];
#pragma unroll
                    for (int u = 0; u < kTilesPerWarp; ++u)
                        if (ts + u * kTileWarps < tiles)
                            asm volatile(
                                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                                "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                                : "+f"(acc[gi][u][0]), "+f"(acc[gi][u][1]), "+f"(acc[gi][u][2]), "+f"(acc[gi][u][3])
                                : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b[u][0]), "r"(b[u][1]));
                }
            }
        }
    }
    async_wait<0>();
    if (!ok) return false;  // the error word is set
    __syncthreads();  // every slice has landed and been used: the barriers retire, the stages hold partials
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
    __syncthreads();
    return true;
}
#endif

}  // namespace monokda::gpu
