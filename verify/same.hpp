// SPEC §5, "the same", defined once: the checks `monokda verify` reports on a candidate's outputs,
// the checks the fuzzer runs on a target (fuzz/checks.cpp, properties/agreement.cpp) and their
// thresholds. A check's verdict names the first element that breaks it. docs/verify.md.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/step.hpp"
#include "emulator/envelope.hpp"
#include "core/reduction_order.hpp"

namespace monokda::verify {

// The numbers SPEC §5 holds a stage to.
struct Thresholds {
    double stage_identical = 0.999;               // teacher-forced: bit-identical fraction, at least
    double stage_identical_tensor_cores = 0.995;  // proj, with an in_proj through tensor cores
    double stage_row_ulp = 1.0;                   // and never more than this many bf16 ulps at row scale
    double state_rel = 1e-5;                      // ssm_state: per slot and head, max |a-b| <= rel * max |b|
    // The identical fraction is a count: a stage of n elements at the floor's rate q differs in n·q
    // of them give or take sqrt(n·q) (a fuzz case of 200 elements, one flip: 99.5 %), so n·q plus
    // three standard deviations may differ, and never fewer than this many.
    int64_t small_step_allowance = 4;
    // Where a stage's own sums, reordered, move more elements than the floor allows on this step (a
    // 7168-term AttnRes logit can), a stage may differ in as many as the most another order moves
    // (measured: the envelope's orders, fed the same inputs) times 1 + this margin.
    double stage_noise_margin = 0.5;
};
const Thresholds& thresholds();

// How many of n elements may differ under `floor` (a bit-identical fraction): q = 1 − floor,
// ⌊n·q + 3·sqrt(n·q)⌋, or the small-step allowance where that is more.
int64_t allowed_differing(int64_t n, double floor, const Thresholds& t = thresholds());

enum class InProj { exact, tensor_cores };
InProj parse_in_proj(const std::string& s);  // "exact" | "tensor-cores"; BadInput otherwise
const char* to_string(InProj p);

// in_proj as a tensor-core GEMM gives it (a model): each element correctly rounded, except those
// whose exact value lies within differing_fraction × ½ ulp of a rounding tie, which go to the other
// neighbour (1 ulp, the roundings a less exact accumulation flips first): about that fraction of
// them, each decided on its own, so a row comes out the same whatever the step. [S, N].
std::vector<bf16> tensor_core_like_proj(const StepInputs& in, const std::vector<bf16>& x, double differing_fraction);

// The envelope as judged for `p`: for tensor cores, `env` plus measured runs whose in_proj is
// tensor_core_like_proj at the stage floor (1 − stage_identical_tensor_cores differing), every
// later stage recomputed from it, so that the bounds of proj and of everything downstream hold
// what such an in_proj does on this fixture. exact: env as it is.
emu::Envelope widen_for(const emu::Envelope& env, InProj p, const StepInputs& in, const TensorFile& oracle,
                        const Thresholds& t = thresholds());

// The bits step F gives a row of o that is +0 throughout: ((+0 · r) · w) · sigmoid(g2) keeps w's sign.
inline uint16_t zero_core_bits(bf16 o_norm_w) { return o_norm_w.bits & 0x8000u; }

// One element of a tensor, located as SPEC §2 lays it out: request, token, head, column for row
// tensors; slot, entry, channel for conv_state; slot, head, v, k for ssm_state.
struct Element {
    std::string tensor;
    int64_t index = -1;                                // flat index in SPEC §2's layout
    std::string part;                                  // q | k | v | g | f_a | beta | pad where it applies
    std::vector<std::pair<std::string, int64_t>> at;   // e.g. {request 1} {token 0} {head 2} {column 37}
    double candidate = 0, expected = 0;
    std::string candidate_bits, expected_bits;         // "0x3f80"
    std::string str() const;                           // "o request 1 token 0 head 2 column 37: 0.5 (0x3f00), expected +0 (0x0000)"
};
Element locate(const Config& c, const std::string& tensor, int64_t index);

enum class Status { passed, failed, not_checked };
const char* to_string(Status s);  // "pass" | "fail" | "not_checked"

struct Check {
    std::string name;      // e.g. "exact.prefix_out", "stage.qkv", "envelope.core_out"
    std::string category;  // exact | own-proj | stage | envelope
    std::string tensor;    // the tensor it judges
    Status status = Status::not_checked;
    std::string summary;   // one line: what was compared and how it came out, or why not checked
    int64_t elements = 0, differing = 0;  // compared; and not bit-identical (or over the bound)
    bool has_first = false;
    Element first;         // failed: the first element that breaks it
    std::vector<std::pair<std::string, double>> numbers;  // the measured values and their bounds
    std::string str() const;                              // "FAIL stage.qkv: summary; first: element (and N more)"
};

bool all_passed(const std::vector<Check>& checks);  // none failed ("not checked" is not a failure)
const Check* first_failure(const std::vector<Check>& checks);

// What a candidate exported: its tensors in SPEC §2's layouts (ssm_state [slots, H, V, K]), and
// which of them it has. The outputs prefix_out, conv_state, ssm_state, core_out (and blocks on a
// block-write layer) are always there; the hand-offs x, proj, g1, qkv, o when exported.
struct Candidate {
    StepOutputs<float> out;
    std::set<std::string> present;
    bool has(const std::string& name) const { return present.count(name) != 0; }
    static Candidate all(StepOutputs<float> out);  // a target's outputs: every tensor present
};

// Every check name, in report order.
const std::vector<std::string>& check_names();

struct Options {
    InProj in_proj = InProj::exact;
    ReductionOrder stage_order;  // the order of the reference stages fed the candidate's hand-offs
    Thresholds thresholds;
};

// The exact set and the own-proj check (no reference run but step A).
std::vector<Check> exact_checks(const StepInputs& in, const Candidate& c);
// Teacher-forced, stage by stage, the reference stages in T (float: the reference; double: the
// oracle), each fed the candidate's own exported inputs to it.
template <class T>
std::vector<Check> stage_checks(const StepInputs& in, const Candidate& c, const Options& o);
// Free-running: each exported order-sensitive output's distance from the oracle against `env`
// (already widened, widen_for). oracle: the f64 reference's outputs (TensorFile, as build_envelope gives).
std::vector<Check> envelope_checks(const StepInputs& in, const Candidate& c, const emu::Envelope& env,
                                   const TensorFile& oracle);
// Every check of SPEC §5 in report order (check_names()); env/oracle null: the envelope checks are
// reported "not checked" with `no_envelope_why`.
std::vector<Check> verify_step(const StepInputs& in, const Candidate& c, const Options& o, const emu::Envelope* env,
                               const TensorFile* oracle, const std::string& no_envelope_why = "no envelope");

// The envelope for `in`, measured (n orders; 0: the emulator's default count for the config) with
// the oracle it was measured against.
struct MeasuredEnvelope {
    emu::Envelope envelope;
    TensorFile oracle;
};
MeasuredEnvelope measure_envelope(const StepInputs& in, int orders = 0);
// The envelope a candidate is judged against when it is measured: `orders` orders (0: the default
// count) widened for `p`. With the default count, a candidate outside it is judged once more against
// every order of the list before it fails: a sample of orders can miss the near-tie that the
// candidate's own order flips and carries downstream (one x element fans out over its row of proj),
// so a failure is claimed only against the widest sample (docs/verify.md). `declared`: the order
// the candidate says its sums follow, measured beside the sample ("" for none).
MeasuredEnvelope envelope_for(const StepInputs& in, const Candidate& c, InProj p, int orders = 0,
                              const std::string& declared = "");

}  // namespace monokda::verify
