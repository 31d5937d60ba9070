// Each property catches the planted bug written for it, on a step where the reference passes it:
// the check can fail, and fails for the right reason.
#include <doctest/doctest.h>

#include <set>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
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

TEST_CASE("planted bugs are unknown by a wrong name") {
    CHECK_THROWS_AS(planted_target("no-such-bug"), BadInput);
}
}
