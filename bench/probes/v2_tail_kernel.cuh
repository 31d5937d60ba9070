// Kernel v2's tail on the device, as the tail probe runs it (bench/probes/v2_tail_probe.cu;
// docs/kernel-v2.md "The tail"): 15 clusters of 8, each CTA a reducer warp and the seam team (1 to 10
// warps: 10 the tail's own, 2 the spare warps an in_proj CTA has for it), each walking its process's
// program in the plan's flat table (core/plan_v2.hpp, PlanV2View).
// The reducer's PUBLISH takes its 8 rows from proj (an input: in the kernel they are the REDUCE's
// sums) through the conv where they are q, k or v channels (#5, conv_state written) and stores them as
// tagged words; the team's POLL polls the words its waits name until they carry the launch's tag and
// sends its share to the pair by st.async, DECAY waits for the pair's shares, runs g1 (#4) and the
// gate of its share's 16 keys and sends the decays to the pair, and the l2 norms; REC waits for the
// pair's decays and runs the recurrence on its 16 state rows (o #6, ssm_state) and sends its Σō², NORM
// waits for its g words and the pair's Σō² and writes core_out (#7). Every sum in the plan's order
// (PlanV2::reduction_order: the trees are a lane's terms in a pairwise tree, then a butterfly), f32
// with no contraction, exp through double (kernels/kda_numerics.hpp). REDUCE and RELEASE are the
// in_proj probe's; INIT's tail part (each pair's share, decay and onrm barrier of the CTA, armed for
// what the pair sends) runs at entry, as the producer has no program here. Every wait gives up after
// kGiveUpNs and records what it waited for: the probe reports it and fails.
#pragma once
#include "kernels/kda_numerics.hpp"
#include "kernels/vendor/cluster.hpp"

#include "bench/probes/v2_tail_plan.hpp"
#include "core/plan_v2.hpp"
#include "core/shape.hpp"

#include <cstdint>

