// The plans kernel v2's in_proj probe runs on (bench/probes/v2_inproj_probe.cu): one PlanV2 for each
// ring setting and S a case uses, built for the production shape; refused loudly (exit 1) where it is
// not a plan the kernel is compiled for, fails a check of its own, or has tables the kernel's
// counters would part from (v2_inproj_walk.hpp); its flat table uploaded; the kernel's parameters
// filled from it. The weight is packed once, by the first plan: the packing does not depend on the
// ring or S (tests/core/test_plan_v2.cpp), and every later plan's runs are held to that plan's.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/probes/probe_util.hpp"
#include "bench/probes/v2_inproj_kernel.cuh"
#include "core/error.hpp"

namespace monokda::probe::v2 {

// What a plan takes from a probe case: S, the ring's setting, the seam's sources (0: no seam, x
// loaded), and the tail's requests (0: the plan ends at proj, one request of S tokens; R: R requests
// of S / R tokens with the tail, the fused mode's).
struct PlanKey {
    int S, kq, stages, inflight, slots, seam_nb = 0, tail_R = 0;
    bool operator<(const PlanKey& o) const {
        return std::tie(S, kq, stages, inflight, slots, seam_nb, tail_R) < std::tie(o.S, o.kq, o.stages, o.inflight, o.slots, o.seam_nb, o.tail_R);
    }
};

struct PlanTables {
    PlanV2 plan;
    std::vector<int32_t> words;  // plan.serialize()
    PlanV2View device{};         // the words on the device, and where each table starts
};

[[noreturn]] inline void refuse_plan(const PlanKey& k, const std::string& what) {
    std::fprintf(stderr, "monokda-v2-inproj-probe: the plan for S %d, chunks of %d k-steps x %d, %d in flight, %d receive slots: %s\n",
                 k.S, k.kq, k.stages, k.inflight, k.slots, what.c_str());
    std::exit(1);
}

// The seam's entries as the kernel takes them (SeamPlan): one a rank, so every cluster's rank r must
// have cluster 0's; rows within its table; the inputs' bytes those its copies bring.
inline void hold_seam_to_kernel(const PlanKey& key, const PlanV2& p) {
    auto need = [&](bool ok, const std::string& what) {
        if (!ok) refuse_plan(key, "its seam: " + what);
    };
    const int S = p.config().S(), nb = p.config().nb;
    need(S <= kSeamMaxS && p.seam_rank_slices() == kRankSlices && p.seam_slices() == kSlices, "not the seam the kernel is compiled for");
    for (int k = 0; k < kCtas; ++k) {
        const V2SeamCta &e = p.seam_ctas[size_t(k)], &r = p.seam_ctas[size_t(p.rank_of(k))];
        need(e.in_bytes == r.in_bytes && e.part_bytes == r.part_bytes && e.wgt_bytes == r.wgt_bytes && e.msq_bytes == r.msq_bytes &&
                 e.rows_owned == r.rows_owned,
             "CTA " + std::to_string(k) + "'s entry is not its rank's in cluster 0 (one parameter entry a rank)");
        need(e.in_bytes == (3 + S * (2 + nb)) * kSliceCols * 2, "CTA " + std::to_string(k) + "'s in bytes are not its copies'");
    }
    for (int s = 0; s < S; ++s) need(p.seam_owner[size_t(s)] >= 0 && p.seam_owner[size_t(s)] < kRanks, "row " + std::to_string(s) + "'s owner");
}

// The kernel is compiled for the production shape on 15 clusters of 8 with NT n-tiles of x, a
// cluster's chunk sizes as one parameter table: the plan must be that one.
inline void hold_to_kernel(const PlanKey& key, const PlanV2& p, int nt) {
    auto need = [&](bool ok, const std::string& what) {
        if (!ok) refuse_plan(key, what);
    };
    need(p.params().ranks == kRanks && p.params().clusters == kClusters && p.ctas() == kCtas,
         "not the " + std::to_string(kClusters) + " clusters of " + std::to_string(kRanks) + " the kernel is compiled for");
    need(p.config().D == D && p.config().N == N && p.slice_ksteps() == kKSteps, "not the shape the kernel is compiled for");
    need(p.n_tiles() == nt, "S pads to " + std::to_string(p.n_tiles()) + " n-tiles, the kernel chosen has " + std::to_string(nt));
    need(p.units.size() <= size_t(kMaxUnits), "more units than the parameter table holds");
    const Smem L = Smem::layout(nt, p.params().chunk_ksteps * kV2UnitTiles * kTileBytes, p.params().ring_depth, p.params().recv_slots);
    // the seam's memory follows in_proj's, at the plan's layout (its start's alignment counted by the plan)
    // and the tail's after both (every CTA laid out for the most pairs and PUBLISHes a CTA has)
    const int bytes = p.has_seam() ? SeamSmem::layout(L.bytes, p.config().S(), p.config().nb).bytes : L.bytes;
    for (int k = 0; k < kCtas; ++k) {
        const int want = p.has_tail() ? V2TailLayout::make(bytes, p.tail_dims()).bytes : bytes;
        need(p.rings[size_t(k)].slot_bytes == L.x / p.params().ring_depth && p.smem_bytes(k) >= want && p.smem_bytes(k) < want + 16,
             "CTA " + std::to_string(k) + "'s ring slots or shared memory are not the kernel's layout");
    }
    if (p.has_tail()) {
        const std::vector<std::string> tail = tail_kernel_problems(p, true);
        need(tail.empty(), tail.empty() ? "" : "its tail: " + tail[0]);
    }
    if (p.has_seam()) hold_seam_to_kernel(key, p);
    for (const V2Recv& rv : p.recvs)
        need(rv.bytes == kRanks * kV2OwnerRows * nt * kV2NTileCols * 4, "a receive slot's bytes are not the kernel's slot layout");
    for (int k = 0; k < kCtas; ++k) {
        const auto& mine = p.chunks[size_t(k)];
        const auto& first = p.chunks[size_t(p.cta(p.cluster_of(k), 0))];
        need(mine.size() <= size_t(kMaxRunChunks), "CTA " + std::to_string(k) + " has more chunks than the parameter table holds");
        bool same = mine.size() == first.size();
        for (size_t j = 0; same && j < mine.size(); ++j) same = mine[j].bytes == first[j].bytes;
        need(same, "CTA " + std::to_string(k) + "'s chunk sizes are not its cluster's rank 0's (one parameter table a cluster)");
    }
    const auto probs = p.problems();
    need(probs.empty(), probs.empty() ? "" : "its check " + probs[0].check + " fails: " + probs[0].what);
    const auto walk = walk_problems(p);
    for (const std::string& w : walk) std::fprintf(stderr, "  %s\n", w.c_str());
    need(walk.empty(), std::to_string(walk.size()) + " places where the kernel's counters part from its tables (above)");
}

// The plan for `key`, built and held the first time (its words on the device), then from `cache`.
// packed_runs: the runs the weight was packed with (empty: this plan packs it, the caller does).
inline const PlanTables& tables_for(std::map<PlanKey, PlanTables>& cache, const PlanKey& key, int nt,
                                    const std::vector<int32_t>& packed_runs) {
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    Config c = Config::preset("k3");
    c.R = key.tail_R ? key.tail_R : 1, c.L = key.S / c.R, c.slots = key.S + 1;
    if (key.seam_nb) c.nb = key.seam_nb;
    PlanV2Params pp = PlanV2Params::for_config(c);
    pp.tail = key.tail_R ? 1 : 0;
    pp.chunk_ksteps = key.kq, pp.ring_depth = key.stages, pp.in_flight = key.inflight, pp.recv_slots = key.slots;
    pp.seam = key.seam_nb ? 1 : 0;  // a case with the seam runs the plan's; one with x loaded, a plan without
    PlanTables t{};
    try {
        t.plan = PlanV2::build(c, pp);
        hold_to_kernel(key, t.plan, nt);
        t.words = t.plan.serialize();
        t.device.at = v2_layout(read_v2_header(t.words));
    } catch (const BadInput& e) {
        refuse_plan(key, e.what());
    }
    if (!packed_runs.empty() && t.plan.run_offset != packed_runs) refuse_plan(key, "its runs are not those the weight was packed with");
    int32_t* d_words = nullptr;
    probe::check("monokda-v2-inproj-probe", cudaMalloc(&d_words, t.words.size() * 4), "plan");
    probe::check("monokda-v2-inproj-probe", cudaMemcpy(d_words, t.words.data(), t.words.size() * 4, cudaMemcpyHostToDevice), "plan copy");
    t.device.w = d_words;
    return cache.emplace(key, std::move(t)).first->second;
}

// The kernel's view of the plan and its parameter tables, from the plan.
inline void fill_plan_args(Args& a, const PlanTables& t) {
    const PlanV2& p = t.plan;
    a.plan = t.device;
    a.stages = p.params().ring_depth, a.inflight = p.params().in_flight, a.slots = p.params().recv_slots;
    for (int k = 0; k < kCtas; ++k) a.run_off[k] = p.run_offset[size_t(k)];
    for (int c = 0; c <= kClusters; ++c) a.first_p[c] = p.cluster_first[size_t(c)];
    for (size_t u = 0; u < p.units.size(); ++u) a.mt_p[u] = (unsigned char)p.units[u].tiles;
    for (int c = 0; c < kClusters; ++c) {
        const auto& ch = p.chunks[size_t(p.cta(c, 0))];
        for (size_t j = 0; j < ch.size(); ++j) a.bytes_p[c][j] = (unsigned short)ch[j].bytes;
    }
    for (int c = 0; c < kClusters; ++c)  // the tail's gate (tail 4): each group's last unit in the cluster
        for (int g = 0; g < 3; ++g) a.tail_after[c][g] = -1;
    for (int c = 0; c < kClusters; ++c)
        for (int u = p.cluster_first[size_t(c)]; u < p.cluster_first[size_t(c) + 1]; ++u)
            for (int t = 0; t < p.units[size_t(u)].tiles; ++t) {
                const int h = v2_row_head(p.config(), p.units[size_t(u)].row0[t]);
                const int g = h < 0 ? 0 : h == c ? 1 : h == p.config().H ? 2 : -1;
                if (g >= 0) a.tail_after[c][g] = (signed char)(u - p.cluster_first[size_t(c)]);
            }
    a.seam_plan = SeamPlan{};
    if (!p.has_seam()) return;
    for (int r = 0; r < kRanks; ++r) a.seam_plan.cta[r] = p.seam_ctas[size_t(r)];  // cluster 0's (hold_seam_to_kernel)
    for (int s = 0; s < p.config().S(); ++s)
        a.seam_plan.owner[s] = (signed char)p.seam_owner[size_t(s)], a.seam_plan.slot[s] = (signed char)p.seam_slot(s);
}

}  // namespace monokda::probe::v2
