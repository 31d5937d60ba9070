// The v2 in_proj probe's counters against its plans (bench/probes/v2_inproj_walk.hpp): every plan the
// probe builds is walked as the kernel steps (chunks, copies, takes, sends) without a difference, and
// each table a wrong builder could write, planted in turn, is named by the walk (the plan's own checks
// are test_plan_v2_checks.cpp's).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>

#include "bench/probes/v2_inproj_walk.hpp"

using namespace monokda;
using monokda::probe::v2::walk_problems;

namespace {

// The probe's plans: the production shape at S, its ring setting (bench/probes/v2_inproj_tables.cuh).
PlanV2 probe_plan(int S, int kq, int stages, int inflight, int slots) {
    Config c = Config::preset("k3");
    c.R = 1, c.L = S, c.slots = S + 1;
    PlanV2Params p = PlanV2Params::for_config(c);
    p.chunk_ksteps = kq, p.ring_depth = stages, p.in_flight = inflight, p.recv_slots = slots;
    return PlanV2::build(c, p);
}

PlanV2 small_plan() {
    Config c = Config::preset("small");
    c.R = 2, c.L = 4, c.slots = c.S() + 1;
    return PlanV2::build(c, PlanV2Params::for_config(c));
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += "\n  " + x;
    return s;
}

// the partial of (unit, owner) that `sender` sends
size_t partial_of(const PlanV2& p, int unit, int owner, int sender) {
    for (size_t i = 0; i < p.partials.size(); ++i)
        if (p.partials[i].unit == unit && p.partials[i].owner == owner && p.partials[i].sender == sender) return i;
    FAIL("no such partial");
    return 0;
}

}  // namespace

TEST_CASE("the kernel's counters walk every plan the probe builds as its tables") {
    struct Setting {
        int S, kq, stages, inflight, slots;
    };
    // the de-risking settings, tune's corners (the deepest rings, the largest cap, one receive slot)
    for (const Setting& s : std::vector<Setting>{{1, 14, 3, 3, 4}, {4, 14, 3, 3, 4}, {16, 14, 4, 4, 4}, {64, 8, 3, 3, 2},
                                                 {1, 8, 16, 3, 1}, {16, 14, 7, 3, 1}, {64, 8, 12, 6, 2}, {1, 14, 5, 5, 3}}) {
        const PlanV2 p = probe_plan(s.S, s.kq, s.stages, s.inflight, s.slots);
        const auto w = walk_problems(p);
        INFO("S ", s.S, " chunks of ", s.kq, " x ", s.stages, ", ", s.inflight, " in flight, ", s.slots, " slots:", joined(w));
        CHECK(w.empty());
    }
    const auto w = walk_problems(small_plan());
    INFO("small:", joined(w));
    CHECK(w.empty());
}

TEST_CASE("a table the kernel's counters part from is named by the walk") {
    struct Plant {
        const char* what;
        const char* names;  // a fragment of a line the walk must print
        std::function<void(PlanV2&)> edit;
    };
    const std::vector<Plant> plants = {
        {"a chunk in another slot", "CTA 3 chunk 2 is (unit 2, k-step 0 x 2, byte 8192, slot 1 round 1); the kernel's counters say (unit 2, "
                                    "k-step 0 x 2, byte 8192, slot 0 round 1)",
         [](PlanV2& p) { p.chunks[3][2].slot = 1; }},
        {"a chunk at another offset", "CTA 3 chunk 1 is (unit 1, k-step 0 x 2, byte 4608", [](PlanV2& p) { p.chunks[3][1].offset += 512; }},
        {"a chunk of another k-step", "CTA 6 chunk 0 is (unit 0, k-step 2", [](PlanV2& p) { p.chunks[6][0].kstep0 = 2; }},
        {"a ring whose cap is not the kernel's", "CTA 2 chunk 1: its COPY waits are not the kernel's",
         [](PlanV2& p) { p.rings[2].in_flight = 1; }},
        {"a run one chunk long", "CTA 5 chunk 3 is past the kernel's run: its producer stops after the cluster's 3 units",
         [](PlanV2& p) {
             V2Chunk extra = p.chunks[5].back();
             extra.offset += extra.bytes, extra.slot = 1, extra.round = 1;
             p.chunks[5].push_back(extra);
         }},
        {"a run one chunk short", "CTA 5's run ends at unit 2 chunk 0 of its cluster's 3 units",
         [](PlanV2& p) {
             p.chunks[5].pop_back();
             for (int q = PlanV2::proc(5, V2Role::producer); q < PlanV2::proc(5, V2Role::producer) + kV2ProcsPerCta; ++q) {
                 auto& prog = p.programs[size_t(q)];
                 prog.erase(std::remove_if(prog.begin(), prog.end(),
                                           [](const V2Instr& in) {
                                               return (in.opcode() == V2Op::COPY || in.opcode() == V2Op::TAKE || in.opcode() == V2Op::FREE) && in.a == 2;
                                           }),
                            prog.end());
             }
         }},
        {"takes out of order", "CTA 4 consumer 3 TAKE(chunk 2) is not the kernel's next take (chunk 1",
         [](PlanV2& p) {
             for (V2Instr& in : p.programs[size_t(PlanV2::proc(4, V2Role::consumer, 3))])
                 if (in.opcode() == V2Op::TAKE && (in.a == 1 || in.a == 2)) in.a = 3 - in.a;
         }},
        {"a partial waiting for another free round", "SEND of unit 2 to owner rank 0 is slot 0 after free round 5; the kernel's counters say slot 0 "
                                                      "after free round 0",
         [](PlanV2& p) { p.partials[partial_of(p, 2, 0, 1)].free_round = 5; }},
        {"a receive use in another slot", "CTA 1 consumer 0 SEND of unit 2 to owner rank 1 is slot 1",
         [](PlanV2& p) {
             for (V2Recv& rv : p.recvs)
                 if (rv.unit == 2 && rv.owner == 1) rv.slot = 1;
         }},
        {"a tile's partials to another owner", "CTA 0 consumer 2 sends unit 0's partials to 3 owners; the kernel sends tile 1's to owner ranks 2 and 3",
         [](PlanV2& p) {
             auto& prog = p.programs[size_t(PlanV2::proc(0, V2Role::consumer, 2))];
             for (size_t i = 0; i < prog.size(); ++i)
                 if (prog[i].opcode() == V2Op::SEND) {
                     prog.insert(prog.begin() + long(i), V2Instr{int32_t(V2Op::SEND), int32_t(partial_of(p, 0, 0, 0))});
                     break;
                 }
         }},
    };
    REQUIRE(walk_problems(small_plan()).empty());
    for (const Plant& pl : plants) {
        CAPTURE(pl.what);
        PlanV2 p = small_plan();
        pl.edit(p);
        const auto w = walk_problems(p);
        INFO("walk:", joined(w));
        CHECK(joined(w).find(pl.names) != std::string::npos);
    }
}
