// Kernel v2's in_proj as data (docs/kernel-v2.md, docs/plan.md "Kernel v2"): the clusters, the unit
// table, each CTA's ring and chunk list, the cluster buffers that carry a unit's partials to their
// owner, the cluster barriers, the seam that computes x in each cluster (its barriers, byte counts,
// row owners and hand-offs), the tail's kda tasks (where they run, what each polls and shares), and
// every role instance's program with the waits each step implies.
// Built once from (Config, PlanV2Params); the emulator runs it (emulator/v2/), serialize() is the flat
// table the device is to read, and the checks (plan_v2_checks.cpp) hold its tables to each other.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/bf16.hpp"  // MONOKDA_HD
#include "core/config.hpp"
#include "core/reduction_order.hpp"

namespace monokda {

// The matrix unit's m16n8k16 shapes, as v2 uses them: the weight is the M side.
constexpr int kV2TileRows = 16;                 // in_proj rows a tile
constexpr int kV2KStep = OrderSpec::kKStep;     // columns of D a k-step (16)
constexpr int kV2TileBytes = 512;               // a 16 × 16 bf16 tile: 32 lanes × 16 bytes
constexpr int kV2UnitTiles = 4;                 // tiles a unit (the last of a cluster may have fewer)
constexpr int kV2OwnerRows = 8;                 // rows an owner sums: two owners a tile
constexpr int kV2NTileCols = 8;                 // S is padded to n-tiles of 8 columns
constexpr int kV2Consumers = 2 * kV2UnitTiles;  // consumer warps a CTA: (tile m, k-step parity)
constexpr int kV2ProcsPerCta = 3 + kV2Consumers;  // producer, reducer, the consumers, the seam team
constexpr int kV2SmemBytes = 227 * 1024;        // an H200 CTA's shared memory

struct PlanV2Params {
    int ranks = 8;          // CTAs a cluster; rank r owns K-slice r of D (D / ranks columns)
    int clusters = 15;      // 15 × 8 = 120 CTAs: the most clusters of 8 a cooperative launch fits on an H200
    int block_rows = 64;    // rows dealt to a cluster at a time, round-robin, before the tail's tiles
    int chunk_ksteps = 14;  // k-steps a chunk (a copy: these k-steps of all the unit's tiles)
    int ring_depth = 3;     // slots of a CTA's ring
    int in_flight = 3;      // copies a producer keeps outstanding at most (<= ring_depth)
    int recv_slots = 4;     // receive slots (cluster buffers) a CTA keeps for the partials it owns
    // The seam (docs/kernel-v2.md "The seam"): 1, x computed in each cluster from the step's inputs;
    // 0, x an input. for_config turns it on where its shared memory fits beside in_proj's.
    int seam = 1;
    int seam_slice_cols = 128;  // columns a seam slice (v1's attn slice): a reduction's partials are a slice's
    // The tail (docs/kernel-v2.md "The tail"): 1, the owners publish their rows as tagged words and the
    // kda tasks run in the plan (qkv, g1, o, core_out and the states); 0, the plan ends at proj.
    int tail = 0;

