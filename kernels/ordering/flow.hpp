// What the ordering check needs to know about one PTX function's control and data flow: dominators,
// natural loops, and which kernel argument each 64-bit address register derives from (so a load can
// be named a read of the flags, of a tagged mailbox, of the error word or of a hand-off tensor).
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kernels/ordering/ptx.hpp"

namespace monokda::ptx {

struct Loop {
    int header = 0;
    std::vector<bool> body;  // per block
    int size = 0;            // blocks in body
};

class Flow {
public:
    explicit Flow(const Function& f);
    const Function& fn() const { return f_; }
    bool reachable(int b) const { return idom_[size_t(b)] >= 0; }
    bool dominates(int a, int b) const;  // a dominates b (both reachable)
    const std::vector<Loop>& loops() const { return loops_; }
    // the loops whose body holds block b, innermost (smallest) first
    std::vector<int> loops_of(int b) const;

    // Kernel arguments an address register may point into: (param index, byte offset) of the
    // .param field it was loaded from. Empty: not traced to a kernel argument.
    const std::set<std::pair<int, int64_t>>& fields_of(const std::string& reg) const;
    // The same for a memory operand ("[%rd4+8]", "[name_param_0+320]").
    std::set<std::pair<int, int64_t>> fields_of_address(const std::string& operand) const;

private:
    void dominators();
    void find_loops();
    void provenance();

    const Function& f_;
    std::vector<int> idom_, rpo_index_;
    std::vector<Loop> loops_;
    std::map<std::string, std::set<std::pair<int, int64_t>>> fields_;
    std::map<std::string, std::pair<int, int64_t>> param_addr_;  // register = address of param k + offset
};

}  // namespace monokda::ptx
