#include "emulator/machine.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <queue>
#include <sstream>

#include "core/error.hpp"

namespace monokda::emu {

const char* to_string(Verdict v) {
    switch (v) {
        case Verdict::PASS: return "PASS";
        case Verdict::DEADLOCK: return "DEADLOCK";
        case Verdict::LIVELOCK: return "LIVELOCK";
        case Verdict::STALE_READ: return "STALE_READ";
        case Verdict::VISIBILITY_FAULT: return "VISIBILITY_FAULT";
        case Verdict::WRITE_CONFLICT: return "WRITE_CONFLICT";
        case Verdict::WRONG_SPLIT: return "WRONG_SPLIT";
        case Verdict::POLL_BEHIND_LOADS: return "POLL_BEHIND_LOADS";
        case Verdict::WRONG_RESULT: return "WRONG_RESULT";
        case Verdict::OUT_OF_ENVELOPE: return "OUT_OF_ENVELOPE";
    }
    return "?";
}

uint32_t next_epoch(uint32_t e) { return e == 0xffffffffu ? 1u : e + 1; }
uint32_t prev_epoch(uint32_t e) { return e <= 1 ? 0xffffffffu : e - 1; }

int output_index(const std::string& name) {
    for (int i = 0; i < 10; ++i)
        if (name == kOutputNames[i]) return i;
    return -1;
}

namespace {

// Memory spaces: the seven mailboxes (Mailbox numbering), then the hand-off tensors (HandOff order).
enum Space : int { SP_X = kMailboxCount, SP_PROJ, SP_QKV, SP_G1, SP_COUNT };
static_assert(SP_COUNT - SP_X == int(HandOff::count) && SP_G1 - SP_X == int(HandOff::g1), "a space a hand-off");
HandOff handoff(int sp) { return HandOff(sp - SP_X); }

enum How : uint8_t { PLAIN = 0, RELEASE = 1, TAGGED = 2 };

struct Version {
    uint32_t bits = 0, tag = 0;
    int32_t step = -1, writer = -1, instr = -1;  // step -1: never stored (zeroed memory)
    uint32_t clock = 0;                          // the writer's own vector-clock component at the store
    uint8_t how = PLAIN;
};
struct Word {
    Version cur, prev;                // prev is what other CTAs see until cur becomes visible
    int64_t visible_at = INT64_MIN;   // when cur becomes visible to other CTAs
};

// A weight load: in flight until retire_at (timing), outstanding until its task has used it (the
// POLL_BEHIND_LOADS rule, which must not depend on how fast memory happened to be).
struct Load {
    int64_t unit, retire_at;
    int32_t instr;
};

using f8 = float __attribute__((vector_size(32)));  // eight independent row sums (lanes never mix)
using f4 = float __attribute__((vector_size(16)));  // half of one, as the gemv computes it

struct Cta {
    enum State { pending, resident, finished } state = pending;
    size_t pc = 0;
    enum Phase { BEGIN, WAIT, FINISH } phase = BEGIN;
    size_t wpos = 0;          // first wait of the current group
    bool early = false;       // x_before_flag: this group's work ran before its poll
    bool spinning = false;
    int64_t blocked_at = 0, spin_since = 0;
    int64_t stall_until = INT64_MIN;
    int64_t t_begin = 0;
    std::vector<uint32_t> vc;
    int64_t max_vis = INT64_MIN;
    std::vector<Load> loads;
    std::vector<std::vector<char>> acquired;  // per mailbox, per entry, this step
    // role scratch
    std::vector<float> pslice, mixed;  // attn: own P' and mixed columns of the slice, [S][w]
    std::vector<f8> acc;               // gemv: [group rows][row blocks of 8]
    std::vector<char> x_checked;       // gemv: x slices whose reads passed the checks in this step
    int a_eff = 1;                     // kda: num_accepted the task uses
    std::vector<float> obar;           // kda: o of the task's rows as bf16 values, [L][rows]
};

struct Stop {};

class Machine {
public:
    Machine(const Plan& p, const MachineOptions& o, MachineResult& r)
        : plan_(p), cfg_(p.config()), opt_(o), res_(r), B_(p.blocks()) {
        int64_t est = 0;
        for (int c = 0; c < B_; ++c) est += 3 * int64_t(plan_.instrs(c).size());
        sched_ = make_scheduler(opt_.schedule, B_, est);
        ctas_.resize(size_t(B_));
        for (auto& c : ctas_) c.vc.assign(size_t(B_), 0);
        for (int m = 0; m < kMailboxCount; ++m)
            mem_[m].assign(size_t(plan_.entries(Mailbox(m))) * size_t(plan_.words_per_entry(Mailbox(m))), Word{});
        const size_t S = size_t(cfg_.S());
        for (int sp = SP_X; sp < SP_COUNT; ++sp) mem_[sp].assign(S * size_t(width(sp)), Word{});
        for (int m : {int(Mailbox::XRDY), int(Mailbox::PROJ), int(Mailbox::QK)})
            flag_vc_[m].assign(size_t(plan_.entries(Mailbox(m))), {});
        // places are the launch's CTAs; a with_kda_teams list runs in its CTA's place
        P_ = plan_.launch_blocks();
        resident_ = opt_.resident > 0 ? std::min(opt_.resident, P_) : P_;
        open_.assign(size_t(P_), 0);
        // split sums are decomposed through the mailboxes below; every other sum runs inside one CTA
        // in the plan's order (ord_.reduce), so a change of the plan's order reaches the bodies
        auto need_split = [&](Site site, int parts) {
            const OrderSpec& o = ord_.at(site);
            if (o.kind != OrderSpec::split || o.parts != parts)
                throw std::logic_error(std::string("emulator: the plan splits ") + to_string(site) + " as " + o.str() +
                                       ", but the emulator's bodies decompose it as split:" + std::to_string(parts));
        };
        for (Site site : {Site::attn_sumsq, Site::attn_dot, Site::x_sumsq, Site::in_proj}) need_split(site, plan_.n_attn());
        need_split(Site::onorm_sumsq, plan_.n_chunks());
    }

