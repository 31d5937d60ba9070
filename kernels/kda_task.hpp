// Role kda (SPEC §3 C–F): one task = request r, head h, chunk c of 16 state rows, run as four
// instructions on one CTA. KDA_LOAD issues everything that needs no hand-off (indices, conv
// window, state rows, f_b rows); KDA_CONV convolves the task's 16 q + 16 k channels and its 16 v
// channels (waits PROJ) and releases QK; KDA_REC gathers the head's q/k from its siblings, does
// f_b + gate, l2norm and the recurrence on its rows, writing a state a token, → ONRM; KDA_NORM
// combines the 8 chunk partials and writes core_out. Shared memory persists through the four.
// Orders (Plan::reduction_order()): l2 norms, f_b and the two recurrence sums are pairwise over
// 128 terms (16 lanes × 8, pairwise8 + pairwise_16_lanes); Σō² is split into the 8 chunks, each
// sequential, added in chunk order.
#pragma once
#include "kernels/kda_mailbox.hpp"
#include "kernels/kda_numerics.hpp"

namespace monokda::gpu {

struct KdaSmem {
    static constexpr int kOwned = 2 * k3::kShare + k3::kChunkRows;  // q share, k share, v rows: 48 channels
    float state[k3::kChunkRows][k3::K];   // the task's state rows (f32)
    uint32_t fbw[k3::K][k3::F / 2];       // f_b_w rows h·K .. h·K+127 (bf16 pairs)
    float q[k3::kMaxL][k3::K], k[k3::kMaxL][k3::K];  // conv outputs of the head, then l2-normalised
    float fa[k3::kMaxL][k3::F];
    float decay[k3::kMaxL][k3::K];
    float vrow[k3::kMaxL][k3::kChunkRows];
    float convw[kOwned][k3::W];
    float dtb[k3::K];
    float beta[k3::kMaxL];
    float norm[2 * k3::kMaxL];
    float onrm[k3::kMaxL * k3::kChunks];
    float rr[k3::kMaxL];
    uint16_t win[kOwned][k3::W - 1];      // conv_state entries a-1, a, a+1 (raw bf16)
    uint16_t obits[k3::kMaxL][k3::kChunkRows];
    int32_t idx[k3::kMaxL];
    int32_t slot0, accepted, init;
    float A;
};

// Proj column (= conv channel) of owned channel i (0..47) of task (h, c).
__device__ __forceinline__ int owned_channel(int i, int h, int c) {
    if (i < k3::kShare) return h * k3::K + c * k3::kShare + i;
    if (i < 2 * k3::kShare) return k3::E + h * k3::K + c * k3::kShare + (i - k3::kShare);
    return 2 * k3::E + h * k3::V + c * k3::kChunkRows + (i - 2 * k3::kShare);
}

__device__ __forceinline__ int64_t conv_offset(const KdaArgs& a, int slot, int entry, int ch) {
    const int len = k3::W - 2 + a.L;
    return int64_t(slot) * a.conv_ss + (a.conv_ds ? int64_t(ch) * len + entry : int64_t(entry) * k3::C + ch);
}

__device__ void kda_load(const KdaArgs& a, KdaSmem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    if (team.tid < L) sm.idx[team.tid] = a.state_indices[r * L + team.tid];
    if (team.tid == k3::kMaxL) sm.accepted = a.num_accepted[r];
    if (team.tid == k3::kMaxL + 1) sm.A = exp_f(a.A_log[h]);
    // what does not depend on the indices goes out before the first barrier
    for (int it = team.tid; it < k3::K * k3::F / 8; it += team.n) {
        const int k = it / (k3::F / 8), q = it % (k3::F / 8);
        copy16_async(&sm.fbw[k][q * 4], a.f_b_w + int64_t(h * k3::K + k) * k3::F + q * 8);
    }
    for (int it = team.tid; it < KdaSmem::kOwned * k3::W; it += team.n)
        sm.convw[it / k3::W][it % k3::W] = a.conv_w[owned_channel(it / k3::W, h, c) * k3::W + it % k3::W];
    for (int k = team.tid; k < k3::K; k += team.n) sm.dtb[k] = a.dt_bias[h * k3::K + k];
    team.sync();
    if (team.tid == 0) {
        sm.slot0 = sm.idx[0];
        sm.init = sm.idx[sm.accepted - 1];
    }
    team.sync();
    const int slot0 = sm.slot0, init = sm.init, acc = sm.accepted;
    for (int it = team.tid; it < KdaSmem::kOwned * (k3::W - 1); it += team.n) {
        const int i = it / (k3::W - 1), e = it % (k3::W - 1);
        sm.win[i][e] = slot0 > 0 ? a.conv_state[conv_offset(a, slot0, acc - 1 + e, owned_channel(i, h, c))].bits : 0;
    }
    if (init > 0)
        for (int it = team.tid; it < k3::kChunkRows * k3::K / 4; it += team.n) {
            const int v = it / (k3::K / 4), q = it % (k3::K / 4);
            copy16_async(&sm.state[v][q * 4],
                         a.ssm_state + int64_t(init) * a.ssm_ss + int64_t(h * k3::V + c * k3::kChunkRows + v) * k3::K + q * 4);
        }
    async_commit();
    team.sync();
}

__device__ bool kda_conv(const KdaArgs& a, Ctl& c_, KdaSmem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    if (!wait_proj(a, c_, 3, [&](int i) { return owned_channel(i * k3::kShare, h, c) / k3::kGroupRows; }, team))
        return false;
    static_assert(k3::kShare == k3::kGroupRows && k3::kChunkRows == k3::kGroupRows,
                  "each owned share is exactly one gemv group");
    for (int it = team.tid; it < KdaSmem::kOwned * L; it += team.n) {
        const int i = it % KdaSmem::kOwned, t = it / KdaSmem::kOwned, ch = owned_channel(i, h, c);
        auto seq = [&](int j) {
            return j < k3::W - 1 ? bf(bf16::from_bits(sm.win[i][j]))
                                 : bf(bf16::from_bits(ld_cg_u16(a.proj + size_t(r * L + j - (k3::W - 1)) * k3::N + ch)));
        };
        float acc = seq(t) * sm.convw[i][0];  // oldest first, left to right
        for (int j = 1; j < k3::W; ++j) acc = acc + seq(t + j) * sm.convw[i][j];
        const uint16_t out = rnd(acc / (1.0f + exp_f(-acc)));  // rounding #5 (SiLU)
        a.qkv[size_t(r * L + t) * k3::C + ch] = bf16::from_bits(out);
        if (i >= 2 * k3::kShare) sm.vrow[t][i - 2 * k3::kShare] = bf(bf16::from_bits(out));
    }
    if (sm.slot0 > 0) {
        // new state: W-2 old entries from offset a (read by KDA_LOAD), then the step's raw inputs
        const int len = k3::W - 2 + L;
        for (int it = team.tid; it < KdaSmem::kOwned * len; it += team.n) {
            const int i = it % KdaSmem::kOwned, e = it / KdaSmem::kOwned, ch = owned_channel(i, h, c);
            const uint16_t v = e < k3::W - 2 ? sm.win[i][1 + e]
                                             : ld_cg_u16(a.proj + size_t(r * L + e - (k3::W - 2)) * k3::N + ch);
            a.conv_state[conv_offset(a, sm.slot0, e, ch)] = bf16::from_bits(v);
        }
    }
    publish_flag(a, c_, Mailbox::QK, (r * k3::H + h) * k3::kChunks + c, team);
    return true;
}

__device__ bool kda_rec(const KdaArgs& a, Ctl& c_, KdaSmem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    if (!wait_flags(
            a, c_, Mailbox::QK, k3::kChunks - 1,
            [&](int i) { return (r * k3::H + h) * k3::kChunks + (i < c ? i : i + 1); }, team))
        return false;
    constexpr int kFaGroup = 4 * k3::E / k3::kGroupRows, kFaGroups = k3::F / k3::kGroupRows;
    if (!wait_proj(a, c_, kFaGroups + 1, [&](int i) {
            return i < kFaGroups ? kFaGroup + i : (4 * k3::E + k3::F + h) / k3::kGroupRows;
        }, team))
        return false;
    async_wait<0>();
    for (int it = team.tid; it < L * k3::K; it += team.n) {
        const int t = it / k3::K, k = it % k3::K;
        const size_t row = size_t(r * L + t);
        sm.q[t][k] = bf(bf16::from_bits(ld_cg_u16(a.qkv + row * k3::C + h * k3::K + k)));
        sm.k[t][k] = bf(bf16::from_bits(ld_cg_u16(a.qkv + row * k3::C + k3::E + h * k3::K + k)));
        sm.fa[t][k] = bf(bf16::from_bits(ld_cg_u16(a.proj + row * k3::N + 4 * k3::E + k)));
    }
    if (team.tid < L)
        sm.beta[team.tid] = sigmoid_f(
            bf(bf16::from_bits(ld_cg_u16(a.proj + size_t(r * L + team.tid) * k3::N + 4 * k3::E + k3::F + h))));
    team.sync();

    // 16 lanes reduce one sum; the team has n16 such groups. Every thread runs the same number of
    // rounds (the lanes of a warp shuffle together); sums past the end are computed and dropped.
    const int g16 = team.tid / 16, lane = team.tid % 16, n16 = team.n / 16;
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
    // f_b (#4): g1[t][k] = Σ_f fa[t][f]·f_b_w[hK+k][f], 16 sums a pass (parked in decay), then
    // the gates one a thread: a lane-0 tail in every pass would run L·8 rounds of two
    // double-precision exps one after another
    for (int p = 0; p < L * k3::K / n16; ++p) {
        const int o = p * n16 + g16, t = o / k3::K, k = o % k3::K;
        float tm[8];
        for (int i = 0; i < 4; ++i) {
            const uint32_t w = sm.fbw[k][lane * 4 + i];
            tm[2 * i] = sm.fa[t][lane * 8 + 2 * i] * bf_lo(w);
            tm[2 * i + 1] = sm.fa[t][lane * 8 + 2 * i + 1] * bf_hi(w);
        }
        const float sum = pairwise_16_lanes(pairwise8(tm));
        if (lane == 0) sm.decay[t][k] = sum;
    }
    team.sync();
    for (int it = team.tid; it < L * k3::K; it += team.n) {  // each thread rewrites its own entries
        const int t = it / k3::K, k = it % k3::K;
        const uint16_t g1 = rnd(sm.decay[t][k]);
        if (a.export_handoffs && k / k3::kShare == c)
            a.g1[size_t(r * L + t) * k3::E + h * k3::K + k] = bf16::from_bits(g1);
        const float gate = a.lower_bound * sigmoid_f(sm.A * (bf(bf16::from_bits(g1)) + sm.dtb[k]));
        sm.decay[t][k] = exp_f(gate);
    }
    team.sync();

    // the recurrence: thread (v, lane) holds S[v][8·lane .. 8·lane+7], for rows v = g16, g16 + n16, ...
    const bool live = sm.init > 0;
    const int k0 = lane * 8;
    for (int v = g16; v < k3::kChunkRows; v += n16) {
        float st[8];
        for (int i = 0; i < 8; ++i) st[i] = live ? sm.state[v][k0 + i] : 0.0f;
        for (int t = 0; t < L; ++t) {
            uint16_t ob = 0;  // +0: a request without an initial state outputs zeros
            if (live) {
                float tm[8];
                for (int i = 0; i < 8; ++i) st[i] = st[i] * sm.decay[t][k0 + i];
                for (int i = 0; i < 8; ++i) tm[i] = st[i] * sm.k[t][k0 + i];
                const float kS = pairwise_16_lanes(pairwise8(tm));
                const float u = (sm.vrow[t][v] - kS) * sm.beta[t];
                for (int i = 0; i < 8; ++i) st[i] = st[i] + u * sm.k[t][k0 + i];
                for (int i = 0; i < 8; ++i) tm[i] = st[i] * sm.q[t][k0 + i];
                ob = rnd(pairwise_16_lanes(pairwise8(tm)));  // rounding #6
                const int slot = sm.idx[t];
                if (slot > 0) {  // one state written per token
                    float4* dst = reinterpret_cast<float4*>(a.ssm_state + int64_t(slot) * a.ssm_ss +
                                                            int64_t(h * k3::V + c * k3::kChunkRows + v) * k3::K + k0);
                    dst[0] = make_float4(st[0], st[1], st[2], st[3]);
                    dst[1] = make_float4(st[4], st[5], st[6], st[7]);
                }
            }
            if (lane == 0) {
                sm.obits[t][v] = ob;
                if (a.export_handoffs)
                    a.o[size_t(r * L + t) * k3::E + h * k3::V + c * k3::kChunkRows + v] = bf16::from_bits(ob);
            }
        }
    }
    team.sync();
    if (team.tid < L) {  // this chunk's part of Σō², sequential over its 16 rows
        const int t = team.tid;
        float x = bf(bf16::from_bits(sm.obits[t][0]));
        float ss = x * x;
        for (int i = 1; i < k3::kChunkRows; ++i) {
            x = bf(bf16::from_bits(sm.obits[t][i]));
            ss = ss + x * x;
        }
        put_tagged(a, c_, Mailbox::ONRM, ((r * L + t) * k3::H + h) * k3::kChunks + c, 0, ss);
    }
    team.sync();
    return true;
}

__device__ bool kda_norm(const KdaArgs& a, Ctl& c_, KdaSmem& sm, int r, int h, int c, Team team) {
    const int L = a.L;
    // ONRM[r·L + t][h][0..7] for every token, in one sweep (onrm[t·8 + chunk])
    if (!wait_tagged_at(a, c_, Mailbox::ONRM, L * k3::kChunks,
                        [&](int w) { return ((r * L + w / k3::kChunks) * k3::H + h) * k3::kChunks + w % k3::kChunks; },
                        sm.onrm, team))
        return false;
    if (!wait_proj(a, c_, 1, [&](int) { return (3 * k3::E + h * k3::V) / k3::kGroupRows + c; }, team)) return false;
    if (team.tid < L) {
        const float* p = sm.onrm + team.tid * k3::kChunks;
        float ms = p[0];
        for (int i = 1; i < k3::kChunks; ++i) ms = ms + p[i];
        sm.rr[team.tid] = 1.0f / sqrtf(ms / float(k3::V) + a.eps);
    }
    team.sync();
    for (int it = team.tid; it < L * k3::kChunkRows; it += team.n) {
        const int t = it / k3::kChunkRows, v = it % k3::kChunkRows;
        const size_t row = size_t(r * L + t);
        const int col = h * k3::V + c * k3::kChunkRows + v;
        const float g2 = bf(bf16::from_bits(ld_cg_u16(a.proj + row * k3::N + 3 * k3::E + col)));
        // o_norm_w read here, not by KDA_LOAD: the interpreter runs the next task's KDA_LOAD first
        const float onw = bf(a.o_norm_w[c * k3::kChunkRows + v]);
        const float y = ((bf(bf16::from_bits(sm.obits[t][v])) * sm.rr[t]) * onw) * sigmoid_f(g2);
        a.core_out[row * k3::E + col] = bf16::from_bits(rnd(y));  // rounding #7
    }
    team.sync();
    return true;
}

}  // namespace monokda::gpu
