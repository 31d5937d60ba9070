// Role gemv (SPEC §3 B): in_proj in groups of 16 rows (proj columns). GEMV_PREFETCH(g) puts the
// group's first weight slices in flight before x exists; GEMV_GROUP(g) takes x slice by slice as
// XRDY flags land, then rounds (#3) and releases PROJ[g].
//
// Two bodies, chosen at launch (LaunchOptions::exact_in_proj):
//   tensor cores (default): each wave takes a fixed share of every slice's 128 columns through
//     the matrix unit (NVIDIA mma.sync m16n8k16, AMD MFMA 16x16x16), f32 accumulation; the waves'
//     partials are added in wave order, so the result is deterministic but its sum order is the
//     matrix unit's (SPEC §5 allows ≈99.6 % identity for such an in_proj);
//   exact: the sum order of Plan::reduction_order() (each slice's 128 terms sequential, the 56
//     slice partials added in slice order), so proj equals the reference's bit for bit; slow.
// Weights reach shared memory through a ring of slices; on NVIDIA the copies are asynchronous
// (cp.async) and stay in flight across the XRDY polls. On AMD a wave retires its loads in order,
// so a poll issued behind weight loads would wait for all of them: there the copies complete in
// place, wave 0 alone polls and copies no weights (the in-order-retirement role split of SPEC §4).
#pragma once
#include "kernels/kda_mailbox.hpp"
#include "kernels/kda_numerics.hpp"

namespace monokda::gpu {

// the ring's depth: kernels/kda_ordering.hpp (the ordering check holds its waits to it)
#if MONOKDA_AMD
constexpr bool kPollerWave = true;  // wave 0 polls, waves 1.. copy weights
constexpr int kGemvStages = ordering::kGemvRingStagesAmd;
#else
constexpr bool kPollerWave = false;
constexpr int kGemvStages = ordering::kGemvRingStagesNvidia;
#endif
constexpr int kWaves = kThreads / kWave;

struct GemvSmem {
    static constexpr int kStages = kGemvStages;              // weight slices in flight
    static constexpr int kRowWords = k3::kSlice / 2 + 4;     // 16-byte aligned rows, shifted 4 banks each
    union {
        uint32_t w[kStages][k3::kGroupRows][kRowWords];      // bf16 pairs: ring of the group's weight slices
        float red[kWaves][k3::kGroupRows][k3::kMaxS];        // after the last slice: each wave's partials
    };
    uint32_t x[k3::kMaxS][kRowWords];                        // bf16 pairs: the current x slice, all rows
};
static_assert(sizeof(float) * kWaves * k3::kGroupRows * k3::kMaxS <=
                  sizeof(uint32_t) * kGemvStages * k3::kGroupRows * GemvSmem::kRowWords,
              "the wave partials fit where the ring was");

// 16 rows × 128 columns = 256 copies of 16 bytes, spread over the copying threads.
__device__ __forceinline__ void gemv_issue_slice(const KdaArgs& a, GemvSmem& sm, int g, int j) {
    constexpr int first = kPollerWave ? kWave : 0;
    for (int i = int(threadIdx.x) - first; i >= 0 && i < k3::kGroupRows * 16; i += kThreads - first) {
        const int row = i / 16, q = i % 16;
        copy16_async(&sm.w[j % GemvSmem::kStages][row][q * 4],
                     a.in_proj_w + size_t(g * k3::kGroupRows + row) * k3::D + j * k3::kSlice + q * 8);
    }
}

__device__ void gemv_prefetch(const KdaArgs& a, Ctl& c, GemvSmem& sm, int g) {
    for (int j = 0; j < GemvSmem::kStages; ++j) {
        gemv_issue_slice(a, sm, g, j);
        async_commit();
    }
    __syncthreads();
    if (threadIdx.x == 0) c.prefetched = g;
    __syncthreads();
}

// Exact body: thread p < 16·S owns (row p % 16, token p / 16); per slice a sequential 128-term sum.
template <int kPer>
__device__ __forceinline__ void gemv_slice_exact(const GemvSmem& sm, int stage, int S, int j, float (&total)[kPer]) {
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
        const int p = threadIdx.x + k * kThreads;
        if (p < k3::kGroupRows * S) {
            const uint32_t* xr = sm.x[p / k3::kGroupRows];
            const uint32_t* wr = sm.w[stage][p % k3::kGroupRows];
            float part = bf_lo(xr[0]) * bf_lo(wr[0]);
            part = part + bf_hi(xr[0]) * bf_hi(wr[0]);
            for (int q = 1; q < k3::kSlice / 2; ++q) {
                part = part + bf_lo(xr[q]) * bf_lo(wr[q]);
                part = part + bf_hi(xr[q]) * bf_hi(wr[q]);
            }
            total[k] = j == 0 ? part : total[k] + part;
        }
    }
}

