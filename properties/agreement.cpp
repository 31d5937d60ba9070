#include "properties/agreement.hpp"

#include "properties/check_util.hpp"
#include "properties/transforms.hpp"
#include "reference/reference.hpp"

namespace monokda::props {

using namespace detail;

namespace {

void rows_within(Findings& f, const char* name, const Config& c, const std::vector<bf16>& a, const std::vector<bf16>& b,
                 int width, bool exact, double tol) {
    for (int r = 0; r < c.R; ++r)
        for (int t = 0; t < c.L; ++t) {
            const size_t s = row_of(c, r, t);
            rows_match(f, std::string(name) + " " + at(r, t), &a[s * size_t(width)], &b[s * size_t(width)], width, exact, tol);
        }
}

template <class T>
void states_within(Findings& f, const Config& c, const std::vector<float>& a, const std::vector<T>& b, double rel) {
    const size_t head = size_t(c.V) * c.K;
    std::vector<float> bb(head);
    for (int s = 0; s < c.slots; ++s)
        for (int h = 0; h < c.H; ++h) {
            const size_t off = (size_t(s) * c.H + h) * head;
            for (size_t i = 0; i < head; ++i) bb[i] = float(b[off + i]);
            states_match(f, "ssm_state slot " + std::to_string(s) + " head " + std::to_string(h), &a[off], bb.data(),
                         int(head), false, rel);
        }
}

// Each stage of the original path in T, fed the target's own inputs to that stage (teacher forcing).
template <class T>
Verdict stage_check(const char* name, const StepInputs& in, const StepOutputs<float>& out, double u, double state_rel) {
    const Config& c = in.cfg;
    const StepOutputs<T> want = ref::teacher_forced<T>(in, ReductionOrder{}, out);
    Findings f(name);
    rows_within(f, "prefix_out", c, out.prefix_out, want.prefix_out, c.D, true, 0);
    rows_within(f, "blocks", c, out.blocks, want.blocks, 8 * c.D, true, 0);
    rows_within(f, "x", c, out.x, want.x, c.D, false, u);
    rows_within(f, "proj (fed the target's x)", c, out.proj, want.proj, c.N, false, u);
    rows_within(f, "g1 (fed the target's proj)", c, out.g1, want.g1, c.E(), false, u);
    rows_within(f, "qkv (fed the target's proj)", c, out.qkv, want.qkv, c.C, false, u);
    for (int s = 0; s < c.slots; ++s)
        conv_entries_match(f, "(fed the target's proj)", in, out.conv_state, s, 0, in, want.conv_state, s, 0, c.conv_len(), true);
    rows_within(f, "o (fed the target's qkv, proj, g1)", c, out.o, want.o, c.E(), false, u);
    states_within(f, c, out.ssm_state, want.ssm_state, state_rel);
    rows_within(f, "core_out (fed the target's o, proj)", c, out.core_out, want.core_out, c.E(), false, u);
    return f.verdict();
}

}  // namespace

Verdict check_reference_stages(const StepInputs& in, const StepOutputs<float>& out, const AgreementBounds& b) {
    return stage_check<float>("reference-stages", in, out, b.stage_row_ulp, b.state_rel);
}

Verdict check_oracle(const StepInputs& in, const StepOutputs<float>& out, const AgreementBounds& b) {
    return stage_check<double>("oracle", in, out, b.stage_row_ulp, b.state_rel);
}

}  // namespace monokda::props
