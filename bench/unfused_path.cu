// Built with -fmad=false (bench/CMakeLists.txt): the reference rounds every product and sum
// separately, so an elementwise stage here is bit-exact against it and only the order of a
// reduction's terms may differ. Memory-bound kernels lose nothing measurable by it.
#include "bench/unfused_path.cuh"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"

namespace monokda::bench {

namespace {

__device__ __forceinline__ float bf_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    return uint32_t(bf16::round(lo).bits) | (uint32_t(bf16::round(hi).bits) << 16);
}
__device__ __forceinline__ void unpack8(const uint4& v, float (&f)[8]) {
    f[0] = bf_lo(v.x); f[1] = bf_hi(v.x); f[2] = bf_lo(v.y); f[3] = bf_hi(v.y);
    f[4] = bf_lo(v.z); f[5] = bf_hi(v.z); f[6] = bf_lo(v.w); f[7] = bf_hi(v.w);
}
__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
    return make_uint4(pack2(f[0], f[1]), pack2(f[2], f[3]), pack2(f[4], f[5]), pack2(f[6], f[7]));
}
__device__ __forceinline__ void unpack4(const uint2& v, float (&f)[4]) {
    f[0] = bf_lo(v.x); f[1] = bf_hi(v.x); f[2] = bf_lo(v.y); f[3] = bf_hi(v.y);
}
__device__ __forceinline__ uint2 pack4(const float (&f)[4]) { return make_uint2(pack2(f[0], f[1]), pack2(f[2], f[3])); }

// read-only inputs through the non-coherent path; state that the same kernel rewrites through plain loads
__device__ __forceinline__ uint4 ldg16(const bf16* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }
__device__ __forceinline__ uint2 ldg8(const bf16* p) { return __ldg(reinterpret_cast<const uint2*>(p)); }
__device__ __forceinline__ void st16(bf16* p, const uint4& v) { *reinterpret_cast<uint4*>(p) = v; }
__device__ __forceinline__ void st8(bf16* p, const uint2& v) { *reinterpret_cast<uint2*>(p) = v; }

// xor butterfly: every lane ends with the same bits (IEEE addition commutes)
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int off = 16; off; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}
__device__ __forceinline__ float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

// ---------------------------------------------------------------------------------------------
// A. AttnRes seam: one CTA a row, D/8 threads, 16 bytes a thread from every source; all loads are
// issued before the first use, the sources stay in registers through the mix. Cross-warp totals
// and the softmax are done once, by warp 0, and broadcast through shared memory (every thread
// redoing them made the first version of this kernel latency-bound).
constexpr int kAttnThreads = 896;  // D/8 at the production D = 7168 (make_dims checks D <= 8·896)

