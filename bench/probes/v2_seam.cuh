// Kernel v2's AttnRes seam inside a cluster (SPEC §3 A; docs/kernel-v2.md, "The seam"), as the v2
// in_proj probe runs it beside the weight stream. Every cluster computes x for all S rows, rank r for
// its K-slice (columns 896r .. 896r + 895, which are v1's 128-column slices 7r .. 7r + 6), in v1's
// order: Σv², Σv·wq and Σmixed² sequential within a slice, the 56 slices' partials added in slice
// order, the softmax and the mix sequential over sources; so x is v1's bit for bit. Three hand-offs,
// each an st.async counted by bytes on one mbarrier of the receiving CTA, armed at entry:
//   PART  (row s, source i, slice j) → (Σv², Σv·wq) to the row's owner, rank s mod 8;
//   WGT   the owner's (e_0 .. e_nb, Σe) of row s → every rank;
//   MSQ   (row s, slice j) → Σmixed² to every rank.
// The seam's team is warps 2-11 (the consumers and the two spare warps); the producer streams and
// the reducer waits meanwhile. The step's inputs come in as bulk copies issued before the stream's
// first copy, so that they are not queued behind it.
#pragma once
#include <cmath>

#include "kernels/kda_numerics.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probes/probe_wait.hpp"
#include "bench/probes/v2_inproj_host.hpp"