    // The production shape's setting the probes measured (docs/results/2026-12-02-h200-v2-derisk.md:
    // 28 KB chunks x 3, 4 receive slots; at S >= 64 16 KB chunks, 2 slots); the small shape's keeps every
    // mechanism in play at 16 CTAs (a slot of the ring and of the receive buffers reused, a short unit).
    // The seam goes on where in_proj's, the seam's and (with `tail`) the tail's memory fit together.
    static PlanV2Params for_config(const Config& c, int tail = 0);
    // BadInput naming the field ("plan v2: ...") where the plan cannot be built for c.
    void validate(const Config& c) const;
};

// A unit: up to four 16-row tiles of in_proj (any rows), computed by one cluster.
struct V2Unit {
    int32_t cluster, tiles;
    int32_t row0[kV2UnitTiles];  // each tile's first row; -1 past `tiles`
};

// A chunk of a CTA's stream: k-steps kstep0 .. kstep0 + ksteps − 1 of its K-slice of one unit, all
// the unit's tiles, [k-step][tile] in A-fragment order; bytes at `offset` of the CTA's run. Chunk j
// of a CTA goes to ring slot j mod depth in round j / depth (the parity its barriers are waited with).
struct V2Chunk {
    int32_t unit, kstep0, ksteps, bytes, offset, slot, round;
};

// A CTA's ring: `depth` slots of slot_bytes. full[s]: one arrival (the producer's, with the chunk's
// byte count) and the copy's bytes; empty[s]: one arrival a consumer warp.
struct V2Ring {
    int32_t slot_bytes, depth, in_flight, consumers;
};

// A unit's partial for `owner`'s 8 rows, from `sender` (ranks of the unit's cluster): the sender's
// even warp of tile `tile` adds the odd warp's k-steps to its own and stores it with st.async into
// the owner's receive slot, completing `bytes` of the owner's barrier. free_round: the round of the
// sender's free barrier of that slot it waits for first (-1: the slot's first use).
struct V2Partial {
    int32_t unit, sender, owner, tile, bytes, free_round;
};

// The owner's use of a receive slot for a unit: its barrier completes on `bytes` (every sender's
// partial); the owner sums the ranks in rank order, rounds once and stores proj rows row0 .. row0+7.
// The owner's REDUCE arms the use itself (its arrival and `bytes`) before it waits: partials that land
// first take the byte count below zero, and the phase, which counts that one arrival, cannot complete
// before it; a use's partials cannot land in the use before, since their senders wait for its free.
struct V2Recv {
    int32_t unit, owner, slot, round, row0, bytes;
};

// The owner's peer arrive that frees receive slot `slot` after its use for `unit`, on every rank of
// the cluster: `count` arrivals (a free barrier counts ranks a use; rank 0 makes up for owners a short
// unit lacks).
struct V2Free {
    int32_t unit, owner, slot, count;
};

// A cluster barrier: a named point every role of every CTA of a cluster passes. scope 0: the cluster;
// 1: one CTA (a CTA barrier: nothing crosses to a peer).
enum class V2Point : int32_t { entry = 0, exit = 1, count };
const char* to_string(V2Point p);  // "entry", "exit"
struct V2Barrier {
    int32_t cluster, point, scope;
};

// The seam's barriers of a CTA, each one phase a launch: `in` (the inputs' bulk copies: the producer's
// arrival and their bytes), part, wgt, msq (the hand-offs into the CTA: one arrival at INIT and the
// bytes its senders bring), x (the seam's arrival once x is stored: the consumers start in_proj).
enum class V2SeamBar : int32_t { in = 0, part, wgt, msq, x, count };
const char* to_string(V2SeamBar b);  // "in", "part", "wgt", "msq", "x"

// A CTA's seam: the bytes each of its barriers is armed for, and the rows whose softmax it takes.
struct V2SeamCta {
    int32_t in_bytes, part_bytes, wgt_bytes, msq_bytes, rows_owned;
};

// A hand-off of the seam: CTA `from`'s seam stores `bytes` by st.async into CTA `to`'s barrier `bar`
// (part: the (Σv², Σv·wq) of each row `to` owns, each source and slice of `from`; wgt: e_0 .. e_nb and
// Σe of each row `from` owns; msq: Σmixed² of each row and slice of `from`).
struct V2SeamSend {
    int32_t from, to, bar, bytes;
};

// A CTA's seam shared memory from `base` (16-byte aligned offsets): the rank's slice of the inputs as
// they are copied in (3 gains; P, then P' in place; delta; the bank rows: bf16), wq and the gain
// (f32), the owner's partials, the weights, Σmixed², 1/rms, mixed (f32). The one layout the plan's fit
// and the kernel's offsets are: a chain lane reads 16 bytes a step, so a source row is padded by 16
// bytes and mixed is kept as (row, slice) blocks padded by 16, so that neighbouring rows and blocks
// start in different banks.
struct V2SeamLayout {
    int32_t cols, slice, row_h, mix_row;  // a rank's columns, a slice's; a source row's stride (bf16), a mixed block's (f32)
    int32_t gains, prefix, delta, bank, wq, nw, part, wgt, msq, rr, mixed, bytes;
    MONOKDA_HD static V2SeamLayout make(int base, int S, int nb, int cols, int slice, int ranks) {
        auto at = [](int off) { return (off + 15) / 16 * 16; };
        const int own = (S + ranks - 1) / ranks, slices = cols * ranks / slice;
        V2SeamLayout l{};
        l.cols = cols, l.slice = slice, l.row_h = cols + 8, l.mix_row = slice + 4;
        l.gains = at(base);
        l.prefix = l.gains + 3 * cols * 2;
        l.delta = l.prefix + S * l.row_h * 2;
        l.bank = l.delta + S * l.row_h * 2;
        l.wq = l.bank + S * nb * l.row_h * 2;
        l.nw = l.wq + cols * 4;
        l.part = l.nw + cols * 4;                         // [owned row][source][slice][Σv², Σv·wq]
        l.wgt = at(l.part + own * (nb + 1) * slices * 8);  // [row][e_0 .. e_nb, Σe]
        l.msq = at(l.wgt + S * (nb + 2) * 4);              // [row][slice]
        l.rr = at(l.msq + S * slices * 4);                 // [row]
        l.mixed = at(l.rr + S * 4);                        // [(row, slice)][column of the slice]
        l.bytes = l.mixed + S * (cols / slice) * l.mix_row * 4;
        return l;
    }
    // column c of the rank's slice of row s, in mixed (f32 index from `mixed`)
    MONOKDA_HD int mixed_at(int s, int c) const { return (s * (cols / slice) + c / slice) * mix_row + c % slice; }
};

// A kda task of the tail: 16 state rows (v = 16·tile ..) of (request, head), on `rank` of `cluster`.
// A pair's tasks share one cluster, so what they share and their partial Σō² meet in it; onrm: the
// pair's place among its cluster's pairs (which of the CTA's share and partial-norm barriers it
// uses). The task polls its share of the pair's words, q and k rows qk0 .. qk0 + qkn − 1 of the head
// and f_a rows fa0 .. fa0 + fan − 1 (beside beta's row and its own v rows), and sends it to every
// task of the pair: the pair's shares together are the head's q, k and f_a, each polled once.
struct V2Task {
    int32_t request, head, tile, cluster, rank, onrm, qk0, qkn, fa0, fan;
};

// What a task's share send carries (its q, k and f_a rows of L tokens, bf16, [token][q, k, f_a]), a
// decay send (the decays of its share's keys, f32, [token][key]) and a partial Σō² send (L floats):
// the bytes a pair's barriers are armed for, on the host and the device.
MONOKDA_HD constexpr int v2_share_bytes(const V2Task& t, int L) { return (2 * t.qkn + t.fan) * L * 2; }
MONOKDA_HD constexpr int v2_decay_bytes(const V2Task& t, int L) { return t.qkn * L * 4; }
MONOKDA_HD constexpr int v2_onrm_bytes(int L) { return L * 4; }

// The words a POLL or NORM stages at most (its words waits: entries of 8 rows of L tokens).
constexpr int kV2TailStageWaits = 16;

// What a CTA's tail memory is laid out for: its pair slots and its reducer's PUBLISH steps (the
// kernel lays every CTA out for the most of each), requests, tokens, keys, f_a columns, conv taps and
// tiles a pair.
struct V2TailDims {
    int32_t pairs, pubs, R, L, K, F, W, tiles;
};

// A CTA's tail shared memory from `base` (16-byte aligned offsets): for each pair slot its share, Σō²
// and decay barriers, the pair's shares (q, k [L][K], f_a [L][F], bf16), the task's beta [L] (f32),
// its v and o rows [L][16] (bf16), the pair's Σō² partials [tile][L] and decays [L][K] (f32); then,
// one a CTA, what a step works on: the first row of each words wait and the staged words [wait][8
// rows][L] (bf16), q̂ and k̂ [L][K] (f32), and what POLL copies in for DECAY while it polls (neither
// waits for a word): the f_b_w rows of the task's keys [K / tiles][F + 8] (bf16, padded) and their
// dt_bias (f32);
// and what PUBLISH reads, so that it loads nothing beside the stream: the entry's 8 rows [R · L][8]
// (bf16, as REDUCE rounds them), and, staged before the first REDUCE, each PUBLISH's conv windows
// [pub][8 rows][R][W − 1] (bf16: the state entries from the last accepted token's, zeros without a
// slot), conv weights [pub][8][W] (f32), each request's state slot and last accepted token [2][R] and
// each PUBLISH's first row [pub]. The decays are a slot's,
// not a step's: a peer's land while this CTA still runs the pair before. The one layout the plan's
// fit and the kernel's offsets are.
struct V2TailLayout {
    int32_t bars, q, k, fa, beta, v, o, onrm, decay, wrow, stage, qn, kn, fb, dtb, rows, cwin, cw, slot, bytes;
    MONOKDA_HD static V2TailLayout make(int base, const V2TailDims& d) {
        auto at = [](int off) { return (off + 15) / 16 * 16; };
        const int pairs = d.pairs, L = d.L, K = d.K, F = d.F, tiles = d.tiles;
        const int keys = K / tiles;  // a task's share of the head's keys
        V2TailLayout l{};
        l.bars = at(base);  // [pairs] share barriers, then [pairs] Σō², then [pairs] decay (8 bytes each)
        l.q = at(l.bars + 3 * pairs * 8);
        l.k = l.q + pairs * L * K * 2;
        l.fa = l.k + pairs * L * K * 2;
        l.beta = at(l.fa + pairs * L * F * 2);
        l.v = at(l.beta + pairs * L * 4);
        l.o = at(l.v + pairs * L * kV2TileRows * 2);
        l.onrm = at(l.o + pairs * L * kV2TileRows * 2);
        l.decay = at(l.onrm + pairs * tiles * L * 4);
        l.wrow = l.decay + pairs * L * K * 4;
        l.stage = at(l.wrow + kV2TailStageWaits * 4);
        l.qn = at(l.stage + kV2TailStageWaits * kV2OwnerRows * L * 2);
        l.kn = l.qn + L * K * 4;
        l.fb = l.kn + L * K * 4;
        l.dtb = l.fb + keys * (F * 2 + 16);  // a row padded by 16 bytes: the keys' rows at one column in distinct banks
        l.rows = at(l.dtb + keys * 4);
        l.cwin = at(l.rows + d.R * L * kV2OwnerRows * 2);
        l.cw = at(l.cwin + d.pubs * kV2OwnerRows * d.R * (d.W - 1) * 2);
        l.slot = l.cw + d.pubs * kV2OwnerRows * d.W * 4;
        l.bytes = at(l.slot + (2 * d.R + d.pubs) * 4);
        return l;
    }
};

enum class V2Role : int32_t { producer = 0, reducer = 1, consumer = 2, seam = 3 };
const char* to_string(V2Role r);

// A role instance's step. Operands index the plan's tables.
enum class V2Op : int32_t {
    INIT = 1,     // producer: the CTA's barriers initialised, init fence
    COPY = 2,     // producer, a = chunk: arm full[slot] with its bytes, bulk copy run + offset -> slot
    SYNC = 3,     // every role, a = barrier: arrive (relaxed, after the init fence) and wait
    TAKE = 4,     // consumer, a = chunk: wait full[slot]; its tile's k-steps of its parity: the products
    FREE = 5,     // consumer, a = chunk: arrive on empty[slot]
    PAIR = 6,     // consumer, a = unit: the tile's odd warp hands its sums to the even warp (even + odd)
    SEND = 7,     // consumer (even), a = partial: st.async into the owner's receive slot
    REDUCE = 8,   // reducer, a = receive entry: recv[slot] armed, waited; the ranks summed in rank order, rounded, proj stored
    RELEASE = 9,  // reducer, a = free entry: peer arrive on every rank's free barrier of the slot
    // the seam (every operand a = the CTA: its seam entry and its sends)
    INPUT = 10,   // producer, before its first COPY: arm `in` with the inputs' bytes, bulk copy them in
    LOAD = 11,    // seam: wait `in`; wq, the gain, P' = P + delta (cluster 0 stores prefix_out)
    PART = 12,    // seam: its part sends, (Σv², Σv·wq) of each row, source and slice of the rank, to the row's owner
    GATE = 13,    // seam (an owner): wait part; each owned row's 56 partials in slice order, softmax; its wgt sends
    MIX = 14,     // seam: wait wgt; mixed; its msq sends, Σmixed² of each row and slice, to every rank
    X = 15,       // seam: wait msq; 1/rms, x rows into the consumers' x; arrive on the x barrier
    XWAIT = 16,   // consumer, before its first TAKE: wait the CTA's x barrier
    // the tail (a = the task, or for PUBLISH the receive entry)
    PUBLISH = 17,  // reducer, after a REDUCE: the 8 rows as tagged words, q/k/v rows through the conv (#5, conv_state written)
    POLL = 18,     // seam team: wait the words of the task's share, beta and its v rows; the share st.async to the pair's tasks
    DECAY = 19,    // seam team: wait the pair's shares; g1 (#4) and the decay of its share's keys, st.async to the pair's tasks; l2 norms
    REC = 20,      // seam team: wait the pair's decays; the recurrence on its state rows (o #6, ssm_state); Σō² sent
    NORM = 21,     // seam team: wait its g rows' words and the pair's Σō²; core_out (#7)
};
const char* to_string(V2Op op);
struct V2Instr {
    int32_t op, a;
    MONOKDA_HD V2Op opcode() const { return V2Op(op); }
};

// A barrier of the plan: a CTA's full[slot], empty[slot], recv[slot] (its receive slots), free[slot],
// the named barrier of a tile's warp pair, or a cluster barrier (index: the barrier entry).
// seam: one of the CTA's seam barriers (index: V2SeamBar). words: the tagged words a receive entry's
// PUBLISH stores (cta = -1, index: the entry; round: the request whose tokens are read; no barrier,
// the words themselves are polled). share, onrm, decay: a CTA's barrier of the pair with that onrm
// (the pair's shares; its partial Σō²; its decays).
enum class V2Bar : int32_t { full = 0, empty, recv, free, pair, cluster, seam, words, share, onrm, decay, count };
struct V2BarRef {
    V2Bar kind;
    int32_t cta, index;  // cluster: cta = -1
    bool operator==(const V2BarRef& o) const { return kind == o.kind && cta == o.cta && index == o.index; }
};
// What a step waits for: the barrier's phase `round` (parity round & 1) complete.
struct V2Wait {
    V2BarRef bar;
    int32_t round;
};

class PlanV2 {
public:
    static PlanV2 build(const Config& cfg, const PlanV2Params& params);

