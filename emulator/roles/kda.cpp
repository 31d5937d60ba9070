// The kda role's bodies (SPEC §3 C-F, kernels/kda_task.hpp): a task (request, head, chunk of state
// rows) convolves its channels (QK), runs the recurrence on its rows (ONRM) and the gated output
// norm (core_out).
#include "emulator/machine_impl.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace monokda::emu::detail {

void Machine::begin_kda(int cta, const Instr& in) {
    Cta& c = ctas_[size_t(cta)];
    const int a = in_->num_accepted[size_t(in.a)];
    c.a_eff = hooks_.accepted(in.a, a, cfg_.L);
}

// C (#4) for request r, head h, key columns k0 .. k0+nk-1 of every token: g1, f_a read through PROJ.
void Machine::make_g1(int cta, int r, int h, int k0, int nk) {
    const int K = cfg_.K, F = cfg_.F;
    std::vector<float> fa(static_cast<size_t>(F));
    for (int t = 0; t < cfg_.L; ++t) {
        const int s = r * cfg_.L + t;
        for (int fi = 0; fi < F; ++fi) fa[size_t(fi)] = f(read_data(cta, SP_PROJ, s, cfg_.col_fa() + fi));
        for (int k = k0; k < k0 + nk; ++k) {
            const bf16* wr = &in_->f_b_w[size_t(h * K + k) * size_t(F)];
            const float acc = ord_.reduce<float>(Site::f_b, F, [&](int fi) { return fa[size_t(fi)] * f(wr[fi]); });
            store_data(cta, SP_G1, s, h * K + k, bf16::round(acc));
        }
    }
}

// D for the task's channels: its q and k shares and its v rows; with sibling chunks also C for
// its share of the head's key columns (q, k and g1 shares published through QK).
void Machine::kda_conv(int cta, int r, int h, int ch) {
    const StepInputs& in = *in_;
    Cta& c = ctas_[size_t(cta)];
    const int L = cfg_.L, W = cfg_.W, E = cfg_.E(), qs = plan_.qk_share(), rows = plan_.params().kda_chunk_rows;
    const int32_t slot = in.idx(r, 0);
    const int a = c.a_eff;
    std::vector<int> chans;
    for (int i = 0; i < qs; ++i) chans.push_back(h * cfg_.K + ch * qs + i);
    for (int i = 0; i < qs; ++i) chans.push_back(E + h * cfg_.K + ch * qs + i);
    for (int i = 0; i < rows; ++i) chans.push_back(2 * E + h * cfg_.V + ch * rows + i);
    std::vector<float> seq(size_t(W - 1 + L));
    std::vector<bf16> xin(static_cast<size_t>(L));
    for (int chn : chans) {
        for (int t = 0; t < L; ++t) xin[size_t(t)] = read_data(cta, SP_PROJ, r * L + t, chn);
        for (int j = 0; j < W - 1; ++j)
            seq[size_t(j)] = slot > 0 ? f(in.conv_state[size_t(in.conv_at(slot, a - 1 + j, chn))]) : 0.f;
        for (int t = 0; t < L; ++t) seq[size_t(W - 1 + t)] = f(xin[size_t(t)]);
        const float* wc = &in.conv_w[size_t(chn) * size_t(W)];
        for (int t = 0; t < L; ++t) {
            float acc = seq[size_t(t)] * wc[0];
            for (int j = 1; j < W; ++j) acc = acc + seq[size_t(t + j)] * wc[j];
            store_data(cta, SP_QKV, r * L + t, chn, bf16::round(acc / (1.0f + exp_once(-acc))));
        }
        if (slot > 0) {
            for (int j = 0; j < W - 2; ++j) {
                const size_t at = size_t(in.conv_at(slot, j, chn));
                out_.conv_state[at] = in.conv_state[size_t(in.conv_at(slot, a + j, chn))];
                mark("conv_state", at, cta);
            }
            for (int t = 0; t < L; ++t) {
                const size_t at = size_t(in.conv_at(slot, W - 2 + t, chn));
                out_.conv_state[at] = xin[size_t(t)];
                mark("conv_state", at, cta);
            }
        }
    }
    log_data(cta, SP_QKV, h * cfg_.K + ch * qs, qs);
    if (plan_.n_chunks() > 1) {
        make_g1(cta, r, h, ch * qs, hooks_.g1_share(r, h, ch, qs));
        log_data(cta, SP_G1, h * cfg_.K + ch * qs, qs);
    }
    store_flag(cta, plan_.qk(r, h, ch), true);
}

