// The mono kernel's work plan (SPEC §4) as data: which CTA runs which instruction, which mailbox
// entry each hand-off uses, who produces and who waits for it, and how every reduction is split.
// Built once from (Config, PlanParams); the GPU launcher uploads serialize() as is, the emulator
// executes the same lists, and reduction_order() tells the reference what the decomposition computes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/bf16.hpp"  // MONOKDA_HD
#include "core/config.hpp"
#include "core/reduction_order.hpp"

namespace monokda {

struct PlanParams {
    int blocks = 132;           // CTAs in the launch (132: one per H200 SM; 256: an MI355X-class part)
    int slice_width = 128;      // columns of D per attn CTA; D / slice_width attn CTAs
    int gemv_group_rows = 16;   // in_proj rows (proj columns) per gemv group
    int kda_chunk_rows = 16;    // state rows (v) per kda task; V / kda_chunk_rows tasks per (request, head)
    // in_proj bands dealt over every CTA, the attn CTAs taking theirs after ATTN_X, instead of only
    // over SPEC §4's CTAs past the attn slices (Plan::gemv_cta)
    bool gemv_every_cta = false;
    // CTAs an attn slice's rows are split over (part p: attn_rows_begin(S, parts, p) ..): each runs
    // the slice's ATTN_PART, ATTN_MIX and ATTN_X on its rows only. Every sum is still within one
    // slice and one row, so the results do not change; the latency-bound attn loops get more SMs.
    int attn_row_parts = 1;
    // Where the lists go in the launch. With P = min(attn CTAs A, blocks − A) pairs and w =
    // interleave_width, runs of w attn lists and w lists past the attn CTAs alternate: attn list c on
    // launch CTA 2w·⌊c/w⌋ + c mod w and list A + c on the CTA w after it (c < P; a last run shorter
    // than w alternates CTA by CTA), the rest in list order after them, instead of list b on launch
    // CTA b (Plan::list_at; the lists do not change). The H200 runs launch CTAs 2k and 2k + 1 on the
    // two SMs of one TPC and fills a GPC (16 SMs) with consecutive launch CTAs before the next
    // (bench/probes/gpc_probe.cu): w = 1 puts each of the P first bands on a TPC with an attn CTA; w = 2
    // gives attn CTAs and bands TPCs of their own and 8 of each to every GPC, where index order
    // packs the 66 bands of a step up to 15 rows into 3 GPCs and half of 2 more.
    bool interleave_ctas = false;
    int interleave_width = 1;

