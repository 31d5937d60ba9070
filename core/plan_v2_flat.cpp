// Kernel v2's plan as the device and a reader get it (core/plan_v2.hpp): the flat int32 table the
// kernel is to read (serialize, read_v2_header; layout in docs/plan.md), the weight packed into each
// CTA's run in A-fragment order, and the JSON form `monokda plan --kernel v2` writes (read back by
// plan_v2_read.cpp).
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/plan_v2.hpp"
#include "core/version.hpp"

namespace monokda {

namespace {

// A table's entries as their structs' words (kV2FlatEntry: the struct is the entry).
template <class T>
void put_table(std::vector<int32_t>& w, const T* v, size_t n) {
    const size_t at = w.size();
    w.resize(at + n * sizeof(T) / 4);
    if (n) std::memcpy(&w[at], v, n * sizeof(T));
}
template <class T>
void put_table(std::vector<int32_t>& w, const std::vector<T>& v) {
    put_table(w, v.data(), v.size());
}

// Each task's pair (PlanV2::tail_pair) by tile: row i is [tile m] the pair's task of tile m, -1 where
// it has none (a plan that is not sound; read_v2_header refuses it). Not its index arithmetic: a
// pair's tasks need not be consecutive.
std::vector<int32_t> pair_rows(const PlanV2& p, int T) {
    std::vector<int32_t> out(p.tasks.size() * size_t(T), -1);
    std::vector<char> done(p.tasks.size(), 0);
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        if (done[i]) continue;
        const std::vector<int> pair = p.tail_pair(int(i));
        std::vector<int32_t> row(size_t(T), -1);
        for (int j : pair) {
            const int m = p.tasks[size_t(j)].tile;
            if (m >= 0 && m < T && row[size_t(m)] < 0) row[size_t(m)] = j;
        }
        for (int j : pair) std::copy(row.begin(), row.end(), out.begin() + long(j) * T), done[size_t(j)] = 1;
    }
    return out;
}

// Each step's waits as serialize() lays them out, in process order.
std::vector<std::vector<V2Wait>> all_waits(const PlanV2& p) {
    std::vector<std::vector<V2Wait>> out;
    for (int q = 0; q < p.processes(); ++q)
        for (int i = 0; i < int(p.programs[size_t(q)].size()); ++i) out.push_back(p.waits(q, i));
    return out;
}

}  // namespace

