// The hand-off sites of a PTX module (ordering.hpp's summarize): each access to the flags or the
// tagged mailboxes with its semantics and what surrounds it (a fence after a read, a fence and a CTA
// barrier before a write, the peek's dominating acquire), each cp.async wait with its count, and each
// poll loop with what bounds it.
#include <algorithm>
#include <set>

#include "kernels/ordering/flow.hpp"
#include "kernels/ordering/ordering.hpp"
#include "kernels/kda_ordering.hpp"

namespace monokda::ordering {

namespace {

using ptx::Block;
using ptx::Flow;
using ptx::Instr;

enum class Space { global, generic, other };

Space space_of(const Instr& in) {
    for (const std::string& p : in.parts) {
        if (p == "global") return Space::global;
        if (p.compare(0, 6, "shared") == 0 || p == "local" || p == "param" || p == "const") return Space::other;
    }
    return Space::generic;
}

bool is_access(const Instr& in) {
    const std::string& b = in.base();
    return (b == "ld" || b == "ldu" || b == "st" || b == "atom" || b == "red") && space_of(in) != Space::other;
}
bool is_write(const Instr& in) { return in.base() == "st" || in.base() == "atom" || in.base() == "red"; }
const std::string& address_of(const Instr& in) {
    static const std::string none;
    const bool first = in.base() == "st" || in.base() == "red";
    const size_t k = first ? 0 : 1;
    return k < in.args.size() ? in.args[k] : none;
}

// "acquire.gpu", "relaxed.sys", "volatile", "weak" (atomics default to relaxed.gpu)
std::string semantics(const Instr& in) {
    std::string sem, scope;
    for (const std::string& p : in.parts) {
        if (p == "volatile" || p == "mmio") return p;
        if (p == "relaxed" || p == "acquire" || p == "release" || p == "acq_rel" || p == "weak") sem = p;
        if (p == "cta" || p == "cluster" || p == "gpu" || p == "sys") scope = p;
    }
    const bool atomic = in.base() == "atom" || in.base() == "red";
    if (sem.empty()) sem = atomic ? "relaxed" : "weak";
    if (sem == "weak") return sem;
    return sem + "." + (scope.empty() ? "gpu" : scope);
}

// "u32", "v4.u32", "b64"
std::string type_of(const Instr& in) {
    std::string vec;
    for (const std::string& p : in.parts)
        if (p == "v2" || p == "v4" || p == "v8") vec = p + ".";
    return vec + in.parts.back();
}

bool is_gpu_fence(const Instr& in) {
    const std::string& b = in.base();
    if (b == "membar") return in.has("gl") || in.has("sys");
    if (b != "fence" || in.has("proxy") || in.op.find("mbarrier_init") != std::string::npos) return false;
    return (in.has("acq_rel") || in.has("sc") || in.parts.size() == 2) && (in.has("gpu") || in.has("sys"));
}

bool is_cta_barrier(const Instr& in) {
    const std::string& b = in.base();
    if (b == "bar" || b == "barrier") {
        if (in.has("warp") || in.has("arrive")) return false;
        return in.parts.size() == 1 || in.has("sync") || in.has("red") || in.has("wait") || in.has("cta");
    }
    return false;
}

// the registers an operand names for the taint below: "%r1" and scoped inline-asm names ("p")
std::vector<std::string> names_in(const std::string& operand) {
    if (operand.find('%') != std::string::npos) return ptx::registers_of(operand);
    if (operand.empty() || !(isalpha(static_cast<unsigned char>(operand[0])) || operand[0] == '_')) return {};
    for (char c : operand)
        if (!(isalnum(static_cast<unsigned char>(c)) || c == '_')) return {};
    return {operand};
}

bool writes_first_operand(const Instr& in) {
    static const std::set<std::string> none = {"st", "red", "bar", "barrier", "bra", "ret", "exit", "fence", "membar",
                                               "nanosleep", "prefetch", "cp", "call", "trap", "setmaxnreg", "tensormap"};
    return !in.args.empty() && !none.count(in.base()) && in.args[0][0] != '[';
}

class Extractor {
public:
    Extractor(const ptx::Module& m, const ptx::Function& f, const Layout& layout)
        : m_(m), f_(f), flow_(f), layout_(layout) {}

