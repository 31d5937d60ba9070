// Kernel v2's seam stages on the host (seam_stages.hpp): each sum a plain chain in the seam's order,
// built without contraction (the project's -ffp-contract=off), so every value is the kernel's bit
// for bit.
#include "core/seam_stages.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/exp_once.hpp"

namespace monokda {

SeamRows::SeamRows(int S_, int nb_, int cols_)
    : S(S_), nb(nb_), cols(cols_), v(size_t(S_) * size_t(nb_ + 1) * size_t(cols_), 0.f), wq(size_t(cols_), 0.f),
      nw(size_t(cols_), 0.f) {}

void seam_load(const SeamInputs& in, int col0, SeamRows& r) {
    const size_t D = in.res_norm_w.size();
    for (int d = 0; d < r.cols; ++d) {
        const size_t c = size_t(col0 + d);
        r.wq[size_t(d)] = in.res_norm_w[c].to_float() * in.res_proj_w[c].to_float();
        r.nw[size_t(d)] = in.input_norm_w[c].to_float();
    }
    for (int s = 0; s < r.S; ++s)
        for (int d = 0; d < r.cols; ++d) {
            const size_t c = size_t(col0 + d), g = size_t(s) * D + c;
            for (int i = 0; i < r.nb; ++i) r.src(s, i)[d] = in.blocks[(size_t(s) * 8 + size_t(i)) * D + c].to_float();
            r.src(s, r.nb)[d] = bf16::round(in.prefix[g].to_float() + in.delta[g].to_float()).to_float();  // #1
        }
}

void seam_part(const float* v, const float* wq, int w, float* out) {
    float ss = -0.f, dot = -0.f;
    for (int d = 0; d < w; ++d) ss = ss + v[d] * v[d], dot = dot + v[d] * wq[d];
    out[0] = ss, out[1] = dot;
}

void seam_part_rows(const SeamRows& r, int w, float* out) {
    const int slices = r.cols / w;
    for (int s = 0; s < r.S; ++s)
        for (int i = 0; i <= r.nb; ++i)
            for (int j = 0; j < slices; ++j)
                seam_part(r.src(s, i) + j * w, &r.wq[size_t(j * w)], w,
                          out + ((size_t(s) * size_t(r.nb + 1) + size_t(i)) * size_t(slices) + size_t(j)) * 2);
}

void seam_gate(const float* part, int nb, int slices, int D, float eps, float* wgt) {
    std::vector<float> logit(size_t(nb) + 1);
    for (int i = 0; i <= nb; ++i) {
        const float* p = part + size_t(i) * size_t(slices) * 2;
        float ss = p[0], dot = p[1];
        for (int j = 1; j < slices; ++j) ss = ss + p[2 * j], dot = dot + p[2 * j + 1];
        logit[size_t(i)] = dot * (1.0f / std::sqrt(ss / float(D) + eps));
    }
    float m = logit[0];
    for (int i = 1; i <= nb; ++i) m = std::fmax(m, logit[size_t(i)]);
    float den = 0.f;
    for (int i = 0; i <= nb; ++i) {
        wgt[i] = exp_once(logit[size_t(i)] - m);
        den = i ? den + wgt[i] : wgt[i];
    }
    wgt[nb + 1] = den;
}

void seam_mix(const float* v, size_t stride, int nb, const float* wgt, int cols, float* mixed) {
    for (int d = 0; d < cols; ++d) {
        float m = wgt[0] * v[d];
        for (int i = 1; i <= nb; ++i) m = m + wgt[i] * v[size_t(i) * stride + size_t(d)];
        mixed[d] = m / wgt[nb + 1];
    }
}

float seam_sumsq(const float* m, int w) {
    float q = -0.f;
    for (int d = 0; d < w; ++d) q = q + m[d] * m[d];
    return q;
}

void seam_mix_rows(const SeamRows& r, const float* wgt, int w, float* mixed, float* msq) {
    const int slices = r.cols / w;
    for (int s = 0; s < r.S; ++s) {
        float* m = mixed + size_t(s) * size_t(r.cols);
        seam_mix(r.src(s, 0), size_t(r.cols), r.nb, wgt + size_t(s) * size_t(r.nb + 2), r.cols, m);
        for (int j = 0; j < slices; ++j) msq[size_t(s) * size_t(slices) + size_t(j)] = seam_sumsq(m + j * w, w);
    }
}

float seam_rr(const float* msq, int slices, int D, float eps) {
    float ms = msq[0];
    for (int j = 1; j < slices; ++j) ms = ms + msq[j];
    return 1.0f / std::sqrt(ms / float(D) + eps);
}

SeamStages seam_stages(const SeamInputs& in, int nb, int w) {
    const int D = int(in.res_norm_w.size());
    if (nb < 0 || nb > 8) bad_input("the seam's sources: nb " + std::to_string(nb) + " is not 0 .. 8 (the bank has 8 rows)");
    if (D == 0 || w <= 0 || D % w != 0)
        bad_input("the seam's slices: " + std::to_string(w) + " columns do not divide D = " + std::to_string(D));
    const size_t SD = in.prefix.size(), S = SD / size_t(D);
    if (SD % size_t(D) != 0 || in.delta.size() != SD || in.blocks.size() != 8 * SD || in.res_proj_w.size() != size_t(D) ||
        in.input_norm_w.size() != size_t(D))
        bad_input("the seam's inputs: P, delta, the bank rows and the gains are not [S][D], [S][D], [S][8][D] and [D] for one S");
    SeamStages st;
    st.S = int(S), st.nb = nb, st.D = D, st.slices = D / w;
    st.rows = SeamRows(st.S, nb, D);
    seam_load(in, 0, st.rows);
    const size_t src = size_t(nb) + 1, sl = size_t(st.slices);
    st.part.assign(S * src * sl * 2, 0.f), st.wgt.assign(S * (src + 1), 0.f), st.mixed.assign(SD, 0.f);
    st.msq.assign(S * sl, 0.f), st.rr.assign(S, 0.f), st.x.assign(SD, bf16{});
    seam_part_rows(st.rows, w, st.part.data());
    for (size_t s = 0; s < S; ++s) seam_gate(&st.part[s * src * sl * 2], nb, st.slices, D, in.eps, &st.wgt[s * (src + 1)]);
    seam_mix_rows(st.rows, st.wgt.data(), w, st.mixed.data(), st.msq.data());
    for (size_t s = 0; s < S; ++s) {
        st.rr[s] = seam_rr(&st.msq[s * sl], st.slices, D, in.eps);
        for (size_t d = 0; d < size_t(D); ++d) st.x[s * D + d] = seam_x(st.mixed[s * D + d], st.rr[s], st.rows.nw[d]);
    }
    return st;
}

}  // namespace monokda
