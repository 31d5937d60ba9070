// Bad plan parameters are refused naming the field, and the plan's structural checker fires on each
// planted plan bug, naming it.
#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/plan_options.hpp"
#include "core/plan_policy.hpp"
#include "tests/core/plan_util.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_CASE("plan parameters are validated, naming the field") {
    auto bad = [](PlanParams pp, const char* field) {
        try {
            Plan::build(k3(), pp);
            FAIL("accepted bad plan parameters");
        } catch (const BadInput& e) {
            CHECK(std::string(e.what()).find(field) != std::string::npos);
        }
    };
    PlanParams p = PlanPolicy::preset("k3");
    p.blocks = 56; bad(p, "blocks");
    p = PlanPolicy::preset("k3"); p.slice_width = 100; bad(p, "slice_width");
    p = PlanPolicy::preset("k3"); p.gemv_group_rows = 7; bad(p, "gemv_group_rows");
    p = PlanPolicy::preset("k3"); p.kda_chunk_rows = 0; bad(p, "kda_chunk_rows");
    p = PlanPolicy::preset("k3"); p.kda_chunk_rows = 3; bad(p, "kda_chunk_rows");
    p = PlanPolicy::preset("k3"); p.attn_row_parts = 0; bad(p, "attn_row_parts");
    p = PlanPolicy::preset("k3"); p.attn_row_parts = 9; bad(p, "attn_row_parts");  // the k3 config has 8 rows
    p = PlanPolicy::preset("k3"); p.attn_row_parts = 3; bad(p, "blocks must exceed the attn CTAs");  // 168 of 132
    CHECK_THROWS_AS(PlanPolicy::preset("h100"), BadInput);
}

