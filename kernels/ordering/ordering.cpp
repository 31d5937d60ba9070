// The ordering check's layout, its summary file (one line a site: "KIND MEMORY key=value ... at=WHERE
// n=N") and its rules, which read nothing but kernels/kda_ordering.hpp and the sites' facts.
#include "kernels/ordering/ordering.hpp"

#include <sstream>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "kernels/kda_ordering.hpp"

namespace monokda::ordering {

namespace {

constexpr const char* kMagic = "ptx-ordering 1";

bool listed(const char* list, const std::string& word) {
    std::istringstream is(list);
    std::string w;
    while (is >> w)
        if (w == word) return true;
    return false;
}

const MemoryRule& rule_for(const std::string& memory) {
    for (const MemoryRule& r : kMemoryRules)
        if (memory == r.memory) return r;
    throw BadInput("kernels/kda_ordering.hpp has no rule for memory '" + memory + "'");
}

// bits of "u64", "v4.u32", "b64"
int bits_of(const std::string& type) {
    int vec = 1;
    std::string t = type;
    if (t.size() > 3 && t[0] == 'v' && t[2] == '.') vec = t[1] - '0', t = t.substr(3);
    return vec * std::atoi(t.c_str() + 1);
}

bool is_single(const std::string& type) { return type.size() < 2 || type[0] != 'v' || !isdigit(static_cast<unsigned char>(type[1])); }

void add(std::vector<Violation>& out, Rule r, const Entry& e, const Site& s, const std::string& msg) {
    out.push_back({r, e.name, s.where, msg, s.line, s.n});
}

void check_read(const Entry& e, const Site& s, std::vector<Violation>& out) {
    const MemoryRule& r = rule_for(s.memory);
    const std::string sem = s.fact("sem"), type = s.fact("type");
    if (s.memory == "flags") {
        if (listed(r.reads, sem)) return;
        if (s.fact("peek") == "reread") return;
        if (s.fact("peek") == "alone")
            return add(out, Rule::PEEK_UNCHECKED, e, s,
                       "a peek (" + sem + " flag read marked " + kPeekMarker +
                           ") in no loop that re-reads the flags with acquire on its next turn: nothing re-reads the flag "
                           "with acquire before what it guards is read");
        if ((sem == "relaxed.gpu" || sem == "relaxed.sys" || sem == "volatile") && s.fact("fence") == "after") return;
        return add(out, Rule::FLAG_READ_RELAXED, e, s,
                   "reads a flag with a " + sem + " load and no gpu-scope fence after it: what the flag guards may be read "
                   "before the producer's writes are visible (" + r.why + ")");
    }
    if (!listed(r.reads, sem) || bits_of(type) != r.bits || !is_single(type))
        add(out, Rule::TAGGED_READ_WEAK, e, s,
            "reads a tagged pair with a " + sem + " " + type + " load (" + r.why + ")");
}

void check_write(const Entry& e, const Site& s, std::vector<Violation>& out) {
    const MemoryRule& r = rule_for(s.memory);
    const std::string sem = s.fact("sem"), type = s.fact("type");
    if (s.memory == "tagged") {
        if (!listed(r.writes, sem) || bits_of(type) != r.bits || !is_single(type))
            add(out, Rule::TAGGED_WRITE_WEAK, e, s, "stores a tagged pair with a " + sem + " " + type + " store (" + r.why + ")");
        return;
    }
    const bool fenced = (sem == "relaxed.gpu" || sem == "relaxed.sys" || sem == "volatile") && s.fact("fence") == "before";
    if (!listed(r.writes, sem) && !fenced)
        add(out, Rule::FLAG_WRITE_UNRELEASED, e, s,
            "sets a flag with a " + sem + " store and no gpu-scope fence before it: the data it guards may become visible "
            "after the flag (" + r.why + ")");
    if (s.fact("barrier") == "no")
        add(out, Rule::FLAG_WRITE_BEFORE_BARRIER, e, s,
            "sets a flag on a path from a store to hand-off data with no CTA barrier between: the other threads' share of "
            "what it guards may not be written yet");
}

void check_wait(const Entry& e, const Site& s, std::vector<Violation>& out) {
    const int pending = std::atoi(s.fact("pending").c_str());
    for (int w : kCpAsyncWaits)
        if (w == pending) return;
    const int stages = kGemvRingStagesNvidia;
    std::string msg = s.fact("op") + " " + s.fact("pending") + ": the contract allows " + std::to_string(kCpAsyncWaits[0]) +
                      " or " + std::to_string(kCpAsyncWaits[1]) + " pending groups (a ring of " + std::to_string(stages) +
                      " stages)";
    if (pending >= stages) msg += "; " + s.fact("pending") + " leaves the slice about to be read in flight (" +
                                  std::to_string(pending - stages + 1) + " stage" + (pending > stages ? "s" : "") + " short)";
    add(out, Rule::RING_WAIT, e, s, msg);
}

}  // namespace

Layout Layout::from(const ptx::Module& m, const std::string& what) {
    Layout l;
    std::vector<std::string> need = {"flags", "tagged", "error"};
    for (int h = 0; h < int(HandOff::count); ++h) need.push_back(to_string(HandOff(h)));
    const std::string prefix = "monokda_layout_";
    for (const auto& [name, value] : m.globals)
        if (name.compare(0, prefix.size(), prefix) == 0) l.field_at[value] = name.substr(prefix.size());
    for (const std::string& n : need) {
        bool found = false;
        for (const auto& [off, name] : l.field_at) found = found || name == n;
        if (!found)
            bad_input(what + ": no offset for KdaArgs::" + n + " (a global " + prefix + n +
                      "): give the layout probe's PTX (kernels/ordering/layout_probe.cu) with --layout");
    }
    return l;
}

const char* to_string(Rule r) {
    switch (r) {
        case Rule::FLAG_READ_RELAXED: return "FLAG_READ_RELAXED";
        case Rule::PEEK_UNCHECKED: return "PEEK_UNCHECKED";
        case Rule::TAGGED_READ_WEAK: return "TAGGED_READ_WEAK";
        case Rule::FLAG_WRITE_UNRELEASED: return "FLAG_WRITE_UNRELEASED";
        case Rule::FLAG_WRITE_BEFORE_BARRIER: return "FLAG_WRITE_BEFORE_BARRIER";
        case Rule::TAGGED_WRITE_WEAK: return "TAGGED_WRITE_WEAK";
        case Rule::RING_WAIT: return "RING_WAIT";
        case Rule::POLL_UNBOUNDED: return "POLL_UNBOUNDED";
        case Rule::UNTRACED_ACCESS: return "UNTRACED_ACCESS";
    }
    return "?";
}

std::vector<Violation> check(const Summary& s) {
    std::vector<Violation> out;
    for (const Entry& e : s.entries)
        for (const Site& site : e.sites) {
            if (site.kind == "read") check_read(e, site, out);
            else if (site.kind == "write") check_write(e, site, out);
            else if (site.kind == "wait") check_wait(e, site, out);
            else if (site.kind == "poll" && (site.fact("clock") != "yes" || site.fact("error") != "yes"))
                add(out, Rule::POLL_UNBOUNDED, e, site,
                    std::string("a poll of ") + site.memory + " that " +
                        (site.fact("clock") != "yes" ? "never reads the clock (it cannot time out)"
                                                     : "never reads the error word (it cannot see another CTA give up)"));
            else if (site.kind == "untraced")
                add(out, Rule::UNTRACED_ACCESS, e, site,
                    site.fact("op") + " on an address the check cannot trace to a kernel argument (" + site.memory +
                        "): which memory it orders is unknown");
        }
    return out;
}

std::string format_violation(const Violation& v) {
    std::string s = std::string(to_string(v.rule)) + " " + v.entry + " at " + v.where;
    if (v.n > 1) s += " (" + std::to_string(v.n) + " sites)";
    if (v.line > 0) s += " (PTX line " + std::to_string(v.line) + ")";
    return s + ": " + v.message;
}

std::string format_summary(const Summary& s) {
    std::ostringstream o;
    o << kMagic << "\n";
    o << "# kda_pre's hand-off sites as nvcc compiled them, one line a site (docs/kernel.md, \"Memory ordering\"):\n";
    o << "# a flag or tagged read or write with its semantics, a cp.async wait with its count, a poll loop with\n";
    o << "# what bounds it; n: identical sites. Regenerated by `ninja ptx-ordering-update`; checked against\n";
    o << "# kernels/kda_ordering.hpp by `monokda-ptx-ordering check` (CTest ordering/test_kernel_ordering).\n";
    o << "source " << s.source << "\n";
    if (!s.compiler.empty()) o << "compiler " << s.compiler << "\n";
    for (const Entry& e : s.entries) {
        o << "entry " << e.name << "\n";
        for (const Site& site : e.sites) {
            o << "  " << site.kind << " " << site.memory;
            for (const auto& [k, v] : site.facts) o << " " << k << "=" << v;
            o << " at=" << site.where << " n=" << site.n << "\n";
        }
    }
    return o.str();
}

Summary parse_summary(const std::string& text, const std::string& what) {
    Summary s;
    std::istringstream is(text);
    std::string line;
    int n = 0;
    auto fail = [&](const std::string& why) { bad_input(what + ":" + std::to_string(n) + ": " + why); };
    static const char* kKinds[] = {"read", "write", "wait", "poll", "untraced"};
    while (std::getline(is, line)) {
        ++n;
        if (n == 1) {
            if (line != kMagic) fail("not a PTX ordering summary (the first line must be '" + std::string(kMagic) + "')");
            continue;
        }
        std::istringstream ls(line);
        std::string word;
        if (!(ls >> word) || word[0] == '#') continue;
        if (word == "source" || word == "compiler") {
            std::string rest;
            std::getline(ls, rest);
            (word == "source" ? s.source : s.compiler) = rest.empty() ? "" : rest.substr(1);
        } else if (word == "entry") {
            Entry e;
            if (!(ls >> e.name)) fail("an entry without a name");
            s.entries.push_back(e);
        } else {
            bool kind = false;
            for (const char* k : kKinds) kind = kind || word == k;
            if (!kind) fail("unknown line '" + word + "'");
            if (s.entries.empty()) fail("a site before any entry");
            Site site;
            site.kind = word;
            if (!(ls >> site.memory) || site.memory.find('=') != std::string::npos) fail("a site without its memory");
            while (ls >> word) {
                const size_t eq = word.find('=');
                if (eq == std::string::npos || eq == 0) fail("'" + word + "' is not key=value");
                const std::string k = word.substr(0, eq), v = word.substr(eq + 1);
                if (k == "at") site.where = v;
                else if (k == "n") {
                    site.n = std::atoi(v.c_str());
                    if (site.n < 1 || std::to_string(site.n) != v) fail("n must be a positive count (got '" + v + "')");
                } else {
                    site.facts[k] = v;
                }
            }
            if (site.where.empty()) fail("a site without at=");
            if ((site.kind == "read" || site.kind == "write") && site.memory != "flags" && site.memory != "tagged")
                fail("a " + site.kind + " of '" + site.memory + "' (flags or tagged)");
            s.entries.back().sites.push_back(site);
        }
    }
    if (n == 0) bad_input(what + ": empty, not a PTX ordering summary");
    return s;
}

}  // namespace monokda::ordering
