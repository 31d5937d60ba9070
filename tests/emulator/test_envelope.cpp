// The reduction-order envelope: measured from the reference's own orders, saved and read back, and
// a check that fires on outputs moved further from the oracle than reordering alone moves them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

#include <fstream>

#include "core/fixture_gen.hpp"
#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

const TensorFile& small_oracle();
const Envelope& small_envelope() {
    static Envelope e = [] {
        Prepared& p = small_prepared();
        Envelope env = build_envelope(p.input, default_envelope_orders(12));
        const TensorFile ref = p.refs[0].to_file(p.input.cfg);
        env.plan_order = p.plan.reduction_order().str();
        env.plan_order_reference_digest = file_digest(ref);
        env.plan_order_distance = envelope_distances(env, ref, small_oracle());
        return env;
    }();
    return e;
}
const TensorFile& small_oracle() {
    static TensorFile f = ref::run<double>(small_prepared().input, {}).to_file(small_prepared().input.cfg);
    return f;
}

}  // namespace

TEST_CASE("every order's own distance lies inside, and so does the plan's order") {
    const Envelope& env = small_envelope();
    REQUIRE(env.outputs.size() == 7);
    CHECK(env.orders.size() == 12);
    for (const auto& b : env.outputs) {
        REQUIRE(b.per_order.size() == 12);
        for (const auto& d : b.per_order) {
            CHECK(d.rel_l2 <= b.max_rel_l2);
            CHECK(d.frac_identical >= b.min_frac_identical);
        }
    }
    Prepared& p = small_prepared();
    for (const auto& c : check_envelope(env, p.refs[0].to_file(p.input.cfg), small_oracle())) {
        INFO(c.name, ": ", c.why);
        CHECK(c.inside);
    }
}

TEST_CASE("the check fires on outputs moved beyond the envelope, and only on those") {
    Prepared& p = small_prepared();
    StepOutputs<float> moved = p.refs[0];
    // a planted error in core_out: a quarter of the elements off by 8 bf16 ulps
    for (size_t i = 0; i < moved.core_out.size(); i += 4)
        moved.core_out[i] = bf16::from_bits(uint16_t(moved.core_out[i].bits + 8));
    auto checks = check_envelope(small_envelope(), moved.to_file(p.input.cfg), small_oracle());
    for (const auto& c : checks) {
        INFO(c.name, ": ", c.why);
        CHECK(c.inside == (c.name != "core_out"));
    }
    // a state off by a relative 1e-3 in one slot
    StepOutputs<float> st = p.refs[0];
    for (size_t i = 0; i < st.ssm_state.size(); i += 3) st.ssm_state[i] *= 1.001f;
    for (const auto& c : check_envelope(small_envelope(), st.to_file(p.input.cfg), small_oracle()))
        CHECK(c.inside == (c.name != "ssm_state"));
}

TEST_CASE("saved and read back unchanged; bad files are bad input") {
    const Envelope& env = small_envelope();
    const std::string path = "/tmp/monokda_test_envelope_" + std::to_string(::getpid()) + ".json";
    write_envelope(path, env);
    Envelope back = read_envelope(path);
    CHECK(back.fixture_digest == env.fixture_digest);
    CHECK(back.fixture_digest == inputs_digest(small_prepared().input));
    CHECK(back.orders == env.orders);
    CHECK(back.rel_margin == env.rel_margin);
    CHECK(back.plan_order == env.plan_order);
    CHECK(back.plan_order_reference_digest == env.plan_order_reference_digest);
    CHECK(back.plan_order_distance.size() == env.plan_order_distance.size());
    REQUIRE(back.outputs.size() == env.outputs.size());
    for (size_t i = 0; i < env.outputs.size(); ++i) {
        CHECK(back.outputs[i].name == env.outputs[i].name);
        CHECK(back.outputs[i].max_rel_l2 == env.outputs[i].max_rel_l2);
        CHECK(back.outputs[i].min_frac_identical == env.outputs[i].min_frac_identical);
        CHECK(back.outputs[i].max_row_ulp == env.outputs[i].max_row_ulp);
        CHECK(back.outputs[i].per_order.size() == env.outputs[i].per_order.size());
    }
    {
        std::ofstream f(path);
        f << "{\"format\": \"monokda-envelope\", \"format_version\": 1}";
    }
    CHECK_THROWS_AS(read_envelope(path), BadInput);
    {
        std::ofstream f(path);
        f << "not json";
    }
    CHECK_THROWS_AS(read_envelope(path), BadInput);
    std::remove(path.c_str());
    CHECK_THROWS_AS(read_envelope(path), BadInput);
}

