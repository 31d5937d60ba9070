// Kernel v2's plan checks (core/plan_v2.hpp, PlanV2::problems): each holds two of the plan's tables
// to each other (the units to in_proj's rows, the chunks to the units and the ring, the cluster
// buffers to the partials that fill them and the arrivals that free them, the seam's barriers to the
// hand-offs that complete them and its owners to the rows, the barriers to the programs; the tail's in
// plan_v2_tail_checks.cpp), names what is wrong, and is the only one that fires on its planted bad
// plan (tests/core/test_plan_v2_checks.cpp).
#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "core/plan_v2.hpp"
#include "core/plan_v2_checker.hpp"

namespace monokda {

using namespace v2check;

namespace {

// Every in_proj row in exactly one tile of one unit; a cluster's units consecutive.
void units_cover_rows(Checker& c) {
    const PlanV2& p = c.p;
    const int N = p.config().N;
    std::vector<int> seen(size_t(N), 0);
    for (size_t u = 0; u < p.units.size(); ++u) {
        const V2Unit& x = p.units[u];
        c.need(x.tiles >= 1 && x.tiles <= kV2UnitTiles, "unit " + n(long(u)) + " has " + n(x.tiles) + " tiles");
        for (int k = 0; k < kV2UnitTiles; ++k) {
            if (k >= x.tiles) {
                c.need(x.row0[k] == -1, "unit " + n(long(u)) + " names a row for tile " + n(k) + " past its " + n(x.tiles));
                continue;
            }
            if (x.row0[k] < 0 || x.row0[k] % kV2TileRows || x.row0[k] + kV2TileRows > N) {
                c.fail("unit " + n(long(u)) + " tile " + n(k) + " starts at row " + n(x.row0[k]) + ", not a 16-row tile of in_proj");
                continue;
            }
            for (int r = x.row0[k]; r < x.row0[k] + kV2TileRows; ++r) ++seen[size_t(r)];
        }
    }
    for (int r = 0; r < N; r += kV2TileRows)
        c.need(seen[size_t(r)] == 1, "in_proj rows " + n(r) + ".." + n(r + kV2TileRows - 1) + " are in " + n(seen[size_t(r)]) + " units");
    c.need(int(p.cluster_first.size()) == p.params().clusters + 1 && p.cluster_first.front() == 0 &&
               p.cluster_first.back() == int(p.units.size()),
           "cluster_first does not span the unit table");
    for (int k = 0; k + 1 < int(p.cluster_first.size()); ++k)
        for (int u = p.cluster_first[size_t(k)]; u < p.cluster_first[size_t(k) + 1] && u < int(p.units.size()); ++u)
            c.need(p.units[size_t(u)].cluster == k, "unit " + n(u) + " is in cluster " + n(k) + "'s range but names cluster " +
                                                        n(p.units[size_t(u)].cluster));
}

// Each CTA's chunks back to back from offset 0 of its run, the runs back to back.
void chunks_contiguous(Checker& c) {
    const PlanV2& p = c.p;
    c.need(p.run_offset.size() == size_t(p.ctas()) + 1 && p.run_offset[0] == 0, "run_offset does not start the first run at 0");
    for (int k = 0; k < p.ctas() && size_t(k) + 1 < p.run_offset.size(); ++k) {
        int64_t at = 0;
        for (size_t j = 0; j < p.chunks[size_t(k)].size(); ++j) {
            const V2Chunk& ch = p.chunks[size_t(k)][j];
            c.need(ch.offset == at, "CTA " + n(k) + " chunk " + n(long(j)) + " starts at byte " + n(ch.offset) + " of its run, not " +
                                        n(long(at)) + " (where the chunk before it ends)");
            at = int64_t(ch.offset) + ch.bytes;
        }
        c.need(p.run_offset[size_t(k) + 1] - p.run_offset[size_t(k)] == at,
               "CTA " + n(k) + "'s run is " + n(p.run_offset[size_t(k) + 1] - p.run_offset[size_t(k)]) + " bytes, its chunks " + n(long(at)));
    }
}

// A CTA's chunks are its cluster's units in order, each unit's k-steps 0 .. slice_ksteps − 1 in
// order, each chunk ksteps × tiles × 512 bytes and within a ring slot.
void chunks_match_units(Checker& c) {
    const PlanV2& p = c.p;
    for (int k = 0; k < p.ctas(); ++k) {
        const int cl = p.cluster_of(k);
        int u = p.cluster_first[size_t(cl)], next_k = 0;
        for (size_t j = 0; j < p.chunks[size_t(k)].size(); ++j) {
            const V2Chunk& ch = p.chunks[size_t(k)][j];
            const std::string at = "CTA " + n(k) + " chunk " + n(long(j));
            if (ch.unit != u || ch.kstep0 != next_k) {
                c.fail(at + " is unit " + n(ch.unit) + " k-step " + n(ch.kstep0) + ", where unit " + n(u) + " k-step " + n(next_k) + " is next");
                return;
            }
            c.need(ch.bytes == ch.ksteps * p.units[size_t(u)].tiles * kV2TileBytes,
                   at + " is " + n(ch.bytes) + " bytes for " + n(ch.ksteps) + " k-steps of " + n(p.units[size_t(u)].tiles) + " tiles");
            c.need(ch.bytes <= p.rings[size_t(k)].slot_bytes, at + " (" + n(ch.bytes) + " bytes) does not fit a ring slot");
            next_k += ch.ksteps;
            if (next_k >= p.slice_ksteps()) next_k = 0, ++u;
        }
        c.need(u == p.cluster_first[size_t(cl) + 1] && next_k == 0, "CTA " + n(k) + "'s chunks end before its cluster's last unit does");
    }
}

void ring_depth(Checker& c) {
    for (int k = 0; k < c.p.ctas(); ++k) {
        const V2Ring& r = c.p.rings[size_t(k)];
        c.need(r.in_flight >= 1 && r.in_flight <= r.depth,
               "CTA " + n(k) + "'s in-flight cap " + n(r.in_flight) + " is outside 1..its ring depth " + n(r.depth));
    }
}

// Chunk j in slot j mod depth, round j / depth: the parities its barriers are waited with.
void chunk_slots(Checker& c) {
    for (int k = 0; k < c.p.ctas(); ++k) {
        const int d = c.p.rings[size_t(k)].depth;
        for (size_t j = 0; j < c.p.chunks[size_t(k)].size(); ++j) {
            const V2Chunk& ch = c.p.chunks[size_t(k)][j];
            c.need(d > 0 && ch.slot == int(j) % d && ch.round == int(j) / d,
                   "CTA " + n(k) + " chunk " + n(long(j)) + " is in slot " + n(ch.slot) + " round " + n(ch.round) + ", not " +
                       (d > 0 ? n(long(j) % d) + " round " + n(long(j) / d) : std::string("a slot")));
        }
    }
}

// Each chunk taken, then freed, by as many consumer warps of its CTA as its empty barrier counts.
void ring_arrivals(Checker& c) {
    const PlanV2& p = c.p;
    for (int k = 0; k < p.ctas(); ++k) {
        std::vector<int> frees(p.chunks[size_t(k)].size(), 0);
        for (int w = 0; w < kV2Consumers; ++w) {
            std::set<int> taken;
            for (const V2Instr& in : p.programs[size_t(PlanV2::proc(k, V2Role::consumer, w))]) {
                if (in.opcode() == V2Op::TAKE) taken.insert(in.a);
                if (in.opcode() != V2Op::FREE || in.a < 0 || size_t(in.a) >= frees.size()) continue;
                c.need(taken.count(in.a) == 1, "CTA " + n(k) + " consumer " + n(w) + " frees chunk " + n(in.a) + " it has not taken");
                ++frees[size_t(in.a)];
            }
        }
        for (size_t j = 0; j < frees.size(); ++j)
            c.need(frees[j] == p.rings[size_t(k)].consumers, "CTA " + n(k) + " chunk " + n(long(j)) + " is freed by " + n(frees[j]) +
                                                                 " warps; its empty barrier counts " + n(p.rings[size_t(k)].consumers));
    }
}

// Each receive entry completes on exactly the bytes its partials send, each partial one owner's 8
// rows of the padded columns in fp32.
void recv_bytes(Checker& c) {
    const PlanV2& p = c.p;
    const int R = p.params().ranks;
    for (size_t e = 0; e < p.recvs.size(); ++e) {
        long sent = 0;
        for (int s = 0; s < R && e * size_t(R) + size_t(s) < p.partials.size(); ++s) {
            const V2Partial& pa = p.partials[e * size_t(R) + size_t(s)];
            c.need(pa.bytes == p.partial_bytes(), "partial " + n(long(e) * R + s) + " is " + n(pa.bytes) + " bytes, not " +
                                                      n(p.partial_bytes()) + " (8 rows of " + n(p.n_tiles() * kV2NTileCols) + " fp32 columns)");
            sent += pa.bytes;
        }
        c.need(p.recvs[e].bytes == sent, "receive entry " + n(long(e)) + " (unit " + n(p.recvs[e].unit) + ", owner rank " +
                                             n(p.recvs[e].owner) + ") completes on " + n(p.recvs[e].bytes) + " bytes; its senders send " + n(sent));
    }
}

// Each receive entry's partials: one from every rank, each sent once, by its sender's even warp of the tile.
void recv_senders(Checker& c) {
    const PlanV2& p = c.p;
    const int R = p.params().ranks;
    c.need(p.partials.size() == p.recvs.size() * size_t(R), "the partial table is not ranks entries a receive entry");
    std::map<int, int> sends;  // partial -> times sent
    for (int q = 0; q < p.processes(); ++q)
        for (const V2Instr& in : p.programs[size_t(q)]) {
            if (in.opcode() != V2Op::SEND) continue;
            ++sends[in.a];
            if (in.a < 0 || size_t(in.a) >= p.partials.size()) continue;
            const V2Partial& pa = p.partials[size_t(in.a)];
            const int k = PlanV2::proc_cta(q), w = PlanV2::proc_warp(q);
            c.need(PlanV2::proc_role(q) == V2Role::consumer && p.rank_of(k) == pa.sender && w == 2 * pa.tile &&
                       p.cluster_of(k) == p.units[size_t(pa.unit)].cluster,
                   p.proc_name(q) + " sends partial " + n(in.a) + ", rank " + n(pa.sender) + "'s of tile " + n(pa.tile));
        }
    for (size_t e = 0; e < p.recvs.size(); ++e) {
        std::set<int> from;
        for (int s = 0; s < R && e * size_t(R) + size_t(s) < p.partials.size(); ++s) {
            const size_t i = e * size_t(R) + size_t(s);
            const V2Partial& pa = p.partials[i];
            from.insert(pa.sender);
            c.need(pa.unit == p.recvs[e].unit && pa.owner == p.recvs[e].owner && pa.tile == pa.owner / 2,
                   "partial " + n(long(i)) + " is not receive entry " + n(long(e)) + "'s (unit, owner, tile)");
            c.need(sends[int(i)] == 1, "partial " + n(long(i)) + " is sent " + n(sends[int(i)]) + " times");
        }
        c.need(int(from.size()) == R, "receive entry " + n(long(e)) + " has partials from " + n(long(from.size())) + " of " + n(R) + " ranks");
    }
}

// Each unit's 2·tiles owners have one receive entry each, for their tile's 8 rows, reduced once by
// the owner CTA's reducer.
void owners_publish_rows(Checker& c) {
    const PlanV2& p = c.p;
    std::map<std::pair<int, int>, int> entries;
    std::map<int, int> reduced;
    for (int k = 0; k < p.ctas(); ++k)
        for (const V2Instr& in : p.programs[size_t(PlanV2::proc(k, V2Role::reducer))])
            if (in.opcode() == V2Op::REDUCE && in.a >= 0 && size_t(in.a) < p.recvs.size()) {
                ++reduced[in.a];
                const V2Recv& rv = p.recvs[size_t(in.a)];
                c.need(p.cta(p.units[size_t(rv.unit)].cluster, rv.owner) == k, "CTA " + n(k) + " reduces receive entry " + n(in.a) + " of owner rank " + n(rv.owner));
            }
    for (size_t e = 0; e < p.recvs.size(); ++e) {
        const V2Recv& rv = p.recvs[e];
        const V2Unit& u = p.units[size_t(rv.unit)];
        ++entries[{rv.unit, rv.owner}];
        c.need(rv.owner >= 0 && rv.owner < 2 * u.tiles && rv.row0 == u.row0[rv.owner / 2] + kV2OwnerRows * (rv.owner % 2),
               "receive entry " + n(long(e)) + " publishes rows " + n(rv.row0) + "..; owner rank " + n(rv.owner) + " of unit " + n(rv.unit) +
                   " owns " + (rv.owner >= 0 && rv.owner < 2 * u.tiles ? n(u.row0[rv.owner / 2] + kV2OwnerRows * (rv.owner % 2)) + ".." : std::string("none")));
        c.need(reduced[int(e)] == 1, "receive entry " + n(long(e)) + " is reduced " + n(reduced[int(e)]) + " times");
    }
    for (size_t u = 0; u < p.units.size(); ++u)
        for (int o = 0; o < 2 * p.units[u].tiles; ++o)
            c.need(entries[{int(u), o}] == 1, "unit " + n(long(u)) + " owner rank " + n(o) + " has " + n(entries[{int(u), o}]) + " receive entries");
}

// A unit's receive slot is its index in the cluster mod recv_slots; each (owner, slot)'s uses are
// rounds 0, 1, … (the parity its REDUCE waits with); a sender waits for the slot's previous use to be freed.
void recv_slot_rounds(Checker& c) {
    const PlanV2& p = c.p;
    const int slots = p.params().recv_slots;
    std::map<std::pair<int, int>, int> last;  // (cta, slot) -> round
    for (size_t e = 0; e < p.recvs.size(); ++e) {
        const V2Recv& rv = p.recvs[e];
        const int i = p.unit_in_cluster(rv.unit), owner = p.cta(p.units[size_t(rv.unit)].cluster, rv.owner);
        auto it = last.find({owner, rv.slot});
        const int round = it == last.end() ? 0 : it->second + 1;
        c.need(rv.slot == i % slots && rv.round == round,
               "receive entry " + n(long(e)) + " is slot " + n(rv.slot) + " round " + n(rv.round) + "; unit " + n(i) +
                   " of its cluster takes slot " + n(i % slots) + " round " + n(round));
        last[{owner, rv.slot}] = rv.round;
        for (int s = 0; s < p.params().ranks && e * size_t(p.params().ranks) + size_t(s) < p.partials.size(); ++s) {
            const V2Partial& pa = p.partials[e * size_t(p.params().ranks) + size_t(s)];
            c.need(pa.free_round == i / slots - 1, "partial " + n(long(e) * p.params().ranks + s) + " waits for free round " +
                                                       n(pa.free_round) + "; its slot's previous use is round " + n(i / slots - 1));
        }
    }
}

// A unit's frees: one an owner, on the unit's slot, their counts making up the free barrier's ranks.
void free_counts(Checker& c) {
    const PlanV2& p = c.p;
    c.need(p.frees.size() == p.recvs.size(), "the free table is not one entry a receive entry");
    std::map<int, int> sum;
    for (size_t e = 0; e < p.frees.size() && e < p.recvs.size(); ++e) {
        const V2Free& f = p.frees[e];
        c.need(f.unit == p.recvs[e].unit && f.owner == p.recvs[e].owner && f.slot == p.recvs[e].slot && f.count >= 1,
               "free entry " + n(long(e)) + " is not receive entry " + n(long(e)) + "'s (unit, owner, slot)");
        sum[f.unit] += f.count;
    }
    for (size_t u = 0; u < p.units.size(); ++u)
        c.need(sum[int(u)] == p.params().ranks, "unit " + n(long(u)) + "'s owners arrive " + n(sum[int(u)]) + " times on each free barrier; it counts " +
                                                    n(p.params().ranks));
}

// Each barrier spans its cluster; every role of the cluster passes each of its barriers once, the
// entry before any peer's buffer is touched (SEND, RELEASE) and after the producer's INIT, the exit last.
void cluster_barriers(Checker& c) {
    const PlanV2& p = c.p;
    for (size_t b = 0; b < p.barriers.size(); ++b)
        c.need(p.barriers[b].scope == 0, "the " + std::string(to_string(V2Point(p.barriers[b].point))) + " barrier of cluster " +
                                             n(p.barriers[b].cluster) + " has CTA scope: it does not order one CTA's steps before a peer's");
    for (int q = 0; q < p.processes(); ++q) {
        const auto& prog = p.programs[size_t(q)];
        const int cl = p.cluster_of(PlanV2::proc_cta(q));
        const int entry = p.barrier_index(cl, V2Point::entry), exit = p.barrier_index(cl, V2Point::exit);
        int seen_entry = 0, seen_exit = 0;
        bool init = PlanV2::proc_role(q) != V2Role::producer;
        for (size_t i = 0; i < prog.size(); ++i) {
            const V2Instr& in = prog[i];
            if (in.opcode() == V2Op::INIT) init = true;
            if (in.opcode() == V2Op::SYNC) {
                c.need(in.a == entry || in.a == exit, p.proc_name(q) + " passes another cluster's barrier " + n(in.a));
                if (in.a == entry) c.need(init && ++seen_entry == 1, p.proc_name(q) + " passes the entry barrier before INIT or twice");
                if (in.a == exit) c.need(++seen_exit == 1 && i + 1 == prog.size(), p.proc_name(q) + " passes the exit barrier before its end or twice");
            }
            const bool peer = in.opcode() == V2Op::SEND || in.opcode() == V2Op::RELEASE || in.opcode() == V2Op::PART ||
                              in.opcode() == V2Op::GATE || in.opcode() == V2Op::MIX || in.opcode() == V2Op::POLL ||
                              in.opcode() == V2Op::DECAY || in.opcode() == V2Op::REC;
            if (peer && !seen_entry)
                c.fail(p.proc_name(q) + " " + p.describe(in) + " touches a peer's barrier before the entry barrier");
        }
        c.need(seen_entry == 1 && seen_exit == 1, p.proc_name(q) + " does not pass both of its cluster's barriers");
    }
}

// The seam's tables are there exactly when it is: an entry a CTA, its sends indexed, an owner a row.
bool seam_tables(const PlanV2& p) {
    return p.has_seam() && p.seam_ctas.size() == size_t(p.ctas()) && p.seam_send_begin.size() == size_t(p.ctas()) + 1 &&
           p.seam_owner.size() == size_t(p.config().S());
}
const char* bar_of(int32_t b) { return b >= 0 && b < int32_t(V2SeamBar::count) ? to_string(V2SeamBar(b)) : "?"; }

// Each seam barrier is armed for exactly the bytes its senders bring: part, wgt and msq for the sends
// into it, `in` for the slice's inputs (3 gains, and P, delta and the nb bank rows of each row).
void seam_armed(Checker& c) {
    const PlanV2& p = c.p;
    if (!seam_tables(p)) return;
    std::vector<std::array<long, 3>> sent(size_t(p.ctas()), {0, 0, 0});
    for (const V2SeamSend& x : p.seam_sends)
        if (x.to >= 0 && x.to < p.ctas() && x.bar >= int32_t(V2SeamBar::part) && x.bar <= int32_t(V2SeamBar::msq))
            sent[size_t(x.to)][size_t(x.bar - 1)] += x.bytes;
    for (int k = 0; k < p.ctas(); ++k) {
        const V2SeamCta& e = p.seam_ctas[size_t(k)];
        c.need(e.in_bytes == p.seam_in_bytes(), "CTA " + n(k) + "'s in barrier is armed for " + n(e.in_bytes) + " bytes; its inputs' copies are " +
                                                   n(p.seam_in_bytes()));
        const int32_t armed[3] = {e.part_bytes, e.wgt_bytes, e.msq_bytes};
        for (int b = 0; b < 3; ++b)
            c.need(armed[b] == sent[size_t(k)][size_t(b)], "CTA " + n(k) + "'s " + bar_of(b + 1) + " barrier is armed for " + n(armed[b]) +
                                                                " bytes; its senders send " + n(sent[size_t(k)][size_t(b)]));
    }
}

// Each CTA's sends, in its cluster: a part send to every owner of a row, a wgt send to every rank if
// it owns rows, an msq send to every rank; each once, in that order, carrying what its rows make.
void seam_sends(Checker& c) {
    const PlanV2& p = c.p;
    if (!p.has_seam()) {
        c.need(p.seam_sends.empty() && p.seam_ctas.empty() && p.seam_owner.empty(), "a plan without the seam has seam tables");
        return;
    }
    if (!seam_tables(p) || p.seam_send_begin.front() != 0 || p.seam_send_begin.back() != int32_t(p.seam_sends.size())) {
        c.fail("the seam's tables are not an entry a CTA, an owner a row, sends indexed by sender");
        return;
    }
    const int R = p.params().ranks;
    for (int k = 0; k < p.ctas(); ++k) {
        const int cl = p.cluster_of(k);
        std::vector<V2SeamSend> want;
        for (int o = 0; o < R; ++o) {
            const int rows = p.seam_ctas[size_t(p.cta(cl, o))].rows_owned;
            if (rows) want.push_back({k, p.cta(cl, o), int32_t(V2SeamBar::part), p.seam_part_bytes(rows)});
        }
        if (const int rows = p.seam_ctas[size_t(k)].rows_owned)
            for (int t = 0; t < R; ++t) want.push_back({k, p.cta(cl, t), int32_t(V2SeamBar::wgt), p.seam_wgt_bytes(rows)});
        for (int t = 0; t < R; ++t) want.push_back({k, p.cta(cl, t), int32_t(V2SeamBar::msq), p.seam_msq_bytes()});
        const int b = p.seam_send_begin[size_t(k)], e = p.seam_send_begin[size_t(k) + 1];
        if (e - b != int(want.size()) || b > e) {
            c.fail("CTA " + n(k) + " has " + n(e - b) + " seam sends; its cluster's owners make " + n(long(want.size())));
            continue;
        }
        for (int i = 0; i < e - b; ++i) {
            const V2SeamSend& x = p.seam_sends[size_t(b + i)];
            const V2SeamSend& y = want[size_t(i)];
            c.need(x.from == y.from && x.to == y.to && x.bar == y.bar && x.bytes == y.bytes,
                   "seam send " + n(b + i) + " is CTA " + n(x.from) + " -> CTA " + n(x.to) + " " + bar_of(x.bar) + ", " + n(x.bytes) +
                       " bytes; CTA " + n(k) + "'s send " + n(i) + " is -> CTA " + n(y.to) + " " + bar_of(y.bar) + ", " + n(y.bytes) + " bytes");
        }
    }
}

// Every row has exactly one owner, a rank; each CTA's entry owns the rows the owner table gives its rank.
void seam_owners(Checker& c) {
    const PlanV2& p = c.p;
    if (!seam_tables(p)) return;
    const int R = p.params().ranks;
    std::vector<int> owned(size_t(R), 0);
    for (size_t s = 0; s < p.seam_owner.size(); ++s) {
        const int o = p.seam_owner[s];
        if (o < 0 || o >= R) {
            c.fail("row " + n(long(s)) + " has no owner (its owner is rank " + n(o) + ", outside 0.." + n(R - 1) + ")");
            continue;
        }
        ++owned[size_t(o)];
    }
    for (int k = 0; k < p.ctas(); ++k)
        c.need(p.seam_ctas[size_t(k)].rows_owned == owned[size_t(p.rank_of(k))],
               "CTA " + n(k) + "'s seam entry owns " + n(p.seam_ctas[size_t(k)].rows_owned) + " rows; the owner table gives rank " +
                   n(p.rank_of(k)) + " " + n(owned[size_t(p.rank_of(k))]));
}

// The seam's steps, each on its own CTA: the producer's INPUT once before its first COPY; the seam's
// LOAD, PART, GATE (an owner only), MIX, X in that order between the cluster barriers; each consumer's
// XWAIT before its first TAKE. Without the seam, none of them, and the seam process passes the barriers.
void seam_programs(Checker& c) {
    const PlanV2& p = c.p;
    auto seam_op = [](V2Op op) { return op >= V2Op::INPUT && op <= V2Op::XWAIT; };
    for (int q = 0; q < p.processes(); ++q) {
        const auto& prog = p.programs[size_t(q)];
        const int k = PlanV2::proc_cta(q);
        const V2Role role = PlanV2::proc_role(q);
        std::vector<V2Op> ops;
        for (const V2Instr& in : prog) {
            if (!seam_op(in.opcode())) continue;
            ops.push_back(in.opcode());
            c.need(in.a == k, p.proc_name(q) + " " + p.describe(in) + " names another CTA's seam");
        }
        std::vector<V2Op> want;
        if (p.has_seam() && role == V2Role::producer) want = {V2Op::INPUT};
        if (p.has_seam() && role == V2Role::consumer) want = {V2Op::XWAIT};
        if (p.has_seam() && role == V2Role::seam && seam_tables(p)) {
            want = {V2Op::LOAD, V2Op::PART, V2Op::GATE, V2Op::MIX, V2Op::X};
            if (!p.seam_ctas[size_t(k)].rows_owned) want.erase(want.begin() + 2);
        }
        if (ops != want) {
            std::string s;
            for (V2Op op : want) s += std::string(s.empty() ? "" : ", ") + to_string(op);
            c.fail(p.proc_name(q) + " has " + n(long(ops.size())) + " seam steps, not " + (s.empty() ? "none" : s) + " in order");
            continue;
        }
        const V2Op first_of = role == V2Role::producer ? V2Op::COPY : V2Op::TAKE;
        for (const V2Instr& in : prog) {
            if (in.opcode() == first_of && !want.empty() && role != V2Role::seam) {
                c.fail(p.proc_name(q) + " " + p.describe(in) + " comes before its " + to_string(want[0]));
                break;
            }
            if (seam_op(in.opcode())) break;
        }
        if (role == V2Role::seam)
            for (const V2Instr& in : prog)
                c.need(in.opcode() == V2Op::SYNC || seam_op(in.opcode()) || in.opcode() >= V2Op::POLL,
                       p.proc_name(q) + " has a step of another role: " + p.describe(in));
    }
}

// A plan read from a file: what the file says of its steps and CTAs is what its tables give
// (PlanV2::misdescribed; the file's descriptions are not read as the plan, so a stale one is named).
void file_descriptions(Checker& c) {
    for (const std::string& what : c.p.misdescribed) c.fail(what);
}

void smem_fits(Checker& c) {
    for (int k = 0; k < c.p.ctas(); ++k)
        c.need(c.p.smem_bytes(k) <= kV2SmemBytes, "CTA " + n(k) + " needs " + n(c.p.smem_bytes(k)) + " bytes of shared memory, over " + n(kV2SmemBytes));
}

const std::vector<std::pair<std::string, std::function<void(Checker&)>>>& checks() {
    static const std::vector<std::pair<std::string, std::function<void(Checker&)>>> list = {
        {"units_cover_rows", units_cover_rows},       {"chunks_contiguous", chunks_contiguous},
        {"chunks_match_units", chunks_match_units},   {"ring_depth", ring_depth},
        {"chunk_slots", chunk_slots},                 {"ring_arrivals", ring_arrivals},
        {"recv_bytes", recv_bytes},                   {"recv_senders", recv_senders},
        {"owners_publish_rows", owners_publish_rows}, {"recv_slot_rounds", recv_slot_rounds},
        {"free_counts", free_counts},                 {"cluster_barriers", cluster_barriers},
        {"seam_armed", seam_armed},                   {"seam_sends", seam_sends},
        {"seam_owners", seam_owners},                 {"seam_programs", seam_programs},
        {"tail_tasks", tail_tasks},                   {"tail_programs", tail_programs},
        {"smem_fits", smem_fits},
        {"file_descriptions", file_descriptions},
    };
    return list;
}

}  // namespace

const std::vector<std::string>& PlanV2::check_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto& c : checks()) v.push_back(c.first);
        return v;
    }();
    return names;
}

std::vector<PlanV2::Problem> PlanV2::problems() const {
    Problems out;
    for (const auto& [name, run] : checks()) {
        Checker c{*this, out, name};
        run(c);
    }
    return out;
}

}  // namespace monokda