    void run_step(const StepInputs& in, const StepRows& rows, int k, uint32_t launcher_epoch, uint32_t first_epoch) {
        in_ = &in;
        prefix_ = rows.prefix.empty() ? &in.prefix : &rows.prefix;
        delta_ = rows.delta.empty() ? &in.delta : &rows.delta;
        blocks_ = rows.blocks.empty() ? &in.blocks : &rows.blocks;
        step_ = k;
        kernel_epoch_ = opt_.fault == Fault::epoch_by_value ? first_epoch : launcher_epoch;
        res_.epochs.push_back(launcher_epoch);
        // kernel boundary: everything of the previous launch happens before this one
        std::vector<uint32_t> join(size_t(B_), 0);
        for (auto& c : ctas_)
            for (int i = 0; i < B_; ++i) join[size_t(i)] = std::max(join[size_t(i)], c.vc[size_t(i)]);
        for (auto& c : ctas_) {
            c.vc = join;
            c.state = Cta::pending;
            c.pc = 0;
            c.phase = Cta::BEGIN;
            c.spinning = false;
            c.stall_until = INT64_MIN;
            c.max_vis = INT64_MIN;
            c.loads.clear();
            c.acquired.assign(size_t(kMailboxCount), {});
            c.x_checked.assign(size_t(plan_.n_attn()), 0);
            for (int m = 0; m < kMailboxCount; ++m) c.acquired[size_t(m)].assign(size_t(plan_.entries(Mailbox(m))), 0);
        }
        init_outputs();
        wq_.resize(size_t(cfg_.D));
        for (int d = 0; d < cfg_.D; ++d)
            wq_[size_t(d)] = in.res_norm_w[size_t(d)].to_float() * in.res_proj_w[size_t(d)].to_float();

        next_admit_ = 0;
        finished_ = 0;
        places_done_ = 0;
        while (next_admit_ < P_ && next_admit_ - places_done_ < resident_) admit();
        last_progress_ = res_.sched_steps;
        std::vector<int> run;
        std::vector<Role> roles;
        while (finished_ < B_) {
            while (!events_.empty() && events_.top() <= now_) {
                last_event_ = std::max(last_event_, events_.top());
                events_.pop();
            }
            run.clear();
            roles.clear();
            for (int c = 0; c < B_; ++c) {
                Cta& x = ctas_[size_t(c)];
                if (x.state != Cta::resident) continue;
                if (x.spinning && x.blocked_at >= last_event_) continue;  // nothing it could see has changed
                if (x.stall_until > now_) continue;
                run.push_back(c);
                roles.push_back(role_of(plan_.instrs(c)[x.pc].opcode()));
            }
            if (run.empty()) {
                if (!events_.empty()) {  // everyone waits for a store or a load in flight: skip to it
                    now_ = std::max(now_, events_.top());
                    continue;
                }
                hang();
            }
            int c = sched_->pick(run, roles, res_.sched_steps);
            step(c);
            ++now_;
            ++res_.sched_steps;
            if (res_.sched_steps - last_progress_ > opt_.watchdog_steps) {
                fail(Verdict::LIVELOCK, "no CTA completed a wait or an instruction in " +
                                            std::to_string(opt_.watchdog_steps) + " scheduler steps", {});
            }
        }
        // the launch ends when every store has landed
        for (int m = 0; m < SP_COUNT; ++m)
            for (Word& w : mem_[m]) now_ = std::max(now_, w.visible_at + 1);
        while (!events_.empty()) events_.pop();
        last_event_ = now_;
        collect_outputs();
        res_.ticks = now_;
        res_.steps_done = k + 1;
    }

private:
    // ---------------------------------------------------------------- bookkeeping
    // (named by reference: a by-value argument of a throwing [[noreturn]] call was freed twice by GCC 12 at -O3)
    [[noreturn]] void fail(Verdict v, const std::string& detail, const std::vector<int>& named,
                           MailboxRef entry = {Mailbox::count, 0}) {
        res_.verdict = v;
        res_.entry = entry;
        res_.detail = detail;
        res_.named = named;
        Event e{now_, cur_cta_, -1, EventKind::violation, 0, int16_t(step_), {Mailbox::count, 0}, 0, 0};
        res_.history.push_back(e);
        res_.ticks = now_;
        throw Stop{};
    }
    void log(EventKind k, int cta, int instr, MailboxRef e = {Mailbox::count, 0}, uint32_t tag = 0, int64_t aux = 0,
             uint8_t how = 0) {
        res_.history.push_back(Event{now_, cta, instr, k, how, int16_t(step_), e, tag, aux});
    }
    void span(int cta, int instr, int64_t t0, int64_t t1, Span::Kind k) {
        if (opt_.record_spans) res_.spans.push_back(Span{cta, instr, t0, std::max(t1, t0 + 1), k, int16_t(step_)});
    }
    std::string who(int cta, int instr) const {
        const Instr& in = plan_.instrs(cta)[size_t(instr)];
        return plan_.cta_name(cta) + " (" + to_string(role_of(in.opcode())) + ") " + plan_.describe(in);
    }
    std::string who_now(int cta) const { return who(cta, int(ctas_[size_t(cta)].pc)); }
    std::string step_name(int32_t s) const {
        return s < 0 ? "of zeroed memory (never stored)" : "stored in step " + std::to_string(s);
    }
    // The stage within an instruction: which row or slice its current wait group is for.
    static std::string group_label(const Instr& in, int32_t grp) {
        switch (in.opcode()) {
            case Op::ATTN_MIX: case Op::ATTN_X: return " at row " + std::to_string(grp);
            case Op::GEMV_GROUP: return " at slice " + std::to_string(grp);
            default: return "";
        }
    }
    MailboxRef entry_of(int sp, size_t i) const {
        if (sp < kMailboxCount) return {Mailbox(sp), int32_t(i / size_t(plan_.words_per_entry(Mailbox(sp))))};
        MailboxRef g{Mailbox::count, 0};
        guard(sp, int(i / size_t(width(sp))), int(i % size_t(width(sp))), g);
        return g;
    }

    // Gives the next CTA in launch order (Plan::list_at) a place, with its team lists; lists with
    // nothing to do finish at once, and a place whose lists all did passes on.
    void admit() {
        while (next_admit_ < P_) {
            const int p = plan_.list_at(next_admit_++);
            const std::vector<int> lists = plan_.lists_of(p);
            open_[size_t(p)] = int(lists.size());
            for (int id : lists) {
                ctas_[size_t(id)].state = Cta::resident;
                log(EventKind::admit, id, -1);
            }
            for (int id : lists)
                if (plan_.instrs(id).empty()) finish_list(id, false);
            if (open_[size_t(p)] > 0) return;
        }
    }
    // List `id` is done; its place frees when every list in it is (admit: whether to fill it).
    void finish_list(int id, bool refill) {
        ctas_[size_t(id)].state = Cta::finished;
        ++finished_;
        log(EventKind::done, id, -1);
        if (--open_[size_t(plan_.team_parent(id))] == 0) {
            ++places_done_;
            if (refill && next_admit_ < P_) admit();
        }
    }

    Word& word(int sp, size_t i) { return mem_[sp][i]; }
    const Version& seen(int cta, const Word& w) const {
        return (w.cur.writer == cta || w.visible_at <= now_) ? w.cur : w.prev;
    }

    void store(int cta, int sp, size_t i, uint32_t bits, uint32_t tag, How how) {
        Word& w = word(sp, i);
        Cta& c = ctas_[size_t(cta)];
        if (w.cur.step == step_ && w.cur.writer >= 0 && w.cur.writer != cta) {
            std::string what = sp < kMailboxCount
                                   ? plan_.entry_name({Mailbox(sp), int32_t(i / size_t(plan_.words_per_entry(Mailbox(sp))))})
                                   : data_elem(sp, i);
            fail(Verdict::WRITE_CONFLICT, what + " is stored twice in step " + std::to_string(step_) + ": by " +
                                              who(w.cur.writer, w.cur.instr) + " and by " + who_now(cta) +
                                              " (the plan's producer: " + producer_name(sp, i) + ")",
                 {w.cur.writer, cta}, entry_of(sp, i));
        }
        if (w.visible_at <= now_) w.prev = w.cur;  // the old value had landed; it is what others see meanwhile
        ++c.vc[size_t(cta)];
        int64_t vis = now_ + sched_->store_delay(cta, role_of(plan_.instrs(cta)[c.pc].opcode()));
        if (how == RELEASE) vis = std::max(vis, c.max_vis);  // after every earlier store of the CTA
        c.max_vis = std::max(c.max_vis, vis);
        w.cur = Version{bits, tag, step_, cta, int32_t(c.pc), c.vc[size_t(cta)], uint8_t(how)};
        w.visible_at = vis;
        if (vis > now_) events_.push(vis);
        else events_.push(now_);
    }

    void store_entry(int cta, MailboxRef e, const float* vals, uint32_t tag) {
        const int wpe = plan_.words_per_entry(e.box);
        int64_t vis = 0;
        for (int k = 0; k < wpe; ++k) {
            uint32_t b;
            std::memcpy(&b, &vals[k], 4);
            store(cta, int(e.box), size_t(e.entry) * size_t(wpe) + size_t(k), b, tag, TAGGED);
            vis = std::max(vis, word(int(e.box), size_t(e.entry) * size_t(wpe) + size_t(k)).visible_at);
        }
        log(EventKind::store, cta, int(ctas_[size_t(cta)].pc), e, tag, vis, TAGGED);
    }

    void store_flag(int cta, MailboxRef e, bool release) {
        store(cta, int(e.box), size_t(e.entry), kernel_epoch_, kernel_epoch_, release ? RELEASE : PLAIN);
        if (release) flag_vc_[int(e.box)][size_t(e.entry)] = ctas_[size_t(cta)].vc;
        log(EventKind::store, cta, int(ctas_[size_t(cta)].pc), e, kernel_epoch_, word(int(e.box), size_t(e.entry)).visible_at,
            release ? RELEASE : PLAIN);
    }