    // BadInput naming the field ("plan: blocks ...") when the plan cannot be built for cfg.
    void validate(const Config& cfg) const;
};

// Rows of attn part p when S rows are split over `parts` CTAs a slice: [begin(p), begin(p + 1)),
// balanced (the plan, the emulator and the kernel all split with this).
MONOKDA_HD int attn_rows_begin(int S, int parts, int p) { return p * S / parts; }

enum class Role : int32_t { attn = 0, gemv = 1, kda = 2 };
const char* to_string(Role r);

// The intermediate tensors one role hands another through memory (the kernel's hand-off buffers),
// each guarded by a flagged mailbox (Plan::guard_of).
enum class HandOff : int { x, proj, qkv, g1, count };
const char* to_string(HandOff t);  // "x", "proj", "qkv", "g1"

// Instruction opcodes. Operands a, b, c; unused ones are 0.
enum class Op : int32_t {
    // the three slice instructions: a = slice, b = part (its rows: attn_rows_begin)
    ATTN_PART = 1,      // prefix_out (+ bank row nb) of the slice, the part's rows; Σv², Σv·wq partials → PART
    ATTN_GATE = 2,      // a = row: combine PART[row][*][*] in slice order → softmax weights → WGT[row]
    ATTN_MIX = 3,       // mixed columns of the slice, the part's rows (waits WGT); partial Σmixed² → MSQ
    ATTN_X = 4,         // combine MSQ[row][*] → x columns of the slice, the part's rows → XRDY[slice][part]
    GEMV_PREFETCH = 5,  // a = group: issue the group's in_proj weight loads (waits for nothing)
    GEMV_GROUP = 6,     // a = group: proj columns of the group, all rows; x slices accumulated in slice order → PROJ
    KDA_LOAD = 7,       // a = r, b = h, c = chunk: state rows, f_b rows, conv window (no hand-off needed)
    KDA_CONV = 8,       // (r, h, chunk): conv of the owned q/k share and v rows, with chunks the g1 share (waits PROJ) → QK[r][h][chunk]
    KDA_REC = 9,        // (r, h, chunk): f_b + gate, l2norm, recurrence on the chunk's rows (waits QK, PROJ) → ONRM
    KDA_NORM = 10,      // (r, h, chunk): gated RMSNorm of the chunk's rows (waits ONRM, PROJ) → core_out
};
const char* to_string(Op op);
Role role_of(Op op);

// Mailboxes. Tagged ones hold value+epoch in one word per value (the consumer polls the data);
// flagged ones hold one epoch word that guards data in an intermediate tensor (release/acquire).
enum class Mailbox : int32_t { PART = 0, WGT, MSQ, XRDY, PROJ, QK, ONRM, count };
constexpr int kMailboxCount = int(Mailbox::count);
const char* to_string(Mailbox m);
bool is_tagged(Mailbox m);  // PART, WGT, MSQ, ONRM

// The epoch tag of the launch a CTA belongs to, from the arrivals counter it read as it entered
// (every CTA of every launch adds one; a launcher's grid is always `blocks` CTAs, so launch k's CTAs
// read k·blocks .. k·blocks + blocks − 1): 1, 2, …, 2³² − 1, 1, … Never 0, the tag of mailbox memory
// never written, and never the previous launch's, across the wrap too.
MONOKDA_HD uint32_t launch_tag(uint64_t arrival, uint32_t blocks) {
    return uint32_t((arrival / blocks) % 0xffffffffull) + 1u;
}

struct MailboxRef {
    Mailbox box;
    int32_t entry;
    bool operator==(const MailboxRef& o) const { return box == o.box && entry == o.entry; }
};

// One instruction word, as uploaded: four int32.
struct Instr {
    int32_t op, a, b, c;
    Op opcode() const { return Op(op); }
};
static_assert(sizeof(Instr) == 16, "Instr is four int32 words");

// kda teams (the NVIDIA kernel runs a CTA's kda tasks two at a time, kernels/kda_pre.cu run_kda):
// where instructions first..end-1 of a list, at least kKdaTeamMinInstrs of them, are kda tasks,
// each LOAD, CONV, REC, NORM of one (r, h, chunk) (kda_tasks_well_formed), task k of them runs on
// team k % teams. One definition for the kernel and the emulator (Plan::with_kda_teams).
constexpr int kKdaTeamMinInstrs = 8;  // two tasks: one task runs faster on the whole CTA
MONOKDA_HD bool kda_tasks_well_formed(const Instr* ins, int first, int end) {
    if ((end - first) % 4 != 0) return false;
    for (int i = first; i < end; i += 4)
        for (int k = 0; k < 4; ++k)
            if (ins[i + k].op != int32_t(Op::KDA_LOAD) + k || ins[i + k].a != ins[i].a || ins[i + k].b != ins[i].b ||
                ins[i + k].c != ins[i].c)
                return false;
    return true;
}
// Where a list of n instructions ends in such tasks, the index they start at; otherwise -1. (The
// kernel asks at the first kda instruction of a run, which for such a tail is this index.)
MONOKDA_HD int kda_team_tasks_begin(const Instr* list, int n) {
    int f = n;
    while (f > 0 && list[f - 1].op >= int32_t(Op::KDA_LOAD) && list[f - 1].op <= int32_t(Op::KDA_NORM)) --f;
    return n - f >= kKdaTeamMinInstrs && kda_tasks_well_formed(list, f, n) ? f : -1;
}

// The flat serialisation's header (all int32). Layout of serialize():
//   PlanHeader | entries[kMailboxCount] | words_per_entry[kMailboxCount] | cta_begin[blocks + 1] |
//   Instr[total_instrs] (four words each: op, a, b, c)
// CTA n runs instructions cta_begin[n] .. cta_begin[n+1]-1 in order.
struct PlanHeader {
    int32_t magic;       // kPlanMagic
    int32_t version;     // kPlanVersion
    int32_t blocks, n_attn, attn_row_parts, slice_width, n_gemv, gemv_group_rows, n_groups, kda_chunk_rows, n_chunks;
    int32_t D, N, H, K, V, F, R, L, S, nb;
    int32_t total_instrs;
    int32_t total_words;  // length of the whole serialisation in int32 words
};
// the word where cta_begin starts (after the header and the two mailbox tables)
constexpr int kPlanCtaBeginWord = int(sizeof(PlanHeader) / 4) + 2 * kMailboxCount;
constexpr int32_t kPlanMagic = 0x4c504b4d;  // "MKPL"
constexpr int32_t kPlanVersion = 3;  // 2: attn_row_parts, the slice instructions' part operand; 3: lists in launch order

// What a launch of the plan assumes of the device: the plan file's "target" and "launch" sections
// (docs/plan-file.md). A built plan is one CTA a multiprocessor, every CTA co-resident.
struct PlanTarget {
    std::string name = "H200";     // the part the layout is for (reports name it)
    bool in_order_loads = false;   // AMD: a poll's load retires behind every earlier load of its CTA
    int co_resident = 0;           // CTAs the device holds at once; 0: the launch's CTAs (one a SM/CU)
    bool cooperative = true;       // every CTA co-resident, or the launch is refused (SPEC §4.1)
};

class Plan {
public:
    // Validates cfg and params (BadInput naming the field).
    static Plan build(const Config& cfg, const PlanParams& params);

