// Dominators (Cooper, Harvey and Kennedy's iterative form over reverse postorder), natural loops
// from back edges, and a flow-insensitive trace of address registers to the kernel's .param fields.
#include "kernels/ordering/flow.hpp"

#include <algorithm>
#include <cstdlib>

namespace monokda::ptx {

namespace {

// "[%rd4+8]" -> ("%rd4", 8); "[sym]" -> ("sym", 0); "[%rd1+-8]" -> ("%rd1", -8)
std::pair<std::string, int64_t> base_and_offset(const std::string& operand) {
    std::string s = operand;
    if (!s.empty() && s.front() == '[') s = s.substr(1);
    if (!s.empty() && s.back() == ']') s.pop_back();
    const size_t plus = s.find('+');
    if (plus == std::string::npos) return {s, 0};
    return {s.substr(0, plus), std::strtoll(s.c_str() + plus + 1, nullptr, 0)};
}

bool is_int(const std::string& s) {
    if (s.empty()) return false;
    char* end = nullptr;
    std::strtoll(s.c_str(), &end, 0);
    return end && *end == 0;
}

}  // namespace

Flow::Flow(const Function& f) : f_(f) {
    dominators();
    find_loops();
    provenance();
}

void Flow::dominators() {
    const int n = int(f_.blocks.size());
    idom_.assign(size_t(n), -1);
    rpo_index_.assign(size_t(n), -1);
    if (n == 0) return;
    // postorder by an explicit stack (the kernel has thousands of blocks)
    std::vector<int> post, next(size_t(n), 0);
    std::vector<bool> seen(size_t(n), false);
    std::vector<int> stack{0};
    seen[0] = true;
    while (!stack.empty()) {
        const int b = stack.back();
        const auto& succ = f_.blocks[size_t(b)].succ;
        if (next[size_t(b)] < int(succ.size())) {
            const int s = succ[size_t(next[size_t(b)]++)];
            if (!seen[size_t(s)]) seen[size_t(s)] = true, stack.push_back(s);
        } else {
            post.push_back(b), stack.pop_back();
        }
    }
    std::vector<int> rpo(post.rbegin(), post.rend());
    for (size_t i = 0; i < rpo.size(); ++i) rpo_index_[size_t(rpo[i])] = int(i);
    idom_[0] = 0;
    auto intersect = [&](int a, int b) {
        while (a != b) {
            while (rpo_index_[size_t(a)] > rpo_index_[size_t(b)]) a = idom_[size_t(a)];
            while (rpo_index_[size_t(b)] > rpo_index_[size_t(a)]) b = idom_[size_t(b)];
        }
        return a;
    };
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 1; i < rpo.size(); ++i) {
            const int b = rpo[i];
            int nd = -1;
            for (int p : f_.blocks[size_t(b)].pred) {
                if (idom_[size_t(p)] < 0) continue;
                nd = nd < 0 ? p : intersect(p, nd);
            }
            if (nd >= 0 && idom_[size_t(b)] != nd) idom_[size_t(b)] = nd, changed = true;
        }
    }
}

bool Flow::dominates(int a, int b) const {
    if (!reachable(a) || !reachable(b)) return false;
    for (;;) {
        if (a == b) return true;
        if (b == 0) return false;
        b = idom_[size_t(b)];
    }
}

void Flow::find_loops() {
    const int n = int(f_.blocks.size());
    std::map<int, size_t> by_header;
    for (int u = 0; u < n; ++u) {
        if (!reachable(u)) continue;
        for (int h : f_.blocks[size_t(u)].succ) {
            if (!dominates(h, u)) continue;
            auto it = by_header.find(h);
            if (it == by_header.end()) {
                Loop l;
                l.header = h;
                l.body.assign(size_t(n), false);
                l.body[size_t(h)] = true;
                loops_.push_back(l);
                it = by_header.emplace(h, loops_.size() - 1).first;
            }
            Loop& l = loops_[it->second];
            std::vector<int> work{u};
            while (!work.empty()) {
                const int b = work.back();
                work.pop_back();
                if (l.body[size_t(b)]) continue;
                l.body[size_t(b)] = true;
                for (int p : f_.blocks[size_t(b)].pred)
                    if (reachable(p)) work.push_back(p);
            }
        }
    }
    for (Loop& l : loops_) l.size = int(std::count(l.body.begin(), l.body.end(), true));
}