// (the envelope detector's own plant, tests/emulator/test_detectors.cpp: it alone sees this)
TEST_CASE("an envelope too tight for the plan's order gives OUT_OF_ENVELOPE; another fixture's is refused") {
    Envelope tight = small_envelope();
    for (auto& b : tight.outputs) {
        b.max_rel_l2 = 0;
        b.max_abs = 0;
        b.max_row_ulp = 0;
    }
    tight.rel_margin = 0;
    tight.row_ulp_margin = 0;
    const std::string path = "/tmp/monokda_test_tight_" + std::to_string(::getpid()) + ".json";
    write_envelope(path, tight);
    EmulateOptions o = small_options();
    o.envelope_orders = 0;
    o.envelope_in = path;
    Prepared p = prepare(o, 1);
    EmulateResult r = emulate(p, o);
    INFO(r.report);
    CHECK(r.verdict == Verdict::OUT_OF_ENVELOPE);
    CHECK(r.run.detector == Detector::envelope);  // the outputs equal the reference: no other detector sees it
    CHECK(contains(r.report, "results: all 10 outputs bit-identical"));
    CHECK(contains(r.report, "OUTSIDE"));
    CHECK(contains(r.run.detail, "ssm_state"));  // the state is never identical to the f64 oracle
    o.detectors = DetectorSet{}.without(Detector::envelope);
    const EmulateResult off = emulate(p, o);
    INFO(off.report);
    CHECK(off.verdict == Verdict::PASS);
    CHECK(contains(off.report, "OUTSIDE"));  // still measured and reported, no longer a verdict

    EmulateOptions other = o;
    other.fixture.seed = 2;
    CHECK_THROWS_AS(prepare(other, 1), BadInput);
    std::remove(path.c_str());
}

namespace {

// A distance for every envelope output with each metric at `scale` of `env`'s bound (the rule of
// check_distances, docs/emulator.md: measured worst with the margins; a distance of no stated size,
// so the slack in elements does not apply; no spread where the bounds were set by hand).
std::vector<TensorDiff> distances_at(const Envelope& env, double scale) {
    std::vector<TensorDiff> out;
    for (const auto& b : env.outputs) {
        TensorDiff d;
        d.name = b.name;
        const double spread = std::max(0.0, b.max_frac_identical - b.min_frac_identical);
        d.frac_identical = 1 - scale * (1 - (b.min_frac_identical - std::max(env.identical_margin, spread)));
        d.numel = 1000000;  // the floor is judged as a count: large enough that the slack of 4 is below the margin
        d.differing = std::llround((1 - d.frac_identical) * double(d.numel));
        d.max_row_ulp = b.name == "ssm_state" ? 0 : scale * std::max(b.max_row_ulp + env.row_ulp_margin, 1.0);
        d.rel_l2 = scale * b.max_rel_l2 * (1 + env.rel_margin);
        d.max_abs = scale * b.max_abs * (1 + env.rel_margin);
        out.push_back(d);
    }
    return out;
}

// Bounds of the size a k3 fixture measures (the small fixture's bf16 outputs never leave the
// oracle, so there would be nothing to widen): the planted checks need a spread on every output.
Envelope k3_like_envelope() {
    Envelope env;
    const double worst[7][4] = {// identical, row ulp, rel-L2, max abs
                                {0.9990, 0.25, 9.6e-05, 0.0078}, {0.944, 1, 6.2e-04, 0.0156}, {0.80, 1, 1.3e-03, 0.0156},
                                {0.988, 0.5, 5.6e-04, 0.0156},   {0.79, 1, 1.5e-03, 1.2e-04}, {0.79, 0.5, 1.8e-03, 0.0078},
                                {0.20, 0, 1.9e-04, 0.0041}};
    for (int k = 0; k < 7; ++k) {
        EnvelopeBound b;
        b.name = kEnvelopeOutputs[k];
        b.min_frac_identical = b.max_frac_identical = worst[k][0];
        b.max_row_ulp = worst[k][1];
        b.max_rel_l2 = worst[k][2];
        b.max_abs = worst[k][3];
        env.outputs.push_back(b);
    }
    return env;
}

}  // namespace

