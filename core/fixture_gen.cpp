// Deterministic fixtures (core/fixture_gen.hpp): each tensor drawn at its realistic scale from the seed.
#include "core/fixture_gen.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/normal_draws.hpp"
#include "core/rng.hpp"

namespace monokda {

namespace {

// n live requests, chosen by a stream of their own (the rest of the fixture is the one without),
// each get "none" at a non-empty random set of the columns other than a-1, 0 and -1 in turn.
void partial_null_columns(StepInputs& in, const std::vector<int>& null_req, int n) {
    const Config& c = in.cfg;
    Rng rng(c.seed ^ 0x9a271a1ull);
    std::vector<int> live;
    for (int r = 0; r < c.R; ++r)
        if (!null_req[size_t(r)]) live.push_back(r);
    rng.shuffle(live);
    int32_t none = rng.below(2) ? 0 : -1;
    for (int k = 0; k < n; ++k) {
        const int r = live[size_t(k)], a = in.num_accepted[size_t(r)];
        std::vector<int> cols;
        for (int t = 0; t < c.L; ++t)
            if (t != a - 1) cols.push_back(t);
        rng.shuffle(cols);
        const size_t m = 1 + size_t(rng.below(cols.size()));
        for (size_t j = 0; j < m; ++j, none = none == 0 ? -1 : 0) in.state_indices[size_t(r * c.L + cols[j])] = none;
    }
}

}  // namespace

StepInputs make_fixture(Config cfg, const FixtureOptions& opt) {
    if (opt.extra_slots < 0) bad_input("extra slots must be >= 0");
    cfg.slots = cfg.S() + 1 + opt.extra_slots;
    cfg.validate();  // first: a bad R is named as R, not as a count measured against it
    if (opt.null_requests < 0 || opt.null_requests > cfg.R)
        bad_input("null requests must be in 0..R (got " + std::to_string(opt.null_requests) + ")");
    if (opt.partial_nulls < 0 || opt.partial_nulls > cfg.R - opt.null_requests)
        bad_input("partial null requests must be in 0..R - null requests = 0.." + std::to_string(cfg.R - opt.null_requests) +
                  " (got " + std::to_string(opt.partial_nulls) + ")");
    if (opt.partial_nulls > 0 && cfg.L < 2)
        bad_input("partial null columns need L >= 2 (with one token the only column is the initial slot's)");
    StepInputs in;
    in.cfg = cfg;
    const Config& c = in.cfg;
    const int64_t S = c.S(), D = c.D, E = c.E();
    Rng rng(c.seed);

    auto normal_bf16 = [&](size_t n, double sd, double mean = 0.0) {
        return normal_draws<bf16>(rng, n, [&](double z) { return bf16::round(float(mean + sd * z)); });
    };
    auto normal_f32 = [&](size_t n, double sd) {
        return normal_draws<float>(rng, n, [&](double z) { return float(sd * z); });
    };
    // rows of activations: unit scale, one row in eight ten times louder (as real residual streams have)
    auto rows_bf16 = [&](int64_t rows, int64_t width) {
        std::vector<bf16> v(size_t(rows * width));
        for (int64_t r = 0; r < rows; ++r) {
            const double sd = rng.below(8) == 0 ? 10.0 : 1.0;
            const std::vector<bf16> row =
                normal_draws<bf16>(rng, size_t(width), [&](double z) { return bf16::round(float(sd * z)); });
            std::copy(row.begin(), row.end(), v.begin() + r * width);
        }
        return v;
    };

    in.prefix = rows_bf16(S, D);
    in.delta = normal_bf16(size_t(S * D), 0.5);
    in.blocks = rows_bf16(S * 8, D);
    in.res_norm_w = normal_bf16(size_t(D), 0.1, 1.0);
    in.res_proj_w = normal_bf16(size_t(D), 1.0 / std::sqrt(double(D)));
    in.input_norm_w = normal_bf16(size_t(D), 0.1, 1.0);
    in.in_proj_w = normal_bf16(size_t(c.N) * D, 1.0 / std::sqrt(double(D)));
    for (int64_t n = c.min_N(); n < c.N; ++n)  // the pad rows are zero
        std::fill(in.in_proj_w.begin() + n * D, in.in_proj_w.begin() + (n + 1) * D, bf16::from_bits(0));
    in.f_b_w = normal_bf16(size_t(E * c.F), 1.0 / std::sqrt(double(c.F)));
    in.conv_w = normal_f32(size_t(c.C) * c.W, 1.0 / std::sqrt(double(c.W)));
    in.A_log.resize(size_t(c.H));
    for (auto& a : in.A_log) a = float(rng.uniform(-2.0, 1.0));
    in.dt_bias = normal_f32(size_t(E), 0.5);
    in.o_norm_w = normal_bf16(size_t(c.V), 0.1, 1.0);
    in.conv_state = normal_bf16(size_t(c.slots) * c.conv_len() * c.C, 1.0);
    in.ssm_state = normal_f32(size_t(c.slots) * c.H * c.V * c.K, 0.1);

    // distinct live slots 1..slots-1, shuffled; null requests get "none" (-1 or 0) everywhere
    std::vector<int32_t> pool(size_t(c.slots - 1));
    std::iota(pool.begin(), pool.end(), 1);
    rng.shuffle(pool);
    std::vector<int> null_req(size_t(c.R), 0);
    for (int k = 0; k < opt.null_requests; ++k) {
        int r;
        do r = int(rng.below(uint64_t(c.R))); while (null_req[size_t(r)]);
        null_req[size_t(r)] = 1;
    }
    in.state_indices.resize(size_t(S));
    size_t next = 0;
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t)
            in.state_indices[size_t(r * c.L + t)] = null_req[size_t(r)] ? ((r + t) % 2 ? -1 : 0) : pool[next++];
    in.num_accepted.resize(size_t(c.R));
    for (auto& a : in.num_accepted) a = int32_t(1 + rng.below(uint64_t(c.L)));
    if (opt.partial_nulls) partial_null_columns(in, null_req, opt.partial_nulls);
    apply_scale_profile(in, opt.scale);
    in.validate_step();
    return in;
}

}  // namespace monokda
