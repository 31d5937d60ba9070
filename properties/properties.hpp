// Properties of one step (issue 5): each is a reusable check over any target. A check derives
// variant steps from a base step, runs the target on them and compares. Verdicts are a closed set.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/step.hpp"
#include "properties/target.hpp"

namespace monokda::props {

struct Verdict {
    enum Kind { PASS, FAIL, SKIP } kind = PASS;
    std::string check;   // the property's name
    std::string detail;  // FAIL: the first difference and where; SKIP: why the step does not apply
};
const char* to_string(Verdict::Kind k);

// base_out must be target.run(in); properties reuse it instead of running the base step again.
// seed picks the property's own random choices (which request, which permutation...), so a
// (fixture, property, seed) triple replays exactly.
using PropertyCheck = Verdict (*)(const Target& target, const StepInputs& in, const StepOutputs<float>& base_out,
                                  uint64_t seed);

struct Property {
    const char* name;
    const char* summary;
    const char* exactness;  // "bit-exact", or what tolerance applies and why
    PropertyCheck check;
    bool reruns = true;  // false: checks the base outputs only, no extra run of the target
};

const std::vector<Property>& all_properties();
const Property& find_property(const std::string& name);  // BadInput naming the known ones

// Runs one property, turning a BadInput from a variant step (a target that rejects a shape) into SKIP.
Verdict run_property(const Property& p, const Target& target, const StepInputs& in,
                     const StepOutputs<float>& base_out, uint64_t seed);

}  // namespace monokda::props
