// Fuzz cases drawn from one seed (fuzz/case_gen.hpp): a step shape, then its values.
#include "fuzz/case_gen.hpp"

#include <cmath>

#include "core/fixture_gen.hpp"
#include "core/rng.hpp"
#include "properties/transforms.hpp"

namespace monokda::fuzz {

std::string CaseShape::str() const {
    std::string s = "R=" + std::to_string(cfg.R) + " L=" + std::to_string(cfg.L) + " nb=" + std::to_string(cfg.nb);
    if (cfg.block_write) s += " bw";
    s += std::string(" ") + to_string(cfg.conv_layout);
    if (null_requests) s += " nulls=" + std::to_string(null_requests);
    if (partial_nulls) s += " partial-nulls=" + std::to_string(partial_nulls);
    if (init_null) s += " init-null";
    if (stride > 1) s += " stride=" + std::to_string(stride);
    if (extreme) s += " extreme";
    if (scale != ScaleProfile::standard) s += std::string(" scale=") + to_string(scale);
    return s;
}

CaseShape draw_shape(const Config& preset, uint64_t seed) {
    Rng rng(seed ^ 0x5eedf00dull);
    CaseShape sh;
    Config& c = sh.cfg;
    c = preset;
    c.seed = seed;
    const bool big_model = int64_t(preset.N) * preset.D > (int64_t(1) << 24);
    const double u = rng.uniform();
    if (big_model) c.R = 1 + int(rng.below(4));
    else c.R = u < 0.6 ? 1 + int(rng.below(4)) : u < 0.9 ? 5 + int(rng.below(12)) : 17 + int(rng.below(48));
    c.L = 1 + int(rng.below(8));
    c.block_write = rng.below(10) < 3;
    c.nb = 1 + int(rng.below(c.block_write ? 7 : 8));
    c.conv_layout = rng.below(2) ? ConvLayout::ds : ConvLayout::sd;
    if (rng.below(4) == 0) sh.null_requests = 1 + int(rng.below(uint64_t(std::max(1, c.R / 2))));
    sh.init_null = rng.below(5) == 0;
    sh.extra_slots = int(rng.below(7));
    if (rng.below(4) == 0) sh.stride = 2 + int(rng.below(6));
    sh.extreme = rng.below(20) < 7;
    // drawn last, so that every earlier draw of a seed is what it was before they existed
    const int live = c.R - sh.null_requests;
    if (c.L >= 2 && live > 0 && rng.below(4) == 0) sh.partial_nulls = 1 + int(rng.below(uint64_t(std::max(1, live / 2))));
    // half the cases without extreme values take a profile: each is an extreme of its own, and on top
    // of extreme rows (2^50) prefix-large would pass 2^63, where the reference's own sums overflow
    const std::vector<ScaleProfileInfo>& profiles = scale_profiles();  // "default" first
    if (!sh.extreme && rng.below(2) == 0) sh.scale = profiles[1 + size_t(rng.below(profiles.size() - 1))].profile;
    return sh;
}

namespace {

bf16 scaled(bf16 v, double f) { return bf16::round(float(double(v.to_float()) * f)); }

// A row factor: +-2^e over a wide range, or zero.
double row_factor(Rng& rng) {
    const uint64_t k = rng.below(16);
    if (k == 0) return 0.0;
    const double sign = rng.below(2) ? -1.0 : 1.0;
    if (k < 6) return sign * std::ldexp(1.0, -60 + int(rng.below(41)));  // tiny: 2^-60 .. 2^-20
    return sign * std::ldexp(1.0, 10 + int(rng.below(41)));              // large: 2^10 .. 2^50
}

void extreme_values(StepInputs& in, Rng& rng) {
    const Config& c = in.cfg;
    const size_t D = size_t(c.D);
    auto rows = [&](std::vector<bf16>& v, size_t n_rows) {
        for (size_t r = 0; r < n_rows; ++r) {
            if (rng.below(4)) continue;  // a quarter of the rows
            const double f = row_factor(rng);
            for (size_t d = 0; d < D; ++d) v[r * D + d] = scaled(v[r * D + d], f);
        }
    };
    rows(in.prefix, size_t(c.S()));
    rows(in.delta, size_t(c.S()));
    rows(in.blocks, size_t(c.S()) * 8);
    const size_t head = size_t(c.H) * c.V * c.K;
    for (int s = 0; s < c.slots; ++s) {
        if (rng.below(3) == 0) {
            const double f = std::ldexp(1.0, -30 + int(rng.below(61)));
            for (size_t i = 0; i < head; ++i) in.ssm_state[size_t(s) * head + i] *= float(f);
        }
        if (rng.below(3) == 0) {
            const double f = std::ldexp(1.0, -30 + int(rng.below(51)));
            for (int j = 0; j < c.conv_len(); ++j)
                for (int ch = 0; ch < c.C; ++ch) {
                    bf16& x = in.conv_state[size_t(in.conv_at(s, j, ch))];
                    x = scaled(x, f);
                }
        }
    }
    for (auto& a : in.A_log) a = float(rng.uniform(-8.0, 4.0));  // gates from barely moving to saturated
    for (auto& b : in.dt_bias) b *= 10.0f;
}

}  // namespace

StepInputs build_case(const CaseShape& sh) {
    FixtureOptions fo;
    fo.null_requests = sh.null_requests;
    fo.partial_nulls = sh.partial_nulls;
    fo.extra_slots = sh.extra_slots;
    fo.scale = sh.scale;
    StepInputs in = make_fixture(sh.cfg, fo);
    const Config& c = in.cfg;
    Rng rng(c.seed ^ 0xca5eull);
    if (sh.init_null) {
        for (int r = 0; r < c.R; ++r) {
            const int a = in.num_accepted[size_t(r)];
            if (a > 1 && in.idx(r, 0) > 0 && in.idx(r, a - 1) > 0) {
                in.state_indices[size_t(r) * c.L + size_t(a - 1)] = -1;
                break;
            }
        }
    }
    if (sh.stride > 1) {
        const int offset = int(rng.below(uint64_t(sh.stride)));
        std::vector<int32_t> map(size_t(c.slots));
        for (int s = 0; s < c.slots; ++s) map[size_t(s)] = s == 0 ? 0 : s * sh.stride + offset;
        in = props::relabel_slots(in, map, (c.slots - 1) * sh.stride + offset + 2, rng);
    }
    if (sh.extreme) extreme_values(in, rng);
    in.validate_step();
    return in;
}

}  // namespace monokda::fuzz
