// The CTA plan (core/plan.hpp, docs/plan.md): building the lists from the config and parameters,
// the names of opcodes, mailboxes and entries, the waits and products derived from each instruction,
// and the edits that fault injection and tests make.
#include "core/plan.hpp"

#include <algorithm>
#include <iterator>

#include "core/error.hpp"

namespace monokda {

void PlanParams::validate(const Config& cfg) const {
    auto need = [](bool ok, const std::string& msg) { if (!ok) bad_input("plan: " + msg); };
    auto s = [](long long v) { return std::to_string(v); };
    need(slice_width > 0 && slice_width <= cfg.D && cfg.D % slice_width == 0,
         "slice_width must divide D = " + s(cfg.D) + " (got " + s(slice_width) + ")");
    const int n_attn = cfg.D / slice_width;
    need(blocks > n_attn && blocks <= 65536,
         "blocks must exceed the attn CTAs (D / slice_width = " + s(n_attn) + ") and be at most 65536 (got " +
             s(blocks) + ")");
    need(attn_row_parts >= 1 && attn_row_parts <= cfg.S(),
         "attn_row_parts must be 1..S = " + s(cfg.S()) + " (got " + s(attn_row_parts) + ")");
    need(int64_t(n_attn) * attn_row_parts < blocks,
         "blocks must exceed the attn CTAs (D / slice_width × attn_row_parts = " + s(int64_t(n_attn) * attn_row_parts) +
             ", got " + s(blocks) + ")");
    need(gemv_group_rows > 0 && cfg.N % gemv_group_rows == 0,
         "gemv_group_rows must divide N = " + s(cfg.N) + " (got " + s(gemv_group_rows) + ")");
    need(kda_chunk_rows > 0 && cfg.V % kda_chunk_rows == 0,
         "kda_chunk_rows must divide V = " + s(cfg.V) + " (got " + s(kda_chunk_rows) + ")");
    need(interleave_width >= 1 && interleave_width <= blocks,
         "interleave_width must be 1..blocks (got " + s(interleave_width) + ")");
    const int n_chunks = cfg.V / kda_chunk_rows;
    need(cfg.K % n_chunks == 0, "kda_chunk_rows: the V / kda_chunk_rows = " + s(n_chunks) +
                                    " chunks of a head must split K = " + s(cfg.K) + " q/k channels evenly");
    // sibling chunks of one (request, head) wait for each other; they must not queue behind each other
    need(n_chunks <= blocks, "kda_chunk_rows: V / kda_chunk_rows = " + s(n_chunks) + " exceeds blocks = " + s(blocks));
}

const char* to_string(HandOff t) {
    switch (t) {
        case HandOff::x: return "x";
        case HandOff::proj: return "proj";
        case HandOff::qkv: return "qkv";
        case HandOff::g1: return "g1";
        case HandOff::count: break;
    }
    return "?";
}

const char* to_string(Role r) {
    switch (r) {
        case Role::attn: return "attn";
        case Role::gemv: return "gemv";
        case Role::kda: return "kda";
    }
    return "?";
}

const char* to_string(Op op) {
    switch (op) {
        case Op::ATTN_PART: return "ATTN_PART";
        case Op::ATTN_GATE: return "ATTN_GATE";
        case Op::ATTN_MIX: return "ATTN_MIX";
        case Op::ATTN_X: return "ATTN_X";
        case Op::GEMV_PREFETCH: return "GEMV_PREFETCH";
        case Op::GEMV_GROUP: return "GEMV_GROUP";
        case Op::KDA_LOAD: return "KDA_LOAD";
        case Op::KDA_CONV: return "KDA_CONV";
        case Op::KDA_REC: return "KDA_REC";
        case Op::KDA_NORM: return "KDA_NORM";
    }
    return "?";
}

Role role_of(Op op) {
    switch (op) {
        case Op::ATTN_PART: case Op::ATTN_GATE: case Op::ATTN_MIX: case Op::ATTN_X: return Role::attn;
        case Op::GEMV_PREFETCH: case Op::GEMV_GROUP: return Role::gemv;
        default: return Role::kda;
    }
}

const char* to_string(Mailbox m) {
    static const char* names[kMailboxCount] = {"PART", "WGT", "MSQ", "XRDY", "PROJ", "QK", "ONRM"};
    return int(m) >= 0 && int(m) < kMailboxCount ? names[int(m)] : "?";
}

bool is_tagged(Mailbox m) { return m == Mailbox::PART || m == Mailbox::WGT || m == Mailbox::MSQ || m == Mailbox::ONRM; }

int Plan::words_per_entry(Mailbox m) const {
    switch (m) {
        case Mailbox::PART: return 2;
        case Mailbox::WGT: return cfg_.nb + 2;
        default: return 1;
    }
}

std::string Plan::entry_name(const MailboxRef& e) const {
    auto s = [](int v) { return std::to_string(v); };
    const int i = e.entry, H = cfg_.H, nc = n_chunks_, ns = cfg_.nb + 1;
    switch (e.box) {
        case Mailbox::PART:
            return "PART[row " + s(i / n_attn_ / ns) + "][src " + s(i / n_attn_ % ns) + "][slice " + s(i % n_attn_) + "]";
        case Mailbox::WGT: return "WGT[row " + s(i) + "]";
        case Mailbox::MSQ: return "MSQ[row " + s(i / n_attn_) + "][slice " + s(i % n_attn_) + "]";
        case Mailbox::XRDY: {
            const int parts = attn_parts();
            if (parts == 1) return "XRDY[slice " + s(i) + "]";
            const int p = i % parts;
            return "XRDY[slice " + s(i / parts) + "][rows " + s(attn_row_begin(p)) + ".." + s(attn_row_begin(p + 1) - 1) + "]";
        }
        case Mailbox::PROJ: return "PROJ[group " + s(i) + "]";
        case Mailbox::QK: return "QK[r " + s(i / nc / H) + "][h " + s(i / nc % H) + "][chunk " + s(i % nc) + "]";
        case Mailbox::ONRM: return "ONRM[row " + s(i / nc / H) + "][h " + s(i / nc % H) + "][chunk " + s(i % nc) + "]";
        default: return "?";
    }
}

int Plan::handoff_cols(HandOff t) const {
    switch (t) {
        case HandOff::x: return cfg_.D;
        case HandOff::proj: return cfg_.N;
        case HandOff::qkv: return cfg_.C;
        case HandOff::g1: return cfg_.E();
        case HandOff::count: break;
    }
    return 0;
}

bool Plan::guard_of(HandOff t, int row, int col, MailboxRef& g) const {
    switch (t) {
        case HandOff::x: g = xrdy(col / params_.slice_width, attn_part_of_row(row)); return true;
        case HandOff::proj: g = proj(group_of_col(col)); return true;
        case HandOff::qkv:
        case HandOff::g1: {
            const int E = cfg_.E(), w = col % E;
            if (t == HandOff::qkv && col >= 2 * E) return false;  // v channels stay within their task
            if (t == HandOff::g1 && n_chunks_ == 1) return false;  // one task a head makes and reads its g1
            g = qk(row / cfg_.L, w / cfg_.K, (w % cfg_.K) / qk_share());  // the chunk whose q/k share it is
            return true;
        }
        case HandOff::count: break;
    }
    return false;
}

std::string Plan::describe(const Instr& in) const {
    auto s = [](int v) { return std::to_string(v); };
    std::string n = to_string(in.opcode());
    switch (in.opcode()) {
        case Op::ATTN_PART: case Op::ATTN_MIX: case Op::ATTN_X:
            if (attn_parts() == 1 || in.b < 0 || in.b >= attn_parts()) return n + "(slice " + s(in.a) + (in.b ? ", part " + s(in.b) : "") + ")";
            return n + "(slice " + s(in.a) + ", rows " + s(attn_row_begin(in.b)) + ".." + s(attn_row_begin(in.b + 1) - 1) + ")";
        case Op::ATTN_GATE: return n + "(row " + s(in.a) + ")";
        case Op::GEMV_PREFETCH: case Op::GEMV_GROUP: return n + "(group " + s(in.a) + ")";
        case Op::KDA_LOAD: case Op::KDA_CONV: case Op::KDA_REC: case Op::KDA_NORM:
            return n + "(r " + s(in.a) + ", h " + s(in.b) + ", chunk " + s(in.c) + ")";
    }
    return "OP" + s(in.op) + "(" + s(in.a) + ", " + s(in.b) + ", " + s(in.c) + ")";
}

void Plan::init_layout() {
    const Config& cfg = cfg_;
    n_attn_ = cfg.D / params_.slice_width;
    n_groups_ = cfg.N / params_.gemv_group_rows;
    n_chunks_ = cfg.V / params_.kda_chunk_rows;
    for (int m = 0; m < kMailboxCount; ++m) {
        int64_t n = 1;
        for (const Dim& d : entry_dims(Mailbox(m))) n *= d.size;
        entries_[m] = int(n);
    }
}

std::vector<Plan::Dim> Plan::entry_dims(Mailbox m) const {
    const int S = cfg_.S();
    switch (m) {
        case Mailbox::PART: return {{"row", S}, {"src", cfg_.nb + 1}, {"slice", n_attn_}};
        case Mailbox::WGT: return {{"row", S}};
        case Mailbox::MSQ: return {{"row", S}, {"slice", n_attn_}};
        case Mailbox::XRDY: return {{"slice", n_attn_}, {"part", params_.attn_row_parts}};
        case Mailbox::PROJ: return {{"group", n_groups_}};
        case Mailbox::QK: return {{"r", cfg_.R}, {"h", cfg_.H}, {"chunk", n_chunks_}};
        case Mailbox::ONRM: return {{"row", S}, {"h", cfg_.H}, {"chunk", n_chunks_}};
        case Mailbox::count: break;
    }
    return {};
}

Plan Plan::build(const Config& cfg, const PlanParams& params) {
    cfg.validate();
    params.validate(cfg);
    Plan p;
    p.cfg_ = cfg;
    p.params_ = params;
    p.init_layout();
    p.order_ = p.decomposition_order();
    const int S = cfg.S();

    p.instrs_.assign(size_t(params.blocks), {});
    for (int part = 0; part < params.attn_row_parts; ++part)  // attn CTAs: slice and rows, the gates of rows ≡ cta, mix, x
        for (int j = 0; j < p.n_attn_; ++j) {
            const int cta = p.attn_cta(j, part);
            auto& l = p.instrs_[size_t(cta)];
            l.push_back({int32_t(Op::ATTN_PART), j, part, 0});
            for (int row = cta; row < S; row += p.n_attn_ctas()) l.push_back({int32_t(Op::ATTN_GATE), row, 0, 0});
            l.push_back({int32_t(Op::ATTN_MIX), j, part, 0});
            l.push_back({int32_t(Op::ATTN_X), j, part, 0});
        }
    p.deal_gemv_bands();
    for (const Band& b : p.bands_) {  // gemv groups in contiguous bands, a CTA's bands in order
        auto& l = p.instrs_[size_t(b.cta)];
        for (int g = b.first; g < b.first + b.count; ++g) {
            l.push_back({int32_t(Op::GEMV_PREFETCH), g, 0, 0});
            l.push_back({int32_t(Op::GEMV_GROUP), g, 0, 0});
        }
    }
    // kda tasks round-robin over all CTAs after their first role; a task's chunks are consecutive,
    // so siblings never queue behind each other (n_chunks <= blocks)
    for (int r = 0; r < cfg.R; ++r)
        for (int h = 0; h < cfg.H; ++h)
            for (int c = 0; c < p.n_chunks_; ++c) {
                auto& l = p.instrs_[size_t(p.kda_task_index(r, h, c) % params.blocks)];
                for (Op op : {Op::KDA_LOAD, Op::KDA_CONV, Op::KDA_REC, Op::KDA_NORM})
                    l.push_back({int32_t(op), r, h, c});
            }
    const int B = params.blocks, A = p.n_attn_ctas(), P = p.n_paired();
    p.list_at_.resize(size_t(B));
    p.launch_cta_.resize(size_t(B));
    const int w = params.interleave_width, Pw = P - P % w;  // pairs in whole runs of w
    auto paired_at = [&](int c, bool band) {  // launch CTA of attn list c or of list A + c, c < P
        return c < Pw ? 2 * w * (c / w) + (band ? w : 0) + c % w : 2 * c + (band ? 1 : 0);
    };
    for (int list = 0; list < B; ++list) {
        // the pairs (attn list c, list A + c) first, then the unpaired attn lists P..A-1, then lists A + P..
        const int b = list < P ? paired_at(list, false) : list < A ? P + list : list < A + P ? paired_at(list - A, true) : list;
        p.list_at_[size_t(b)] = list;
        p.launch_cta_[size_t(list)] = b;
    }
    p.derive();
    return p;
}

// Contiguous runs of `count` groups from `first` split over `ctas` CTAs, as evenly as whole groups
// allow (the longer bands first).
void Plan::deal_gemv_bands() {
    bands_.clear();
    gemv_cta_.assign(size_t(n_groups_), -1);
    const int A = n_attn_ctas(), B = launch_blocks();
    // one band a CTA: groups_per_gemv_cta() each, from the first CTA past the attn CTAs
    const int per = groups_per_gemv_cta();
    for (int g0 = 0, b = 0; g0 < n_groups_; g0 += per, ++b)
        bands_.push_back({(A + b) % B, g0, std::min(per, n_groups_ - g0)});
    std::vector<char> used(size_t(B), 0);
    for (const Band& b : bands_) {
        for (int g = b.first; g < b.first + b.count; ++g) gemv_cta_[size_t(g)] = b.cta;
        used[size_t(b.cta)] = 1;
    }
    n_gemv_ = int(std::count(used.begin(), used.end(), 1));
    // a CTA's bands in list order: stable by CTA keeps the first pass before the second
    std::stable_sort(bands_.begin(), bands_.end(), [](const Band& x, const Band& y) { return x.cta < y.cta; });
}

Plan Plan::with_kda_teams(int teams) const {
    if (teams < 1 || teams > 8) throw BadInput("plan: kda teams must be 1..8, not " + std::to_string(teams));
    Plan q = *this;
    // a file's waits and products move with their instructions (a built plan derives them again)
    auto deal = [&](auto& lists, int cta, int f) {
        auto& l = lists[size_t(cta)];
        std::vector<std::decay_t<decltype(l)>> team(static_cast<size_t>(teams));
        for (int i = f; i < int(l.size()); ++i) team[size_t((i - f) / 4 % teams)].push_back(l[size_t(i)]);
        l.resize(size_t(f));
        l.insert(l.end(), team[0].begin(), team[0].end());
        for (int t = 1; t < teams; ++t)
            if (!team[size_t(t)].empty()) lists.push_back(team[size_t(t)]);
    };
    for (int cta = 0; cta < launch_blocks() && teams > 1; ++cta) {
        const std::vector<Instr>& l = q.instrs_[size_t(cta)];
        const int f = kda_team_tasks_begin(l.data(), int(l.size()));
        if (f < 0) continue;
        const size_t before = q.instrs_.size();
        deal(q.instrs_, cta, f);
        if (explicit_waits_) {
            deal(q.waits_, cta, f);
            deal(q.produces_, cta, f);
        }
        q.team_parent_.insert(q.team_parent_.end(), q.instrs_.size() - before, cta);
    }
    q.derive();
    return q;
}

static void add_groups(std::vector<Plan::Wait>& w, int32_t group, const Plan& p, int col0, int ncols,
                       std::vector<int>& seen) {
    for (int col = col0; col < col0 + ncols; ++col) {
        int g = p.group_of_col(col);
        if (std::find(seen.begin(), seen.end(), g) != seen.end()) continue;
        seen.push_back(g);
        w.push_back({p.proj(g), group});
    }
}

bool Plan::derive_one(const Instr& in, std::vector<Wait>& w, std::vector<MailboxRef>& pr) const {
    const Config& c = cfg_;
    const int S = c.S(), E = c.E(), rows = params_.kda_chunk_rows, qs = qk_share();
    // a slice instruction's operands, and its rows
    auto slice_ok = [&]() { return in.a >= 0 && in.a < n_attn_ && in.b >= 0 && in.b < attn_parts() && in.c == 0; };
    const int r0 = slice_ok() ? attn_row_begin(in.b) : 0, r1 = slice_ok() ? attn_row_begin(in.b + 1) : 0;
    auto task_ok = [&]() { return in.a >= 0 && in.a < c.R && in.b >= 0 && in.b < c.H && in.c >= 0 && in.c < n_chunks_; };
    std::vector<int> seen;
    switch (in.opcode()) {
        case Op::ATTN_PART:
            for (int row = r0; row < r1; ++row)
                for (int src = 0; src <= c.nb; ++src) pr.push_back(part(row, src, in.a));
            return slice_ok();
        case Op::ATTN_GATE:
            if (in.a < 0 || in.a >= S) return false;
            for (int src = 0; src <= c.nb; ++src)
                for (int j = 0; j < n_attn_; ++j) w.push_back({part(in.a, src, j), 0});
            pr.push_back(wgt(in.a));
            return true;
        case Op::ATTN_MIX:
            for (int row = r0; row < r1; ++row) w.push_back({wgt(row), row});
            for (int row = r0; row < r1; ++row) pr.push_back(msq(row, in.a));
            return slice_ok();
        case Op::ATTN_X:
            for (int row = r0; row < r1; ++row)
                for (int j = 0; j < n_attn_; ++j) w.push_back({msq(row, j), row});
            if (r1 > r0) pr.push_back(xrdy(in.a, in.b));
            return slice_ok();
        case Op::GEMV_PREFETCH: return in.a >= 0 && in.a < n_groups_;  // waits for nothing, produces nothing
        case Op::GEMV_GROUP:
            if (in.a < 0 || in.a >= n_groups_) return false;
            for (int j = 0; j < n_attn_; ++j)
                for (int part = 0; part < attn_parts(); ++part) w.push_back({xrdy(j, part), j});
            pr.push_back(proj(in.a));
            return true;
        case Op::KDA_LOAD: return task_ok();  // waits for nothing, produces nothing
        case Op::KDA_CONV:
            if (!task_ok()) return false;
            add_groups(w, 0, *this, in.b * c.K + in.c * qs, qs, seen);              // q share
            add_groups(w, 0, *this, E + in.b * c.K + in.c * qs, qs, seen);          // k share
            add_groups(w, 0, *this, 2 * E + in.b * c.V + in.c * rows, rows, seen);  // v rows
            if (n_chunks_ > 1) add_groups(w, 0, *this, c.col_fa(), c.F, seen);      // f_a: the g1 share
            pr.push_back(qk(in.a, in.b, in.c));
            return true;
        case Op::KDA_REC:
            if (!task_ok()) return false;
            for (int cc = 0; cc < n_chunks_; ++cc)
                if (cc != in.c) w.push_back({qk(in.a, in.b, cc), 0});
            if (n_chunks_ == 1) add_groups(w, 0, *this, c.col_fa(), c.F, seen);  // f_a (with chunks: KDA_CONV's, g1 through QK)
            add_groups(w, 0, *this, c.col_beta() + in.b, 1, seen);
            for (int t = 0; t < c.L; ++t) pr.push_back(onrm(in.a * c.L + t, in.b, in.c));
            return true;
        case Op::KDA_NORM:
            if (!task_ok()) return false;
            for (int t = 0; t < c.L; ++t)
                for (int cc = 0; cc < n_chunks_; ++cc)
                    if (cc != in.c) w.push_back({onrm(in.a * c.L + t, in.b, cc), 0});
            add_groups(w, 0, *this, c.col_g2() + in.b * c.V + in.c * rows, rows, seen);
            return true;
    }
    return false;  // an unknown opcode (reported on its own)
}

void Plan::derive() {
    derive_problems_.clear();
    product_problems_.clear();
    products_match_ = true;
    // what every instruction needs and stores: a built plan's waits and products; a file's are
    // its own (waits_, produces_), checked against these
    std::vector<std::vector<std::vector<Wait>>> need(instrs_.size());
    std::vector<std::vector<std::vector<MailboxRef>>> store(instrs_.size());
    for (size_t cta = 0; cta < instrs_.size(); ++cta) {
        const auto& l = instrs_[cta];
        need[cta].resize(l.size());
        store[cta].resize(l.size());
        for (size_t i = 0; i < l.size(); ++i) {
            const int op = l[i].op;
            if (op < int(Op::ATTN_PART) || op > int(Op::KDA_NORM))
                derive_problems_.push_back("CTA " + std::to_string(cta) + " instruction " + std::to_string(i) +
                                           ": unknown opcode " + std::to_string(op));
            if (!derive_one(l[i], need[cta][i], store[cta][i]) && op >= int(Op::ATTN_PART) &&
                op <= int(Op::KDA_NORM))
                derive_problems_.push_back("CTA " + std::to_string(cta) + " " + describe(l[i]) +
                                           ": operands out of range");
        }
    }
    if (explicit_waits_) {
        needs_ = std::move(need);
        for (size_t cta = 0; cta < instrs_.size(); ++cta)
            for (size_t i = 0; i < instrs_[cta].size(); ++i) {
                auto listed = produces_[cta][i], stored = store[cta][i];
                auto less = [](const MailboxRef& a, const MailboxRef& b) {
                    return a.box != b.box ? a.box < b.box : a.entry < b.entry;
                };
                std::sort(listed.begin(), listed.end(), less);
                std::sort(stored.begin(), stored.end(), less);
                if (listed == stored) continue;
                products_match_ = false;
                std::vector<MailboxRef> extra, missing;
                std::set_difference(listed.begin(), listed.end(), stored.begin(), stored.end(), std::back_inserter(extra), less);
                std::set_difference(stored.begin(), stored.end(), listed.begin(), listed.end(), std::back_inserter(missing), less);
                const std::string at = "CTA " + std::to_string(cta) + " instruction " + std::to_string(i) + " " +
                                       describe(instrs_[cta][i]) + ": ";
                if (!extra.empty()) product_problems_.push_back(at + "lists as its product " + entry_list(extra) + ", which it does not store");
                if (!missing.empty()) product_problems_.push_back(at + "stores " + entry_list(missing) + ", which it does not list as its product");
                if (extra.empty() && missing.empty()) product_problems_.push_back(at + "lists a product twice");
            }
    } else {
        waits_ = std::move(need);
        produces_ = std::move(store);
    }
    producer_.assign(size_t(kMailboxCount), {});
    for (int m = 0; m < kMailboxCount; ++m) producer_[size_t(m)].assign(size_t(entries_[m]), Producer{-1, -1});
    for (size_t cta = 0; cta < instrs_.size(); ++cta) {
        const auto& l = instrs_[cta];
        for (size_t i = 0; i < l.size(); ++i) {
            for (const MailboxRef& e : produces_[cta][i]) {
                Producer& p = producer_[size_t(e.box)][size_t(e.entry)];
                if (p.cta == -1) p = Producer{int32_t(cta), int32_t(i)};
                else {
                    derive_problems_.push_back(entry_name(e) + " has two producers: CTA " + std::to_string(p.cta) +
                                               " and CTA " + std::to_string(cta) + " " + describe(l[i]));
                    p.cta = -2;
                }
            }
        }
    }
    index_lists();
}

void Plan::index_lists() {
    kda_cta_.assign(size_t(n_kda_tasks()), -1);
    if (explicit_waits_) {
        gemv_cta_.assign(size_t(n_groups_), -1);
        bands_.clear();
        first_role_.assign(instrs_.size(), int32_t(Role::kda));
    }
    std::vector<char> gemv(instrs_.size(), 0);
    for (size_t cta = 0; cta < instrs_.size(); ++cta) {
        const auto& l = instrs_[cta];
        for (size_t i = 0; i < l.size(); ++i) {
            const Instr& in = l[i];
            if (in.opcode() == Op::KDA_LOAD && in.a >= 0 && in.a < cfg_.R && in.b >= 0 && in.b < cfg_.H && in.c >= 0 &&
                in.c < n_chunks_)
                kda_cta_[size_t(kda_task_index(in.a, in.b, in.c))] = team_parent(int(cta));
            if (!explicit_waits_ || in.opcode() != Op::GEMV_GROUP || in.a < 0 || in.a >= n_groups_) continue;
            if (gemv_cta_[size_t(in.a)] < 0) gemv_cta_[size_t(in.a)] = int32_t(cta);
            gemv[cta] = 1;
            if (!bands_.empty() && bands_.back().cta == int32_t(cta) && bands_.back().first + bands_.back().count == in.a)
                ++bands_.back().count;
            else
                bands_.push_back({int32_t(cta), in.a, 1});
        }
        if (explicit_waits_ && !l.empty()) first_role_[cta] = int32_t(role_of(l[0].opcode()));
    }
    if (explicit_waits_) n_gemv_ = int(std::count(gemv.begin(), gemv.end(), 1));
}

std::string Plan::entry_list(const std::vector<MailboxRef>& es, size_t most) const {
    std::string s;
    for (size_t k = 0; k < es.size() && k < most; ++k) s += (k ? ", " : "") + entry_name(es[k]);
    if (es.size() > most) s += " and " + std::to_string(es.size() - most) + " more";
    return s;
}

void Plan::set_instr(int cta, int i, const Instr& in) {
    if (cta < 0 || cta >= blocks() || i < 0 || i >= int(instrs_[size_t(cta)].size()))
        bad_input("plan: no instruction " + std::to_string(i) + " on CTA " + std::to_string(cta));
    instrs_[size_t(cta)][size_t(i)] = in;
    if (explicit_waits_) {  // the changed instruction waits for and stores what its semantics say
        waits_[size_t(cta)][size_t(i)].clear();
        produces_[size_t(cta)][size_t(i)].clear();
        derive_one(in, waits_[size_t(cta)][size_t(i)], produces_[size_t(cta)][size_t(i)]);
    }
    derive();
}

void Plan::erase_instr(int cta, int i) {
    if (cta < 0 || cta >= blocks() || i < 0 || i >= int(instrs_[size_t(cta)].size()))
        bad_input("plan: no instruction " + std::to_string(i) + " on CTA " + std::to_string(cta));
    instrs_[size_t(cta)].erase(instrs_[size_t(cta)].begin() + i);
    if (explicit_waits_) {
        waits_[size_t(cta)].erase(waits_[size_t(cta)].begin() + i);
        produces_[size_t(cta)].erase(produces_[size_t(cta)].begin() + i);
    }
    derive();
}

void Plan::insert_instr(int cta, int i, const Instr& in) {
    if (cta < 0 || cta >= blocks() || i < 0 || i > int(instrs_[size_t(cta)].size()))
        bad_input("plan: cannot insert at " + std::to_string(i) + " on CTA " + std::to_string(cta));
    instrs_[size_t(cta)].insert(instrs_[size_t(cta)].begin() + i, in);
    if (explicit_waits_) {
        std::vector<Wait> w;
        std::vector<MailboxRef> p;
        derive_one(in, w, p);
        waits_[size_t(cta)].insert(waits_[size_t(cta)].begin() + i, std::move(w));
        produces_[size_t(cta)].insert(produces_[size_t(cta)].begin() + i, std::move(p));
    }
    derive();
}

}  // namespace monokda