PlanV2Layout v2_layout(const PlanV2Header& h) {
    for (int32_t count : {h.ranks, h.clusters, h.ctas, h.n_units, h.n_chunks, h.n_partials, h.n_recvs, h.n_frees, h.n_barriers, h.n_instrs,
                          h.S, h.n_seam_sends, h.n_tasks, h.pair_size})
        if (count < 0) bad_input("plan v2 buffer: a negative count in its header");
    if (h.seam != 0 && h.seam != 1) bad_input("plan v2 buffer: its seam flag is neither 0 nor 1");
    if ((h.n_tasks > 0) != (h.pair_size > 0)) bad_input("plan v2 buffer: its pair size is not 0 exactly where it has no tasks");
    PlanV2Layout L{};
    int64_t at = int64_t(sizeof(PlanV2Header) / 4);
    auto next = [&](int32_t& table, int64_t words) {
        if (at > INT32_MAX) bad_input("plan v2: the flat table exceeds 2^31 words");
        table = int32_t(at);
        at += words;
    };
    const int64_t procs = int64_t(h.ctas) * kV2ProcsPerCta;
    next(L.cluster_first, int64_t(h.clusters) + 1);
    next(L.units, int64_t(h.n_units) * int64_t(sizeof(V2Unit) / 4));
    next(L.run_offset, int64_t(h.ctas) + 1);
    next(L.chunk_begin, int64_t(h.ctas) + 1);
    next(L.chunks, int64_t(h.n_chunks) * int64_t(sizeof(V2Chunk) / 4));
    next(L.rings, int64_t(h.ctas) * int64_t(sizeof(V2Ring) / 4));
    next(L.partials, int64_t(h.n_partials) * int64_t(sizeof(V2Partial) / 4));
    next(L.recvs, int64_t(h.n_recvs) * int64_t(sizeof(V2Recv) / 4));
    next(L.frees, int64_t(h.n_frees) * int64_t(sizeof(V2Free) / 4));
    next(L.barriers, int64_t(h.n_barriers) * int64_t(sizeof(V2Barrier) / 4));
    const int64_t seam = h.seam;  // the seam's tables: empty without it
    next(L.seam_owner, seam * h.S);
    next(L.seam_ctas, seam * int64_t(h.ctas) * int64_t(sizeof(V2SeamCta) / 4));
    next(L.seam_send_begin, seam * (int64_t(h.ctas) + 1));
    next(L.seam_sends, int64_t(h.n_seam_sends) * int64_t(sizeof(V2SeamSend) / 4));
    next(L.tasks, int64_t(h.n_tasks) * int64_t(sizeof(V2Task) / 4));
    next(L.pair_tasks, int64_t(h.n_tasks) * h.pair_size);
    next(L.prog_begin, procs + 1);
    next(L.instrs, int64_t(h.n_instrs) * int64_t(sizeof(V2Instr) / 4));
    next(L.wait_begin, int64_t(h.n_instrs) + 1);
    next(L.waits, 0);  // the last table: its length is what remains
    return L;
}

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
    h.seam = params_.seam, h.nb = cfg_.nb, h.seam_slice_cols = params_.seam_slice_cols, h.n_seam_sends = int32_t(seam_sends.size());
    h.n_tasks = int32_t(tasks.size());
    h.pair_size = has_tail() ? tail_tiles() : 0;
    if (has_seam() && (seam_owner.size() != size_t(h.S) || seam_ctas.size() != size_t(ctas()) || seam_send_begin.size() != size_t(ctas()) + 1))
        throw std::logic_error("plan v2: the seam's tables are not an owner a row and an entry a CTA");
    const std::vector<std::vector<V2Wait>> waits_of = all_waits(*this);
    h.n_instrs = int32_t(waits_of.size());
    int64_t n_waits = 0;
    for (const auto& w : waits_of) n_waits += int64_t(w.size());
    const int64_t total = int64_t(v2_layout(h).waits) + n_waits * int64_t(sizeof(V2Wait) / 4);
    if (total > INT32_MAX) bad_input("plan v2: the flat table exceeds 2^31 words");
    h.total_words = int32_t(total);
    std::vector<int32_t> w;
    w.reserve(size_t(total));
    put_table(w, &h, 1);
    put_table(w, cluster_first);
    put_table(w, units);
    put_table(w, run_offset);
    int32_t at = 0;
    for (const auto& c : chunks) w.push_back(at), at += int32_t(c.size());
    w.push_back(at);
    for (const auto& c : chunks) put_table(w, c);
    put_table(w, rings);
    put_table(w, partials);
    put_table(w, recvs);
    put_table(w, frees);
    put_table(w, barriers);
    put_table(w, seam_owner);
    put_table(w, seam_ctas);
    put_table(w, seam_send_begin);
    put_table(w, seam_sends);
    put_table(w, tasks);
    put_table(w, pair_rows(*this, h.pair_size));
    at = 0;
    for (const auto& p : programs) w.push_back(at), at += int32_t(p.size());
    w.push_back(at);
    for (const auto& p : programs) put_table(w, p);
    at = 0;
    for (const auto& ws : waits_of) w.push_back(at), at += int32_t(ws.size());
    w.push_back(at);
    for (const auto& ws : waits_of) put_table(w, ws);
    if (int64_t(w.size()) != total) throw std::logic_error("plan v2: the flat table's length is not its header's");
    return w;
}

namespace {

// An index table (begin[0..n]) from 0 to `end`, never decreasing: what the device follows to a range.
bool spans(const std::vector<int32_t>& w, int32_t at, int64_t n, int64_t end) {
    if (w[size_t(at)] != 0 || w[size_t(at + n)] != end) return false;
    for (int64_t i = 0; i < n; ++i)
        if (w[size_t(at + i)] > w[size_t(at + i + 1)]) return false;
    return true;
}

}  // namespace

