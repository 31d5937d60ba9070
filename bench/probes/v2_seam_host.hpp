// The host half of the v2 probe's seam (bench/probes/v2_seam.cuh): the step's seam inputs from the
// project's fixture generator at the production shape, and what the reference computes from them in
// kernel v1's order (its plan's reduction order), which the seam must reproduce bit for bit, and
// every stage's values in the seam's own order (core/seam_stages.hpp). Built by the host compiler
// (v2_seam_host.cpp), so the probe's CUDA half sees plain vectors.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/seam_stages.hpp"

namespace monokda::probe::v2 {

struct SeamFixture {
    int S = 0, nb = 0;
    float eps = 0.f;
    std::vector<uint16_t> prefix, delta, blocks;              // [S][D], [S][D], [S][8][D] bf16 bits
    std::vector<uint16_t> res_norm_w, res_proj_w, input_norm_w;  // [D]
    std::vector<uint16_t> prefix_out, x;                      // the reference's, in v1's order
    std::string order;                                        // that order, as the reference names it
};

// A tensor's bf16 values as their bits, as the probes' CUDA halves take them.
std::vector<uint16_t> bits(const std::vector<bf16>& v);

// R × L = rows requests of one token each would do as well (the seam's rows are independent); the
// generator's R × L shape is kept so the rows are those of a real verify step.
SeamFixture seam_fixture(int R, int L, int nb, uint64_t seed);

// Every seam stage of the fixture's rows 0 .. S-1 in slices of w columns: what the seam must hold.
SeamStages seam_expected(const SeamFixture& f, int S, int w);

}  // namespace monokda::probe::v2
