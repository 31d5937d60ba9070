// The emulator's diagnosis: fail() (which records a detector's verdict and stops the run),
// the wait-for chain of a hang (DEADLOCK or LIVELOCK), names of CTAs, entries and elements for the
// details, and the history a failure prints (format_event, format_history).
#include "emulator/machine_impl.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace monokda::emu {

uint32_t next_epoch(uint32_t e) { return e == 0xffffffffu ? 1u : e + 1; }
uint32_t prev_epoch(uint32_t e) { return e <= 1 ? 0xffffffffu : e - 1; }

int output_index(const std::string& name) {
    const auto& names = output_names();
    for (size_t i = 0; i < names.size(); ++i)
        if (name == names[i]) return int(i);
    return -1;
}

namespace detail {

// The stage within an instruction: which row or slice the entry it waits for is for (a plan file's
// wait groups are numbered in order, not by row or slice).
static std::string group_label(const Plan& plan, const Instr& in, const MailboxRef& e) {
    if (in.opcode() == Op::ATTN_MIX && e.box == Mailbox::WGT) return " at row " + std::to_string(e.entry);
    if (in.opcode() == Op::ATTN_X && e.box == Mailbox::MSQ) return " at row " + std::to_string(e.entry / plan.n_attn());
    if (in.opcode() == Op::GEMV_GROUP && e.box == Mailbox::XRDY) return " at slice " + std::to_string(e.entry / plan.attn_parts());
    return "";
}

// (named by reference: a by-value argument of a throwing [[noreturn]] call was freed twice by GCC 12 at -O3)
void Machine::fail(Detector d, const std::string& detail, const std::vector<int>& named, MailboxRef entry) {
    res_.verdict = info(d).verdict;
    res_.detector = d;
    res_.entry = entry;
    res_.detail = detail;
    res_.named = named;
    Event e{now_, cur_cta_, -1, EventKind::violation, 0, int16_t(step_), {Mailbox::count, 0}, 0, 0};
    res_.history.push_back(e);
    res_.ticks = now_;
    throw Stop{};
}

std::string Machine::who(int cta, int instr) const {
    const Instr& in = plan_.instrs(cta)[size_t(instr)];
    return plan_.cta_name(cta) + " (" + to_string(role_of(in.opcode())) + ") " + plan_.describe(in);
}

std::string Machine::unit_name(int cta, const Load& l) const { return plan_.describe(plan_.instrs(cta)[size_t(l.instr)]); }

std::string Machine::data_elem(int sp, size_t i) const {
    const int w = width(sp);
    return std::string(to_string(handoff(sp))) + "[row " + std::to_string(i / size_t(w)) + "][col " + std::to_string(i % size_t(w)) + "]";
}

std::string Machine::producer_name(int sp, size_t i) const {
    MailboxRef g{Mailbox::count, 0};
    if (sp < kMailboxCount) g = {Mailbox(sp), int32_t(i / size_t(plan_.words_per_entry(Mailbox(sp))))};
    else if (!guard(sp, int(i / size_t(width(sp))), int(i % size_t(width(sp))), g)) return "its own kda task";
    Plan::Producer p = plan_.producer(g);
    if (p.cta == -2) return "ambiguous: the plan gives " + plan_.entry_name(g) + " several producers";
    if (p.cta < 0) return "none";
    return who(p.cta, p.instr) + " via " + plan_.entry_name(g);
}

// ---------------------------------------------------------------- watchdog
void Machine::hang() {
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
        chain += "  " + who_now(c) + group_label(plan_, plan_.instrs(c)[x.pc], plan_.waits(c, int(x.pc))[x.wpos].entry) + " waits for " +
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
    const Detector d = v == Verdict::DEADLOCK ? Detector::deadlock : Detector::lost_handoff;
    if (!on(d))  // the CTAs would spin on until the step budget ran out
        no_progress("every resident CTA spins (" + sum + ") and nothing in flight can change what it sees; the " +
                    "analysis of the hang (" + to_string(d) + ") is off");
    fail(d, std::string(v == Verdict::DEADLOCK ? "circular wait" : "a hand-off that will never arrive") +
                ": no CTA can make progress (" + std::to_string(spinning) + " resident CTAs spin: " + sum + "; " +
                std::to_string(P_ - next_admit_) + " CTAs not yet resident, " + std::to_string(finished_) +
                " finished). Wait-for chain:\n" + chain,
         seen_ctas, last);
}

// The watchdog's verdict, also for a hang whose own detector is off: a run that cannot go on is
// never left spinning, whether or not the step budget is on.
void Machine::no_progress(const std::string& why) {
    fail(Detector::watchdog, why.empty() ? "no CTA completed a wait or an instruction in " +
                                               std::to_string(opt_.watchdog_steps) + " scheduler steps"
                                         : "no CTA can complete a wait or an instruction any more: " + why,
         {});
}

MailboxRef Machine::awaited(int c) const {
    const Cta& x = ctas_[size_t(c)];
    const auto& waits = plan_.waits(c, int(x.pc));
    for (size_t k = x.wpos; k < waits.size(); ++k) {
        const MailboxRef e = waits[k].entry;
        if (!x.acquired[size_t(e.box)][size_t(e.entry)] && !entry_ready(c, e)) return e;
    }
    return waits.empty() ? MailboxRef{Mailbox::count, 0} : waits[x.wpos].entry;
}

}  // namespace detail

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
