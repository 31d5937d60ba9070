// Kernel v2's plan checks (core/plan_v2_checks.cpp): the built plans are sound, and each check is
// the only one that fires on a bad plan planted for it (one table edited as a wrong builder would),
// naming what is wrong. Every check has its plant here.
#include <doctest/doctest.h>
#include <algorithm>

#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/plan_v2.hpp"

using namespace monokda;

namespace {

PlanV2 small_plan() {
    Config c = Config::preset("small");
    c.R = 2, c.L = 4, c.slots = c.S() + 1;
    return PlanV2::build(c, PlanV2Params::for_config(c));
}

// the receive entry of (cluster 0, unit, owner)
size_t recv_of(const PlanV2& p, int unit, int owner) {
    for (size_t e = 0; e < p.recvs.size(); ++e)
        if (p.recvs[e].unit == unit && p.recvs[e].owner == owner) return e;
    FAIL("no receive entry");
    return 0;
}

struct Plant {
    const char* check;
    const char* names;  // a fragment the problem's text must hold
    std::function<void(PlanV2&)> edit;
};

const std::vector<Plant>& plants() {
    static const std::vector<Plant> list = {
        // a tile's rows moved onto another's (its owners moved with it): rows 256..271 in no unit, 16..31 in two
        {"units_cover_rows", "in_proj rows 256..271 are in 0 units",
         [](PlanV2& p) {
             p.units[0].row0[0] = 16;
             p.recvs[recv_of(p, 0, 0)].row0 = 16;
             p.recvs[recv_of(p, 0, 1)].row0 = 24;
         }},
        {"chunks_contiguous", "CTA 3 chunk 1 starts at byte", [](PlanV2& p) { p.chunks[3][1].offset += 512; }},
        {"chunks_match_units", "CTA 3 chunk 1 is unit 1 k-step 1", [](PlanV2& p) { p.chunks[3][1].kstep0 = 1; }},
        {"ring_depth", "CTA 0's in-flight cap 3", [](PlanV2& p) { p.rings[0].in_flight = 3; }},
        {"chunk_slots", "CTA 2 chunk 2 is in slot 1 round 1", [](PlanV2& p) { p.chunks[2][2].slot = 1; }},
        {"ring_arrivals", "its empty barrier counts 7", [](PlanV2& p) { p.rings[5].consumers = 7; }},
        // the owner's barrier armed one partial short (as the emulator's publish_before_last_partial fault)
        {"recv_bytes", "completes on 1792 bytes; its senders send 2048",
         [](PlanV2& p) { p.recvs[0].bytes -= p.partial_bytes(); }},
        {"recv_senders", "has partials from 7 of 8 ranks", [](PlanV2& p) {
             p.partials[1].sender = 0;  // rank 1's SEND now names a partial of rank 0
         }},
        {"owners_publish_rows", "publishes rows 264..; owner rank 0 of unit 0 owns 256..", [](PlanV2& p) { p.recvs[0].row0 = 264; }},
        {"recv_slot_rounds", "is slot 0 round 2; unit 2 of its cluster takes slot 0 round 1", [](PlanV2& p) { p.recvs[recv_of(p, 2, 0)].round = 2; }},
        {"free_counts", "arrive 9 times on each free barrier", [](PlanV2& p) { p.frees[0].count += 1; }},
        // a task in a plan without the tail
        {"tail_tasks", "a plan without the tail has 1 tasks", [](PlanV2& p) { p.tasks.push_back({0, 0, 0, 0, 0, 0, 0, 32, 0, 16}); }},
        // a tail step in a plan without the tail: CTA 0's reducer publishes its first entry
        {"tail_programs", "PUBLISH(rows 256..263) is a step of the tail, which this plan leaves out",
         [](PlanV2& p) {
             auto& red = p.programs[size_t(PlanV2::proc(0, V2Role::reducer))];
             red.insert(red.begin() + 2, {int32_t(V2Op::PUBLISH), red[1].a});
         }},
        // cluster 0's entry barrier a CTA barrier (as the emulator's missing_cluster_barrier fault)
        {"cluster_barriers", "the entry barrier of cluster 0 has CTA scope", [](PlanV2& p) { p.barriers[0].scope = 1; }},
        {"smem_fits", "CTA 4 needs", [](PlanV2& p) { p.rings[4].slot_bytes = 240 * 1024; }},
        // the owner's part barrier armed one partial short (as the emulator's seam_part_short fault, by a sender's)
        {"seam_armed", "CTA 3's part barrier is armed for 312 bytes; its senders send 320", [](PlanV2& p) { p.seam_ctas[3].part_bytes -= 8; }},
        // two senders' part sends into owner 0 one partial long and one short: the barrier's total holds
        {"seam_sends", "seam send 0 is CTA 0 -> CTA 0 part, 48 bytes; CTA 0's send 0 is -> CTA 0 part, 40 bytes",
         [](PlanV2& p) {
             p.seam_sends[0].bytes += 8;
             p.seam_sends[size_t(p.seam_send_begin[1])].bytes -= 8;
         }},
        {"seam_owners", "CTA 1's seam entry owns 1 rows; the owner table gives rank 1 0", [](PlanV2& p) { p.seam_owner[1] = 2; }},
        // a consumer that starts in_proj without waiting for x (as the emulator's x_before_seam fault, in the plan)
        {"seam_programs", "CTA 3 (cluster 0 rank 3) consumer 5 (tile 2, odd k-steps) has 0 seam steps, not XWAIT in order",
         [](PlanV2& p) {
             auto& prog = p.programs[size_t(PlanV2::proc(3, V2Role::consumer, 5))];
             prog.erase(prog.begin() + 1);
         }},
        // a plan file whose step text is not its tables' (the plan read back from the edited file)
        {"file_descriptions", "ctas[0].roles[0].program[0].step is \"COPY(chunk 0)\"; the tables give \"INIT\"",
         [](PlanV2& p) {
             nlohmann::json j = nlohmann::json::parse(p.to_json());
             j["ctas"][0]["roles"][0]["program"][0]["step"] = "COPY(chunk 0)";
             p = PlanV2::from_json(j.dump());
         }},
    };
    return list;
}

}  // namespace

