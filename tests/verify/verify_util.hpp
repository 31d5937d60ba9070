// Shared by the verify tests: a small step with every kind of request SPEC §3 has (a null request,
// a live request whose last accepted token has no slot, a later token without a slot, block-write),
// its reference outputs, and the verdicts of a candidate.
#pragma once
#include <doctest/doctest.h>

#include <string>

#include "core/fixture_gen.hpp"
#include "reference/reference.hpp"
#include "verify/same.hpp"

namespace monokda::verify::test {

// R 4, L 3, nb 3, block-write: request 0 null; request 1 live with a = 3 and its token 1 without a
// slot; request 2 live but its last accepted token (a = 2) without a slot (no initial state, conv
// state still written); request 3 live.
inline StepInputs varied_step(ConvLayout layout = ConvLayout::sd) {
    Config c = Config::preset("small");
    c.R = 4, c.L = 3, c.nb = 3, c.block_write = true, c.conv_layout = layout, c.seed = 11;
    StepInputs in = make_fixture(c);
    in.num_accepted = {1, 3, 2, 2};
    for (int t = 0; t < c.L; ++t) in.state_indices[size_t(t)] = t % 2 ? 0 : -1;  // request 0: null (its slots now untouched)
    in.state_indices[size_t(1 * c.L + 1)] = 0;   // a later token without a slot: no state written for it
    in.state_indices[size_t(2 * c.L + 1)] = -1;  // request 2's last accepted token: no initial state
    in.validate_step();
    return in;
}

struct Measured {
    StepInputs in;
    StepOutputs<float> ref;
    emu::Envelope env;
    TensorFile oracle;
};

inline const Measured& measured() {
    static const Measured m = [] {
        Measured x;
        x.in = varied_step();
        x.ref = ref::run<float>(x.in);
        MeasuredEnvelope e = measure_envelope(x.in);
        x.env = std::move(e.envelope);
        x.oracle = std::move(e.oracle);
        return x;
    }();
    return m;
}

inline std::vector<Check> verdicts(const Candidate& c, InProj p = InProj::exact) {
    const Measured& m = measured();
    Options o;
    o.in_proj = p;
    const emu::Envelope env = widen_for(m.env, p, m.in, m.oracle);
    return verify_step(m.in, c, o, &env, &m.oracle);
}

inline const Check& find(const std::vector<Check>& checks, const std::string& name) {
    for (const Check& c : checks)
        if (c.name == name) return c;
    FAIL("no check " << name);
    return checks.front();
}

inline int64_t at(const Element& e, const std::string& key) {
    for (const auto& [k, v] : e.at)
        if (k == key) return v;
    return -1;
}

inline std::string failed_names(const std::vector<Check>& checks) {
    std::string s;
    for (const Check& c : checks)
        if (c.status == Status::failed) s += (s.empty() ? "" : ",") + c.name;
    return s;
}

inline std::string all_lines(const std::vector<Check>& checks) {
    std::string s;
    for (const Check& c : checks) s += c.str() + "\n";
    return s;
}

}  // namespace monokda::verify::test
