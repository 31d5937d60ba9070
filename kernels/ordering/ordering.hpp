// The PTX ordering check of kda_pre (docs/kernel.md, "Memory ordering"): every hand-off site of the
// compiled kernel as a line of facts (a flag or tagged read or write with its semantics, a copy-ring
// wait with its count, a poll loop with its bounds), and the rules of kernels/kda_ordering.hpp
// applied to those facts. The facts come from PTX (sites_of) or from a committed summary of them
// (parse_summary), so CI holds the kernel to its contract without nvcc.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kernels/ordering/ptx.hpp"

namespace monokda::ordering {

// Where KdaArgs' memories sit in the kernel's first parameter: field byte offset -> name ("flags",
// "tagged", "error", the hand-off tensors "x", "proj", ...), from the layout probe's
// monokda_layout_<name> globals (kernels/ordering/layout_probe.cu).
struct Layout {
    std::map<long long, std::string> field_at;
    // BadInput naming the missing field unless flags, tagged, error and every hand-off are given
    static Layout from(const ptx::Module& m, const std::string& what);
};

struct Site {
    std::string kind;    // read | write | wait | poll | untraced
    std::string memory;  // flags | tagged | cp.async | (poll) what it polls | (untraced) unknown | mixed
    std::map<std::string, std::string> facts;  // sem, type, peek, fence, barrier, pending, pause, clock, error, op
    std::string where;   // the inline chain, innermost first: "ld_acquire<spin<wait_flags<..."
    int n = 1;           // identical sites (a summary line stands for n of them)
    int line = 0;        // PTX line (0 when read from a summary)
    std::string fact(const std::string& k) const {
        const auto it = facts.find(k);
        return it == facts.end() ? "" : it->second;
    }
};

struct Entry {
    std::string name;  // "kda_pre_kernel<true>"
    std::vector<Site> sites;
};

struct Summary {
    std::string source, compiler;  // what was compiled, by what (informational)
    std::vector<Entry> entries;
};

// Every site of every .entry (and .func) of a module, in PTX order, identical lines merged.
Summary summarize(const ptx::Module& m, const Layout& layout, const std::string& source);

std::string format_summary(const Summary& s);
// BadInput ("what:LINE: ...") on a malformed summary
Summary parse_summary(const std::string& text, const std::string& what);

// The rules, as the report names them.
enum class Rule {
    FLAG_READ_RELAXED,          // a flag read that is not an acquire (nor relaxed with a fence after)
    PEEK_UNCHECKED,             // a marked peek in no loop that re-reads the flags with acquire
    TAGGED_READ_WEAK,           // a tagged pair read weak, at CTA scope, or not as one 64-bit word
    FLAG_WRITE_UNRELEASED,      // a flag store that is not a release (nor after a gpu-scope fence)
    FLAG_WRITE_BEFORE_BARRIER,  // a flag store reachable from a hand-off store with no CTA barrier between
    TAGGED_WRITE_WEAK,          // a tagged pair stored weak, at CTA scope, or not as one 64-bit word
    RING_WAIT,                  // a cp.async wait count the ring does not allow (one stage short, ...)
    POLL_UNBOUNDED,             // a poll loop without a clock read or an error-word read
    UNTRACED_ACCESS,            // an ordered access whose memory the check cannot name
};
const char* to_string(Rule r);

struct Violation {
    Rule rule;
    std::string entry, where, message;
    int line = 0;  // PTX line (0 from a summary)
    int n = 1;     // sites of the summary line
};

// The rules of kernels/kda_ordering.hpp applied to every site.
std::vector<Violation> check(const Summary& s);
// One line a violation: "FLAG_READ_RELAXED kda_pre_kernel<true> at ld_relaxed32<spin<...: ..."
std::string format_violation(const Violation& v);

}  // namespace monokda::ordering