    int width(int sp) const { return plan_.handoff_cols(handoff(sp)); }
    std::string data_elem(int sp, size_t i) const {
        const int w = width(sp);
        return std::string(to_string(handoff(sp))) + "[row " + std::to_string(i / size_t(w)) + "][col " + std::to_string(i % size_t(w)) + "]";
    }
    // The mailbox entry that guards a hand-off element (false: private to its task, no guard).
    bool guard(int sp, int row, int col, MailboxRef& g) const { return plan_.guard_of(handoff(sp), row, col, g); }
    std::string producer_name(int sp, size_t i) const {
        MailboxRef g{Mailbox::count, 0};
        if (sp < kMailboxCount) g = {Mailbox(sp), int32_t(i / size_t(plan_.words_per_entry(Mailbox(sp))))};
        else if (!guard(sp, int(i / size_t(width(sp))), int(i % size_t(width(sp))), g)) return "its own kda task";
        Plan::Producer p = plan_.producer(g);
        if (p.cta == -2) return "ambiguous: the plan gives " + plan_.entry_name(g) + " several producers";
        if (p.cta < 0) return "none";
        return who(p.cta, p.instr) + " via " + plan_.entry_name(g);
    }

    // A checked read of a hand-off element: it must follow this step's store of it through a
    // release/acquire chain (else VISIBILITY_FAULT), and a guard that was acquired must have
    // delivered this step's value (else STALE_READ).
    bf16 read_data(int cta, int sp, int row, int col) {
        const size_t i = size_t(row) * size_t(width(sp)) + size_t(col);
        const Word& w = word(sp, i);
        const Version& v = seen(cta, w);
        if (w.cur.step == step_ && (w.cur.writer == cta || ctas_[size_t(cta)].vc[size_t(w.cur.writer)] >= w.cur.clock)) {
            if (&v != &w.cur) throw std::logic_error("emulator: an ordered read did not see its store");
            return bf16::from_bits(uint16_t(v.bits));
        }
        MailboxRef g{Mailbox::count, 0};
        const bool guarded = guard(sp, row, col, g);
        const bool acq = guarded && ctas_[size_t(cta)].acquired[size_t(g.box)][size_t(g.entry)];
        const std::string elem = data_elem(sp, i), reader = who_now(cta);
        const std::string gname = guarded ? plan_.entry_name(g) : "no mailbox (private to its task)";
        if (w.cur.step == step_) {
            std::string why = acq ? "it acquired " + gname + ", but that flag was not stored with release, so the " +
                                        "data stores before it are not ordered before it"
                                  : "it has not acquired " + gname;
            fail(Verdict::VISIBILITY_FAULT,
                 reader + " read " + elem + ", stored in this step by " + who(w.cur.writer, w.cur.instr) +
                     ", without a release/acquire chain from that store: " + why + "; it saw " +
                     (&v == &w.cur ? "the new value (by chance)" : "the old value (" + step_name(v.step) + ")"),
                 {cta, w.cur.writer}, g);
        }
        std::vector<int> named{cta};
        if (guarded && plan_.producer(g).cta >= 0) named.push_back(plan_.producer(g).cta);
        if (acq)
            fail(Verdict::STALE_READ, reader + " read " + elem + " after acquiring " + gname +
                                          ", but nothing stored it in this step: it holds the value " + step_name(v.step) +
                                          "; the plan's producer is " + producer_name(sp, i),
                 named, g);
        fail(Verdict::VISIBILITY_FAULT, reader + " read " + elem + " before acquiring " + gname +
                                            " (not yet stored in this step; it holds the value " + step_name(v.step) +
                                            "); the plan's producer is " + producer_name(sp, i),
             named, g);
    }
    void store_data(int cta, int sp, int row, int col, bf16 v) {
        store(cta, sp, size_t(row) * size_t(width(sp)) + size_t(col), v.bits, 0, PLAIN);
    }
    void log_data(int cta, int sp, int col0, int ncols) {
        log(EventKind::data, cta, int(ctas_[size_t(cta)].pc), {Mailbox::count, sp - SP_X}, uint32_t(col0), ncols);
    }

    bool entry_ready(int cta, MailboxRef e) const {
        const int wpe = plan_.words_per_entry(e.box);
        for (int k = 0; k < wpe; ++k)
            if (seen(cta, mem_[int(e.box)][size_t(e.entry) * size_t(wpe) + size_t(k)]).tag != kernel_epoch_) return false;
        return true;
    }
    void acquire(int cta, MailboxRef e) {
        const int wpe = plan_.words_per_entry(e.box);
        Cta& c = ctas_[size_t(cta)];
        for (int k = 0; k < wpe; ++k) {
            const Word& w = mem_[int(e.box)][size_t(e.entry) * size_t(wpe) + size_t(k)];
            const Version& v = seen(cta, w);
            if (v.step != step_) {
                Plan::Producer p = plan_.producer(e);
                std::string now_state = w.cur.step == step_ ? "has stored it, not yet visible" : "has not stored it yet";
                fail(Verdict::STALE_READ,
                     who_now(cta) + " accepted " + plan_.entry_name(e) + " (tag " + std::to_string(v.tag) +
                         " = the epoch it expects), but the value was " + step_name(v.step) +
                         (v.writer >= 0 ? " by CTA " + std::to_string(v.writer) : "") + "; this step's producer " +
                         (p.cta >= 0 ? who(p.cta, p.instr) : std::string("(none)")) + " " + now_state,
                     {cta, p.cta}, e);
            }
            if (v.how == RELEASE) {
                const auto& fv = flag_vc_[int(e.box)][size_t(e.entry)];
                for (int i = 0; i < B_; ++i) c.vc[size_t(i)] = std::max(c.vc[size_t(i)], fv[size_t(i)]);
            }
        }
        c.acquired[size_t(e.box)][size_t(e.entry)] = 1;
        log(EventKind::acquire, cta, int(c.pc), e, kernel_epoch_);
    }
    float read_tagged(int cta, MailboxRef e, int k) {
        const Word& w = mem_[int(e.box)][size_t(e.entry) * size_t(plan_.words_per_entry(e.box)) + size_t(k)];
        const Version& v = seen(cta, w);
        if (v.step != step_ || v.tag != kernel_epoch_)
            fail(Verdict::STALE_READ, who_now(cta) + " used " + plan_.entry_name(e) + " word " + std::to_string(k) +
                                          " holding tag " + std::to_string(v.tag) + ", " + step_name(v.step) +
                                          " (expected this step's, tag " + std::to_string(kernel_epoch_) + ")",
                 {cta}, e);
        float f;
        std::memcpy(&f, &v.bits, 4);
        return f;
    }

    // A split reduction's partials, combined as the plan says: exactly these entries, each once, in
    // order (partial 0, then + partial 1, ...). The body passes what it actually combines.
    float combine(int cta, const std::string& what, const std::vector<MailboxRef>& used,
                  const std::vector<MailboxRef>& plan_split, int word_k) {
        if (used.size() != plan_split.size() || !std::equal(used.begin(), used.end(), plan_split.begin())) {
            std::string u, missing;
            for (size_t i = 0; i < used.size(); ++i) {
                int n = int(std::count(used.begin(), used.end(), used[i]));
                if (n > 1 && std::find(used.begin(), used.begin() + long(i), used[i]) == used.begin() + long(i))
                    u += (u.empty() ? "" : ", ") + plan_.entry_name(used[i]) + " counted " + std::to_string(n) + " times";
            }
            for (const MailboxRef& e : plan_split)
                if (std::find(used.begin(), used.end(), e) == used.end())
                    missing += (missing.empty() ? "" : ", ") + plan_.entry_name(e);
            fail(Verdict::WRONG_SPLIT, who_now(cta) + " combined " + what + " from other partials than the plan's split (" +
                                           std::to_string(plan_split.size()) + " partials, each once, in order)" +
                                           (u.empty() ? "" : ": " + u) + (missing.empty() ? "" : "; missing " + missing) +
                                           (u.empty() && missing.empty() ? ": order differs" : ""),
                 {cta}, plan_split[0]);
        }
        float total = read_tagged(cta, used[0], word_k);
        for (size_t i = 1; i < used.size(); ++i) total = total + read_tagged(cta, used[i], word_k);
        return total;
    }

