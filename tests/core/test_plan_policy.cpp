// How the plan follows the step (core/plan_policy.hpp): in_proj bands, kda task shape, the attn
// role's row parts and the reduction order, each at the shapes on both sides of its threshold.
#include <doctest/doctest.h>

#include "core/plan.hpp"
#include "core/plan_policy.hpp"
#include "tests/core/plan_util.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_CASE("k3's in_proj bands follow the step: past the slices up to 15 rows, over every CTA from 16") {
    Config c = k3();
    auto every = [&](int R, int L) {
        c.R = R, c.L = L;
        return PlanPolicy::k3_for(c, 132).gemv_every_cta;
    };
    CHECK(!every(1, 1));
    CHECK(!every(2, 4));
    CHECK(!every(15, 1));
    CHECK(!every(5, 3));
    CHECK(every(16, 1));
    CHECK(every(2, 8));
    CHECK(every(4, 4));
    CHECK(every(17, 1));
    CHECK(every(3, 8));
    CHECK(every(31, 1));
    CHECK(every(32, 1));
    CHECK(every(8, 4));
    CHECK(every(4, 8));
    CHECK(every(64, 1));
    c.R = 2, c.L = 4;
    CHECK(!PlanPolicy::defaults_for(c).gemv_every_cta);
    c.R = 8, c.L = 8;
    CHECK(PlanPolicy::defaults_for(c).gemv_every_cta);
    CHECK(!PlanPolicy::defaults_for(small()).gemv_every_cta);  // the small preset keeps SPEC §4's layout
}

TEST_CASE("k3's kda task shape follows the step: 32-row chunks, one a CTA at any L or two a CTA from L = 4, else one task a head") {
    Config c = k3();
    auto rows = [&](int R, int L, int blocks) {
        c.R = R, c.L = L;
        return PlanPolicy::k3_chunk_rows(c, blocks);
    };
    CHECK(rows(1, 2, 132) == 32);   // 48 chunk tasks <= 132 CTAs
    CHECK(rows(1, 8, 132) == 32);   // L does not change the task count
    CHECK(rows(1, 1, 132) == 32);   // one token too: a CTA each, the recurrence over 4 SMs
    CHECK(rows(3, 1, 132) == 128);  // 144 > 132, and one token is too few for two a CTA
    CHECK(rows(2, 4, 132) == 32);   // 96 <= 132
    CHECK(rows(3, 4, 132) == 32);   // 144 <= 2 · 132: two a CTA from 4 tokens on (kChunkMinLTwoACta)
    CHECK(rows(3, 2, 132) == 128);  // two a CTA over 2 tokens: a head is faster
    CHECK(rows(5, 8, 132) == 32);   // 240
    CHECK(rows(6, 4, 132) == 128);  // 288 > 2 · 132
    CHECK(rows(8, 8, 132) == 128);
    CHECK(rows(64, 1, 132) == 128);
    CHECK(rows(2, 2, 96) == 32);    // exactly one CTA each
    CHECK(rows(2, 2, 95) == 128);
    CHECK(rows(2, 4, 95) == 32);    // two on one CTA, over 4 tokens
    CHECK(rows(2, 1, 96) == 32);    // one token, one CTA each
    CHECK(rows(2, 1, 95) == 128);   // one token, two on a CTA
    CHECK(rows(5, 4, 256) == 32);   // an MI355X-class part
    c.R = 1, c.L = 4;
    CHECK(PlanPolicy::defaults_for(c).kda_chunk_rows == 32);
    CHECK(Plan::build(c, PlanPolicy::defaults_for(c)).n_chunks() == 4);
    c.R = 6;
    CHECK(PlanPolicy::defaults_for(c).kda_chunk_rows == 128);
    CHECK(Plan::build(c, PlanPolicy::defaults_for(c)).n_chunks() == 1);
}

TEST_CASE("the f_a groups are waited for once a task: by KDA_CONV with sibling chunks (it makes the g1 share), by KDA_REC with one task a head") {
    auto waits_fa = [](int chunk_rows, Op op) {
        PlanParams pp = PlanPolicy::preset("k3");
        pp.kda_chunk_rows = chunk_rows;
        const Config c = k3();
        const Plan p = Plan::build(c, pp);
        const int cta = p.kda_cta(1, 5, 0);
        for (int i = 0; i < int(p.instrs(cta).size()); ++i) {
            if (p.instrs(cta)[size_t(i)].opcode() != op) continue;
            int fa = 0;
            for (const Plan::Wait& w : p.waits(cta, i))
                for (int col = c.col_fa(); col < c.col_fa() + c.F; col += 16) fa += w.entry == p.proj(p.group_of_col(col));
            return fa;
        }
        return -1;
    };
    for (int rows : {16, 32}) {
        CHECK(waits_fa(rows, Op::KDA_CONV) == 128 / 16);
        CHECK(waits_fa(rows, Op::KDA_REC) == 0);
    }
    CHECK(waits_fa(128, Op::KDA_CONV) == 0);
    CHECK(waits_fa(128, Op::KDA_REC) == 128 / 16);
}