    const Config& config() const { return cfg_; }
    const PlanV2Params& params() const { return params_; }
    int ctas() const { return params_.ranks * params_.clusters; }
    int cta(int cluster, int rank) const { return cluster * params_.ranks + rank; }
    int cluster_of(int cta) const { return cta / params_.ranks; }
    int rank_of(int cta) const { return cta % params_.ranks; }
    int slice_cols() const { return cfg_.D / params_.ranks; }
    int slice_ksteps() const { return slice_cols() / kV2KStep; }
    int n_tiles() const { return (cfg_.S() + kV2NTileCols - 1) / kV2NTileCols; }  // S padded to n-tiles
    int partial_bytes() const { return kV2OwnerRows * n_tiles() * kV2NTileCols * 4; }  // fp32
    // shared memory a CTA uses: ring, x slice (16-byte padded rows), receive slots, the pair buffer, the
    // seam's, the tail's (V2TailLayout after the rest)
    int smem_bytes(int cta) const;
    // the tail's pair slots on CTA k (one past the highest onrm of its tasks; 0 without tasks), or
    // with k < 0 on the CTA with the most
    int tail_pairs(int cta) const;
    // the PUBLISH steps of CTA k's reducer, or with k < 0 the most a CTA has
    int tail_publishes(int cta) const;
    // what every CTA's tail memory is laid out for (V2TailLayout): the most pair slots and PUBLISH
    // steps a CTA has (a CTA with fewer uses a prefix of each)
    V2TailDims tail_dims() const;
    // BadInput naming the first CTA whose shared memory does not fit one launch (a request's limit:
    // a plan asked for by shape, not a fault of the builder, which smem_fits reports)
    void require_fits() const;
    // the seam's (V2SeamLayout from offset 0, and the alignment of its start)
    static int seam_smem_bytes(const Config& c, const PlanV2Params& pp);
    bool has_seam() const { return params_.seam != 0; }
    int seam_slices() const { return cfg_.D / params_.seam_slice_cols; }          // 56 at the production shape
    int seam_rank_slices() const { return slice_cols() / params_.seam_slice_cols; }  // 7: a rank's
    int seam_in_bytes() const { return (3 + cfg_.S() * (2 + cfg_.nb)) * slice_cols() * 2; }  // 3 gains, P, delta, nb bank rows
    // what one send of each hand-off carries, from the rows it is for
    int seam_part_bytes(int rows) const { return rows * (cfg_.nb + 1) * seam_rank_slices() * 8; }
    int seam_wgt_bytes(int rows) const { return rows * (cfg_.nb + 2) * 4; }
    int seam_msq_bytes() const { return cfg_.S() * seam_rank_slices() * 4; }
    // the reduction order the plan computes: in_proj = cluster:ranks, and with the seam attn_sumsq,
    // attn_dot and x_sumsq = split:slices (softmax_den and mix sequential); the rest is not v2's yet
    ReductionOrder reduction_order() const;

