// The k3 and small plans' dependency structure (SPEC §4), checked independently of the plan's own
// checker where possible: counts come from the SPEC's arithmetic, producers are recounted from the
// lists (plan_util.hpp), hand-off guards named element by element.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/plan_policy.hpp"
#include "tests/core/plan_util.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_CASE("k3 plan with SPEC §4's 16-row chunks: 56 attn + 66 gemv CTAs, 393 row groups, 192 kda tasks") {
    PlanParams pp = PlanPolicy::preset("k3");
    pp.kda_chunk_rows = 16;  // the chunked layout: siblings hand q/k and Σō² partials across CTAs
    Plan p = Plan::build(k3(), pp);
    CHECK(p.n_attn() == 56);
    CHECK(!pp.gemv_every_cta);
    CHECK(p.gemv_span() == 76);
    CHECK(p.n_gemv() == 66);  // 65 bands of 6 and one of 3
    CHECK(p.n_groups() == 393);
    CHECK(p.n_chunks() == 8);
    CHECK(p.n_kda_tasks() == 2 * 12 * 8);
    // mailbox sizes from SPEC arithmetic: S = 8 rows, nb + 1 = 5 sources
    CHECK(p.entries(Mailbox::PART) == 8 * 5 * 56);
    CHECK(p.entries(Mailbox::WGT) == 8);
    CHECK(p.entries(Mailbox::MSQ) == 8 * 56);
    CHECK(p.entries(Mailbox::XRDY) == 56);
    CHECK(p.entries(Mailbox::PROJ) == 393);
    CHECK(p.entries(Mailbox::QK) == 2 * 12 * 8);
    CHECK(p.entries(Mailbox::ONRM) == 8 * 12 * 8);
    check_structure(p);

    // roles: CTAs 0..55 start with ATTN_PART of their own slice; gemv CTAs 56..121 with the prefetch
    // of the first group of their band (6 contiguous groups; the last band 3), 122..131 own none
    for (int cta = 0; cta < 56; ++cta) {
        CHECK(p.instrs(cta)[0].opcode() == Op::ATTN_PART);
        CHECK(p.instrs(cta)[0].a == cta);
    }
    CHECK(p.groups_per_gemv_cta() == 6);
    std::set<int> groups;
    for (int cta = 56; cta < 132; ++cta) {
        const auto& l = p.instrs(cta);
        REQUIRE(l.size() >= 2);  // a band, or (past the bands) kda tasks
        std::vector<int> band;
        for (const Instr& in : l)
            if (in.opcode() == Op::GEMV_GROUP) {
                CHECK(groups.insert(in.a).second);
                band.push_back(in.a);
            }
        const int first = (cta - 56) * 6;
        const size_t expect = size_t(std::max(0, std::min(6, 393 - first)));
        CHECK(band.size() == expect);
        for (size_t i = 0; i < band.size(); ++i) CHECK(band[i] == first + int(i));  // one contiguous band, in order
        if (expect > 0) {
            CHECK(l[0].opcode() == Op::GEMV_PREFETCH);  // weights issued before x exists
            CHECK(l[1].opcode() == Op::GEMV_GROUP);
            CHECK(l[0].a == l[1].a);
        } else {
            CHECK(l[0].opcode() == Op::KDA_LOAD);
        }
    }
    CHECK(groups.size() == 393);
    // the gate of row t runs on CTA t mod 56, after that CTA's partials
    for (int row = 0; row < 8; ++row) CHECK(p.producer(p.wgt(row)).cta == row % 56);
    // every kda task runs exactly once, each as LOAD, CONV, REC, NORM in order, after the CTA's first role
    std::map<std::tuple<int, int, int>, int> tasks;
    for (int cta = 0; cta < 132; ++cta) {
        const auto& l = p.instrs(cta);
        bool in_kda = false;
        for (size_t i = 0; i < l.size(); ++i) {
            if (role_of(l[i].opcode()) == Role::kda) in_kda = true;
            else CHECK_FALSE(in_kda);
            if (l[i].opcode() == Op::KDA_LOAD) {
                REQUIRE(i + 3 < l.size());
                CHECK(l[i + 1].opcode() == Op::KDA_CONV);
                CHECK(l[i + 2].opcode() == Op::KDA_REC);
                CHECK(l[i + 3].opcode() == Op::KDA_NORM);
                tasks[{l[i].a, l[i].b, l[i].c}]++;
            }
        }
    }
    CHECK(tasks.size() == 192);
    for (auto& [k, n] : tasks) CHECK(n == 1);
    // residency (CTAs admitted in index order): every attn CTA waits for every slice's partials,
    // and attn CTAs' kda tasks wait for gemv groups, so more than the 56 attn CTAs must be resident
    const int need = p.min_residency();
    CHECK(need > 56);
    CHECK(need <= 132);
    CHECK(p.finishing_ctas(need) == 132);
    CHECK(p.finishing_ctas(need - 1) < 132);
    CHECK(p.finishing_ctas(56) < 132);
}

