// Kernel v2's tail on the host (core/tail_stages.hpp): each stage as SPEC §3 writes it, in f32.
#include "core/tail_stages.hpp"

#include <cmath>

namespace monokda {

void tail_conv(const StepInputs& in, int r, int ch, const bf16* x, bf16* out, std::vector<bf16>& conv_state) {
    const Config& c = in.cfg;
    const int L = c.L, W = c.W;
    const int32_t slot = in.idx(r, 0);
    const int a = in.num_accepted[size_t(r)];
    std::vector<float> seq(size_t(W - 1 + L));
    for (int j = 0; j < W - 1; ++j) seq[size_t(j)] = slot > 0 ? in.conv_state[size_t(in.conv_at(slot, a - 1 + j, ch))].to_float() : 0.f;
    for (int t = 0; t < L; ++t) seq[size_t(W - 1 + t)] = x[t].to_float();
    const float* w = &in.conv_w[size_t(ch) * size_t(W)];
    for (int t = 0; t < L; ++t) {
        float acc = seq[size_t(t)] * w[0];  // oldest first
        for (int j = 1; j < W; ++j) acc = acc + seq[size_t(t + j)] * w[j];
        out[t] = bf16::round(acc / (1.f + exp_once(-acc)));
    }
    if (slot <= 0) return;
    for (int j = 0; j < W - 2; ++j) conv_state[size_t(in.conv_at(slot, j, ch))] = in.conv_state[size_t(in.conv_at(slot, a + j, ch))];
    for (int t = 0; t < L; ++t) conv_state[size_t(in.conv_at(slot, W - 2 + t, ch))] = x[t];
}

bf16 tail_g1(const ReductionOrder& ord, const float* fa, const bf16* w, int F) {
    return bf16::round(ord.reduce<float>(Site::f_b, F, [&](int f) { return fa[f] * w[f].to_float(); }));
}

float tail_decay(float A, bf16 g1, float dt_bias, float lb) { return exp_once(lb * sigmoid_once(A * (g1.to_float() + dt_bias))); }

void tail_l2(const ReductionOrder& ord, const bf16* q, const bf16* k, int K, float l2_eps, float* qn, float* kn) {
    const float sq = ord.reduce<float>(Site::l2_q, K, [&](int i) { const float v = q[i].to_float(); return v * v; });
    const float sk = ord.reduce<float>(Site::l2_k, K, [&](int i) { const float v = k[i].to_float(); return v * v; });
    const float qd = std::sqrt(sq + l2_eps), kd = std::sqrt(sk + l2_eps), scale = float(std::pow(double(K), -0.5));
    for (int i = 0; i < K; ++i) {
        qn[i] = (q[i].to_float() / qd) * scale;
        kn[i] = k[i].to_float() / kd;
    }
}

void tail_rec_token(const ReductionOrder& ord, float* St, int n, int K, const float* decay, const float* kn, const float* qn,
                    const bf16* v, float beta, bf16* o) {
    for (int r = 0; r < n; ++r) {
        float* S = St + size_t(r) * size_t(K);
        for (int k = 0; k < K; ++k) S[k] = S[k] * decay[k];
        const float kS = ord.reduce<float>(Site::rec_kS, K, [&](int k) { return S[k] * kn[k]; });
        const float u = (v[r].to_float() - kS) * beta;
        for (int k = 0; k < K; ++k) S[k] = S[k] + u * kn[k];
        o[r] = bf16::round(ord.reduce<float>(Site::rec_oq, K, [&](int k) { return S[k] * qn[k]; }));
    }
}

float tail_sumsq(const bf16* o, int n) {
    float s = o[0].to_float() * o[0].to_float();
    for (int i = 1; i < n; ++i) s = s + o[i].to_float() * o[i].to_float();
    return s;
}

bf16 tail_out(bf16 o, float rr, bf16 w, bf16 g2) { return bf16::round(((o.to_float() * rr) * w.to_float()) * sigmoid_once(g2.to_float())); }

}  // namespace monokda
