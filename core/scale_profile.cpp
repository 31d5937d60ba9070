// The scale profiles (core/scale_profile.hpp). Each sets or rescales a few inputs of a generated
// step so that the range it names is reached on every token (or head) it picks, at least one of
// each; rescaling is by powers of two where a value is only moved, so it stays exact in bf16.
#include "core/scale_profile.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace monokda {

const std::vector<ScaleProfileInfo>& scale_profiles() {
    static const std::vector<ScaleProfileInfo> table = {
        {ScaleProfile::standard, "default", "the generator's unit scales", "none beyond SPEC §3's arithmetic"},
        {ScaleProfile::attnres_large, "attnres-large",
         "one massive-activation channel in every AttnRes source and in the pseudo-query: each token's logits lie "
         "145..600 from 0, both signs, a few apart",
         "the softmax's max-subtraction (e^logit is inf above 88.7; below -103.9 every e^logit is 0)"},
        {ScaleProfile::prefix_large, "prefix-large",
         "prefix rows (a third, at least one) and bank rows (an eighth) scaled by 2^16..2^40: entries past f16's 65504",
         "the seam's sources and sums kept in f32 (an f16 conversion on the way is inf)"},
        {ScaleProfile::norm_tiny, "norm-tiny",
         "quiet tokens (a quarter, at least one: every AttnRes source scaled by 2^-7..2^-40, or zero) and a quiet "
         "head (its q and k conv taps scaled by 2^-11..2^-30, or zero): mean squares from a few eps down to 0",
         "eps inside each norm's square root (key norm, input and output RMSNorm, q/k L2 norm)"},
        {ScaleProfile::gate_low, "gate-low",
         "A_log in [3, 4.5], dt_bias N(3, 1.5): the gate's sigmoid argument exp(A_log)(g1 + dt_bias) mostly 20..400, "
         "most gates at the lower bound",
         "a sigmoid that cannot overflow (1 / (1 + e^-z); e^z / (1 + e^z) is NaN above 88.7)"},
    };
    return table;
}

const char* to_string(ScaleProfile p) {
    for (const ScaleProfileInfo& i : scale_profiles())
        if (i.profile == p) return i.name;
    return "?";
}

ScaleProfile parse_scale_profile(const std::string& name) {
    std::string known;
    for (const ScaleProfileInfo& i : scale_profiles()) {
        if (name == i.name) return i.profile;
        known += (known.empty() ? "" : ", ") + std::string(i.name);
    }
    bad_input("unknown scale profile '" + name + "' (known: " + known + ")");
}

namespace {

bf16 times(bf16 v, double f) { return bf16::round(float(double(v.to_float()) * f)); }

void scale_row(bf16* v, int n, double f) {
    for (int i = 0; i < n; ++i) v[i] = times(v[i], f);
}

// Channel ch of every source row carries ±k·|rest of the row|, k in 3..6 a token, so that
// v̂[ch] = v[ch] / rms(v) = √D·k/√(1 + k²) is 0.94..0.99 √D; the pseudo-query's entry there makes
// that channel's logit term `level`/0.97 times it, the rest of the logit staying about N(0, 0.1).
void attnres_large(StepInputs& in, Rng& rng) {
    const Config& c = in.cfg;
    const int D = c.D, ch = int(rng.below(uint64_t(D)));
    const double level = rng.uniform(150.0, 600.0);
    const float g = in.res_norm_w[size_t(ch)].to_float();
    in.res_proj_w[size_t(ch)] = bf16::round(float(level / (0.97 * std::sqrt(double(D)) * double(g))));
    auto massive = [&](bf16* v, double sign, double k) {
        double rest = 0;
        for (int d = 0; d < D; ++d)
            if (d != ch) rest += double(v[d].to_float()) * double(v[d].to_float());
        v[ch] = bf16::round(float(sign * k * (1 + 0.02 * rng.normal()) * std::sqrt(rest > 0 ? rest : 1.0)));
    };
    for (int s = 0; s < c.S(); ++s) {
        const double sign = rng.below(2) ? 1.0 : -1.0, k = rng.uniform(3.0, 6.0);
        massive(&in.prefix[size_t(s) * D], sign, k);
        for (int i = 0; i < 8; ++i) massive(&in.blocks[(size_t(s) * 8 + size_t(i)) * D], sign, k);
    }
}

void prefix_large(StepInputs& in, Rng& rng) {
    const Config& c = in.cfg;
    const int D = c.D, forced = int(rng.below(uint64_t(c.S())));
    auto large = [&] { return std::ldexp(1.0, 16 + int(rng.below(25))); };
    for (int s = 0; s < c.S(); ++s) {
        if (s == forced || rng.below(3) == 0) scale_row(&in.prefix[size_t(s) * D], D, large());
        for (int i = 0; i < 8; ++i)
            if (rng.below(8) == 0) scale_row(&in.blocks[(size_t(s) * 8 + size_t(i)) * D], D, large());
    }
}

void norm_tiny(StepInputs& in, Rng& rng) {
    const Config& c = in.cfg;
    const int D = c.D, forced = int(rng.below(uint64_t(c.S())));
    for (int s = 0; s < c.S(); ++s) {
        if (s != forced && rng.below(4) != 0) continue;
        const double f = rng.below(4) == 0 ? 0.0 : std::ldexp(1.0, -7 - int(rng.below(34)));
        scale_row(&in.prefix[size_t(s) * D], D, f);
        scale_row(&in.delta[size_t(s) * D], D, f);
        scale_row(&in.blocks[size_t(s) * 8 * D], 8 * D, f);
    }
    const int h = int(rng.below(uint64_t(c.H)));
    const float f = rng.below(4) == 0 ? 0.0f : float(std::ldexp(1.0, -11 - int(rng.below(20))));
    for (int base : {0, c.E()})  // the head's q channels, then its k channels
        for (int k = 0; k < c.K; ++k)
            for (int j = 0; j < c.W; ++j) in.conv_w[size_t(base + h * c.K + k) * c.W + size_t(j)] *= f;
}

void gate_low(StepInputs& in, Rng& rng) {
    for (float& a : in.A_log) a = float(rng.uniform(3.0, 4.5));
    for (float& b : in.dt_bias) b = float(3.0 + 1.5 * rng.normal());
}

}  // namespace

void apply_scale_profile(StepInputs& in, ScaleProfile p) {
    Rng rng(in.cfg.seed ^ 0x5ca1e5ull);
    switch (p) {
        case ScaleProfile::standard: return;
        case ScaleProfile::attnres_large: return attnres_large(in, rng);
        case ScaleProfile::prefix_large: return prefix_large(in, rng);
        case ScaleProfile::norm_tiny: return norm_tiny(in, rng);
        case ScaleProfile::gate_low: return gate_low(in, rng);
    }
}

}  // namespace monokda
