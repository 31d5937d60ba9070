// Kernel v2's plan file read back (core/plan_v2.hpp; docs/plan.md "Kernel v2's plan file"):
// PlanV2::from_json and read_json. The text is parsed with bounds (core/json_bounded.hpp), then read
// part by part, each value's type and range checked and each index held to the table it names
// before any table is used, so that a malformed file is refused naming the value's path (BadInput)
// and neither the reader nor what runs the plan indexes outside a table or allocates without bound.
// The programs are read as the file gives them; what the file adds for its reader (each step's text
// and waits, a CTA's shared memory) is held to what the tables give (misdescribed).
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_bounded.hpp"
#include "core/plan_file.hpp"
#include "core/plan_v2.hpp"

namespace monokda {

using nlohmann::json;

namespace {

// What a file may declare (a built plan is far inside each): what the checks and the emulator hold
// for a plan is bounded by these and by the parameters' ranges (PlanV2Params::validate).
constexpr int kMaxSteps = 4096;                      // a process's program (a built one: under 200)
constexpr int64_t kMaxAllSteps = int64_t(1) << 21;   // every program's
constexpr int kMaxChunks = 4096;                     // a CTA's stream
constexpr int kMaxSlotBytes = 1 << 20;               // a ring slot (a CTA has 227 KB of shared memory)
constexpr int64_t kMaxRingBytes = int64_t(1) << 30;  // every CTA's ring slots together
constexpr int kMaxRound = 1 << 20;                   // a barrier phase a table names
constexpr int kMaxPieceBytes = 1 << 24;              // a chunk, a partial, a seam send
constexpr int kMaxSends = 64;                        // a CTA's seam sends (a built plan's: 3 × ranks at most)
constexpr int kMaxBuffers = 1 << 20;                 // receive entries

std::string n(int64_t v) { return std::to_string(v); }

// The roles each op is a step of (V2Op's comments): a step in another role's program is malformed.
bool op_of_role(V2Op op, V2Role r) {
    switch (op) {
        case V2Op::SYNC: return true;
        case V2Op::INIT:
        case V2Op::COPY:
        case V2Op::INPUT: return r == V2Role::producer;
        case V2Op::REDUCE:
        case V2Op::PUBLISH:
        case V2Op::RELEASE: return r == V2Role::reducer;
        case V2Op::TAKE:
        case V2Op::FREE:
        case V2Op::PAIR:
        case V2Op::SEND:
        case V2Op::XWAIT: return r == V2Role::consumer;
        default: return r == V2Role::seam;  // LOAD, PART, GATE, MIX, X; POLL, DECAY, REC, NORM
    }
}

}  // namespace

// Fills a PlanV2 from a parsed file, one part of the file a step, in the order from_json calls them:
// each part's indices are held to the tables read before it.
class PlanV2FileReader {
public:
    PlanV2FileReader(PlanV2& p, const JsonReader& rd) : p_(p), rd_(rd) {}
    void config(const json& j);
    void params(const json& j);
    void units(const json& j);
    void streams(const json& j);
    void buffers(const json& j);
    void barriers(const json& j);
    void seam(const json& j);
    void tail(const json& j);
    void programs(const json& j);
    void descriptions(const json& j);

private:
    int32_t num(const json& j, const std::string& path, int64_t lo, int64_t hi) const { return int32_t(rd_.integer(j, path, lo, hi)); }
    // an optional value the file states about itself, which must be `want` (a place's identity)
    void same(const json& j, const char* key, const std::string& path, int64_t want, const std::string& why) const {
        if (j.contains(key) && rd_.integer(j.at(key), path + "." + key, INT32_MIN, INT32_MAX) != want)
            rd_.fail(path + "." + key, "is " + j.at(key).dump() + ", but " + why);
    }
    void step(const json& js, const std::string& path, int q, int k);
    void note(const std::string& path, const std::string& file, const std::string& tables) {
        if (p_.misdescribed.size() < 200) p_.misdescribed.push_back(path + " is " + file + "; the tables give " + tables);
    }
    PlanV2& p_;
    const JsonReader& rd_;
    int64_t packed_ = 0;  // packed_weight_bytes
};

void PlanV2FileReader::config(const json& j) {
    const json& jc = rd_.object(j.at("config"), "config", {"D", "H", "K", "V", "F", "N", "C", "W", "R", "L", "nb"}, {"S"});
    Config c;
    auto ci = [&](const char* k) { return num(jc.at(k), std::string("config.") + k, 1, 1 << 20); };
    c.D = ci("D"), c.H = ci("H"), c.K = ci("K"), c.V = ci("V"), c.F = ci("F"), c.N = ci("N"), c.C = ci("C");
    c.W = ci("W"), c.R = ci("R"), c.L = ci("L"), c.nb = ci("nb");
    if (int64_t(c.R) * c.L > 1024) rd_.fail("config", "R × L = " + n(int64_t(c.R) * c.L) + " rows; kernel v2's plan takes 1..1024");
    same(jc, "S", "config", c.S(), "R × L is " + n(c.S()));
    c.slots = c.S() + 1;
    try {
        c.validate();
    } catch (const BadInput& e) {
        rd_.fail("config", e.what());
    }
    p_.cfg_ = c;
}

// the builder's parameters: clusters, ring, recv_slots, the seam's mode and slices
void PlanV2FileReader::params(const json& j) {
    const Config& c = p_.cfg_;
    PlanV2Params& pp = p_.params_;
    const json& jl = rd_.object(j.at("clusters"), "clusters", {"size", "count"}, {"ctas", "block_rows"});
    pp.ranks = num(jl.at("size"), "clusters.size", 2 * kV2UnitTiles, 16);
    pp.clusters = num(jl.at("count"), "clusters.count", 1, 1024);
    same(jl, "ctas", "clusters", int64_t(pp.ranks) * pp.clusters, "size × count is " + n(int64_t(pp.ranks) * pp.clusters));
    if (jl.contains("block_rows")) pp.block_rows = num(jl.at("block_rows"), "clusters.block_rows", kV2TileRows, c.N);
    const json& jr = rd_.object(j.at("ring"), "ring", {"chunk_ksteps", "depth", "in_flight"});
    pp.chunk_ksteps = num(jr.at("chunk_ksteps"), "ring.chunk_ksteps", 1, c.D);
    pp.ring_depth = num(jr.at("depth"), "ring.depth", 1, 64);
    pp.in_flight = num(jr.at("in_flight"), "ring.in_flight", 1, pp.ring_depth);
    pp.recv_slots = num(j.at("recv_slots"), "recv_slots", 1, 16);
    const json& js = rd_.object(j.at("seam"), "seam", {"enabled", "slice_cols"}, {"row_owner", "ctas"});
    pp.seam = rd_.boolean(js.at("enabled"), "seam.enabled");
    pp.seam_slice_cols = num(js.at("slice_cols"), "seam.slice_cols", 1, c.D);
    pp.tail = j.contains("tail") ? 1 : 0;
    try {
        pp.validate(c);
    } catch (const BadInput& e) {
        rd_.fail("", e.what());
    }
}

// the tail's tasks (the file has a "tail" where the plan has one)
void PlanV2FileReader::tail(const json& j) {
    if (!j.contains("tail")) return;
    const Config& c = p_.cfg_;
    const PlanV2Params& pp = p_.params_;
    const json& jt = rd_.object(j.at("tail"), "tail", {"tasks"});
    const json& ts = rd_.array(jt.at("tasks"), "tail.tasks", 0, size_t(c.R) * size_t(c.H) * size_t(pp.ranks));
    for (size_t i = 0; i < ts.size(); ++i) {
        const std::string path = json_path_index("tail.tasks", i);
        const json& x = rd_.object(ts[i], path, {"request", "head", "tile", "cluster", "rank", "onrm", "share"});
        const json& sh = rd_.object(x.at("share"), path + ".share", {"qk_rows", "fa_rows"});
        const json& qk = rd_.array(sh.at("qk_rows"), path + ".share.qk_rows", 2, 2);
        const json& fa = rd_.array(sh.at("fa_rows"), path + ".share.fa_rows", 2, 2);
        p_.tasks.push_back({num(x.at("request"), path + ".request", 0, c.R - 1), num(x.at("head"), path + ".head", 0, c.H - 1),
                            num(x.at("tile"), path + ".tile", 0, pp.ranks - 1), num(x.at("cluster"), path + ".cluster", 0, pp.clusters - 1),
                            num(x.at("rank"), path + ".rank", 0, pp.ranks - 1), num(x.at("onrm"), path + ".onrm", 0, c.R * c.H),
                            num(qk[0], path + ".share.qk_rows[0]", 0, c.K), num(qk[1], path + ".share.qk_rows[1]", 0, c.K),
                            num(fa[0], path + ".share.fa_rows[0]", 0, c.F), num(fa[1], path + ".share.fa_rows[1]", 0, c.F)});
    }
}

// units, cluster_first
void PlanV2FileReader::units(const json& j) {
    const int N = p_.cfg_.N;
    const json& ju = rd_.array(j.at("units"), "units", 1, size_t(2 * (N / kV2TileRows)));
    for (size_t u = 0; u < ju.size(); ++u) {
        const std::string path = json_path_index("units", u);
        const json& x = rd_.object(ju[u], path, {"cluster", "tile_rows"});
        V2Unit unit{num(x.at("cluster"), path + ".cluster", 0, p_.params_.clusters - 1), 0, {-1, -1, -1, -1}};
        const json& rows = rd_.array(x.at("tile_rows"), path + ".tile_rows", 1, kV2UnitTiles);
        unit.tiles = int32_t(rows.size());
        for (size_t k = 0; k < rows.size(); ++k) unit.row0[k] = num(rows[k], json_path_index(path + ".tile_rows", k), 0, N - kV2TileRows);
        p_.units.push_back(unit);
    }
    const json& jf = rd_.array(j.at("cluster_first"), "cluster_first", size_t(p_.params_.clusters) + 1, size_t(p_.params_.clusters) + 1);
    for (size_t c = 0; c < jf.size(); ++c) p_.cluster_first.push_back(num(jf[c], json_path_index("cluster_first", c), 0, int64_t(p_.units.size())));
}

// ctas[k]: each CTA's run offset, ring and chunk stream (its roles are read by programs())
void PlanV2FileReader::streams(const json& j) {
    const Config& c = p_.cfg_;
    const int ctas = p_.ctas();
    packed_ = rd_.integer(j.at("packed_weight_bytes"), "packed_weight_bytes", 0, std::min<int64_t>(INT32_MAX - 1, int64_t(4) * c.N * c.D));
    if (packed_ % 2) rd_.fail("packed_weight_bytes", "is " + n(packed_) + ": the packed weight is bf16, 2 bytes an element");
    const json& jc = rd_.array(j.at("ctas"), "ctas", size_t(ctas), size_t(ctas));
    p_.run_offset.assign(size_t(ctas) + 1, int32_t(packed_));
    p_.chunks.assign(size_t(ctas), {});
    int64_t ring_bytes = 0;
    for (int k = 0; k < ctas; ++k) {
        const std::string path = json_path_index("ctas", size_t(k));
        const json& x = rd_.object(jc[size_t(k)], path, {"run_offset", "ring", "chunks", "roles"}, {"cta", "cluster", "rank", "smem_bytes"});
        same(x, "cta", path, k, "this is CTA " + n(k) + " (its place in \"ctas\")");
        same(x, "cluster", path, p_.cluster_of(k), "CTA " + n(k) + " is in cluster " + n(p_.cluster_of(k)) + " (CTA = cluster × size + rank)");
        same(x, "rank", path, p_.rank_of(k), "CTA " + n(k) + " is rank " + n(p_.rank_of(k)) + " of its cluster");
        const int32_t run = num(x.at("run_offset"), path + ".run_offset", 0, packed_);
        p_.run_offset[size_t(k)] = run;
        const json& jr = rd_.object(x.at("ring"), path + ".ring", {"slot_bytes", "depth", "in_flight", "consumers"});
        V2Ring r{num(jr.at("slot_bytes"), path + ".ring.slot_bytes", 1, kMaxSlotBytes), num(jr.at("depth"), path + ".ring.depth", 1, 64),
                 num(jr.at("in_flight"), path + ".ring.in_flight", 1, 64), num(jr.at("consumers"), path + ".ring.consumers", 1, 64)};
        if ((ring_bytes += int64_t(r.slot_bytes) * r.depth) > kMaxRingBytes)
            rd_.fail(path + ".ring", "the rings up to this CTA's hold " + n(ring_bytes) + " bytes; the plan's may hold at most " + n(kMaxRingBytes));
        p_.rings.push_back(r);
        const json& jch = rd_.array(x.at("chunks"), path + ".chunks", 0, kMaxChunks);
        for (size_t i = 0; i < jch.size(); ++i) {
            const std::string cp = json_path_index(path + ".chunks", i);
            const json& y = rd_.object(jch[i], cp, {"unit", "kstep0", "ksteps", "bytes", "offset", "slot", "round"});
            V2Chunk ch{};
            ch.unit = num(y.at("unit"), cp + ".unit", 0, int64_t(p_.units.size()) - 1);
            ch.kstep0 = num(y.at("kstep0"), cp + ".kstep0", 0, p_.slice_ksteps() - 1);
            ch.ksteps = num(y.at("ksteps"), cp + ".ksteps", 1, p_.slice_ksteps() - ch.kstep0);
            ch.bytes = num(y.at("bytes"), cp + ".bytes", 0, kMaxPieceBytes);
            ch.offset = num(y.at("offset"), cp + ".offset", 0, packed_);
            ch.slot = num(y.at("slot"), cp + ".slot", 0, r.depth - 1);
            ch.round = num(y.at("round"), cp + ".round", 0, kMaxRound);
            // what the chunk's copy and its packing span (bytes; its k-steps of every tile) within the packed weight
            const int64_t span = std::max<int64_t>(ch.bytes, int64_t(ch.ksteps) * p_.units[size_t(ch.unit)].tiles * kV2TileBytes);
            if (run + int64_t(ch.offset) + span > packed_)
                rd_.fail(cp + ".offset", "the chunk's " + n(span) + " bytes from byte " + n(ch.offset) + " of the CTA's run (at byte " + n(run) +
                                             ") end past the packed weight's " + n(packed_) + " bytes (packed_weight_bytes)");
            p_.chunks[size_t(k)].push_back(ch);
        }
    }
}

// cluster_buffers: each receive entry, with its senders' partials and its free
void PlanV2FileReader::buffers(const json& j) {
    const int R = p_.params_.ranks, N = p_.cfg_.N;
    const json& jb = rd_.array(j.at("cluster_buffers"), "cluster_buffers", 0, kMaxBuffers);
    for (size_t e = 0; e < jb.size(); ++e) {
        const std::string path = json_path_index("cluster_buffers", e);
        const json& x = rd_.object(jb[e], path, {"unit", "owner", "rows", "slot", "round", "bytes", "senders", "free_arrivals"});
        V2Recv rv{};
        rv.unit = num(x.at("unit"), path + ".unit", 0, int64_t(p_.units.size()) - 1);
        rv.owner = num(x.at("owner"), path + ".owner", 0, R - 1);
        const json& rows = rd_.array(x.at("rows"), path + ".rows", 2, 2);
        rv.row0 = num(rows[0], path + ".rows[0]", 0, N - kV2OwnerRows);
        if (num(rows[1], path + ".rows[1]", 0, N - 1) != rv.row0 + kV2OwnerRows - 1)
            rd_.fail(path + ".rows", "must be [first, first + " + n(kV2OwnerRows - 1) + "]: an owner sums " + n(kV2OwnerRows) + " rows");
        rv.slot = num(x.at("slot"), path + ".slot", 0, p_.params_.recv_slots - 1);
        rv.round = num(x.at("round"), path + ".round", 0, kMaxRound);
        rv.bytes = num(x.at("bytes"), path + ".bytes", 0, INT32_MAX);
        const json& js = rd_.array(x.at("senders"), path + ".senders", size_t(R), size_t(R));  // the partials: one a rank
        for (size_t s = 0; s < js.size(); ++s) {
            const std::string sp = json_path_index(path + ".senders", s);
            const json& y = rd_.object(js[s], sp, {"rank", "tile", "bytes", "free_round"});
            p_.partials.push_back({rv.unit, num(y.at("rank"), sp + ".rank", 0, R - 1), rv.owner, num(y.at("tile"), sp + ".tile", 0, kV2UnitTiles - 1),
                                   num(y.at("bytes"), sp + ".bytes", 0, kMaxPieceBytes), num(y.at("free_round"), sp + ".free_round", -1, kMaxRound)});
        }
        p_.frees.push_back({rv.unit, rv.owner, rv.slot, num(x.at("free_arrivals"), path + ".free_arrivals", 0, 1024)});
        p_.recvs.push_back(rv);
    }
}

// cluster_barriers: [cluster][entry, exit] (barrier_index), each with its scope
void PlanV2FileReader::barriers(const json& j) {
    const int C = p_.params_.clusters;
    const json& jb = rd_.array(j.at("cluster_barriers"), "cluster_barriers", size_t(2 * C), size_t(2 * C));
    for (size_t b = 0; b < jb.size(); ++b) {
        const std::string path = json_path_index("cluster_barriers", b);
        const json& x = rd_.object(jb[b], path, {"cluster", "point", "scope"});
        const int cl = int(b) / int(V2Point::count);
        const V2Point pt = V2Point(int(b) % int(V2Point::count));
        if (num(x.at("cluster"), path + ".cluster", 0, C - 1) != cl || rd_.string(x.at("point"), path + ".point") != to_string(pt))
            rd_.fail(path, "must be cluster " + n(cl) + "'s " + to_string(pt) + " barrier (the table is each cluster's entry, then exit)");
        const std::string scope = rd_.string(x.at("scope"), path + ".scope");
        if (scope != "cluster" && scope != "cta") rd_.fail(path + ".scope", "is \"" + scope + "\"; a barrier's scope is \"cluster\" or \"cta\"");
        p_.barriers.push_back({int32_t(cl), int32_t(pt), scope == "cta"});
    }
}

// seam: the row owners and each CTA's seam entry and sends (only where the seam is enabled)
void PlanV2FileReader::seam(const json& j) {
    const json& js = j.at("seam");
    if (!p_.has_seam()) {
        if (js.contains("row_owner") || js.contains("ctas"))
            rd_.fail("seam", "is not enabled (x an input), so it has no row_owner or ctas");
        return;
    }
    if (!js.contains("row_owner") || !js.contains("ctas")) rd_.fail("seam", "is enabled: it needs row_owner and ctas");
    const int R = p_.params_.ranks, S = p_.cfg_.S(), ctas = p_.ctas();
    const json& jo = rd_.array(js.at("row_owner"), "seam.row_owner", size_t(S), size_t(S));
    for (size_t s = 0; s < jo.size(); ++s) p_.seam_owner.push_back(num(jo[s], json_path_index("seam.row_owner", s), 0, R - 1));
    const json& jc = rd_.array(js.at("ctas"), "seam.ctas", size_t(ctas), size_t(ctas));
    for (int k = 0; k < ctas; ++k) {
        const std::string path = json_path_index("seam.ctas", size_t(k));
        const json& x = rd_.object(jc[size_t(k)], path, {"in_bytes", "part_bytes", "wgt_bytes", "msq_bytes", "rows_owned", "sends"}, {"cta"});
        same(x, "cta", path, k, "this is CTA " + n(k) + "'s seam entry (its place in \"seam.ctas\")");
        auto bytes = [&](const char* key) { return num(x.at(key), path + "." + key, 0, INT32_MAX); };
        p_.seam_ctas.push_back({bytes("in_bytes"), bytes("part_bytes"), bytes("wgt_bytes"), bytes("msq_bytes"),
                                num(x.at("rows_owned"), path + ".rows_owned", 0, S)});
        p_.seam_send_begin.push_back(int32_t(p_.seam_sends.size()));
        const json& jsend = rd_.array(x.at("sends"), path + ".sends", 0, kMaxSends);
        const int first = p_.cta(p_.cluster_of(k), 0);
        for (size_t i = 0; i < jsend.size(); ++i) {
            const std::string sp = json_path_index(path + ".sends", i);
            const json& y = rd_.object(jsend[i], sp, {"to", "barrier", "bytes"});
            const int to = num(y.at("to"), sp + ".to", 0, ctas - 1);
            if (p_.cluster_of(to) != p_.cluster_of(k))
                rd_.fail(sp + ".to", "is CTA " + n(to) + ", outside CTA " + n(k) + "'s cluster (CTAs " + n(first) + ".." + n(first + R - 1) + ")");
            const std::string bar = rd_.string(y.at("barrier"), sp + ".barrier");
            int32_t b = -1;
            for (V2SeamBar x2 : {V2SeamBar::part, V2SeamBar::wgt, V2SeamBar::msq})
                if (bar == to_string(x2)) b = int32_t(x2);
            if (b < 0) rd_.fail(sp + ".barrier", "is \"" + bar + "\"; a hand-off is into a part, wgt or msq barrier");
            p_.seam_sends.push_back({int32_t(k), int32_t(to), b, num(y.at("bytes"), sp + ".bytes", 0, kMaxPieceBytes)});
        }
    }
    p_.seam_send_begin.push_back(int32_t(p_.seam_sends.size()));
}

// ctas[k].roles: each CTA's processes in order, each program's steps as the file gives them
void PlanV2FileReader::programs(const json& j) {
    const json& jc = j.at("ctas");
    p_.programs.assign(size_t(p_.processes()), {});
    int64_t total = 0;
    for (int k = 0; k < p_.ctas(); ++k) {
        const std::string path = json_path_index("ctas", size_t(k)) + ".roles";
        const json& jr = rd_.array(jc[size_t(k)].at("roles"), path, kV2ProcsPerCta, kV2ProcsPerCta);
        for (int r = 0; r < kV2ProcsPerCta; ++r) {
            const std::string rp = json_path_index(path, size_t(r));
            const int q = k * kV2ProcsPerCta + r;
            const json& x = rd_.object(jr[size_t(r)], rp, {"program"}, {"role"});
            if (x.contains("role") && rd_.string(x.at("role"), rp + ".role") != p_.proc_name(q))
                rd_.fail(rp + ".role", "is " + x.at("role").dump() + ", but place " + n(r) + " of a CTA's roles is \"" + p_.proc_name(q) +
                                           "\" (the producer, the reducer, consumers 0.." + n(kV2Consumers - 1) + ", the seam)");
            const json& jp = rd_.array(x.at("program"), rp + ".program", 0, kMaxSteps);
            if ((total += int64_t(jp.size())) > kMaxAllSteps)
                rd_.fail(rp + ".program", "the programs up to this one hold " + n(total) + " steps; a plan's may hold at most " + n(kMaxAllSteps));
            for (size_t i = 0; i < jp.size(); ++i) step(jp[i], json_path_index(rp + ".program", i), q, k);
        }
    }
}

// One step: its op (of its process's role) and operand (an entry of the table the op names).
void PlanV2FileReader::step(const json& js, const std::string& path, int q, int k) {
    const json& x = rd_.object(js, path, {"op", "a"}, {"step", "waits"});
    const std::string name = rd_.string(x.at("op"), path + ".op");
    int op = 0;
    for (int o = int(V2Op::INIT); o <= int(V2Op::NORM); ++o)
        if (name == to_string(V2Op(o))) op = o;
    if (!op) {
        std::string known;
        for (int o = int(V2Op::INIT); o <= int(V2Op::NORM); ++o) known += std::string(known.empty() ? "" : ", ") + to_string(V2Op(o));
        rd_.fail(path + ".op", "unknown op \"" + name + "\" (known: " + known + ")");
    }
    const V2Role role = PlanV2::proc_role(q);
    if (!op_of_role(V2Op(op), role)) rd_.fail(path + ".op", name + " is not a step of the " + to_string(role) + " (" + p_.proc_name(q) + ")");
    const bool seam_op = op >= int(V2Op::INPUT) && op <= int(V2Op::XWAIT), tail_op = op >= int(V2Op::PUBLISH);
    if (seam_op && !p_.has_seam()) rd_.fail(path + ".op", name + " is a step of the seam, which this plan leaves out (seam.enabled is false)");
    if (tail_op && !p_.has_tail()) rd_.fail(path + ".op", name + " is a step of the tail, which this plan leaves out (the file has no \"tail\")");
    int64_t end = 0;  // the operand's table: a in 0 .. end − 1
    const char* table = "";
    switch (V2Op(op)) {
        case V2Op::INIT: end = 1, table = "INIT's (0)"; break;
        case V2Op::COPY:
        case V2Op::TAKE:
        case V2Op::FREE: end = int64_t(p_.chunks[size_t(k)].size()), table = "the CTA's chunks"; break;
        case V2Op::SYNC: end = int64_t(p_.barriers.size()), table = "cluster_barriers"; break;
        case V2Op::PAIR: end = int64_t(p_.units.size()), table = "units"; break;
        case V2Op::SEND: end = int64_t(p_.partials.size()), table = "the partials (cluster_buffers' senders, in order)"; break;
        case V2Op::REDUCE:
        case V2Op::PUBLISH:
        case V2Op::RELEASE: end = int64_t(p_.recvs.size()), table = "cluster_buffers"; break;
        case V2Op::POLL:
        case V2Op::DECAY:
        case V2Op::REC:
        case V2Op::NORM: end = int64_t(p_.tasks.size()), table = "tail.tasks"; break;
        default: end = p_.ctas(), table = "the CTAs"; break;  // the seam's steps name their CTA
    }
    if (end == 0) rd_.fail(path + ".a", name + " names an entry of " + table + ", which is empty");
    const int32_t a = num(x.at("a"), path + ".a", 0, end - 1);
    if (x.contains("step")) rd_.string(x.at("step"), path + ".step");
    if (x.contains("waits")) {
        const json& w = rd_.array(x.at("waits"), path + ".waits", 0, 64);
        for (size_t i = 0; i < w.size(); ++i) rd_.string(w[i], json_path_index(path + ".waits", i));
    }
    p_.programs[size_t(q)].push_back({int32_t(op), a});
}

// What the file says of the plan that the tables give (every table read): held to them, each
// difference kept in misdescribed.
void PlanV2FileReader::descriptions(const json& j) {
    if (j.contains("partial_bytes") && j.at("partial_bytes") != p_.partial_bytes())
        note("partial_bytes", j.at("partial_bytes").dump(), n(p_.partial_bytes()) + " (8 rows of S padded to 8, fp32)");
    if (j.contains("reduction_order") && j.at("reduction_order") != p_.reduction_order().str())
        note("reduction_order", j.at("reduction_order").dump(), "\"" + p_.reduction_order().str() + "\"");
    auto list = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& x : v) s += (s.empty() ? "\"" : ", \"") + x + "\"";
        return "[" + s + "]";
    };
    for (int k = 0; k < p_.ctas(); ++k) {
        const json& x = j.at("ctas")[size_t(k)];
        const std::string path = json_path_index("ctas", size_t(k));
        if (x.contains("smem_bytes") && x.at("smem_bytes") != p_.smem_bytes(k))
            note(path + ".smem_bytes", x.at("smem_bytes").dump(), n(p_.smem_bytes(k)));
        for (int r = 0; r < kV2ProcsPerCta; ++r) {
            const int q = k * kV2ProcsPerCta + r;
            const json& jp = x.at("roles")[size_t(r)].at("program");
            for (size_t i = 0; i < jp.size(); ++i) {
                const std::string sp = json_path_index(json_path_index(path + ".roles", size_t(r)) + ".program", i);
                const json& s = jp[i];
                const std::string text = p_.describe(p_.programs[size_t(q)][i]);
                if (s.contains("step") && s.at("step") != text) note(sp + ".step", s.at("step").dump(), "\"" + text + "\"");
                if (!s.contains("waits")) continue;
                const std::vector<std::string> want = p_.wait_texts(q, int(i));
                if (s.at("waits") != json(want)) note(sp + ".waits", s.at("waits").dump(), list(want));
            }
        }
    }
}

