// The emulator's memory model (docs/emulator.md): every word keeps its latest store and the value
// other CTAs see until that store becomes visible; release stores carry vector clocks; mailbox
// entries carry epoch tags; every read of a hand-off is checked against happens-before and the step
// it was stored in. Weight loads in flight are modelled here too (their retire time, and which task
// still owes them a use: the POLL_BEHIND_LOADS rule).
#include "emulator/machine_impl.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace monokda::emu::detail {

std::string step_name(int32_t s) {
    return s < 0 ? "of zeroed memory (never stored)" : "stored in step " + std::to_string(s);
}

MailboxRef Machine::entry_of(int sp, size_t i) const {
    if (sp < kMailboxCount) return {Mailbox(sp), int32_t(i / size_t(plan_.words_per_entry(Mailbox(sp))))};
    MailboxRef g{Mailbox::count, 0};
    guard(sp, int(i / size_t(width(sp))), int(i % size_t(width(sp))), g);
    return g;
}

void Machine::store(int cta, int sp, size_t i, uint32_t bits, uint32_t tag, How how) {
    Word& w = word(sp, i);
    Cta& c = ctas_[size_t(cta)];
    if (w.cur.step == step_ && w.cur.writer >= 0 && w.cur.writer != cta && on(Detector::write_conflict)) {
        std::string what = sp < kMailboxCount
                               ? plan_.entry_name({Mailbox(sp), int32_t(i / size_t(plan_.words_per_entry(Mailbox(sp))))})
                               : data_elem(sp, i);
        fail(Detector::write_conflict, what + " is stored twice in step " + std::to_string(step_) + ": by " +
                                          who(w.cur.writer, w.cur.instr) + " and by " + who_now(cta) +
                                          " (the plan's producer: " + producer_name(sp, i) + ")",
             {w.cur.writer, cta}, entry_of(sp, i));
    }
    if (w.visible_at <= now_) w.prev = w.cur;  // the old value had landed; it is what others see meanwhile
    ++c.vc[size_t(cta)];
    // the delay is drawn either way, so that switching the model off leaves the schedule's other draws as they were
    const int64_t delay = sched_->store_delay(cta, role_of(plan_.instrs(cta)[c.pc].opcode()));
    int64_t vis = now_ + (on(Detector::delayed_visibility) ? delay : 0);
    if (how == RELEASE) vis = std::max(vis, c.max_vis);  // after every earlier store of the CTA
    c.max_vis = std::max(c.max_vis, vis);
    w.cur = Version{bits, tag, step_, cta, int32_t(c.pc), c.vc[size_t(cta)], uint8_t(how)};
    w.visible_at = vis;
    if (vis > now_) events_.push(vis);
    else events_.push(now_);
}

