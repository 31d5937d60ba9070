// The CTA plan's dependency structure (SPEC §4), checked independently of the plan's own checker
// where possible: counts come from the SPEC's arithmetic, producers are recounted from the lists.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/plan_options.hpp"
#include "core/plan_policy.hpp"
#include "emu_util.hpp"  // move_kda_task

using namespace monokda;
using monokda::emu::test::move_kda_task;

namespace {

Config k3() {
    Config c = Config::preset("k3");
    c.R = 2; c.L = 4; c.nb = 4; c.slots = c.S() + 1;
    return c;
}
Config small() {
    Config c = Config::preset("small");
    c.slots = c.S() + 1;
    return c;
}

// producers recounted from the instruction lists (not from plan.producer())
std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> recount(const Plan& p) {
    std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> m;
    for (int cta = 0; cta < p.blocks(); ++cta)
        for (int i = 0; i < int(p.instrs(cta).size()); ++i)
            for (const MailboxRef& e : p.produces(cta, i)) m[{int(e.box), e.entry}].push_back({cta, i});
    return m;
}

void check_structure(const Plan& p) {
    auto prod = recount(p);
    // every entry of every mailbox has exactly one producer
    for (int m = 0; m < kMailboxCount; ++m)
        for (int e = 0; e < p.entries(Mailbox(m)); ++e) {
            auto it = prod.find({m, e});
            REQUIRE_MESSAGE(it != prod.end(), p.entry_name({Mailbox(m), e}) << " has no producer");
            REQUIRE_MESSAGE(it->second.size() == 1, p.entry_name({Mailbox(m), e}) << " has several producers");
            CHECK(p.producer({Mailbox(m), e}).cta == it->second[0].first);
        }
    // every waited entry is produced, and never later in the waiting CTA's own list
    for (int cta = 0; cta < p.blocks(); ++cta)
        for (int i = 0; i < int(p.instrs(cta).size()); ++i)
            for (const auto& w : p.waits(cta, i)) {
                auto it = prod.find({int(w.entry.box), w.entry.entry});
                REQUIRE(it != prod.end());
                if (it->second[0].first == cta) CHECK(it->second[0].second < i);
            }
    CHECK(p.structural_problems().empty());
}

}  // namespace

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

TEST_CASE("launch tags from the arrivals counter: one a launch, never 0, never the previous launch's, across the wrap") {
    for (const uint32_t blocks : {132u, 24u, 1u}) {
        CAPTURE(blocks);
        // launches k = 0, 1, 2 and those around the 32-bit wrap of k + 1
        for (const uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(2), uint64_t(0xfffffffdull), uint64_t(0xfffffffeull),
                                 uint64_t(0xffffffffull), uint64_t(0x100000000ull), uint64_t(0x1fffffffdull)}) {
            CAPTURE(k);
            const uint32_t t = launch_tag(k * blocks, blocks);
            CHECK(t != 0u);
            for (uint32_t c = 1; c < blocks; ++c) CHECK(launch_tag(k * blocks + c, blocks) == t);  // every CTA agrees
            const uint32_t next = launch_tag((k + 1) * blocks, blocks);
            CHECK(next != t);
            CHECK(next != 0u);
            if (k < 0xfffffffeull) CHECK(t == uint32_t(k) + 1u);  // the launch count, until the wrap
        }
    }
    CHECK(launch_tag(0xfffffffeull, 1) == 0xffffffffu);  // launch 2³² − 2: the largest tag
    CHECK(launch_tag(0xffffffffull, 1) == 1u);           // then 1 again, skipping 0
}

TEST_CASE("flat serialisation: header, offsets and instruction words round-trip") {
    Plan p = Plan::build(k3(), PlanPolicy::preset("k3"));
    std::vector<int32_t> w = p.serialize();
    PlanHeader h = Plan::read_header(w);
    CHECK(h.blocks == 132);
    CHECK(h.n_attn == 56);
    CHECK(h.attn_row_parts == 1);
    CHECK(h.n_groups == 393);
    CHECK(h.S == 8);
    const size_t hw = sizeof(PlanHeader) / 4;
    CHECK(w[hw + int(Mailbox::PROJ)] == 393);
    CHECK(w[hw + kMailboxCount + int(Mailbox::WGT)] == 4 + 2);
    const int32_t* begin = &w[hw + 2 * kMailboxCount];
    const int32_t* words = begin + h.blocks + 1;
    REQUIRE(begin[0] == 0);  // with each list's length required below, every index stays inside
    CHECK(begin[h.blocks] == h.total_instrs);
    for (int cta = 0; cta < h.blocks; ++cta) {
        REQUIRE(begin[cta + 1] - begin[cta] == int(p.instrs(cta).size()));
        for (int i = begin[cta]; i < begin[cta + 1]; ++i) {
            const Instr& in = p.instrs(cta)[size_t(i - begin[cta])];
            CHECK(words[4 * i] == in.op);
            CHECK(words[4 * i + 1] == in.a);
            CHECK(words[4 * i + 2] == in.b);
            CHECK(words[4 * i + 3] == in.c);
        }
    }
    std::vector<int32_t> bad = w;
    bad.pop_back();
    CHECK_THROWS_AS(Plan::read_header(bad), BadInput);
    bad = w;
    bad[0] = 0;
    CHECK_THROWS_AS(Plan::read_header(bad), BadInput);
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