    // Role instances: process p = cta · kV2ProcsPerCta + k, k 0 producer, 1 reducer, 2 + w consumer warp w
    // (tile w / 2, k-step parity w % 2), 2 + kV2Consumers the seam team (warps 2-11: the consumers and the
    // two spare warps, before in_proj; without the seam the spare warps, which pass the cluster barriers).
    int processes() const { return ctas() * kV2ProcsPerCta; }
    static int proc_cta(int p) { return p / kV2ProcsPerCta; }
    static V2Role proc_role(int p) {
        const int k = p % kV2ProcsPerCta;
        return k < 2 ? V2Role(k) : k < 2 + kV2Consumers ? V2Role::consumer : V2Role::seam;
    }
    static int proc_warp(int p) { return p % kV2ProcsPerCta - 2; }  // consumers: 0 .. kV2Consumers − 1
    MONOKDA_HD static int proc(int cta, V2Role r, int warp = 0) {  // the kernels' too
        return cta * kV2ProcsPerCta + (r == V2Role::consumer ? 2 + warp : r == V2Role::seam ? 2 + kV2Consumers : int(r));
    }
    std::string proc_name(int p) const;           // "CTA 9 (cluster 1 rank 1) consumer 3 (tile 1, odd)"
    std::string describe(const V2Instr& in) const;  // "TAKE(chunk 4: unit 1 k-steps 0..13, slot 1 round 1)"
    std::string bar_name(const V2BarRef& b) const;  // "recv[slot 2] of CTA 3"