void Machine::store_entry(int cta, MailboxRef e, const float* vals, uint32_t tag) {
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

void Machine::store_flag(int cta, MailboxRef e, bool release) {
    FlagClocks& fc = flag_vc_[int(e.box)][size_t(e.entry)];
    if (word(int(e.box), size_t(e.entry)).visible_at <= now_) fc.prev = fc.cur;  // as store() keeps the version
    store(cta, int(e.box), size_t(e.entry), kernel_epoch_, kernel_epoch_, release ? RELEASE : PLAIN);
    fc.cur = release ? ctas_[size_t(cta)].vc : std::vector<uint32_t>{};
    log(EventKind::store, cta, int(ctas_[size_t(cta)].pc), e, kernel_epoch_, word(int(e.box), size_t(e.entry)).visible_at,
        release ? RELEASE : PLAIN);
}

// A read that is not ordered after this step's store of its element (read_data's slow path): names
// what is wrong with it, or, where the detector of the case is off, returns the value the CTA sees.
bf16 Machine::unordered_read(int cta, int sp, int row, int col) {
    const size_t i = size_t(row) * size_t(width(sp)) + size_t(col);
    const Word& w = word(sp, i);
    const Version& v = seen(cta, w);
    MailboxRef g{Mailbox::count, 0};
    const bool guarded = guard(sp, row, col, g);
    const bool acq = guarded && ctas_[size_t(cta)].acquired[size_t(g.box)][size_t(g.entry)];
    const std::string elem = data_elem(sp, i), reader = who_now(cta);
    const std::string gname = guarded ? plan_.entry_name(g) : "no mailbox (private to its task)";
    if (w.cur.step == step_) {
        if (!on(Detector::happens_before)) return bf16::from_bits(uint16_t(v.bits));
        std::string why = acq ? "it acquired " + gname + ", but that flag was not stored with release, so the " +
                                    "data stores before it are not ordered before it"
                              : "it has not acquired " + gname;
        fail(Detector::happens_before,
             reader + " read " + elem + ", stored in this step by " + who(w.cur.writer, w.cur.instr) +
                 ", without a release/acquire chain from that store: " + why + "; it saw " +
                 (&v == &w.cur ? "the new value (by chance)" : "the old value (" + step_name(v.step) + ")"),
             {cta, w.cur.writer}, g);
    }
    std::vector<int> named{cta};
    if (guarded && plan_.producer(g).cta >= 0) named.push_back(plan_.producer(g).cta);
    if (acq && on(Detector::stale_epoch))
        fail(Detector::stale_epoch, reader + " read " + elem + " after acquiring " + gname +
                                        ", but nothing stored it in this step: it holds the value " + step_name(v.step) +
                                        "; the plan's producer is " + producer_name(sp, i),
             named, g);
    if (!acq && on(Detector::happens_before))
        fail(Detector::happens_before, reader + " read " + elem + " before acquiring " + gname +
                                           " (not yet stored in this step; it holds the value " + step_name(v.step) +
                                           "); the plan's producer is " + producer_name(sp, i),
             named, g);
    return bf16::from_bits(uint16_t(v.bits));
}

void Machine::log_data(int cta, int sp, int col0, int ncols) {
    log(EventKind::data, cta, int(ctas_[size_t(cta)].pc), {Mailbox::count, sp - SP_X}, uint32_t(col0), ncols);
}

bool Machine::entry_ready(int cta, MailboxRef e) const {
    const int wpe = plan_.words_per_entry(e.box);
    for (int k = 0; k < wpe; ++k)
        if (seen(cta, mem_[int(e.box)][size_t(e.entry) * size_t(wpe) + size_t(k)]).tag != kernel_epoch_) return false;
    return true;
}

void Machine::acquire(int cta, MailboxRef e) {
    const int wpe = plan_.words_per_entry(e.box);
    Cta& c = ctas_[size_t(cta)];
    for (int k = 0; k < wpe; ++k) {
        const Word& w = mem_[int(e.box)][size_t(e.entry) * size_t(wpe) + size_t(k)];
        const Version& v = seen(cta, w);
        if (v.step != step_ && on(Detector::stale_epoch)) {
            Plan::Producer p = plan_.producer(e);
            std::string now_state = w.cur.step == step_ ? "has stored it, not yet visible" : "has not stored it yet";
            fail(Detector::stale_epoch,
                 who_now(cta) + " accepted " + plan_.entry_name(e) + " (tag " + std::to_string(v.tag) +
                     " = the epoch it expects), but the value was " + step_name(v.step) +
                     (v.writer >= 0 ? " by CTA " + std::to_string(v.writer) : "") + "; this step's producer " +
                     (p.cta >= 0 ? who(p.cta, p.instr) : std::string("(none)")) + " " + now_state,
                 {cta, p.cta}, e);
        }
        if (v.how == RELEASE) {
            const FlagClocks& fc = flag_vc_[int(e.box)][size_t(e.entry)];
            const std::vector<uint32_t>& fv = &v == &w.cur ? fc.cur : fc.prev;
            for (size_t i = 0; i < fv.size(); ++i) c.vc[i] = std::max(c.vc[i], fv[i]);
        }
    }
    c.acquired[size_t(e.box)][size_t(e.entry)] = 1;
    log(EventKind::acquire, cta, int(c.pc), e, kernel_epoch_);
}

float Machine::read_tagged(int cta, MailboxRef e, int k) {
    const Word& w = mem_[int(e.box)][size_t(e.entry) * size_t(plan_.words_per_entry(e.box)) + size_t(k)];
    const Version& v = seen(cta, w);
    const bool stale = v.step != step_ || v.tag != kernel_epoch_;
    // this step's value is stored but has not landed, and the CTA read the word without polling it (a
    // polled entry that delivers an older value is the epoch's fault: stale_epoch below)
    if (stale && &v != &w.cur && w.cur.step == step_ && w.cur.tag == kernel_epoch_ &&
        !ctas_[size_t(cta)].acquired[size_t(e.box)][size_t(e.entry)] && on(Detector::delayed_visibility))
        fail(Detector::delayed_visibility,
             who_now(cta) + " used " + plan_.entry_name(e) + " word " + std::to_string(k) + " before its store had " +
                 "landed: " + who(w.cur.writer, w.cur.instr) + " stored it in this step (tag " +
                 std::to_string(w.cur.tag) + "), visible only from t=" + std::to_string(w.visible_at) + ", and at t=" +
                 std::to_string(now_) + " the read saw tag " + std::to_string(v.tag) + ", " + step_name(v.step) +
                 " (the reader never polled the entry: a polled one had landed)",
             {cta, w.cur.writer}, e);
    if (stale && on(Detector::stale_epoch))
        fail(Detector::stale_epoch, who_now(cta) + " used " + plan_.entry_name(e) + " word " + std::to_string(k) +
                                        " holding tag " + std::to_string(v.tag) + ", " + step_name(v.step) +
                                        " (expected this step's, tag " + std::to_string(kernel_epoch_) + ")",
             {cta}, e);
    float f;
    std::memcpy(&f, &v.bits, 4);
    return f;
}

// A split reduction's partials, combined as the plan says: exactly these entries, each once, in
// order (partial 0, then + partial 1, ...). The body passes what it actually combines.
float Machine::combine(int cta, const std::string& what, const std::vector<MailboxRef>& used,
              const std::vector<MailboxRef>& plan_split, int word_k) {
    if (on(Detector::split_order) &&
        (used.size() != plan_split.size() || !std::equal(used.begin(), used.end(), plan_split.begin()))) {
        std::string u, missing;
        for (size_t i = 0; i < used.size(); ++i) {
            int n = int(std::count(used.begin(), used.end(), used[i]));
            if (n > 1 && std::find(used.begin(), used.begin() + long(i), used[i]) == used.begin() + long(i))
                u += (u.empty() ? "" : ", ") + plan_.entry_name(used[i]) + " counted " + std::to_string(n) + " times";
        }
        for (const MailboxRef& e : plan_split)
            if (std::find(used.begin(), used.end(), e) == used.end())
                missing += (missing.empty() ? "" : ", ") + plan_.entry_name(e);
        fail(Detector::split_order, who_now(cta) + " combined " + what + " from other partials than the plan's split (" +
                                       std::to_string(plan_split.size()) + " partials, each once, in order)" +
                                       (u.empty() ? "" : ": " + u) + (missing.empty() ? "" : "; missing " + missing) +
                                       (u.empty() && missing.empty() ? ": order differs" : ""),
             {cta}, plan_split[0]);
    }
    float total = read_tagged(cta, used[0], word_k);
    for (size_t i = 1; i < used.size(); ++i) total = total + read_tagged(cta, used[i], word_k);
    return total;
}

// ---------------------------------------------------------------- weight loads
int64_t Machine::unit_of(const Instr& in) const {
    switch (role_of(in.opcode())) {
        case Role::attn: return -1;
        case Role::gemv: return in.a;
        case Role::kda: return (int64_t(1) << 32) + plan_.kda_task_index(in.a, in.b, in.c);
    }
    return -1;
}

void Machine::issue_loads(int cta) {
    Cta& c = ctas_[size_t(cta)];
    const Instr& in = plan_.instrs(cta)[c.pc];
    int64_t t = now_ + sched_->load_latency(cta, role_of(in.opcode()));
    c.loads.push_back(Load{unit_of(in), t, int32_t(c.pc)});
    events_.push(t);
    log(EventKind::loads, cta, int(c.pc), {Mailbox::count, 0}, 0, t);
}

// Latest retire time of in-flight loads (of one unit, or all with unit = INT64_MIN).
int64_t Machine::loads_until(const Cta& c, int64_t unit) const {
    int64_t t = INT64_MIN;
    for (const Load& l : c.loads)
        if (l.retire_at > now_ && (unit == INT64_MIN || l.unit == unit)) t = std::max(t, l.retire_at);
    return t;
}

}  // namespace monokda::emu::detail