namespace monokda::probe::v2tail {

using namespace monokda::gpu;

constexpr int kK = kProductionShape.K, kV = kProductionShape.V, kF = kProductionShape.F, kH = kProductionShape.H;
constexpr int kE = kProductionShape.E(), kN = kProductionShape.N(), kC = kProductionShape.C(), kW = kProductionShape.W;
constexpr int kT = kV / kV2TileRows, kRows = kV2TileRows;  // tasks a (request, head), state rows a task
constexpr int kKeys = kK / kT;                              // a task's share of the head's keys (held by the host)
constexpr int kColV = 2 * kE, kColG = 3 * kE, kColFa = 4 * kE, kColBeta = 4 * kE + kF;
constexpr int kMaxL = probe::v2::kTailMaxL;  // the host holds the plan to it (v2_tail_plan.hpp)
constexpr int kMaxTeamWarps = 10, kMaxThreads = 32 + 32 * kMaxTeamWarps;  // warp 0 the reducer, then the seam team
constexpr int kRecThreads = kRows * 8;                                          // 8 lanes a state row
constexpr int kFbStride = kF * 2 + 16;  // bytes a staged f_b_w row (V2TailLayout: padded)
constexpr unsigned long long kGiveUpNs = 200000000ull;
static_assert(kK == 128 && kF == 128 && kT == 8, "the trees below are written for 128 terms and 8 tiles");

// kStaged, kPublishNs: the fused launch's reducer, its inputs staged and its PUBLISHes' time (v2_fused_mode.cuh)
enum Stamp : int { kEntry, kPublished, kPolled, kRecDone, kNormDone, kRecNs, kRecs, kGStored, kDecayNs, kStaged, kPublishNs, kStamps };
enum Error : uint32_t { kNone, kWordsLate, kBarrierLate, kRowUncovered };

struct TailArgs {
    PlanV2View plan;
    const uint16_t *proj, *conv_in, *f_b_w, *o_norm_w;
    const float *conv_w, *A_log, *dt_bias, *ssm_in;
    const int32_t *idx, *num_acc;  // state_indices [R][L], num_accepted [R]
    uint16_t *conv_out, *qkv, *g1, *o, *core_out;
    float* ssm_out;
    uint32_t* words;               // [S][N]: bf16 bits | tag << 16
    unsigned long long* stamps;    // [cta][kStamps]
    uint32_t* error;               // the first wait given up: code, CTA, task, what (entry or row)
    V2TailDims dims;                // what the CTAs' tail memory is laid out for (PlanV2::tail_dims)
    int R, L, conv_len, conv_ds;
    uint32_t tag;
    unsigned long long g_delay_ns;  // > 0: g's rows published that long after the entry barrier (g last, as it streams last)
    int team_warps;                 // the seam team's warps, 1 .. kMaxTeamWarps (the launch has 32 + 32 · team_warps threads):
                                    // 10 here, 2 the in_proj CTA's spare warps
    float eps, l2_eps, lb, k_scale;
};

// The team's DECAY and REC times, summed in registers and stored once at its end: a read-modify-write
// of a global stamp waits a load round (beside the stream ~4 µs), and the next step's barrier waits
// for it.
struct Tally {
    unsigned long long decay_ns = 0, rec_ns = 0, recs = 0;
};

struct Cta {
    const TailArgs& a;
    char* sm;
    V2TailLayout s;  // the plan's layout of the tail's shared memory (core/plan_v2.hpp), from 0: the tail alone
    int cta, tid;  // tid: the thread's index in its role (the team: 0 .. team − 1)
    int team;      // the seam team's threads (TailArgs::team_warps warps)
    int bar;       // the team's named barrier (1 here; the in_proj kernel's own use others)
    __device__ void sync() const { asm volatile("bar.sync %0, %1;" ::"r"(bar), "r"(team) : "memory"); }
    __device__ uint64_t* share_bar() const { return reinterpret_cast<uint64_t*>(sm + s.bars); }
    __device__ uint64_t* onrm_bar() const { return share_bar() + a.dims.pairs; }
    __device__ uint64_t* decay_bar() const { return share_bar() + 2 * a.dims.pairs; }
    __device__ uint16_t* q(int slot, int t) const { return reinterpret_cast<uint16_t*>(sm + s.q) + (slot * a.L + t) * kK; }
    __device__ uint16_t* k(int slot, int t) const { return reinterpret_cast<uint16_t*>(sm + s.k) + (slot * a.L + t) * kK; }
    __device__ uint16_t* fa(int slot, int t) const { return reinterpret_cast<uint16_t*>(sm + s.fa) + (slot * a.L + t) * kF; }
    __device__ float* beta(int slot) const { return reinterpret_cast<float*>(sm + s.beta) + slot * a.L; }
    __device__ uint16_t* v(int slot, int t) const { return reinterpret_cast<uint16_t*>(sm + s.v) + (slot * a.L + t) * kRows; }
    __device__ uint16_t* o(int slot, int t) const { return reinterpret_cast<uint16_t*>(sm + s.o) + (slot * a.L + t) * kRows; }
    __device__ float* onrm(int slot, int tile) const { return reinterpret_cast<float*>(sm + s.onrm) + (slot * kT + tile) * a.L; }
    __device__ float* decay(int slot, int t) const { return reinterpret_cast<float*>(sm + s.decay) + (slot * a.L + t) * kK; }
    __device__ int* wrow() const { return reinterpret_cast<int*>(sm + s.wrow); }
    __device__ uint16_t* stage() const { return reinterpret_cast<uint16_t*>(sm + s.stage); }
    __device__ float* vec(int off, int t) const { return reinterpret_cast<float*>(sm + off) + t * kK; }
    // PUBLISH's: the entry's rows [token][8]; the j-th PUBLISH's conv window and taps of its row i
    // (request r); each request's state slot, last accepted token, each PUBLISH's first row
    __device__ uint16_t* rows() const { return reinterpret_cast<uint16_t*>(sm + s.rows); }
    __device__ uint16_t* cwin(int j, int i, int r) const { return reinterpret_cast<uint16_t*>(sm + s.cwin) + ((j * kV2OwnerRows + i) * a.R + r) * (kW - 1); }
    __device__ float* cw(int j, int i) const { return reinterpret_cast<float*>(sm + s.cw) + (j * kV2OwnerRows + i) * kW; }
    __device__ int* slot_of() const { return reinterpret_cast<int*>(sm + s.slot); }
    __device__ int* acc_of() const { return slot_of() + a.R; }
    __device__ int* pub_row() const { return slot_of() + 2 * a.R; }