    // ---------------------------------------------------------------- loads (weights)
    int64_t unit_of(const Instr& in) const {
        switch (role_of(in.opcode())) {
            case Role::attn: return -1;
            case Role::gemv: return in.a;
            case Role::kda: return (int64_t(1) << 32) + plan_.kda_task_index(in.a, in.b, in.c);
        }
        return -1;
    }
    std::string unit_name(int cta, const Load& l) const { return plan_.describe(plan_.instrs(cta)[size_t(l.instr)]); }
    void issue_loads(int cta) {
        Cta& c = ctas_[size_t(cta)];
        const Instr& in = plan_.instrs(cta)[c.pc];
        int64_t t = now_ + sched_->load_latency(cta, role_of(in.opcode()));
        c.loads.push_back(Load{unit_of(in), t, int32_t(c.pc)});
        events_.push(t);
        log(EventKind::loads, cta, int(c.pc), {Mailbox::count, 0}, 0, t);
    }
    // Latest retire time of in-flight loads (of one unit, or all with unit = INT64_MIN).
    int64_t loads_until(const Cta& c, int64_t unit) const {
        int64_t t = INT64_MIN;
        for (const Load& l : c.loads)
            if (l.retire_at > now_ && (unit == INT64_MIN || l.unit == unit)) t = std::max(t, l.retire_at);
        return t;
    }

    // ---------------------------------------------------------------- the step of one CTA
    void step(int cta) {
        cur_cta_ = cta;
        Cta& c = ctas_[size_t(cta)];
        const auto& list = plan_.instrs(cta);
        const Instr& in = list[c.pc];
        const auto& waits = plan_.waits(cta, int(c.pc));
        if (c.phase == Cta::BEGIN) {
            c.t_begin = now_;
            log(EventKind::begin, cta, int(c.pc));
            if (in.opcode() == Op::GEMV_PREFETCH || in.opcode() == Op::KDA_LOAD) {
                issue_loads(cta);
                if (in.opcode() == Op::KDA_LOAD) begin_kda(cta, in);
                finish_instr(cta);
                return;
            }
            begin_instr(cta, in);
            c.wpos = 0;
            c.early = false;
            c.phase = waits.empty() ? Cta::FINISH : Cta::WAIT;
        }
        if (c.phase == Cta::WAIT) {
            const int32_t grp = waits[c.wpos].group;
            size_t gend = c.wpos;
            while (gend < waits.size() && waits[gend].group == grp) ++gend;
            if (opt_.fault == Fault::x_before_flag && in.opcode() == Op::GEMV_GROUP && cta == plan_.n_attn_ctas() && !c.early) {
                group_work(cta, in, grp);  // the planted bug: the slice is used before its flag is polled
                c.early = true;
            }
            const bool skip = opt_.fault == Fault::kda_skips_proj_wait && in.opcode() == Op::KDA_CONV && in.a == 0 &&
                              in.b == 0 && in.c == 0;
            if (!skip && opt_.amd_in_order_loads) {
                for (const Load& l : c.loads)
                    if (l.unit != unit_of(in))
                        fail(Verdict::POLL_BEHIND_LOADS,
                             who_now(cta) + " polls " + plan_.entry_name(waits[c.wpos].entry) +
                                 " while the weight loads issued by " + unit_name(cta, l) +
                                 " (another task, not yet used) are outstanding: with in-order load retirement the " +
                                 "poll completes only after them",
                             {cta}, waits[c.wpos].entry);
                int64_t any = loads_until(c, INT64_MIN);
                if (any != INT64_MIN) {
                    stall(cta, any);  // its own task's loads: the poll retires when they do
                    return;
                }
            }
            bool all = true;
            for (size_t k = c.wpos; k < gend; ++k) {
                const MailboxRef e = waits[k].entry;
                if (c.acquired[size_t(e.box)][size_t(e.entry)]) continue;
                if (skip) continue;
                if (entry_ready(cta, e)) acquire(cta, e);
                else all = false;
            }
            if (!all) {
                if (!c.spinning) {
                    c.spinning = true;
                    c.spin_since = now_;
                    for (size_t k = c.wpos; k < gend; ++k) {
                        const MailboxRef e = waits[k].entry;
                        if (!c.acquired[size_t(e.box)][size_t(e.entry)]) {
                            log(EventKind::spin, cta, int(c.pc), e, seen(cta, mem_[int(e.box)][size_t(e.entry) * size_t(plan_.words_per_entry(e.box))]).tag);
                            break;
                        }
                    }
                }
                c.blocked_at = now_;
                return;
            }
            if (c.spinning) {
                span(cta, int(c.pc), c.spin_since, now_, Span::wait);
                c.spinning = false;
            }
            last_progress_ = res_.sched_steps;
            if (!c.early) {
                int64_t own = loads_until(c, unit_of(in));
                if (own != INT64_MIN) { stall(cta, own); return; }  // the group's work needs its weights
                group_work(cta, in, grp);
            }
            c.early = false;
            c.wpos = gend;
            if (c.wpos < waits.size()) return;
            c.phase = Cta::FINISH;
            return;  // finishing is a step of its own
        }
        // FINISH
        int64_t own = loads_until(c, unit_of(in));
        if (own != INT64_MIN) { stall(cta, own); return; }
        finish_work(cta, in);
        finish_instr(cta);
    }

    void stall(int cta, int64_t until) {
        Cta& c = ctas_[size_t(cta)];
        span(cta, int(c.pc), now_, until, Span::stall);
        c.stall_until = until;
    }

    void finish_instr(int cta) {
        Cta& c = ctas_[size_t(cta)];
        log(EventKind::finish, cta, int(c.pc));
        span(cta, int(c.pc), c.t_begin, now_ + 1, Span::run);
        const Instr& in = plan_.instrs(cta)[c.pc];
        if (in.opcode() == Op::GEMV_GROUP || in.opcode() == Op::KDA_NORM) {  // the task has used its weights
            const int64_t u = unit_of(in);
            c.loads.erase(std::remove_if(c.loads.begin(), c.loads.end(), [&](const Load& l) { return l.unit == u; }),
                          c.loads.end());
        }
        last_progress_ = res_.sched_steps;
        ++c.pc;
        c.phase = Cta::BEGIN;
        if (c.pc == plan_.instrs(cta).size()) finish_list(cta, true);
    }

    // ---------------------------------------------------------------- watchdog
    [[noreturn]] void hang() {
        // every resident CTA spins and nothing in flight can change what they see
        int start = -1, spinning = 0;
        std::map<std::string, int> by_box;
        for (int c = 0; c < B_; ++c)
            if (ctas_[size_t(c)].state == Cta::resident) {
                if (start < 0) start = c;
                ++spinning;
                MailboxRef e = awaited(c);
                by_box[to_string(e.box)]++;
            }
        if (start < 0) throw std::logic_error("emulator: hang with no resident CTA");
        std::string chain;
        std::vector<int> seen_ctas;
        Verdict v = Verdict::LIVELOCK;
        int c = start;
        MailboxRef last{Mailbox::count, 0};
        for (;;) {
            seen_ctas.push_back(c);
            const Cta& x = ctas_[size_t(c)];
            const MailboxRef e = awaited(c);
            last = e;
            const Version& sv = seen(c, mem_[int(e.box)][size_t(e.entry) * size_t(plan_.words_per_entry(e.box))]);
            chain += "  " + who_now(c) + group_label(plan_.instrs(c)[x.pc], plan_.waits(c, int(x.pc))[x.wpos].group) + " waits for " +
                     plan_.entry_name(e) + " (sees tag " + std::to_string(sv.tag) + ", expects " +
                     std::to_string(kernel_epoch_) + ")\n";
            Plan::Producer p = plan_.producer(e);
            if (p.cta < 0) { chain += "    no CTA produces it\n"; break; }
            const Cta& P = ctas_[size_t(p.cta)];
            const Word& pw = mem_[int(e.box)][size_t(e.entry) * size_t(plan_.words_per_entry(e.box))];
            const std::string pname = who(p.cta, p.instr);
            auto stored_other = [&]() {
                return pw.cur.step == step_ && pw.cur.tag != kernel_epoch_
                           ? "stored it with tag " + std::to_string(pw.cur.tag) + ", not " +
                                 std::to_string(kernel_epoch_) + " (wrong epoch)"
                           : std::string("never stored it in this step (lost store)");
            };
            if (P.state == Cta::pending) {
                chain += "    its producer " + pname + " is not resident: all " + std::to_string(resident_) +
                         " places are held by CTAs that spin\n";
                seen_ctas.push_back(p.cta);
                v = Verdict::DEADLOCK;
                break;
            }
            if (P.state == Cta::finished) {
                chain += "    its producer " + pname + " has finished and " + stored_other() + "\n";
                seen_ctas.push_back(p.cta);
                break;
            }
            if (P.pc > size_t(p.instr)) {
                chain += "    its producer " + pname + " has passed that instruction and " + stored_other() + "\n";
                seen_ctas.push_back(p.cta);
                break;
            }
            if (std::find(seen_ctas.begin(), seen_ctas.end(), p.cta) != seen_ctas.end()) {
                chain += "    its producer " + pname + " is blocked above: the wait closes a cycle\n";
                v = Verdict::DEADLOCK;
                break;
            }
            chain += "    its producer " + pname + " has not reached it: blocked\n";
            c = p.cta;
        }
        std::string sum;
        for (auto& [box, n] : by_box) sum += (sum.empty() ? "" : ", ") + std::to_string(n) + " on " + box;
        fail(v, std::string(v == Verdict::DEADLOCK ? "circular wait" : "a hand-off that will never arrive") +
                    ": no CTA can make progress (" + std::to_string(spinning) + " resident CTAs spin: " + sum + "; " +
                    std::to_string(P_ - next_admit_) + " CTAs not yet resident, " + std::to_string(finished_) +
                    " finished). Wait-for chain:\n" + chain,
             seen_ctas, last);
    }
    MailboxRef awaited(int c) const {
        const Cta& x = ctas_[size_t(c)];
        const auto& waits = plan_.waits(c, int(x.pc));
        for (size_t k = x.wpos; k < waits.size(); ++k) {
            const MailboxRef e = waits[k].entry;
            if (!x.acquired[size_t(e.box)][size_t(e.entry)] && !entry_ready(c, e)) return e;
        }
        return waits.empty() ? MailboxRef{Mailbox::count, 0} : waits[x.wpos].entry;
    }

