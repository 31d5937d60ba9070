// The original path of SPEC §3, steps A–F (reference/reference.hpp, docs/reference.md), as one
// template over the arithmetic type: float the reference, double the oracle.
#include "reference/reference.hpp"

#include <algorithm>
#include <cmath>

#include "core/exp_once.hpp"

namespace monokda::ref {

namespace {

template <class T> inline T f(bf16 b) { return T(b.to_float()); }
template <class T> inline bf16 rnd(T v) { return bf16::round(v); }
// exp of the f32 path as core/exp_once.hpp defines it; the oracle takes double exp as it is.
inline float ex(float x) { return exp_once(x); }
inline double ex(double x) { return std::exp(x); }
template <class T> inline T sigmoid(T z) { return T(1) / (T(1) + ex(-z)); }

// SIMD lanes, each its own independent sum: used to run a GEMM's K-sum for eight rows at once
// without changing any row's order (element-wise vector ops, contraction off). The eight rows are
// 8 / W vectors of 16 bytes (W = 4 floats or 2 doubles), each reduced on its own: lane by lane the
// same sums as one eight-lane vector, but a 16-byte vector stays in a register in baseline x86-64
// code, where a 32- or 64-byte one goes through memory at every term.
template <class T> struct Lanes;
template <> struct Lanes<float> { typedef float type __attribute__((vector_size(16))); };
template <> struct Lanes<double> { typedef double type __attribute__((vector_size(16))); };

// out[s, n] = round(Σ_d a[s, d] · w[n, d]) for rows s < S, columns n < Nout, in the site's order.
template <class T>
void gemm_rows(const ReductionOrder& ord, Site site, const std::vector<bf16>& a, int a_stride, int a_off, int S,
               const std::vector<bf16>& w, int Nout, int Kdim, std::vector<bf16>& out, int out_stride) {
    using LV = typename Lanes<T>::type;
    constexpr int W = int(sizeof(LV) / sizeof(T));
    const int groups = (S + 7) / 8;
    for (int g = 0; g < groups; ++g) {
        const int s0 = g * 8, ns = std::min(8, S - s0), nv = (ns + W - 1) / W;
        std::vector<LV> at(size_t(nv) * size_t(Kdim));  // a, transposed into lanes: [row / W][d][row % W]
        for (int l = 0; l < ns; ++l)
            for (int d = 0; d < Kdim; ++d) at[size_t(l / W) * size_t(Kdim) + size_t(d)][l % W] = f<T>(a[size_t(s0 + l) * a_stride + a_off + d]);
#pragma omp parallel for schedule(static)
        for (int n = 0; n < Nout; ++n) {
            const bf16* wr = &w[size_t(n) * Kdim];
            for (int v = 0; v < nv; ++v) {
                const LV* av = &at[size_t(v) * size_t(Kdim)];
                LV acc = ord.reduce<LV>(site, Kdim, [&](int d) { return av[d] * f<T>(wr[d]); });
                for (int l = 0; l < W && v * W + l < ns; ++l) out[size_t(s0 + v * W + l) * out_stride + n] = rnd<T>(acc[l]);
            }
        }
    }
}

}  // namespace

template <class T>
void attnres(const StepInputs& in, const ReductionOrder& ord, std::vector<bf16>& prefix_out,
             std::vector<bf16>& blocks, std::vector<bf16>& x) {
    const Config& c = in.cfg;
    const int S = c.S(), D = c.D, nb = c.nb;
    const T eps = T(c.eps);
    prefix_out.assign(size_t(S) * D, bf16{});
    blocks = in.blocks;
    x.assign(size_t(S) * D, bf16{});
    std::vector<T> wq(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d) wq[size_t(d)] = f<T>(in.res_norm_w[size_t(d)]) * f<T>(in.res_proj_w[size_t(d)]);

#pragma omp parallel for schedule(static)
    for (int s = 0; s < S; ++s) {
        const size_t row = size_t(s) * D;
        for (int d = 0; d < D; ++d) prefix_out[row + d] = rnd<T>(f<T>(in.prefix[row + d]) + f<T>(in.delta[row + d]));
        if (c.block_write)
            std::copy_n(&prefix_out[row], D, &blocks[(size_t(s) * 8 + nb) * D]);
        // sources v_0..v_{nb-1} from the bank, v_nb = P' (prefix last)
        auto src = [&](int i) -> const bf16* {
            return i < nb ? &in.blocks[(size_t(s) * 8 + i) * D] : &prefix_out[row];
        };
        std::vector<T> logit(size_t(nb + 1)), e(size_t(nb + 1));
        for (int i = 0; i <= nb; ++i) {
            const bf16* v = src(i);
            T ss = ord.reduce<T>(Site::attn_sumsq, D, [&](int d) { T a = f<T>(v[d]); return a * a; });
            T r = T(1) / std::sqrt(ss / T(D) + eps);
            T dot = ord.reduce<T>(Site::attn_dot, D, [&](int d) { return f<T>(v[d]) * wq[size_t(d)]; });
            logit[size_t(i)] = dot * r;
        }
        T m = *std::max_element(logit.begin(), logit.end());
        for (int i = 0; i <= nb; ++i) e[size_t(i)] = ex(logit[size_t(i)] - m);
        T den = ord.reduce<T>(Site::softmax_den, nb + 1, [&](int i) { return e[size_t(i)]; });
        std::vector<T> mixed(static_cast<size_t>(D));
        for (int d = 0; d < D; ++d)
            mixed[size_t(d)] = ord.reduce<T>(Site::mix, nb + 1, [&](int i) { return e[size_t(i)] * f<T>(src(i)[d]); }) / den;
        T ms = ord.reduce<T>(Site::x_sumsq, D, [&](int d) { return mixed[size_t(d)] * mixed[size_t(d)]; });
        T rr = T(1) / std::sqrt(ms / T(D) + eps);
        for (int d = 0; d < D; ++d) x[row + d] = rnd<T>((mixed[size_t(d)] * rr) * f<T>(in.input_norm_w[size_t(d)]));
    }
}

template <class T>
std::vector<bf16> in_proj(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& x) {
    const Config& c = in.cfg;
    std::vector<bf16> proj(size_t(c.S()) * c.N);
    gemm_rows<T>(ord, Site::in_proj, x, c.D, 0, c.S(), in.in_proj_w, c.N, c.D, proj, c.N);
    return proj;
}

template <class T>
std::vector<bf16> f_b(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& proj) {
    const Config& c = in.cfg;
    std::vector<bf16> g1(size_t(c.S()) * c.E());
    gemm_rows<T>(ord, Site::f_b, proj, c.N, c.col_fa(), c.S(), in.f_b_w, c.E(), c.F, g1, c.E());
    return g1;
}

template <class T>
void short_conv(const StepInputs& in, const std::vector<bf16>& proj, std::vector<bf16>& qkv,
                std::vector<bf16>& conv_state) {
    const Config& c = in.cfg;
    const int L = c.L, W = c.W, C = c.C;
    qkv.assign(size_t(c.S()) * C, bf16{});
    conv_state = in.conv_state;
    std::vector<T> seq(size_t(W - 1 + L));
    for (int r = 0; r < c.R; ++r) {
        const int32_t slot = in.idx(r, 0);
        const int a = in.num_accepted[size_t(r)];
        for (int ch = 0; ch < C; ++ch) {
            // window: W-1 entries of the state from offset a-1 (zeros without a slot), then the L inputs
            for (int j = 0; j < W - 1; ++j)
                seq[size_t(j)] = slot > 0 ? f<T>(in.conv_state[size_t(in.conv_at(slot, a - 1 + j, ch))]) : T(0);
            for (int t = 0; t < L; ++t) seq[size_t(W - 1 + t)] = f<T>(proj[size_t(r * L + t) * c.N + ch]);
            const float* w = &in.conv_w[size_t(ch) * W];
            for (int t = 0; t < L; ++t) {
                T acc = seq[size_t(t)] * T(w[0]);  // oldest first, left to right
                for (int j = 1; j < W; ++j) acc = acc + seq[size_t(t + j)] * T(w[j]);
                qkv[size_t(r * L + t) * C + ch] = rnd<T>(acc / (T(1) + ex(-acc)));
            }
            if (slot > 0) {
                // new state: W-2 old entries from offset a, then the step's raw inputs
                for (int j = 0; j < W - 2; ++j)
                    conv_state[size_t(in.conv_at(slot, j, ch))] = in.conv_state[size_t(in.conv_at(slot, a + j, ch))];
                for (int t = 0; t < L; ++t)
                    conv_state[size_t(in.conv_at(slot, W - 2 + t, ch))] = proj[size_t(r * L + t) * c.N + ch];
            }
        }
    }
}

template <class T>
void recurrence(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& qkv,
                const std::vector<bf16>& proj, const std::vector<bf16>& g1, std::vector<bf16>& o,
                std::vector<T>& ssm_state) {
    const Config& c = in.cfg;
    const int L = c.L, H = c.H, K = c.K, V = c.V, E = c.E(), C = c.C, N = c.N;
    const T l2eps = T(c.l2_eps), lb = T(c.lower_bound);
    const T kscale = T(std::pow(double(K), -0.5));
    o.assign(size_t(c.S()) * E, bf16{});  // +0: a request without an initial state outputs zeros
    ssm_state.assign(in.ssm_state.begin(), in.ssm_state.end());

#pragma omp parallel for collapse(2) schedule(static)
    for (int r = 0; r < c.R; ++r) {
        for (int h = 0; h < H; ++h) {
            const int a = in.num_accepted[size_t(r)];
            const int32_t init = in.idx(r, a - 1);
            if (init <= 0) continue;
            std::vector<T> St(size_t(V) * K), qn(static_cast<size_t>(K)), kn(static_cast<size_t>(K)), decay(static_cast<size_t>(K)), u(static_cast<size_t>(V));
            for (int v = 0; v < V; ++v)
                for (int k = 0; k < K; ++k) St[size_t(v) * K + k] = T(in.ssm_state[size_t(in.ssm_at(init, h, v, k))]);
            const T A = ex(T(in.A_log[size_t(h)]));
            for (int t = 0; t < L; ++t) {
                const size_t s = size_t(r * L + t);
                const bf16* q = &qkv[s * C + size_t(h) * K];
                const bf16* kk = &qkv[s * C + size_t(E) + size_t(h) * K];
                const bf16* vv = &qkv[s * C + size_t(2 * E) + size_t(h) * V];
                T sq = ord.reduce<T>(Site::l2_q, K, [&](int k) { T x = f<T>(q[k]); return x * x; });
                T sk = ord.reduce<T>(Site::l2_k, K, [&](int k) { T x = f<T>(kk[k]); return x * x; });
                T qd = std::sqrt(sq + l2eps), kd = std::sqrt(sk + l2eps);
                for (int k = 0; k < K; ++k) {
                    qn[size_t(k)] = (f<T>(q[k]) / qd) * kscale;
                    kn[size_t(k)] = f<T>(kk[k]) / kd;
                    const int e = h * K + k;
                    T gate = lb * sigmoid<T>(A * (f<T>(g1[s * E + size_t(e)]) + T(in.dt_bias[size_t(e)])));
                    decay[size_t(k)] = ex(gate);
                }
                for (int v = 0; v < V; ++v)
                    for (int k = 0; k < K; ++k) St[size_t(v) * K + k] = St[size_t(v) * K + k] * decay[size_t(k)];
                const T beta = sigmoid<T>(f<T>(proj[s * N + size_t(c.col_beta() + h)]));
                for (int v = 0; v < V; ++v) {
                    const T* Sv = &St[size_t(v) * K];
                    T kS = ord.reduce<T>(Site::rec_kS, K, [&](int k) { return Sv[k] * kn[size_t(k)]; });
                    u[size_t(v)] = (f<T>(vv[v]) - kS) * beta;
                }
                for (int v = 0; v < V; ++v)
                    for (int k = 0; k < K; ++k)
                        St[size_t(v) * K + k] = St[size_t(v) * K + k] + u[size_t(v)] * kn[size_t(k)];
                for (int v = 0; v < V; ++v) {
                    const T* Sv = &St[size_t(v) * K];
                    T ov = ord.reduce<T>(Site::rec_oq, K, [&](int k) { return Sv[k] * qn[size_t(k)]; });
                    o[s * E + size_t(h) * V + size_t(v)] = rnd<T>(ov);
                }
                const int32_t slot = in.idx(r, t);
                if (slot > 0)
                    std::copy(St.begin(), St.end(), ssm_state.begin() + in.ssm_at(slot, h, 0, 0));
            }
        }
    }
}

template <class T>
std::vector<bf16> out_norm(const StepInputs& in, const ReductionOrder& ord, const std::vector<bf16>& o,
                           const std::vector<bf16>& proj) {
    const Config& c = in.cfg;
    const int V = c.V, E = c.E(), N = c.N;
    const T eps = T(c.eps);
    std::vector<bf16> y(size_t(c.S()) * E);
    for (int s = 0; s < c.S(); ++s) {
        for (int h = 0; h < c.H; ++h) {
            const bf16* ob = &o[size_t(s) * E + size_t(h) * V];
            T ms = ord.reduce<T>(Site::onorm_sumsq, V, [&](int v) { T x = f<T>(ob[v]); return x * x; });
            T rr = T(1) / std::sqrt(ms / T(V) + eps);
            for (int v = 0; v < V; ++v) {
                T g2 = f<T>(proj[size_t(s) * N + size_t(c.col_g2() + h * V + v)]);
                y[size_t(s) * E + size_t(h) * V + size_t(v)] =
                    rnd<T>(((f<T>(ob[v]) * rr) * f<T>(in.o_norm_w[size_t(v)])) * sigmoid<T>(g2));
            }
        }
    }
    return y;
}

// A..F in order, B..F reading their bf16 inputs from handoffs(out): the step's own outputs as they
// are made (the original path) or an implementation's exported hand-offs (teacher forcing).
template <class T, class Handoffs>
static StepOutputs<T> stages(const StepInputs& in, const ReductionOrder& ord, Handoffs handoffs) {
    StepOutputs<T> out;
    const auto& h = handoffs(out);
    attnres<T>(in, ord, out.prefix_out, out.blocks, out.x);
    out.proj = in_proj<T>(in, ord, h.x);
    out.g1 = f_b<T>(in, ord, h.proj);
    short_conv<T>(in, h.proj, out.qkv, out.conv_state);
    recurrence<T>(in, ord, h.qkv, h.proj, h.g1, out.o, out.ssm_state);
    out.core_out = out_norm<T>(in, ord, h.o, h.proj);
    return out;
}

template <class T>
StepOutputs<T> run(const StepInputs& in, const ReductionOrder& ord) {
    return stages<T>(in, ord, [](const StepOutputs<T>& out) -> const StepOutputs<T>& { return out; });
}

template <class T>
StepOutputs<T> teacher_forced(const StepInputs& in, const ReductionOrder& ord, const StepOutputs<float>& h) {
    return stages<T>(in, ord, [&](const StepOutputs<T>&) -> const StepOutputs<float>& { return h; });
}

#define MONOKDA_INSTANTIATE(T)                                                                                  \
    template void attnres<T>(const StepInputs&, const ReductionOrder&, std::vector<bf16>&, std::vector<bf16>&, \
                             std::vector<bf16>&);                                                              \
    template std::vector<bf16> in_proj<T>(const StepInputs&, const ReductionOrder&, const std::vector<bf16>&); \
    template std::vector<bf16> f_b<T>(const StepInputs&, const ReductionOrder&, const std::vector<bf16>&);     \
    template void short_conv<T>(const StepInputs&, const std::vector<bf16>&, std::vector<bf16>&,               \
                                std::vector<bf16>&);                                                           \
    template void recurrence<T>(const StepInputs&, const ReductionOrder&, const std::vector<bf16>&,            \
                                const std::vector<bf16>&, const std::vector<bf16>&, std::vector<bf16>&,        \
                                std::vector<T>&);                                                              \
    template std::vector<bf16> out_norm<T>(const StepInputs&, const ReductionOrder&, const std::vector<bf16>&, \
                                           const std::vector<bf16>&);                                          \
    template StepOutputs<T> run<T>(const StepInputs&, const ReductionOrder&);                                  \
    template StepOutputs<T> teacher_forced<T>(const StepInputs&, const ReductionOrder&, const StepOutputs<float>&);

MONOKDA_INSTANTIATE(float)
MONOKDA_INSTANTIATE(double)

}  // namespace monokda::ref