namespace monokda::probe::v2 {

using namespace monokda::gpu;

constexpr int kSeamWarp0 = 2, kSeamThreads = 320, kSeamBar = 6;  // warps 2-11; named barrier 6
constexpr int kSliceW = 128, kRankSlices = kSliceCols / kSliceW, kSlices = D / kSliceW;  // 7 a rank, 56
constexpr int kSeamMaxS = 16;

// The team's named barrier: its own id (team_bar takes only 1 and 2, and 2-5 are the consumer pairs').
__device__ __forceinline__ void seam_bar() { asm volatile("bar.sync %0, %1;" ::"n"(kSeamBar), "n"(kSeamThreads) : "memory"); }

struct SeamArgs {
    const uint16_t *prefix, *delta, *blocks;                // [S][D], [S][D], [S][8][D] bf16
    const uint16_t *res_norm_w, *res_proj_w, *input_norm_w;  // [D]
    uint16_t* prefix_out;                                    // [S][D]: cluster 0 stores P'
    uint16_t* x_out;                                         // [kClusters][S][D], or null: every cluster's x, for the check
    unsigned char* dump;                                     // [kCtas][SeamSmem::dump_bytes], or null: each CTA's seam
                                                             // memory at x ready, for the stage check
    int nb;
    float eps;
};

// The seam's shared memory, after the in_proj layout's: the plan's layout (core/plan_v2.hpp,
// V2SeamLayout) at the kernel's shape.
struct SeamSmem : V2SeamLayout {
    __host__ __device__ static SeamSmem layout(int base, int S, int nb) { return {V2SeamLayout::make(base, S, nb, kSliceCols, kSliceW, kRanks)}; }
    __host__ __device__ int dump_bytes() const { return bytes - gains; }
};

// The plan's seam as kernel parameters (filled from it by the host, v2_inproj_tables.cuh): each rank's
// entry (every cluster's rank r has rank r's of cluster 0, which the host holds), each row's owner
// and its place among the owner's rows.
struct SeamPlan {
    V2SeamCta cta[kRanks];
    signed char owner[kSeamMaxS], slot[kSeamMaxS];
};

// The seam's barriers: its inputs' copies, PART's (the owner's), WGT's, MSQ's; one phase a launch.
struct SeamBars {
    uint64_t in, part, wgt, msq;
};

// The byte counts the plan arms each barrier with (its CTA's seam entry), by thread 0 right after their init.
__device__ __forceinline__ void seam_arm(SeamBars& b, const V2SeamCta& e) {
    mbar_init(&b.in, 1), mbar_init(&b.part, 1), mbar_init(&b.wgt, 1), mbar_init(&b.msq, 1);
    mbar_arrive_expect(&b.part, uint32_t(e.part_bytes));
    mbar_arrive_expect(&b.wgt, uint32_t(e.wgt_bytes));
    mbar_arrive_expect(&b.msq, uint32_t(e.msq_bytes));
}

// Where the team's first thread is, for the probe's trace: inputs landed, P' done (the team past its
// barrier), PART sent, PART in (the owner's gate), WGT in, mixed done, MSQ sent, MSQ in.
enum SeamPhase { kInputsIn, kPrimed, kPartSent, kPartIn, kWgtIn, kMixed, kMsqSent, kMsqIn, kSeamPhases };

struct Seam {
    const SeamArgs& sa;
    const SeamPlan& sp;
    SeamSmem L;
    unsigned char* smem;
    SeamBars& bars;
    int S, rank, cl, t;  // t: the thread's index in the team
    unsigned long long* st;  // the team's first thread: its phase stamps (SeamPhase), else null
    // a wait of the team on one of its CTA's seam barriers: `in` (completed by the copy engine) or
    // one completed by peers (acquire at cluster scope); try_wait, which may let the thread sleep
    // (a test_wait spin measured 0.3 µs slower to x)
    __device__ void wait(uint64_t* bar, bool peers) const {
        probe::spin([&] { return peers ? mbar_try_wait_cluster(bar, 0) : mbar_try_wait(bar, 0); });
    }
    __device__ void stamp(int phase) const {
        if (st) st[phase] = now_ns();
    }
    __device__ float* f(int off) const { return reinterpret_cast<float*>(smem + off); }
    __device__ uint16_t* h(int off) const { return reinterpret_cast<uint16_t*>(smem + off); }
    // source i of row s (the bank rows, then P'), the rank's slice, as 16-byte pieces
    __device__ const uint4* row(int s, int i) const {
        const int nb = sa.nb;
        return reinterpret_cast<const uint4*>(i == nb ? h(L.prefix) + s * L.row_h : h(L.bank) + (s * nb + i) * L.row_h);
    }
    // word w (columns 2w, 2w + 1 of the rank's slice) of source i of row s
    __device__ uint32_t word(int s, int i, int w) const {
        return reinterpret_cast<const uint32_t*>(row(s, i))[w];
    }
};

// At entry, by the producer's thread before the stream's first copy (global loads beside the stream
// wait ~2.5 µs a round, behind the copies in flight): the slice's gains, P, delta and bank rows, as
// bulk copies onto one barrier.
__device__ void seam_copy_in(const Seam& z, uint64_t policy) {  // the stream's L2 policy: evict_normal measured the same
    const SeamArgs& sa = z.sa;
    const int col0 = z.rank * kSliceCols, S = z.S, nb = sa.nb;
    constexpr uint32_t kRow = kSliceCols * 2;
    mbar_arrive_expect(&z.bars.in, uint32_t(z.sp.cta[z.rank].in_bytes));
    const uint16_t* gains[3] = {sa.res_norm_w, sa.res_proj_w, sa.input_norm_w};
    for (int g = 0; g < 3; ++g) bulk_copy_1d(z.h(z.L.gains) + g * kSliceCols, gains[g] + col0, kRow, &z.bars.in, policy);
    for (int r = 0; r < S; ++r) {
        bulk_copy_1d(z.h(z.L.prefix) + r * z.L.row_h, sa.prefix + size_t(r) * D + col0, kRow, &z.bars.in, policy);
        bulk_copy_1d(z.h(z.L.delta) + r * z.L.row_h, sa.delta + size_t(r) * D + col0, kRow, &z.bars.in, policy);
        for (int i = 0; i < nb; ++i)
            bulk_copy_1d(z.h(z.L.bank) + (r * nb + i) * z.L.row_h, sa.blocks + (size_t(r) * 8 + i) * D + col0, kRow, &z.bars.in, policy);
    }
}

// Once they landed: wq = res_norm_w · res_proj_w (exact), the gain as f32, P' = bf16(P + delta) (#1)
// in place of P, stored by cluster 0.
__device__ void seam_load(const Seam& z) {
    const int col0 = z.rank * kSliceCols, S = z.S;
    z.wait(&z.bars.in, false);
    z.stamp(kInputsIn);
    const uint16_t* g = z.h(z.L.gains);
    for (int d = z.t; d < kSliceCols; d += kSeamThreads) {
        z.f(z.L.wq)[d] = bf16::from_bits(g[d]).to_float() * bf16::from_bits(g[kSliceCols + d]).to_float();
        z.f(z.L.nw)[d] = bf16::from_bits(g[2 * kSliceCols + d]).to_float();
    }
    constexpr int kVecs = kSliceCols / 8;  // 16-byte pieces a row's slice
    for (int it = z.t; it < S * kVecs; it += kSeamThreads) {
        const int s = it / kVecs, q = it % kVecs;
        uint4* pp = reinterpret_cast<uint4*>(z.h(z.L.prefix) + s * z.L.row_h) + q;
        const uint4 p = *pp, dl = reinterpret_cast<const uint4*>(z.h(z.L.delta) + s * z.L.row_h)[q];
        const uint32_t pw[4] = {p.x, p.y, p.z, p.w}, dw[4] = {dl.x, dl.y, dl.z, dl.w};
        uint32_t o[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) o[k] = gpu::pack(bf_lo(pw[k]) + bf_lo(dw[k]), bf_hi(pw[k]) + bf_hi(dw[k]));  // #1
        const uint4 ov = make_uint4(o[0], o[1], o[2], o[3]);
        *pp = ov;
        if (z.cl == 0) reinterpret_cast<uint4*>(z.sa.prefix_out + size_t(s) * D + col0)[q] = ov;
    }
}

// One piece (8 columns) of a PART chain: Σv² and Σv·wq, column by column.
__device__ __forceinline__ void part_piece(float& ss, float& dot, const uint4& v, const float4& wa, const float4& wb) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    const float c[8] = {wa.x, wa.y, wa.z, wa.w, wb.x, wb.y, wb.z, wb.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float lo = bf_lo(w[k]), hi = bf_hi(w[k]);
        ss = ss + lo * lo, dot = dot + lo * c[2 * k];
        ss = ss + hi * hi, dot = dot + hi * c[2 * k + 1];
    }
}