    std::vector<Site> run() {
        std::vector<Site> out;
        for (size_t b = 0; b < f_.blocks.size(); ++b) {
            if (!flow_.reachable(int(b))) continue;
            const Block& blk = f_.blocks[b];
            for (size_t i = 0; i < blk.ins.size(); ++i) access_site(int(b), int(i), out);
        }
        poll_sites(out);
        std::stable_sort(out.begin(), out.end(), [](const Site& x, const Site& y) { return x.line < y.line; });
        return out;
    }

    // flags | tagged | error | a hand-off's name | input | unknown | mixed
    std::string memory_of(const Instr& in) const {
        const auto fields = flow_.fields_of_address(address_of(in));
        std::set<std::string> names;
        for (const auto& [param, off] : fields) {
            if (param != 0) continue;
            const auto it = layout_.field_at.find(off);
            names.insert(it == layout_.field_at.end() ? "input" : it->second);
        }
        if (names.empty()) return "unknown";
        if (names.size() > 1) return "mixed";
        return *names.begin();
    }

private:
    bool is_data(const std::string& mem) const {
        return mem != "flags" && mem != "tagged" && mem != "error" && mem != "arrivals" && mem != "trace";
    }

    Site site(const std::string& kind, const std::string& memory, const Instr& in) const {
        Site s;
        s.kind = kind, s.memory = memory, s.line = in.line;
        const std::vector<std::string> chain = m_.where(f_, in);
        for (size_t k = 0; k < chain.size(); ++k) {
            if (k + 1 == chain.size() && chain[k] == ptx::short_name(f_.name) && k > 0) break;  // the kernel itself
            s.where += (s.where.empty() ? "" : "<") + chain[k];
        }
        if (s.where.empty()) s.where = ptx::short_name(f_.name);
        return s;
    }

    void access_site(int b, int i, std::vector<Site>& out) const {
        const Instr& in = f_.blocks[size_t(b)].ins[size_t(i)];
        if (in.base() == "cp" && in.op.compare(0, 8, "cp.async") == 0 &&
            (in.has("wait_group") || in.has("wait_all"))) {
            Site s = site("wait", "cp.async", in);
            s.facts["op"] = in.op;
            s.facts["pending"] = in.has("wait_all") || in.args.empty() ? "0" : in.args[0];
            out.push_back(s);
            return;
        }
        if (!is_access(in)) return;
        const std::string mem = memory_of(in), sem = semantics(in);
        if (mem == "flags" || mem == "tagged") {
            Site s = site(is_write(in) ? "write" : "read", mem, in);
            s.facts["sem"] = sem;
            s.facts["type"] = type_of(in);
            if (!is_write(in)) {
                if (mem == "flags" && in.marker == "peek") s.facts["peek"] = peek_reread(b) ? "reread" : "alone";
                if (mem == "flags" && sem != "acquire.gpu" && sem != "acquire.sys" && fence_after(b, i))
                    s.facts["fence"] = "after";
            } else if (mem == "flags") {
                if (fence_before(b, i)) s.facts["fence"] = "before";
                s.facts["barrier"] = barrier_before(b, i) ? "yes" : "no";
            }
            out.push_back(s);
        } else if ((mem == "unknown" || mem == "mixed") && sem != "weak") {
            Site s = site("untraced", mem, in);
            s.facts["op"] = in.op;
            out.push_back(s);
        }
    }

    bool is_flag_acquire(const Instr& in) const {
        return in.base() == "ld" && is_access(in) && memory_of(in) == "flags" &&
               (semantics(in) == "acquire.gpu" || semantics(in) == "acquire.sys");
    }

    // An enclosing loop re-reads the flags with acquire on its next turn: an acquire read of the
    // flags in its body, outside the loops nested in it that hold the peek, reachable from the peek
    // within the loop. (Not dominance: the acquire may be guarded by the lane's share, as the XRDY
    // prefix's is, where the peeking lane always has one.)
    bool peek_reread(int b) const {
        const std::vector<int> outer = flow_.loops_of(b);
        for (size_t j = 0; j < outer.size(); ++j) {
            const ptx::Loop& l = flow_.loops()[size_t(outer[j])];
            std::vector<bool> seen(f_.blocks.size(), false);
            std::vector<int> work{b};
            seen[size_t(b)] = true;
            while (!work.empty()) {
                const int a = work.back();
                work.pop_back();
                bool inner = false;
                for (size_t k = 0; k < j; ++k) inner = inner || flow_.loops()[size_t(outer[k])].body[size_t(a)];
                if (!inner)
                    for (const Instr& in : f_.blocks[size_t(a)].ins)
                        if (is_flag_acquire(in)) return true;
                for (int s : f_.blocks[size_t(a)].succ)
                    if (l.body[size_t(s)] && !seen[size_t(s)]) seen[size_t(s)] = true, work.push_back(s);
            }
        }
        return false;
    }