TEST_CASE("the built plans are sound") {
    CHECK(small_plan().problems().empty());
    Config c = Config::preset("k3");
    for (int L : {1, 4, 8}) {
        c.R = 2, c.L = L, c.slots = c.S() + 1;
        const auto probs = PlanV2::build(c, PlanV2Params::for_config(c)).problems();
        CAPTURE(L);
        CHECK_MESSAGE(probs.empty(), (probs.empty() ? "" : probs[0].check + ": " + probs[0].what));
    }
}

TEST_CASE("each check alone fires on its planted bad plan, and names the problem") {
    std::set<std::string> planted;
    for (const Plant& pl : plants()) {
        CAPTURE(pl.check);
        planted.insert(pl.check);
        PlanV2 p = small_plan();
        pl.edit(p);
        const auto probs = p.problems();
        REQUIRE(!probs.empty());
        std::set<std::string> fired;
        bool named = false;
        std::string all;
        for (const auto& x : probs) {
            fired.insert(x.check);
            named |= x.check == pl.check && x.what.find(pl.names) != std::string::npos;
            all += "\n  " + x.check + ": " + x.what;
        }
        INFO("problems:", all);
        CHECK(fired == std::set<std::string>{pl.check});
        CHECK(named);
    }
    // every check has its plant
    CHECK(planted == std::set<std::string>(PlanV2::check_names().begin(), PlanV2::check_names().end()));
}

// each edit of base: its check alone fires, and names what the edit broke
void only_check_fires(const PlanV2& base, const std::vector<Plant>& edits) {
    for (const Plant& e : edits) {
        CAPTURE(e.names);
        PlanV2 p = base;
        e.edit(p);
        std::set<std::string> fired;
        bool named = false;
        std::string all;
        for (const auto& x : p.problems()) fired.insert(x.check), named |= x.what.find(e.names) != std::string::npos, all += "\n" + x.check + ": " + x.what;
        INFO(all);
        CHECK(fired == std::set<std::string>{e.check});
        CHECK(named);
    }
}

// task i's table entry on (cluster, rank), its steps moved with it, to the end of that CTA's seam team
// (as a builder that placed it there would write them), or after the steps of task `after`
void move_task(PlanV2& p, int i, int cluster, int rank, int after = -1) {
    auto& from = p.programs[size_t(PlanV2::proc(p.cta(p.tasks[size_t(i)].cluster, p.tasks[size_t(i)].rank), V2Role::seam))];
    std::vector<V2Instr> steps;
    for (auto it = from.begin(); it != from.end();)
        if (it->opcode() >= V2Op::POLL && it->a == i) steps.push_back(*it), it = from.erase(it);
        else ++it;
    p.tasks[size_t(i)].cluster = cluster, p.tasks[size_t(i)].rank = rank;
    auto& to = p.programs[size_t(PlanV2::proc(p.cta(cluster, rank), V2Role::seam))];
    auto at = to.end() - 1;
    for (auto it = to.begin(); it != to.end(); ++it)
        if (it->opcode() == V2Op::NORM && it->a == after) at = it + 1;
    to.insert(at, steps.begin(), steps.end());
}