// PART: (Σv², Σv·wq) of each (row, source, slice of the rank), sequential over the slice's columns,
// to the row's owner. The chain is written out, two pieces of 8 columns a round, the next round's
// loaded before this one's adds (32 dependent adds cover a load); the sums start from -0, which
// x + -0 leaves as x, so the chain is the plain one. Not left to the compiler: ptxas -O2/-O3 turned
// the plain loop into other sums (docs/results/2026-12-03-h200-v2-seam.md, runs 6-8).
__device__ void seam_part(const Seam& z) {
    const int nb = z.sa.nb, S = z.S;
    constexpr int kPieces = kSliceW / 8;
    const int rows = S * (nb + 1);  // (row, source) pairs; neighbouring lanes take neighbouring rows of one slice
    for (int it = z.t; it < rows * kRankSlices; it += kSeamThreads) {
        const int jl = it / rows, s = it % rows / (nb + 1), i = it % (nb + 1);
        const uint4* v = z.row(s, i) + jl * kPieces;
        const float4* wq = reinterpret_cast<const float4*>(z.f(z.L.wq)) + jl * kSliceW / 4;
        float ss = -0.f, dot = -0.f;
        uint4 v0 = v[0], v1 = v[1];
        float4 w0 = wq[0], w1 = wq[1], w2 = wq[2], w3 = wq[3];
#pragma unroll 1
        for (int q = 0; q < kPieces; q += 2) {
            const int n = q + 2 < kPieces ? q + 2 : q;  // the next round's pieces (the last round reloads its own)
            const uint4 n0 = v[n], n1 = v[n + 1];
            const float4 m0 = wq[2 * n], m1 = wq[2 * n + 1], m2 = wq[2 * n + 2], m3 = wq[2 * n + 3];
            part_piece(ss, dot, v0, w0, w1);
            part_piece(ss, dot, v1, w2, w3);
            v0 = n0, v1 = n1, w0 = m0, w1 = m1, w2 = m2, w3 = m3;
        }
        const int owner = z.sp.owner[s], j = z.rank * kRankSlices + jl;  // the plan's owner of row s
        float* dst = z.f(z.L.part) + ((z.sp.slot[s] * (nb + 1) + i) * kSlices + j) * 2;
        st_async_f2(peer_addr(dst, uint32_t(owner)), ss, dot, peer_addr(&z.bars.part, uint32_t(owner)));
    }
}

