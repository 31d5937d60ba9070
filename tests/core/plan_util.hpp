// What the plan tests share: the configurations they plan for, the structure check (every entry
// one producer, every wait produced and never later in the waiting CTA's own list, recounted from
// the instruction lists rather than taken from the plan's index), and a plan edit that plants
// misplaced kda tasks.
#pragma once
#include <doctest/doctest.h>

#include <map>
#include <utility>
#include <vector>

#include "core/config.hpp"
#include "core/plan.hpp"

namespace monokda::test {

inline Config k3() {
    Config c = Config::preset("k3");
    c.R = 2; c.L = 4; c.nb = 4; c.slots = c.S() + 1;
    return c;
}
inline Config small() {
    Config c = Config::preset("small");
    c.slots = c.S() + 1;
    return c;
}

// producers recounted from the instruction lists (not from plan.producer())
inline std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> recount(const Plan& p) {
    std::map<std::pair<int, int>, std::vector<std::pair<int, int>>> m;
    for (int cta = 0; cta < p.blocks(); ++cta)
        for (int i = 0; i < int(p.instrs(cta).size()); ++i)
            for (const MailboxRef& e : p.produces(cta, i)) m[{int(e.box), e.entry}].push_back({cta, i});
    return m;
}

inline void check_structure(const Plan& p) {
    auto prod = recount(p);
    // every entry of every mailbox has exactly one producer
    for (int m = 0; m < kMailboxCount; ++m)
        for (int e = 0; e < p.entries(Mailbox(m)); ++e) {
            auto it = prod.find({m, e});
            REQUIRE_MESSAGE(it != prod.end(), p.entry_name({Mailbox(m), e}) << " has no producer");
            REQUIRE_MESSAGE(it->second.size() == 1, p.entry_name({Mailbox(m), e}) << " has several producers");
            CHECK(p.producer({Mailbox(m), e}).cta == it->second[0].first);
        }
    // every waited entry is produced, and never later in the waiting CTA's own list
    for (int cta = 0; cta < p.blocks(); ++cta)
        for (int i = 0; i < int(p.instrs(cta).size()); ++i)
            for (const auto& w : p.waits(cta, i)) {
                auto it = prod.find({int(w.entry.box), w.entry.entry});
                REQUIRE(it != prod.end());
                if (it->second[0].first == cta) CHECK(it->second[0].second < i);
            }
    CHECK(p.structural_problems().empty());
}

// Moves kda task (r, h, c)'s four instructions from the CTA that holds them to the end of CTA `to`
// (plan bugs planted by the structure and watchdog tests). Returns how many moved.
inline int move_kda_task(Plan& q, int r, int h, int c, int to) {
    const int from = q.kda_cta(r, h, c);
    std::vector<Instr> moved;
    for (int i = int(q.instrs(from).size()) - 1; i >= 0; --i) {
        const Instr in = q.instrs(from)[size_t(i)];
        if (role_of(in.opcode()) == Role::kda && in.a == r && in.b == h && in.c == c) {
            moved.insert(moved.begin(), in);
            q.erase_instr(from, i);
        }
    }
    for (const Instr& in : moved) q.insert_instr(to, int(q.instrs(to).size()), in);
    return int(moved.size());
}

}  // namespace monokda::test
