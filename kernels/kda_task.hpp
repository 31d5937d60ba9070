// Role kda (SPEC §3 C–F): one task = request r, head h, chunk c of kChunkRows state rows (the plan's
// kda_chunk_rows: a quarter of a head while every chunk task has a CTA of its own, else the whole
// head; PlanPolicy::k3_chunk_rows), run as four instructions on one team. KDA_LOAD issues everything
// that needs no hand-off (indices, conv window; the head's f_b rows, conv taps and dt_bias unless
// the team holds them already; the state rows, copied into the team's stage or fetched into L2);
// KDA_CONV convolves the task's q and k share and its v rows (waits PROJ); KDA_REC does f_b + gate,
// l2norm and the recurrence on its rows, two rows a step in registers, writing a state a token;
// KDA_NORM writes core_out. Shared memory persists through the four. With more than one chunk a
// head, KDA_CONV also makes the task's share of the head's g1 (f_b, its q/k share's key columns)
// and the head's q/k and g1 come from the sibling chunks through QK, and Σō² is combined through
// ONRM; with one chunk all of it stays in the team, the flags nobody waits for are not published
// and nothing crosses CTAs after PROJ.
// Orders (Plan::reduction_order()): l2 norms, f_b and the two recurrence sums are pairwise over
// 128 terms (16 lanes; pairwise8 / the two 4-term halves + pairwise_16_lanes); Σō² is split into
// the chunks, each sequential over its rows, added in chunk order.
#pragma once
#include "kernels/kda_mailbox.hpp"
#include "kernels/kda_numerics.hpp"

