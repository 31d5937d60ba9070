// Each property catches the planted bug written for it, on a step where the reference passes it:
// the check can fail, and fails for the right reason.
#include <doctest/doctest.h>

#include <set>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
#include "properties/agreement.hpp"
#include "properties/planted_bugs.hpp"
#include "properties/properties.hpp"

using namespace monokda;
using namespace monokda::props;

TEST_SUITE("properties") {
TEST_CASE("every property fails on its planted bug") {
    Config c = Config::preset("small");
    c.R = 3; c.L = 4; c.nb = 3; c.block_write = true; c.seed = 21;
    StepInputs in = make_fixture(c);
    in.num_accepted = {4, 2, 3};
    const Target good = make_target("reference");
    const StepOutputs<float> good_out = good.run(in);
    std::set<std::string> covered;
    for (const PlantedBug& b : planted_bugs()) {
        const Target bad = planted_target(b.name);
        if (run_agreement(b.caught_by, good, in, good_out)) continue;  // the agreement checks' own test below
        const Property& p = find_property(b.caught_by);
        covered.insert(p.name);
        const Verdict ok = run_property(p, good, in, good_out, 5);
        const Verdict v = run_property(p, bad, in, bad.run(in), 5);
        INFO(b.name << " -> " << p.name << ": " << to_string(v.kind) << " " << v.detail);
        CHECK(ok.kind == Verdict::PASS);
        CHECK(v.kind == Verdict::FAIL);
        CHECK(!v.detail.empty());
    }
    for (const Property& p : all_properties()) {
        INFO(p.name << " has no planted bug");
        CHECK(covered.count(p.name) == 1);
    }
}

TEST_CASE("the agreement checks fail on their planted bugs, naming the stage; a tensor-core in_proj passes when declared") {
    Config c = Config::preset("small");
    // S = 128: 36864 proj elements; 0.3 % of them is 110, 99.9 % allows 59, 99.5 % 240
    c.R = 16; c.L = 8; c.nb = 3; c.seed = 23;
    const StepInputs in = make_fixture(c);
    const Target good = make_target("reference");
    const StepOutputs<float> good_out = good.run(in);
    for (const char* check : {"reference-stages", "oracle", "envelope"}) {
        const Verdict ok = *run_agreement(check, good, in, good_out);
        INFO(check, ": ", ok.detail);
        CHECK(ok.kind == Verdict::PASS);
    }
    int covered = 0;
    for (const PlantedBug& b : planted_bugs()) {
        if (std::string(b.caught_by) != "reference-stages") continue;
        ++covered;
        Target bad = planted_target(b.name);
        const StepOutputs<float> out = bad.run(in);
        const Verdict v = *run_agreement(b.caught_by, bad, in, out);
        INFO(b.name, ": ", to_string(v.kind), " ", v.detail);
        CHECK(v.kind == Verdict::FAIL);
        const std::string stage = std::string(b.name) == "conv-acc-rounded" ? "stage.qkv: " : "stage.proj: ";
        CHECK(v.detail.rfind(stage, 0) == 0);  // the first failing check is that stage's
        if (std::string(b.name) == "conv-acc-rounded") {
            const Verdict e = check_envelope(bad, in, out);  // and free-running, the envelope sees it too
            INFO("envelope: ", e.detail);
            CHECK(e.kind == Verdict::FAIL);
            CHECK(e.detail.rfind("envelope.qkv: ", 0) == 0);
        } else {
            bad.tensor_core_in_proj = true;
            for (const char* check : {"reference-stages", "envelope"}) {
                const Verdict tc = *run_agreement(check, bad, in, out);
                INFO(check, " with a tensor-core in_proj: ", tc.detail);
                CHECK(tc.kind == Verdict::PASS);
            }
        }
    }
    CHECK(covered == 2);
}

TEST_CASE("planted bugs are unknown by a wrong name") {
    CHECK_THROWS_AS(planted_target("no-such-bug"), BadInput);
}
}