TEST_CASE("k3 preset: one kda task a head, nothing handed between a head's chunks") {
    Plan p = Plan::build(k3(), PlanPolicy::preset("k3"));
    CHECK(p.params().kda_chunk_rows == 128);
    CHECK(p.n_chunks() == 1);
    CHECK(p.qk_share() == 128);
    CHECK(p.n_kda_tasks() == 2 * 12);
    CHECK(p.entries(Mailbox::QK) == 2 * 12);
    CHECK(p.entries(Mailbox::ONRM) == 8 * 12);
    check_structure(p);
    int tasks = 0;
    for (int cta = 0; cta < p.blocks(); ++cta)
        for (int i = 0; i < int(p.instrs(cta).size()); ++i) {
            const Instr in = p.instrs(cta)[size_t(i)];
            if (role_of(in.opcode()) != Role::kda) continue;
            tasks += in.opcode() == Op::KDA_LOAD;
            CHECK(p.kda_cta(in.a, in.b, in.c) == cta);
            for (const Plan::Wait& w : p.waits(cta, i)) CHECK(w.entry.box == Mailbox::PROJ);  // no sibling to wait for
            if (in.opcode() == Op::KDA_CONV) CHECK(p.waits(cta, i).size() == 24);  // its q, k and v rows: 3 x 8 groups
            if (in.opcode() == Op::KDA_NORM) CHECK(p.waits(cta, i).size() == 8);   // its g2 columns
        }
    CHECK(tasks == 24);
    // task t on CTA t: the 24 tasks sit on attn CTAs 0..23; attn CTAs 24..55 hold none, and their
    // places free for the gemv CTAs once the seam is done, so the 56 attn CTAs are enough
    CHECK(p.min_residency() == 56);
    CHECK(p.finishing_ctas(p.min_residency()) == 132);
}

TEST_CASE("k3 plan above 16 rows: two attn CTAs a slice, in_proj bands of 3 over every CTA, the attn CTAs' after their ATTN_X") {
    Config c = k3();
    c.R = 8, c.L = 4, c.slots = c.S() + 1;
    const PlanParams pp = PlanPolicy::k3_for(c, 132);
    REQUIRE(pp.gemv_every_cta);
    Plan p = Plan::build(c, pp);
    CHECK(p.n_attn() == 56);
    CHECK(p.attn_parts() == 2);
    CHECK(p.n_attn_ctas() == 112);
    CHECK(p.gemv_span() == 132);
    CHECK(p.groups_per_gemv_cta() == 3);
    CHECK(p.n_gemv() == 131);
    check_structure(p);
    CHECK(p.min_residency() <= 132);
    // band b on CTA (112 + b) mod 132: CTAs 112..131 own bands 0..19 and start with the prefetch of
    // their band's first group (weights issued before x exists), CTAs 0..110 own bands 20..130 right
    // after their ATTN_X, and CTA 111 owns none
    std::set<int> groups;
    for (int cta = 0; cta < 132; ++cta) {
        CAPTURE(cta);
        const auto& l = p.instrs(cta);
        if (cta < 112) {  // slice cta mod 56, rows 0..15 or 16..31
            REQUIRE(l[0].opcode() == Op::ATTN_PART);
            CHECK(l[0].a == cta % 56);
            CHECK(l[0].b == cta / 56);
            CHECK(p.attn_row_begin(l[0].b) == 16 * (cta / 56));
        }
        std::vector<int> band;
        int at = -1;  // list position of the band's first instruction
        for (int i = 0; i < int(l.size()); ++i)
            if (l[size_t(i)].opcode() == Op::GEMV_GROUP) {
                CHECK(groups.insert(l[size_t(i)].a).second);
                band.push_back(l[size_t(i)].a);
            } else if (l[size_t(i)].opcode() == Op::GEMV_PREFETCH && at < 0) {
                at = i;
            }
        const int b = cta >= 112 ? cta - 112 : cta + 20, first = b * 3;
        const size_t expect = size_t(std::max(0, std::min(3, 393 - first)));
        CHECK(band.size() == expect);
        for (size_t i = 0; i < band.size(); ++i) CHECK(band[i] == first + int(i));  // one contiguous band, in order
        if (expect == 0) continue;
        if (cta >= 112) {
            CHECK(at == 0);
        } else {
            REQUIRE(at >= 1);
            CHECK(l[size_t(at - 1)].opcode() == Op::ATTN_X);
        }
        CHECK(l[size_t(at + 1)].opcode() == Op::GEMV_GROUP);
        CHECK(l[size_t(at)].a == l[size_t(at + 1)].a);
    }
    CHECK(groups.size() == 393);
}