#if MONOKDA_AMD
// MFMA 16x16x16 (bf16 in, f32 accumulate), wave64. Lane l holds A[row l%16][k 4(l/16)..+3],
// B[k 4(l/16)..+3][col l%16], and D[rows 4(l/16)..+3][col l%16]. Tiles: 16 weight rows × 16 tokens.
constexpr int kMmaTileN = 16;
typedef short mfma_bf16x4 __attribute__((ext_vector_type(4)));
typedef float mfma_f32x4 __attribute__((ext_vector_type(4)));
constexpr int kStepsPerWave = k3::kSlice / 16 / kWaves;  // k16 steps of a slice each wave takes: 2

__device__ __forceinline__ void gemv_slice_mma(const GemvSmem& sm, int stage, int tiles, float (&acc)[k3::kMaxS / kMmaTileN][4]) {
    const int wave = threadIdx.x / kWave, lane = threadIdx.x % kWave;
    for (int st = 0; st < kStepsPerWave; ++st) {
        const int kw = (wave * kStepsPerWave + st) * 8 + (lane / 16) * 2;  // word of this lane's 4 k values
        const uint32_t* wr = sm.w[stage][lane % 16];
        mfma_bf16x4 A;
        A[0] = short(wr[kw] & 0xffff), A[1] = short(wr[kw] >> 16), A[2] = short(wr[kw + 1] & 0xffff),
        A[3] = short(wr[kw + 1] >> 16);
#pragma unroll
        for (int t = 0; t < k3::kMaxS / kMmaTileN; ++t) {
            if (t < tiles) {
                const uint32_t* xr = sm.x[t * kMmaTileN + lane % 16];
                mfma_bf16x4 B;
                B[0] = short(xr[kw] & 0xffff), B[1] = short(xr[kw] >> 16), B[2] = short(xr[kw + 1] & 0xffff),
                B[3] = short(xr[kw + 1] >> 16);
                mfma_f32x4 C = {acc[t][0], acc[t][1], acc[t][2], acc[t][3]};
                C = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(A, B, C, 0, 0, 0);
                acc[t][0] = C[0], acc[t][1] = C[1], acc[t][2] = C[2], acc[t][3] = C[3];
            }
        }
    }
}
// Element i of a lane's accumulator tile t: weight row, token.
__device__ __forceinline__ int mma_row(int lane, int i) { return (lane / 16) * 4 + i; }
__device__ __forceinline__ int mma_token(int t, int lane, int) { return t * kMmaTileN + lane % 16; }
#else
// mma.sync m16n8k16 (mma_bf16_16816, kernels/vendor/gpu.hpp: its fragment layout), tokens as columns.
constexpr int kMmaTileN = 8;
constexpr int kStepsPerWave = k3::kSlice / 16 / kWaves;  // 1

