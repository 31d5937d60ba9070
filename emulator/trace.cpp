// The run as Chrome / Perfetto trace events (emulator/trace.hpp, docs/emulator.md, "Traces").
#include "emulator/trace.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/version.hpp"

namespace monokda::emu {

using ojson = nlohmann::ordered_json;

namespace {

const char* span_name(Span::Kind k) { return k == Span::wait ? "spin" : "wait for own weight loads"; }

}  // namespace

std::string trace_json(const Plan& plan, const MachineResult& r, const std::string& title) {
    ojson ev = ojson::array();
    const int B = plan.blocks();
    // the launches: a process each
    int steps = std::max(r.steps_done, 1);
    for (const Event& e : r.history) steps = std::max(steps, int(e.step) + 1);
    for (int k = 0; k < steps; ++k) {
        const std::string epoch = size_t(k) < r.epochs.size() ? ", epoch " + std::to_string(r.epochs[size_t(k)]) : "";
        ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", k + 1}, {"args", {{"name", "launch " + std::to_string(k) + epoch}}}});
        ev.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", k + 1}, {"args", {{"sort_index", k}}}});
        for (int c = 0; c < B; ++c) {
            const std::string n = plan.cta_name(c) + " (" + to_string(plan.first_role(c)) + ")";
            ev.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", k + 1}, {"tid", c}, {"args", {{"name", n}}}});
            ev.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", k + 1}, {"tid", c}, {"args", {{"sort_index", c}}}});
        }
    }
    auto instr_name = [&](int cta, int i) { return plan.describe(plan.instrs(cta)[size_t(i)]); };
    auto role = [&](int cta, int i) { return to_string(role_of(plan.instrs(cta)[size_t(i)].opcode())); };
    // what each spin waited for: the history's spin events, by (step, CTA, instruction, tick)
    std::map<std::tuple<int, int, int, int64_t>, MailboxRef> spun;
    for (const Event& e : r.history)
        if (e.kind == EventKind::spin) spun[{e.step, e.cta, e.instr, e.tick}] = e.entry;
    // the instructions, and inside them their spins and stalls
    for (const Span& s : r.spans) {
        ojson x = {{"ph", "X"}, {"pid", s.step + 1}, {"tid", s.cta}, {"ts", s.t0}, {"dur", s.t1 - s.t0}};
        if (s.kind == Span::run) {
            x["name"] = instr_name(s.cta, s.instr);
            x["cat"] = role(s.cta, s.instr);
            x["args"] = {{"instr", s.instr}, {"step", s.step}};
        } else {
            x["name"] = span_name(s.kind);
            x["cat"] = s.kind == Span::wait ? "spin" : "stall";
            ojson args = {{"instr", s.instr}, {"in", instr_name(s.cta, s.instr)}};
            const auto it = spun.find({s.step, s.cta, s.instr, s.t0});
            if (it != spun.end()) {
                args["on"] = plan.entry_name(it->second);
                x["name"] = "spin on " + plan.entry_name(it->second);
            }
            x["args"] = args;
        }
        ev.push_back(x);
    }
    // flows: each store of an entry to every poll of it that accepted it in the same launch
    std::map<std::tuple<int, int, int>, const Event*> stored;  // (step, box, entry) -> its store
    int64_t flow = 0;
    for (const Event& e : r.history) {
        if (e.kind == EventKind::store) stored[{e.step, int(e.entry.box), e.entry.entry}] = &e;
        if (e.kind != EventKind::acquire) continue;
        const auto it = stored.find({e.step, int(e.entry.box), e.entry.entry});
        if (it == stored.end()) continue;  // accepted without a store of this launch (a stale read: the verdict says so)
        const Event& st = *it->second;
        const std::string n = plan.entry_name(e.entry);
        ++flow;
        ev.push_back({{"ph", "s"}, {"id", flow}, {"name", n}, {"cat", "handoff"}, {"pid", st.step + 1}, {"tid", st.cta}, {"ts", st.tick}});
        ev.push_back({{"ph", "f"}, {"bp", "e"}, {"id", flow}, {"name", n}, {"cat", "handoff"}, {"pid", e.step + 1}, {"tid", e.cta}, {"ts", e.tick}});
    }
    // where each CTA stopped (a failing run): its open instruction and spin, and an instant event
    if (r.verdict != Verdict::PASS) {
        const int step = steps - 1;
        struct Last { int begin_instr = -1; int64_t begin_t = 0; const Event* spin = nullptr; bool admitted = false, done = false; };
        std::vector<Last> last(static_cast<size_t>(B));
        for (const Event& e : r.history) {
            if (e.step != step || e.cta < 0 || e.cta >= B) continue;
            Last& l = last[size_t(e.cta)];
            switch (e.kind) {
                case EventKind::admit: l.admitted = true; break;
                case EventKind::begin: l.begin_instr = e.instr, l.begin_t = e.tick, l.spin = nullptr; break;
                case EventKind::spin: l.spin = &e; break;
                case EventKind::acquire: if (l.spin && l.spin->entry == e.entry) l.spin = nullptr; break;
                case EventKind::finish: l.begin_instr = -1, l.spin = nullptr; break;
                case EventKind::done: l.done = true; break;
                default: break;
            }
        }
        const int64_t end = std::max<int64_t>(r.ticks, 1);
        for (int c = 0; c < B; ++c) {
            const Last& l = last[size_t(c)];
            std::string where;
            if (!l.admitted) where = "not resident (never given a place)";
            else if (l.done) where = "finished";
            else if (l.begin_instr < 0) where = "between instructions";
            else {
                where = "in " + instr_name(c, l.begin_instr);
                ev.push_back({{"ph", "X"}, {"name", instr_name(c, l.begin_instr) + " (stopped)"}, {"cat", role(c, l.begin_instr)},
                              {"pid", step + 1}, {"tid", c}, {"ts", l.begin_t}, {"dur", std::max<int64_t>(end - l.begin_t, 1)},
                              {"args", {{"instr", l.begin_instr}, {"step", step}, {"stopped", true}}}});
                if (l.spin) {
                    where += ", spinning on " + plan.entry_name(l.spin->entry);
                    ev.push_back({{"ph", "X"}, {"name", "spin on " + plan.entry_name(l.spin->entry) + " (stopped)"}, {"cat", "spin"},
                                  {"pid", step + 1}, {"tid", c}, {"ts", l.spin->tick}, {"dur", std::max<int64_t>(end - l.spin->tick, 1)},
                                  {"args", {{"instr", l.begin_instr}, {"on", plan.entry_name(l.spin->entry)}, {"stopped", true}}}});
                }
            }
            ev.push_back({{"ph", "i"}, {"s", "t"}, {"name", "stopped: " + where}, {"cat", "stop"}, {"pid", step + 1}, {"tid", c},
                          {"ts", end}, {"args", {{"verdict", to_string(r.verdict)}}}});
        }
    }
    ojson doc = {{"traceEvents", ev},
                 {"displayTimeUnit", "ns"},
                 {"otherData", {{"title", title}, {"verdict", to_string(r.verdict)}, {"detail", r.detail},
                                {"time", "emulator ticks, shown as microseconds"},
                                {"monokda_version", version()}, {"monokda_commit", monokda::commit()}}}};
    return doc.dump() + "\n";
}

}  // namespace monokda::emu