    // The tables (public: a test plants a bad plan by editing one, and the checks name what is wrong).
    std::vector<V2Unit> units;            // a cluster's units consecutive, in the order it computes them
    std::vector<int32_t> cluster_first;   // [clusters + 1]: cluster c's units are cluster_first[c] ..
    std::vector<V2Ring> rings;            // [cta]
    std::vector<int32_t> run_offset;      // [cta + 1]: byte offset of each CTA's run in the packed weight
    std::vector<std::vector<V2Chunk>> chunks;  // [cta]: the CTA's stream, in order
    std::vector<V2Partial> partials;      // by unit, owner, sender
    std::vector<V2Recv> recvs;            // by unit, owner
    std::vector<V2Free> frees;            // by unit, owner
    std::vector<V2Barrier> barriers;      // [cluster][V2Point]
    // the seam (empty without it)
    std::vector<int32_t> seam_owner;      // [S]: the rank whose GATE takes row s's softmax (s mod ranks)
    // row s's place among its owner's rows (the index of its partials in the owner's part buffer):
    // the rows before it with the same owner, from seam_owner (so an edited owner table moves it)
    int seam_slot(int s) const {
        int k = 0;
        for (int r = 0; r < s; ++r) k += seam_owner[size_t(r)] == seam_owner[size_t(s)];
        return k;
    }
    std::vector<V2SeamCta> seam_ctas;     // [cta]
    std::vector<int32_t> seam_send_begin; // [cta + 1]: CTA k's sends are seam_sends[begin[k] .. begin[k + 1])
    std::vector<V2SeamSend> seam_sends;   // by sender, in program order: part, wgt, msq; each by receiver rank
    std::vector<std::vector<V2Instr>> programs;  // [process]
    // the tail (empty without it): by request, head, tile
    std::vector<V2Task> tasks;
    int tail_tiles() const { return cfg_.V / kV2TileRows; }  // tasks a (request, head)
    bool has_tail() const { return params_.tail != 0; }
    // the tasks of task i's pair (its request and head), in tile order
    std::vector<int> tail_pair(int i) const;
    // what a task's share send carries (its q, k and f_a rows, L tokens, bf16), and a Σō² send (L floats)
    int tail_share_bytes(const V2Task& t) const { return v2_share_bytes(t, cfg_.L); }
    int tail_onrm_bytes() const { return v2_onrm_bytes(cfg_.L); }
    int tail_decay_bytes(const V2Task& t) const { return v2_decay_bytes(t, cfg_.L); }
    // the proj rows a task reads as words: POLL's (its share of q, k and f_a, beta's row, its v rows),
    // NORM's (its g rows); and the receive entries whose PUBLISH stores them, in entry order
    std::vector<int> tail_rows(const V2Task& t, V2Op op) const;
    std::vector<int> tail_entries(const V2Task& t, V2Op op) const;

