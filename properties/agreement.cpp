// A target against the reference through SPEC §5's one definition of "the same"
// (properties/agreement.hpp, verify/same.hpp).
#include "properties/agreement.hpp"

#include "verify/same.hpp"

namespace monokda::props {

namespace {

verify::InProj in_proj(const Target& t) { return t.tensor_core_in_proj ? verify::InProj::tensor_cores : verify::InProj::exact; }

Verdict verdict_of(const std::string& name, const std::vector<verify::Check>& checks) {
    Verdict v;
    v.check = name;
    if (const verify::Check* f = verify::first_failure(checks)) {
        v.kind = Verdict::FAIL;
        v.detail = f->str().substr(5);  // "stage.qkv: ...; first: ..." without the "FAIL "
        int others = -1;
        for (const verify::Check& c : checks) others += c.status == verify::Status::failed;
        if (others > 0) v.detail += " [" + std::to_string(others) + " more check(s) failed]";
    }
    return v;
}

template <class T>
Verdict stages(const char* name, const Target& target, const StepInputs& in, const StepOutputs<float>& out) {
    const verify::Candidate c = verify::Candidate::all(out);
    verify::Options o;
    o.in_proj = in_proj(target);
    std::vector<verify::Check> checks = verify::exact_checks(in, c);
    for (verify::Check& k : verify::stage_checks<T>(in, c, o)) checks.push_back(std::move(k));
    return verdict_of(name, checks);
}

}  // namespace

Verdict check_reference_stages(const Target& target, const StepInputs& in, const StepOutputs<float>& out) {
    return stages<float>("reference-stages", target, in, out);
}

Verdict check_oracle(const Target& target, const StepInputs& in, const StepOutputs<float>& out) {
    return stages<double>("oracle", target, in, out);
}

Verdict check_envelope(const Target& target, const StepInputs& in, const StepOutputs<float>& out) {
    const verify::Candidate c = verify::Candidate::all(out);
    const std::string order = target.declared_order ? target.declared_order(in) : std::string();
    const verify::MeasuredEnvelope m = verify::envelope_for(in, c, in_proj(target), 0, order);
    return verdict_of("envelope", verify::envelope_checks(in, c, m.envelope, m.oracle));
}

std::optional<Verdict> run_agreement(const std::string& name, const Target& target, const StepInputs& in,
                                     const StepOutputs<float>& out) {
    if (name == "reference-stages") return check_reference_stages(target, in, out);
    if (name == "oracle") return check_oracle(target, in, out);
    if (name == "envelope") return check_envelope(target, in, out);
    return std::nullopt;
}

const char* const* agreement_check_names() {
    static const char* const names[] = {"reference-stages", "oracle", "envelope", nullptr};
    return names;
}

}  // namespace monokda::props