    // every path from the read meets a gpu-scope fence before it touches data, meets a barrier, or ends
    bool fence_after(int b, int i) const {
        std::vector<bool> seen(f_.blocks.size(), false);
        std::vector<std::pair<int, int>> work{{b, i + 1}};
        while (!work.empty()) {
            auto [blk, k] = work.back();
            work.pop_back();
            const auto& ins = f_.blocks[size_t(blk)].ins;
            bool ended = false;
            for (; size_t(k) < ins.size() && !ended; ++k) {
                const Instr& in = ins[size_t(k)];
                if (is_gpu_fence(in)) ended = true;
                else if (is_cta_barrier(in)) return false;
                else if ((is_access(in) && is_data(memory_of(in))) || (in.base() == "cp" && in.has("global"))) return false;
            }
            if (ended) continue;
            for (int s : f_.blocks[size_t(blk)].succ)
                if (!seen[size_t(s)]) seen[size_t(s)] = true, work.push_back({s, 0});
        }
        return true;
    }

    // a gpu-scope fence right before the store, in its block, with no global access between
    bool fence_before(int b, int i) const {
        const auto& ins = f_.blocks[size_t(b)].ins;
        for (int k = i - 1; k >= 0; --k) {
            if (is_gpu_fence(ins[size_t(k)])) return true;
            if (is_access(ins[size_t(k)])) return false;
        }
        return false;
    }

    // every path back from the store meets a CTA barrier before any store to hand-off data
    bool barrier_before(int b, int i) const {
        std::vector<bool> seen(f_.blocks.size(), false);
        std::vector<std::pair<int, int>> work{{b, i - 1}};
        while (!work.empty()) {
            auto [blk, k] = work.back();
            work.pop_back();
            const auto& ins = f_.blocks[size_t(blk)].ins;
            bool stopped = false;
            for (; k >= 0 && !stopped; --k) {
                const Instr& in = ins[size_t(k)];
                if (is_cta_barrier(in)) stopped = true;
                else if (is_access(in) && is_write(in) && is_data(memory_of(in)) && memory_of(in) != "input") return false;
            }
            if (stopped) continue;
            for (int p : f_.blocks[size_t(blk)].pred)
                if (flow_.reachable(p) && !seen[size_t(p)])
                    seen[size_t(p)] = true, work.push_back({p, int(f_.blocks[size_t(p)].ins.size()) - 1});
        }
        return true;
    }

    bool is_poll_read(const Instr& in) const {
        if (in.base() == "mbarrier") return in.has("try_wait") || in.has("test_wait");
        if (in.base() != "ld" || !is_access(in)) return false;
        const std::string mem = memory_of(in);
        return mem == "flags" || mem == "tagged" || ((mem == "unknown" || mem == "mixed") && semantics(in) != "weak");
    }
    std::string poll_memory(const Instr& in) const { return in.base() == "mbarrier" ? "mbarrier" : memory_of(in); }

