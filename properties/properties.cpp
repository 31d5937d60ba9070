// The properties of one step (properties/properties.hpp): the list, found by name, and verdicts'
// names.
#include "properties/properties.hpp"

#include "core/error.hpp"
#include "properties/prop_list.hpp"

namespace monokda::props {

const char* to_string(Verdict::Kind k) {
    switch (k) {
        case Verdict::PASS: return "PASS";
        case Verdict::FAIL: return "FAIL";
        case Verdict::SKIP: return "SKIP";
    }
    return "?";
}

const std::vector<Property>& all_properties() {
    static const char* kExact = "bit-exact";
    static const char* kShape = "bit-exact for targets whose rows do not depend on the step shape (reference, "
                                "emulator); else the target's shape tolerance";
    static const std::vector<Property> table = {
        {"spec-decode", "one step of L tokens == L chained single-token decode steps (outputs, per-token states, "
                        "conv-state rolling)", kShape, prop_spec_decode},
        {"continuation", "after a full accept (a = L) the next step continues where the last token left off "
                         "(== one step of 2L tokens)", kShape, prop_continuation},
        {"accepted-shift", "num_accepted a reads conv window offset a-1 and initial state column a-1", kExact,
         prop_accepted_shift},
        {"permutation", "permuting requests (with their slots and metadata) permutes the outputs", kExact,
         prop_permutation},
        {"slot-relabel", "renaming slots (sparse, strided) moves each slot's result and changes no row", kExact,
         prop_slot_relabel},
        {"independence", "changing one request's inputs changes no other request's outputs or slots", kExact,
         prop_independence},
        {"null-requests", "requests with slots <= 0: o = +0, zero conv window, no state written, others unaffected",
         kExact, prop_null_requests},
        {"null-initial-state", "no initial state (idx[r,a-1] <= 0): o = +0, no ssm write, conv write unaffected",
         kExact, prop_null_initial_state},
        {"conv-state", "conv state holds the kept entries and the raw inputs; untouched slots unchanged", kExact,
         prop_conv_state, false},
        {"gate-bounds", "gate in [lb, 0]: decay read off the written states lies in [e^lb, 1]",
         "within 1e-6 relative (one f32 exp, one product rounding)", prop_gate_bounds},
        {"beta-zero-decay", "beta = 0 is pure decay: each written state is the previous one scaled per key column",
         "within 3 f32 ulps of the previous state (the decay is estimated from the same column)",
         prop_beta_zero_decay},
        {"attnres-identical", "identical AttnRes sources mix to the source (x independent of nb and pseudo-query)",
         "bit-exact across nb and pseudo-query; within 1 bf16 row ulp of the f64 rmsnorm", prop_attnres_identical},
        {"pad-rows", "the zero pad rows of in_proj never matter", kExact, prop_pad_rows},
        {"determinism", "the same step twice gives identical bits", kExact, prop_determinism},
    };
    return table;
}

const Property& find_property(const std::string& name) {
    std::string known;
    for (const auto& p : all_properties()) {
        if (name == p.name) return p;
        known += (known.empty() ? "" : ", ") + std::string(p.name);
    }
    bad_input("unknown property '" + name + "' (known: " + known + ")");
}

Verdict run_property(const Property& p, const Target& target, const StepInputs& in, const StepOutputs<float>& base_out,
                     uint64_t seed) {
    try {
        Verdict v = p.check(target, in, base_out, seed);
        v.check = p.name;
        return v;
    } catch (const BadInput& e) {
        Verdict v;
        v.kind = Verdict::SKIP;
        v.check = p.name;
        v.detail = std::string("the target rejected a variant step: ") + e.what();
        return v;
    } catch (const TargetFailure& e) {
        Verdict v;
        v.kind = Verdict::FAIL;
        v.check = p.name;
        v.detail = std::string("the target failed on a variant step: ") + e.what();
        return v;
    }
}

}  // namespace monokda::props