TEST_CASE("the matrix-unit widening: bounds × spread (row ulp + floor) downstream of in_proj, x untouched") {
    const Envelope env = k3_like_envelope();
    const Widening w = matrix_unit_in_proj_widening();
    const Envelope wide = widen(env, w);
    CHECK(env.widening.empty());
    CHECK(contains(wide.widening, "matrix unit"));
    // the documented values (envelope.hpp, docs/kernel.md); another needs the H200 sweep again
    CHECK(w.spread == doctest::Approx(4.0 / 3));
    CHECK(w.row_ulp_floor == 0.5);
    REQUIRE(wide.outputs.size() == env.outputs.size());
    for (size_t k = 0; k < env.outputs.size(); ++k) {
        const EnvelopeBound &b = env.outputs[k], &v = wide.outputs[k];
        INFO(b.name);
        const double s = b.name == "x" ? 1 : w.spread;
        CHECK(v.max_rel_l2 == doctest::Approx(s * b.max_rel_l2));
        CHECK(v.max_abs == doctest::Approx(s * b.max_abs));
        CHECK(1 - v.min_frac_identical == doctest::Approx(std::min(1.0, s * (1 - b.min_frac_identical))));
        CHECK(v.max_row_ulp == doctest::Approx(b.name == "ssm_state" ? 0 : b.name == "x" ? b.max_row_ulp : w.spread * b.max_row_ulp + w.row_ulp_floor));
        CHECK(v.per_order.size() == b.per_order.size());  // the measurements stay as measured
    }

    // just inside every widened bound: inside the widened envelope; outside the measured one for
    // every widened output (the widening is what lets it pass), inside it for x
    const std::vector<TensorDiff> in = distances_at(wide, 0.99);
    for (const auto& c : check_distances(wide, in)) {
        INFO(c.name, ": ", c.why);
        CHECK(c.inside);
    }
    for (const auto& c : check_distances(env, in)) {
        INFO(c.name, ": ", c.why);
        CHECK(c.inside == (c.name == "x"));
    }

    // just outside one widened bound, one metric at a time: that output alone is reported outside
    // (bf16 outputs are judged on identical and row ulp, ssm_state on rel-L2 and max abs)
    const std::vector<TensorDiff> over = distances_at(wide, 1.01);
    for (size_t k = 0; k < wide.outputs.size(); ++k) {
        const bool state = wide.outputs[k].name == "ssm_state";
        for (const char* metric : state ? std::vector<const char*>{"rel-L2", "max abs"} : std::vector<const char*>{"identical", "row ulp"}) {
            const std::string m = metric;
            if (m == "identical" && wide.outputs[k].min_frac_identical - wide.identical_margin <= 0) continue;
            std::vector<TensorDiff> d = in;
            if (m == "identical") d[k].frac_identical = over[k].frac_identical, d[k].differing = over[k].differing;
            if (m == "row ulp") d[k].max_row_ulp = over[k].max_row_ulp;
            if (m == "rel-L2") d[k].rel_l2 = over[k].rel_l2;
            if (m == "max abs") d[k].max_abs = over[k].max_abs;
            const auto checks = check_distances(wide, d);
            for (size_t j = 0; j < checks.size(); ++j) {
                INFO(wide.outputs[k].name, " ", m, " -> ", checks[j].name, ": ", checks[j].why);
                CHECK(checks[j].inside == (j != k));
                if (j == k) CHECK(contains(checks[j].why, m));
            }
        }
    }
}