    // ---------------------------------------------------------------- outputs
    void init_outputs() {
        const StepInputs& in = *in_;
        const size_t S = size_t(cfg_.S());
        out_ = StepOutputs<float>{};
        out_.prefix_out.assign(S * size_t(cfg_.D), bf16{});
        out_.blocks = *blocks_;
        out_.core_out.assign(S * size_t(cfg_.E()), bf16{});
        out_.conv_state = in.conv_state;
        out_.ssm_state = in.ssm_state;
        out_.o.assign(S * size_t(cfg_.E()), bf16{});
        prov_.assign(10, {});
        auto sz = [&](const char* n, size_t count) {
            Provenance& p = prov_[size_t(output_index(n))];
            p.cta.assign(count, -1);
            p.instr.assign(count, -1);
        };
        sz("prefix_out", out_.prefix_out.size());
        sz("blocks", out_.blocks.size());
        sz("core_out", out_.core_out.size());
        sz("conv_state", out_.conv_state.size());
        sz("ssm_state", out_.ssm_state.size());
        sz("o", out_.o.size());
    }
    void mark(const char* name, size_t i, int cta) {
        Provenance& p = prov_[size_t(output_index(name))];
        p.cta[i] = cta;
        p.instr[i] = int32_t(ctas_[size_t(cta)].pc);
    }
    void collect_outputs() {
        auto take = [&](int sp, std::vector<bf16>& dst, const char* name) {
            const auto& m = mem_[sp];
            dst.resize(m.size());
            Provenance& p = prov_[size_t(output_index(name))];
            p.cta.assign(m.size(), -1);
            p.instr.assign(m.size(), -1);
            for (size_t i = 0; i < m.size(); ++i) {
                dst[i] = bf16::from_bits(uint16_t(m[i].cur.bits));
                if (m[i].cur.step == step_) { p.cta[i] = m[i].cur.writer; p.instr[i] = m[i].cur.instr; }
            }
        };
        take(SP_X, out_.x, "x");
        take(SP_PROJ, out_.proj, "proj");
        take(SP_QKV, out_.qkv, "qkv");
        take(SP_G1, out_.g1, "g1");
        res_.outputs.push_back(std::move(out_));
        res_.provenance.push_back(std::move(prov_));
    }

    // ---------------------------------------------------------------- role bodies
    static float f(bf16 b) { return b.to_float(); }
    static float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

    void begin_instr(int cta, const Instr& in) {
        Cta& c = ctas_[size_t(cta)];
        const int S = cfg_.S(), w = plan_.params().slice_width;
        if (in.opcode() == Op::ATTN_MIX) c.mixed.assign(size_t(S) * size_t(w), 0.f);
        if (in.opcode() == Op::GEMV_GROUP) c.acc.assign(size_t(plan_.params().gemv_group_rows) * size_t((S + 7) / 8), f8{});
    }
    void begin_kda(int cta, const Instr& in) {
        Cta& c = ctas_[size_t(cta)];
        const int a = in_->num_accepted[size_t(in.a)];
        c.a_eff = (opt_.fault == Fault::wrong_accepted_window && in.a == 0) ? a % cfg_.L + 1 : a;
    }

    // Work done once a wait group has been acquired.
    void group_work(int cta, const Instr& in, int grp) {
        switch (in.opcode()) {
            case Op::ATTN_MIX: mix_row(cta, in.a, grp); break;
            case Op::ATTN_X: x_row(cta, in.a, grp); break;
            case Op::GEMV_GROUP: gemv_slice(cta, in.a, grp); break;
            default: break;  // the rest work after all their waits (finish_work)
        }
    }
    void finish_work(int cta, const Instr& in) {
        switch (in.opcode()) {
            case Op::ATTN_PART: attn_part(cta, in.a, in.b); break;
            case Op::ATTN_GATE: attn_gate(cta, in.a); break;
            case Op::ATTN_MIX: break;
            case Op::ATTN_X: attn_x_flag(cta, in.a, in.b); break;
            case Op::GEMV_GROUP: gemv_store(cta, in.a); break;
            case Op::KDA_CONV: kda_conv(cta, in.a, in.b, in.c); break;
            case Op::KDA_REC: kda_rec(cta, in.a, in.b, in.c); break;
            case Op::KDA_NORM: kda_norm(cta, in.a, in.b, in.c); break;
            default: break;
        }
    }

    // A4 partials of one slice, for the part's rows and every source; P' of the slice (A1).
    void attn_part(int cta, int j, int part) {
        Cta& c = ctas_[size_t(cta)];
        const int S = cfg_.S(), D = cfg_.D, nb = cfg_.nb, w = plan_.params().slice_width, d0 = j * w;
        c.pslice.assign(size_t(S) * size_t(w), 0.f);
        for (int s = plan_.attn_row_begin(part); s < plan_.attn_row_begin(part + 1); ++s) {
            const size_t row = size_t(s) * size_t(D);
            for (int d = d0; d < d0 + w; ++d) {
                bf16 po = bf16::round(f((*prefix_)[row + size_t(d)]) + f((*delta_)[row + size_t(d)]));
                out_.prefix_out[row + size_t(d)] = po;
                mark("prefix_out", row + size_t(d), cta);
                if (cfg_.block_write) {
                    const size_t bi = (size_t(s) * 8 + size_t(nb)) * size_t(D) + size_t(d);
                    out_.blocks[bi] = po;
                    mark("blocks", bi, cta);
                }
                c.pslice[size_t(s) * size_t(w) + size_t(d - d0)] = f(po);
            }
            for (int i = 0; i <= nb; ++i) {
                auto v = [&](int d) {
                    return i < nb ? f((*blocks_)[(size_t(s) * 8 + size_t(i)) * size_t(D) + size_t(d)])
                                  : c.pslice[size_t(s) * size_t(w) + size_t(d - d0)];
                };
                float ss = v(d0) * v(d0), dot = v(d0) * wq_[size_t(d0)];
                for (int d = d0 + 1; d < d0 + w; ++d) {
                    ss = ss + v(d) * v(d);
                    dot = dot + v(d) * wq_[size_t(d)];
                }
                const float vals[2] = {ss, dot};
                store_entry(cta, plan_.part(s, i, j), vals, kernel_epoch_);
            }
        }
    }

