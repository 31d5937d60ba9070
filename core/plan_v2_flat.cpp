// Kernel v2's plan as the device and a reader get it (core/plan_v2.hpp): the flat int32 table the
// kernel is to read (serialize, read_v2_header; layout in docs/plan.md), the weight packed into each
// CTA's run in A-fragment order, and the JSON form `monokda plan --kernel v2` writes.
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/plan_v2.hpp"
#include "core/version.hpp"

namespace monokda {

namespace {

// Words of the table after the header, in order, given its counts (one definition for writing and
// for checking a buffer's length).
int64_t body_words(const PlanV2Header& h, int64_t waits) {
    const int64_t procs = int64_t(h.ctas) * kV2ProcsPerCta;
    return (h.clusters + 1) + int64_t(h.n_units) * (2 + kV2UnitTiles) + (h.ctas + 1) + (h.ctas + 1) + int64_t(h.n_chunks) * 7 +
           int64_t(h.ctas) * 4 + int64_t(h.n_partials) * 6 + int64_t(h.n_recvs) * 7 + int64_t(h.n_frees) * 4 +
           int64_t(h.n_barriers) * 3 + (procs + 1) + int64_t(h.n_instrs) * 2 + (h.n_instrs + 1) + waits * 4;
}

}  // namespace

std::vector<int32_t> PlanV2::serialize() const {
    PlanV2Header h{};
    h.magic = kPlanV2Magic;
    h.version = kPlanV2Version;
    h.ranks = params_.ranks, h.clusters = params_.clusters, h.ctas = ctas(), h.n_units = int32_t(units.size());
    h.S = cfg_.S(), h.n_tiles = n_tiles(), h.D = cfg_.D, h.N = cfg_.N;
    h.chunk_ksteps = params_.chunk_ksteps, h.ring_depth = params_.ring_depth, h.in_flight = params_.in_flight;
    h.recv_slots = params_.recv_slots, h.partial_bytes = partial_bytes();
    for (const auto& c : chunks) h.n_chunks += int32_t(c.size());
    h.n_partials = int32_t(partials.size()), h.n_recvs = int32_t(recvs.size()), h.n_frees = int32_t(frees.size());
    h.n_barriers = int32_t(barriers.size());
    std::vector<std::vector<V2Wait>> waits_of;
    for (int p = 0; p < processes(); ++p)
        for (int i = 0; i < int(programs[size_t(p)].size()); ++i) waits_of.push_back(waits(p, i));
    h.n_instrs = int32_t(waits_of.size());
    int64_t n_waits = 0;
    for (const auto& w : waits_of) n_waits += int64_t(w.size());
    const int64_t total = int64_t(sizeof(PlanV2Header) / 4) + body_words(h, n_waits);
    if (total > INT32_MAX) bad_input("plan v2: the flat table exceeds 2^31 words");
    h.total_words = int32_t(total);
    std::vector<int32_t> w(sizeof(PlanV2Header) / 4);
    std::memcpy(w.data(), &h, sizeof h);
    auto put = [&](std::initializer_list<int32_t> v) { w.insert(w.end(), v); };
    w.insert(w.end(), cluster_first.begin(), cluster_first.end());
    for (const V2Unit& u : units) put({u.cluster, u.tiles, u.row0[0], u.row0[1], u.row0[2], u.row0[3]});
    w.insert(w.end(), run_offset.begin(), run_offset.end());
    int32_t at = 0;
    for (const auto& c : chunks) put({at}), at += int32_t(c.size());
    put({at});
    for (const auto& c : chunks)
        for (const V2Chunk& x : c) put({x.unit, x.kstep0, x.ksteps, x.bytes, x.offset, x.slot, x.round});
    for (const V2Ring& r : rings) put({r.slot_bytes, r.depth, r.in_flight, r.consumers});
    for (const V2Partial& x : partials) put({x.unit, x.sender, x.owner, x.tile, x.bytes, x.free_round});
    for (const V2Recv& x : recvs) put({x.unit, x.owner, x.slot, x.round, x.row0, x.bytes, x.armed_by});
    for (const V2Free& x : frees) put({x.unit, x.owner, x.slot, x.count});
    for (const V2Barrier& x : barriers) put({x.cluster, x.point, x.scope});
    at = 0;
    for (const auto& p : programs) put({at}), at += int32_t(p.size());
    put({at});
    for (const auto& p : programs)
        for (const V2Instr& in : p) put({in.op, in.a});
    at = 0;
    for (const auto& ws : waits_of) put({at}), at += int32_t(ws.size());
    put({at});
    for (const auto& ws : waits_of)
        for (const V2Wait& x : ws) put({int32_t(x.bar.kind), x.bar.cta, x.bar.index, x.round});
    if (int64_t(w.size()) != total) throw std::logic_error("plan v2: the flat table's length is not its header's");
    return w;
}

PlanV2Header read_v2_header(const std::vector<int32_t>& words) {
    PlanV2Header h{};
    if (words.size() < sizeof(PlanV2Header) / 4) bad_input("plan v2 buffer shorter than its header");
    std::memcpy(&h, words.data(), sizeof h);
    if (h.magic != kPlanV2Magic) bad_input("plan v2 buffer: bad magic");
    if (h.version != kPlanV2Version)
        bad_input("plan v2 buffer: version " + std::to_string(h.version) + " (expected " + std::to_string(kPlanV2Version) + ")");
    if (h.ctas != h.ranks * h.clusters || h.ctas < 1 || h.total_words != int64_t(words.size()))
        bad_input("plan v2 buffer: sizes in the header do not match its length");
    // the wait count is the last table's: the words that remain once every other table is counted
    const int64_t rest = int64_t(words.size()) - int64_t(sizeof(PlanV2Header) / 4) - body_words(h, 0);
    if (rest < 0 || rest % 4) bad_input("plan v2 buffer: sizes in the header do not match its length");
    return h;
}

std::vector<uint16_t> PlanV2::pack_weight(const std::vector<uint16_t>& w) const {
    const int D = cfg_.D;
    if (w.size() != size_t(cfg_.N) * size_t(D)) bad_input("plan v2: in_proj_w is not N x D");
    std::vector<uint16_t> out(size_t(run_offset.back()) / 2);
    for (int k = 0; k < ctas(); ++k) {
        const int col0 = rank_of(k) * slice_cols();
        for (const V2Chunk& ch : chunks[size_t(k)]) {
            const V2Unit& u = units[size_t(ch.unit)];
            uint16_t* dst = &out[(size_t(run_offset[size_t(k)]) + size_t(ch.offset)) / 2];
            for (int ks = 0; ks < ch.ksteps; ++ks)
                for (int m = 0; m < u.tiles; ++m)
                    for (int lane = 0; lane < 32; ++lane)
                        for (int e = 0; e < 8; ++e, ++dst) {
                            int r, c;
                            v2_fragment_element(lane, e, r, c);
                            *dst = w[size_t(u.row0[m] + r) * size_t(D) + size_t(col0 + (ch.kstep0 + ks) * kV2KStep + c)];
                        }
        }
    }
    return out;
}

std::string PlanV2::to_json() const {
    using nlohmann::ordered_json;
    ordered_json j;
    j["format"] = "monokda-plan-v2";
    j["version"] = kPlanV2Version;
    j["monokda_version"] = version();
    j["monokda_commit"] = commit();
    const Config& c = cfg_;
    j["config"] = {{"D", c.D}, {"N", c.N}, {"R", c.R}, {"L", c.L}, {"S", c.S()}};
    j["clusters"] = {{"size", params_.ranks}, {"count", params_.clusters}, {"ctas", ctas()}};
    j["ring"] = {{"chunk_ksteps", params_.chunk_ksteps}, {"depth", params_.ring_depth}, {"in_flight", params_.in_flight}};
    j["recv_slots"] = params_.recv_slots;
    j["partial_bytes"] = partial_bytes();
    j["reduction_order"] = reduction_order().at(Site::in_proj).str();
    ordered_json us = ordered_json::array();
    for (const V2Unit& u : units) {
        ordered_json rows = ordered_json::array();
        for (int k = 0; k < u.tiles; ++k) rows.push_back(u.row0[k]);
        us.push_back({{"cluster", u.cluster}, {"tile_rows", rows}});
    }
    j["units"] = us;
    j["cluster_first"] = cluster_first;
    ordered_json cs = ordered_json::array();
    for (int k = 0; k < ctas(); ++k) {
        ordered_json ch = ordered_json::array(), procs = ordered_json::array();
        for (const V2Chunk& x : chunks[size_t(k)])
            ch.push_back({{"unit", x.unit}, {"kstep0", x.kstep0}, {"ksteps", x.ksteps}, {"bytes", x.bytes}, {"offset", x.offset},
                          {"slot", x.slot}, {"round", x.round}});
        for (int q = proc(k, V2Role::producer); q < proc(k, V2Role::producer) + kV2ProcsPerCta; ++q) {
            ordered_json prog = ordered_json::array();
            for (int i = 0; i < int(programs[size_t(q)].size()); ++i) {
                ordered_json ws = ordered_json::array();
                for (const V2Wait& x : waits(q, i)) ws.push_back(bar_name(x.bar) + " round " + std::to_string(x.round));
                prog.push_back({{"step", describe(programs[size_t(q)][size_t(i)])}, {"waits", ws}});
            }
            procs.push_back({{"role", proc_name(q)}, {"program", prog}});
        }
        const V2Ring& r = rings[size_t(k)];
        cs.push_back({{"cta", k}, {"cluster", cluster_of(k)}, {"rank", rank_of(k)}, {"run_offset", run_offset[size_t(k)]},
                      {"ring", {{"slot_bytes", r.slot_bytes}, {"depth", r.depth}, {"in_flight", r.in_flight}, {"consumers", r.consumers}}},
                      {"smem_bytes", smem_bytes(k)}, {"chunks", ch}, {"roles", procs}});
    }
    j["ctas"] = cs;
    ordered_json rv = ordered_json::array();
    for (size_t e = 0; e < recvs.size(); ++e) {
        const V2Recv& x = recvs[e];
        ordered_json senders = ordered_json::array();
        for (int s = 0; s < params_.ranks; ++s) {
            const V2Partial& pa = partials[e * size_t(params_.ranks) + size_t(s)];
            senders.push_back({{"rank", pa.sender}, {"tile", pa.tile}, {"bytes", pa.bytes}, {"free_round", pa.free_round}});
        }
        rv.push_back({{"unit", x.unit}, {"owner", x.owner}, {"rows", {x.row0, x.row0 + kV2OwnerRows - 1}}, {"slot", x.slot},
                      {"round", x.round}, {"bytes", x.bytes}, {"armed_by", x.armed_by}, {"senders", senders},
                      {"free_arrivals", frees[e].count}});
    }
    j["cluster_buffers"] = rv;
    ordered_json bs = ordered_json::array();
    for (const V2Barrier& b : barriers)
        bs.push_back({{"cluster", b.cluster}, {"point", to_string(V2Point(b.point))}, {"scope", b.scope ? "cta" : "cluster"}});
    j["cluster_barriers"] = bs;
    return j.dump(1) + "\n";
}

}  // namespace monokda
