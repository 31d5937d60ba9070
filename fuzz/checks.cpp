// The named checks a fuzz case runs (fuzz/checks.hpp), each replayable by (fixture, check, seed).
#include "fuzz/checks.hpp"

#include "core/error.hpp"
#include "properties/agreement.hpp"

namespace monokda::fuzz {

std::vector<std::string> case_checks(const props::Target& target, long index, int per_case) {
    std::vector<std::string> names;
    if (!target.is_reference) names.push_back("reference-stages");
    names.push_back("oracle");
    names.push_back("envelope");
    std::vector<std::string> rerun;
    for (const auto& p : props::all_properties()) (p.reruns ? rerun : names).push_back(p.name);
    const long n = long(rerun.size());
    if (per_case <= 0 || per_case >= n) {
        names.insert(names.end(), rerun.begin(), rerun.end());
    } else {
        for (long j = 0; j < per_case; ++j) names.push_back(rerun[size_t((index * per_case + j) % n)]);
    }
    return names;
}

std::vector<std::string> all_check_names() {
    std::vector<std::string> names = {"target-run"};
    for (const char* const* n = props::agreement_check_names(); *n; ++n) names.push_back(*n);
    for (const auto& p : props::all_properties()) names.push_back(p.name);
    return names;
}

props::Verdict run_check(const std::string& name, const props::Target& target, const StepInputs& in,
                         const StepOutputs<float>& out, uint64_t seed) {
    if (const std::optional<props::Verdict> v = props::run_agreement(name, target, in, out)) return *v;
    return props::run_property(props::find_property(name), target, in, out, seed);
}

props::Verdict run_target_and_check(const std::string& name, const props::Target& target, const StepInputs& in,
                                    uint64_t seed) {
    StepOutputs<float> out;
    try {
        out = target.run(in);
    } catch (const BadInput& e) {
        props::Verdict v;
        v.kind = props::Verdict::SKIP;
        v.check = name;
        v.detail = std::string("the target rejected the step: ") + e.what();
        return v;
    } catch (const props::TargetFailure& e) {
        props::Verdict v;  // a failed run is the "target-run" failure, not another check's
        v.kind = name == "target-run" ? props::Verdict::FAIL : props::Verdict::SKIP;
        v.check = name;
        v.detail = e.what();
        return v;
    }
    if (name == "target-run") return props::Verdict{props::Verdict::PASS, name, ""};
    return run_check(name, target, in, out, seed);
}

}  // namespace monokda::fuzz