    __device__ void give_up(Error e, int task, int what) const {
        if (atomicCAS(&a.error[0], 0u, uint32_t(e)) == 0u) a.error[1] = uint32_t(cta), a.error[2] = uint32_t(task), a.error[3] = uint32_t(what);
    }
    __device__ uint16_t poll_word(size_t at, int task, int entry) const {
        for (unsigned long long t0 = 0;;) {
            const uint32_t w = ld_relaxed32(a.words + at);
            if ((w >> 16) == a.tag) return uint16_t(w & 0xffffu);
            if (t0 == 0) t0 = now_ns();
            else if (now_ns() - t0 > kGiveUpNs) return give_up(kWordsLate, task, entry), uint16_t(0x7fc1);
        }
    }
    __device__ void wait_bar(uint64_t* bar, uint32_t parity, int task) const {
        if (mbar_test_wait_cluster(bar, parity)) return;
        for (const unsigned long long t0 = now_ns(); !mbar_test_wait_cluster(bar, parity);)
            if (now_ns() - t0 > kGiveUpNs) return give_up(kBarrierLate, task, -1);
    }

    // The words of instruction gi's words waits, each entry's 8 rows of its request's L tokens, polled
    // until they carry the launch's tag, into stage [wait][row][token]; wrow[wait] the entry's first row.
    __device__ void stage_words(int gi, int task) const {
        const int w0 = a.plan.wait_begin(gi), nw = a.plan.wait_begin(gi + 1) - w0, per = kV2OwnerRows * a.L;
        for (int j = tid; j < nw; j += team) {
            const V2Wait& w = a.plan.wait(w0 + j);
            wrow()[j] = w.bar.kind == V2Bar::words ? a.plan.recv(w.bar.index).row0 : -1;
        }
        for (int it = tid; it < nw * per; it += team) {
            const int j = it / per, i = it % per / a.L, t = it % a.L;
            const V2Wait& w = a.plan.wait(w0 + j);
            if (w.bar.kind != V2Bar::words) continue;
            stage()[it] = poll_word(size_t(w.round * a.L + t) * kN + size_t(a.plan.recv(w.bar.index).row0 + i), task, w.bar.index);
        }
        sync();
    }
    // Row `row` of token t among the staged words (a row no wait names: given up, NaN).
    __device__ uint16_t staged(int gi, int row, int t, int task) const {
        const int nw = a.plan.wait_begin(gi + 1) - a.plan.wait_begin(gi);
        for (int j = 0; j < nw; ++j)
            if (wrow()[j] >= 0 && row >= wrow()[j] && row < wrow()[j] + kV2OwnerRows)
                return stage()[(j * kV2OwnerRows + row - wrow()[j]) * a.L + t];
        give_up(kRowUncovered, task, row);
        return uint16_t(0x7fc1);
    }
    __device__ int64_t conv_at(int64_t slot, int j, int c) const {
        return a.conv_ds ? (slot * kC + c) * a.conv_len + j : (slot * a.conv_len + j) * kC + c;
    }
    __device__ size_t ssm_at(int slot, int h, int v) const { return ((size_t(slot) * kH + h) * kV + v) * kK; }

