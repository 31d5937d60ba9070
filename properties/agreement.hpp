// A target against the reference, the way SPEC §5 defines "the same", through the one definition
// of it (verify/same.hpp, the checks `monokda verify` reports):
//  - reference-stages: the exact set, the own-proj conv entries, and every stage of the original
//    path in f32 fed the target's own hand-offs (teacher forcing): >= 99.9 % bit-identical (proj
//    99.5 % for a tensor-core in_proj) and <= 1 bf16 ulp at row scale; ssm_state within 1e-5.
//  - oracle: the same with the stages in f64 (the correctly rounded value of each stage).
//  - envelope: the target's free-running distance from the f64 oracle inside the envelope measured
//    on the step (the reference in permuted reduction orders; widened for a tensor-core in_proj).
// Each fails with the first failing check's line: its name (stage.qkv, ...) and first element.
#pragma once
#include <optional>
#include <string>

#include "properties/properties.hpp"

namespace monokda::props {

Verdict check_reference_stages(const Target& target, const StepInputs& in, const StepOutputs<float>& out);
Verdict check_oracle(const Target& target, const StepInputs& in, const StepOutputs<float>& out);
Verdict check_envelope(const Target& target, const StepInputs& in, const StepOutputs<float>& out);

// The agreement checks by name ("reference-stages", "oracle", "envelope"); nothing for another name.
std::optional<Verdict> run_agreement(const std::string& name, const Target& target, const StepInputs& in,
                                     const StepOutputs<float>& out);
const char* const* agreement_check_names();  // null-terminated

}  // namespace monokda::props
