// The timeline SVG: one lane per CTA, every role and stage in it, and the wait spans.
#include <doctest/doctest.h>

#include "emu_util.hpp"
#include "emulator/timeline.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("one lane per CTA, every role and stage drawn, spins shown") {
    Prepared& p = small_prepared();
    EmulateOptions o = small_options();
    o.timeline = true;
    o.steps = 2;
    EmulateResult r = emulate(p, o);
    REQUIRE(r.verdict == Verdict::PASS);
    const std::string svg = timeline_svg(r.plan, r.run, "test");
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(contains(svg, "</svg>"));
    CHECK(count(svg, "<g class=\"lane\"") == size_t(p.plan.blocks()));
    for (int c = 0; c < p.plan.blocks(); ++c) CHECK(contains(svg, "data-cta=\"" + std::to_string(c) + "\""));
    CHECK(count(svg, "<g ") == count(svg, "</g>"));
    for (const char* role : {"attn", "gemv", "kda"}) CHECK(contains(svg, std::string("data-role=\"") + role + "\""));
    // every stage of the plan appears as a run box
    for (const char* op : {"ATTN_PART", "ATTN_GATE", "ATTN_MIX", "ATTN_X", "GEMV_PREFETCH", "GEMV_GROUP", "KDA_LOAD",
                           "KDA_CONV", "KDA_REC", "KDA_NORM"})
        CHECK(contains(svg, std::string("runs ") + op));
    CHECK(count(svg, "class=\"wait\"") > 10);
    CHECK(contains(svg, "(step 1,"));  // both launches drawn
    // a box per instruction per step
    size_t instrs = 0;
    for (int c = 0; c < p.plan.blocks(); ++c) instrs += p.plan.instrs(c).size();
    CHECK(count(svg, "class=\"run\"") == 2 * instrs);
}