// WGT, on the owner: a warp a row, a lane a source: the 56 partials in slice order, the logit, the
// softmax (Σe in source order on lane 0), sent to every rank.
__device__ void seam_gate(const Seam& z) {
    const int nb = z.sa.nb, lane = z.t % 32, warp = z.t / 32;
    const int own = z.sp.cta[z.rank].rows_owned;
    if (warp >= own) return;
    z.wait(&z.bars.part, true);
    z.stamp(kPartIn);
    for (int lr = warp; lr < own; lr += kSeamThreads / 32) {
        int s = 0;  // the plan's row of this owner's place lr
        while (z.sp.owner[s] != z.rank || z.sp.slot[s] != lr) ++s;
        float logit = -INFINITY;
        if (lane <= nb) {
            const float* p = z.f(z.L.part) + ((lr * (nb + 1) + lane) * kSlices) * 2;
            float ss = p[0], dot = p[1];
            for (int j = 1; j < kSlices; ++j) ss = ss + p[2 * j], dot = dot + p[2 * j + 1];
            const float r = 1.0f / sqrtf(ss / float(D) + z.sa.eps);
            logit = dot * r;
        }
        float m = __shfl_sync(0xffffffffu, logit, 0);
        for (int i = 1; i <= nb; ++i) m = fmaxf(m, __shfl_sync(0xffffffffu, logit, i));
        const float e = lane <= nb ? exp_f(logit - m) : 0.f;
        float den = __shfl_sync(0xffffffffu, e, 0);
        for (int i = 1; i <= nb; ++i) den = den + __shfl_sync(0xffffffffu, e, i);
        const float val = lane <= nb ? e : den;
        if (lane <= nb + 1)
            for (int dst = 0; dst < kRanks; ++dst)
                st_async_u32(peer_addr(z.f(z.L.wgt) + s * (nb + 2) + lane, uint32_t(dst)), __float_as_uint(val),
                             peer_addr(&z.bars.wgt, uint32_t(dst)));
    }
}

// MIX: mixed = Σ_i e_i·v_i / Σe (kept f32), then Σmixed² a (row, slice), sequential, to every rank.
__device__ void seam_mix(const Seam& z) {
    const int nb = z.sa.nb, S = z.S;
    z.wait(&z.bars.wgt, true);
    z.stamp(kWgtIn);
    for (int it = z.t; it < S * (kSliceCols / 2); it += kSeamThreads) {
        const int s = it / (kSliceCols / 2), w = it % (kSliceCols / 2);
        const float* e = z.f(z.L.wgt) + s * (nb + 2);
        uint32_t word = z.word(s, 0, w);
        float lo = e[0] * bf_lo(word), hi = e[0] * bf_hi(word);
        for (int i = 1; i <= nb; ++i) {
            word = z.word(s, i, w);
            lo = lo + e[i] * bf_lo(word), hi = hi + e[i] * bf_hi(word);
        }
        *reinterpret_cast<float2*>(z.f(z.L.mixed) + z.L.mixed_at(s, 2 * w)) = make_float2(lo / e[nb + 1], hi / e[nb + 1]);
    }
    seam_bar();
    z.stamp(kMixed);
    for (int it = z.t; it < S * kRankSlices; it += kSeamThreads) {
        const int s = it / kRankSlices, jl = it % kRankSlices;
        const float4* m = reinterpret_cast<const float4*>(z.f(z.L.mixed) + z.L.mixed_at(s, jl * kSliceW));
        float ms = -0.f;  // as PART's chains: from -0, written out, 16 columns a round, the next round loaded ahead
        float4 c[4] = {m[0], m[1], m[2], m[3]};
#pragma unroll 1
        for (int q = 0; q < kSliceW / 4; q += 4) {
            const int n = q + 4 < kSliceW / 4 ? q + 4 : q;
            const float4 nx[4] = {m[n], m[n + 1], m[n + 2], m[n + 3]};
#pragma unroll
            for (int k = 0; k < 4; ++k) ms = ms + c[k].x * c[k].x, ms = ms + c[k].y * c[k].y, ms = ms + c[k].z * c[k].z, ms = ms + c[k].w * c[k].w;
#pragma unroll
            for (int k = 0; k < 4; ++k) c[k] = nx[k];
        }
        const int j = z.rank * kRankSlices + jl;
        for (int dst = 0; dst < kRanks; ++dst)
            st_async_u32(peer_addr(z.f(z.L.msq) + s * kSlices + j, uint32_t(dst)), __float_as_uint(ms),
                         peer_addr(&z.bars.msq, uint32_t(dst)));
    }
}