    // What step i of process p waits for, in order (derived from the tables each call, so an edited
    // table changes the waits as it would the kernel's).
    std::vector<V2Wait> waits(int p, int i) const;
    int barrier_index(int cluster, V2Point pt) const { return cluster * int(V2Point::count) + int(pt); }
    // The units a CTA's cluster computes, by index in the cluster (the receive slot of unit u is
    // (u − cluster_first) mod recv_slots).
    int unit_in_cluster(int unit) const { return unit - cluster_first[size_t(units[size_t(unit)].cluster)]; }

    // The plan's checks (plan_v2_checks.cpp): each problem names its check and what is wrong; empty: sound.
    struct Problem {
        std::string check, what;
    };
    std::vector<Problem> problems() const;
    static const std::vector<std::string>& check_names();  // every check, in the order problems() runs them

    // The flat table the device reads (plan_v2_flat.cpp, docs/plan.md): int32 words, read_v2_header
    // checks a buffer's header against its length.
    std::vector<int32_t> serialize() const;
    // The weight as the device streams it: each CTA's run (run_offset), its chunks in order, each
    // chunk [k-step][tile] of 512-byte tiles in A-fragment order (v2_fragment_element).
    std::vector<uint16_t> pack_weight(const std::vector<uint16_t>& in_proj_w) const;
    // The plan file (monokda plan --kernel v2; docs/plan.md "Kernel v2's plan file"): JSON, every table
    // and every process's program, each step with its description and waits. stamped: with
    // monokda_version and monokda_commit, as every file monokda writes (a plan's digest is of its text
    // without them). from_json(to_json()) is the plan again, table for table.
    std::string to_json(bool stamped = true) const;
    // A plan file read back (plan_v2_read.cpp): its config, parameters, tables and programs as the file
    // gives them; the waits stay derived. BadInput ("WHAT: PATH: problem") for a malformed file (a type,
    // a missing or unknown key, a count or an index out of range), before any table is used; a file
    // that is merely wrong reads, and problems() names what is wrong with it.
    static PlanV2 from_json(const std::string& text, const std::string& what = "plan v2 file");
    static PlanV2 read_json(const std::string& path);
    // The waits of step i of process p as the plan file spells them ("full[slot 0] of CTA 3 round 1").
    std::vector<std::string> wait_texts(int p, int i) const;
    // A plan read from a file: each description the file gives (a step's text and waits, a CTA's shared
    // memory, partial_bytes, reduction_order) that its tables do not, with its path; the check
    // file_descriptions names them. Empty for a built plan.
    std::vector<std::string> misdescribed;

private:
    friend class PlanV2FileReader;  // plan_v2_read.cpp: fills a plan from a file, part by part
    void deal_units();
    void lay_streams();
    void lay_buffers();
    void lay_seam();
    void lay_tail();
    void write_programs();
    Config cfg_;
    PlanV2Params params_;
};

// What row `row` of in_proj is for, in the order v2 deals its tiles: -1 f_a, beta or the pad; h, q,
// k or v of head h; H, g. The tiles' first rows in that order (f_a, beta, pad; q, k, v of head 0,
// then head 1, ...; g), each group in row order.
int v2_row_head(const Config& c, int row);
std::vector<int> v2_head_order_tiles(const Config& c);

// Element e (0..7) of lane `lane`'s m16n8k16 A fragment, as (row, column) of the 16 × 16 tile: lane
// 4g + c holds rows g and g + 8 of columns 2c, 2c + 1, 2c + 8 and 2c + 9 (the packed weight's order).
inline void v2_fragment_element(int lane, int e, int& row, int& col) {
    const int g = lane / 4, c = lane % 4;
    row = g + ((e >> 1) & 1) * 8;
    col = 2 * c + (e & 1) + ((e >> 2) & 1) * 8;
}

// The flat table's header (int32 words); layout in docs/plan.md.
struct PlanV2Header {
    int32_t magic, version;
    int32_t ranks, clusters, ctas, n_units, S, n_tiles, D, N;
    int32_t chunk_ksteps, ring_depth, in_flight, recv_slots, partial_bytes;
    int32_t n_chunks, n_partials, n_recvs, n_frees, n_barriers, n_instrs;
    int32_t seam, nb, seam_slice_cols, n_seam_sends;  // seam 0: its tables are empty (n_seam_owners 0, no CTA entries)
    int32_t n_tasks;                                  // the tail's (0: the plan ends at proj)
    int32_t pair_size;                                // tasks a pair (T = tail_tiles; 0 without the tail)
    int32_t total_words;
};
constexpr int32_t kPlanV2Magic = 0x32504b4d;  // "MKP2"
constexpr int32_t kPlanV2Version = 6;  // version 5 tables have no pair_tasks (a pair's tasks were taken to be consecutive)
// The plan file's format name and version (the file's own: version 3 files, written before the file
// was read back, name steps by their text alone; version 4 files have no DECAY step).
constexpr const char* kPlanV2Format = "monokda-plan-v2";
constexpr int32_t kPlanV2FileVersion = 5;
// The "format" a plan file names: kernel v1's "monokda-plan", kernel v2's kPlanV2Format ("" for none);
// BadInput where the text is not JSON (or past the plan file's bounds).
std::string plan_file_format(const std::string& text, const std::string& what);
PlanV2Header read_v2_header(const std::vector<int32_t>& words);  // BadInput on a malformed buffer

// A table's entries are its struct's words, in the flat table as in memory: the device reads an entry
// as the struct (PlanV2View), serialize() writes the structs as they are.
template <class T, int Words>
constexpr bool kV2FlatEntry = std::is_trivially_copyable<T>::value && std::is_standard_layout<T>::value && sizeof(T) == 4 * Words;
static_assert(kV2FlatEntry<V2Unit, 2 + kV2UnitTiles> && kV2FlatEntry<V2Chunk, 7> && kV2FlatEntry<V2Ring, 4> &&
                  kV2FlatEntry<V2Partial, 6> && kV2FlatEntry<V2Recv, 6> && kV2FlatEntry<V2Free, 4> &&
                  kV2FlatEntry<V2Barrier, 3> && kV2FlatEntry<V2Instr, 2> && kV2FlatEntry<V2Wait, 4> &&
                  kV2FlatEntry<V2SeamCta, 5> && kV2FlatEntry<V2SeamSend, 4> && kV2FlatEntry<V2Task, 10>,
              "a flat table entry is its struct's int32 words");

// Where each table starts in the flat table (words from its start), from the header's counts: the one
// definition of the layout, for serialize(), read_v2_header() and the device.
struct PlanV2Layout {
    int32_t cluster_first, units, run_offset, chunk_begin, chunks, rings, partials, recvs, frees, barriers, seam_owner,
        seam_ctas, seam_send_begin, seam_sends, tasks, pair_tasks, prog_begin, instrs, wait_begin, waits;
};
PlanV2Layout v2_layout(const PlanV2Header& h);  // BadInput where a table would start past 2^31 words

// The flat table as the device reads it (and a test, on the host): each entry as its struct.
struct PlanV2View {
    const int32_t* w;
    PlanV2Layout at;
    MONOKDA_HD int cluster_first(int cluster) const { return w[at.cluster_first + cluster]; }
    MONOKDA_HD const V2Unit& unit(int u) const { return reinterpret_cast<const V2Unit*>(w + at.units)[u]; }
    MONOKDA_HD int run_offset(int cta) const { return w[at.run_offset + cta]; }
    MONOKDA_HD int chunk_begin(int cta) const { return w[at.chunk_begin + cta]; }
    MONOKDA_HD const V2Chunk& chunk(int cta, int j) const {
        return reinterpret_cast<const V2Chunk*>(w + at.chunks)[chunk_begin(cta) + j];
    }
    MONOKDA_HD const V2Recv& recv(int e) const { return reinterpret_cast<const V2Recv*>(w + at.recvs)[e]; }
    MONOKDA_HD const V2Free& free_entry(int e) const { return reinterpret_cast<const V2Free*>(w + at.frees)[e]; }
    // the seam (header seam 1): row s's owner rank, CTA k's entry and its sends
    MONOKDA_HD int seam_owner(int s) const { return w[at.seam_owner + s]; }
    MONOKDA_HD const V2SeamCta& seam_cta(int cta) const { return reinterpret_cast<const V2SeamCta*>(w + at.seam_ctas)[cta]; }
    MONOKDA_HD int seam_send_begin(int cta) const { return w[at.seam_send_begin + cta]; }
    MONOKDA_HD const V2SeamSend& seam_send(int e) const { return reinterpret_cast<const V2SeamSend*>(w + at.seam_sends)[e]; }
    // the tail (header n_tasks > 0): task i
    MONOKDA_HD const V2Task& task(int i) const { return reinterpret_cast<const V2Task*>(w + at.tasks)[i]; }
    // the task of tile m of task i's pair (its request and head): what its sends go to and its barriers count
    MONOKDA_HD int pair_task(int i, int m) const { return w[at.pair_tasks + i * header().pair_size + m]; }
    MONOKDA_HD const PlanV2Header& header() const { return *reinterpret_cast<const PlanV2Header*>(w); }
    // process p's steps are instrs prog_begin(p) .. prog_begin(p + 1) − 1 (p = cta · kV2ProcsPerCta + role)
    MONOKDA_HD int prog_begin(int p) const { return w[at.prog_begin + p]; }
    MONOKDA_HD const V2Instr& instr(int i) const { return reinterpret_cast<const V2Instr*>(w + at.instrs)[i]; }
    // instruction i's waits are waits wait_begin(i) .. wait_begin(i + 1) − 1, in the order they are waited
    MONOKDA_HD int wait_begin(int i) const { return w[at.wait_begin + i]; }
    MONOKDA_HD const V2Wait& wait(int j) const { return reinterpret_cast<const V2Wait*>(w + at.waits)[j]; }
};

}  // namespace monokda