template <int NB>
__global__ void __launch_bounds__(kAttnThreads) attnres_kernel(StepPtrs p, StepDims d) {
    constexpr int NS = NB + 1;  // sources: bank rows 0..NB-1, then P'
    __shared__ float red_keys[32][2 * NS];
    __shared__ float red_msq[32];
    __shared__ float coef[NS + 1];  // e_0..e_nb, Σe
    __shared__ float rrms;
    const int s = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = blockDim.x >> 5;
    const size_t row = size_t(s) * d.D;
    const int c0 = tid * 8;

    uint4 src[NS];
#pragma unroll
    for (int i = 0; i < NB; ++i) src[i] = ldg16(p.blocks + (size_t(s) * 8 + i) * d.D + c0);
    const uint4 pv = ldg16(p.prefix + row + c0), dv = ldg16(p.delta + row + c0);
    const uint4 nwv = ldg16(p.res_norm_w + c0), pwv = ldg16(p.res_proj_w + c0);

    // 1. P' = bf16(P + delta) (#1) → prefix_out, and bank row nb on a block-write layer
    {
        float a[8], b[8], sum[8];
        unpack8(pv, a);
        unpack8(dv, b);
#pragma unroll
        for (int j = 0; j < 8; ++j) sum[j] = a[j] + b[j];
        src[NB] = pack8(sum);
        st16(p.prefix_out + row + c0, src[NB]);
        if (d.block_write) st16(p.blocks + (size_t(s) * 8 + NB) * d.D + c0, src[NB]);
    }
    // 3.-4. per-source Σv² and Σv·wq: this thread's 8 columns, the warp, then warp 0 over warps
    float wq[8];
    {
        float n[8], q[8];
        unpack8(nwv, n);
        unpack8(pwv, q);
#pragma unroll
        for (int j = 0; j < 8; ++j) wq[j] = n[j] * q[j];
    }
#pragma unroll
    for (int i = 0; i < NS; ++i) {
        float v[8];
        unpack8(src[i], v);
        float ss = v[0] * v[0], dt = v[0] * wq[0];
#pragma unroll
        for (int j = 1; j < 8; ++j) { ss = ss + v[j] * v[j]; dt = dt + v[j] * wq[j]; }
        ss = warp_sum(ss);
        dt = warp_sum(dt);
        if (lane == 0) { red_keys[warp][2 * i] = ss; red_keys[warp][2 * i + 1] = dt; }
    }
    __syncthreads();
    if (warp == 0) {
        // 4.-5. key norms, logits, softmax weights (max-subtracted)
        float logit[NS], mx = -INFINITY;
#pragma unroll
        for (int i = 0; i < NS; ++i) {
            const float ss = warp_sum(lane < nwarps ? red_keys[lane][2 * i] : 0.0f);
            const float dt = warp_sum(lane < nwarps ? red_keys[lane][2 * i + 1] : 0.0f);
            logit[i] = dt * (1.0f / sqrtf(ss / float(d.D) + d.eps));
            mx = fmaxf(mx, logit[i]);
        }
        if (lane == 0) {
            float den = 0;
#pragma unroll
            for (int i = 0; i < NS; ++i) {
                coef[i] = expf(logit[i] - mx);
                den = i == 0 ? coef[0] : den + coef[i];
            }
            coef[NS] = den;
        }
    }
    __syncthreads();
    // 5. mixed, kept f32
    float mixed[8];
    {
        float v[8];
        unpack8(src[0], v);
        const float e0 = coef[0];
#pragma unroll
        for (int j = 0; j < 8; ++j) mixed[j] = e0 * v[j];
#pragma unroll
        for (int i = 1; i < NS; ++i) {
            unpack8(src[i], v);
            const float e = coef[i];
#pragma unroll
            for (int j = 0; j < 8; ++j) mixed[j] = mixed[j] + e * v[j];
        }
        const float den = coef[NS];
#pragma unroll
        for (int j = 0; j < 8; ++j) mixed[j] = mixed[j] / den;
    }
    // 6. x = bf16((mixed · 1/rms) · input_norm_w) (#2)
    float ms = mixed[0] * mixed[0];
#pragma unroll
    for (int j = 1; j < 8; ++j) ms = ms + mixed[j] * mixed[j];
    ms = warp_sum(ms);
    if (lane == 0) red_msq[warp] = ms;
    __syncthreads();
    if (warp == 0) {
        const float tot = warp_sum(lane < nwarps ? red_msq[lane] : 0.0f);
        if (lane == 0) rrms = 1.0f / sqrtf(tot / float(d.D) + d.eps);
    }
    const uint4 iwv = ldg16(p.input_norm_w + c0);  // a small, L2-resident vector: loaded late, registers are scarce
    __syncthreads();
    const float rr = rrms;
    float g[8], xo[8];
    unpack8(iwv, g);
#pragma unroll
    for (int j = 0; j < 8; ++j) xo[j] = (mixed[j] * rr) * g[j];
    st16(p.x + row + c0, pack8(xo));
}

