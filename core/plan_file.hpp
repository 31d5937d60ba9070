// What the plan file's writer (core/plan_file_write.cpp) and reader (core/plan_file_read.cpp) share:
// the format's name, a box of entries as inclusive ranges, and the operands each opcode names.
// Internal to core/.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/plan.hpp"

namespace monokda::plan_file {

constexpr const char* kFormat = "monokda-plan";

// One box of entries of one mailbox: an inclusive range per dim.
struct Spec {
    Mailbox box = Mailbox::count;
    std::vector<std::pair<int, int>> ranges;
    int64_t count() const {
        int64_t n = 1;
        for (const auto& r : ranges) n *= r.second - r.first + 1;
        return n;
    }
};

// The operands an opcode names in the file, in operand order (a, b, c).
inline std::vector<const char*> operand_names(Op op) {
    switch (op) {
        case Op::ATTN_PART: case Op::ATTN_MIX: case Op::ATTN_X: return {"slice", "part"};
        case Op::ATTN_GATE: return {"row"};
        case Op::GEMV_PREFETCH: case Op::GEMV_GROUP: return {"group"};
        case Op::KDA_LOAD: case Op::KDA_CONV: case Op::KDA_REC: case Op::KDA_NORM: return {"r", "h", "chunk"};
    }
    return {};
}

}  // namespace monokda::plan_file