__device__ __forceinline__ void gemv_slice_mma(const GemvSmem& sm, int stage, int tiles, float (&acc)[k3::kMaxS / kMmaTileN][4]) {
    const int wave = threadIdx.x / kWave, lane = threadIdx.x % kWave, g = lane / 4, c = lane % 4;
    for (int st = 0; st < kStepsPerWave; ++st) {
        const int kw = (wave * kStepsPerWave + st) * 8 + c;
        const uint32_t a0 = sm.w[stage][g][kw], a1 = sm.w[stage][g + 8][kw];
        const uint32_t a2 = sm.w[stage][g][kw + 4], a3 = sm.w[stage][g + 8][kw + 4];
#pragma unroll
        for (int t = 0; t < k3::kMaxS / kMmaTileN; ++t) {
            if (t < tiles) {
                const uint32_t b0 = sm.x[t * kMmaTileN + g][kw], b1 = sm.x[t * kMmaTileN + g][kw + 4];
                mma_bf16_16816(acc[t], a0, a1, a2, a3, b0, b1);
            }
        }
    }
}
__device__ __forceinline__ int mma_row(int lane, int i) { return lane / 4 + (i >= 2 ? 8 : 0); }
__device__ __forceinline__ int mma_token(int t, int lane, int i) { return t * kMmaTileN + (lane % 4) * 2 + (i & 1); }
#endif
static_assert(kStepsPerWave * kWaves * 16 == k3::kSlice, "the waves split a slice's k16 steps evenly");

template <bool kExact>
__device__ bool gemv_group(const KdaArgs& a, Ctl& c, GemvSmem& sm, int g) {
    if (c.prefetched != g) gemv_prefetch(a, c, sm, g);  // a plan may list a group without its prefetch
    const int S = a.S;
    constexpr int kPer = k3::kGroupRows * k3::kMaxS / kThreads;  // exact: (row, token) pairs a thread
    constexpr int kTiles = k3::kMaxS / kMmaTileN;
    float total[kPer];
    float acc[kTiles][4];
    for (int t = 0; t < kTiles; ++t) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    const int tiles = (S + kMmaTileN - 1) / kMmaTileN;
    for (int j = 0; j < k3::kAttn; ++j) {
        if (!wait_flags(a, c, Mailbox::XRDY, a.attn_parts, [&](int p) { return j * a.attn_parts + p; })) {
            async_wait<0>();
            return false;
        }
        for (int it = threadIdx.x; it < S * 16; it += kThreads) {
            const int s = it / 16, q = it % 16;
            const uint4 v = ld_cg16(a.x + size_t(s) * k3::D + j * k3::kSlice + q * 8);
            sm.x[s][q * 4 + 0] = v.x;
            sm.x[s][q * 4 + 1] = v.y;
            sm.x[s][q * 4 + 2] = v.z;
            sm.x[s][q * 4 + 3] = v.w;
        }
        ring_wait<GemvSmem::kStages - 1>(a);  // slice j's weights have landed (this thread's copies)
        __syncthreads();
        const int stage = j % GemvSmem::kStages;
        if (kExact) gemv_slice_exact<kPer>(sm, stage, S, j, total);
        else gemv_slice_mma(sm, stage, tiles, acc);
        __syncthreads();  // the stage and x are free again
        if (j + GemvSmem::kStages < k3::kAttn) gemv_issue_slice(a, sm, g, j + GemvSmem::kStages);
        async_commit();
    }
    async_wait<0>();
    __syncthreads();
    if (kExact) {
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
            const int p = threadIdx.x + k * kThreads;
            if (p < k3::kGroupRows * S)
                a.proj[size_t(p / k3::kGroupRows) * k3::N + g * k3::kGroupRows + p % k3::kGroupRows] =
                    bf16::from_bits(rnd(total[k]));
        }
    } else {
        const int wave = threadIdx.x / kWave, lane = threadIdx.x % kWave;
#pragma unroll
        for (int t = 0; t < kTiles; ++t)
            if (t < tiles)
                for (int i = 0; i < 4; ++i) {
                    const int tok = mma_token(t, lane, i);
                    if (tok < S) sm.red[wave][mma_row(lane, i)][tok] = acc[t][i];
                }
        __syncthreads();
        for (int p = threadIdx.x; p < k3::kGroupRows * S; p += kThreads) {
            const int row = p % k3::kGroupRows, tok = p / k3::kGroupRows;
            float sum = sm.red[0][row][tok];
            for (int w = 1; w < kWaves; ++w) sum = sum + sm.red[w][row][tok];  // waves in order
            a.proj[size_t(tok) * k3::N + g * k3::kGroupRows + row] = bf16::from_bits(rnd(sum));
        }
    }
    if (threadIdx.x == 0) c.prefetched = -1;
    publish_flag(a, c, Mailbox::PROJ, g);
    return true;
}

}  // namespace monokda::gpu
