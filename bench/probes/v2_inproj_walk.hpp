// The counters kernel v2's in_proj probe keeps where its plan has the entry (bench/probes/
// v2_inproj_kernel.cuh: a division by a run-time value is ~25 instructions, a global load beside the
// stream far more), and the host's walk that holds their sequence to the plan's tables: each chunk's
// unit, k-steps, offset, ring slot and round, the waits of each copy and take, each unit's receive
// slot and the free round its senders wait for. The probe's check mode and every plan it builds run
// the walk; tests/bench/test_v2_inproj_walk.cpp plants a table the counters disagree with.
#pragma once
#include <string>
#include <vector>

#include "core/plan_v2.hpp"  // MONOKDA_HD, the plan

namespace monokda::probe::v2 {

// A chunk's ring slot and round (its barriers' parity is round & 1).
struct RingPos {
    int slot = 0, round = 0;
    MONOKDA_HD void next(int depth) {
        if (++slot == depth) slot = 0, ++round;
    }
};

// The next chunk of a CTA's run: its unit (in the cluster), which chunk of the unit, its byte offset
// in the run, its ring place.
struct ChunkPos {
    int unit = 0, q = 0, off = 0;
    RingPos ring;
    MONOKDA_HD void next(int bytes, int depth, int chunks_per_unit) {
        off += bytes;
        ring.next(depth);
        if (++q == chunks_per_unit) q = 0, ++unit;
    }
};

// A unit's receive slot and its use of that slot: a sender waits for the free of use − 1.
struct SendPos {
    int slot = 0, use = 0;
    MONOKDA_HD void next(int slots) {
        if (++slot == slots) slot = 0, ++use;
    }
};

namespace walk_detail {

inline std::string n(long v) { return std::to_string(v); }

inline bool same_waits(const std::vector<V2Wait>& a, const std::vector<V2Wait>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!(a[i].bar == b[i].bar) || a[i].round != b[i].round) return false;
    return true;
}

// The producer of CTA k, as produce() steps: chunk j's entry, then COPY j's waits (the cap, then the
// slot's refill). The kernel's ring depth and cap are the plan's parameters (its Args).
inline void walk_producer(const PlanV2& p, int k, std::vector<std::string>& out) {
    const int KQ = p.params().chunk_ksteps, per_unit = p.slice_ksteps() / KQ, cl = p.cluster_of(k);
    const int depth = p.params().ring_depth, cap = p.params().in_flight;
    const int pr = PlanV2::proc(k, V2Role::producer);
    const auto& prog = p.programs[size_t(pr)];
    const int units = p.cluster_first[size_t(cl) + 1] - p.cluster_first[size_t(cl)];
    ChunkPos at;
    RingPos old;
    size_t i = 0;
    for (size_t j = 0; j < p.chunks[size_t(k)].size(); ++j) {
        const V2Chunk& ch = p.chunks[size_t(k)][j];
        const std::string where = "CTA " + n(k) + " chunk " + n(long(j));
        if (at.unit == units) {
            out.push_back(where + " is past the kernel's run: its producer stops after the cluster's " + n(units) + " units");
            return;
        }
        if (ch.unit != p.cluster_first[size_t(cl)] + at.unit || ch.kstep0 != at.q * KQ || ch.ksteps != KQ || ch.offset != at.off ||
            ch.slot != at.ring.slot || ch.round != at.ring.round)
            out.push_back(where + " is (unit " + n(ch.unit) + ", k-step " + n(ch.kstep0) + " x " + n(ch.ksteps) + ", byte " +
                          n(ch.offset) + ", slot " + n(ch.slot) + " round " + n(ch.round) + "); the kernel's counters say (unit " +
                          n(p.cluster_first[size_t(cl)] + at.unit) + ", k-step " + n(at.q * KQ) + " x " + n(KQ) + ", byte " +
                          n(at.off) + ", slot " + n(at.ring.slot) + " round " + n(at.ring.round) + ")");
        std::vector<V2Wait> want;
        if (int(j) >= cap) want.push_back({{V2Bar::full, k, old.slot}, old.round}), old.next(depth);
        if (at.ring.round > 0) want.push_back({{V2Bar::empty, k, at.ring.slot}, at.ring.round - 1});
        while (i < prog.size() && !(prog[i].opcode() == V2Op::COPY && prog[i].a == int(j))) ++i;
        if (i == prog.size()) {
            out.push_back(where + ": the producer's program has no COPY of it in order");
            return;
        }
        if (!same_waits(p.waits(pr, int(i)), want))
            out.push_back(where + ": its COPY waits are not the kernel's (the oldest copy in flight, then the slot's last free)");
        at.next(ch.bytes, depth, per_unit);
    }
    if (at.unit != units || at.q != 0)
        out.push_back("CTA " + n(k) + "'s run ends at unit " + n(at.unit) + " chunk " + n(at.q) + " of its cluster's " + n(units) +
                      " units: the kernel's producer stops at unit " + n(units));
}

// Consumer warp w of CTA k, as consume() steps: every chunk taken in order at the ring's counters;
// each unit's sends (the even warp of a tile in it) at the unit's receive slot, after its free.
inline void walk_consumer(const PlanV2& p, int k, int w, std::vector<std::string>& out) {
    const int q = PlanV2::proc(k, V2Role::consumer, w), cl = p.cluster_of(k), R = p.params().ranks;
    const auto& prog = p.programs[size_t(q)];
    const std::string who = "CTA " + n(k) + " consumer " + n(w);
    RingPos ring;
    int next = 0;
    for (size_t i = 0; i < prog.size(); ++i) {
        if (prog[i].opcode() == V2Op::FREE) ring.next(p.params().ring_depth);
        if (prog[i].opcode() != V2Op::TAKE) continue;
        const std::vector<V2Wait> want{{{V2Bar::full, k, ring.slot}, ring.round}};
        if (prog[i].a != next++ || !same_waits(p.waits(q, int(i)), want))
            out.push_back(who + " TAKE(chunk " + n(prog[i].a) + ") is not the kernel's next take (chunk " + n(next - 1) + ", slot " +
                          n(ring.slot) + " round " + n(ring.round) + ")");
    }
    if (next != int(p.chunks[size_t(k)].size()))
        out.push_back(who + " takes " + n(next) + " chunks; the kernel's consumers take all " + n(long(p.chunks[size_t(k)].size())));
    if (w % 2) return;
    SendPos sp;
    for (int u = p.cluster_first[size_t(cl)]; u < p.cluster_first[size_t(cl) + 1]; ++u, sp.next(p.params().recv_slots)) {
        std::vector<int> owners;
        for (size_t i = 0; i < prog.size(); ++i) {
            if (prog[i].opcode() != V2Op::SEND || p.partials[size_t(prog[i].a)].unit != u) continue;
            const V2Partial& pa = p.partials[size_t(prog[i].a)];
            const V2Recv& rv = p.recvs[size_t(prog[i].a) / size_t(R)];
            owners.push_back(pa.owner);
            std::vector<V2Wait> want;
            if (sp.use > 0) want.push_back({{V2Bar::free, k, sp.slot}, sp.use - 1});
            if (rv.slot != sp.slot || pa.free_round != sp.use - 1 || !same_waits(p.waits(q, int(i)), want))
                out.push_back(who + " SEND of unit " + n(u) + " to owner rank " + n(pa.owner) + " is slot " + n(rv.slot) +
                              " after free round " + n(pa.free_round) + "; the kernel's counters say slot " + n(sp.slot) +
                              " after free round " + n(sp.use - 1));
        }
        const int m = w / 2;
        const bool sends = m < p.units[size_t(u)].tiles;
        if (owners != (sends ? std::vector<int>{2 * m, 2 * m + 1} : std::vector<int>{}))
            out.push_back(who + " sends unit " + n(u) + "'s partials to " + n(long(owners.size())) +
                          " owners; the kernel sends tile " + n(m) + "'s to owner ranks " + (sends ? n(2 * m) + " and " + n(2 * m + 1) : "none"));
    }
}

}  // namespace walk_detail

// Where the kernel's counters part from the plan's tables (empty: they agree), at most 50 lines.
inline std::vector<std::string> walk_problems(const PlanV2& p) {
    std::vector<std::string> out;
    for (int k = 0; k < p.ctas() && out.size() < 50; ++k) {
        walk_detail::walk_producer(p, k, out);
        for (int w = 0; w < kV2Consumers; ++w) walk_detail::walk_consumer(p, k, w, out);
    }
    if (out.size() > 50) out.resize(50);
    return out;
}

}  // namespace monokda::probe::v2
