// What the check files of verify/ share (exact_checks.cpp, stage_checks.cpp, envelope_checks.cpp,
// same.cpp) and nothing else includes: number and bit formatting, a check under construction
// (Draft: counts differences and locates the first), which slots a step writes, and a candidate's
// tensors by name.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/safetensors.hpp"
#include "verify/same.hpp"

namespace monokda::verify::detail {

inline std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}
inline std::string pct(double frac) { return fmt("%.4g", 100 * frac) + " %"; }

inline double value_of(bf16 b) { return b.to_double(); }
inline double value_of(float f) { return f; }
inline double value_of(double d) { return d; }
inline std::string bits_of(bf16 b) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%04x", unsigned(b.bits));
    return s;
}
inline std::string bits_of(float f) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%08x", unsigned(f32_bits(f)));
    return s;
}
inline std::string bits_of(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    char s[24];
    std::snprintf(s, sizeof s, "0x%016llx", (unsigned long long)u);
    return s;
}
template <class T>
inline bool same_bits_one(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// A check under construction: differences are noted as they are found; the first is located.
struct Draft {
    Check ck;
    const Config& cfg;
    Draft(const Config& c, std::string name, std::string category, std::string tensor) : cfg(c) {
        ck.name = std::move(name);
        ck.category = std::move(category);
        ck.tensor = std::move(tensor);
    }
    template <class A, class B>
    void note(int64_t index, A cand, B want) {
        if (ck.differing++ == 0) first(index, cand, want);
    }
    template <class A, class B>
    void first(int64_t index, A cand, B want) {
        ck.has_first = true;
        ck.first = locate(cfg, ck.tensor, index);
        ck.first.candidate = value_of(cand);
        ck.first.expected = value_of(want);
        ck.first.candidate_bits = bits_of(cand);
        ck.first.expected_bits = bits_of(want);
    }
    // passed when nothing differs, else failed; `what` says what was compared
    Check exact(const std::string& what) {
        ck.status = ck.differing ? Status::failed : Status::passed;
        ck.summary = what + ": " + (ck.differing ? std::to_string(ck.differing) + " of " + std::to_string(ck.elements) +
                                                       " elements differ"
                                                 : "all " + std::to_string(ck.elements) + " elements bit-identical");
        ck.numbers = {{"elements", double(ck.elements)}, {"differing", double(ck.differing)}};
        return ck;
    }
    Check not_checked(const std::string& why) {
        ck.status = Status::not_checked;
        ck.summary = why;
        ck.differing = ck.elements = 0;
        ck.has_first = false;
        return ck;
    }
};

// The slots a step writes (SPEC §3 D, E): conv, the running slot of each request that has one;
// ssm, every positive slot of a request that has an initial state.
inline std::vector<char> conv_written(const StepInputs& in) {
    const Config& c = in.cfg;
    std::vector<char> w(size_t(std::max(c.slots, 0)), 0);
    for (int r = 0; r < c.R; ++r)
        if (in.idx(r, 0) > 0) w[size_t(in.idx(r, 0))] = 1;
    return w;
}
inline bool has_initial_state(const StepInputs& in, int r) { return in.idx(r, in.num_accepted[size_t(r)] - 1) > 0; }
inline std::vector<char> ssm_written(const StepInputs& in) {
    const Config& c = in.cfg;
    std::vector<char> w(size_t(std::max(c.slots, 0)), 0);
    for (int r = 0; r < c.R; ++r)
        if (has_initial_state(in, r))
            for (int t = 0; t < c.L; ++t)
                if (in.idx(r, t) > 0) w[size_t(in.idx(r, t))] = 1;
    return w;
}

inline const std::vector<bf16>& bf16_tensor(const StepOutputs<float>& o, const std::string& name) {
    if (name == "prefix_out") return o.prefix_out;
    if (name == "blocks") return o.blocks;
    if (name == "core_out") return o.core_out;
    if (name == "conv_state") return o.conv_state;
    if (name == "x") return o.x;
    if (name == "proj") return o.proj;
    if (name == "g1") return o.g1;
    if (name == "qkv") return o.qkv;
    if (name == "o") return o.o;
    throw std::logic_error("no bf16 output '" + name + "'");
}

inline int row_width(const Config& c, const std::string& name) {
    if (name == "prefix_out" || name == "x") return c.D;
    if (name == "proj") return c.N;
    if (name == "qkv") return c.C;
    return c.E();  // g1, o, core_out
}

// The names of `needed` the candidate does not export, "a, b" ("" when it has them all).
inline std::string not_exported(const Candidate& c, const std::vector<const char*>& needed) {
    std::string missing;
    for (const char* n : needed)
        if (!c.has(n)) missing += (missing.empty() ? "" : ", ") + std::string(n);
    return missing;
}

// A candidate's output `name` as a tensor of SPEC §2's shape (ssm_state [slots, H, V, K]).
inline Tensor tensor_of(const Config& c, const StepOutputs<float>& o, const std::string& name) {
    if (name == "ssm_state") return Tensor::of(DType::F32, {c.slots, c.H, c.V, c.K}, o.ssm_state);
    return Tensor::of(DType::BF16, {c.S(), row_width(c, name)}, bf16_tensor(o, name));
}

}  // namespace monokda::verify::detail
