// Two plans compared list by list: everything a run depends on (the tests of plan files).
#pragma once
#include <string>

#include "core/plan.hpp"

namespace monokda::test {

// Everything a run depends on, compared list by list (the first difference is named).
inline std::string first_difference(const Plan& a, const Plan& b) {
    if (a.blocks() != b.blocks()) return "blocks";
    if (a.config().S() != b.config().S()) return "S";
    if (a.reduction_order().str() != b.reduction_order().str()) return "reduction order";
    if (a.target().in_order_loads != b.target().in_order_loads || a.co_resident() != b.co_resident()) return "target";
    for (int m = 0; m < kMailboxCount; ++m)
        if (a.entries(Mailbox(m)) != b.entries(Mailbox(m))) return std::string("entries of ") + to_string(Mailbox(m));
    for (int x = 0; x < a.blocks(); ++x) {
        const std::string at = "CTA " + std::to_string(x);
        if (a.list_at(x) != b.list_at(x)) return "launch CTA " + std::to_string(x);
        if (a.instrs(x).size() != b.instrs(x).size()) return at + " length";
        for (int i = 0; i < int(a.instrs(x).size()); ++i) {
            const Instr &p = a.instrs(x)[size_t(i)], &q = b.instrs(x)[size_t(i)];
            const std::string ai = at + " instruction " + std::to_string(i);
            if (p.op != q.op || p.a != q.a || p.b != q.b || p.c != q.c) return ai;
            const auto &wa = a.waits(x, i), &wb = b.waits(x, i);
            if (wa.size() != wb.size()) return ai + " waits";
            for (size_t k = 0; k < wa.size(); ++k)
                if (!(wa[k].entry == wb[k].entry) ||
                    (k > 0 && (wa[k].group == wa[k - 1].group) != (wb[k].group == wb[k - 1].group)))  // the same groups
                    return ai + " wait " + std::to_string(k);
            if (a.produces(x, i) != b.produces(x, i)) return ai + " products";
        }
    }
    return "";
}

}  // namespace monokda::test