// ---------------------------------------------------------------------------------------------
// D. Short conv, spec mode, "sd" layout: a thread owns 2 channels of one request (a warp covers 128
// contiguous bytes of a row), reads the window and the L inputs, writes L outputs and the rolled
// state. The same thread reads the old window before it rewrites the slot, so in place is safe.
// (8 channels a thread measured slower: too few threads, too much serial work each.)
template <int L>
__global__ void __launch_bounds__(128) short_conv_sd_kernel(StepPtrs p, StepDims d) {
    const int r = blockIdx.y;
    const int c0 = (blockIdx.x * blockDim.x + threadIdx.x) * 2;
    if (c0 >= d.C) return;
    const int slot = p.state_indices[r * L];
    const int a = p.num_accepted[r];
    uint32_t xin[L];
#pragma unroll
    for (int t = 0; t < L; ++t) xin[t] = __ldg(reinterpret_cast<const uint32_t*>(p.proj + size_t(r * L + t) * d.N + c0));
    bf16* base = p.conv_state + int64_t(slot) * d.conv_slot_stride;
    uint32_t win[3] = {0, 0, 0};
    if (slot > 0)
#pragma unroll
        for (int j = 0; j < 3; ++j) win[j] = *reinterpret_cast<const uint32_t*>(base + size_t(a - 1 + j) * d.C + c0);
    const float4 w0 = __ldg(reinterpret_cast<const float4*>(p.conv_w) + c0);
    const float4 w1 = __ldg(reinterpret_cast<const float4*>(p.conv_w) + c0 + 1);

    float s0[3 + L], s1[3 + L];  // the two channels' sequences
#pragma unroll
    for (int j = 0; j < 3; ++j) { s0[j] = bf_lo(win[j]); s1[j] = bf_hi(win[j]); }
#pragma unroll
    for (int t = 0; t < L; ++t) { s0[3 + t] = bf_lo(xin[t]); s1[3 + t] = bf_hi(xin[t]); }
#pragma unroll
    for (int t = 0; t < L; ++t) {
        float a0 = s0[t] * w0.x, a1 = s1[t] * w1.x;  // oldest first
        a0 = a0 + s0[t + 1] * w0.y;
        a1 = a1 + s1[t + 1] * w1.y;
        a0 = a0 + s0[t + 2] * w0.z;
        a1 = a1 + s1[t + 2] * w1.z;
        a0 = a0 + s0[t + 3] * w0.w;
        a1 = a1 + s1[t + 3] * w1.w;
        *reinterpret_cast<uint32_t*>(p.qkv + size_t(r * L + t) * d.C + c0) =
            pack2(a0 / (1.0f + expf(-a0)), a1 / (1.0f + expf(-a1)));  // SiLU (#5)
    }
    if (slot > 0) {  // new state: the two entries from offset a, then the raw inputs
        *reinterpret_cast<uint32_t*>(base + c0) = win[1];
        *reinterpret_cast<uint32_t*>(base + size_t(d.C) + c0) = win[2];
#pragma unroll
        for (int t = 0; t < L; ++t) *reinterpret_cast<uint32_t*>(base + size_t(2 + t) * d.C + c0) = xin[t];
    }
}

// "ds" layout ([slot][channel][entry]): a thread a channel, entries contiguous per channel.
template <int L>
__global__ void __launch_bounds__(128) short_conv_ds_kernel(StepPtrs p, StepDims d) {
    const int r = blockIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= d.C) return;
    const int slot = p.state_indices[r * L];
    const int a = p.num_accepted[r];
    bf16 xin[L];
#pragma unroll
    for (int t = 0; t < L; ++t) xin[t] = p.proj[size_t(r * L + t) * d.N + c];
    bf16* base = p.conv_state + int64_t(slot) * d.conv_slot_stride + int64_t(c) * d.conv_len;
    bf16 win[3] = {bf16::from_bits(0), bf16::from_bits(0), bf16::from_bits(0)};
    if (slot > 0)
#pragma unroll
        for (int j = 0; j < 3; ++j) win[j] = base[a - 1 + j];
    const float4 w = __ldg(reinterpret_cast<const float4*>(p.conv_w) + c);
    float seq[3 + L];
#pragma unroll
    for (int j = 0; j < 3; ++j) seq[j] = win[j].to_float();
#pragma unroll
    for (int t = 0; t < L; ++t) seq[3 + t] = xin[t].to_float();
#pragma unroll
    for (int t = 0; t < L; ++t) {
        float acc = seq[t] * w.x;
        acc = acc + seq[t + 1] * w.y;
        acc = acc + seq[t + 2] * w.z;
        acc = acc + seq[t + 3] * w.w;
        p.qkv[size_t(r * L + t) * d.C + c] = bf16::round(acc / (1.0f + expf(-acc)));
    }
    if (slot > 0) {
        base[0] = win[1];
        base[1] = win[2];
#pragma unroll
        for (int t = 0; t < L; ++t) base[2 + t] = xin[t];
    }
}