PlanV2Header read_v2_header(const std::vector<int32_t>& words) {
    PlanV2Header h{};
    if (words.size() < sizeof(PlanV2Header) / 4) bad_input("plan v2 buffer shorter than its header");
    std::memcpy(&h, words.data(), sizeof h);
    if (h.magic != kPlanV2Magic) bad_input("plan v2 buffer: bad magic");
    if (h.version != kPlanV2Version)
        bad_input("plan v2 buffer: version " + std::to_string(h.version) + " (expected " + std::to_string(kPlanV2Version) + ")");
    if (h.ctas != h.ranks * h.clusters || h.ctas < 1 || h.total_words != int64_t(words.size()))
        bad_input("plan v2 buffer: sizes in the header do not match its length");
    const PlanV2Layout L = v2_layout(h);
    // the wait count is the last table's: the words that remain once every other table is counted
    const int64_t rest = int64_t(words.size()) - int64_t(L.waits);
    if (rest < 0 || rest % int64_t(sizeof(V2Wait) / 4)) bad_input("plan v2 buffer: sizes in the header do not match its length");
    // the index tables the device follows stay inside the tables they index
    const int64_t procs = int64_t(h.ctas) * kV2ProcsPerCta;
    if (!spans(words, L.cluster_first, h.clusters, h.n_units) || !spans(words, L.chunk_begin, h.ctas, h.n_chunks) ||
        !spans(words, L.prog_begin, procs, h.n_instrs) || !spans(words, L.wait_begin, h.n_instrs, rest / 4))
        bad_input("plan v2 buffer: an index table (cluster_first, chunk_begin, prog_begin, wait_begin) does not span its table");
    if (h.seam ? !spans(words, L.seam_send_begin, h.ctas, h.n_seam_sends) : h.n_seam_sends != 0)
        bad_input("plan v2 buffer: the seam's send index (seam_send_begin) does not span its sends");
    const PlanV2View v{words.data(), L};
    for (int s = 0; s < h.S * h.seam; ++s)
        if (v.seam_owner(s) < 0 || v.seam_owner(s) >= h.ranks)
            bad_input("plan v2 buffer: row " + std::to_string(s) + "'s seam owner is rank " + std::to_string(v.seam_owner(s)) +
                      ", outside the cluster");
    for (int e = 0; e < h.n_seam_sends; ++e) {
        const V2SeamSend& x = v.seam_send(e);
        if (x.from < 0 || x.from >= h.ctas || x.to < 0 || x.to >= h.ctas || x.from / h.ranks != x.to / h.ranks ||
            x.bar < int32_t(V2SeamBar::part) || x.bar > int32_t(V2SeamBar::msq))
            bad_input("plan v2 buffer: seam send " + std::to_string(e) + " names a CTA outside its cluster or a barrier not a hand-off's");
    }
    for (int i = 0; i < h.n_tasks; ++i) {  // what a task's CTA and barriers index
        const V2Task& t = v.task(i);
        if (t.cluster < 0 || t.cluster >= h.clusters || t.rank < 0 || t.rank >= h.ranks || t.onrm < 0 || t.tile < 0 ||
            t.tile >= h.pair_size || t.qk0 < 0 || t.qkn < 0 || t.fa0 < 0 || t.fan < 0)
            bad_input("plan v2 buffer: task " + std::to_string(i) + " names a CTA, barrier, tile or share outside the plan's");
    }
    // what a task's sends go to and its barriers count: its pair's tasks by tile, itself at its own, the
    // one pair each of them lists (each lists its tile 0's, which lists the same tile 0)
    for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < h.n_tasks; ++i)
            for (int m = 0; m < h.pair_size; ++m) {
                const int j = v.pair_task(i, m), first = v.pair_task(i, 0);
                auto refuse = [&](const char* why) {
                    bad_input("plan v2 buffer: task " + std::to_string(i) + "'s pair (pair_tasks) names task " + std::to_string(j) +
                              " for tile " + std::to_string(m) + why);
                };
                const V2Task& t = v.task(i);
                if (pass == 0 && (j < 0 || j >= h.n_tasks)) refuse(", outside the tasks");
                if (pass == 0 && (v.task(j).request != t.request || v.task(j).head != t.head || v.task(j).tile != m))
                    refuse(", which is not that tile of its request and head");
                if (pass == 0 && m == t.tile && j != i) refuse(", its own tile, not itself");
                if (pass == 1 && (v.pair_task(first, m) != j || v.pair_task(j, 0) != first)) refuse(", whose pair is another");
            }
    for (int u = 0; u < h.n_units; ++u)
        if (v.unit(u).tiles < 1 || v.unit(u).tiles > kV2UnitTiles)
            bad_input("plan v2 buffer: unit " + std::to_string(u) + " has " + std::to_string(v.unit(u).tiles) + " tiles");
    for (int e = 0; e < h.n_recvs; ++e)
        if (v.recv(e).slot < 0 || v.recv(e).slot >= h.recv_slots || v.recv(e).row0 < 0 || v.recv(e).row0 + kV2OwnerRows > h.N)
            bad_input("plan v2 buffer: receive entry " + std::to_string(e) + " names a slot or rows outside the plan's");
    for (int k = 0; k < h.ctas; ++k)
        for (int j = 0; j < v.chunk_begin(k + 1) - v.chunk_begin(k); ++j)
            if (v.chunk(k, j).slot < 0 || v.chunk(k, j).slot >= h.ring_depth)
                bad_input("plan v2 buffer: CTA " + std::to_string(k) + " chunk " + std::to_string(j) + " names a ring slot outside its ring");
    const int32_t operand_end[] = {0, 1, 0, h.n_barriers, 0, 0, h.n_units, h.n_partials, h.n_recvs, h.n_frees};  // by op
    for (int64_t p = 0; p < procs; ++p)
        for (int i = v.prog_begin(int(p)); i < v.prog_begin(int(p) + 1); ++i) {
            const V2Instr& in = v.instr(i);
            const int k = int(p / kV2ProcsPerCta);
            const bool seam_op = in.op >= int32_t(V2Op::INPUT) && in.op <= int32_t(V2Op::XWAIT);
            const bool task_op = in.op >= int32_t(V2Op::POLL) && in.op <= int32_t(V2Op::NORM);
            const int32_t end = in.op == int32_t(V2Op::COPY) || in.op == int32_t(V2Op::TAKE) || in.op == int32_t(V2Op::FREE)
                                    ? v.chunk_begin(k + 1) - v.chunk_begin(k)
                                : seam_op                                        ? (h.seam ? h.ctas : 0)  // the seam ops' CTA
                                : task_op                                        ? h.n_tasks
                                : in.op == int32_t(V2Op::PUBLISH)                ? (h.n_tasks ? h.n_recvs : 0)
                                : in.op >= 1 && in.op <= int32_t(V2Op::RELEASE) ? operand_end[in.op]
                                                                                 : -1;
            if (in.a < 0 || in.a >= end)
                bad_input("plan v2 buffer: step " + std::to_string(i) + " (op " + std::to_string(in.op) + ") has operand " +
                          std::to_string(in.a) + ", outside the table it names");
        }
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