    __device__ void make_bars() const;
    __device__ void stage_conv(int reducer, int lane) const;
    __device__ void arm(int seam, int i0, int stride) const;
    __device__ bool step(const V2Instr& in, int gi, unsigned long long t0, Tally& tl) const;
    __device__ void store(const Tally& tl) const;
    __device__ void publish(int j, int lane) const;
    __device__ void poll(int task, int gi) const;
    __device__ void gate(int task, int gi) const;
    __device__ void rec(int task, int gi) const;
    __device__ void norm(int task, int gi) const;
};

__device__ __forceinline__ void st_relaxed_u32(uint32_t* p, uint32_t v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Before the reducer's first REDUCE (its lanes), what its PUBLISHes read that is no sum, so that a
// PUBLISH loads nothing beside the stream: each request's slot and last accepted token, each
// PUBLISH's first row (the j-th of the program, as the reducer counts them), then every conv row's
// window and taps in one batch of independent loads.
__device__ void Cta::stage_conv(int reducer, int lane) const {
    const int b = a.plan.prog_begin(reducer), n = a.plan.prog_begin(reducer + 1) - b;
    for (int r = lane; r < a.R; r += 32) slot_of()[r] = a.idx[r * a.L], acc_of()[r] = a.num_acc[r];
    int pubs = 0;
    for (int i0 = 0; i0 < n; i0 += 32) {  // the program's steps a lane each: PUBLISH j by the ballot's prefix
        const bool pub = i0 + lane < n && a.plan.instr(b + i0 + lane).opcode() == V2Op::PUBLISH;
        const unsigned m = __ballot_sync(0xffffffffu, pub);
        if (pub) pub_row()[pubs + __popc(m & ((1u << lane) - 1u))] = a.plan.recv(a.plan.instr(b + i0 + lane).a).row0;
        pubs += __popc(m);
    }
    __syncwarp();
    static_assert(kW == 4, "a row's taps are one 16-byte copy");
    for (int u = lane; u < pubs * kV2OwnerRows; u += 32)  // the taps: copies, in flight beside the windows' loads
        if (const int row = pub_row()[u / kV2OwnerRows] + u % kV2OwnerRows; row < kC) copy16_async(cw(u / kV2OwnerRows, u % kV2OwnerRows), a.conv_w + size_t(row) * kW);
    async_commit();
    const int per = kV2OwnerRows * a.R * (kW - 1);  // a PUBLISH's window entries, [row][request][entry] as cwin lays them out
    uint16_t* const win = cwin(0, 0, 0);
    constexpr int kBatch = 8;  // every load of a batch issued before its first store: one latency, not eight
    for (int i0 = lane; i0 < pubs * per; i0 += kBatch * 32) {
        uint16_t v[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
            const int it = i0 + 32 * k, u = it % per, i = u / (a.R * (kW - 1)), r = u / (kW - 1) % a.R;
            const int row = it < pubs * per ? pub_row()[it / per] + i : kC, slot = slot_of()[r];
            v[k] = row < kC && slot > 0 ? a.conv_in[conv_at(slot, acc_of()[r] - 1 + u % (kW - 1), row)] : uint16_t(0);
        }
#pragma unroll
        for (int k = 0; k < kBatch; ++k)
            if (i0 + 32 * k < pubs * per) win[i0 + 32 * k] = v[k];
    }
    async_wait<0>();
    __syncwarp();
}

// PUBLISH, the j-th of the reducer's program (its entry's first row staged, pub_row): the entry's 8
// rows (rows(), as REDUCE rounded them) for every request (a lane a row and request), q, k and v
// channels through the conv: out[t] = SiLU(Σ_j seq[t + j] · w[j]) rounded (#5) over the W − 1 staged
// state entries and the L raw inputs; the new conv_state entries (the window's last W − 2, then the
// inputs). The token loops are unrolled to kMaxL so that the arrays stay in registers: in local
// memory each PUBLISH waited on loads beside the stream.
__device__ void Cta::publish(int j, int lane) const {
    const int L = a.L, R = a.R, row0 = pub_row()[j];
    for (int it = lane; it < kV2OwnerRows * R; it += 32) {
        const int i = it % kV2OwnerRows, r = it / kV2OwnerRows, row = row0 + i;
        uint16_t x[kMaxL], out[kMaxL];
#pragma unroll
        for (int t = 0; t < kMaxL; ++t) x[t] = t < L ? rows()[(r * L + t) * kV2OwnerRows + i] : uint16_t(0), out[t] = x[t];
        if (row < kC) {
            const int slot = slot_of()[r];
            const uint16_t* win = cwin(j, i, r);
            const float4 w = *reinterpret_cast<const float4*>(cw(j, i));
            static_assert(kW == 4, "the taps are one float4");
            float seq[kW - 1 + kMaxL];
#pragma unroll
            for (int q = 0; q < kW - 1; ++q) seq[q] = bf(bf16::from_bits(win[q]));
#pragma unroll
            for (int t = 0; t < kMaxL; ++t) seq[kW - 1 + t] = bf(bf16::from_bits(x[t]));
#pragma unroll
            for (int t = 0; t < kMaxL; ++t)
                if (t < L) {
                    float s = seq[t] * w.x;
                    s = s + seq[t + 1] * w.y;
                    s = s + seq[t + 2] * w.z;
                    s = s + seq[t + 3] * w.w;
                    out[t] = rnd(s / (1.f + exp_f(-s)));
                    a.qkv[size_t(r * L + t) * kC + row] = out[t];
                }
            if (slot > 0) {
#pragma unroll
                for (int q = 0; q < kW - 2; ++q) a.conv_out[conv_at(slot, q, row)] = win[q + 1];
#pragma unroll
                for (int t = 0; t < kMaxL; ++t)
                    if (t < L) a.conv_out[conv_at(slot, kW - 2 + t, row)] = x[t];
            }
        }
#pragma unroll
        for (int t = 0; t < kMaxL; ++t)
            if (t < L) st_relaxed_u32(a.words + size_t(r * L + t) * kN + row, uint32_t(out[t]) | a.tag << 16);
    }
}

// POLL: the words of the task's share, beta and its v rows; beta and v kept; the share (q, k and
// f_a rows, two bf16 a store) st.async into every pair task's slot, counted on its share barrier.
// The f_b_w rows and dt_bias of its keys are copied in meanwhile for DECAY, which follows its POLL in
// every program (a CTA's tasks run one after another: docs/plan.md, "The tail's steps").
__device__ void Cta::poll(int task, int gi) const {
    const V2Task t = a.plan.task(task);
    sync();  // the staging buffer, from the step before's threads
    const int L = a.L, h = t.head, v0 = t.tile * kRows, sl = t.onrm;
    for (int i = tid; i < kKeys * kF / 8 + kKeys / 4; i += team)  // DECAY's inputs that need no word: in flight while it polls
        if (i < kKeys * kF / 8) copy16_async(sm + s.fb + i / (kF / 8) * kFbStride + 16 * (i % (kF / 8)), a.f_b_w + size_t(h * kK + t.qk0) * kF + 8 * i);
        else copy16_async(sm + s.dtb + 16 * (i - kKeys * kF / 8), a.dt_bias + h * kK + t.qk0 + 4 * (i - kKeys * kF / 8));
    async_commit();
    stage_words(gi, task);
    for (int it = tid; it < L * (kRows + 1); it += team) {
        const int tok = it / (kRows + 1), r = it % (kRows + 1);
        if (r == kRows) beta(sl)[tok] = sigmoid_f(bf(bf16::from_bits(staged(gi, kColBeta + h, tok, task))));
        else v(sl, tok)[r] = staged(gi, kColV + h * kV + v0 + r, tok, task);
    }
    const int per = t.qkn + t.fan / 2;  // stores a token: q and k pairs, f_a pairs
    for (int it = tid; it < kT * L * per; it += team) {
        const int m = it / (L * per), tok = it / per % L, u = it % per;
        const V2Task to = a.plan.task(a.plan.pair_task(task, m));  // tile m of the pair (the plan's pair_tasks)
        int row, col;
        uint16_t* dst;
        if (u < t.qkn / 2) row = h * kK + t.qk0 + 2 * u, col = t.qk0 + 2 * u, dst = q(to.onrm, tok);
        else if (u < t.qkn) row = kE + h * kK + t.qk0 + 2 * (u - t.qkn / 2), col = t.qk0 + 2 * (u - t.qkn / 2), dst = k(to.onrm, tok);
        else row = kColFa + t.fa0 + 2 * (u - t.qkn), col = t.fa0 + 2 * (u - t.qkn), dst = fa(to.onrm, tok);
        const uint32_t pair = uint32_t(staged(gi, row, tok, task)) | uint32_t(staged(gi, row + 1, tok, task)) << 16;
        st_async_u32(peer_addr(dst + col, uint32_t(to.rank)), pair, peer_addr(&share_bar()[to.onrm], uint32_t(to.rank)));
    }
}

// A tree of a lane's 16 consecutive terms (pair_sum over them)
__device__ __forceinline__ float tree16(const float (&p)[16]) {
    const float lo[8] = {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]}, hi[8] = {p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]};
    return pairwise8(lo) + pairwise8(hi);
}
// the butterfly over the 8 lanes of a state row (terms 16c.. of lane c): pair_sum(0, 128)
__device__ __forceinline__ float row_sum(float v) {
    for (int m = 1; m < 8; m *= 2) v = v + __shfl_xor(v, m);
    return v;
}

