// The launch order of the k3 plan's CTAs (docs/decisions/0004-cta-placement.md): attn and band lists
// paired by TPC at each shape, and the residency each launch order needs.
#include <doctest/doctest.h>

#include <set>
#include <vector>

#include "core/plan.hpp"
#include "core/plan_options.hpp"
#include "core/plan_policy.hpp"
#include "tests/core/plan_util.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_CASE("k3 placement: up to 15 rows attn and band TPC pairs alternate; from 16 rows a band shares its TPC with an attn CTA where one round of kda tasks reaches the band CTAs") {
    // 56 attn CTAs, bands past them up to 15 rows: always interleaved, two CTAs a run.
    // From 16 rows 112 attn CTAs, bands over every CTA: 96..144 kda tasks pair the 20 lists past them, one a run.
    struct Shape { int R, L; bool interleave; int width; };
    for (const Shape sh : {Shape{2, 4, true, 2},    // 96 chunk tasks: 40 on band CTAs
                           Shape{8, 1, true, 2},    // 96 head tasks
                           Shape{1, 1, true, 2},    // 48 chunk tasks, all on attn CTAs
                           Shape{1, 4, true, 2},    // 48 chunk tasks
                           Shape{4, 2, true, 2},    // 48 head tasks
                           Shape{12, 1, true, 2},   // 144 head tasks, more than one round
                           Shape{4, 4, false, 1},   // 16 rows, 192 chunk tasks, two a CTA: more than one round
                           Shape{2, 8, true, 1},    // 16 rows, 96 chunk tasks
                           Shape{16, 1, false, 1},  // 16 rows, 192 head tasks
                           Shape{3, 8, true, 1},    // 24 rows, 144 chunk tasks
                           Shape{8, 8, true, 1},    // 64 rows, 96 head tasks
                           Shape{12, 2, true, 1},   // 144 head tasks
                           Shape{7, 4, false, 1},   // 84 head tasks
                           Shape{4, 8, false, 1},   // 192 chunk tasks
                           Shape{64, 1, false, 1}}) {  // 768 head tasks
        Config c = k3();
        c.R = sh.R, c.L = sh.L, c.slots = c.S() + 1;
        CAPTURE(sh.R);
        CAPTURE(sh.L);
        const PlanParams pp = PlanPolicy::k3_for(c, 132);
        CHECK(pp.interleave_ctas == sh.interleave);
        CHECK(pp.interleave_width == sh.width);
    }
    const Plan p = Plan::build(k3(), PlanPolicy::k3_for(k3(), 132));
    REQUIRE(p.params().interleave_ctas);
    check_structure(p);
    std::set<int> lists;
    for (int b = 0; b < 132; ++b) {
        CAPTURE(b);
        // attn lists 2k, 2k + 1 on launch CTAs 4k, 4k + 1; band lists 56 + 2k, 56 + 2k + 1 on 4k + 2, 4k + 3
        const int run = b / 4, at = b % 4;
        const int want = b >= 112 ? b : at < 2 ? 2 * run + at : 56 + 2 * run + at - 2;
        CHECK(p.list_at(b) == want);
        CHECK(p.launch_cta_of(p.list_at(b)) == b);
        lists.insert(p.list_at(b));
        CHECK(p.first_role(p.list_at(b)) == (b < 112 && at < 2 ? Role::attn : Role::gemv));
    }
    CHECK(lists.size() == 132);
    // what the order is for: the H200 fills a GPC with 16 consecutive launch CTAs, so every aligned run
    // of 16 up to launch CTA 112 holds 8 band lists and 8 attn lists, and no TPC (launch CTAs 2k, 2k + 1)
    // mixes the roles
    for (int run = 0; run < 112 / 16; ++run) {
        int bands = 0;
        for (int b = 16 * run; b < 16 * run + 16; ++b) bands += p.first_role(p.list_at(b)) == Role::gemv;
        CHECK(bands == 8);
    }
    for (int k = 0; k < 66; ++k) CHECK(p.first_role(p.list_at(2 * k)) == p.first_role(p.list_at(2 * k + 1)));
    // the device gets the lists in launch order
    const std::vector<int32_t> w = p.serialize();
    REQUIRE(Plan::read_header(w).blocks == 132);  // the buffer holds what its header says
    const int32_t* begin = &w[sizeof(PlanHeader) / 4 + 2 * kMailboxCount];
    const int32_t* words = begin + 133;
    REQUIRE(begin[0] == 0);  // with each list's length required below, every index stays inside
    for (int b = 0; b < 132; ++b) {
        const auto& l = p.instrs(p.list_at(b));
        REQUIRE(begin[b + 1] - begin[b] == int(l.size()));
        for (size_t i = 0; i < l.size(); ++i) CHECK(words[4 * (begin[b] + int(i))] == l[i].op);
    }
    // residency in launch order: at one token the 48 chunk tasks sit on attn lists 0..47. In index order the
    // 56 attn CTAs are enough. Interleaved, attn list 55 starts as launch CTA 109, and no list finishes
    // before every attn list has run ATTN_PART (each gate waits for all 56 slices): 110 places. With 110,
    // attn lists 48..55 end after ATTN_X and free places for the bands past launch CTA 109, whose PROJ
    // groups the chunk tasks wait for.
    Config one = k3();
    one.R = 1, one.L = 1, one.slots = 2;
    PlanParams pp = PlanPolicy::k3_for(one, 132);
    REQUIRE(pp.interleave_ctas);
    REQUIRE(pp.interleave_width == 2);
    const Plan q = Plan::build(one, pp);
    CHECK(q.launch_cta_of(55) == 109);
    CHECK(q.min_residency() == 110);
    CHECK(q.finishing_ctas(109) < 132);
    apply_placement(pp, one, Placement::index);
    CHECK(Plan::build(one, pp).min_residency() == 56);
    CHECK(Plan::build(one, pp).n_paired() == 0);
    CHECK(p.n_paired() == 56);
    // an odd count of pairs: the last pair alternates CTA by CTA (attn list 2 on launch CTA 4, list A + 2 on 5)
    {
        Config sm = small();
        PlanParams ps = PlanPolicy::defaults_for(sm);
        ps.blocks = sm.D / ps.slice_width + 5;  // 5 lists past the attn CTAs: 5 pairs
        ps.interleave_ctas = true;
        ps.interleave_width = 2;
        const Plan o = Plan::build(sm, ps);
        const int A = o.n_attn_ctas(), P = o.n_paired();
        REQUIRE(P == 5);
        CAPTURE(A);
        std::set<int> seen;
        for (int b = 0; b < o.launch_blocks(); ++b) seen.insert(o.list_at(b));
        CHECK(int(seen.size()) == o.launch_blocks());
        for (int c = 0; c < P; ++c) {
            const int want = c < P - P % 2 ? 4 * (c / 2) + c % 2 : 2 * c;
            CHECK(o.launch_cta_of(c) == want);
            CHECK(o.launch_cta_of(A + c) == (c < P - P % 2 ? want + 2 : want + 1));
        }
        check_structure(o);
    }
    // from 16 rows two attn parts a slice leave 20 lists past the 112 attn CTAs: lists 112 + c pair with
    // attn lists c < 20, and attn lists 20..111 follow in order on launch CTAs 40..131
    Config rows24 = k3();
    rows24.R = 3, rows24.L = 8, rows24.slots = rows24.S() + 1;
    const Plan r = Plan::build(rows24, PlanPolicy::k3_for(rows24, 132));
    REQUIRE(r.params().attn_row_parts == 2);
    REQUIRE(r.params().gemv_every_cta);
    CHECK(r.n_paired() == 20);
    check_structure(r);
    for (int b = 0; b < 132; ++b) {
        CAPTURE(b);
        const int want = b >= 40 ? b - 20 : b % 2 == 0 ? b / 2 : 112 + b / 2;
        CHECK(r.list_at(b) == want);
        CHECK(r.launch_cta_of(want) == b);
        CHECK(r.first_role(r.list_at(b)) == (b % 2 == 1 && b < 40 ? Role::gemv : Role::attn));
    }
    CHECK(r.min_residency() <= 132);
}