std::string PlanV2::to_json(bool stamped) const {
    using nlohmann::ordered_json;
    ordered_json j;
    j["format"] = kPlanV2Format;
    j["version"] = kPlanV2FileVersion;
    if (stamped) {
        j["monokda_version"] = version();
        j["monokda_commit"] = commit();
    }
    const Config& c = cfg_;
    j["config"] = {{"D", c.D}, {"H", c.H}, {"K", c.K}, {"V", c.V}, {"F", c.F}, {"N", c.N}, {"C", c.C}, {"W", c.W},
                   {"R", c.R}, {"L", c.L}, {"nb", c.nb}, {"S", c.S()}};
    j["clusters"] = {{"size", params_.ranks}, {"count", params_.clusters}, {"ctas", ctas()}, {"block_rows", params_.block_rows}};
    j["ring"] = {{"chunk_ksteps", params_.chunk_ksteps}, {"depth", params_.ring_depth}, {"in_flight", params_.in_flight}};
    j["recv_slots"] = params_.recv_slots;
    j["partial_bytes"] = partial_bytes();
    j["packed_weight_bytes"] = run_offset.back();
    j["reduction_order"] = reduction_order().str();  // in_proj's, and the seam's sites where it has one
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
                const V2Instr& in = programs[size_t(q)][size_t(i)];
                prog.push_back({{"op", to_string(in.opcode())}, {"a", in.a}, {"step", describe(in)}, {"waits", wait_texts(q, i)}});
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
                      {"round", x.round}, {"bytes", x.bytes}, {"senders", senders},
                      {"free_arrivals", frees[e].count}});
    }
    j["cluster_buffers"] = rv;
    ordered_json bs = ordered_json::array();
    for (const V2Barrier& b : barriers)
        bs.push_back({{"cluster", b.cluster}, {"point", to_string(V2Point(b.point))}, {"scope", b.scope ? "cta" : "cluster"}});
    j["cluster_barriers"] = bs;
    ordered_json seam = {{"enabled", has_seam()}, {"slice_cols", params_.seam_slice_cols}};  // not enabled: x is an input
    if (has_seam()) {
        ordered_json sc = ordered_json::array();
        for (int k = 0; k < ctas(); ++k) {
            const V2SeamCta& e = seam_ctas[size_t(k)];
            ordered_json sends = ordered_json::array();
            for (int i = seam_send_begin[size_t(k)]; i < seam_send_begin[size_t(k) + 1]; ++i) {
                const V2SeamSend& x = seam_sends[size_t(i)];
                sends.push_back({{"to", x.to}, {"barrier", to_string(V2SeamBar(x.bar))}, {"bytes", x.bytes}});
            }
            sc.push_back({{"cta", k}, {"in_bytes", e.in_bytes}, {"part_bytes", e.part_bytes}, {"wgt_bytes", e.wgt_bytes},
                          {"msq_bytes", e.msq_bytes}, {"rows_owned", e.rows_owned}, {"sends", sends}});
        }
        seam["row_owner"] = seam_owner;
        seam["ctas"] = sc;
    }
    j["seam"] = seam;
    if (params_.tail) {  // absent: the plan ends at proj
        ordered_json ts = ordered_json::array();
        for (const V2Task& t : tasks)
            ts.push_back({{"request", t.request}, {"head", t.head}, {"tile", t.tile}, {"cluster", t.cluster}, {"rank", t.rank}, {"onrm", t.onrm},
                          {"share", {{"qk_rows", {t.qk0, t.qkn}}, {"fa_rows", {t.fa0, t.fan}}}}});
        j["tail"] = {{"tasks", ts}};
    }
    return j.dump(1) + "\n";
}

}  // namespace monokda