// ---------------------------------------------------------------------------------------------
// E. Recurrence: one CTA a (16-row chunk, head, request); a warp owns 4 state rows, a lane 4 key
// columns of each (one float4 a row, coalesced). Rows are independent; what depends on the token
// only (l2-normed q and k, the decay, beta) is computed first for every token, by the CTA's warps
// in turn, into shared memory, so that the state chain carries just its own two reductions a
// token and the CTA stays small in registers. (Computing them inside the chain took 127 registers
// and 1.45 waves of CTAs, far under the states' bandwidth.)
template <int L>
__global__ void __launch_bounds__(128) recurrence_kernel(StepPtrs p, StepDims d) {
    __shared__ float4 s_qn[L][32], s_kn[L][32], s_decay[L][32];  // [token][lane]: the lane's 4 columns
    __shared__ float s_beta[L];
    __shared__ __align__(16) float s_v[L][16];  // the chunk's 16 v values a token
    __shared__ int s_slot[L];
    const int chunk = blockIdx.x, h = blockIdx.y, r = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int v0 = chunk * 16 + warp * 4;
    const int k0 = lane * 4;
    const int a = p.num_accepted[r];
    const int init = p.state_indices[r * L + a - 1];
    if (init <= 0) {  // no initial state: o is +0 for every token, no state written (whole CTA)
        if (lane < L) st8(p.o + size_t(r * L + lane) * d.E + size_t(h) * d.V + v0, make_uint2(0, 0));
        return;
    }
    // the longest loads first: the chunk's state rows
    float Sr[4][4];
    {
        const float* sb = p.ssm_state + int64_t(init) * d.ssm_slot_stride + (size_t(h) * d.V + v0) * d.K + k0;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float4 v = *reinterpret_cast<const float4*>(sb + size_t(i) * d.K);
            Sr[i][0] = v.x; Sr[i][1] = v.y; Sr[i][2] = v.z; Sr[i][3] = v.w;
        }
    }
    // per-token keys, gates, v rows and slots: warp w takes tokens w, w+4
    {
        const float A = expf(p.A_log[h]);
        const float4 dtb = __ldg(reinterpret_cast<const float4*>(p.dt_bias + size_t(h) * d.K + k0));
        const float dt[4] = {dtb.x, dtb.y, dtb.z, dtb.w};
        for (int t = warp; t < L; t += 4) {
            const size_t s = size_t(r * L + t);
            const bf16* row = p.qkv + s * d.C;
            float q[4], k[4], g[4];
            unpack4(ldg8(row + size_t(h) * d.K + k0), q);
            unpack4(ldg8(row + size_t(d.E) + size_t(h) * d.K + k0), k);
            unpack4(ldg8(p.g1 + s * d.E + size_t(h) * d.K + k0), g);
            const float braw = p.proj[s * d.N + d.col_beta + h].to_float();
            float sq = q[0] * q[0], sk = k[0] * k[0];
#pragma unroll
            for (int j = 1; j < 4; ++j) { sq = sq + q[j] * q[j]; sk = sk + k[j] * k[j]; }
            sq = warp_sum(sq);
            sk = warp_sum(sk);
            const float qd = sqrtf(sq + d.l2eps), kd = sqrtf(sk + d.l2eps);
            float qn[4], kn[4], dc[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                qn[j] = (q[j] / qd) * d.kscale;
                kn[j] = k[j] / kd;
                dc[j] = expf(d.lb * sigmoid(A * (g[j] + dt[j])));
            }
            s_qn[t][lane] = make_float4(qn[0], qn[1], qn[2], qn[3]);
            s_kn[t][lane] = make_float4(kn[0], kn[1], kn[2], kn[3]);
            s_decay[t][lane] = make_float4(dc[0], dc[1], dc[2], dc[3]);
            if (lane == 0) s_beta[t] = sigmoid(braw);
            if (lane < 16) s_v[t][lane] = row[size_t(2 * d.E) + size_t(h) * d.V + size_t(chunk) * 16 + lane].to_float();
            if (lane == 16) s_slot[t] = p.state_indices[r * L + t];
        }
    }
    __syncthreads();

