// The attn role's bodies (SPEC §3 A, kernels/kda_attn.hpp): a slice's P' and partial sums (PART), the
// gate of a row (WGT), the mix of a row (MSQ) and x of a row (the x tensor, XRDY).
#include "emulator/machine_impl.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace monokda::emu::detail {

// A4 partials of one slice, for the part's rows and every source; P' of the slice (A1).
void Machine::attn_part(int cta, int j, int part) {
    Cta& c = ctas_[size_t(cta)];
    const int S = cfg_.S(), D = cfg_.D, nb = cfg_.nb, w = plan_.params().slice_width, d0 = j * w;
    c.pslice.assign(size_t(S) * size_t(w), 0.f);
    for (int s = plan_.attn_row_begin(part); s < plan_.attn_row_begin(part + 1); ++s) {
        const size_t row = size_t(s) * size_t(D);
        for (int d = d0; d < d0 + w; ++d) {
            bf16 po = bf16::round(f((*prefix_)[row + size_t(d)]) + f((*delta_)[row + size_t(d)]));
            out_.prefix_out[row + size_t(d)] = po;
            mark("prefix_out", row + size_t(d), cta);
            if (cfg_.block_write) {
                const size_t bi = (size_t(s) * 8 + size_t(nb)) * size_t(D) + size_t(d);
                out_.blocks[bi] = po;
                mark("blocks", bi, cta);
            }
            c.pslice[size_t(s) * size_t(w) + size_t(d - d0)] = f(po);
        }
        for (int i = 0; i <= nb; ++i) {
            auto v = [&](int d) {
                return i < nb ? f((*blocks_)[(size_t(s) * 8 + size_t(i)) * size_t(D) + size_t(d)])
                              : c.pslice[size_t(s) * size_t(w) + size_t(d - d0)];
            };
            float ss = v(d0) * v(d0), dot = v(d0) * wq_[size_t(d0)];
            for (int d = d0 + 1; d < d0 + w; ++d) {
                ss = ss + v(d) * v(d);
                dot = dot + v(d) * wq_[size_t(d)];
            }
            const float vals[2] = {ss, dot};
            store_entry(cta, plan_.part(s, i, j), vals, kernel_epoch_);
        }
    }
}

// A4-A5 for one row: combine the slice partials, softmax → WGT[row] = e_0..e_nb, Σe.
void Machine::attn_gate(int cta, int row) {
    const int nb = cfg_.nb, n = plan_.n_attn();
    const float eps = float(cfg_.eps), D = float(cfg_.D);
    std::vector<float> logit(size_t(nb + 1)), vals(size_t(nb + 2));
    for (int i = 0; i <= nb; ++i) {
        std::vector<MailboxRef> split, used;
        for (int j = 0; j < n; ++j) split.push_back(plan_.part(row, i, j));
        used = split;
        hooks_.gate_partials(cta, row, i, used);
        const std::string tag = "src " + std::to_string(i) + " of row " + std::to_string(row);
        float ss = combine(cta, "Σv² of " + tag, used, split, 0);
        float dot = combine(cta, "Σv·wq of " + tag, split, split, 1);
        float r = 1.0f / std::sqrt(ss / D + eps);
        logit[size_t(i)] = dot * r;
    }
    float m = *std::max_element(logit.begin(), logit.end());
    for (int i = 0; i <= nb; ++i) vals[size_t(i)] = exp_once(logit[size_t(i)] - m);
    float den = ord_.reduce<float>(Site::softmax_den, nb + 1, [&](int i) { return vals[size_t(i)]; });
    vals[size_t(nb + 1)] = den;
    store_entry(cta, plan_.wgt(row), vals.data(), hooks_.wgt_tag(cta, row, kernel_epoch_));
}

// A5 for one row of the slice, and its partial Σmixed² → MSQ[row][slice].
void Machine::mix_row(int cta, int j, int row) {
    Cta& c = ctas_[size_t(cta)];
    const int nb = cfg_.nb, D = cfg_.D, w = plan_.params().slice_width, d0 = j * w;
    if (c.pslice.empty()) throw std::logic_error("emulator: ATTN_MIX before ATTN_PART on its CTA");
    const MailboxRef wg = plan_.wgt(row);
    std::vector<float> e(size_t(nb + 1));
    for (int i = 0; i <= nb; ++i) e[size_t(i)] = read_tagged(cta, wg, i);
    const float den = read_tagged(cta, wg, nb + 1);
    float* mixed = &c.mixed[size_t(row) * size_t(w)];
    for (int d = d0; d < d0 + w; ++d) {
        auto v = [&](int i) {
            return i < nb ? f((*blocks_)[(size_t(row) * 8 + size_t(i)) * size_t(D) + size_t(d)])
                          : c.pslice[size_t(row) * size_t(w) + size_t(d - d0)];
        };
        mixed[d - d0] = ord_.reduce<float>(Site::mix, nb + 1, [&](int i) { return e[size_t(i)] * v(i); }) / den;
    }
    float ms = mixed[0] * mixed[0];
    for (int d = 1; d < w; ++d) ms = ms + mixed[d] * mixed[d];
    store_entry(cta, plan_.msq(row, j), &ms, kernel_epoch_);
}

// A6 for one row of the slice: x (#2) into the x tensor.
void Machine::x_row(int cta, int j, int row) {
    const StepInputs& in = *in_;
    Cta& c = ctas_[size_t(cta)];
    const int n = plan_.n_attn(), w = plan_.params().slice_width, d0 = j * w;
    std::vector<MailboxRef> split;
    for (int k = 0; k < n; ++k) split.push_back(plan_.msq(row, k));
    float ms = combine(cta, "Σmixed² of row " + std::to_string(row), split, split, 0);
    float rr = 1.0f / std::sqrt(ms / float(cfg_.D) + float(cfg_.eps));
    const float* mixed = &c.mixed[size_t(row) * size_t(w)];
    const int first = hooks_.x_store_first(cta, d0);
    for (int d = first; d < d0 + w; ++d)
        store_data(cta, SP_X, row, d, bf16::round((mixed[d - d0] * rr) * f(in.input_norm_w[size_t(d)])));
    log_data(cta, SP_X, d0, w);
}

void Machine::attn_x_flag(int cta, int j, int part) {
    if (hooks_.stores_xrdy(cta)) store_flag(cta, plan_.xrdy(j, part), hooks_.xrdy_release(cta));
}
}  // namespace monokda::emu::detail