    const Config& config() const { return cfg_; }
    // Built: the knobs it was built from. Read from a file: blocks and the layout's granularity
    // (slice_width, attn_row_parts, gemv_group_rows, kda_chunk_rows); the rest as defaulted.
    const PlanParams& params() const { return params_; }
    const PlanTarget& target() const { return target_; }
    void set_target(const PlanTarget& t) { target_ = t; }
    int co_resident() const { return target_.co_resident > 0 ? target_.co_resident : launch_blocks(); }
    // The file it was read from ("" for a built plan), and the file's name for the plan.
    const std::string& source() const { return source_; }
    const std::string& name() const { return name_; }
    void set_name(const std::string& n) { name_ = n; }
    int blocks() const { return params_.blocks + int(team_parent_.size()); }  // lists (with_kda_teams: more than the launch's)
    int launch_blocks() const { return params_.blocks; }
    // The list launch CTA b runs (PlanParams::interleave_ctas; else b), and the launch CTA of a list;
    // n_paired() lists past the attn CTAs each share a TPC with an attn CTA (0 in index order).
    // Everything else in the plan, the emulator included, names a list as "CTA n"; the device's
    // lists are in launch order (serialize()), and CTAs start in launch order (min_residency).
    int list_at(int launch_cta) const { return list_at_[size_t(launch_cta)]; }
    int launch_cta_of(int list) const { return launch_cta_[size_t(list)]; }
    int n_paired() const {
        return params_.interleave_ctas ? std::min(n_attn_ctas(), launch_blocks() - n_attn_ctas()) : 0;
    }
    int n_attn() const { return n_attn_; }      // attn slices (D / slice_width): the reductions' split
    int attn_parts() const { return params_.attn_row_parts; }
    int n_attn_ctas() const { return n_attn_ * attn_parts(); }  // attn CTAs 0..n_attn_ctas-1
    int attn_cta(int slice, int part) const { return part * n_attn_ + slice; }
    int attn_row_begin(int part) const { return attn_rows_begin(cfg_.S(), attn_parts(), part); }
    int attn_part_of_row(int row) const { return ((row + 1) * attn_parts() - 1) / cfg_.S(); }  // inverse of the above
    // CTAs owning in_proj groups (gemv_cta), attn CTAs included with gemv_every_cta
    int n_gemv() const { return n_gemv_; }
    // CTAs the bands are dealt over: from the first CTA past the attn CTAs on, wrapping onto them
    // with gemv_every_cta
    int gemv_span() const { return params_.gemv_every_cta ? launch_blocks() : launch_blocks() - n_attn_ctas(); }
    int n_groups() const { return n_groups_; }  // N / gemv_group_rows
    int n_chunks() const { return n_chunks_; }  // V / kda_chunk_rows
    int qk_share() const { return cfg_.K / n_chunks_; }  // q (and k) channels a kda task convolves
    int n_kda_tasks() const { return cfg_.R * cfg_.H * n_chunks_; }
    // a with_kda_teams list past the launch's CTAs holds kda tasks only
    // (read from a file: the role of the list's first instruction)
    Role first_role(int cta) const {
        if (!first_role_.empty()) return Role(first_role_[size_t(cta)]);
        return cta < n_attn_ctas() ? Role::attn : cta < launch_blocks() ? Role::gemv : Role::kda;
    }

