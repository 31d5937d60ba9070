// What kernel v2's tail probe takes from a plan as it stands, and what it takes for granted
// (bench/probes/v2_tail_kernel.cuh): the production shape on 15 clusters of 8 with the tail and x
// an input; a share's rows are whole bf16 pairs (it sends 4-byte st.async) and its keys K / T (the
// staged f_b_w rows); a task's DECAY right after its POLL (POLL stages its keys' f_b_w rows for it);
// the steps' waits of the kinds the kernel waits on, and few enough for its staging. And where the in_proj probe's tailhop mode places the tasks, held to the plan's.
// Header-only, so a CPU test holds the builder's plans to both (tests/bench/test_v2_tail_plan.cpp).
#pragma once
#include <string>
#include <vector>

#include "core/plan_v2.hpp"

namespace monokda::probe::v2 {

constexpr int kTailMaxL = 8;       // tokens a request

// Each way `p` is not a plan the tail probe's kernel runs, in words; empty: it runs it. fused: the
// in_proj probe's fused mode runs it, in_proj (with or without the seam) and the tail in one launch.
inline std::vector<std::string> tail_kernel_problems(const PlanV2& p, bool fused = false) {
    std::vector<std::string> out;
    const Config& c = p.config();
    auto need = [&](bool ok, const std::string& what) {
        if (!ok) out.push_back(what);
        return ok;
    };
    // The probe runs the tail alone, its memory V2TailLayout from 0: whether in_proj's, the seam's and
    // the tail's fit together (smem_fits; not at S >= 32, docs/kernel-v2.md) is the one launch's question.
    std::vector<PlanV2::Problem> probs;
    for (const auto& pr : p.problems())
        if (fused || pr.check != "smem_fits") probs.push_back(pr);
    if (!need(probs.empty(), probs.empty() ? "" : "its check " + probs[0].check + " fails: " + probs[0].what)) return out;
    if (!need(p.has_tail() && (fused || !p.has_seam()) && p.ctas() == 120 && p.params().ranks == 8,
              fused ? "not the tail on 15 clusters of 8" : "not the tail on 15 clusters of 8 without the seam"))
        return out;
    if (!need(c.L <= kTailMaxL && c.K == 128 && c.V == 128 && c.F == 128 && p.tail_tiles() == 8, "not the shape the kernel is compiled for")) return out;
    need(V2TailLayout::make(0, p.tail_dims()).bytes <= kV2SmemBytes, "the tail's own shared memory does not fit");
    const int T = p.tail_tiles();
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        const V2Task& t = p.tasks[i];
        need(t.qk0 % 2 == 0 && t.qkn % 2 == 0 && t.fa0 % 2 == 0 && t.fan % 2 == 0, "task " + std::to_string(i) + "'s share is not whole bf16 pairs");
        need(t.qkn == c.K / T, "task " + std::to_string(i) + "'s share has " + std::to_string(t.qkn) + " keys, not the K / T whose f_b_w rows POLL stages");
    }
    for (int k = 0; k < p.ctas(); ++k)
        for (V2Role role : {V2Role::reducer, V2Role::seam}) {
            const int q = PlanV2::proc(k, role);
            const auto& prog = p.programs[size_t(q)];
            for (int i = 0; i < int(prog.size()); ++i) {
                const V2Op op = prog[size_t(i)].opcode();
                const bool reducer = op == V2Op::SYNC || op == V2Op::REDUCE || op == V2Op::PUBLISH || op == V2Op::RELEASE;
                const bool seam = op == V2Op::SYNC || (op >= V2Op::POLL && op <= V2Op::NORM) || (fused && op >= V2Op::LOAD && op <= V2Op::X);
                const std::string step = p.proc_name(q) + "'s " + p.describe(prog[size_t(i)]);
                need(role == V2Role::reducer ? reducer : seam, step + " is a step the probe does not run");
                if (op == V2Op::POLL)
                    need(i + 1 < int(prog.size()) && prog[size_t(i) + 1].opcode() == V2Op::DECAY && prog[size_t(i) + 1].a == prog[size_t(i)].a,
                         step + " is not followed by its task's DECAY");
                if (op == V2Op::SYNC || role == V2Role::reducer || op < V2Op::POLL) continue;
                const std::vector<V2Wait> w = p.waits(q, i);
                size_t words = 0;
                for (const V2Wait& x : w) words += x.bar.kind == V2Bar::words;
                need(op == V2Op::DECAY  ? w.size() == 1 && w[0].bar.kind == V2Bar::share
                     : op == V2Op::REC  ? w.size() == 1 && w[0].bar.kind == V2Bar::decay
                     : op == V2Op::POLL ? words == w.size() && words <= size_t(kV2TailStageWaits)
                                        : words + 1 == w.size() && words <= size_t(kV2TailStageWaits) && w.back().bar.kind == V2Bar::onrm,
                     step + " waits on what the probe does not");
            }
        }
    return out;
}

// The in_proj probe's tailhop mode (v2_tail_hop.cuh) places head h's tasks itself: tile t on rank t
// of cluster h, its share q, k and f_a rows 16t .. 16t + 15. Each task of `p` (one request, with the
// tail) that the plan places otherwise, in words; empty: the mode's placement is the plan's.
inline std::vector<std::string> tailhop_placement_problems(const PlanV2& p) {
    std::vector<std::string> out;
    if (!p.has_tail() || p.config().R != 1) return {"not a plan of one request with the tail"};
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        const V2Task& t = p.tasks[i];
        const int rows = kV2TileRows * t.tile;
        if (t.cluster != t.head || t.rank != t.tile || t.qk0 != rows || t.qkn != kV2TileRows || t.fa0 != rows || t.fan != kV2TileRows)
            out.push_back("task " + std::to_string(i) + " (head " + std::to_string(t.head) + ", tile " + std::to_string(t.tile) +
                          ") is on cluster " + std::to_string(t.cluster) + " rank " + std::to_string(t.rank) + ", sharing q and k rows from " +
                          std::to_string(t.qk0) + " and f_a rows from " + std::to_string(t.fa0) + ", not where tailhop places it");
    }
    return out;
}

}  // namespace monokda::probe::v2
