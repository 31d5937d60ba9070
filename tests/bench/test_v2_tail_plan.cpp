// The v2 tail probe's hold on its plans (bench/probes/v2_tail_plan.hpp): the builder's plans at the
// shapes the probe runs are plans its kernel runs, and each thing the kernel takes for granted,
// planted wrong in a plan whose own checks still pass, is named (the plan's checks are
// test_plan_v2_checks.cpp's; the kernel itself runs under ctest -L gpu, v2_probe/tail_exact).
#include <doctest/doctest.h>

#include <algorithm>

#include "bench/probes/v2_tail_plan.hpp"

using namespace monokda;
using monokda::probe::v2::tail_kernel_problems;
using monokda::probe::v2::tailhop_placement_problems;

namespace {

// The probe's plan: the production shape, R × L, the tail, x an input (v2_tail_host.cpp).
PlanV2 tail_plan(int R, int L) {
    Config c = Config::preset("k3");
    c.R = R, c.L = L, c.slots = R * L + 1;
    PlanV2Params pp = PlanV2Params::for_config(c);
    pp.seam = 0, pp.tail = 1;
    return PlanV2::build(c, pp);
}

// The one problem named, and that it says `what`.
void names(const PlanV2& p, const char* what) {
    REQUIRE(p.problems().empty());  // the plan's own checks pass: only the probe's hold can see it
    const std::vector<std::string> probs = tail_kernel_problems(p);
    REQUIRE(!probs.empty());
    CHECK_MESSAGE(probs[0].find(what) != std::string::npos, probs[0]);
}

// The tasks i and j trade places in the table (each program's operands follow them): the same plan,
// its tasks in another order.
void swap_tasks(PlanV2& p, int i, int j) {
    std::swap(p.tasks[size_t(i)], p.tasks[size_t(j)]);
    for (auto& prog : p.programs)
        for (V2Instr& in : prog)
            if (in.opcode() >= V2Op::POLL && in.opcode() <= V2Op::NORM) in.a = in.a == i ? j : in.a == j ? i : in.a;
}

}  // namespace

TEST_CASE("the builder's plans at the probe's shapes are plans the tail kernel runs") {
    for (const std::pair<int, int>& shape : {std::pair{1, 1}, {2, 4}, {4, 4}, {8, 8}}) {
        CAPTURE(shape.first);
        CAPTURE(shape.second);
        const std::vector<std::string> probs = tail_kernel_problems(tail_plan(shape.first, shape.second));
        CHECK_MESSAGE(probs.empty(), (probs.empty() ? std::string() : probs[0]));
    }
}

TEST_CASE("the builder's plans of in_proj and the tail in one launch, at the fused mode's shapes and rings, are plans it runs") {
    for (const std::pair<int, int>& shape : {std::pair{1, 1}, {1, 4}, {2, 4}, {4, 4}}) {
        CAPTURE(shape.first);
        CAPTURE(shape.second);
        Config c = Config::preset("k3");  // as the in_proj probe's tables_for builds it for a fused case (seam_setting's ring)
        c.R = shape.first, c.L = shape.second, c.slots = c.S() + 1;
        PlanV2Params pp = PlanV2Params::for_config(c);
        const bool deep = c.S() >= 16;
        pp.chunk_ksteps = 14, pp.ring_depth = pp.in_flight = deep ? 4 : 3, pp.recv_slots = 4, pp.seam = 0, pp.tail = 1;
        const PlanV2 p = PlanV2::build(c, pp);
        const std::vector<std::string> probs = tail_kernel_problems(p, true);
        CHECK_MESSAGE(probs.empty(), (probs.empty() ? std::string() : probs[0]));
        CHECK(p.smem_bytes(0) <= kV2SmemBytes - 4096);  // the probe's kernel keeps 4 KB for its static barriers
    }
    // the tail alone refuses a plan with the seam; one launch takes it
    Config c = Config::preset("k3");
    c.R = 1, c.L = 1, c.slots = 2;
    const PlanV2 seam = PlanV2::build(c, PlanV2Params::for_config(c, 1));
    REQUIRE(seam.has_seam());
    CHECK(!tail_kernel_problems(seam).empty());
    CHECK(tail_kernel_problems(seam, true).empty());
}