#pragma unroll
    for (int t = 0; t < L; ++t) {
        const float4 q4 = s_qn[t][lane], k4 = s_kn[t][lane], d4 = s_decay[t][lane];
        const float qn[4] = {q4.x, q4.y, q4.z, q4.w}, kn[4] = {k4.x, k4.y, k4.z, k4.w};
        const float decay[4] = {d4.x, d4.y, d4.z, d4.w};
        const float beta = s_beta[t];
        const float4 v4 = *reinterpret_cast<const float4*>(&s_v[t][warp * 4]);
        const float vv[4] = {v4.x, v4.y, v4.z, v4.w};
        const int slot = s_slot[t];
        float kS[4], ov[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
#pragma unroll
            for (int j = 0; j < 4; ++j) Sr[i][j] = Sr[i][j] * decay[j];
            float part = Sr[i][0] * kn[0];
#pragma unroll
            for (int j = 1; j < 4; ++j) part = part + Sr[i][j] * kn[j];
            kS[i] = warp_sum(part);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const float u = (vv[i] - kS[i]) * beta;
#pragma unroll
            for (int j = 0; j < 4; ++j) Sr[i][j] = Sr[i][j] + u * kn[j];
            float part = Sr[i][0] * qn[0];
#pragma unroll
            for (int j = 1; j < 4; ++j) part = part + Sr[i][j] * qn[j];
            ov[i] = warp_sum(part);
        }
        const size_t s = size_t(r * L + t);
        if (lane == 0) st8(p.o + s * d.E + size_t(h) * d.V + v0, pack4(ov));  // (#6)
        if (slot > 0) {  // one state a token
            float* sb = p.ssm_state + int64_t(slot) * d.ssm_slot_stride + (size_t(h) * d.V + v0) * d.K + k0;
#pragma unroll
            for (int i = 0; i < 4; ++i)
                *reinterpret_cast<float4*>(sb + size_t(i) * d.K) = make_float4(Sr[i][0], Sr[i][1], Sr[i][2], Sr[i][3]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// F. Gated output RMSNorm: a warp a (row, head), 4 values a lane.
__global__ void __launch_bounds__(128) out_norm_kernel(StepPtrs p, StepDims d) {
    const int w = blockIdx.x * 4 + (threadIdx.x >> 5);
    if (w >= d.S * d.H) return;
    const int s = w / d.H, h = w % d.H, lane = threadIdx.x & 31, v0 = lane * 4;
    float ob[4], g2[4], nw[4], y[4];
    unpack4(ldg8(p.o + size_t(s) * d.E + size_t(h) * d.V + v0), ob);
    unpack4(ldg8(p.proj + size_t(s) * d.N + d.col_g2 + size_t(h) * d.V + v0), g2);
    unpack4(ldg8(p.o_norm_w + v0), nw);
    float ms = ob[0] * ob[0];
#pragma unroll
    for (int j = 1; j < 4; ++j) ms = ms + ob[j] * ob[j];
    ms = warp_sum(ms);
    const float rr = 1.0f / sqrtf(ms / float(d.V) + d.eps);
#pragma unroll
    for (int j = 0; j < 4; ++j) y[j] = ((ob[j] * rr) * nw[j]) * sigmoid(g2[j]);  // (#7)
    st8(p.core_out + size_t(s) * d.E + size_t(h) * d.V + v0, pack4(y));
}

void check_launch() { MONOKDA_CUDA_CHECK(cudaGetLastError()); }

void cublas_check(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuBLASLt: ") + what + " failed (status " + std::to_string(int(s)) + ")");
}

}  // namespace

// One switch per run-time size turned into a template parameter; the default names what is supported.
void launch_attnres(const StepPtrs& p, const StepDims& d, cudaStream_t st) {
    const dim3 grid(d.S), block(d.D / 8);
    switch (d.nb) {
        case 1: attnres_kernel<1><<<grid, block, 0, st>>>(p, d); break;
        case 2: attnres_kernel<2><<<grid, block, 0, st>>>(p, d); break;
        case 3: attnres_kernel<3><<<grid, block, 0, st>>>(p, d); break;
        case 4: attnres_kernel<4><<<grid, block, 0, st>>>(p, d); break;
        case 5: attnres_kernel<5><<<grid, block, 0, st>>>(p, d); break;
        case 6: attnres_kernel<6><<<grid, block, 0, st>>>(p, d); break;
        case 7: attnres_kernel<7><<<grid, block, 0, st>>>(p, d); break;
        case 8: attnres_kernel<8><<<grid, block, 0, st>>>(p, d); break;
        default: bad_input("attnres: nb must be in 1..8 (got " + std::to_string(d.nb) + ")");
    }
    check_launch();
}

#define MONOKDA_SWITCH_L(L_, CALL)                                                                  \
    switch (L_) {                                                                                   \
        case 1: CALL(1); break;                                                                     \
        case 2: CALL(2); break;                                                                     \
        case 3: CALL(3); break;                                                                     \
        case 4: CALL(4); break;                                                                     \
        case 5: CALL(5); break;                                                                     \
        case 6: CALL(6); break;                                                                     \
        case 7: CALL(7); break;                                                                     \
        case 8: CALL(8); break;                                                                     \
        default: bad_input("L must be in 1..8 (got " + std::to_string(L_) + ")");                 \
    }

void launch_short_conv(const StepPtrs& p, const StepDims& d, cudaStream_t st) {
    if (d.conv_ds) {
        const dim3 grid((d.C + 127) / 128, d.R);
#define MONOKDA_CONV_DS(L) short_conv_ds_kernel<L><<<grid, 128, 0, st>>>(p, d)
        MONOKDA_SWITCH_L(d.L, MONOKDA_CONV_DS)
#undef MONOKDA_CONV_DS
    } else {
        const dim3 grid((d.C / 2 + 127) / 128, d.R);
#define MONOKDA_CONV_SD(L) short_conv_sd_kernel<L><<<grid, 128, 0, st>>>(p, d)
        MONOKDA_SWITCH_L(d.L, MONOKDA_CONV_SD)
#undef MONOKDA_CONV_SD
    }
    check_launch();
}

void launch_recurrence(const StepPtrs& p, const StepDims& d, cudaStream_t st) {
    const dim3 grid(d.V / 16, d.H, d.R);
#define MONOKDA_REC(L) recurrence_kernel<L><<<grid, 128, 0, st>>>(p, d)
    MONOKDA_SWITCH_L(d.L, MONOKDA_REC)
#undef MONOKDA_REC
    check_launch();
}

void launch_out_norm(const StepPtrs& p, const StepDims& d, cudaStream_t st) {
    out_norm_kernel<<<(d.S * d.H + 3) / 4, 128, 0, st>>>(p, d);
    check_launch();
}

// ---------------------------------------------------------------------------------------------
LtGemm::LtGemm(cublasLtHandle_t h, int M, int K, int rows, int lda, int ldo, size_t workspace_bytes)
    : h_(h), ws_(workspace_bytes) {
    // column-major view: w is K×M (ld K), a is K×rows (ld lda), out is M×rows (ld ldo); out = wᵀ·a
    cublas_check(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublas_check(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "transa");
    cublas_check(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "transb");
    cublas_check(cublasLtMatrixLayoutCreate(&wl_, CUDA_R_16BF, K, M, K), "weight layout");
    cublas_check(cublasLtMatrixLayoutCreate(&al_, CUDA_R_16BF, K, rows, lda), "input layout");
    cublas_check(cublasLtMatrixLayoutCreate(&ol_, CUDA_R_16BF, M, rows, ldo), "output layout");
    cublasLtMatmulPreference_t pref;
    cublas_check(cublasLtMatmulPreferenceCreate(&pref), "preference");
    cublas_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_, sizeof ws_),
                 "workspace preference");
    cublasLtMatmulHeuristicResult_t res[16];
    int n = 0;
    cublas_check(cublasLtMatmulAlgoGetHeuristic(h_, op_, wl_, al_, ol_, ol_, pref, 16, res, &n), "heuristic");
    cublasLtMatmulPreferenceDestroy(pref);
    for (int i = 0; i < n; ++i)
        if (res[i].state == CUBLAS_STATUS_SUCCESS) algos_.push_back(res[i]);
    if (algos_.empty())
        throw std::runtime_error("cuBLASLt offers no algorithm for a " + std::to_string(rows) + "x" + std::to_string(M) +
                                 "x" + std::to_string(K) + " bf16 GEMM");
}

LtGemm::~LtGemm() {
    if (ol_) cublasLtMatrixLayoutDestroy(ol_);
    if (al_) cublasLtMatrixLayoutDestroy(al_);
    if (wl_) cublasLtMatrixLayoutDestroy(wl_);
    if (op_) cublasLtMatmulDescDestroy(op_);
}

std::string LtGemm::describe(int i) const {
    const cublasLtMatmulAlgo_t& a = algos_[size_t(i)].algo;
    int id = 0, tile = 0, splitk = 0, stages = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, nullptr);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, nullptr);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, nullptr);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, nullptr);
    char buf[128];
    snprintf(buf, sizeof buf, "#%d of %d: algo %d tile %d splitK %d stages %d", i, int(algos_.size()), id, tile, splitk,
             stages);
    return buf;
}

