// What the kernel reads of a plan: the flat serialisation (header, offsets, instruction words) and
// the launch tag each launch derives from the arrivals counter.
#include <doctest/doctest.h>

#include <vector>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/plan_policy.hpp"
#include "tests/core/plan_util.hpp"

using namespace monokda;
using namespace monokda::test;

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
