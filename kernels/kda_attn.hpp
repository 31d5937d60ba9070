// Role attn (SPEC §3 A on the CTAs of core/plan.hpp): the CTA of (slice j, part p) owns columns
// j·128 .. j·128+127 of the part's rows (AttnRows; every row with one part a slice).
// ATTN_PART → PART, ATTN_GATE(row) → WGT, ATTN_MIX → MSQ, ATTN_X → x and XRDY.
// Sums follow Plan::reduction_order(): Σv², Σv·wq and Σmixed² are sequential within the slice and
// the 56 slice partials are added in slice order; the softmax and the mix are sequential over
// sources. Shared memory persists from ATTN_PART to ATTN_X (the sources are read twice).
#pragma once
#include "kernels/kda_mailbox.hpp"
#include "kernels/kda_numerics.hpp"

namespace monokda::gpu {

// NVIDIA parts give a block up to 227 KB of shared memory: every source row of the slice stays
// there from ATTN_PART to ATTN_MIX. gfx90a/gfx940 give 64 KB: only P' stays in LDS and the bank
// rows are read again from global memory (L2) where they are needed.
#if MONOKDA_AMD
constexpr bool kSourcesInShared = false;
#else
constexpr bool kSourcesInShared = true;
#endif

struct AttnSmem {
    static constexpr int kRowWords = k3::kSlice / 2 + 1;  // one word of padding: rows start in different banks
    static constexpr int kKept = kSourcesInShared ? k3::kMaxNb + 1 : 1;
    uint32_t src[k3::kMaxS][kKept][kRowWords];  // bf16 pairs: v_0..v_{nb-1} = bank rows, v_nb = P' (or P' alone)
    float mixed[k3::kMaxS][k3::kSlice];
    float wq[k3::kSlice];
    float nw[k3::kSlice];  // input_norm_w of the slice, loaded at ATTN_PART: ATTN_X then reads no global memory
    float scratch[k3::kMaxS * k3::kAttn];  // mailbox values of the instruction being run
    float rr[k3::kMaxS];
    float logit[k3::kMaxNb + 1];
    float exps[k3::kMaxNb + 1];  // the gate's e_i, summed in source order on one thread
};

// The rows of a slice instruction's part (operand b); shared memory holds them from row 0. Split at
// the launcher's a.attn_split: a run-time division here was code fetched once a launch, on the
// attn role's path.
struct AttnRows {
    static_assert(k3::kMaxAttnParts == 2, "parts 0 and 1 meet at a.attn_split");
    int r0, n;
    __device__ AttnRows(const KdaArgs& a, int part) : r0(part ? a.attn_split : 0), n((part ? a.S : a.attn_split) - r0) {}
};

// Word w (columns 2w, 2w+1 of the slice) of source i of the part's row s (the step's row r0 + s).
__device__ __forceinline__ uint32_t src_word(const KdaArgs& a, const AttnSmem& sm, int r0, int s, int i, int w, int col0) {
    if (kSourcesInShared) return sm.src[s][i][w];
    if (i == a.nb) return sm.src[s][0][w];
    return __ldg(reinterpret_cast<const uint32_t*>(a.blocks + (r0 + s) * a.blocks_rs + i * a.blocks_bs + col0) + w);
}

// P' = bf16(P + delta) → prefix_out (and bank row nb); per (row, source) partial Σv², Σv·wq → PART.
__device__ void attn_part(const KdaArgs& a, const Ctl& c, AttnSmem& sm, int j, int part) {
    const AttnRows rows(a, part);
    const int S = rows.n, r0 = rows.r0, nb = a.nb, col0 = j * k3::kSlice;  // S: the part's rows
    for (int d = threadIdx.x; d < k3::kSlice; d += kThreads) {
        sm.wq[d] = bf(a.res_norm_w[col0 + d]) * bf(a.res_proj_w[col0 + d]);  // exact: 8-bit × 8-bit mantissas
        sm.nw[d] = bf(a.input_norm_w[col0 + d]);
    }
    for (int it = threadIdx.x; it < S * 16; it += kThreads) {
        const int s = it / 16, row = r0 + s, col = col0 + (it % 16) * 8;
        const uint4 p = __ldg(reinterpret_cast<const uint4*>(a.prefix + row * a.prefix_rs + col));
        const uint4 dl = __ldg(reinterpret_cast<const uint4*>(a.delta + row * a.delta_rs + col));
        const uint32_t pw[4] = {p.x, p.y, p.z, p.w}, dw[4] = {dl.x, dl.y, dl.z, dl.w};
        uint32_t o[4];
        for (int q = 0; q < 4; ++q)
            o[q] = pack(bf_lo(pw[q]) + bf_lo(dw[q]), bf_hi(pw[q]) + bf_hi(dw[q]));  // rounding #1
        const uint4 ov = make_uint4(o[0], o[1], o[2], o[3]);
        *reinterpret_cast<uint4*>(a.prefix_out + row * a.prefix_out_rs + col) = ov;
        if (a.block_write) *reinterpret_cast<uint4*>(a.blocks + row * a.blocks_rs + nb * a.blocks_bs + col) = ov;
        for (int q = 0; q < 4; ++q) sm.src[s][kSourcesInShared ? nb : 0][(it % 16) * 4 + q] = o[q];
    }
    if (threadIdx.x >= kThreads - kWave) warm_exp();  // the last warp's rows are loaded last, if at all
    for (int it = threadIdx.x; kSourcesInShared && it < nb * S * 16; it += kThreads) {
        const int i = it / (S * 16), s = it / 16 % S, q16 = it % 16;
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.blocks + (r0 + s) * a.blocks_rs + i * a.blocks_bs + col0 + q16 * 8));
        sm.src[s][i][q16 * 4 + 0] = v.x;
        sm.src[s][i][q16 * 4 + 1] = v.y;
        sm.src[s][i][q16 * 4 + 2] = v.z;
        sm.src[s][i][q16 * 4 + 3] = v.w;
    }
    __syncthreads();
    for (int p = threadIdx.x; p < S * (nb + 1); p += kThreads) {
        const int s = p / (nb + 1), i = p % (nb + 1);
        uint32_t word = src_word(a, sm, r0, s, i, 0, col0);
        float v = bf_lo(word);
        float ss = v * v, dot = v * sm.wq[0];
        v = bf_hi(word);
        ss = ss + v * v;
        dot = dot + v * sm.wq[1];
        for (int w = 1; w < k3::kSlice / 2; ++w) {
            word = src_word(a, sm, r0, s, i, w, col0);
            v = bf_lo(word);
            ss = ss + v * v;
            dot = dot + v * sm.wq[2 * w];
            v = bf_hi(word);
            ss = ss + v * v;
            dot = dot + v * sm.wq[2 * w + 1];
        }
        const int entry = ((r0 + s) * (nb + 1) + i) * k3::kAttn + j;  // Plan::part(row, i, j)
        put_tagged(a, c, Mailbox::PART, entry, 0, ss);
        put_tagged(a, c, Mailbox::PART, entry, 1, dot);
    }
    __syncthreads();
}