void LtGemm::run_with(int i, const bf16* w, const bf16* a, bf16* out, void* workspace, cudaStream_t st) const {
    const float one = 1.0f, zero = 0.0f;
    cublas_check(cublasLtMatmul(h_, op_, &one, w, wl_, a, al_, &zero, out, ol_, out, ol_, &algos_[size_t(i)].algo,
                                workspace, ws_, st),
                 "matmul");
}

void LtGemm::run(const bf16* w, const bf16* a, bf16* out, void* workspace, cudaStream_t st) const {
    run_with(chosen_, w, a, out, workspace, st);
}

// ---------------------------------------------------------------------------------------------
UnfusedPath::UnfusedPath(const Config& step) : d_(make_dims(step)) {
    cublas_check(cublasLtCreate(&lt_), "create");
    MONOKDA_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
    gemm_b_ = new LtGemm(lt_, d_.N, d_.D, d_.S, d_.D, d_.N, kWorkspaceBytes);
    gemm_c_ = new LtGemm(lt_, d_.E, d_.F, d_.S, d_.N, d_.E, kWorkspaceBytes);
}

UnfusedPath::~UnfusedPath() {
    delete gemm_c_;
    delete gemm_b_;
    if (workspace_) cudaFree(workspace_);
    if (lt_) cublasLtDestroy(lt_);
}

