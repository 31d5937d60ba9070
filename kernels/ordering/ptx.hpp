// PTX as the ordering check reads it: functions as basic blocks of instructions (opcode, operands,
// guard, the monokda marker of the line), the source location each instruction came from (the
// -lineinfo .loc directives with their inlined_at chains), and the module's scalar .global
// initialisers (where the layout probe states KdaArgs' field offsets). Only what nvcc emits is
// understood; anything else is BadInput naming the line.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace monokda::ptx {

struct Instr {
    std::string guard;              // "%p3", "!%p3" or "" (unguarded)
    std::string op;                 // "ld.acquire.gpu.global.u32"
    std::vector<std::string> args;  // operands as written, trimmed ("%r1", "[%rd2+8]", "{%r1, %r2}")
    std::string marker;             // text after "monokda:" in a comment on the line ("peek")
    int loc = -1;                   // Module::locs index of the .loc in effect, -1: none
    int line = 0;                   // 1-based line in the PTX file
    // the opcode's dot-separated parts: "ld", "acquire", "gpu", "global", "u32" (set with op)
    std::vector<std::string> parts;
    void set_op(const std::string& o);
    bool has(const std::string& part) const;
    const std::string& base() const { return parts.front(); }
};

struct Block {
    std::string label;  // "" for a block that starts after a branch
    std::vector<Instr> ins;
    std::vector<int> succ, pred;
};

struct Function {
    std::string name;  // mangled
    bool entry = false;
    std::vector<std::string> params;  // .param names in order
    std::vector<Block> blocks;        // blocks[0] is where the function starts
};

// A .loc: file:line:col in function `fn` (a debug-string symbol, "" for the function itself),
// inlined at locs[parent] (-1: not inlined).
struct Loc {
    int file = 0, line = 0, col = 0;
    std::string fn;
    int parent = -1;
};

struct Module {
    std::vector<Function> fns;
    std::map<std::string, int64_t> globals;       // scalar .global initialisers by name
    std::map<std::string, std::string> strings;   // debug strings ($L__info_stringN -> text)
    std::vector<Loc> locs;
    std::string compiler;  // "Cuda compilation tools, release 13.0, V13.0.48" from the header comment
    // The chain of functions an instruction was inlined through, innermost first, as demangled
    // short names ("ld_acquire", "spin", "wait_flags", "KdaTask::conv"); lambdas left out.
    std::vector<std::string> where(const Function& f, const Instr& in) const;
};

// Parses PTX text; `what` names it in errors (BadInput: "what:LINE: ...").
Module parse(const std::string& text, const std::string& what);

// A C++ symbol's short name: demangled, without namespaces, template arguments or parameters
// ("monokda::gpu::KdaTask<32>::conv(...)" -> "KdaTask::conv"); the mangled name if it is not one.
std::string short_name(const std::string& mangled);
// A kernel's name with its template arguments ("kda_pre_kernel<true>").
std::string entry_name(const std::string& mangled);

// Splits operands on top-level commas (not inside [], {} or ()).
std::vector<std::string> split_operands(const std::string& s);
// The registers an operand names: "%r1" -> {%r1}, "{%r1, %r2}" -> both, "%r1|%p2" -> both,
// "[%rd3+8]" -> {%rd3}; immediates and symbols name none.
std::vector<std::string> registers_of(const std::string& operand);

}  // namespace monokda::ptx