    // A4-A5 for one row: combine the slice partials, softmax → WGT[row] = e_0..e_nb, Σe.
    void attn_gate(int cta, int row) {
        const int nb = cfg_.nb, n = plan_.n_attn();
        const float eps = float(cfg_.eps), D = float(cfg_.D);
        std::vector<float> logit(size_t(nb + 1)), vals(size_t(nb + 2));
        for (int i = 0; i <= nb; ++i) {
            std::vector<MailboxRef> split, used;
            for (int j = 0; j < n; ++j) split.push_back(plan_.part(row, i, j));
            used = split;
            if (opt_.fault == Fault::partial_counted_twice && cta == 0 && row == 0 && i == 0 && n >= 2) used[1] = used[0];
            const std::string tag = "src " + std::to_string(i) + " of row " + std::to_string(row);
            float ss = combine(cta, "Σv² of " + tag, used, split, 0);
            float dot = combine(cta, "Σv·wq of " + tag, split, split, 1);
            float r = 1.0f / std::sqrt(ss / D + eps);
            logit[size_t(i)] = dot * r;
        }
        float m = *std::max_element(logit.begin(), logit.end());
        for (int i = 0; i <= nb; ++i) vals[size_t(i)] = std::exp(logit[size_t(i)] - m);
        float den = ord_.reduce<float>(Site::softmax_den, nb + 1, [&](int i) { return vals[size_t(i)]; });
        vals[size_t(nb + 1)] = den;
        uint32_t tag = kernel_epoch_;
        if (opt_.fault == Fault::stale_epoch_tag && cta == 0 && row == 0) tag = prev_epoch(kernel_epoch_);
        store_entry(cta, plan_.wgt(row), vals.data(), tag);
    }

    // A5 for one row of the slice, and its partial Σmixed² → MSQ[row][slice].
    void mix_row(int cta, int j, int row) {
        Cta& c = ctas_[size_t(cta)];
        const int nb = cfg_.nb, D = cfg_.D, w = plan_.params().slice_width, d0 = j * w;
        if (c.pslice.empty()) throw std::logic_error("emulator: ATTN_MIX before ATTN_PART on its CTA");
        const MailboxRef wg = plan_.wgt(row);
        std::vector<float> e(size_t(nb + 1));
        for (int i = 0; i <= nb; ++i) e[size_t(i)] = read_tagged(cta, wg, i);
        const float den = read_tagged(cta, wg, nb + 1);
        float* mixed = &c.mixed[size_t(row) * size_t(w)];
        for (int d = d0; d < d0 + w; ++d) {
            auto v = [&](int i) {
                return i < nb ? f((*blocks_)[(size_t(row) * 8 + size_t(i)) * size_t(D) + size_t(d)])
                              : c.pslice[size_t(row) * size_t(w) + size_t(d - d0)];
            };
            mixed[d - d0] = ord_.reduce<float>(Site::mix, nb + 1, [&](int i) { return e[size_t(i)] * v(i); }) / den;
        }
        float ms = mixed[0] * mixed[0];
        for (int d = 1; d < w; ++d) ms = ms + mixed[d] * mixed[d];
        store_entry(cta, plan_.msq(row, j), &ms, kernel_epoch_);
    }

    // A6 for one row of the slice: x (#2) into the x tensor.
    void x_row(int cta, int j, int row) {
        const StepInputs& in = *in_;
        Cta& c = ctas_[size_t(cta)];
        const int n = plan_.n_attn(), w = plan_.params().slice_width, d0 = j * w;
        std::vector<MailboxRef> split;
        for (int k = 0; k < n; ++k) split.push_back(plan_.msq(row, k));
        float ms = combine(cta, "Σmixed² of row " + std::to_string(row), split, split, 0);
        float rr = 1.0f / std::sqrt(ms / float(cfg_.D) + float(cfg_.eps));
        const float* mixed = &c.mixed[size_t(row) * size_t(w)];
        const int first = opt_.fault == Fault::x_store_off_by_one && cta == 1 ? d0 + 1 : d0;
        for (int d = first; d < d0 + w; ++d)
            store_data(cta, SP_X, row, d, bf16::round((mixed[d - d0] * rr) * f(in.input_norm_w[size_t(d)])));
        log_data(cta, SP_X, d0, w);
    }
    void attn_x_flag(int cta, int j, int part) {
        if (opt_.fault == Fault::missing_xrdy && cta == 1) return;
        store_flag(cta, plan_.xrdy(j, part), !(opt_.fault == Fault::flag_before_data && cta == 1));
    }

    // B for the group's columns: slice j's partial sums, added to the running sums in slice order.
    void gemv_slice(int cta, int g, int j) {
        const StepInputs& in = *in_;
        Cta& c = ctas_[size_t(cta)];
        const int S = cfg_.S(), D = cfg_.D, w = plan_.params().slice_width, d0 = j * w;
        const int G = plan_.params().gemv_group_rows, n0 = g * G, nrb = (S + 7) / 8;
        // The eight rows' sums as two halves of four lanes (rows 0-3, 4-7), two weight rows at a time:
        // lane by lane the same operations in the same order as one eight-lane vector, but held in
        // registers (baseline x86-64 code keeps an eight-float vector in memory, a store-forward a term).
        std::vector<f4>& xlo = xlo_;  // scratch kept across calls (22k a k3 step)
        std::vector<f4>& xhi = xhi_;
        xlo.resize(size_t(w));
        xhi.resize(size_t(w));
        // a slice whose every read passed the checks once in this step reads the same stores again
        // (a later store to it would be a WRITE_CONFLICT), so later groups skip the checks
        const bool checked = c.x_checked[size_t(j)] != 0;
        for (int rb = 0; rb < nrb; ++rb) {
            for (int d = 0; d < w; ++d) {
                f4 lo{}, hi{};
                for (int l = 0; l < 8 && rb * 8 + l < S; ++l) {
                    const float v = checked ? bf16::from_bits(uint16_t(mem_[SP_X][size_t(rb * 8 + l) * size_t(D) + size_t(d0 + d)].cur.bits)).to_float()
                                            : f(read_data(cta, SP_X, rb * 8 + l, d0 + d));
                    if (l < 4) lo[l] = v; else hi[l - 4] = v;
                }
                xlo[size_t(d)] = lo;
                xhi[size_t(d)] = hi;
            }
            auto add = [&](int k, f4 lo, f4 hi) {
                const f8 part = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
                f8& acc = c.acc[size_t(k) * size_t(nrb) + size_t(rb)];
                acc = j == 0 ? part : acc + part;
            };
            int k = 0;
            for (; k + 1 < G; k += 2) {
                const bf16* wa = &in.in_proj_w[size_t(n0 + k) * size_t(D) + size_t(d0)];
                const bf16* wb = wa + D;
                const float a0 = f(wa[0]), b0 = f(wb[0]);
                f4 alo = xlo[0] * a0, ahi = xhi[0] * a0, blo = xlo[0] * b0, bhi = xhi[0] * b0;
                for (int d = 1; d < w; ++d) {
                    const float ad = f(wa[d]), bd = f(wb[d]);
                    alo = alo + xlo[size_t(d)] * ad;
                    ahi = ahi + xhi[size_t(d)] * ad;
                    blo = blo + xlo[size_t(d)] * bd;
                    bhi = bhi + xhi[size_t(d)] * bd;
                }
                add(k, alo, ahi);
                add(k + 1, blo, bhi);
            }
            for (; k < G; ++k) {
                const bf16* wa = &in.in_proj_w[size_t(n0 + k) * size_t(D) + size_t(d0)];
                const float a0 = f(wa[0]);
                f4 alo = xlo[0] * a0, ahi = xhi[0] * a0;
                for (int d = 1; d < w; ++d) {
                    const float ad = f(wa[d]);
                    alo = alo + xlo[size_t(d)] * ad;
                    ahi = ahi + xhi[size_t(d)] * ad;
                }
                add(k, alo, ahi);
            }
        }
        c.x_checked[size_t(j)] = 1;
    }
    void gemv_store(int cta, int g) {
        Cta& c = ctas_[size_t(cta)];
        const int S = cfg_.S(), G = plan_.params().gemv_group_rows, n0 = g * G, nrb = (S + 7) / 8;
        for (int k = 0; k < G; ++k)
            for (int s = 0; s < S; ++s)
                store_data(cta, SP_PROJ, s, n0 + k, bf16::round(c.acc[size_t(k) * size_t(nrb) + size_t(s / 8)][s % 8]));
        log_data(cta, SP_PROJ, n0, G);
        store_flag(cta, plan_.proj(g), true);
    }

