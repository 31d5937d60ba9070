// The NVIDIA body of a CTA's gemv instructions: its consecutive GEMV_PREFETCH / GEMV_GROUP pairs
// (up to kBatchGroups groups) run as one pass over x, 256 columns an iteration.
//
// Why: one group at a time moves 4 KB of weight per synchronised slice step and re-reads all of x
// from L2 for every group; at 56 × ~6 steps a CTA that is latency, not bandwidth. One pass keeps
// two 256-column chunks of every group's weights in flight (cp.async, ~96 KB a CTA: enough to
// cover HBM latency at this CTA's share of the bandwidth), loads each x chunk once for all groups,
// and synchronises 28 times. Same instructions, same waits (XRDY of every slice) and products
// (PROJ of every group, released when the pass ends); the weights of every group's first chunks are
// in flight before x exists. Sum order: the matrix unit's within a 16-column k-step, the k-steps
// of one warp in order, then the warps' partials in warp order: deterministic.
#pragma once
#include "kernels/kda_gemv.hpp"

namespace monokda::gpu {

#if MONOKDA_NVIDIA
constexpr int kBatchGroups = 6;  // ceil(393 / 76) for k3 on 132 SMs; more groups take more passes
constexpr int kChunkCols = 2 * k3::kSlice;
constexpr int kChunks = k3::D / kChunkCols;  // 28
constexpr int kChunkKSteps = kChunkCols / 16;

struct GemvBatchSmem {
    static constexpr int kRowWords = kChunkCols / 2 + 4;  // 16-byte rows shifted 4 banks each
    static constexpr int kWStages = 3, kXStages = 2;
    union {
        uint32_t w[kWStages][kBatchGroups * k3::kGroupRows][kRowWords];
        float red[8 * kBatchGroups * k3::kGroupRows * 16];  // after the pass: the warps' partials
    };
    uint32_t x[kXStages][k3::kMaxS][kRowWords];
};
static_assert(kThreads == 256, "the batch body maps 8 warps");

__device__ __forceinline__ void batch_issue_w(const KdaArgs& a, GemvBatchSmem& sm, const int* groups, int G, int ch) {
    const int n = G * k3::kGroupRows * (kChunkCols / 8);
    for (int i = threadIdx.x; i < n; i += kThreads) {
        const int r = i / (kChunkCols / 8), q = i % (kChunkCols / 8);
        const int row = groups[r / k3::kGroupRows] * k3::kGroupRows + r % k3::kGroupRows;
        copy16_async(&sm.w[ch % GemvBatchSmem::kWStages][r][q * 4],
                     a.in_proj_w + size_t(row) * k3::D + ch * kChunkCols + q * 8);
    }
}

__device__ __forceinline__ void batch_issue_x(const KdaArgs& a, GemvBatchSmem& sm, int S, int ch) {
    for (int i = threadIdx.x; i < S * (kChunkCols / 8); i += kThreads) {
        const int s = i / (kChunkCols / 8), q = i % (kChunkCols / 8);
        copy16_async(&sm.x[ch % GemvBatchSmem::kXStages][s][q * 4], a.x + size_t(s) * k3::D + ch * kChunkCols + q * 8);
    }
}

// XRDY of both slices of chunk ch. Flags only ever turn ready within a launch, so once a poll
// has seen slices 0..x_seen-1 ready, the pass stops polling them: after its wait, one sweep
// (a thread a flag, acquire) finds how far the ready prefix reaches.
__device__ __forceinline__ bool batch_wait_x(const KdaArgs& a, Ctl& c, int ch) {
    constexpr int per = kChunkCols / k3::kSlice;
    if (c.x_seen >= (ch + 1) * per) return true;
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

__device__ bool gemv_batch(const KdaArgs& a, Ctl& c, GemvBatchSmem& sm, const int* groups, int G) {
    if (threadIdx.x == 0) c.x_seen = 0;  // (re)established by the first poll of this pass
    __syncthreads();
    const int S = a.S, tiles = (S + 7) / 8;
    // warps along k (KW) × along token tiles (TW = 8 / KW); a warp takes tiles {ts, ts + TW}
    const int KW = tiles <= 2 ? 8 : tiles <= 4 ? 4 : 2, TW = 8 / KW;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, cq = lane % 4;
    const int kw = warp % KW, ts = warp / KW, steps = kChunkKSteps / KW;
    float acc[kBatchGroups][2][4];
#pragma unroll
    for (int gi = 0; gi < kBatchGroups; ++gi)
#pragma unroll
        for (int u = 0; u < 2; ++u) acc[gi][u][0] = acc[gi][u][1] = acc[gi][u][2] = acc[gi][u][3] = 0.0f;

    batch_issue_w(a, sm, groups, G, 0);  // weights in flight before x exists
    batch_issue_w(a, sm, groups, G, 1);
    async_commit();
    if (!batch_wait_x(a, c, 0)) return async_wait<0>(), false;
    batch_issue_x(a, sm, S, 0);
    async_commit();
    for (int ch = 0; ch < kChunks; ++ch) {
        if (ch + 1 < kChunks && !batch_wait_x(a, c, ch + 1)) return async_wait<0>(), false;
        if (ch + 2 < kChunks) batch_issue_w(a, sm, groups, G, ch + 2);
        if (ch + 1 < kChunks) batch_issue_x(a, sm, S, ch + 1);
        async_commit();
        async_wait<1>();  // all but the group just issued: W(ch) and x(ch) have landed
        __syncthreads();
        const uint32_t(*w)[GemvBatchSmem::kRowWords] = sm.w[ch % GemvBatchSmem::kWStages];
        const uint32_t(*xs)[GemvBatchSmem::kRowWords] = sm.x[ch % GemvBatchSmem::kXStages];
        for (int st = 0; st < steps; ++st) {
            const int word = (kw * steps + st) * 8 + cq;
            uint32_t b[2][2];
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int t = ts + u * TW;
                const int tok = min(t * 8 + g, k3::kMaxS - 1);
                b[u][0] = xs[tok][word];
                b[u][1] = xs[tok][word + 4];
            }
#pragma unroll
            for (int gi = 0; gi < kBatchGroups; ++gi) {
                if (gi < G) {
                    const int r = gi * k3::kGroupRows;
                    const uint32_t a0 = w[r + g][word], a1 = w[r + g + 8][word];
                    const uint32_t a2 = w[r + g][word + 4], a3 = w[r + g + 8][word + 4];
#pragma unroll
                    for (int u = 0; u < 2; ++u)
                        if (ts + u * TW < tiles)
                            asm volatile(
                                "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                                "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                                : "+f"(acc[gi][u][0]), "+f"(acc[gi][u][1]), "+f"(acc[gi][u][2]), "+f"(acc[gi][u][3])
                                : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b[u][0]), "r"(b[u][1]));
                }
            }
        }
        __syncthreads();  // W(ch) and x(ch) stages are free
    }
    async_wait<0>();
    __syncthreads();
    // every warp's partials, red[((kw·G + gi)·16 + row)·(128/KW) + token], then added in k order
    const int span = 128 / KW;
#pragma unroll
    for (int gi = 0; gi < kBatchGroups; ++gi)
        if (gi < G)
#pragma unroll
            for (int u = 0; u < 2; ++u)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int row = g + (i >= 2 ? 8 : 0), tok = (ts + u * TW) * 8 + cq * 2 + (i & 1);
                    if (tok < S) sm.red[((kw * G + gi) * 16 + row) * span + tok] = acc[gi][u][i];
                }
    __syncthreads();
    for (int p = threadIdx.x; p < G * k3::kGroupRows * S; p += kThreads) {
        const int tok = p / (G * k3::kGroupRows), gi = p / k3::kGroupRows % G, row = p % k3::kGroupRows;
        float sum = sm.red[(gi * 16 + row) * span + tok];
        for (int k = 1; k < KW; ++k) sum = sum + sm.red[((k * G + gi) * 16 + row) * span + tok];
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