    // Who owns what.
    // in_proj groups in contiguous bands of groups_per_gemv_cta() over gemv_span() CTAs, band b on
    // CTA (n_attn_ctas + b) mod blocks: the CTAs past the attn CTAs first (their first weights go out at
    // kernel start), then, with gemv_every_cta, the attn CTAs after their ATTN_X (the last band may
    // be shorter and the last CTAs may get none). A CTA's rows are one block of the weight, which
    // the copy engine fetches in a few tall boxes (kernels/kda_gemv_batch.hpp).
    int groups_per_gemv_cta() const { return (n_groups_ + gemv_span() - 1) / gemv_span(); }
    int gemv_cta(int group) const { return gemv_cta_[size_t(group)]; }
    // The bands in the order the CTAs run them: {cta, first group, groups}; a CTA's bands in its list order.
    struct Band { int32_t cta, first, count; };
    const std::vector<Band>& gemv_bands() const { return bands_; }
    int kda_task_index(int r, int h, int chunk) const { return (r * cfg_.H + h) * n_chunks_ + chunk; }
    // the CTA (place) whose list holds the task; -1: none
    int kda_cta(int r, int h, int chunk) const { return kda_cta_[size_t(kda_task_index(r, h, chunk))]; }
    int group_of_col(int proj_col) const { return proj_col / params_.gemv_group_rows; }

    // Mailbox entry indices (row-major over the listed dims) and sizes.
    MailboxRef part(int row, int src, int slice) const { return {Mailbox::PART, (row * (cfg_.nb + 1) + src) * n_attn_ + slice}; }
    MailboxRef wgt(int row) const { return {Mailbox::WGT, row}; }
    MailboxRef msq(int row, int slice) const { return {Mailbox::MSQ, row * n_attn_ + slice}; }
    // a slice's parts are consecutive entries: a prefix of the entries is a prefix of the slices
    MailboxRef xrdy(int slice, int part) const { return {Mailbox::XRDY, slice * attn_parts() + part}; }
    MailboxRef proj(int group) const { return {Mailbox::PROJ, group}; }
    MailboxRef qk(int r, int h, int chunk) const { return {Mailbox::QK, (r * cfg_.H + h) * n_chunks_ + chunk}; }
    MailboxRef onrm(int row, int h, int chunk) const { return {Mailbox::ONRM, (row * cfg_.H + h) * n_chunks_ + chunk}; }
    int entries(Mailbox m) const { return entries_[size_t(m)]; }
    // Words of one entry: PART 2 (Σv², Σv·wq), WGT nb+2 (e_0..e_nb, Σe), MSQ/ONRM 1, flags 1.
    int words_per_entry(Mailbox m) const;
    std::string entry_name(const MailboxRef& e) const;  // e.g. "PART[row 3][src 4][slice 17]"
    // An entry's index is row-major over its mailbox's dims: PART [row][src][slice], WGT [row],
    // MSQ [row][slice], XRDY [slice][part], PROJ [group], QK [r][h][chunk], ONRM [row][h][chunk].
    struct Dim { const char* name; int size; };
    std::vector<Dim> entry_dims(Mailbox m) const;
    int handoff_cols(HandOff t) const;  // a row's elements: D, N, C or E
    // The mailbox entry whose flag guards element (row, col) of a hand-off for the CTAs that read it;
    // false where the element stays within its kda task (qkv's v rows, g1 of one task a head).
    bool guard_of(HandOff t, int row, int col, MailboxRef& g) const;

