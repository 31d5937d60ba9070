// Kernel v2's seam on the host, stage by stage (docs/kernel-v2.md "The seam"; SPEC §3 A): LOAD, the
// partials of each (row, source, slice), GATE's softmax weights, MIX's mixed and Σmixed² of each
// (row, slice), X's 1/rms and x, each in the seam's order: a slice's sums sequential from -0, the
// slices' partials added in slice order, the max, softmax and mix sequential over the sources (bank
// rows 0 .. nb-1, then P'), exp rounded once from double as the kernel's exp_f. The one host
// definition of those values: the emulator's seam runs each stage on what has landed in its CTA
// (emulator/v2/seam_v2.cpp) and the probe's stage check runs them all on the fixture to compare with
// every CTA's dump (bench/probes/v2_seam_stages.cuh). Plain host arrays, never the device's layout.
#pragma once
#include <cstddef>
#include <vector>

#include "core/bf16.hpp"

namespace monokda {

// The seam's inputs as the step has them: P and delta [S][D], the bank rows [S][8][D] and the gains
// res_norm_w, res_proj_w, input_norm_w [D], bf16; eps of the two rms norms.
struct SeamInputs {
    std::vector<bf16> prefix, delta, blocks, res_norm_w, res_proj_w, input_norm_w;
    float eps = 0.f;
};

// LOAD's values for `cols` columns of every row, f32 as the stages read them: the sources
// [S][nb + 1][cols] (bank rows, then P' = bf16(P + delta), #1), wq = res_norm_w · res_proj_w and the
// gain input_norm_w [cols]. Zeros until loaded.
struct SeamRows {
    int S = 0, nb = 0, cols = 0;
    std::vector<float> v, wq, nw;
    SeamRows() = default;
    SeamRows(int S, int nb, int cols);
    float* src(int s, int i) { return &v[(size_t(s) * size_t(nb + 1) + size_t(i)) * size_t(cols)]; }
    const float* src(int s, int i) const { return &v[(size_t(s) * size_t(nb + 1) + size_t(i)) * size_t(cols)]; }
};
// LOAD: columns col0 .. col0 + r.cols - 1 of r's rows from the inputs (D = in.res_norm_w.size()).
void seam_load(const SeamInputs& in, int col0, SeamRows& r);

// PART, one (row, source, slice): out = {Σv², Σv·wq} over its w columns, sequential from -0.
void seam_part(const float* v, const float* wq, int w, float* out);
// PART, every row, source and slice of w columns of r: out [S][nb + 1][r.cols / w][2].
void seam_part_rows(const SeamRows& r, int w, float* out);
// GATE, one row: its partials [nb + 1][slices][2] added in slice order, each source's logit
// Σv·wq · 1/rms(v) over D columns, the max and the softmax in source order; wgt = {e_0 .. e_nb, Σe}.
void seam_gate(const float* part, int nb, int slices, int D, float eps, float* wgt);
// MIX, one row: mixed[d] = (Σ_i e_i · v_i[d], sources in order) / Σe for d < cols, source i's
// columns at v + i · stride, wgt = {e_0 .. e_nb, Σe}.
void seam_mix(const float* v, size_t stride, int nb, const float* wgt, int cols, float* mixed);
// Σm² of w values, sequential from -0 (MIX's Σmixed² of one (row, slice)).
float seam_sumsq(const float* m, int w);
// MIX, every row of r: mixed [S][cols] from wgt [S][nb + 2], and Σmixed² [S][cols / w].
void seam_mix_rows(const SeamRows& r, const float* wgt, int w, float* mixed, float* msq);
// X, one row: 1/rms from its slices' Σmixed² added in slice order, over D columns.
float seam_rr(const float* msq, int slices, int D, float eps);
// X: x = bf16((mixed · 1/rms) · input_norm_w) (#2).
inline bf16 seam_x(float mixed, float rr, float nw) { return bf16::round((mixed * rr) * nw); }

// Every stage of every row, whole rows at a time: S = in.prefix.size() / D rows, slices of w columns.
struct SeamStages {
    int S = 0, nb = 0, D = 0, slices = 0;
    SeamRows rows;             // LOAD: all D columns
    std::vector<float> part;   // [S][nb + 1][slices][2]: Σv², Σv·wq
    std::vector<float> wgt;    // [S][nb + 2]: e_0 .. e_nb, Σe
    std::vector<float> mixed;  // [S][D]
    std::vector<float> msq;    // [S][slices]: Σmixed²
    std::vector<float> rr;     // [S]: 1/rms
    std::vector<bf16> x;       // [S][D]
};
// BadInput where nb is not 0 .. 8, w does not divide D = res_norm_w.size(), or the inputs' sizes are
// not those of S rows.
SeamStages seam_stages(const SeamInputs& in, int nb, int w);

}  // namespace monokda