    // C (#4) for request r, head h, key columns k0 .. k0+nk-1 of every token: g1, f_a read through PROJ.
    void make_g1(int cta, int r, int h, int k0, int nk) {
        const int K = cfg_.K, F = cfg_.F;
        std::vector<float> fa(static_cast<size_t>(F));
        for (int t = 0; t < cfg_.L; ++t) {
            const int s = r * cfg_.L + t;
            for (int fi = 0; fi < F; ++fi) fa[size_t(fi)] = f(read_data(cta, SP_PROJ, s, cfg_.col_fa() + fi));
            for (int k = k0; k < k0 + nk; ++k) {
                const bf16* wr = &in_->f_b_w[size_t(h * K + k) * size_t(F)];
                const float acc = ord_.reduce<float>(Site::f_b, F, [&](int fi) { return fa[size_t(fi)] * f(wr[fi]); });
                store_data(cta, SP_G1, s, h * K + k, bf16::round(acc));
            }
        }
    }

    // D for the task's channels: its q and k shares and its v rows; with sibling chunks also C for
    // its share of the head's key columns (q, k and g1 shares published through QK).
    void kda_conv(int cta, int r, int h, int ch) {
        const StepInputs& in = *in_;
        Cta& c = ctas_[size_t(cta)];
        const int L = cfg_.L, W = cfg_.W, E = cfg_.E(), qs = plan_.qk_share(), rows = plan_.params().kda_chunk_rows;
        const int32_t slot = in.idx(r, 0);
        const int a = c.a_eff;
        std::vector<int> chans;
        for (int i = 0; i < qs; ++i) chans.push_back(h * cfg_.K + ch * qs + i);
        for (int i = 0; i < qs; ++i) chans.push_back(E + h * cfg_.K + ch * qs + i);
        for (int i = 0; i < rows; ++i) chans.push_back(2 * E + h * cfg_.V + ch * rows + i);
        std::vector<float> seq(size_t(W - 1 + L));
        std::vector<bf16> xin(static_cast<size_t>(L));
        for (int chn : chans) {
            for (int t = 0; t < L; ++t) xin[size_t(t)] = read_data(cta, SP_PROJ, r * L + t, chn);
            for (int j = 0; j < W - 1; ++j)
                seq[size_t(j)] = slot > 0 ? f(in.conv_state[size_t(in.conv_at(slot, a - 1 + j, chn))]) : 0.f;
            for (int t = 0; t < L; ++t) seq[size_t(W - 1 + t)] = f(xin[size_t(t)]);
            const float* wc = &in.conv_w[size_t(chn) * size_t(W)];
            for (int t = 0; t < L; ++t) {
                float acc = seq[size_t(t)] * wc[0];
                for (int j = 1; j < W; ++j) acc = acc + seq[size_t(t + j)] * wc[j];
                store_data(cta, SP_QKV, r * L + t, chn, bf16::round(acc / (1.0f + std::exp(-acc))));
            }
            if (slot > 0) {
                for (int j = 0; j < W - 2; ++j) {
                    const size_t at = size_t(in.conv_at(slot, j, chn));
                    out_.conv_state[at] = in.conv_state[size_t(in.conv_at(slot, a + j, chn))];
                    mark("conv_state", at, cta);
                }
                for (int t = 0; t < L; ++t) {
                    const size_t at = size_t(in.conv_at(slot, W - 2 + t, chn));
                    out_.conv_state[at] = xin[size_t(t)];
                    mark("conv_state", at, cta);
                }
            }
        }
        log_data(cta, SP_QKV, h * cfg_.K + ch * qs, qs);
        if (plan_.n_chunks() > 1) {
            const bool short_share = opt_.fault == Fault::g1_share_short && r == 0 && h == 0 && ch == 1;
            make_g1(cta, r, h, ch * qs, short_share ? qs - 1 : qs);
            log_data(cta, SP_G1, h * cfg_.K + ch * qs, qs);
        }
        store_flag(cta, plan_.qk(r, h, ch), true);
    }

    // C + E for the task's state rows; partial Σō² of its rows → ONRM.
    void kda_rec(int cta, int r, int h, int ch) {
        const StepInputs& in = *in_;
        Cta& c = ctas_[size_t(cta)];
        const int L = cfg_.L, K = cfg_.K, E = cfg_.E(), rows = plan_.params().kda_chunk_rows;
        const int v0 = ch * rows;
        // C: g1 of the head's K key columns, made here by one task a head, else by the sibling chunks'
        // KDA_CONV (their shares, read through QK)
        if (plan_.n_chunks() == 1) make_g1(cta, r, h, 0, K);
        std::vector<float> g1(size_t(L) * size_t(K));
        for (int t = 0; t < L; ++t)
            for (int k = 0; k < K; ++k) g1[size_t(t) * size_t(K) + size_t(k)] = f(read_data(cta, SP_G1, r * L + t, h * K + k));
        c.obar.assign(size_t(L) * size_t(rows), 0.f);
        const int a = c.a_eff;
        const int32_t init = in.idx(r, a - 1);
        if (init > 0) {
            const float l2eps = float(cfg_.l2_eps), lb = float(cfg_.lower_bound);
            const float kscale = float(std::pow(double(K), -0.5));
            const float A = std::exp(in.A_log[size_t(h)]);
            std::vector<float> St(size_t(rows) * size_t(K)), qn(static_cast<size_t>(K)), kn(static_cast<size_t>(K)),
                decay(static_cast<size_t>(K)), u(static_cast<size_t>(rows)), q(static_cast<size_t>(K)),
                kk(static_cast<size_t>(K));
            for (int v = 0; v < rows; ++v)
                for (int k = 0; k < K; ++k)
                    St[size_t(v) * size_t(K) + size_t(k)] = in.ssm_state[size_t(in.ssm_at(init, h, v0 + v, k))];
            for (int t = 0; t < L; ++t) {
                const int s = r * L + t;
                for (int k = 0; k < K; ++k) {
                    q[size_t(k)] = f(read_data(cta, SP_QKV, s, h * K + k));
                    kk[size_t(k)] = f(read_data(cta, SP_QKV, s, E + h * K + k));
                }
                const float sq = ord_.reduce<float>(Site::l2_q, K, [&](int k) { return q[size_t(k)] * q[size_t(k)]; });
                const float sk = ord_.reduce<float>(Site::l2_k, K, [&](int k) { return kk[size_t(k)] * kk[size_t(k)]; });
                const float qd = std::sqrt(sq + l2eps), kd = std::sqrt(sk + l2eps);
                for (int k = 0; k < K; ++k) {
                    qn[size_t(k)] = (q[size_t(k)] / qd) * kscale;
                    kn[size_t(k)] = kk[size_t(k)] / kd;
                    const float gate = lb * sigmoid(A * (g1[size_t(t) * size_t(K) + size_t(k)] + in.dt_bias[size_t(h * K + k)]));
                    decay[size_t(k)] = std::exp(gate);
                }
                for (int v = 0; v < rows; ++v)
                    for (int k = 0; k < K; ++k) St[size_t(v) * size_t(K) + size_t(k)] = St[size_t(v) * size_t(K) + size_t(k)] * decay[size_t(k)];
                const float beta = sigmoid(f(read_data(cta, SP_PROJ, s, cfg_.col_beta() + h)));
                for (int v = 0; v < rows; ++v) {
                    const float* Sv = &St[size_t(v) * size_t(K)];
                    const float kS = ord_.reduce<float>(Site::rec_kS, K, [&](int k) { return Sv[k] * kn[size_t(k)]; });
                    u[size_t(v)] = (f(read_data(cta, SP_QKV, s, 2 * E + h * cfg_.V + v0 + v)) - kS) * beta;
                }
                for (int v = 0; v < rows; ++v)
                    for (int k = 0; k < K; ++k)
                        St[size_t(v) * size_t(K) + size_t(k)] = St[size_t(v) * size_t(K) + size_t(k)] + u[size_t(v)] * kn[size_t(k)];
                for (int v = 0; v < rows; ++v) {
                    const float* Sv = &St[size_t(v) * size_t(K)];
                    const float ov = ord_.reduce<float>(Site::rec_oq, K, [&](int k) { return Sv[k] * qn[size_t(k)]; });
                    bf16 ob = bf16::round(ov);
                    const size_t at = size_t(s) * size_t(E) + size_t(h * cfg_.V + v0 + v);
                    out_.o[at] = ob;
                    mark("o", at, cta);
                    c.obar[size_t(t) * size_t(rows) + size_t(v)] = f(ob);
                }
                const int32_t slot = in.idx(r, t);
                if (slot > 0)
                    for (int v = 0; v < rows; ++v)
                        for (int k = 0; k < K; ++k) {
                            const size_t at = size_t(in.ssm_at(slot, h, v0 + v, k));
                            out_.ssm_state[at] = St[size_t(v) * size_t(K) + size_t(k)];
                            mark("ssm_state", at, cta);
                        }
            }
        } else {
            for (int t = 0; t < L; ++t)
                for (int v = 0; v < rows; ++v) mark("o", size_t(r * L + t) * size_t(E) + size_t(h * cfg_.V + v0 + v), cta);
        }
        for (int t = 0; t < L; ++t) {
            const float* ob = &c.obar[size_t(t) * size_t(rows)];
            float ms = ob[0] * ob[0];
            for (int v = 1; v < rows; ++v) ms = ms + ob[v] * ob[v];
            store_entry(cta, plan_.onrm(r * L + t, h, ch), &ms, kernel_epoch_);
        }
    }

