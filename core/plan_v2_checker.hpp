// Kernel v2's plan checks, shared by the files that define them (plan_v2_checks.cpp: in_proj and the
// seam; plan_v2_tail_checks.cpp: the tail): a check records what it finds wrong, under its name.
#pragma once
#include <string>
#include <vector>

#include "core/plan_v2.hpp"

namespace monokda::v2check {

using Problems = std::vector<PlanV2::Problem>;
inline std::string n(long v) { return std::to_string(v); }

struct Checker {
    const PlanV2& p;
    Problems& out;
    std::string check;
    void fail(const std::string& what) {
        if (out.size() < 200) out.push_back({check, what});
    }
    void need(bool ok, const std::string& what) {
        if (!ok) fail(what);
    }
};

// plan_v2_tail_checks.cpp
void tail_tasks(Checker& c);
void tail_programs(Checker& c);

}  // namespace monokda::v2check