TEST_CASE("the structural checker fires on planted plan bugs") {
    Plan p = Plan::build(small(), PlanPolicy::preset("small"));
    {  // off-by-one slice ownership: CTA 3 computes slice 4's partials
        Plan q = p;
        q.set_instr(3, 0, {int32_t(Op::ATTN_PART), 4, 0, 0});
        auto probs = q.structural_problems();
        bool two = false, none = false;
        for (auto& s : probs) {
            two |= s.find("PART[row 0][src 0][slice 4] has two producers") != std::string::npos;
            none |= s.find("PART[row 0][src 0][slice 3] has no producer") != std::string::npos;
        }
        CHECK(two);
        CHECK(none);
    }
    {  // a part's rows claimed by the other part too: CTA 16 + 3 (slice 3, part 1) runs part 0's partials
        PlanParams pp = PlanPolicy::preset("small");
        pp.blocks = 40, pp.attn_row_parts = 2;
        Plan q = Plan::build(small(), pp);
        q.set_instr(16 + 3, 0, {int32_t(Op::ATTN_PART), 3, 0, 0});
        bool two = false, none = false;
        for (auto& s : q.structural_problems()) {
            two |= s.find("PART[row 0][src 0][slice 3] has two producers") != std::string::npos;
            none |= s.find("PART[row 4][src 0][slice 3] has no producer") != std::string::npos;
        }
        CHECK(two);
        CHECK(none);
        q.set_instr(16 + 3, 0, {int32_t(Op::ATTN_PART), 3, 2, 0});  // a part past the plan's
        bool range = false;
        for (auto& s : q.structural_problems()) range |= s.find("operands out of range") != std::string::npos;
        CHECK(range);
    }
    {  // a kda instruction's operands are checked as such, not by whether it waits for anything
        Config one = k3();
        one.R = 1, one.L = 1, one.slots = 2;
        Plan q = Plan::build(one, PlanPolicy::k3_for(one, 132));
        REQUIRE(q.structural_problems().empty());
        const int cta = q.kda_cta(0, 3, 0);
        int at = -1;
        for (int i = 0; i < int(q.instrs(cta).size()); ++i)
            if (q.instrs(cta)[size_t(i)].opcode() == Op::KDA_NORM) at = i;
        REQUIRE(at >= 0);
        q.set_instr(cta, at, {int32_t(Op::KDA_NORM), 0, 12, 0});  // head 12 of 12
        bool range = false;
        for (auto& s : q.structural_problems())
            range |= s.find("KDA_NORM(r 0, h 12, chunk 0): operands out of range") != std::string::npos;
        CHECK(range);
        // the instructions that wait for nothing and produce nothing are checked too
        q.set_instr(cta, at, {int32_t(Op::KDA_LOAD), 0, 12, 0});
        bool load = false;
        for (auto& s : q.structural_problems())
            load |= s.find("KDA_LOAD(r 0, h 12, chunk 0): operands out of range") != std::string::npos;
        CHECK(load);
        Plan g = Plan::build(one, PlanPolicy::k3_for(one, 132));
        const int band = g.gemv_cta(0);
        REQUIRE(g.instrs(band)[0].opcode() == Op::GEMV_PREFETCH);
        g.set_instr(band, 0, {int32_t(Op::GEMV_PREFETCH), g.n_groups(), 0, 0});
        bool prefetch = false;
        for (auto& s : g.structural_problems()) prefetch |= s.find("operands out of range") != std::string::npos;
        CHECK(prefetch);
    }
    {  // apply_placement: the rule for the parameters as they stand, or as told
        Config c8 = k3();
        c8.R = 8, c8.L = 1, c8.slots = 9;
        PlanParams pp8 = PlanPolicy::k3_for(c8, 132);
        REQUIRE(pp8.interleave_ctas);
        REQUIRE(pp8.interleave_width == 2);
        apply_placement(pp8, c8, Placement::index);
        CHECK_FALSE(pp8.interleave_ctas);
        apply_placement(pp8, c8, Placement::by_plan);
        CHECK(pp8.interleave_ctas);
        CHECK(pp8.interleave_width == 2);
        Config c1 = k3();
        c1.R = 1, c1.L = 1, c1.slots = 2;
        PlanParams pp1 = PlanPolicy::k3_for(c1, 132);
        apply_placement(pp1, c1, Placement::paired);
        CHECK(pp1.interleave_ctas);
        CHECK(Plan::build(c1, pp1).n_paired() == 56);
    }
    {  // a missing XRDY store: drop ATTN_X of slice 5
        Plan q = p;
        int i = 0;
        while (q.instrs(5)[size_t(i)].opcode() != Op::ATTN_X) ++i;
        q.erase_instr(5, i);
        auto probs = q.structural_problems();
        REQUIRE_FALSE(probs.empty());
        CHECK(probs[0].find("XRDY[slice 5] has no producer") != std::string::npos);
    }
    {  // a CTA waiting for what it produces only later: the mix before the gate on CTA 0
        Plan q = p;
        Instr gate = q.instrs(0)[1], mix = q.instrs(0)[2];
        REQUIRE(gate.opcode() == Op::ATTN_GATE);
        REQUIRE(mix.opcode() == Op::ATTN_MIX);
        q.set_instr(0, 1, mix);
        q.set_instr(0, 2, gate);
        bool later = false;
        for (auto& s : q.structural_problems()) later |= s.find("which only it produces, later") != std::string::npos;
        CHECK(later);
    }
    {  // circular wait across CTAs: sibling chunks queued behind each other's siblings
        Plan q = p;
        // CTA a: (0,0,0) then (0,1,1); CTA b: (0,1,0) then (0,0,1)
        const int a = q.kda_cta(0, 0, 0), b = q.kda_cta(0, 1, 0);
        REQUIRE(a != b);
        REQUIRE(move_kda_task(q, 0, 1, 1, a) == 4);
        REQUIRE(move_kda_task(q, 0, 0, 1, b) == 4);
        CHECK(q.finishing_ctas(q.blocks()) < q.blocks());
        auto probs = q.structural_problems();
        for (auto& s : probs) MESSAGE(s);
        REQUIRE(probs.size() == 1);
        CHECK(probs[0].find("circular wait") != std::string::npos);
    }
}