std::vector<int> Flow::loops_of(int b) const {
    std::vector<int> out;
    for (size_t i = 0; i < loops_.size(); ++i)
        if (loops_[i].body[size_t(b)]) out.push_back(int(i));
    std::sort(out.begin(), out.end(), [&](int x, int y) { return loops_[size_t(x)].size < loops_[size_t(y)].size; });
    return out;
}

const std::set<std::pair<int, int64_t>>& Flow::fields_of(const std::string& reg) const {
    static const std::set<std::pair<int, int64_t>> none;
    const auto it = fields_.find(reg);
    return it == fields_.end() ? none : it->second;
}

std::set<std::pair<int, int64_t>> Flow::fields_of_address(const std::string& operand) const {
    return fields_of(base_and_offset(operand).first);
}

void Flow::provenance() {
    auto param_index = [&](const std::string& sym) {
        for (size_t k = 0; k < f_.params.size(); ++k)
            if (f_.params[k] == sym) return int(k);
        return -1;
    };
    // where a base names a param's address: the param symbol itself, or a register holding it
    auto param_of = [&](const std::string& base, std::pair<int, int64_t>& out) {
        const int k = param_index(base);
        if (k >= 0) return out = {k, 0}, true;
        const auto it = param_addr_.find(base);
        if (it == param_addr_.end()) return false;
        return out = it->second, true;
    };
    for (int round = 0; round < 32; ++round) {
        bool changed = false;
        auto merge = [&](const std::string& dst, const std::string& src) {
            const auto it = fields_.find(src);
            if (it == fields_.end()) return;
            auto& d = fields_[dst];
            const size_t before = d.size();
            d.insert(it->second.begin(), it->second.end());
            changed = changed || d.size() != before;
        };
        for (const Block& b : f_.blocks)
            for (const Instr& in : b.ins) {
                if (in.args.empty() || in.args[0].compare(0, 3, "%rd") != 0) continue;
                const std::string& dst = in.args[0];
                const std::string& base = in.base();
                std::pair<int, int64_t> pa;
                if ((base == "mov" || base == "cvta") && in.args.size() == 2 && param_of(in.args[1], pa)) {
                    changed = changed || !param_addr_.count(dst);
                    param_addr_[dst] = pa;
                } else if (base == "add" && in.args.size() == 3 && is_int(in.args[2]) && param_of(in.args[1], pa)) {
                    changed = changed || !param_addr_.count(dst);
                    param_addr_[dst] = {pa.first, pa.second + std::strtoll(in.args[2].c_str(), nullptr, 0)};
                } else if (base == "ld" && in.has("param") && in.args.size() == 2) {
                    const auto [b0, off] = base_and_offset(in.args[1]);
                    if (param_of(b0, pa)) {
                        const bool added = fields_[dst].insert({pa.first, pa.second + off}).second;
                        changed = changed || added;
                    }
                } else if ((base == "mov" || base == "cvta" || base == "and") && in.args.size() >= 2) {
                    merge(dst, in.args[1]);
                } else if (base == "add" && in.args.size() == 3) {
                    merge(dst, in.args[1]), merge(dst, in.args[2]);
                } else if (base == "sub" && in.args.size() == 3) {
                    merge(dst, in.args[1]);
                } else if (base == "mad" && in.args.size() == 4) {
                    merge(dst, in.args[3]);
                } else if (base == "selp" && in.args.size() == 4) {
                    merge(dst, in.args[1]), merge(dst, in.args[2]);
                }
            }
        if (!changed) break;
    }
}

}  // namespace monokda::ptx
