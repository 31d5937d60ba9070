// Kernel v2's plan checks of the tail (core/plan_v2_checker.hpp): the tasks' table (placement and
// shares) and the tail's steps in the programs; their plants are in tests/core/test_plan_v2_checks.cpp.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "core/plan_v2_checker.hpp"

namespace monokda::v2check {

// The tail's tasks: every (request, head, tile) once; a pair's tasks on one cluster, on distinct
// ranks, with one share and partial-norm barrier, which no other pair of the cluster uses; the pair's
// shares each q and k row of the head and each f_a row once. Without the tail, none.
void tail_tasks(Checker& c) {
    const PlanV2& p = c.p;
    const Config& cfg = p.config();
    if (!p.params().tail) {
        c.need(p.tasks.empty(), "a plan without the tail has " + n(long(p.tasks.size())) + " tasks");
        return;
    }
    const int T = p.tail_tiles();
    std::map<std::array<int, 3>, int> seen;             // (request, head, tile) -> tasks
    std::map<std::array<int, 2>, std::set<int>> where;  // (request, head) -> clusters, ranks and onrm, packed
    std::map<std::array<int, 2>, std::set<int>> ranks;
    std::map<std::array<int, 2>, std::array<int, 2>> pair_of_onrm;  // (cluster, onrm) -> its pair
    for (const V2Task& t : p.tasks) {
        const std::string name = "task (request " + n(t.request) + ", head " + n(t.head) + ", tile " + n(t.tile) + ")";
        if (t.request < 0 || t.request >= cfg.R || t.head < 0 || t.head >= cfg.H || t.tile < 0 || t.tile >= T || t.cluster < 0 ||
            t.cluster >= p.params().clusters || t.rank < 0 || t.rank >= p.params().ranks || t.onrm < 0) {
            c.fail(name + " names a request, head, tile, cluster, rank or barrier outside the plan");
            continue;
        }
        ++seen[{t.request, t.head, t.tile}];
        where[{t.request, t.head}].insert(t.cluster * 65536 + t.onrm);
        c.need(ranks[{t.request, t.head}].insert(t.rank).second, name + " shares rank " + n(t.rank) + " with another tile of its pair");
        const auto at = pair_of_onrm.emplace(std::array<int, 2>{t.cluster, t.onrm}, std::array<int, 2>{t.request, t.head});
        c.need(at.first->second == (std::array<int, 2>{t.request, t.head}),
               name + " uses partial-norm barrier " + n(t.onrm) + " of cluster " + n(t.cluster) + ", which (request " +
                   n(at.first->second[0]) + ", head " + n(at.first->second[1]) + ") uses");
    }
    for (int r = 0; r < cfg.R; ++r)
        for (int h = 0; h < cfg.H; ++h) {
            for (int t = 0; t < T; ++t) {
                const auto it = seen.find({r, h, t});
                const int k = it == seen.end() ? 0 : it->second;
                c.need(k == 1, "(request " + n(r) + ", head " + n(h) + ", tile " + n(t) + ") has " + n(k) + " tasks");
            }
            const auto it = where.find({r, h});
            c.need(it == where.end() || it->second.size() == 1,
                   "(request " + n(r) + ", head " + n(h) + ")'s tasks are not on one cluster with one partial-norm barrier");
        }
    // the shares: rows qk0 .. of q and k, fa0 .. of f_a, over a pair's tasks, each row once
    std::map<std::array<int, 2>, std::pair<std::vector<int>, std::vector<int>>> cover;  // (request, head) -> q/k, f_a
    for (const V2Task& t : p.tasks) {
        auto& cv = cover[{t.request, t.head}];
        if (cv.first.empty()) cv.first.assign(size_t(cfg.K), 0), cv.second.assign(size_t(cfg.F), 0);
        const std::string name = "task (request " + n(t.request) + ", head " + n(t.head) + ", tile " + n(t.tile) + ")";
        if (t.qk0 < 0 || t.qkn < 0 || t.qk0 + t.qkn > cfg.K || t.fa0 < 0 || t.fan < 0 || t.fa0 + t.fan > cfg.F) {
            c.fail(name + "'s share (q, k rows " + n(t.qk0) + " + " + n(t.qkn) + ", f_a rows " + n(t.fa0) + " + " + n(t.fan) +
                   ") is outside the head's " + n(cfg.K) + " and f_a's " + n(cfg.F) + " rows");
            continue;
        }
        for (int i = t.qk0; i < t.qk0 + t.qkn; ++i) ++cv.first[size_t(i)];
        for (int i = t.fa0; i < t.fa0 + t.fan; ++i) ++cv.second[size_t(i)];
    }
    for (const auto& [pair, cv] : cover) {
        const std::string name = "(request " + n(pair[0]) + ", head " + n(pair[1]) + ")";
        for (int i = 0; i < cfg.K; ++i)
            if (cv.first[size_t(i)] != 1) {
                c.fail(name + "'s tasks share q and k row " + n(i) + " of the head " + n(cv.first[size_t(i)]) + " times, not once");
                break;
            }
        for (int i = 0; i < cfg.F; ++i)
            if (cv.second[size_t(i)] != 1) {
                c.fail(name + "'s tasks share f_a row " + n(i) + " " + n(cv.second[size_t(i)]) + " times, not once");
                break;
            }
    }
}

// The tail's steps: each receive entry published once, by its owner's reducer right after the entry's
// REDUCE (or its RELEASE); each task's POLL, DECAY, REC and NORM once, in that order, on its CTA's seam team after the
// seam; the ranks of a cluster take the pairs they share in one order (else two ranks each wait at a
// DECAY for a share the other has not polled). Without the tail, none of these steps.
void tail_programs(Checker& c) {
    const PlanV2& p = c.p;
    auto tail_op = [](V2Op op) { return op >= V2Op::PUBLISH && op <= V2Op::NORM; };
    std::vector<int> published(p.recvs.size(), 0);
    std::vector<std::array<int, 4>> at(p.tasks.size(), {-1, -1, -1, -1});  // the step index of POLL, DECAY, REC, NORM
    std::vector<int> proc_of(p.tasks.size(), -1);
    std::vector<std::vector<int>> order(size_t(p.ctas()));  // the pairs (first task of the pair) by POLL, a CTA
    for (int q = 0; q < p.processes(); ++q) {
        const auto& prog = p.programs[size_t(q)];
        for (size_t i = 0; i < prog.size(); ++i) {
            const V2Instr& in = prog[i];
            if (!tail_op(in.opcode())) continue;
            if (!p.has_tail()) {
                c.fail(p.proc_name(q) + " " + p.describe(in) + " is a step of the tail, which this plan leaves out");
                continue;
            }
            if (in.opcode() == V2Op::PUBLISH) {  // right after its REDUCE, or after the RELEASE that follows it
                const size_t j = i > 0 && prog[i - 1].opcode() == V2Op::RELEASE ? i - 1 : i;
                const bool after = j > 0 && prog[j - 1].opcode() == V2Op::REDUCE && prog[j - 1].a == in.a;
                c.need(after && ++published[size_t(in.a)] == 1,
                       p.proc_name(q) + " " + p.describe(in) + " does not follow its entry's REDUCE, or publishes it twice");
                continue;
            }
            const int t = in.a, which = int(in.opcode()) - int(V2Op::POLL);
            if (at[size_t(t)][size_t(which)] >= 0 || (proc_of[size_t(t)] >= 0 && proc_of[size_t(t)] != q)) {
                c.fail(p.proc_name(q) + " " + p.describe(in) + ": the task's step is in the plan twice");
                continue;
            }
            at[size_t(t)][size_t(which)] = int(i), proc_of[size_t(t)] = q;
            auto& o = order[size_t(PlanV2::proc_cta(q))];
            if (which == 0 && std::find(o.begin(), o.end(), p.tail_pair(t).front()) == o.end()) o.push_back(p.tail_pair(t).front());
        }
    }
    if (!p.has_tail()) return;
    for (size_t e = 0; e < p.recvs.size(); ++e)
        c.need(published[e] == 1, "receive entry " + n(long(e)) + " (rows " + n(p.recvs[e].row0) + "..) is never published: the tail's words of those rows never come");
    for (size_t t = 0; t < p.tasks.size(); ++t) {
        const V2Task& x = p.tasks[t];
        const std::string name = "task " + n(long(t)) + " (request " + n(x.request) + ", head " + n(x.head) + ", tile " + n(x.tile) + ")";
        const auto& s = at[t];
        if (s[0] < 0 || !(s[0] < s[1] && s[1] < s[2] && s[2] < s[3])) {
            c.fail(name + " does not have POLL, DECAY, REC and NORM once each, in that order");
            continue;
        }
        const int q = proc_of[t], k = PlanV2::proc_cta(q);
        c.need(PlanV2::proc_role(q) == V2Role::seam && x.cluster >= 0 && x.rank >= 0 && k == p.cta(x.cluster, x.rank),
               name + " runs on " + p.proc_name(q) + ", not on the seam team of its cluster " + n(x.cluster) + " rank " + n(x.rank));
        const auto& prog = p.programs[size_t(q)];
        for (int i = s[0]; i < int(prog.size()); ++i)
            if (prog[size_t(i)].opcode() >= V2Op::LOAD && prog[size_t(i)].opcode() <= V2Op::X) {
                c.fail(name + "'s POLL comes before the seam's " + to_string(prog[size_t(i)].opcode()) + ", which in_proj waits for");
                break;
            }
    }
    for (int a = 0; a < p.ctas(); ++a)
        for (int b = a + 1; b < p.ctas() && p.cluster_of(b) == p.cluster_of(a); ++b) {
            std::vector<int> x, y;  // the pairs both take, in each one's order
            for (int v : order[size_t(a)])
                if (std::find(order[size_t(b)].begin(), order[size_t(b)].end(), v) != order[size_t(b)].end()) x.push_back(v);
            for (int v : order[size_t(b)])
                if (std::find(order[size_t(a)].begin(), order[size_t(a)].end(), v) != order[size_t(a)].end()) y.push_back(v);
            c.need(x == y, "CTAs " + n(a) + " and " + n(b) + " take the pairs they share in different orders: a REC of each may wait "
                           "for a share the other has not polled");
        }
}

}  // namespace monokda::v2check