// C + E for the task's state rows; partial Σō² of its rows → ONRM.
void Machine::kda_rec(int cta, int r, int h, int ch) {
    const StepInputs& in = *in_;
    Cta& c = ctas_[size_t(cta)];
    const int L = cfg_.L, K = cfg_.K, E = cfg_.E(), rows = plan_.params().kda_chunk_rows;
    const int v0 = ch * rows;
    const bool fast_exp = hooks_.fast_exp_decay(r, h, ch);
    // C: g1 of the head's K key columns, made here by one task a head, else by the sibling chunks'
    // KDA_CONV (their shares, read through QK)
    if (plan_.n_chunks() == 1) make_g1(cta, r, h, 0, K);
    std::vector<float> g1(size_t(L) * size_t(K));
    for (int t = 0; t < L; ++t)
        for (int k = 0; k < K; ++k) g1[size_t(t) * size_t(K) + size_t(k)] = f(read_data(cta, SP_G1, r * L + t, h * K + k));
    c.obar.assign(size_t(L) * size_t(rows), 0.f);
    const int a = c.a_eff;
    const int32_t init = in.idx(r, a - 1);
    if (init > 0) {
        const float l2eps = float(cfg_.l2_eps), lb = float(cfg_.lower_bound);
        const float kscale = float(std::pow(double(K), -0.5));
        const float A = exp_once(in.A_log[size_t(h)]);
        std::vector<float> St(size_t(rows) * size_t(K)), qn(static_cast<size_t>(K)), kn(static_cast<size_t>(K)),
            decay(static_cast<size_t>(K)), u(static_cast<size_t>(rows)), q(static_cast<size_t>(K)),
            kk(static_cast<size_t>(K));
        for (int v = 0; v < rows; ++v)
            for (int k = 0; k < K; ++k)
                St[size_t(v) * size_t(K) + size_t(k)] = in.ssm_state[size_t(in.ssm_at(init, h, v0 + v, k))];
        for (int t = 0; t < L; ++t) {
            const int s = r * L + t;
            for (int k = 0; k < K; ++k) {
                q[size_t(k)] = f(read_data(cta, SP_QKV, s, h * K + k));
                kk[size_t(k)] = f(read_data(cta, SP_QKV, s, E + h * K + k));
            }
            const float sq = ord_.reduce<float>(Site::l2_q, K, [&](int k) { return q[size_t(k)] * q[size_t(k)]; });
            const float sk = ord_.reduce<float>(Site::l2_k, K, [&](int k) { return kk[size_t(k)] * kk[size_t(k)]; });
            const float qd = std::sqrt(sq + l2eps), kd = std::sqrt(sk + l2eps);
            for (int k = 0; k < K; ++k) {
                qn[size_t(k)] = (q[size_t(k)] / qd) * kscale;
                kn[size_t(k)] = kk[size_t(k)] / kd;
                const float gate = lb * sigmoid_once(A * (g1[size_t(t) * size_t(K) + size_t(k)] + in.dt_bias[size_t(h * K + k)]));
                decay[size_t(k)] = fast_exp ? std::exp2(gate * 1.44269504f) : exp_once(gate);
            }
            for (int v = 0; v < rows; ++v)
                for (int k = 0; k < K; ++k) St[size_t(v) * size_t(K) + size_t(k)] = St[size_t(v) * size_t(K) + size_t(k)] * decay[size_t(k)];
            const float beta = sigmoid_once(f(read_data(cta, SP_PROJ, s, cfg_.col_beta() + h)));
            for (int v = 0; v < rows; ++v) {
                const float* Sv = &St[size_t(v) * size_t(K)];
                const float kS = ord_.reduce<float>(Site::rec_kS, K, [&](int k) { return Sv[k] * kn[size_t(k)]; });
                u[size_t(v)] = (f(read_data(cta, SP_QKV, s, 2 * E + h * cfg_.V + v0 + v)) - kS) * beta;
            }
            for (int v = 0; v < rows; ++v)
                for (int k = 0; k < K; ++k)
                    St[size_t(v) * size_t(K) + size_t(k)] = St[size_t(v) * size_t(K) + size_t(k)] + u[size_t(v)] * kn[size_t(k)];
            for (int v = 0; v < rows; ++v) {
                const float* Sv = &St[size_t(v) * size_t(K)];
                const float ov = ord_.reduce<float>(Site::rec_oq, K, [&](int k) { return Sv[k] * qn[size_t(k)]; });
                bf16 ob = bf16::round(ov);
                const size_t at = size_t(s) * size_t(E) + size_t(h * cfg_.V + v0 + v);
                out_.o[at] = ob;
                mark("o", at, cta);
                c.obar[size_t(t) * size_t(rows) + size_t(v)] = f(ob);
            }
            const int32_t slot = in.idx(r, t);
            if (slot > 0)
                for (int v = 0; v < rows; ++v)
                    for (int k = 0; k < K; ++k) {
                        const size_t at = size_t(in.ssm_at(slot, h, v0 + v, k));
                        out_.ssm_state[at] = St[size_t(v) * size_t(K) + size_t(k)];
                        mark("ssm_state", at, cta);
                    }
        }
    } else {
        for (int t = 0; t < L; ++t)
            for (int v = 0; v < rows; ++v) mark("o", size_t(r * L + t) * size_t(E) + size_t(h * cfg_.V + v0 + v), cta);
    }
    for (int t = 0; t < L; ++t) {
        const float* ob = &c.obar[size_t(t) * size_t(rows)];
        float ms = ob[0] * ob[0];
        for (int v = 1; v < rows; ++v) ms = ms + ob[v] * ob[v];
        store_entry(cta, plan_.onrm(r * L + t, h, ch), &ms, kernel_epoch_);
    }
}