TEST_CASE("the plan's reduction order splits D-sums by slice and the output norm by chunk") {
    PlanParams pp = PlanPolicy::preset("k3");
    CHECK(Plan::build(k3(), pp).reduction_order().at(Site::onorm_sumsq).parts == 1);  // one chunk: sequential over V
    pp.kda_chunk_rows = 16;
    Plan p = Plan::build(k3(), pp);
    ReductionOrder o = p.reduction_order();
    for (Site s : {Site::attn_sumsq, Site::attn_dot, Site::x_sumsq, Site::in_proj}) {
        CHECK(o.at(s).kind == OrderSpec::split);
        CHECK(o.at(s).parts == 56);
    }
    CHECK(o.at(Site::onorm_sumsq).kind == OrderSpec::split);
    CHECK(o.at(Site::onorm_sumsq).parts == 8);
    for (Site s : {Site::softmax_den, Site::mix}) CHECK(o.at(s).kind == OrderSpec::sequential);
    for (Site s : {Site::f_b, Site::l2_q, Site::l2_k, Site::rec_kS, Site::rec_oq})
        CHECK(o.at(s).kind == OrderSpec::pairwise);
}

TEST_CASE("k3's attn role follows the step: one CTA a slice up to 15 rows, two row parts from 16 on") {
    Config c = k3();
    for (int S : {1, 4, 8, 15, 16, 17, 24, 32, 64}) {
        CAPTURE(S);
        c.R = S, c.L = 1;
        const PlanParams pp = PlanPolicy::k3_for(c, 132);
        CHECK(pp.attn_row_parts == (S >= PlanPolicy::kSpreadGemvMinS ? 2 : 1));
        CHECK((pp.attn_row_parts == 1 || pp.gemv_every_cta));  // the parts' CTAs would hold SPEC §4's bands
    }
}

TEST_CASE("attn row parts: every row in exactly one part, its x flag that part's, gates over every attn CTA") {
    for (int S : {2, 3, 5, 17, 24, 64}) {
        for (int parts : {1, 2, 3}) {
            if (parts > S) continue;
            CAPTURE(S);
            CAPTURE(parts);
            Config c = small();
            c.R = S, c.L = 1, c.slots = S + 1;
            PlanParams pp = PlanPolicy::preset("small");
            pp.blocks = 16 * parts + 8;
            pp.attn_row_parts = parts;
            Plan p = Plan::build(c, pp);
            check_structure(p);
            CHECK(p.n_attn_ctas() == 16 * parts);
            CHECK(p.entries(Mailbox::XRDY) == 16 * parts);
            // the parts tile 0..S in order, none empty, and attn_part_of_row inverts them
            CHECK(p.attn_row_begin(0) == 0);
            CHECK(p.attn_row_begin(parts) == S);
            for (int q = 0; q < parts; ++q) {
                CHECK(p.attn_row_begin(q) < p.attn_row_begin(q + 1));
                for (int row = p.attn_row_begin(q); row < p.attn_row_begin(q + 1); ++row) CHECK(p.attn_part_of_row(row) == q);
            }
            // rows' producers recounted from the lists: PART and MSQ of (row, slice) from the CTA
            // of (slice, the row's part); every gate on attn CTA row mod the attn CTAs
            for (int row = 0; row < S; ++row)
                for (int j = 0; j < 16; ++j) {
                    const int cta = p.attn_cta(j, p.attn_part_of_row(row));
                    CHECK(p.producer(p.part(row, 0, j)).cta == cta);
                    CHECK(p.producer(p.msq(row, j)).cta == cta);
                    CHECK(p.producer(p.xrdy(j, p.attn_part_of_row(row))).cta == cta);
                    CHECK(p.producer(p.wgt(row)).cta == row % (16 * parts));
                }
            // a gemv group waits for every part of every slice, slice by slice
            const auto& w = p.waits(p.gemv_cta(0), 1);
            REQUIRE(w.size() == size_t(16 * parts));
            for (int k = 0; k < 16 * parts; ++k) {
                CHECK(w[size_t(k)].entry == p.xrdy(k / parts, k % parts));
                CHECK(w[size_t(k)].group == k / parts);
            }
        }
    }
    Config c = small();
    c.R = 5, c.L = 1, c.slots = 6;
    PlanParams pp = PlanPolicy::preset("small");
    pp.blocks = 40, pp.attn_row_parts = 2;
    Plan p = Plan::build(c, pp);
    CHECK(p.entry_name(p.xrdy(3, 1)) == "XRDY[slice 3][rows 2..4]");
    CHECK(p.describe(p.instrs(16 + 3)[0]) == "ATTN_PART(slice 3, rows 2..4)");
}