    // Instructions.
    const std::vector<Instr>& instrs(int cta) const { return instrs_[size_t(cta)]; }
    std::string describe(const Instr& in) const;  // e.g. "KDA_CONV(r 0, h 3, chunk 1)"
    // The entries an instruction waits for, in poll order; consecutive entries with the same
    // wait_group are polled together (one sweep), groups in order.
    struct Wait { MailboxRef entry; int32_t group; };
    // A built plan's waits are what each instruction needs (derived from its opcode and operands); a
    // plan read from a file carries its own, which the emulator runs as they are, and needs() is what
    // the instruction's semantics need (group numbers: the row or slice whose work they guard).
    const std::vector<Wait>& waits(int cta, int i) const { return waits_[size_t(cta)][size_t(i)]; }
    const std::vector<Wait>& needs(int cta, int i) const {
        return needs_.empty() ? waits(cta, i) : needs_[size_t(cta)][size_t(i)];
    }
    const std::vector<MailboxRef>& produces(int cta, int i) const { return produces_[size_t(cta)][size_t(i)]; }
    // The unique producer of an entry (CTA, instruction index).
    struct Producer { int32_t cta, instr; };
    Producer producer(const MailboxRef& e) const { return producer_[size_t(e.box)][size_t(e.entry)]; }

    // Every reduction as the decomposition evaluates it: attn_sumsq, attn_dot, x_sumsq and in_proj
    // split into n_attn slices (partials combined in slice order), onorm_sumsq into n_chunks parts;
    // the kda task's 128-term sums (f_b, l2_q, l2_k, rec_kS, rec_oq) pairwise, as 16 lanes of a
    // wave reduce them (8 terms a lane, then a butterfly: exactly pair_sum); softmax_den and mix
    // sequential within one CTA. (Inline: core does not link the reference library.)
    // (read from a file: the file's; split sites it gives otherwise are structural problems)
    const ReductionOrder& reduction_order() const { return order_; }
    ReductionOrder decomposition_order() const {
        ReductionOrder o;  // sequential everywhere by default
        OrderSpec slices{OrderSpec::split, n_attn_, 0}, chunks{OrderSpec::split, n_chunks_, 0};
        OrderSpec tree{OrderSpec::pairwise, 1, 0};
        o.set(Site::attn_sumsq, slices).set(Site::attn_dot, slices).set(Site::x_sumsq, slices);
        o.set(Site::in_proj, slices).set(Site::onorm_sumsq, chunks);
        o.set(Site::f_b, tree).set(Site::l2_q, tree).set(Site::l2_k, tree).set(Site::rec_kS, tree).set(Site::rec_oq, tree);
        return o;
    }

    // Structural checks, each problem a line (empty: sound): every entry has exactly one producer,
    // every waited entry has one, no CTA waits for an entry it produces itself, and with every CTA
    // resident the lists run to completion (no circular wait). A plan read from a file also: its
    // waits and products against what each instruction needs and stores, its split sums' order
    // against the instructions' decomposition, and its lists against the target's residency.
    std::vector<std::string> structural_problems() const;
    // False where a file's products differ from what its instructions store (structural_problems
    // names them): the file misdescribes its own instructions, and the emulator refuses to run it.
    bool products_match() const { return products_match_; }

    // The plan file (docs/plan-file.md, docs/plan-file.schema.json): JSON, the lists, waits and
    // products, mailboxes, launch order, residency and reduction order. to_json/from_json are
    // inverse (from_json(to_json(p)) runs as p does); from_json refuses a malformed file (BadInput
    // naming the place) and reads a merely wrong one, whose problems structural_problems names.
    static constexpr int kFileVersion = 1;
    // (stamped: with monokda_version and monokda_commit, as every file monokda writes; a plan's
    // digest is of its text without them)
    std::string to_json(bool stamped = true) const;
    static Plan from_json(const std::string& text, const std::string& what);
    static Plan read_json(const std::string& path);
    // The file's spelling of an entry: every dim named, "PART[row 3][src 4][slice 17]"
    std::string entry_spec(const MailboxRef& e) const;
    // The fewest co-resident CTAs with which the lists complete when CTAs start in launch order and
    // a CTA's place frees only when it finishes (as a launch shares the GPU); launch_blocks+1 if
    // none. A with_kda_teams list runs in its CTA's place (lists_of), as a team does.
    int min_residency() const;
    // Runs the lists under that residency model; returns the number of lists that finish (all:
    // blocks()).
    int finishing_ctas(int resident) const;