// Softmax weights of one row from the 56 slices' partials → WGT[row] = (e_0..e_nb, Σe).
__device__ bool attn_gate(const KdaArgs& a, const Ctl& c, AttnSmem& sm, int row) {
    const int nb = a.nb, ns = nb + 1;
    if (!wait_tagged(a, c, Mailbox::PART, row * ns * k3::kAttn, ns * k3::kAttn * 2, sm.scratch)) return false;
    if (threadIdx.x < ns) {
        const float* part = sm.scratch + threadIdx.x * k3::kAttn * 2;  // [slice][Σv², Σv·wq]
        float ss = part[0], dot = part[1];
        for (int j = 1; j < k3::kAttn; ++j) {
            ss = ss + part[2 * j];
            dot = dot + part[2 * j + 1];
        }
        const float r = 1.0f / sqrtf(ss / float(k3::D) + a.eps);
        sm.logit[threadIdx.x] = dot * r;
    }
    __syncthreads();
    // the exps side by side, a thread a source (one after another on one thread they were the
    // gate's longest chain); Σe in source order on thread 0
    if (threadIdx.x < ns) {
        float m = sm.logit[0];
        for (int i = 1; i < ns; ++i) m = fmaxf(m, sm.logit[i]);
        const float e = exp_f(sm.logit[threadIdx.x] - m);
        sm.exps[threadIdx.x] = e;
        put_tagged(a, c, Mailbox::WGT, row, threadIdx.x, e);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float den = sm.exps[0];
        for (int i = 1; i < ns; ++i) den = den + sm.exps[i];
        put_tagged(a, c, Mailbox::WGT, row, ns, den);
    }
    __syncthreads();
    return true;
}

