// The envelope as a sample: a candidate exactly at the floor is inside (counts, not rounded
// fractions), and a candidate outside the default sample of orders is judged against every order
// before it fails, with the order it declares measured beside them (verify::envelope_for; docs/verify.md).
#include <doctest/doctest.h>

#include <string>

#include "core/safetensors.hpp"
#include "emulator/envelope.hpp"
#include "properties/agreement.hpp"
#include "properties/target_emulator.hpp"
#include "verify/same.hpp"

using namespace monokda;

TEST_CASE("a candidate exactly at the identical floor is inside; one element more is not") {
    // n and d where (n - d)/n - 4/n rounds above (n - d - 4)/n in double: a fraction compare fails it
    const int64_t n = 7392, d = 37;
    emu::Envelope env;
    env.identical_margin = 0;
    env.identical_slack = 4;
    env.outputs.push_back(emu::EnvelopeBound{"o", {}, 0, 1, 0, 0});
    env.outputs[0].min_frac_identical = env.outputs[0].max_frac_identical = double(n - d) / double(n);
    auto with_differing = [&](int64_t k) {
        TensorDiff t;
        t.name = "o";
        t.numel = n;
        t.differing = k;
        t.frac_identical = double(n - k) / double(n);
        return emu::check_distances(env, {t})[0];
    };
    CHECK(with_differing(d + 4).inside);
    const emu::EnvelopeCheck over = with_differing(d + 5);
    CHECK_FALSE(over.inside);
    CHECK(over.why.find("identical") != std::string::npos);
}

TEST_CASE("a near-tie only the candidate's order flips: outside 12 orders, inside all of them") {
    // A shrunk fuzz case (small shape, R 1, L 2, nb 7): the emulator's order flips one x element
    // that no order of the default 12 flips, and that element moves 8 of proj's 192.
    const StepInputs in =
        StepInputs::from_file(read_safetensors(std::string(MONOKDA_SOURCE_DIR) + "/tests/verify/data/near_tie_fanout.safetensors"));
    const verify::Candidate c = verify::Candidate::all(props::emulator_target().run(in));

    verify::MeasuredEnvelope sample = verify::measure_envelope(in);
    REQUIRE(int(sample.envelope.orders.size()) < emu::max_envelope_order_count());
    const verify::Check* f = verify::first_failure(verify::envelope_checks(in, c, sample.envelope, sample.oracle));
    REQUIRE(f != nullptr);
    CHECK(f->name == "envelope.proj");

    const verify::MeasuredEnvelope m = verify::envelope_for(in, c, verify::InProj::exact);
    CHECK(int(m.envelope.orders.size()) == emu::max_envelope_order_count());
    CHECK(m.envelope.widening.find("re-measured") != std::string::npos);
    CHECK(verify::first_failure(verify::envelope_checks(in, c, m.envelope, m.oracle)) == nullptr);

    // an explicit order count is what the user asked for: no second measurement
    const verify::MeasuredEnvelope asked = verify::envelope_for(in, c, verify::InProj::exact, 12);
    CHECK(asked.envelope.orders.size() == 12);
    CHECK(verify::first_failure(verify::envelope_checks(in, c, asked.envelope, asked.oracle)) != nullptr);
}

TEST_CASE("the emulator's declared order is measured beside the sample: a plan order all 18 orders miss") {
    // A shrunk fuzz case (small shape): the emulator's plan order flips roundings that none of the
    // 18 listed orders flips, so its ssm_state lies far outside their spread. Its output is the
    // reference in that order, a reordering of the original path: inside by definition.
    const StepInputs in = StepInputs::from_file(
        read_safetensors(std::string(MONOKDA_SOURCE_DIR) + "/tests/verify/data/plan_order_outside_sample.safetensors"));
    props::Target emu = props::emulator_target();
    REQUIRE(emu.declared_order);
    const StepOutputs<float> out = emu.run(in);
    CHECK(props::check_envelope(emu, in, out).kind == props::Verdict::PASS);
    props::Target silent = emu;
    silent.declared_order = nullptr;
    const props::Verdict v = props::check_envelope(silent, in, out);
    CHECK(v.kind == props::Verdict::FAIL);
    CHECK(v.detail.find("envelope.") != std::string::npos);
}
