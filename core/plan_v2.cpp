// Kernel v2's plan (core/plan_v2.hpp): its parameters, the builder (units dealt to clusters, each
// CTA's stream of chunks, the cluster buffers, the seam's owners and hand-offs, the role programs),
// the waits each step implies, and the names reports use.
#include "core/plan_v2.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "core/shape.hpp"

namespace monokda {

const char* to_string(V2Point p) { return p == V2Point::entry ? "entry" : p == V2Point::exit ? "exit" : "?"; }
const char* to_string(V2Role r) {
    return r == V2Role::producer ? "producer" : r == V2Role::reducer ? "reducer" : r == V2Role::consumer ? "consumer"
                                                                  : r == V2Role::seam   ? "seam"
                                                                                        : "?";
}
const char* to_string(V2Op op) {
    static const char* names[] = {"?",     "INIT", "COPY", "SYNC",    "TAKE", "FREE", "PAIR", "SEND", "REDUCE", "RELEASE", "INPUT",
                                  "LOAD",  "PART", "GATE", "MIX",     "X",    "XWAIT", "PUBLISH", "POLL", "DECAY", "REC", "NORM"};
    const int k = int(op);
    return k >= 1 && k <= int(V2Op::NORM) ? names[k] : "?";
}
const char* to_string(V2SeamBar b) {
    static const char* names[] = {"in", "part", "wgt", "msq", "x"};
    return int(b) >= 0 && b < V2SeamBar::count ? names[int(b)] : "?";
}

// The in_proj part of a CTA's shared memory (PlanV2::smem_bytes), from a ring slot's bytes.
static int inproj_smem_bytes(const Config& c, const PlanV2Params& pp, int slot_bytes, int depth) {
    const int cols = (c.S() + kV2NTileCols - 1) / kV2NTileCols * kV2NTileCols, n_tiles = cols / kV2NTileCols;
    return depth * slot_bytes + cols * (c.D / pp.ranks + 8) * 2 + pp.recv_slots * pp.ranks * kV2OwnerRows * cols * 4 +
           kV2UnitTiles * 32 * n_tiles * 4 * 4;
}

// (request, head) pair q = r·H + h on cluster q mod clusters (at R = 1, head h on cluster h, so that
// the heads' rows, dealt round-robin, are a cluster each), its tile t on rank t; onrm = q / clusters.
// Tile t of T polls the t-th of T near-equal parts of the head's q and k rows and of f_a.
static std::vector<V2Task> tail_tasks(const Config& c, const PlanV2Params& pp) {
    std::vector<V2Task> tasks;
    const int C = pp.clusters, T = c.V / kV2TileRows, K = c.K, F = c.F;
    for (int q = 0; q < c.R * c.H; ++q)
        for (int t = 0; t < T; ++t)
            tasks.push_back({q / c.H, q % c.H, t, q % C, t, q / C, K * t / T, K * (t + 1) / T - K * t / T, F * t / T,
                             F * (t + 1) / T - F * t / T});
    return tasks;
}

// The tail's memory on the CTA with the most pair slots, with the alignment of its start, for at most
// one PUBLISH a unit of the most a cluster has (a rank owns 8 rows of each of its cluster's units).
static int tail_smem_bound(const Config& c, const PlanV2Params& pp) {
    int pairs = 0;
    for (const V2Task& t : tail_tasks(c, pp)) pairs = std::max(pairs, t.onrm + 1);
    const int tiles = c.N / kV2TileRows, units = (tiles + kV2UnitTiles - 1) / kV2UnitTiles;
    const int pubs = (units + pp.clusters - 1) / pp.clusters + 1;
    return V2TailLayout::make(0, {pairs, pubs, c.R, c.L, c.K, c.F, c.W, c.V / kV2TileRows}).bytes + 15;
}

PlanV2Params PlanV2Params::for_config(const Config& c, int tail) {
    PlanV2Params p;
    p.tail = tail;
    if (c.D == kProductionShape.D) {  // the production shape: the probes' setting
        p.chunk_ksteps = c.S() >= 64 ? 8 : 14;
        p.recv_slots = c.S() >= 64 ? 2 : 4;
    } else {
        // any other shape (the small preset: D 256, so 2 k-steps a rank): two clusters, a ring of two, a
        // seam slice a rank
        p.clusters = 2;
        p.chunk_ksteps = 2;
        p.ring_depth = p.in_flight = 2;
        p.recv_slots = 2;
        p.seam_slice_cols = std::max(kV2KStep, std::min(p.seam_slice_cols, c.D / p.ranks));
    }
    // the seam where its inputs and buffers fit beside in_proj's ring and the tail's memory (S <= 4 at
    // the production shape, with the tail or without)
    const int ring = inproj_smem_bytes(c, p, p.chunk_ksteps * kV2UnitTiles * kV2TileBytes, p.ring_depth);
    p.seam = ring + PlanV2::seam_smem_bytes(c, p) + (tail ? tail_smem_bound(c, p) : 0) <= kV2SmemBytes;
    return p;
}

void PlanV2Params::validate(const Config& c) const {
    auto need = [](bool ok, const std::string& what) {
        if (!ok) bad_input("plan v2: " + what);
    };
    need(ranks >= 2 * kV2UnitTiles && ranks <= 16, "ranks must be in 8..16 (a unit's 8 owners are ranks)");
    need(clusters >= 1 && clusters <= 1024, "clusters must be in 1..1024");
    need(c.D % (ranks * kV2KStep) == 0, "D = " + std::to_string(c.D) + " must split into ranks × 16-column k-steps");
    need(c.N % kV2TileRows == 0, "N = " + std::to_string(c.N) + " must be whole 16-row tiles");
    need(block_rows >= kV2TileRows && block_rows % kV2TileRows == 0, "block_rows must be whole 16-row tiles");
    const int ksteps = c.D / ranks / kV2KStep;
    need(chunk_ksteps >= 2 && chunk_ksteps % 2 == 0 && ksteps % chunk_ksteps == 0,
         "chunk_ksteps = " + std::to_string(chunk_ksteps) + " must be even (a chunk's k-steps split evenly over a tile's two "
         "warps) and divide the " + std::to_string(ksteps) + " k-steps of a slice");
    need(ring_depth >= 1 && ring_depth <= 64, "ring_depth must be in 1..64");
    need(in_flight >= 1 && in_flight <= ring_depth, "in_flight must be in 1..ring_depth");
    need(recv_slots >= 1 && recv_slots <= 16, "recv_slots must be in 1..16");
    need(c.S() >= 1 && c.S() <= 1024, "S must be in 1..1024");
    need(seam == 0 || seam == 1, "seam must be 0 (x an input) or 1 (x computed in each cluster)");
    need(seam_slice_cols >= 1 && c.D % ranks == 0 && (c.D / ranks) % seam_slice_cols == 0,
         "seam_slice_cols = " + std::to_string(seam_slice_cols) + " must divide a rank's " + std::to_string(c.D / ranks) + " columns");
    need(!seam || (c.nb >= 1 && c.nb + 2 <= 32), "the seam's gate takes a lane a source: nb + 2 must be in 3..32");
    need(tail == 0 || tail == 1, "tail must be 0 (the plan ends at proj) or 1 (the kda tasks in it)");
    need(!tail || (c.V % kV2TileRows == 0 && c.V / kV2TileRows <= ranks),
         "the tail's tasks are 16 state rows each, a (request, head)'s on distinct ranks: V = " + std::to_string(c.V) +
             " must be whole 16-row tiles, at most ranks of them");
}

PlanV2 PlanV2::build(const Config& cfg, const PlanV2Params& params) {
    cfg.validate();
    params.validate(cfg);
    PlanV2 p;
    p.cfg_ = cfg;
    p.params_ = params;
    p.deal_units();
    p.lay_streams();
    p.lay_buffers();
    p.lay_seam();
    p.lay_tail();
    p.write_programs();
    return p;
}

int v2_row_head(const Config& c, int row) {
    const int E = c.E();
    if (row >= 4 * E) return -1;  // f_a, beta, pad
    if (row >= 3 * E) return c.H;  // g
    const int part = row / E;      // q | k | v
    return (row - part * E) / (part < 2 ? c.K : c.V);
}

// f_a, beta and the pad first (every head's gate and beta need them), then q, k, v head by head, g
// last (only the gated norm needs it, after the recurrence), so that a head's rows are done while
// later heads stream.
std::vector<int> v2_head_order_tiles(const Config& c) {
    auto key = [&](int row0) { return std::make_tuple(v2_row_head(c, row0), row0 / c.E(), row0); };
    std::vector<int> t;
    for (int row = 0; row < c.N; row += kV2TileRows) t.push_back(row);
    std::stable_sort(t.begin(), t.end(), [&](int a, int b) { return key(a) < key(b); });
    return t;
}

// The tiles in head order, in 64-row blocks round-robin over the clusters (as many whole rounds as
// there are), then the last tiles one by one, so every cluster has nearly as many tiles as the next
// and every cluster is at the same head at the same time; each cluster's tiles in order, cut into
// units of four (the last shorter).
void PlanV2::deal_units() {
    const int C = params_.clusters, per_block = params_.block_rows / kV2TileRows;
    const std::vector<int> order = v2_head_order_tiles(cfg_);
    std::vector<std::vector<int>> tiles(static_cast<size_t>(C));
    const int blocks = cfg_.N / params_.block_rows / C * C;
    for (int b = 0; b < blocks; ++b)
        for (int k = 0; k < per_block; ++k) tiles[size_t(b % C)].push_back(order[size_t(b * per_block + k)]);
    for (size_t i = size_t(blocks * per_block), g = 0; i < order.size(); ++i, ++g) tiles[g % size_t(C)].push_back(order[i]);
    units.clear();
    cluster_first.clear();
    for (int c = 0; c < C; ++c) {
        cluster_first.push_back(int32_t(units.size()));
        const auto& t = tiles[size_t(c)];
        for (size_t i = 0; i < t.size(); i += kV2UnitTiles) {
            V2Unit u{c, int32_t(std::min<size_t>(kV2UnitTiles, t.size() - i)), {-1, -1, -1, -1}};
            for (int k = 0; k < u.tiles; ++k) u.row0[k] = t[i + size_t(k)];
            units.push_back(u);
        }
    }
    cluster_first.push_back(int32_t(units.size()));
}

// Each CTA's run: its cluster's units in order, each as slice_ksteps / chunk_ksteps chunks; chunk j
// in ring slot j mod depth, round j / depth. The runs follow each other CTA by CTA.
void PlanV2::lay_streams() {
    const int KQ = params_.chunk_ksteps;
    rings.assign(size_t(ctas()), V2Ring{KQ * kV2UnitTiles * kV2TileBytes, params_.ring_depth, params_.in_flight, kV2Consumers});
    chunks.assign(size_t(ctas()), {});
    run_offset.assign(size_t(ctas()) + 1, 0);
    int64_t at = 0;
    for (int cta = 0; cta < ctas(); ++cta) {
        run_offset[size_t(cta)] = int32_t(at);
        const int c = cluster_of(cta);
        int32_t off = 0, j = 0;
        for (int u = cluster_first[size_t(c)]; u < cluster_first[size_t(c) + 1]; ++u)
            for (int k0 = 0; k0 < slice_ksteps(); k0 += KQ, ++j) {
                const int32_t bytes = KQ * units[size_t(u)].tiles * kV2TileBytes;
                chunks[size_t(cta)].push_back({u, k0, KQ, bytes, off, j % params_.ring_depth, j / params_.ring_depth});
                off += bytes;
            }
        at += off;
        if (at > INT32_MAX) bad_input("plan v2: the packed weight exceeds 2 GB");
    }
    run_offset[size_t(ctas())] = int32_t(at);
}

// Per unit, its 2·tiles owners (owner o: tile o / 2, rows + 8·(o mod 2)), each with a receive slot
// use that every rank's partial completes, and a free that the owner's arrives make up.
void PlanV2::lay_buffers() {
    partials.clear();
    recvs.clear();
    frees.clear();
    const int R = params_.ranks, slots = params_.recv_slots;
    for (int c = 0; c < params_.clusters; ++c) {
        std::vector<int32_t> uses(size_t(R) * size_t(slots), 0);  // per (owner, slot)
        for (int u = cluster_first[size_t(c)]; u < cluster_first[size_t(c) + 1]; ++u) {
            const int i = u - cluster_first[size_t(c)], slot = i % slots, t = units[size_t(u)].tiles;
            for (int o = 0; o < 2 * t; ++o) {
                recvs.push_back({u, o, slot, uses[size_t(o) * size_t(slots) + size_t(slot)]++,
                                 units[size_t(u)].row0[o / 2] + kV2OwnerRows * (o % 2), R * partial_bytes()});
                frees.push_back({u, o, slot, o == 0 ? R - (2 * t - 1) : 1});
                for (int s = 0; s < R; ++s) partials.push_back({u, s, o, o / 2, partial_bytes(), i / slots - 1});
            }
        }
    }
}

// Row s's owner is rank s mod ranks (every cluster the same); each CTA's sends: a part send to every
// owner, a wgt send to every rank (an owner), an msq send to every rank; its barriers armed for what
// its senders bring.
void PlanV2::lay_seam() {
    seam_owner.clear(), seam_ctas.clear(), seam_send_begin.clear(), seam_sends.clear();
    if (!has_seam()) return;
    const int R = params_.ranks, S = cfg_.S();
    std::vector<int> owned(size_t(R), 0);
    for (int s = 0; s < S; ++s) seam_owner.push_back(s % R), ++owned[size_t(s % R)];
    for (int k = 0; k < ctas(); ++k) {
        const int r = rank_of(k), c = cluster_of(k);
        seam_ctas.push_back({seam_in_bytes(), R * seam_part_bytes(owned[size_t(r)]), seam_wgt_bytes(S), R * seam_msq_bytes(), owned[size_t(r)]});
        seam_send_begin.push_back(int32_t(seam_sends.size()));
        for (int o = 0; o < R; ++o)
            if (owned[size_t(o)]) seam_sends.push_back({k, cta(c, o), int32_t(V2SeamBar::part), seam_part_bytes(owned[size_t(o)])});
        if (owned[size_t(r)])
            for (int t = 0; t < R; ++t) seam_sends.push_back({k, cta(c, t), int32_t(V2SeamBar::wgt), seam_wgt_bytes(owned[size_t(r)])});
        for (int t = 0; t < R; ++t) seam_sends.push_back({k, cta(c, t), int32_t(V2SeamBar::msq), seam_msq_bytes()});
    }
    seam_send_begin.push_back(int32_t(seam_sends.size()));
}

void PlanV2::lay_tail() {
    tasks.clear();
    if (params_.tail) tasks = tail_tasks(cfg_, params_);  // the placement above
}

std::vector<int> PlanV2::tail_pair(int i) const {
    const V2Task& x = tasks[size_t(i)];
    std::vector<int> out;
    for (size_t j = 0; j < tasks.size(); ++j)
        if (tasks[j].request == x.request && tasks[j].head == x.head) out.push_back(int(j));
    std::stable_sort(out.begin(), out.end(), [&](int a, int b) { return tasks[size_t(a)].tile < tasks[size_t(b)].tile; });
    return out;
}

std::vector<int> PlanV2::tail_rows(const V2Task& t, V2Op op) const {
    const int E = cfg_.E(), h = t.head, v0 = t.tile * kV2TileRows;
    std::vector<int> rows;
    auto range = [&](int r0, int n) {
        for (int r = r0; r < r0 + n; ++r) rows.push_back(r);
    };
    if (op == V2Op::NORM) {
        range(cfg_.col_g2() + h * cfg_.V + v0, kV2TileRows);
        return rows;
    }
    range(h * cfg_.K + t.qk0, t.qkn);      // q
    range(E + h * cfg_.K + t.qk0, t.qkn);  // k
    range(cfg_.col_fa() + t.fa0, t.fan);   // f_a
    range(cfg_.col_beta() + h, 1);         // beta
    range(2 * E + h * cfg_.V + v0, kV2TileRows);  // v
    return rows;
}

std::vector<int> PlanV2::tail_entries(const V2Task& t, V2Op op) const {
    const std::vector<int> rows = tail_rows(t, op);
    const std::set<int> want(rows.begin(), rows.end());
    std::vector<int> out;
    for (size_t e = 0; e < recvs.size(); ++e) {
        const auto it = want.lower_bound(recvs[e].row0);
        if (it != want.end() && *it < recvs[e].row0 + kV2OwnerRows) out.push_back(int(e));
    }
    return out;
}

void PlanV2::write_programs() {
    programs.assign(size_t(processes()), {});
    barriers.clear();
    for (int c = 0; c < params_.clusters; ++c)
        for (int pt = 0; pt < int(V2Point::count); ++pt) barriers.push_back({c, pt, 0});
    // the receive entries of each owner CTA, in unit order (the reducer's list)
    std::vector<std::vector<int32_t>> owned(static_cast<size_t>(ctas()));
    for (size_t e = 0; e < recvs.size(); ++e)
        owned[size_t(cta(units[size_t(recvs[e].unit)].cluster, recvs[e].owner))].push_back(int32_t(e));
    const int R = params_.ranks;
    for (int k = 0; k < ctas(); ++k) {
        const int c = cluster_of(k), rank = rank_of(k);
        const V2Instr entry{int32_t(V2Op::SYNC), barrier_index(c, V2Point::entry)},
            exit{int32_t(V2Op::SYNC), barrier_index(c, V2Point::exit)};
        auto& prod = programs[size_t(proc(k, V2Role::producer))];
        prod.push_back({int32_t(V2Op::INIT), 0});
        prod.push_back(entry);  // copies wait for it: issued before, its arrive passes later (docs/kernel-v2.md)
        if (has_seam()) prod.push_back({int32_t(V2Op::INPUT), k});  // ahead of the stream, not queued behind it
        for (size_t j = 0; j < chunks[size_t(k)].size(); ++j) prod.push_back({int32_t(V2Op::COPY), int32_t(j)});
        prod.push_back(exit);
        auto& red = programs[size_t(proc(k, V2Role::reducer))];
        red.push_back(entry);
        for (int32_t e : owned[size_t(k)]) {
            red.push_back({int32_t(V2Op::REDUCE), e});
            red.push_back({int32_t(V2Op::RELEASE), e});  // frees parallel recvs
            // the rows through the conv once the slot is free: PUBLISH reads the sums, not the slot
            if (has_tail()) red.push_back({int32_t(V2Op::PUBLISH), e});
        }
        red.push_back(exit);
        for (int w = 0; w < kV2Consumers; ++w) {
            auto& con = programs[size_t(proc(k, V2Role::consumer, w))];
            const int m = w / 2;
            con.push_back(entry);
            if (has_seam()) con.push_back({int32_t(V2Op::XWAIT), k});
            size_t j = 0;
            for (int u = cluster_first[size_t(c)]; u < cluster_first[size_t(c) + 1]; ++u) {
                for (; j < chunks[size_t(k)].size() && chunks[size_t(k)][j].unit == u; ++j) {
                    con.push_back({int32_t(V2Op::TAKE), int32_t(j)});
                    con.push_back({int32_t(V2Op::FREE), int32_t(j)});
                }
                if (m >= units[size_t(u)].tiles) continue;
                con.push_back({int32_t(V2Op::PAIR), u});
                if (w % 2) continue;
                for (size_t e = 0; e < recvs.size(); ++e)  // the partials of this rank to the tile's two owners
                    if (recvs[e].unit == u && recvs[e].owner / 2 == m) con.push_back({int32_t(V2Op::SEND), int32_t(e) * R + rank});
            }
            con.push_back(exit);
        }
        auto& seam = programs[size_t(proc(k, V2Role::seam))];
        seam.push_back(entry);
        if (has_seam()) {
            for (V2Op op : {V2Op::LOAD, V2Op::PART, V2Op::GATE, V2Op::MIX, V2Op::X})
                if (op != V2Op::GATE || seam_ctas[size_t(k)].rows_owned > 0) seam.push_back({int32_t(op), k});
        }
        // the tail on the seam team's spare warps, the CTA's tasks in onrm order (every rank of a cluster
        // takes its pairs in the same order, so no rank waits on a pair its peers have not reached)
        std::vector<int> mine;
        for (size_t i = 0; i < tasks.size(); ++i)
            if (cta(tasks[i].cluster, tasks[i].rank) == k) mine.push_back(int(i));
        std::stable_sort(mine.begin(), mine.end(), [&](int a, int b) { return tasks[size_t(a)].onrm < tasks[size_t(b)].onrm; });
        // and every NORM after the last REC: a NORM waits for g, which streams last, so a task's NORM
        // before the next task's POLL would hold every later task until g is in
        for (int i : mine)
            for (V2Op op : {V2Op::POLL, V2Op::DECAY, V2Op::REC}) seam.push_back({int32_t(op), i});
        for (int i : mine) seam.push_back({int32_t(V2Op::NORM), i});
        seam.push_back(exit);
    }
}

int PlanV2::smem_bytes(int k) const {
    const V2Ring& r = rings[size_t(k)];
    const int rest = inproj_smem_bytes(cfg_, params_, r.slot_bytes, r.depth) + (has_seam() ? seam_smem_bytes(cfg_, params_) : 0);
    return has_tail() ? V2TailLayout::make(rest, tail_dims()).bytes : rest;
}

int PlanV2::tail_publishes(int k) const {
    int most = 0;
    for (int q = k < 0 ? 0 : k; q < (k < 0 ? ctas() : k + 1); ++q) {
        const auto& prog = programs[size_t(proc(q, V2Role::reducer))];
        most = std::max(most, int(std::count_if(prog.begin(), prog.end(), [](const V2Instr& i) { return i.opcode() == V2Op::PUBLISH; })));
    }
    return most;
}

V2TailDims PlanV2::tail_dims() const {
    return {tail_pairs(-1), tail_publishes(-1), cfg_.R, cfg_.L, cfg_.K, cfg_.F, cfg_.W, tail_tiles()};
}

int PlanV2::tail_pairs(int k) const {
    int pairs = 0;
    for (const V2Task& t : tasks)
        if (k < 0 || cta(t.cluster, t.rank) == k) pairs = std::max(pairs, t.onrm + 1);
    return pairs;
}

void PlanV2::require_fits() const {
    for (int k = 0; k < ctas(); ++k)
        if (smem_bytes(k) > kV2SmemBytes)
            bad_input("plan v2: R " + std::to_string(cfg_.R) + " x L " + std::to_string(cfg_.L) + (has_tail() ? " with the tail" : "") +
                      " does not fit one launch: CTA " + std::to_string(k) + " needs " + std::to_string(smem_bytes(k)) +
                      " bytes of shared memory, over " + std::to_string(kV2SmemBytes) + " (docs/kernel-v2.md, \"One launch's shared memory\")");
}

int PlanV2::seam_smem_bytes(const Config& c, const PlanV2Params& pp) {
    const int64_t b = V2SeamLayout::make(0, c.S(), c.nb, c.D / pp.ranks, pp.seam_slice_cols, pp.ranks).bytes;
    return int(std::min<int64_t>(b + 15, INT32_MAX));  // + the alignment of its start
}

ReductionOrder PlanV2::reduction_order() const {
    ReductionOrder o;
    o.set(Site::in_proj, OrderSpec{OrderSpec::cluster, params_.ranks, 0});
    if (has_seam()) {  // each slice sequential, the slices' partials in order; softmax and mix over the sources in order
        const OrderSpec slices{OrderSpec::split, seam_slices(), 0};
        o.set(Site::attn_sumsq, slices).set(Site::attn_dot, slices).set(Site::x_sumsq, slices);
    }
    if (has_tail()) {  // the tasks' sums as trees (lanes, then shuffles); Σō² the tiles' partials in tile order
        const OrderSpec tree{OrderSpec::pairwise, 1, 0};
        for (Site s : {Site::f_b, Site::l2_q, Site::l2_k, Site::rec_kS, Site::rec_oq}) o.set(s, tree);
        o.set(Site::onorm_sumsq, OrderSpec{OrderSpec::split, tail_tiles(), 0});
    }
    return o;
}

std::vector<V2Wait> PlanV2::waits(int p, int i) const {
    const V2Instr& in = programs[size_t(p)][size_t(i)];
    const int k = proc_cta(p);
    std::vector<V2Wait> w;
    auto count_before = [&](V2Op op, int a) {  // earlier steps of this process with the same op (and operand, a >= 0)
        int n = 0;
        for (int q = 0; q < i; ++q)
            if (programs[size_t(p)][size_t(q)].opcode() == op && (a < 0 || programs[size_t(p)][size_t(q)].a == a)) ++n;
        return n;
    };
    switch (in.opcode()) {
        case V2Op::COPY: {
            const auto& ch = chunks[size_t(k)];
            const int j = in.a, cap = rings[size_t(k)].in_flight;
            if (j >= cap) w.push_back({{V2Bar::full, k, ch[size_t(j - cap)].slot}, ch[size_t(j - cap)].round});
            if (ch[size_t(j)].round >= 1) w.push_back({{V2Bar::empty, k, ch[size_t(j)].slot}, ch[size_t(j)].round - 1});
            break;
        }
        case V2Op::SYNC: w.push_back({{V2Bar::cluster, -1, in.a}, count_before(V2Op::SYNC, in.a)}); break;
        case V2Op::TAKE: {
            const V2Chunk& ch = chunks[size_t(k)][size_t(in.a)];
            w.push_back({{V2Bar::full, k, ch.slot}, ch.round});
            break;
        }
        case V2Op::PAIR: {
            const int n = count_before(V2Op::PAIR, -1), m = proc_warp(p) / 2;
            w.push_back({{V2Bar::pair, k, m}, 2 * n});
            w.push_back({{V2Bar::pair, k, m}, 2 * n + 1});
            break;
        }
        case V2Op::SEND: {
            const V2Partial& pa = partials[size_t(in.a)];
            const V2Recv& rv = recvs[size_t(in.a) / size_t(params_.ranks)];
            if (pa.free_round >= 0) w.push_back({{V2Bar::free, k, rv.slot}, pa.free_round});
            break;
        }
        case V2Op::REDUCE: {
            const V2Recv& rv = recvs[size_t(in.a)];
            w.push_back({{V2Bar::recv, k, rv.slot}, rv.round});
            break;
        }
        case V2Op::LOAD: w.push_back({{V2Bar::seam, k, int32_t(V2SeamBar::in)}, 0}); break;
        case V2Op::GATE: w.push_back({{V2Bar::seam, k, int32_t(V2SeamBar::part)}, 0}); break;
        case V2Op::MIX: w.push_back({{V2Bar::seam, k, int32_t(V2SeamBar::wgt)}, 0}); break;
        case V2Op::X: w.push_back({{V2Bar::seam, k, int32_t(V2SeamBar::msq)}, 0}); break;
        case V2Op::XWAIT: w.push_back({{V2Bar::seam, k, int32_t(V2SeamBar::x)}, 0}); break;
        case V2Op::POLL:
        case V2Op::NORM: {
            const V2Task& t = tasks[size_t(in.a)];
            for (int e : tail_entries(t, in.opcode())) w.push_back({{V2Bar::words, -1, e}, t.request});
            if (in.opcode() == V2Op::NORM) w.push_back({{V2Bar::onrm, k, t.onrm}, 0});
            break;
        }
        case V2Op::DECAY: w.push_back({{V2Bar::share, k, tasks[size_t(in.a)].onrm}, 0}); break;
        case V2Op::REC: w.push_back({{V2Bar::decay, k, tasks[size_t(in.a)].onrm}, 0}); break;
        default: break;  // INIT, FREE, RELEASE, INPUT, PART, PUBLISH wait for nothing
    }
    return w;
}

std::vector<std::string> PlanV2::wait_texts(int p, int i) const {
    std::vector<std::string> out;
    for (const V2Wait& x : waits(p, i))
        out.push_back(bar_name(x.bar) + (x.bar.kind == V2Bar::words ? " of request " : " round ") + std::to_string(x.round));
    return out;
}

std::string PlanV2::proc_name(int p) const {
    const int k = proc_cta(p);
    std::string s = "CTA " + std::to_string(k) + " (cluster " + std::to_string(cluster_of(k)) + " rank " +
                    std::to_string(rank_of(k)) + ") " + to_string(proc_role(p));
    if (proc_role(p) == V2Role::consumer)
        s += " " + std::to_string(proc_warp(p)) + " (tile " + std::to_string(proc_warp(p) / 2) + ", " +
             (proc_warp(p) % 2 ? "odd" : "even") + " k-steps)";
    return s;
}

std::string PlanV2::describe(const V2Instr& in) const {
    const std::string op = to_string(in.opcode());
    switch (in.opcode()) {
        case V2Op::COPY:
        case V2Op::TAKE:
        case V2Op::FREE: return op + "(chunk " + std::to_string(in.a) + ")";
        case V2Op::SYNC: {
            const V2Barrier& b = barriers[size_t(in.a)];
            return op + "(" + to_string(V2Point(b.point)) + " barrier of cluster " + std::to_string(b.cluster) + ")";
        }
        case V2Op::PAIR: return op + "(unit " + std::to_string(in.a) + ")";
        case V2Op::SEND: {
            const V2Partial& pa = partials[size_t(in.a)];
            return op + "(unit " + std::to_string(pa.unit) + ": rank " + std::to_string(pa.sender) + " -> owner rank " +
                   std::to_string(pa.owner) + ")";
        }
        case V2Op::REDUCE:
        case V2Op::RELEASE: {
            const V2Recv& rv = recvs[size_t(in.a)];
            return op + "(unit " + std::to_string(rv.unit) + ", rows " + std::to_string(rv.row0) + ".." +
                   std::to_string(rv.row0 + kV2OwnerRows - 1) + ", slot " + std::to_string(rv.slot) + ")";
        }
        case V2Op::INPUT: return op + "(CTA " + std::to_string(in.a) + ": " + std::to_string(seam_in_bytes()) + " bytes of the slice's inputs)";
        case V2Op::LOAD:
        case V2Op::PART:
        case V2Op::MIX:
        case V2Op::X:
        case V2Op::XWAIT: return op + "(CTA " + std::to_string(in.a) + ")";
        case V2Op::PUBLISH: {
            const V2Recv& rv = recvs[size_t(in.a)];
            return op + "(rows " + std::to_string(rv.row0) + ".." + std::to_string(rv.row0 + kV2OwnerRows - 1) +
                   (rv.row0 < cfg_.C ? " through the conv" : "") + ")";
        }
        case V2Op::POLL:
        case V2Op::DECAY:
        case V2Op::REC:
        case V2Op::NORM: {
            const V2Task& t = tasks[size_t(in.a)];
            return op + "(task " + std::to_string(in.a) + ": request " + std::to_string(t.request) + ", head " + std::to_string(t.head) +
                   ", rows " + std::to_string(t.tile * kV2TileRows) + ".." + std::to_string(t.tile * kV2TileRows + kV2TileRows - 1) + ")";
        }
        case V2Op::GATE: {
            std::string rows;
            for (int s = 0; s < int(seam_owner.size()); ++s)
                if (in.a >= 0 && in.a < ctas() && seam_owner[size_t(s)] == rank_of(in.a)) rows += (rows.empty() ? "" : ", ") + std::to_string(s);
            return op + "(CTA " + std::to_string(in.a) + ": rows " + (rows.empty() ? "none" : rows) + ")";
        }
        default: return op;
    }
}

std::string PlanV2::bar_name(const V2BarRef& b) const {
    static const char* kinds[] = {"full", "empty", "recv", "free", "pair", "cluster"};
    if (b.kind == V2Bar::seam) return std::string("the seam's ") + to_string(V2SeamBar(b.index)) + " barrier of CTA " + std::to_string(b.cta);
    if (b.kind == V2Bar::words)
        return "the words of rows " + std::to_string(recvs[size_t(b.index)].row0) + ".." + std::to_string(recvs[size_t(b.index)].row0 + kV2OwnerRows - 1) +
               " (receive entry " + std::to_string(b.index) + ")";
    if (b.kind == V2Bar::share || b.kind == V2Bar::onrm || b.kind == V2Bar::decay)
        return std::string(b.kind == V2Bar::share ? "share" : b.kind == V2Bar::onrm ? "onrm" : "decay") + "[pair " + std::to_string(b.index) + "] of CTA " + std::to_string(b.cta);
    if (b.kind == V2Bar::cluster) {
        const V2Barrier& x = barriers[size_t(b.index)];
        return std::string("the ") + to_string(V2Point(x.point)) + " barrier of cluster " + std::to_string(x.cluster);
    }
    return std::string(kinds[int(b.kind)]) + "[" + (b.kind == V2Bar::pair ? "tile " : "slot ") + std::to_string(b.index) +
           "] of CTA " + std::to_string(b.cta);
}

}  // namespace monokda