// A thread's pairwise tree of the 128 products f_a · w (bf16 rows in shared memory, 16 bytes a step):
// pairwise8 of each 8 consecutive terms, then the 16 partial sums pairwise in order, which is the
// butterfly's pair_sum(0, 128) (kda_numerics.hpp) in one thread.
__device__ __forceinline__ float dot128(const uint16_t* fa, const char* w) {
    float g[16];
#pragma unroll
    for (int q = 0; q < 16; ++q) {
        const uint4 wv = *reinterpret_cast<const uint4*>(w + 16 * q), fv = *reinterpret_cast<const uint4*>(fa + 8 * q);
        const uint32_t ww[4] = {wv.x, wv.y, wv.z, wv.w}, ff[4] = {fv.x, fv.y, fv.z, fv.w};
        float p[8];
#pragma unroll
        for (int u = 0; u < 4; ++u) p[2 * u] = bf_lo(ff[u]) * bf_lo(ww[u]), p[2 * u + 1] = bf_hi(ff[u]) * bf_hi(ww[u]);
        g[q] = pairwise8(p);
    }
#pragma unroll
    for (int m = 1; m < 16; m *= 2)
#pragma unroll
        for (int q = 0; q < 16; q += 2 * m) g[q] = g[q] + g[q + m];
    return g[0];
}