TEST_CASE("the matrix-unit widening on output files: planted g1 just inside and just outside its bounds") {
    // the candidate is the oracle itself with g1 changed; g1's measured worst is set to 5 %
    // differing (every order alike: no spread) and 1 ulp at row scale (the small fixture's bf16
    // outputs never leave the oracle), so the planted metric alone decides
    const TensorFile& oracle = small_oracle();
    Envelope env = small_envelope();
    for (auto& b : env.outputs)
        if (b.name == "g1") b.min_frac_identical = b.max_frac_identical = 0.95, b.max_row_ulp = 1, b.max_rel_l2 = 1, b.max_abs = 1e9;
    const Widening w = matrix_unit_in_proj_widening();
    const Envelope wide = widen(env, w);
    const Tensor& g1 = oracle.get("g1");
    const int64_t n = g1.numel(), row = g1.shape.back();
    REQUIRE(n >= 200);
    auto verdict = [&](const Envelope& e, const std::vector<bf16>& v) {
        TensorFile cand = oracle;
        cand.tensors["g1"] = Tensor::of(DType::BF16, g1.shape, v);
        for (const auto& c : check_envelope(e, cand, oracle)) {
            INFO(c.name, ": ", c.why);
            if (c.name != "g1") CHECK(c.inside);
            if (c.name == "g1") return c;
        }
        return EnvelopeCheck{};
    };
    // identical: the widened floor allows spread × 5 % + the more of 0.2 % and 4 elements (no
    // spread between orders here), each 1 ulp off
    const double margin = std::max(wide.identical_margin, 4.0 / double(n));
    const int64_t most = int64_t(std::floor((w.spread * 0.05 + margin) * double(n) + 1e-9));
    auto differing = [&](int64_t k) {
        std::vector<bf16> v = g1.as<bf16>();
        for (int64_t i = 0; i < k; ++i) v[size_t(i)].bits ^= 1;  // one ulp in its own binade
        return v;
    };
    CHECK(verdict(wide, differing(most)).inside);
    const EnvelopeCheck over = verdict(wide, differing(most + 1));
    CHECK_FALSE(over.inside);
    CHECK(contains(over.why, "identical"));
    CHECK_FALSE(verdict(env, differing(most)).inside);  // the measured bounds alone refuse it
    // row ulp: the widened bound is spread × 1 + floor, + 0.5 margin, in ulps at row scale (2.33 for
    // spread 4/3: 2 ulps pass, 3 do not); the planted element is its row's largest, so its own ulp
    // is the row's
    const std::vector<bf16> base = g1.as<bf16>();
    int64_t top = 0;
    for (int64_t i = 1; i < row; ++i)
        if (std::fabs(base[size_t(i)].to_float()) > std::fabs(base[size_t(top)].to_float())) top = i;
    REQUIRE((base[size_t(top)].bits & 0x7f) < 0x7f - 4);  // k ulps up stay in the binade
    auto off_by = [&](int k) {
        std::vector<bf16> v = base;
        v[size_t(top)].bits = uint16_t(v[size_t(top)].bits + k);
        return v;
    };
    const int k = int(std::floor(w.spread * 1 + w.row_ulp_floor + wide.row_ulp_margin + 1e-9));
    REQUIRE(k >= 2);  // one ulp more than the measured bounds allow (1 + 0.5)
    CHECK(verdict(wide, off_by(k)).inside);
    const EnvelopeCheck far = verdict(wide, off_by(k + 1));
    CHECK_FALSE(far.inside);
    CHECK(contains(far.why, "row ulp"));
    CHECK_FALSE(verdict(env, off_by(k)).inside);
}

TEST_CASE("a widening is recorded in the file and refuses to narrow or to name an unknown output") {
    const Envelope wide = widen(small_envelope(), matrix_unit_in_proj_widening());
    const std::string path = "/tmp/monokda_test_widened_" + std::to_string(::getpid()) + ".json";
    write_envelope(path, wide);
    const Envelope back = read_envelope(path);
    std::remove(path.c_str());
    CHECK(back.widening == wide.widening);
    CHECK(back.find("g1")->max_rel_l2 == wide.find("g1")->max_rel_l2);
    CHECK(contains(format_envelope_checks(check_distances(wide, distances_at(wide, 0.5)), wide), "bounds widened"));
    Widening narrow = matrix_unit_in_proj_widening();
    narrow.spread = 0.5;
    CHECK_THROWS_AS(widen(small_envelope(), narrow), BadInput);
    Widening unknown = matrix_unit_in_proj_widening();
    unknown.outputs.push_back("prefix_out");
    CHECK_THROWS_AS(widen(small_envelope(), unknown), BadInput);
}