namespace monokda::gpu {

// A kda task's shape: kChunkRows state rows of a head, V / kChunkRows tasks a head, each convolving
// K / chunks q and k channels (its share) and its own v rows.
template <int kChunkRows>
struct KdaShape {
    static_assert(k3::V % kChunkRows == 0 && k3::K % (k3::V / kChunkRows) == 0, "chunks split V and K evenly");
    static constexpr int kChunks = k3::V / kChunkRows, kShare = k3::K / kChunks;
    static constexpr int kOwned = 2 * kShare + kChunkRows;  // q share, k share, v rows
};

template <int kChunkRows>
struct alignas(16) KdaSmem {  // the arrays read as 16-byte vectors start at 16-byte offsets
    static constexpr int kChunks = KdaShape<kChunkRows>::kChunks, kOwned = KdaShape<kChunkRows>::kOwned;
    uint32_t fbw[k3::K][k3::F / 2];       // f_b_w rows h·K .. h·K+127 (bf16 pairs)
    float q[k3::kMaxL][k3::K], k[k3::kMaxL][k3::K];  // conv outputs of the head, then l2-normalised
    float fa[k3::kMaxL][k3::F];
    float decay[k3::kMaxL][k3::K];
    float vrow[k3::kMaxL][kChunkRows];
    float convw[kOwned][k3::W];
    float dtb[k3::K];
    float beta[k3::kMaxL];
    float norm[2 * k3::kMaxL];
    float onrm[k3::kMaxL * kChunks];
    float rr[k3::kMaxL];
    float onw[k3::V];                     // o_norm_w (the same for every task)
    uint16_t win[kOwned][k3::W - 1];      // conv_state entries a-1, a, a+1 (raw bf16)
    uint16_t obits[k3::kMaxL][kChunkRows];
    int32_t idx[k3::kMaxL];
    int32_t slot0, accepted, init;
    int32_t head, chunk;                  // whose fbw, convw, dtb and A are loaded (-1: none yet)
    float* stage;                         // shared memory for the task's state rows, or null (kda_team_start)
    float A;
};

// A task shape's four bodies (defined below), with the shape's constants in their scope.
template <int kChunkRows>
struct KdaTask {
    static constexpr int kChunks = KdaShape<kChunkRows>::kChunks, kShare = KdaShape<kChunkRows>::kShare,
                         kOwned = KdaShape<kChunkRows>::kOwned;
    using Smem = KdaSmem<kChunkRows>;
    __device__ static int owned_channel(int i, int h, int c);
    __device__ static void load(const KdaArgs& a, Smem& sm, int r, int h, int c, Team team);
    __device__ static bool conv(const KdaArgs& a, Ctl& c_, Smem& sm, int r, int h, int c, Team team);
    __device__ static bool rec(const KdaArgs& a, Ctl& c_, Smem& sm, int r, int h, int c, Team team);
    __device__ static bool norm(const KdaArgs& a, Ctl& c_, Smem& sm, int r, int h, int c, Team team);
};

// Proj column (= conv channel) of owned channel i of task (h, c): the q share, the k share, the v rows.
template <int kChunkRows>
__device__ __forceinline__ int KdaTask<kChunkRows>::owned_channel(int i, int h, int c) {
    if (i < kShare) return h * k3::K + c * kShare + i;
    if (i < 2 * kShare) return k3::E + h * k3::K + c * kShare + (i - kShare);
    return 2 * k3::E + h * k3::V + c * kChunkRows + (i - 2 * kShare);
}

__device__ __forceinline__ int64_t conv_offset(const KdaArgs& a, int slot, int entry, int ch) {
    const int len = k3::W - 2 + a.L;
    return int64_t(slot) * a.conv_ss + (a.conv_ds ? int64_t(ch) * len + entry : int64_t(entry) * k3::C + ch);
}

// A team has at least kMinTeam threads (kda_pre.cu checks), so a thread's share of the owned
// channels, of a task's L·K values or of its L·kChunkRows outputs is at most these many items.
// The loops over those shares issue every load before the first use: a loop that stores each
// value as it arrives makes one memory round trip an iteration.
constexpr int kMinTeam = 128;
template <int kChunkRows>
constexpr int kOwnedPer = (KdaShape<kChunkRows>::kOwned + kMinTeam - 1) / kMinTeam;
constexpr int kTokenColsPer = k3::kMaxL * k3::K / kMinTeam;

// proj's f_a columns (SPEC §3 B): the first one, its gemv group and their count
constexpr int kFaCol = 4 * k3::E, kFaGroup = kFaCol / k3::kGroupRows, kFaGroups = k3::F / k3::kGroupRows;
// f_a[row][f] as raw bf16 bits, read past L1 (another CTA's PROJ)
__device__ __forceinline__ uint16_t ld_fa(const KdaArgs& a, size_t row, int f) {
    return ld_cg_u16(a.proj + row * k3::N + kFaCol + f);
}
template <int kChunkRows>
constexpr int kOutPer = (k3::kMaxL * kChunkRows + kMinTeam - 1) / kMinTeam;

template <int kChunkRows>
constexpr size_t kStateStageBytes = size_t(kChunkRows) * k3::K * 4;  // a task's state rows

// Before a team's first task: nothing of a head is held. stage: kStateStageBytes of shared memory
// the team may fill with its tasks' state rows (KDA_LOAD copies them in, so KDA_REC reads them at
// shared-memory latency), or null: KDA_LOAD brings them into L2 and KDA_REC reads them from there.
template <int kChunkRows>
__device__ __forceinline__ void kda_team_start(KdaSmem<kChunkRows>& sm, float* stage, Team team) {
    if (team.tid == 0) sm.head = sm.chunk = -1, sm.stage = stage;
    team.sync();
}

template <int kChunkRows>
__device__ void KdaTask<kChunkRows>::load(const KdaArgs& a, Smem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    // a CTA's tasks mostly share the head (the plan deals tasks round-robin over 132 CTAs, 11·12)
    const bool fresh = sm.head != h || sm.chunk != c;  // team-uniform: written below, after a barrier
    if (team.tid < L) sm.idx[team.tid] = a.state_indices[r * L + team.tid];
    if (team.tid == k3::kMaxL) sm.accepted = a.num_accepted[r];
    if (sm.head < 0 && team.tid < k3::V) sm.onw[team.tid] = bf(a.o_norm_w[team.tid]);  // the team's first task
    if (fresh) {
        if (team.tid == k3::kMaxL + 1) sm.A = exp_f(a.A_log[h]);
        for (int it = team.tid; it < k3::K * k3::F / 8; it += team.n) {
            const int k = it / (k3::F / 8), q = it % (k3::F / 8);
            copy16_async(&sm.fbw[k][q * 4], a.f_b_w + int64_t(h * k3::K + k) * k3::F + q * 8);
        }
        float cw[kOwnedPer<kChunkRows>][k3::W];
#pragma unroll
        for (int j = 0; j < kOwnedPer<kChunkRows>; ++j) {
            const int i = team.tid + j * team.n;
            for (int w = 0; w < k3::W; ++w)
                cw[j][w] = i < kOwned ? a.conv_w[owned_channel(i, h, c) * k3::W + w] : 0.0f;
        }
        const float db = team.tid < k3::K ? a.dt_bias[h * k3::K + team.tid] : 0.0f;
#pragma unroll
        for (int j = 0; j < kOwnedPer<kChunkRows>; ++j) {
            const int i = team.tid + j * team.n;
            if (i < kOwned)
                for (int w = 0; w < k3::W; ++w) sm.convw[i][w] = cw[j][w];
        }
        if (team.tid < k3::K) sm.dtb[team.tid] = db;
    }
    team.sync();
    if (team.tid == 0) {
        sm.slot0 = sm.idx[0];
        sm.init = sm.idx[sm.accepted - 1];
        sm.head = h;
        sm.chunk = c;
    }
    team.sync();
    const int slot0 = sm.slot0, init = sm.init, acc = sm.accepted;
    uint16_t wv[kOwnedPer<kChunkRows>][k3::W - 1];
#pragma unroll
    for (int j = 0; j < kOwnedPer<kChunkRows>; ++j) {
        const int i = team.tid + j * team.n;
        for (int e = 0; e < k3::W - 1; ++e)
            wv[j][e] = slot0 > 0 && i < kOwned
                           ? a.conv_state[conv_offset(a, slot0, acc - 1 + e, owned_channel(i, h, c))].bits
                           : 0;
    }
#pragma unroll
    for (int j = 0; j < kOwnedPer<kChunkRows>; ++j) {
        const int i = team.tid + j * team.n;
        if (i < kOwned)
            for (int e = 0; e < k3::W - 1; ++e) sm.win[i][e] = wv[j][e];
    }
    if (init > 0) {  // the state rows: into the stage, or into L2
        const float* rows = a.ssm_state + int64_t(init) * a.ssm_ss + int64_t(h * k3::V + c * kChunkRows) * k3::K;
        if (sm.stage)
            for (int q = team.tid; q < kChunkRows * k3::K / 4; q += team.n) copy16_async(sm.stage + q * 4, rows + q * 4);
        else
            for (int line = team.tid; line < kChunkRows * k3::K / 32; line += team.n) prefetch_l2(rows + line * 32);
    }
    async_commit();
    team.sync();
}

// The recurrence's rows a 16-lane group steps together (KdaTask::rec), and their load: rows vb, vb + n16,
// ... (zeros past the chunk or without an initial state), lane columns k0..k0+3 and 64+k0..64+k0+3.
constexpr int kRowBatch = 2;
template <int kChunkRows>
__device__ __forceinline__ void load_state_rows(float (&out)[kRowBatch][8], const float* rows, int vb, int n16, int k0,
                                                bool live) {
#pragma unroll
    for (int b = 0; b < kRowBatch; ++b) {
        const int v = vb + b * n16;
        float4 x0 = make_float4(0.f, 0.f, 0.f, 0.f), x1 = x0;
        if (live && v < kChunkRows) {
            const float* src = rows + int64_t(v) * k3::K;
            x0 = *reinterpret_cast<const float4*>(src + k0);
            x1 = *reinterpret_cast<const float4*>(src + k3::K / 2 + k0);
        }
        out[b][0] = x0.x, out[b][1] = x0.y, out[b][2] = x0.z, out[b][3] = x0.w;
        out[b][4] = x1.x, out[b][5] = x1.y, out[b][6] = x1.z, out[b][7] = x1.w;
    }
}

// f_b (#4) before its rounding: g1[t][k] = Σ_f fa[t][f]·f_b_w[hK+k][f] for tokens t < L and the
// kCols key columns from k0, into sm.decay[t][k]. 16 lanes a sum (lane l: terms 8l..8l+7, then the
// pairwise butterfly: Plan::reduction_order()). A 16-lane group keeps kColBatch columns' f_b row
// pieces in registers and runs kTokBatch tokens a round through them, so f_b is read from shared
// memory once and a token's f_a piece once a group, not both once a sum (read once a sum, f_b and
// the gates took much of KDA_REC: docs/decisions/0015-fb-sums-in-registers.md). Every lane of a warp runs the same rounds (the
// butterfly's shuffles); sums of tokens past L are computed from token L-1 and dropped.
template <int kCols, int kChunkRows>
__device__ __forceinline__ void fb_sums(KdaSmem<kChunkRows>& sm, int L, int k0, Team team) {
    constexpr int kColBatch = kCols / 16 < 8 ? kCols / 16 : 8, kTokBatch = 8 / kColBatch;
    // a team has 8 or 16 groups (kMinTeam): either takes the columns in whole rounds
    static_assert(kCols % (16 * kColBatch) == 0 && kColBatch >= 1, "the groups split the columns evenly");
    const int g16 = team.tid / 16, lane = team.tid % 16, n16 = team.n / 16;
#pragma unroll 1
    for (int c0 = g16 * kColBatch; c0 < kCols; c0 += n16 * kColBatch) {
        uint4 w[kColBatch];
#pragma unroll
        for (int j = 0; j < kColBatch; ++j) w[j] = *reinterpret_cast<const uint4*>(&sm.fbw[k0 + c0 + j][lane * 4]);
#pragma unroll 1
        for (int t0 = 0; t0 < L; t0 += kTokBatch) {
            float part[kTokBatch * kColBatch];
#pragma unroll
            for (int u = 0; u < kTokBatch; ++u) {
                const int t = min(t0 + u, L - 1);
                const float4 f0 = *reinterpret_cast<const float4*>(&sm.fa[t][lane * 8]);
                const float4 f1 = *reinterpret_cast<const float4*>(&sm.fa[t][lane * 8 + 4]);
#pragma unroll
                for (int j = 0; j < kColBatch; ++j) {
                    const uint4 w4 = w[j];
                    const float tm[8] = {f0.x * bf_lo(w4.x), f0.y * bf_hi(w4.x), f0.z * bf_lo(w4.y),
                                         f0.w * bf_hi(w4.y), f1.x * bf_lo(w4.z), f1.y * bf_hi(w4.z),
                                         f1.z * bf_lo(w4.w), f1.w * bf_hi(w4.w)};
                    part[u * kColBatch + j] = pairwise8(tm);
                }
            }
            pairwise_16_lanes(part);
            // every lane holds every sum: lane i stores sum i
#pragma unroll
            for (int i = 0; i < kTokBatch * kColBatch; ++i)
                if (lane == i && t0 + i / kColBatch < L) sm.decay[t0 + i / kColBatch][k0 + c0 + i % kColBatch] = part[i];
        }
    }
}

template <int kChunkRows>
__device__ bool KdaTask<kChunkRows>::conv(const KdaArgs& a, Ctl& c_, Smem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    static_assert(kShare % k3::kGroupRows == 0 && kChunkRows % k3::kGroupRows == 0,
                  "the owned channels are whole gemv groups");
    // with sibling chunks, the f_a groups too: the task's share of the head's g1 is made here
    constexpr int kOwnedGroups = kOwned / k3::kGroupRows;
    if (!wait_proj(a, c_, kOwnedGroups + (kChunks > 1 ? kFaGroups : 0), [&](int i) {
            return i < kOwnedGroups ? owned_channel(i * k3::kGroupRows, h, c) / k3::kGroupRows : kFaGroup + i - kOwnedGroups;
        }, team))
        return false;
    // a thread a channel: the inputs of all its channels loaded together, then the L outputs of each
    uint16_t xin[kOwnedPer<kChunkRows>][k3::kMaxL];
#pragma unroll
    for (int j = 0; j < kOwnedPer<kChunkRows>; ++j) {
        const int i = team.tid + j * team.n, ch = owned_channel(min(i, kOwned - 1), h, c);
#pragma unroll
        for (int t = 0; t < k3::kMaxL; ++t)
            xin[j][t] = t < L && i < kOwned ? ld_cg_u16(a.proj + size_t(r * L + t) * k3::N + ch) : 0;
    }
    // with sibling chunks, f_a for the task's g1 share, in flight with the conv inputs
    static_assert(k3::F == k3::K, "f_a and the head's q/k share the L·K item mapping");
    uint16_t fav[kChunks > 1 ? kTokenColsPer : 1];
    if constexpr (kChunks > 1) {  // braces: with the pragma right after `if constexpr`, nvcc dropped the rest of conv
#pragma unroll
        for (int j = 0; j < kTokenColsPer; ++j) {
            const int it = team.tid + j * team.n, t = it / k3::F, f = it % k3::F;
            fav[j] = t < L ? ld_fa(a, size_t(r * L + min(t, L - 1)), f) : 0;
        }
    }
#pragma unroll
    for (int j = 0; j < kOwnedPer<kChunkRows>; ++j) {
        const int i = team.tid + j * team.n;
        if (i >= kOwned) continue;
        const int ch = owned_channel(i, h, c);
        float seq[k3::W - 1 + k3::kMaxL], w[k3::W];
#pragma unroll
        for (int e = 0; e < k3::W - 1; ++e) seq[e] = bf(bf16::from_bits(sm.win[i][e]));
#pragma unroll
        for (int t = 0; t < k3::kMaxL; ++t) seq[k3::W - 1 + t] = bf(bf16::from_bits(xin[j][t]));
#pragma unroll
        for (int e = 0; e < k3::W; ++e) w[e] = sm.convw[i][e];
#pragma unroll
        for (int t = 0; t < k3::kMaxL; ++t) {
            if (t >= L) continue;  // (not break: the loop must unroll, xin stays in registers)
            float acc = seq[t] * w[0];  // oldest first, left to right
#pragma unroll
            for (int e = 1; e < k3::W; ++e) acc = acc + seq[t + e] * w[e];
            const uint16_t out = rnd(acc / (1.0f + exp_f(-acc)));  // rounding #5 (SiLU)
            a.qkv[size_t(r * L + t) * k3::C + ch] = bf16::from_bits(out);
            const float o = bf(bf16::from_bits(out));
            if (i < kShare) sm.q[t][c * kShare + i] = o;
            else if (i < 2 * kShare) sm.k[t][c * kShare + i - kShare] = o;
            else sm.vrow[t][i - 2 * kShare] = o;
        }
        if (sm.slot0 > 0) {
            // new state: W-2 old entries from offset a (read by KDA_LOAD), then the step's raw inputs
#pragma unroll
            for (int e = 0; e < k3::W - 2 + k3::kMaxL; ++e) {
                if (e >= k3::W - 2 + L) continue;
                const uint16_t v = e < k3::W - 2 ? sm.win[i][1 + e] : xin[j][e - (k3::W - 2)];
                a.conv_state[conv_offset(a, sm.slot0, e, ch)] = bf16::from_bits(v);
            }
        }
    }
    if constexpr (kChunks > 1) {
        // g1 of the task's share of key columns for every token (#4), handed to the siblings with
        // q/k: each chunk task computes a share instead of the whole head's L·K sums
#pragma unroll
        for (int j = 0; j < kTokenColsPer; ++j) {
            const int it = team.tid + j * team.n, t = it / k3::F, f = it % k3::F;
            if (t < L) sm.fa[t][f] = bf(bf16::from_bits(fav[j]));
        }
        async_wait<0>();  // KDA_LOAD's f_b rows
        team.sync();
        fb_sums<kShare>(sm, L, c * kShare, team);
        team.sync();
        for (int it = team.tid; it < L * kShare; it += team.n) {
            const int t = it / kShare, k = c * kShare + it % kShare;
            a.g1[size_t(r * L + t) * k3::E + h * k3::K + k] = bf16::from_bits(rnd(sm.decay[t][k]));
        }
        publish_flag(a, c_, Mailbox::QK, (r * k3::H + h) * kChunks + c, team);
    } else {
        team.sync();  // q, k and v rows stay in the team's shared memory
    }
    return true;
}

template <int kChunkRows>
__device__ bool KdaTask<kChunkRows>::rec(const KdaArgs& a, Ctl& c_, Smem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    if constexpr (kChunks > 1) {
        if (!wait_flags(
                a, c_, Mailbox::QK, kChunks - 1,
                [&](int i) { return (r * k3::H + h) * kChunks + (i < c ? i : i + 1); }, team))
            return false;
    }
    // beta's group, and f_a's with one task a head (with chunks KDA_CONV waited for f_a: g1 came through QK)
    constexpr int kFaWaits = kChunks > 1 ? 0 : kFaGroups;
    if (!wait_proj(a, c_, kFaWaits + 1, [&](int i) {
            return i < kFaWaits ? kFaGroup + i : (kFaCol + k3::F + h) / k3::kGroupRows;
        }, team))
        return false;

    // the recurrence's layout: 16 lanes a state row, lane l holding S[v][4l .. 4l+3] and
    // S[v][64+4l .. 64+4l+3], so each of a warp's 16-byte loads and stores covers 256 contiguous
    // bytes (whole sectors; eight consecutive columns a lane left every sector half-written by each
    // store). The sums keep their order: the four-term trees of the two halves, each half's
    // butterfly over the 16 lanes (pair_sum(0, 64) and pair_sum(64, 128)), then one add: exactly
    // pair_sum(0, 128). The team's n16 groups take rows g16, g16 + n16, ..., kRowBatch at a time,
    // the next batch's rows loaded while this one steps. The loops stay rolled on purpose: this
    // code runs once a launch, and an unrolled body is instructions the SM fetches cold
    // (docs/decisions/0020-kda-code-size.md).
    const int g16 = team.tid / 16, lane = team.tid % 16, n16 = team.n / 16, k0 = lane * 4, k1 = k3::K / 2 + k0;
    const bool live = sm.init > 0;
    const float* st_rows = sm.stage ? sm.stage  // generic loads: the same code reads either
                                    : a.ssm_state + int64_t(live ? sm.init : 0) * a.ssm_ss +
                                          int64_t(h * k3::V + c * kChunkRows) * k3::K;
    float nxt[kRowBatch][8];  // [0..3]: columns k0.., [4..7]: columns k1..
    if (!sm.stage) load_state_rows<kChunkRows>(nxt, st_rows, g16, n16, k0, live);  // (from the stage: after the copies are waited for, below)

    static_assert(k3::F == k3::K, "f_a and the head's q/k share the L·K item mapping");
    // the head's f_a (one task a head: f_b is made below), or its g1, q and k from the chunk tasks
    uint16_t fgv[kTokenColsPer], qv[kTokenColsPer], kv[kTokenColsPer];
#pragma unroll
    for (int j = 0; j < kTokenColsPer; ++j) {
        const int it = team.tid + j * team.n, t = it / k3::K, k = it % k3::K;
        const size_t row = size_t(r * L + min(t, L - 1));
        const bool in = t < L;
        if constexpr (kChunks > 1) {
            fgv[j] = in ? ld_cg_u16(a.g1 + row * k3::E + h * k3::K + k) : 0;
            qv[j] = in ? ld_cg_u16(a.qkv + row * k3::C + h * k3::K + k) : 0;
            kv[j] = in ? ld_cg_u16(a.qkv + row * k3::C + k3::E + h * k3::K + k) : 0;
        } else {
            fgv[j] = in ? ld_fa(a, row, k) : 0;
        }
    }
    const uint16_t betav = team.tid < L ? ld_cg_u16(a.proj + size_t(r * L + team.tid) * k3::N + kFaCol + k3::F + h) : 0;
    async_wait<0>();
#pragma unroll
    for (int j = 0; j < kTokenColsPer; ++j) {
        const int it = team.tid + j * team.n, t = it / k3::K, k = it % k3::K;
        if (t >= L) continue;
        if constexpr (kChunks > 1) {
            sm.decay[t][k] = bf(bf16::from_bits(fgv[j]));  // g1, exact: the gates below round it to itself
            sm.q[t][k] = bf(bf16::from_bits(qv[j]));
            sm.k[t][k] = bf(bf16::from_bits(kv[j]));
        } else {
            sm.fa[t][k] = bf(bf16::from_bits(fgv[j]));
        }
    }
    if (team.tid < L) sm.beta[team.tid] = sigmoid_f(bf(bf16::from_bits(betav)));
    team.sync();
    if (sm.stage) load_state_rows<kChunkRows>(nxt, st_rows, g16, n16, k0, live);

    // 16 lanes reduce one sum; the team has n16 such groups. Every thread runs the same number of
    // rounds (the lanes of a warp shuffle together); sums past the end are computed and dropped.
    for (int q0 = 0; q0 < 2 * L; q0 += n16) {  // Σq², Σk² of every token: sum q = 2t (+1 for k)
        const int q = q0 + g16, t = min(q / 2, L - 1);
        const float* src = (q & 1) ? sm.k[t] : sm.q[t];
        float tm[8];
        for (int i = 0; i < 8; ++i) tm[i] = src[lane * 8 + i] * src[lane * 8 + i];
        const float sum = pairwise_16_lanes(pairwise8(tm));
        if (lane == 0 && q < 2 * L) sm.norm[q] = sum;
    }
    team.sync();
    for (int it = team.tid; it < L * k3::K; it += team.n) {
        const int t = it / k3::K, k = it % k3::K;
        sm.q[t][k] = (sm.q[t][k] / sqrtf(sm.norm[2 * t] + a.l2_eps)) * a.kscale;
        sm.k[t][k] = sm.k[t][k] / sqrtf(sm.norm[2 * t + 1] + a.l2_eps);
    }
    // f_b of the whole head (with chunks: made by the chunk tasks, read above), then the gates one
    // a thread: a lane-0 tail in every sum's pass would run L·8 rounds of two double-precision exps
    // one after another
    if constexpr (kChunks == 1) fb_sums<k3::K>(sm, L, 0, team);
    team.sync();
    for (int it = team.tid; it < L * k3::K; it += team.n) {  // each thread rewrites its own entries
        const int t = it / k3::K, k = it % k3::K;
        const uint16_t g1 = rnd(sm.decay[t][k]);
        if (kChunks == 1 && a.export_handoffs) a.g1[size_t(r * L + t) * k3::E + h * k3::K + k] = bf16::from_bits(g1);
        const float gate = a.lower_bound * sigmoid_f(sm.A * (bf(bf16::from_bits(g1)) + sm.dtb[k]));
        sm.decay[t][k] = exp_f(gate);
    }
    team.sync();

#pragma unroll 1
    for (int vb = g16; vb < kChunkRows; vb += n16 * kRowBatch) {
        float st[kRowBatch][8];
#pragma unroll
        for (int b = 0; b < kRowBatch; ++b)
            for (int i = 0; i < 8; ++i) st[b][i] = nxt[b][i];
        if (vb + n16 * kRowBatch < kChunkRows) load_state_rows<kChunkRows>(nxt, st_rows, vb + n16 * kRowBatch, n16, k0, live);
#pragma unroll 1
        for (int t = 0; t < L; ++t) {
            uint16_t ob[kRowBatch] = {};  // +0: a request without an initial state outputs zeros
            if (live) {  // the batch's rows step together: each sum's butterflies beside the others'
                float dk[8], kk[8], qq[8], part[2 * kRowBatch];
                for (int i = 0; i < 8; ++i) {
                    const int col = i < 4 ? k0 + i : k1 + i - 4;
                    dk[i] = sm.decay[t][col], kk[i] = sm.k[t][col], qq[i] = sm.q[t][col];
                }
#pragma unroll
                for (int b = 0; b < kRowBatch; ++b) {
                    float tm[8];
                    for (int i = 0; i < 8; ++i) st[b][i] = st[b][i] * dk[i];
                    for (int i = 0; i < 8; ++i) tm[i] = st[b][i] * kk[i];
                    part[2 * b] = pairwise4(tm[0], tm[1], tm[2], tm[3]);
                    part[2 * b + 1] = pairwise4(tm[4], tm[5], tm[6], tm[7]);
                }
                pairwise_16_lanes(part);
                const float beta = sm.beta[t];
#pragma unroll
                for (int b = 0; b < kRowBatch; ++b) {
                    const float kS = part[2 * b] + part[2 * b + 1];
                    const float u = (sm.vrow[t][min(vb + b * n16, kChunkRows - 1)] - kS) * beta;
                    float tm[8];
                    for (int i = 0; i < 8; ++i) st[b][i] = st[b][i] + u * kk[i];
                    for (int i = 0; i < 8; ++i) tm[i] = st[b][i] * qq[i];
                    part[2 * b] = pairwise4(tm[0], tm[1], tm[2], tm[3]);
                    part[2 * b + 1] = pairwise4(tm[4], tm[5], tm[6], tm[7]);
                }
                pairwise_16_lanes(part);
#pragma unroll
                for (int b = 0; b < kRowBatch; ++b) ob[b] = rnd(part[2 * b] + part[2 * b + 1]);  // rounding #6
                const int slot = sm.idx[t];
                if (slot > 0) {  // one state written per token
                    float* dst = a.ssm_state + int64_t(slot) * a.ssm_ss + int64_t(h * k3::V + c * kChunkRows) * k3::K;
#pragma unroll
                    for (int b = 0; b < kRowBatch; ++b) {
                        const int v = vb + b * n16;
                        if (v >= kChunkRows) continue;
                        float* row = dst + int64_t(v) * k3::K;
                        st_state_f4(row + k0, st[b][0], st[b][1], st[b][2], st[b][3]);
                        st_state_f4(row + k1, st[b][4], st[b][5], st[b][6], st[b][7]);
                    }
                }
            }
            if (lane == 0)
#pragma unroll
                for (int b = 0; b < kRowBatch; ++b) {
                    const int v = vb + b * n16;
                    if (v >= kChunkRows) continue;
                    sm.obits[t][v] = ob[b];
                    if (a.export_handoffs)
                        a.o[size_t(r * L + t) * k3::E + h * k3::V + c * kChunkRows + v] = bf16::from_bits(ob[b]);
                }
        }
    }
    team.sync();
    if (team.tid < L) {  // this chunk's part of Σō², sequential over its rows
        const int t = team.tid;
        float x = bf(bf16::from_bits(sm.obits[t][0]));
        float ss = x * x;
#pragma unroll 16  // the loads run ahead of the one chain of adds
        for (int i = 1; i < kChunkRows; ++i) {
            x = bf(bf16::from_bits(sm.obits[t][i]));
            ss = ss + x * x;
        }
        if constexpr (kChunks > 1) put_tagged(a, c_, Mailbox::ONRM, ((r * L + t) * k3::H + h) * kChunks + c, 0, ss);
        else sm.onrm[t] = ss;  // the whole sum: KDA_NORM reads it here
    }
    team.sync();
    return true;
}

template <int kChunkRows>
__device__ bool KdaTask<kChunkRows>::norm(const KdaArgs& a, Ctl& c_, Smem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    if constexpr (kChunks > 1) {
        // ONRM[r·L + t][h][0..chunks-1] for every token, in one sweep (onrm[t·chunks + chunk])
        if (!wait_tagged_at(a, c_, Mailbox::ONRM, L * kChunks,
                            [&](int w) { return ((r * L + w / kChunks) * k3::H + h) * kChunks + w % kChunks; },
                            sm.onrm, team))
            return false;
    }
    if (!wait_proj(a, c_, kChunkRows / k3::kGroupRows,
                   [&](int i) { return (3 * k3::E + h * k3::V + c * kChunkRows) / k3::kGroupRows + i; }, team))
        return false;
    if (team.tid < L) {
        const float* p = sm.onrm + team.tid * kChunks;
        float ms = p[0];
        for (int i = 1; i < kChunks; ++i) ms = ms + p[i];
        sm.rr[team.tid] = 1.0f / sqrtf(ms / float(k3::V) + a.eps);
    }
    team.sync();
    uint16_t g2v[kOutPer<kChunkRows>];
#pragma unroll
    for (int j = 0; j < kOutPer<kChunkRows>; ++j) {
        const int it = team.tid + j * team.n, t = it / kChunkRows, v = it % kChunkRows;
        g2v[j] = t < L ? ld_cg_u16(a.proj + size_t(r * L + t) * k3::N + 3 * k3::E + h * k3::V + c * kChunkRows + v) : 0;
    }
#pragma unroll
    for (int j = 0; j < kOutPer<kChunkRows>; ++j) {
        const int it = team.tid + j * team.n, t = it / kChunkRows, v = it % kChunkRows;
        if (t >= L) continue;
        const size_t row = size_t(r * L + t);
        const int col = h * k3::V + c * kChunkRows + v;
        const float y = ((bf(bf16::from_bits(sm.obits[t][v])) * sm.rr[t]) * sm.onw[c * kChunkRows + v]) *
                        sigmoid_f(bf(bf16::from_bits(g2v[j])));
        a.core_out[row * k3::E + col] = bf16::from_bits(rnd(y));  // rounding #7
    }
    team.sync();
    return true;
}

}  // namespace monokda::gpu