// DECAY: the pair's shares in; g1 of its share's keys (stored) and each one's decay (two exps), a
// thread an element (token, key), sent to every tile of the pair; then q̂ and k̂, a warp a token (4
// keys a lane, then the 32 lanes), for REC. A thread an element, not a half-warp: the exps' latency
// is paid once a step, not once an element of a warp's turn.
__device__ void Cta::gate(int task, int gi) const {
    const V2Task t = a.plan.task(task);
    const V2Wait w = a.plan.wait(a.plan.wait_begin(gi));
    const float A_log = a.A_log[t.head];  // in flight during the waits
    async_wait<0>();     // this thread's copies of f_b_w and dt_bias
    sync();  // everyone's
    wait_bar(&share_bar()[w.bar.index], uint32_t(w.round & 1), task);
    const int L = a.L, h = t.head, sl = t.onrm, r = t.request;
    const float A = exp_f(A_log), *dtb = reinterpret_cast<const float*>(sm + s.dtb);
    for (int e = tid; e < L * kKeys; e += team) {
        const int tok = e / kKeys, j = e % kKeys, kk = t.qk0 + j;
        const uint16_t g1 = rnd(dot128(fa(sl, tok), sm + s.fb + j * kFbStride));
        a.g1[size_t(r * L + tok) * kE + h * kK + kk] = g1;
        const float d = exp_f(a.lb * sigmoid_f(A * (bf(bf16::from_bits(g1)) + dtb[j])));
        for (int m = 0; m < kT; ++m) {
            const V2Task to = a.plan.task(a.plan.pair_task(task, m));  // tile m of the pair (the plan's pair_tasks)
            st_async_u32(peer_addr(decay(to.onrm, tok) + kk, uint32_t(to.rank)), f32_bits(d), peer_addr(&decay_bar()[to.onrm], uint32_t(to.rank)));
        }
    }
    for (int tok = tid / 32; tok < L; tok += team / 32) {  // a warp a token: q̂, k̂
        const int l = tid % 32;
        float qv[4], kv[4];
        for (int j = 0; j < 4; ++j) qv[j] = bf(bf16::from_bits(q(sl, tok)[4 * l + j])), kv[j] = bf(bf16::from_bits(k(sl, tok)[4 * l + j]));
        float sq = pairwise4(qv[0] * qv[0], qv[1] * qv[1], qv[2] * qv[2], qv[3] * qv[3]);
        float sk = pairwise4(kv[0] * kv[0], kv[1] * kv[1], kv[2] * kv[2], kv[3] * kv[3]);
        for (int m = 1; m < 32; m *= 2) sq = sq + __shfl_xor(sq, m), sk = sk + __shfl_xor(sk, m);
        const float qd = sqrtf(sq + a.l2_eps), kd = sqrtf(sk + a.l2_eps);
        for (int j = 0; j < 4; ++j) vec(s.qn, tok)[4 * l + j] = (qv[j] / qd) * a.k_scale, vec(s.kn, tok)[4 * l + j] = kv[j] / kd;
    }
}