TEST_CASE("a tail plan's tasks: one moved, doubled or sharing a barrier, each named by tail_tasks alone") {
    Config c = Config::preset("small");
    c.R = 2, c.L = 4, c.slots = c.S() + 1;
    PlanV2Params pp = PlanV2Params::for_config(c, 1);
    const PlanV2 base = PlanV2::build(c, pp);
    REQUIRE(base.problems().empty());
    const std::vector<Plant> edits = {
        // (request 0, head 0)'s tile 1 on cluster 1: its partial norms could not meet in a cluster
        {"tail_tasks", "(request 0, head 0)'s tasks are not on one cluster", [](PlanV2& p) { move_task(p, 1, 1, 1); }},
        // tile 1 of (0, 0) computed twice, tile 0 of (0, 1) never
        {"tail_tasks", "(request 0, head 1, tile 0) has 0 tasks", [](PlanV2& p) {
             const V2Task t = p.tasks[1];
             move_task(p, 2, t.cluster, t.rank, 1);
             p.tasks[2] = t;
         }},
        // (1, 0) on cluster 0's barrier 0, which (0, 0) uses
        {"tail_tasks", "uses partial-norm barrier 0 of cluster 0, which (request 0, head 0) uses", [](PlanV2& p) {
             p.tasks[4].onrm = 0;
             p.tasks[5].onrm = 0;
         }},
        // two tiles of (0, 0) on rank 0
        {"tail_tasks", "shares rank 0 with another tile of its pair", [](PlanV2& p) { move_task(p, 1, 0, 0); }},
        // (0, 0)'s tile 1 polls q and k rows 8 .. 23 (tile 0 has 0 .. 15): rows 8 .. 15 twice, 24 .. 31 never
        {"tail_tasks", "(request 0, head 0)'s tasks share q and k row 8 of the head 2 times, not once", [](PlanV2& p) { p.tasks[1].qk0 = 8; }},
        {"tail_tasks", "(request 1, head 1)'s tasks share f_a row 15 0 times, not once", [](PlanV2& p) { p.tasks[7].fan = 7; }},
    };
    only_check_fires(base, edits);
}

// the seam process of the CTA of task i, and the index of the task's `op` in it
std::pair<int, size_t> tail_step(const PlanV2& p, int i, V2Op op) {
    const V2Task& t = p.tasks[size_t(i)];
    const int q = PlanV2::proc(p.cta(t.cluster, t.rank), V2Role::seam);
    const auto& prog = p.programs[size_t(q)];
    for (size_t k = 0; k < prog.size(); ++k)
        if (prog[k].opcode() == op && prog[k].a == i) return {q, k};
    FAIL("no such step");
    return {0, 0};
}

TEST_CASE("a tail plan's steps: one dropped, reordered, misplaced or out of order across ranks, each named by tail_programs alone") {
    Config c = Config::preset("k3");
    c.R = 2, c.L = 1, c.slots = c.S() + 1;  // cluster 0 holds pairs 0 and 15
    PlanV2Params pp = PlanV2Params::for_config(c, 1);
    const PlanV2 base = PlanV2::build(c, pp);
    REQUIRE(base.problems().empty());
    const std::vector<Plant> edits = {
        // CTA 0's reducer drops its first PUBLISH: nothing stores those rows' words
        {"tail_programs", "is never published: the tail's words of those rows never come",
         [](PlanV2& p) {
             auto& red = p.programs[size_t(PlanV2::proc(0, V2Role::reducer))];
             red.erase(red.begin() + 3);  // entry, REDUCE, RELEASE, PUBLISH
         }},
        // CTA 0's first PUBLISH before its REDUCE: the words would carry rows not yet summed
        {"tail_programs", "PUBLISH(rows 6144..6151) does not follow its entry's REDUCE, or publishes it twice",
         [](PlanV2& p) {
             auto& red = p.programs[size_t(PlanV2::proc(0, V2Role::reducer))];
             std::rotate(red.begin() + 1, red.begin() + 3, red.begin() + 4);
         }},
        // task 3's REC before its POLL
        {"tail_programs", "task 3 (request 0, head 0, tile 3) does not have POLL, DECAY, REC and NORM once each, in that order",
         [](PlanV2& p) {
             const auto poll = tail_step(p, 3, V2Op::POLL), rec = tail_step(p, 3, V2Op::REC);
             std::swap(p.programs[size_t(poll.first)][poll.second], p.programs[size_t(rec.first)][rec.second]);
         }},
        // task 1's DECAY dropped: its REC would wait for decays it never computed, and its peers for its share of them
        {"tail_programs", "task 1 (request 0, head 0, tile 1) does not have POLL, DECAY, REC and NORM once each, in that order",
         [](PlanV2& p) {
             const auto d = tail_step(p, 1, V2Op::DECAY);
             auto& prog = p.programs[size_t(d.first)];
             prog.erase(prog.begin() + long(d.second));
         }},
        // task 2's steps moved before its CTA's seam: the tail would hold x behind it
        {"tail_programs", "task 2 (request 0, head 0, tile 2)'s POLL comes before the seam's LOAD",
         [](PlanV2& p) {
             const auto poll = tail_step(p, 2, V2Op::POLL);
             auto& prog = p.programs[size_t(poll.first)];
             const V2Instr x = prog[poll.second];
             prog.erase(prog.begin() + long(poll.second));
             prog.insert(prog.begin() + 1, x);
         }},
        // rank 4 of cluster 0 takes pair 15 before pair 0; the other ranks, pair 0 first
        {"tail_programs", "CTAs 3 and 4 take the pairs they share in different orders",
         [](PlanV2& p) {
             const auto a = tail_step(p, 4, V2Op::POLL), b = tail_step(p, 15 * 8 + 4, V2Op::POLL);
             auto& prog = p.programs[size_t(a.first)];
             std::rotate(prog.begin() + long(a.second), prog.begin() + long(b.second), prog.begin() + long(b.second) + 3);
         }},
    };
    only_check_fires(base, edits);
}