// mixed = Σ_i e_i·v_i / Σe for the slice's columns (kept f32), partial Σmixed² → MSQ[row][j].
__device__ bool attn_mix(const KdaArgs& a, const Ctl& c, AttnSmem& sm, int j, int part) {
    const AttnRows rows(a, part);
    const int S = rows.n, r0 = rows.r0, nb = a.nb, wpe = nb + 2, col0 = j * k3::kSlice;  // S: the part's rows
    if (!wait_tagged(a, c, Mailbox::WGT, r0, S * wpe, sm.scratch)) return false;
    // a word (two columns) a thread: each source word is read once and the two columns' sums are
    // independent chains (one column a thread ran ~70 instructions a round at 8 warps an SM)
    for (int it = threadIdx.x; it < S * (k3::kSlice / 2); it += kThreads) {
        const int s = it / (k3::kSlice / 2), w = it % (k3::kSlice / 2);
        const float* e = sm.scratch + s * wpe;
        uint32_t word = src_word(a, sm, r0, s, 0, w, col0);
        float lo = e[0] * bf_lo(word), hi = e[0] * bf_hi(word);
        for (int i = 1; i <= nb; ++i) {
            word = src_word(a, sm, r0, s, i, w, col0);
            lo = lo + e[i] * bf_lo(word);
            hi = hi + e[i] * bf_hi(word);
        }
        *reinterpret_cast<float2*>(&sm.mixed[s][2 * w]) = make_float2(lo / e[nb + 1], hi / e[nb + 1]);
    }
    __syncthreads();
    for (int s = threadIdx.x; s < S; s += kThreads) {
        const float* m = sm.mixed[s];
        float ms = m[0] * m[0];
        for (int d = 1; d < k3::kSlice; ++d) ms = ms + m[d] * m[d];
        put_tagged(a, c, Mailbox::MSQ, (r0 + s) * k3::kAttn + j, 0, ms);
    }
    __syncthreads();
    return true;
}

// x = bf16((mixed · 1/rms) · input_norm_w) for the slice (rounding #2) → x, then XRDY[j][part].
__device__ bool attn_x(const KdaArgs& a, const Ctl& c, AttnSmem& sm, int j, int part) {
    const AttnRows rows(a, part);
    const int S = rows.n, r0 = rows.r0, col0 = j * k3::kSlice;  // S: the part's rows
    if (!wait_tagged(a, c, Mailbox::MSQ, r0 * k3::kAttn, S * k3::kAttn, sm.scratch)) return false;
    for (int s = threadIdx.x; s < S; s += kThreads) {
        const float* p = sm.scratch + s * k3::kAttn;
        float ms = p[0];
        for (int jj = 1; jj < k3::kAttn; ++jj) ms = ms + p[jj];
        sm.rr[s] = 1.0f / sqrtf(ms / float(k3::D) + a.eps);
    }
    __syncthreads();
    for (int it = threadIdx.x; it < S * 16; it += kThreads) {
        const int s = it / 16, d0 = (it % 16) * 8;
        uint32_t o[4];
        for (int q = 0; q < 4; ++q) {
            const int d = d0 + 2 * q;
            o[q] = pack((sm.mixed[s][d] * sm.rr[s]) * sm.nw[d], (sm.mixed[s][d + 1] * sm.rr[s]) * sm.nw[d + 1]);
        }
        *reinterpret_cast<uint4*>(a.x + size_t(r0 + s) * k3::D + col0 + d0) = make_uint4(o[0], o[1], o[2], o[3]);
    }
    publish_flag(a, c, Mailbox::XRDY, j * a.attn_parts + part);  // Plan::xrdy(j, part)
    return true;
}

}  // namespace monokda::gpu