// REC: the pair's decays in; the recurrence on 16 state rows, 8 lanes a row and 16 keys a lane; o
// (#6) and the state of each token with a slot; Σō² of its rows to the pair.
__device__ void Cta::rec(int task, int gi) const {
    const V2Task t = a.plan.task(task);
    const V2Wait w = a.plan.wait(a.plan.wait_begin(gi));
    const int L = a.L, h = t.head, v0 = t.tile * kRows, sl = t.onrm, r = t.request;
    const int init = a.idx[r * L + a.num_acc[r] - 1];  // loaded before the wait, not after it beside the stream
    sync();  // q̂ and k̂ from DECAY's threads, beta and v from POLL's
    wait_bar(&decay_bar()[w.bar.index], uint32_t(w.round & 1), task);
    for (int rt = tid; rt < kRecThreads; rt += team) {  // whole warps: a team of fewer threads takes the rows in turns
        const int row = rt / 8, kb = 16 * (rt % 8);
        if (init > 0) {
            float S[16];
            const float4* from = reinterpret_cast<const float4*>(a.ssm_in + ssm_at(init, h, v0 + row) + kb);
            for (int j = 0; j < 4; ++j) {
                const float4 f = from[j];
                S[4 * j] = f.x, S[4 * j + 1] = f.y, S[4 * j + 2] = f.z, S[4 * j + 3] = f.w;
            }
            for (int tok = 0; tok < L; ++tok) {
                const float *d = decay(sl, tok) + kb, *kn = vec(s.kn, tok) + kb, *qn = vec(s.qn, tok) + kb;
                float p[16];
                for (int j = 0; j < 16; ++j) S[j] = S[j] * d[j];
                for (int j = 0; j < 16; ++j) p[j] = S[j] * kn[j];
                const float u = (bf(bf16::from_bits(v(sl, tok)[row])) - row_sum(tree16(p))) * beta(sl)[tok];
                for (int j = 0; j < 16; ++j) S[j] = S[j] + u * kn[j];
                for (int j = 0; j < 16; ++j) p[j] = S[j] * qn[j];
                const float oq = row_sum(tree16(p));
                if (kb == 0) o(sl, tok)[row] = rnd(oq);
                if (const int slot = a.idx[r * L + tok]; slot > 0) {
                    float4* to = reinterpret_cast<float4*>(a.ssm_out + ssm_at(slot, h, v0 + row) + kb);
                    for (int j = 0; j < 4; ++j) to[j] = make_float4(S[4 * j], S[4 * j + 1], S[4 * j + 2], S[4 * j + 3]);
                }
            }
        } else if (kb == 0) {
            for (int tok = 0; tok < L; ++tok) o(sl, tok)[row] = 0;  // +0: no initial state
        }
    }
    sync();
    for (int it = tid; it < L * kRows; it += team)
        a.o[size_t(r * L + it / kRows) * kE + h * kV + v0 + it % kRows] = o(sl, it / kRows)[it % kRows];
    for (int it = tid; it < kT * L; it += team) {  // Σō² of the 16 rows, sequential, to each pair task
        const int m = it / L, tok = it % L;
        const V2Task to = a.plan.task(a.plan.pair_task(task, m));
        float sq = bf(bf16::from_bits(o(sl, tok)[0])) * bf(bf16::from_bits(o(sl, tok)[0]));
        for (int i = 1; i < kRows; ++i) sq = sq + bf(bf16::from_bits(o(sl, tok)[i])) * bf(bf16::from_bits(o(sl, tok)[i]));
        st_async_u32(peer_addr(onrm(to.onrm, t.tile) + tok, uint32_t(to.rank)), f32_bits(sq),
                     peer_addr(&onrm_bar()[to.onrm], uint32_t(to.rank)));
    }
}

// NORM: its g rows' words and the pair's Σō² (the tiles' partials in tile order); core_out (#7).
__device__ void Cta::norm(int task, int gi) const {
    const V2Task t = a.plan.task(task);
    sync();
    stage_words(gi, task);
    const V2Wait w = a.plan.wait(a.plan.wait_begin(gi + 1) - 1);
    wait_bar(&onrm_bar()[w.bar.index], uint32_t(w.round & 1), task);
    const int L = a.L, h = t.head, v0 = t.tile * kRows, sl = t.onrm;
    for (int it = tid; it < L * kRows; it += team) {
        const int tok = it / kRows, i = it % kRows;
        float ms = onrm(sl, 0)[tok];
        for (int tile = 1; tile < kT; ++tile) ms = ms + onrm(sl, tile)[tok];
        const float rr = 1.f / sqrtf(ms / float(kV) + a.eps);
        const float g = bf(bf16::from_bits(staged(gi, kColG + h * kV + v0 + i, tok, task)));
        const float y = ((bf(bf16::from_bits(o(sl, tok)[i])) * rr) * bf(bf16::from_bits(a.o_norm_w[v0 + i]))) * sigmoid_f(g);
        a.core_out[size_t(t.request * L + tok) * kE + h * kV + v0 + i] = rnd(y);
    }
}

// INIT's tail part: each pair slot's share, onrm and decay barrier made (one thread, before the init
// fence), then each of the CTA's tasks (its POLLs in the seam team's program `seam`, from i0 in steps
// of stride) arming its pair's for the pair's sends. The arming may follow the entry barrier: a send
// that lands first takes the byte count below zero, and the phase, which counts the arm's one
// arrival, cannot complete before it.
__device__ void Cta::make_bars() const {
    for (int p = 0; p < a.dims.pairs; ++p) mbar_init(&share_bar()[p], 1), mbar_init(&onrm_bar()[p], 1), mbar_init(&decay_bar()[p], 1);
}
__device__ void Cta::arm(int seam, int i0, int stride) const {
    for (int gi = a.plan.prog_begin(seam) + i0; gi < a.plan.prog_begin(seam + 1); gi += stride) {
        const V2Instr in = a.plan.instr(gi);
        if (in.opcode() != V2Op::POLL) continue;
        const V2Task t = a.plan.task(in.a);
        int bytes = 0, decays = 0;
        for (int m = 0; m < kT; ++m) {
            const V2Task& from = a.plan.task(a.plan.pair_task(in.a, m));
            bytes += v2_share_bytes(from, a.L), decays += v2_decay_bytes(from, a.L);
        }
        mbar_arrive_expect(&share_bar()[t.onrm], uint32_t(bytes));
        mbar_arrive_expect(&decay_bar()[t.onrm], uint32_t(decays));
        mbar_arrive_expect(&onrm_bar()[t.onrm], uint32_t(kT * v2_onrm_bytes(a.L)));
    }
}