// The consumers' x rows past S (up to the n-tile's `rows`) are zeros: written while the inputs land.
__device__ void seam_x_pad(const Seam& z, uint16_t* xs, int x_stride, int rows) {
    constexpr int kVecs = kSliceCols / 8;
    for (int it = z.t; it < (rows - z.S) * kVecs; it += kSeamThreads)
        *reinterpret_cast<uint4*>(xs + (z.S + it / kVecs) * x_stride + (it % kVecs) * 8) = make_uint4(0, 0, 0, 0);
}

// X: 1/rms of each row from the 56 slices in order, x = bf16((mixed · 1/rms) · input_norm_w) (#2)
// into the consumers' x rows (zeros up to the n-tile), and into x_out for the check.
template <int NT>
__device__ void seam_x(const Seam& z, uint16_t* xs, int x_stride) {
    const int S = z.S;
    z.wait(&z.bars.msq, true);
    z.stamp(kMsqIn);
    for (int s = z.t; s < S; s += kSeamThreads) {
        const float* p = z.f(z.L.msq) + s * kSlices;
        float ms = p[0];
        for (int j = 1; j < kSlices; ++j) ms = ms + p[j];
        z.f(z.L.rr)[s] = 1.0f / sqrtf(ms / float(D) + z.sa.eps);
    }
    seam_bar();
    constexpr int kVecs = kSliceCols / 8;
    for (int it = z.t; it < S * kVecs; it += kSeamThreads) {  // the pad rows are zero already (seam_x_pad)
        const int s = it / kVecs, d0 = (it % kVecs) * 8;
        uint32_t o[4];
        const float* m = z.f(z.L.mixed) + z.L.mixed_at(s, d0) - d0;  // d0 .. d0 + 7 lie in one block
        const float rr = z.f(z.L.rr)[s], *nw = z.f(z.L.nw);
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const int d = d0 + 2 * k;
            o[k] = gpu::pack((m[d] * rr) * nw[d], (m[d + 1] * rr) * nw[d + 1]);
        }
        const uint4 v = make_uint4(o[0], o[1], o[2], o[3]);
        *reinterpret_cast<uint4*>(xs + s * x_stride + d0) = v;
        if (z.sa.x_out)
            *reinterpret_cast<uint4*>(z.sa.x_out + (size_t(z.cl) * S + s) * D + z.rank * kSliceCols + d0) = v;
    }
    seam_bar();
    if (z.sa.dump) {  // every stage's values as they stand, for the host to find the first one wrong
        const int n = z.L.dump_bytes() / 16;
        const uint4* from = reinterpret_cast<const uint4*>(z.smem + z.L.gains);
        uint4* to = reinterpret_cast<uint4*>(z.sa.dump + size_t(z.cl * kRanks + z.rank) * z.L.dump_bytes());
        for (int i = z.t; i < n; i += kSeamThreads) to[i] = from[i];
    }
}

}  // namespace monokda::probe::v2
