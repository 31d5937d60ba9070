// The plan's static checks (core/plan.hpp): the structural problems a plan can have (an entry with
// no producer, a wait for what nothing or only a later instruction produces, a circular wait, and a
// file's own problems), and the residency model: which lists finish when CTAs start in launch order
// and a place frees only when its CTA ends, and the fewest places with which all do.
#include <algorithm>
#include <string>
#include <vector>

#include "core/plan.hpp"

namespace monokda {

std::vector<std::string> Plan::structural_problems() const {
    std::vector<std::string> out = derive_problems_;
    for (int m = 0; m < kMailboxCount; ++m)
        for (int e = 0; e < entries_[m]; ++e)
            if (producer_[size_t(m)][size_t(e)].cta == -1)
                out.push_back(entry_name({Mailbox(m), e}) + " has no producer");
    for (size_t cta = 0; cta < instrs_.size(); ++cta)
        for (size_t i = 0; i < instrs_[cta].size(); ++i)
            for (const Wait& w : waits_[cta][i]) {
                Producer p = producer(w.entry);
                if (p.cta == -1) out.push_back("CTA " + std::to_string(cta) + " " + describe(instrs_[cta][i]) +
                                               " waits for " + entry_name(w.entry) + ", which nothing produces");
                else if (p.cta == int32_t(cta) && p.instr >= int32_t(i))
                    out.push_back("CTA " + std::to_string(cta) + " " + describe(instrs_[cta][i]) + " waits for " +
                                  entry_name(w.entry) + ", which only it produces, later (" +
                                  describe(instrs_[cta][size_t(p.instr)]) + ")");
            }
    if (out.empty() && finishing_ctas(blocks()) != blocks())
        out.push_back("circular wait: with every CTA resident only " + std::to_string(finishing_ctas(blocks())) +
                      " of " + std::to_string(blocks()) + " CTAs finish");
    if (explicit_waits_) file_problems(out);
    return out;
}

std::string Plan::cta_name(int list) const {
    if (list < launch_blocks()) return "CTA " + std::to_string(list);
    const int p = team_parent(list), t = int(std::find(team_parent_.begin(), team_parent_.end(), p) - team_parent_.begin());
    return "CTA " + std::to_string(p) + " team " + std::to_string(list - launch_blocks() - t + 1);
}

std::vector<int> Plan::lists_of(int p) const {
    std::vector<int> l{p};
    for (size_t k = 0; k < team_parent_.size(); ++k)
        if (team_parent_[k] == p) l.push_back(launch_blocks() + int(k));
    return l;
}

int Plan::finishing_ctas(int resident) const {
    const int B = blocks(), P = launch_blocks();
    std::vector<std::vector<char>> done(static_cast<size_t>(kMailboxCount));
    for (int m = 0; m < kMailboxCount; ++m) done[size_t(m)].assign(size_t(entries_[m]), 0);
    std::vector<size_t> pc(size_t(B), 0), wc(size_t(B), 0);  // instruction, and next wait within it
    std::vector<int> running, open(size_t(P), 0);             // lists running; lists of a place not finished
    int next = 0, held = 0, finished = 0;  // next: the launch CTA to start
    auto admit = [&]() {
        while (held < resident && next < P) {
            const int list = list_at(next++);
            const std::vector<int> l = lists_of(list);
            running.insert(running.end(), l.begin(), l.end());
            open[size_t(list)] = int(l.size());
            ++held;
        }
    };
    admit();
    bool progress = true;
    while (progress) {
        progress = false;
        for (size_t k = 0; k < running.size();) {
            const size_t cta = size_t(running[k]);
            const auto& l = instrs_[cta];
            while (pc[cta] < l.size()) {
                const auto& w = waits_[cta][pc[cta]];
                while (wc[cta] < w.size() && done[size_t(w[wc[cta]].entry.box)][size_t(w[wc[cta]].entry.entry)]) ++wc[cta];
                if (wc[cta] < w.size()) break;
                for (const MailboxRef& e : produces_[cta][pc[cta]]) done[size_t(e.box)][size_t(e.entry)] = 1;
                ++pc[cta];
                wc[cta] = 0;
                progress = true;
            }
            if (pc[cta] == l.size()) {
                ++finished;
                running.erase(running.begin() + long(k));
                if (--open[size_t(team_parent(int(cta)))] == 0) {
                    --held;
                    admit();
                }
                progress = true;
            } else {
                ++k;
            }
        }
    }
    return finished;
}

int Plan::min_residency() const {
    const int B = blocks(), P = launch_blocks();
    if (finishing_ctas(P) != B) return P + 1;
    int lo = 1, hi = P;  // more residency never finishes fewer CTAs: admission order is fixed
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (finishing_ctas(mid) == B) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

}  // namespace monokda