TEST_CASE("a pair whose tasks are apart in the table is a plan the tail kernel runs: it reads each pair from the flat table") {
    PlanV2 p = tail_plan(2, 1);
    swap_tasks(p, 3, 3 + 8);  // tile 3 of (0, head 0) and of (0, head 1): each pair's tasks now apart
    REQUIRE(p.problems().empty());
    const std::vector<std::string> probs = tail_kernel_problems(p);
    CHECK_MESSAGE(probs.empty(), (probs.empty() ? std::string() : probs[0]));
    const std::vector<int32_t> w = p.serialize();
    const PlanV2View v{w.data(), v2_layout(read_v2_header(w))};
    CHECK(v.pair_task(0, 3) == 11);  // head 0's tile 3, now task 11
    CHECK(v.pair_task(8, 3) == 3);   // head 1's, now task 3
    CHECK(v.pair_task(11, 0) == 0);
    CHECK(v.pair_task(11, 4) == 4);
}

TEST_CASE("what the tail kernel takes for granted, planted wrong, is named") {
    SUBCASE("a plan with the seam, or without the tail") {
        Config c = Config::preset("k3");
        c.R = 1, c.L = 1, c.slots = 2;
        PlanV2Params pp = PlanV2Params::for_config(c);
        pp.tail = 1;
        names(PlanV2::build(c, pp), "without the seam");
        pp.seam = 0, pp.tail = 0;
        names(PlanV2::build(c, pp), "without the seam");
    }
    SUBCASE("tokens past the kernel's") { names(tail_plan(1, 9), "not the shape the kernel is compiled for"); }
    SUBCASE("a share cut at an odd row") {
        PlanV2 p = tail_plan(1, 1);
        p.tasks[0].qkn -= 1, p.tasks[1].qk0 -= 1, p.tasks[1].qkn += 1;  // q and k rows 0..14 and 15..32: still once each
        names(p, "task 0's share is not whole bf16 pairs");
    }
    SUBCASE("a share of other than K / T keys") {
        PlanV2 p = tail_plan(1, 1);
        p.tasks[0].qkn -= 2, p.tasks[1].qk0 -= 2, p.tasks[1].qkn += 2;  // keys 0..13 and 14..31: whole pairs, each once
        names(p, "task 0's share has 14 keys, not the K / T");
    }
    SUBCASE("a task's POLL not followed by its DECAY") {
        PlanV2 p = tail_plan(4, 1);  // 48 pairs on 15 clusters: CTAs with several tasks
        bool moved = false;
        for (int k = 0; k < p.ctas() && !moved; ++k) {  // on every rank of a cluster alike: POLL a, POLL b, DECAY a, REC a, DECAY b ..
            if (p.rank_of(k) == 0) {
                const int c = p.cluster_of(k);
                auto& first = p.programs[size_t(PlanV2::proc(k, V2Role::seam))];
                const auto at = std::find_if(first.begin(), first.end(), [](const V2Instr& in) { return in.opcode() == V2Op::POLL; });
                if (at + 4 >= first.end() || (at + 3)->opcode() != V2Op::POLL) continue;
                const long i = at - first.begin();
                for (int r = 0; r < p.params().ranks; ++r) {
                    auto& prog = p.programs[size_t(PlanV2::proc(p.cta(c, r), V2Role::seam))];
                    std::rotate(prog.begin() + i + 1, prog.begin() + i + 3, prog.begin() + i + 4);
                }
                moved = true;
            }
        }
        REQUIRE(moved);
        names(p, "is not followed by its task's DECAY");
    }
}

TEST_CASE("tailhop's own placement of the tasks is the plan's, and a task moved is named") {
    for (int S : {1, 4, 16}) {
        CAPTURE(S);
        const std::vector<std::string> probs = tailhop_placement_problems(tail_plan(1, S));
        CHECK_MESSAGE(probs.empty(), (probs.empty() ? std::string() : probs[0]));
    }
    PlanV2 p = tail_plan(1, 4);
    std::swap(p.tasks[2].rank, p.tasks[3].rank);  // tiles 2 and 3 of head 0 trade ranks
    const std::vector<std::string> probs = tailhop_placement_problems(p);
    REQUIRE(probs.size() == 2);
    CHECK(probs[0].find("task 2 (head 0, tile 2) is on cluster 0 rank 3") != std::string::npos);
    CHECK(!tailhop_placement_problems(tail_plan(2, 1)).empty());  // two requests: not what tailhop runs
}
