// Properties of particular input values: identical AttnRes sources, in_proj pad rows, repeat runs.
#include <cmath>

#include "properties/check_util.hpp"
#include "properties/prop_list.hpp"
#include "properties/transforms.hpp"

namespace monokda::props {

using namespace detail;

namespace {

// Every AttnRes source of row s is the row's prefix (delta = +0, bank rows 0..nb-1 = prefix); bank
// rows nb..7 get other random values, so reading a bank row in place of P' shows.
void identical_sources(StepInputs& v, int nb, Rng& rng) {
    const Config& c = v.cfg;
    const size_t D = size_t(c.D);
    v.cfg.nb = nb;
    const std::vector<bf16> other = random_bf16(size_t(c.S()) * 8 * D, rng);
    for (int s = 0; s < c.S(); ++s) {
        for (size_t d = 0; d < D; ++d) {
            v.delta[s * D + d] = bf16{};
            if (v.prefix[s * D + d].bits == 0x8000) v.prefix[s * D + d] = bf16{};  // -0 + +0 is +0: keep P' == prefix
        }
        for (int i = 0; i < 8; ++i)
            for (size_t d = 0; d < D; ++d)
                v.blocks[(size_t(s) * 8 + i) * D + d] = i < nb ? v.prefix[s * D + d] : other[(size_t(s) * 8 + i) * D + d];
    }
}

}  // namespace

// Identical AttnRes sources mix to the source. With all nb + 1 sources equal to v every logit is the
// same, every softmax weight is exactly 1, and Σ_i 1·v[d] / (nb+1) is exact in f32 in any order
// (at most 9 copies of an 8-bit significand), so mixed = v. Hence x = rmsnorm(v)·input_norm_w
// bit-identically whatever the pseudo-query or nb (a second run changes both), prefix_out = v, the
// block row = v, and x lies within 1 bf16 ulp (row scale) of the f64 value (only Σ mixed² rounds).
Verdict prop_attnres_identical(const Target& tg, const StepInputs& in, const StepOutputs<float>&, uint64_t seed) {
    const Config& c = in.cfg;
    Rng rng(seed);
    StepInputs v1 = in, v2 = in;
    identical_sources(v1, c.nb, rng);
    const int max_nb = c.block_write ? 7 : 8;
    int nb2 = 1 + int(rng.below(uint64_t(max_nb)));
    if (nb2 == c.nb && max_nb > 1) nb2 = nb2 % max_nb + 1;
    identical_sources(v2, nb2, rng);
    v2.res_norm_w = random_bf16(size_t(c.D), rng, 1.0);
    v2.res_proj_w = random_bf16(size_t(c.D), rng, 1.0);
    const StepOutputs<float> o1 = tg.run(v1), o2 = tg.run(v2);
    Findings f("attnres-identical");
    const int D = c.D;
    std::vector<bf16> want(static_cast<size_t>(D));
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t) {
            const size_t s = row_of(c, r, t);
            const bf16* src = &v1.prefix[s * size_t(D)];
            rows_match(f, "prefix_out " + at(r, t) + " (P' = prefix + 0)", &o1.prefix_out[s * size_t(D)], src, D, true);
            if (c.block_write)
                rows_match(f, "blocks row nb " + at(r, t), &o1.blocks[(s * 8 + size_t(c.nb)) * size_t(D)], src, D, true);
            rows_match(f, "x " + at(r, t) + " (nb " + std::to_string(c.nb) + " vs nb " + std::to_string(nb2) +
                              " with another pseudo-query)", &o2.x[s * size_t(D)], &o1.x[s * size_t(D)], D, true);
            double ss = 0;
            for (int d = 0; d < D; ++d) ss += double(src[d].to_float()) * double(src[d].to_float());
            const double rr = 1.0 / std::sqrt(ss / D + c.eps);
            for (int d = 0; d < D; ++d)
                want[size_t(d)] = bf16::round(double(src[d].to_float()) * rr * double(v1.input_norm_w[size_t(d)].to_float()));
            rows_match(f, "x " + at(r, t) + " against rmsnorm(source) in f64", &o1.x[s * size_t(D)], want.data(), D, false, 1.0);
        }
    return f.verdict();
}

// The zero pad rows of in_proj never matter: filling them with random values changes no output
// except proj's own pad columns. Bit-exact.
Verdict prop_pad_rows(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t seed) {
    const Config& c = in.cfg;
    const std::string name = "pad-rows";
    if (c.N == c.min_N()) return skip(name, "in_proj has no pad rows (N = " + std::to_string(c.N) + ")");
    Rng rng(seed);
    StepInputs v = in;
    for (size_t i = size_t(c.min_N()) * c.D; i < v.in_proj_w.size(); ++i) v.in_proj_w[i] = bf16::round(float(rng.normal()));
    const StepOutputs<float> o = tg.run(v);
    Findings f(name);
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t)
            rows_match_all(f, at(r, t), c, o, row_of(c, r, t), base, row_of(c, r, t), kAllRows, true, 0, c.min_N());
    for (int s = 0; s < c.slots; ++s) {
        conv_entries_match(f, "", in, o.conv_state, s, 0, in, base.conv_state, s, 0, c.conv_len(), true);
        ssm_slot_match(f, "", c, o.ssm_state, s, base.ssm_state, s, true);
    }
    return f.verdict();
}

// The same step twice gives the same bits, every tensor.
Verdict prop_determinism(const Target& tg, const StepInputs& in, const StepOutputs<float>& base, uint64_t) {
    Findings f("determinism");
    outputs_identical(f, in.cfg, tg.run(in), base);
    return f.verdict();
}

}  // namespace monokda::props