    // What loop l polls: the memories of reads in it whose value decides a branch out of the loop or
    // back to its header (a register taint within the loop's blocks). Empty: it polls nothing.
    std::set<std::string> polled(const ptx::Loop& l, const Instr** first) const {
        std::set<std::string> tainted;
        std::map<std::string, std::set<std::string>> origin;  // register -> memories it came from
        for (size_t a = 0; a < f_.blocks.size(); ++a)
            if (l.body[a])
                for (const Instr& in : f_.blocks[a].ins)
                    if (is_poll_read(in) && writes_first_operand(in))
                        for (const std::string& r : names_in(in.args[0])) origin[r].insert(poll_memory(in));
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t a = 0; a < f_.blocks.size(); ++a) {
                if (!l.body[a]) continue;
                for (const Instr& in : f_.blocks[a].ins) {
                    if (!writes_first_operand(in)) continue;
                    std::set<std::string> from;
                    for (size_t k = 1; k < in.args.size(); ++k)
                        for (const std::string& r : names_in(in.args[k]))
                            if (origin.count(r)) from.insert(origin[r].begin(), origin[r].end());
                    if (from.empty()) continue;
                    for (const std::string& r : names_in(in.args[0])) {
                        auto& o = origin[r];
                        const size_t before = o.size();
                        o.insert(from.begin(), from.end());
                        changed = changed || o.size() != before;
                    }
                }
            }
        }
        std::set<std::string> out;
        for (size_t a = 0; a < f_.blocks.size(); ++a) {
            if (!l.body[a] || f_.blocks[a].ins.empty()) continue;
            const Instr& last = f_.blocks[a].ins.back();
            if (last.base() != "bra" || last.guard.empty()) continue;
            bool leaves = false;
            for (int s : f_.blocks[a].succ) leaves = leaves || !l.body[size_t(s)] || s == l.header;
            const std::string g = last.guard[0] == '!' ? last.guard.substr(1) : last.guard;
            const auto it = origin.find(g);
            if (leaves && it != origin.end()) out.insert(it->second.begin(), it->second.end());
        }
        if (!out.empty() && first)
            for (size_t a = 0; a < f_.blocks.size() && !*first; ++a)
                if (l.body[a])
                    for (const Instr& in : f_.blocks[a].ins)
                        if (is_poll_read(in) && out.count(poll_memory(in))) {
                            *first = &in;
                            break;
                        }
        return out;
    }

    void poll_sites(std::vector<Site>& out) const {
        const auto& loops = flow_.loops();
        std::vector<bool> sleeps(loops.size(), false);
        std::vector<const Instr*> first_sleep(loops.size(), nullptr);
        for (size_t li = 0; li < loops.size(); ++li)
            for (size_t a = 0; a < f_.blocks.size() && !sleeps[li]; ++a)
                if (loops[li].body[a])
                    for (const Instr& in : f_.blocks[a].ins)
                        if (in.base() == "nanosleep") {
                            sleeps[li] = true, first_sleep[li] = &in;
                            break;
                        }
        for (size_t li = 0; li < loops.size(); ++li) {
            const ptx::Loop& l = loops[li];
            // a paused loop with a paused loop inside is that loop's peeled first round, not a poll of its own
            bool nested_sleeper = false;
            for (size_t k = 0; k < loops.size(); ++k)
                if (k != li && sleeps[k] && l.body[size_t(loops[k].header)] && loops[k].size < l.size)
                    nested_sleeper = true;
            if (nested_sleeper) continue;
            const Instr* first = nullptr;
            const std::set<std::string> mems = polled(l, &first);
            if (!sleeps[li] && mems.empty()) continue;
            bool clock = false, error = false;
            for (size_t a = 0; a < f_.blocks.size(); ++a) {
                if (!l.body[a]) continue;
                for (const Instr& in : f_.blocks[a].ins) {
                    for (const std::string& arg : in.args)
                        clock = clock || arg == "%globaltimer" || arg == "%globaltimer_lo" || arg == "%clock64" ||
                                arg == "%clock";
                    error = error || (in.base() == "ld" && is_access(in) && memory_of(in) == "error");
                }
            }
            std::string what;
            for (const std::string& mm : mems) what += (what.empty() ? "" : "+") + mm;
            Site s = site("poll", what.empty() ? "nothing" : what, first ? *first : *first_sleep[li]);
            s.facts["pause"] = sleeps[li] ? "yes" : "no";
            s.facts["clock"] = clock ? "yes" : "no";
            s.facts["error"] = error ? "yes" : "no";
            out.push_back(s);
        }
    }

    const ptx::Module& m_;
    const ptx::Function& f_;
    Flow flow_;
    const Layout& layout_;
};

}  // namespace

Summary summarize(const ptx::Module& m, const Layout& layout, const std::string& source) {
    Summary s;
    s.source = source;
    s.compiler = m.compiler;
    for (const ptx::Function& f : m.fns) {
        Entry e;
        e.name = f.entry ? ptx::entry_name(f.name) : ptx::short_name(f.name);
        for (Site& site : Extractor(m, f, layout).run()) {
            // identical lines merged, in order of first appearance
            auto same = [&](const Site& o) {
                return o.kind == site.kind && o.memory == site.memory && o.facts == site.facts && o.where == site.where;
            };
            const auto it = std::find_if(e.sites.begin(), e.sites.end(), same);
            if (it == e.sites.end()) e.sites.push_back(site);
            else ++it->n;
        }
        if (!e.sites.empty() || f.entry) s.entries.push_back(e);
    }
    return s;
}

}  // namespace monokda::ordering