// A seam-team step of the tail (instruction gi, begun at t0), with its stamps; false: not one.
__device__ bool Cta::step(const V2Instr& in, int gi, unsigned long long t0, Tally& tl) const {
    unsigned long long* st = a.stamps + size_t(cta) * kStamps;
    switch (in.opcode()) {
        case V2Op::POLL:
            poll(in.a, gi);
            if (tid == 0) st[kPolled] = now_ns();
            return true;
        case V2Op::DECAY:
            gate(in.a, gi);
            tl.decay_ns += now_ns() - t0;
            return true;
        case V2Op::REC:
            rec(in.a, gi);
            if (tid == 0) st[kRecDone] = now_ns();
            tl.rec_ns += now_ns() - t0, tl.recs += 1;
            return true;
        case V2Op::NORM:
            norm(in.a, gi);
            if (tid == 0) st[kNormDone] = now_ns();
            return true;
        default: return false;
    }
}

__device__ void Cta::store(const Tally& tl) const {
    unsigned long long* st = a.stamps + size_t(cta) * kStamps;
    if (tid == 0) st[kDecayNs] = tl.decay_ns, st[kRecNs] = tl.rec_ns, st[kRecs] = tl.recs;
}

// The launch: 120 CTAs in clusters of 8 (CTA = cluster · 8 + rank, the plan's numbering).
__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(kMaxThreads, 1) tail_kernel(const __grid_constant__ TailArgs a) {
    extern __shared__ __align__(16) char sm[];
    const int cta = int(blockIdx.x), warp = int(threadIdx.x) / 32;
    const Cta c{a, sm, V2TailLayout::make(0, a.dims), cta, warp == 0 ? int(threadIdx.x) : int(threadIdx.x) - 32, 32 * a.team_warps, 1};
    const int seam = PlanV2::proc(cta, V2Role::seam), reducer = PlanV2::proc(cta, V2Role::reducer);
    if (threadIdx.x == 0) c.make_bars();
    __syncthreads();
    c.arm(seam, int(threadIdx.x), int(blockDim.x));
    if (threadIdx.x == 0) mbar_init_fence();
    __syncthreads();
    unsigned long long* st = a.stamps + size_t(cta) * kStamps;
    const int p = warp == 0 ? reducer : seam;
    unsigned long long entry = 0;
    Tally tl;
    if (warp == 0) c.stage_conv(reducer, c.tid);
    for (int gi = a.plan.prog_begin(p), pubs = 0; gi < a.plan.prog_begin(p + 1); ++gi) {
        const V2Instr in = a.plan.instr(gi);
        const unsigned long long t0 = now_ns();
        if (in.opcode() == V2Op::SYNC) {
            cluster_sync();
            if (entry == 0) entry = now_ns();
            if (threadIdx.x == 0 && st[kEntry] == 0) st[kEntry] = entry;
        } else if (in.opcode() == V2Op::PUBLISH) {
            const int row0 = a.plan.recv(in.a).row0;
            const bool g = row0 >= kColG && row0 < kColFa;
            while (g && now_ns() - entry < a.g_delay_ns) {
            }
            for (int col = c.tid; col < a.R * a.L; col += 32)  // proj is an input here: the entry's rows from it
                *reinterpret_cast<uint4*>(c.rows() + col * kV2OwnerRows) = *reinterpret_cast<const uint4*>(a.proj + size_t(col) * kN + row0);
            __syncwarp();
            c.publish(pubs++, c.tid);
            __syncwarp();  // rows() read before the next entry's
            if (c.tid == 0) st[kPublished] = now_ns();
            if (c.tid == 0 && g) st[kGStored] = now_ns();
        } else {
            c.step(in, gi, t0, tl);  // REDUCE, RELEASE: the in_proj probe's (proj is an input here)
        }
    }
    if (p == seam) c.store(tl);
}

}  // namespace monokda::probe::v2tail
