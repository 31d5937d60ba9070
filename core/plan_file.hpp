// What the plan file's writer (core/plan_file_write.cpp) and reader (core/plan_file_read.cpp) share:
// the format's name, a box of entries as inclusive ranges, and the operands each opcode names; and
// the parser's bounds, kernel v2's reader's too (core/plan_v2_read.cpp). Internal to core/.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "core/json_bounded.hpp"
#include "core/plan.hpp"

namespace monokda::plan_file {

constexpr const char* kFormat = "monokda-plan";

// A plan file's text: at most 256 MB, nested 8 deep (v1's ctas[i].instrs[k].waits[g][s], v2's
// ctas[k].roles[r].program[i].waits[w]), 2^26 values.
inline JsonBounds bounds() {
    JsonBounds b;
    b.max_bytes = size_t(256) << 20;
    b.max_depth = 8;
    b.max_values = size_t(1) << 26;
    return b;
}

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