PlanV2 PlanV2::from_json(const std::string& text, const std::string& what) {
    const json j = parse_json_bounded(text, what, plan_file::bounds());
    const JsonReader rd(what);
    if (j.is_object() && j.contains("format") && j.at("format") == plan_file::kFormat)
        rd.fail("format", "is \"" + std::string(plan_file::kFormat) + "\": kernel v1's plan file (monokda emulate --plan runs it); kernel v2's is \"" +
                              kPlanV2Format + "\"");
    rd.object(j, "", {"format", "version", "config", "clusters", "ring", "recv_slots", "packed_weight_bytes", "units", "cluster_first", "ctas",
                      "cluster_buffers", "cluster_barriers", "seam"},
              {"comment", "monokda_version", "monokda_commit", "partial_bytes", "reduction_order", "tail"});
    if (j.at("format") != kPlanV2Format) rd.fail("format", "must be \"" + std::string(kPlanV2Format) + "\" (this is not a kernel v2 plan file)");
    const int64_t version = rd.integer(j.at("version"), "version", 0, INT32_MAX);
    if (version != kPlanV2FileVersion)
        rd.fail("version", "is " + std::to_string(version) + "; this monokda reads version " + std::to_string(kPlanV2FileVersion) +
                               (version < kPlanV2FileVersion ? " (an older file describes another kernel: write it again with monokda plan --kernel v2)" : ""));
    for (const char* k : {"comment", "monokda_version", "monokda_commit", "reduction_order"})
        if (j.contains(k)) rd.string(j.at(k), k);
    if (j.contains("partial_bytes")) rd.integer(j.at("partial_bytes"), "partial_bytes", 0, INT32_MAX);
    PlanV2 p;
    PlanV2FileReader r(p, rd);
    r.config(j);
    r.params(j);
    r.units(j);
    r.streams(j);
    r.buffers(j);
    r.barriers(j);
    r.seam(j);
    r.tail(j);
    r.programs(j);
    r.descriptions(j);
    return p;
}

PlanV2 PlanV2::read_json(const std::string& path) { return from_json(read_text_file(path, size_t(256) << 20, "plan file"), path); }

std::string plan_file_format(const std::string& text, const std::string& what) {
    const json j = parse_json_bounded(text, what, plan_file::bounds());
    return j.is_object() && j.contains("format") && j.at("format").is_string() ? j.at("format").get<std::string>() : "";
}

}  // namespace monokda