TEST_CASE("small presets and other CTA counts stay sound") {
    // blocks, then the 18 groups' bands past the slices (groups a band, CTAs owning one) and over
    // every CTA
    const int expect[][5] = {{17, 18, 1, 2, 9}, {18, 9, 2, 1, 18}, {24, 3, 6, 1, 18}, {40, 1, 18, 1, 18}, {200, 1, 18, 1, 18}};
    for (const auto& e : expect)
        for (bool every : {false, true}) {
            const int blocks = e[0];
            CAPTURE(blocks);
            CAPTURE(every);
            PlanParams pp = PlanPolicy::preset("small");
            pp.blocks = blocks;
            pp.gemv_every_cta = every;
            Plan p = Plan::build(small(), pp);
            CHECK(p.n_attn() == 16);
            CHECK(p.n_groups() == 18);
            CHECK(p.groups_per_gemv_cta() == e[every ? 3 : 1]);
            CHECK(p.n_gemv() == e[every ? 4 : 2]);
            check_structure(p);
            CHECK(p.min_residency() <= blocks);
        }
    PlanParams mi = PlanPolicy::preset("k3");
    mi.blocks = 256;
    check_structure(Plan::build(k3(), mi));
}

TEST_CASE("the guard of a hand-off element: XRDY of its slice and part, PROJ of its group, QK of the chunk that makes it") {
    Config c = k3();
    c.R = 3, c.L = 8;  // 24 rows: two attn parts a slice
    PlanParams pp = PlanPolicy::k3_for(c, 132);
    REQUIRE(pp.attn_row_parts == 2);
    REQUIRE(pp.kda_chunk_rows == 32);
    const Plan p = Plan::build(c, pp);
    MailboxRef g{Mailbox::count, 0};
    CHECK(p.guard_of(HandOff::x, 13, 3 * 128 + 5, g));
    CHECK(g == p.xrdy(3, 1));
    CHECK(p.guard_of(HandOff::proj, 0, 40, g));
    CHECK(g == p.proj(2));
    const int E = c.E();
    CHECK(p.guard_of(HandOff::qkv, 9, E + 5 * 128 + 70, g));  // row 9: request 1; k of head 5, column 70: chunk 2
    CHECK(g == p.qk(1, 5, 2));
    CHECK(!p.guard_of(HandOff::qkv, 9, 2 * E + 3, g));        // v rows stay in their task
    CHECK(p.guard_of(HandOff::g1, 17, 7 * 128 + 127, g));     // request 2, head 7, column 127: chunk 3
    CHECK(g == p.qk(2, 7, 3));
    pp.kda_chunk_rows = 128;
    CHECK(!Plan::build(c, pp).guard_of(HandOff::g1, 17, 7 * 128 + 127, g));  // one task a head keeps its g1
    CHECK(p.handoff_cols(HandOff::g1) == E);
    CHECK(std::string(to_string(HandOff::g1)) == "g1");
}