    // F for the task's rows: combine the chunks' Σō² partials in chunk order.
    void kda_norm(int cta, int r, int h, int ch) {
        const StepInputs& in = *in_;
        Cta& c = ctas_[size_t(cta)];
        const int L = cfg_.L, V = cfg_.V, E = cfg_.E(), rows = plan_.params().kda_chunk_rows, v0 = ch * rows;
        const float eps = float(cfg_.eps);
        for (int t = 0; t < L; ++t) {
            const int s = r * L + t;
            std::vector<MailboxRef> split;
            for (int k = 0; k < plan_.n_chunks(); ++k) split.push_back(plan_.onrm(s, h, k));
            float ms = combine(cta, "Σō² of row " + std::to_string(s) + " head " + std::to_string(h), split, split, 0);
            float rr = 1.0f / std::sqrt(ms / float(V) + eps);
            for (int v = 0; v < rows; ++v) {
                const float g2 = f(read_data(cta, SP_PROJ, s, cfg_.col_g2() + h * V + v0 + v));
                const float ob = c.obar[size_t(t) * size_t(rows) + size_t(v)];
                const size_t at = size_t(s) * size_t(E) + size_t(h * V + v0 + v);
                out_.core_out[at] = bf16::round(((ob * rr) * f(in.o_norm_w[size_t(v0 + v)])) * sigmoid(g2));
                mark("core_out", at, cta);
            }
        }
    }

    const Plan& plan_;
    const ReductionOrder ord_ = plan_.reduction_order();
    const Config& cfg_;
    MachineOptions opt_;
    MachineResult& res_;
    const int B_;
    std::unique_ptr<Scheduler> sched_;
    std::vector<Cta> ctas_;
    std::vector<Word> mem_[SP_COUNT];
    std::vector<std::vector<uint32_t>> flag_vc_[kMailboxCount];
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> events_;
    int64_t now_ = 0, last_event_ = -1, last_progress_ = 0;
    int P_ = 0;  // places: the launch's CTAs
    int resident_ = 0, next_admit_ = 0, finished_ = 0, places_done_ = 0, step_ = 0, cur_cta_ = -1;
    std::vector<int> open_;  // per place: its lists not finished
    std::vector<f4> xlo_, xhi_;  // gemv_slice's x columns
    uint32_t kernel_epoch_ = 1;
    const StepInputs* in_ = nullptr;
    const std::vector<bf16>*prefix_ = nullptr, *delta_ = nullptr, *blocks_ = nullptr;  // this launch's rows
    std::vector<float> wq_;
    StepOutputs<float> out_;
    std::vector<Provenance> prov_;
};

}  // namespace

MachineResult run_machine(const Plan& plan, const StepInputs& in, const MachineOptions& opt) {
    return run_machine(plan, in, std::vector<StepRows>(1), 1, opt);
}

MachineResult run_machine(const Plan& plan, const StepInputs& base, const std::vector<StepRows>& steps, int launches,
                          const MachineOptions& opt) {
    MachineResult r;
    if (launches < 1 || size_t(launches) > steps.size())
        bad_input("emulate: " + std::to_string(launches) + " launches asked of " + std::to_string(steps.size()) +
                  " steps' rows");
    const Config& c = base.cfg;
    if (c.D != plan.config().D || c.N != plan.config().N || c.S() != plan.config().S() || c.H != plan.config().H ||
        c.K != plan.config().K || c.nb != plan.config().nb || c.L != plan.config().L)
        bad_input("emulate: the inputs' config does not match the plan's");
    for (int k = 0; k < launches; ++k)
        if (const StepRows& s = steps[size_t(k)]; (!s.prefix.empty() && s.prefix.size() != base.prefix.size()) ||
            (!s.delta.empty() && s.delta.size() != base.delta.size()) ||
            (!s.blocks.empty() && s.blocks.size() != base.blocks.size()))
            bad_input("emulate: a step's rows do not match the inputs' shapes");
    if (opt.schedule.kind == Schedule::delay && !opt.schedule.delay_role &&
        (opt.schedule.cta < 0 || opt.schedule.cta >= plan.blocks()))
        bad_input("--schedule delay:cta:" + std::to_string(opt.schedule.cta) + " names no CTA of the plan (0.." +
                  std::to_string(plan.blocks() - 1) + ")");
    Machine m(plan, opt, r);
    uint32_t e = opt.epoch_start == 0 ? 1 : opt.epoch_start;
    const uint32_t first = e;
    try {
        for (int k = 0; k < launches; ++k) {
            m.run_step(base, steps[size_t(k)], k, e, first);
            e = next_epoch(e);
        }
    } catch (const Stop&) {
    }
    return r;
}

std::string format_event(const Plan& plan, const Event& e) {
    char head[96];
    std::snprintf(head, sizeof head, "[step %d t=%lld] ", int(e.step), (long long)e.tick);
    std::string s = head;
    if (e.cta < 0) return s + "VIOLATION";
    s += plan.cta_name(e.cta);
    if (e.instr >= 0 && size_t(e.instr) < plan.instrs(e.cta).size()) {
        const Instr& in = plan.instrs(e.cta)[size_t(e.instr)];
        s += std::string(" ") + to_string(role_of(in.opcode())) + " " + plan.describe(in);
    }
    s += ": ";
    switch (e.kind) {
        case EventKind::admit: return s + "becomes resident";
        case EventKind::begin: return s + "begin";
        case EventKind::acquire: return s + "acquire " + plan.entry_name(e.entry) + " (tag " + std::to_string(e.tag) + ")";
        case EventKind::spin: return s + "spin on " + plan.entry_name(e.entry) + " (sees tag " + std::to_string(e.tag) + ")";
        case EventKind::store:
            return s + "store " + plan.entry_name(e.entry) + " tag " + std::to_string(e.tag) + " (" +
                   (e.how == 1 ? "release" : e.how == 2 ? "value+tag" : "plain") + ", visible t=" + std::to_string(e.aux) + ")";
        case EventKind::data:
            return s + "store " + to_string(HandOff(e.entry.entry)) + " cols " +
                   std::to_string(e.tag) + ".." + std::to_string(int64_t(e.tag) + e.aux - 1) + " (plain)";
        case EventKind::loads: return s + "issue weight loads (retire t=" + std::to_string(e.aux) + ")";
        case EventKind::finish: return s + "finish";
        case EventKind::done: return s + "done";
        case EventKind::violation: return s + "VIOLATION";
    }
    return s;
}

std::string format_history(const Plan& plan, const MachineResult& r, size_t last) {
    std::string out;
    const auto& h = r.history;
    const size_t from = h.size() > last ? h.size() - last : 0;
    out += "history (last " + std::to_string(h.size() - from) + " of " + std::to_string(h.size()) + " events):\n";
    for (size_t i = from; i < h.size(); ++i) out += "  " + format_event(plan, h[i]) + "\n";
    std::vector<int> named;
    for (int c : r.named)
        if (c >= 0 && std::find(named.begin(), named.end(), c) == named.end()) named.push_back(c);
    for (int c : named) {
        std::vector<size_t> mine;
        for (size_t i = h.size(); i-- > 0 && mine.size() < 6;)
            if (h[i].cta == c) mine.push_back(i);
        out += plan.cta_name(c) + ", last events:\n";
        for (size_t k = mine.size(); k-- > 0;) out += "  " + format_event(plan, h[mine[k]]) + "\n";
    }
    return out;
}

}  // namespace monokda::emu