// F for the task's rows: combine the chunks' Σō² partials in chunk order.
void Machine::kda_norm(int cta, int r, int h, int ch) {
    const StepInputs& in = *in_;
    Cta& c = ctas_[size_t(cta)];
    const int L = cfg_.L, V = cfg_.V, E = cfg_.E(), rows = plan_.params().kda_chunk_rows, v0 = ch * rows;
    const float eps = float(cfg_.eps);
    for (int t = 0; t < L; ++t) {
        const int s = r * L + t;
        std::vector<MailboxRef> split;
        for (int k = 0; k < plan_.n_chunks(); ++k) split.push_back(plan_.onrm(s, h, k));
        float ms = combine(cta, "Σō² of row " + std::to_string(s) + " head " + std::to_string(h), split, split, 0);
        float rr = 1.0f / std::sqrt(ms / float(V) + eps);
        for (int v = 0; v < rows; ++v) {
            const float g2 = f(read_data(cta, SP_PROJ, s, cfg_.col_g2() + h * V + v0 + v));
            const float ob = c.obar[size_t(t) * size_t(rows) + size_t(v)];
            const size_t at = size_t(s) * size_t(E) + size_t(h * V + v0 + v);
            out_.core_out[at] = bf16::round(((ob * rr) * f(in.o_norm_w[size_t(v0 + v)])) * sigmoid_once(g2));
            mark("core_out", at, cta);
        }
    }
}
}  // namespace monokda::emu::detail