    // Flat POD serialisation (see PlanHeader) and its inverse (BadInput on a malformed buffer).
    std::vector<int32_t> serialize() const;
    static PlanHeader read_header(const std::vector<int32_t>& words);

    // The schedules the kernel's kda teams allow, for the emulator: on every CTA whose list ends in
    // two or more kda tasks (kda_team_tasks_begin), the tasks of teams 1..teams-1 move to lists of
    // their own, appended after the launch's CTAs, so each team has its own stores, clock and polls as
    // on the device. Such a list may start at once, where the kernel's team starts after the CTA's
    // first role: the emulator explores more orders than the kernel has, never fewer. team_parent:
    // the CTA (its list, below launch_blocks) a list belongs to. Not for the launcher (serialize() refuses it).
    Plan with_kda_teams(int teams) const;
    int team_parent(int cta) const { return cta < launch_blocks() ? cta : team_parent_[size_t(cta - launch_blocks())]; }
    // "CTA 8", or for a team list "CTA 8 team 1"
    std::string cta_name(int list) const;
    // The lists that share CTA p's place (p: a list below launch_blocks): p itself, then its team lists in team order.
    std::vector<int> lists_of(int p) const;

    // For fault injection and tests: replace an instruction's operands or drop one, then rebuild
    // the derived tables (waits, produces, producers). Index errors are BadInput.
    void set_instr(int cta, int i, const Instr& in);
    void erase_instr(int cta, int i);
    void insert_instr(int cta, int i, const Instr& in);

private:
    friend class PlanFileReader;  // plan_file_read.cpp: fills a plan from a file, part by part
    void init_layout();  // n_attn_, n_groups_, n_chunks_, entries_ from cfg_ and params_
    void derive();  // waits_ (a file's: needs_), produces_ (a file's: checked), producer_ from instrs_
    void index_lists();  // gemv_cta_, bands_, n_gemv_, kda_cta_ (and first_role_) from the lists
    void file_problems(std::vector<std::string>& out) const;  // plan_file_read.cpp
    std::string entry_list(const std::vector<MailboxRef>& es, size_t most = 6) const;  // "A, B and 3 more"
    void deal_gemv_bands();  // bands_, gemv_cta_, n_gemv_
    bool derive_one(const Instr& in, std::vector<Wait>& w, std::vector<MailboxRef>& p) const;  // false: operands out of range

    Config cfg_;
    PlanParams params_;
    int n_attn_ = 0, n_groups_ = 0, n_chunks_ = 0;
    int entries_[kMailboxCount] = {};
    std::vector<std::vector<Instr>> instrs_;
    std::vector<std::vector<std::vector<Wait>>> waits_;
    std::vector<std::vector<std::vector<MailboxRef>>> produces_;
    std::vector<std::vector<Producer>> producer_;  // per mailbox, per entry; {-1,-1}: none; {-2,..}: several
    std::vector<std::string> derive_problems_;
    bool explicit_waits_ = false;  // read from a file: waits_ and produces_ are the file's
    std::vector<std::vector<std::vector<Wait>>> needs_;  // explicit_waits_: what each instruction needs
    std::vector<std::string> product_problems_;  // explicit_waits_: products that differ from the instructions'
    bool products_match_ = true;
    ReductionOrder order_;
    PlanTarget target_;
    std::string source_, name_;
    std::vector<int32_t> kda_cta_, first_role_;  // per kda task; per list (read from a file only)
    std::vector<int32_t> team_parent_;  // with_kda_teams: the CTA (list below launch_blocks) of each appended list
    std::vector<int32_t> list_at_, launch_cta_;  // launch CTA -> list and back (launch_blocks entries)
    std::vector<int32_t> gemv_cta_;  // per group
    std::vector<Band> bands_;
    int n_gemv_ = 0;
};

}  // namespace monokda