void UnfusedPath::tune(const std::function<double(const std::function<void(int, cudaStream_t)>&)>& time_us,
                       const std::vector<StepPtrs>& sets) {
    auto pick = [&](LtGemm& g, auto&& run_one) {
        double best = 1e30;
        int best_i = 0;
        for (int i = 0; i < g.candidates(); ++i) {
            double t;
            try {
                t = time_us([&](int set, cudaStream_t st) { run_one(i, sets[size_t(set)], st); });
            } catch (const std::runtime_error&) {
                continue;  // a candidate the library refuses at run time is not a candidate
            }
            if (t < best) { best = t; best_i = i; }
        }
        g.choose(best_i);
    };
    pick(*gemm_b_, [&](int i, const StepPtrs& p, cudaStream_t st) { run_in_proj_candidate(i, p, st); });
    pick(*gemm_c_, [&](int i, const StepPtrs& p, cudaStream_t st) { run_f_b_candidate(i, p, st); });
}

void UnfusedPath::run_in_proj_candidate(int i, const StepPtrs& p, cudaStream_t st) const {
    gemm_b_->run_with(i, p.in_proj_w, p.x, p.proj, workspace_, st);
}

void UnfusedPath::run_f_b_candidate(int i, const StepPtrs& p, cudaStream_t st) const {
    gemm_c_->run_with(i, p.f_b_w, p.proj + d_.col_fa, p.g1, workspace_, st);
}

std::string UnfusedPath::algos() const {
    return "B " + gemm_b_->describe(gemm_b_->chosen()) + "; C " + gemm_c_->describe(gemm_c_->chosen());
}

void UnfusedPath::enqueue(const StepPtrs& p, cudaStream_t st, unsigned mask) const {
    if (mask & kStageA) launch_attnres(p, d_, st);
    if (mask & kStageB) gemm_b_->run(p.in_proj_w, p.x, p.proj, workspace_, st);
    if (mask & kStageC) gemm_c_->run(p.f_b_w, p.proj + d_.col_fa, p.g1, workspace_, st);
    if (mask & kStageD) launch_short_conv(p, d_, st);
    if (mask & kStageE) launch_recurrence(p, d_, st);
    if (mask & kStageF) launch_out_norm(p, d_, st);
}

}  // namespace monokda::bench
