// The kernel's kda teams as the emulator models them (core/plan.hpp: kda_team_tasks_begin,
// Plan::with_kda_teams): which lists split, into what, and that the split plan runs clean under
// many schedules while a planted fault still fires.
#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <tuple>

#include "emu_util.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;

namespace {

std::vector<Instr> task(int r, int h, int c) {
    std::vector<Instr> l;
    for (Op op : {Op::KDA_LOAD, Op::KDA_CONV, Op::KDA_REC, Op::KDA_NORM}) l.push_back({int32_t(op), r, h, c});
    return l;
}

std::vector<Instr> cat(std::vector<Instr> a, const std::vector<Instr>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

int begin_of(const std::vector<Instr>& l) { return kda_team_tasks_begin(l.data(), int(l.size())); }

// The small preset with enough requests that CTAs hold several kda tasks.
EmulateOptions busy_options() {
    EmulateOptions o = small_options();
    o.fixture.R = 8;
    o.kda_teams = 2;
    return o;
}

Prepared& busy_prepared() {
    static Prepared p = prepare(busy_options(), 1);
    return p;
}

}  // namespace

TEST_CASE("kda_team_tasks_begin: the tail of two or more whole kda tasks, or -1") {
    const std::vector<Instr> attn = {{int32_t(Op::ATTN_PART), 3, 0, 0}, {int32_t(Op::ATTN_X), 3, 0, 0}};
    CHECK(begin_of(cat(attn, task(0, 1, 2))) == -1);                       // one task: no teams
    CHECK(begin_of(cat(cat(attn, task(0, 1, 2)), task(1, 1, 2))) == 2);     // two tasks after the attn role
    CHECK(begin_of(cat(task(0, 0, 0), task(0, 0, 1))) == 0);                 // a list of kda tasks only
    CHECK(begin_of(cat(cat(task(0, 0, 0), task(0, 0, 1)), task(0, 0, 2))) == 0);
    std::vector<Instr> swapped = cat(cat(attn, task(0, 1, 2)), task(1, 1, 2));
    std::swap(swapped[3], swapped[4]);  // CONV after REC
    CHECK(begin_of(swapped) == -1);
    std::vector<Instr> mixed = cat(cat(attn, task(0, 1, 2)), task(1, 1, 2));
    mixed[7].c = 3;  // a NORM of another chunk than its LOAD
    CHECK(begin_of(mixed) == -1);
    std::vector<Instr> torn = cat(cat(attn, task(0, 1, 2)), task(1, 1, 2));
    torn.pop_back();  // a task without its NORM
    CHECK(begin_of(torn) == -1);
    CHECK(begin_of(attn) == -1);
    CHECK(begin_of({}) == -1);
}

TEST_CASE("with_kda_teams(2) on k3 R=16 L=1: 60 CTAs with two tasks each lend their second to a team list") {
    Config cfg = Config::preset("k3");
    cfg.R = 16, cfg.L = 1;  // 192 tasks (one a head) over 132 CTAs
    const Plan p = Plan::build(cfg, PlanPolicy::preset("k3"));
    const Plan q = p.with_kda_teams(2);
    CHECK(q.launch_blocks() == 132);
    CHECK(q.blocks() == 132 + 60);  // 192 tasks over 132 CTAs: CTAs 0..59 hold two
    CHECK(q.structural_problems().empty());
    std::map<std::tuple<int, int, int>, int> where;  // task -> list
    for (int l = 0; l < q.blocks(); ++l)
        for (const Instr& in : q.instrs(l))
            if (in.opcode() == Op::KDA_LOAD) CHECK(where.emplace(std::make_tuple(in.a, in.b, in.c), l).second);
    CHECK(where.size() == 192);
    for (int l = 132; l < q.blocks(); ++l) {
        const int parent = q.team_parent(l);
        CHECK(parent == l - 132);  // appended in CTA order
        REQUIRE(q.instrs(l).size() == 4);
        const Instr first = q.instrs(l)[0];
        // the parent's second task (list order) is this list's, the first stayed
        int k = 0;
        for (const Instr& in : p.instrs(parent))
            if (in.opcode() == Op::KDA_LOAD) {
                if (k == 1) CHECK((in.a == first.a && in.b == first.b && in.c == first.c));
                ++k;
            }
        CHECK(k == 2);
        CHECK(q.instrs(parent).size() + 4 == p.instrs(parent).size());
    }
    CHECK(q.team_parent(5) == 5);
    CHECK_THROWS_AS(q.serialize(), std::logic_error);  // never uploaded to a kernel
    CHECK(p.with_kda_teams(1).blocks() == 132);
    CHECK_THROWS_AS(p.with_kda_teams(0), BadInput);
}

TEST_CASE("the teams plan runs clean under many schedules, bit for bit, and its lists overlap their parents'") {
    Prepared& prep = busy_prepared();
    const Plan q = prep.plan.with_kda_teams(2);
    REQUIRE(q.blocks() > q.launch_blocks());  // there are team lists to run
    bool overlapped = false;
    for (const char* s : {"random", "pct", "rr", "delay:kda", "delay:gemv"})
        for (uint64_t seed = 1; seed <= (std::string(s) == "random" || std::string(s) == "pct" ? 3u : 1u); ++seed) {
            EmulateOptions o = busy_options();
            o.schedule = Schedule::parse(s);
            o.schedule.seed = seed;
            EmulateResult r = emulate(prep, o);
            INFO(s << " seed " << seed << ": " << r.run.detail);
            CHECK(r.verdict == Verdict::PASS);
            CHECK(r.plan.blocks() == q.blocks());
            CHECK(contains(r.token, ",kda-teams=2,"));
            // a team list begins an instruction while its parent CTA is inside another kda task
            std::map<int, int> open;  // launch CTA -> kda instructions begun and not finished (parent lists)
            for (const Event& e : r.run.history) {
                if (e.instr < 0 || e.cta < 0) continue;
                const bool team = e.cta >= q.launch_blocks();
                const Instr in = r.plan.instrs(e.cta)[size_t(e.instr)];
                if (role_of(in.opcode()) != Role::kda) continue;
                if (!team && e.kind == EventKind::begin) ++open[e.cta];
                if (!team && e.kind == EventKind::finish) --open[e.cta];
                if (team && e.kind == EventKind::begin && open[q.team_parent(e.cta)] > 0) overlapped = true;
            }
        }
    CHECK(overlapped);
}

TEST_CASE("a planted kda fault still fires with teams, and the token replays the teams run") {
    Prepared& prep = busy_prepared();
    EmulateOptions o = busy_options();
    o.fault = Fault::kda_skips_proj_wait;
    EmulateResult r = emulate(prep, o);
    CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
    const EmulateOptions back = apply_token(busy_options(), r.token);
    CHECK(back.kda_teams == 2);
    CHECK(back.fault == Fault::kda_skips_proj_wait);
    CHECK(make_token(back) == r.token);
    EmulateOptions one = busy_options();
    one.kda_teams = 1;
    CHECK(contains(make_token(one), ",kda-teams=1,"));
    CHECK_THROWS_AS(apply_token(busy_options(), "v5,kda-teams=9"), BadInput);
}

TEST_CASE("team lists run in their CTA's place: residency counts the launch's CTAs, names say whose team") {
    Prepared& prep = busy_prepared();
    const Plan q = prep.plan.with_kda_teams(2);
    REQUIRE(q.blocks() > q.launch_blocks());
    // splitting lists only removes program order: it never needs more places than the list order
    CHECK(q.min_residency() <= prep.plan.min_residency());
    CHECK(q.min_residency() <= q.launch_blocks());
    const int t = q.launch_blocks();  // the first team list
    CHECK(q.cta_name(t) == "CTA " + std::to_string(q.team_parent(t)) + " team 1");
    CHECK(q.cta_name(3) == "CTA 3");
    CHECK(q.first_role(t) == Role::kda);
    CHECK(q.lists_of(q.team_parent(t)) == std::vector<int>{q.team_parent(t), t});
    EmulateOptions o = busy_options();
    o.resident = 1000;  // more than the launch has: capped at its CTAs, not its lists
    EmulateResult all = emulate(prep, o);
    CHECK(all.verdict == Verdict::PASS);
    CHECK(all.resident == q.launch_blocks());
    o.resident = q.min_residency();  // just enough places
    EmulateResult just = emulate(prep, o);
    INFO(just.run.detail);
    CHECK(just.verdict == Verdict::PASS);
    o.resident = 0;
    o.fault = Fault::too_few_resident;  // one place fewer than needed
    EmulateResult starved = emulate(prep, o);
    CHECK(starved.verdict == Verdict::DEADLOCK);
    CHECK(starved.resident == q.min_residency() - 1);
}
