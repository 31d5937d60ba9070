// The reduction-order envelope (SPEC §5): how far reordering the sums alone moves each
// order-sensitive output away from the f64 oracle, measured by running the reference with many
// orders. An implementation (the emulated decomposition, or the GPU kernel) passes when its own
// distance from the oracle lies inside. Saved as JSON for the GPU differential test; the format is
// in docs/emulator.md.
#pragma once
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/step.hpp"

namespace monokda::emu {

// The outputs an envelope covers (SPEC §5 "order-sensitive").
extern const char* const kEnvelopeOutputs[7];

struct EnvelopeBound {
    std::string name;
    std::vector<TensorDiff> per_order;  // each order's distance from the oracle
    // bounds = worst over the orders, widened by the margins below
    double max_row_ulp = 0;         // bf16 outputs only (0 for ssm_state)
    double min_frac_identical = 1;  // fraction equal to the oracle's value
    double max_frac_identical = 1;  // the best order's: max − min is the orders' spread (0 when unknown)
    double max_rel_l2 = 0;
    double max_abs = 0;
};

struct Envelope {
    int format_version = 1;
    std::string fixture_digest;  // inputs_digest of the fixture it was measured on
    std::string config;          // "D=.. H=.. K=.. V=.. F=.. N=.. R=.. L=.. nb=.."
    std::vector<std::string> orders;
    // Margins (documented; envelope_limits applies them): a finite sample of orders underestimates
    // the spread, so the bounds are the sample's worst widened by these.
    double rel_margin = 0.5;          // ssm_state: max_rel_l2 and max_abs × (1 + rel_margin)
    double identical_margin = 0.002;  // min_frac_identical − the most of this, the orders' spread and
    int64_t identical_slack = 4;      //   this many elements of the output (absolute fractions)
    double row_ulp_margin = 0.5;      // max_row_ulp + row_ulp_margin, at least 1 (bf16 ulps at row scale)
    std::vector<EnvelopeBound> outputs;
    // Optional: the distance of the reference in a plan's order (its ReductionOrder::str()) from the
    // oracle, recorded with the envelope. A candidate bit-identical to that reference has exactly
    // this distance, so it can be judged without running the oracle again.
    std::string plan_order;
    std::string plan_order_reference_digest;      // file_digest of that reference's outputs
    std::vector<TensorDiff> plan_order_distance;  // empty or one per output, in `outputs` order
    // Empty while the bounds are the measured ones; else what widen() did to them (saved as
    // "widening" in the file, printed by format_envelope_checks).
    std::string widening;
    const EnvelopeBound* find(const std::string& name) const;
};

// A widening for a candidate that is more than a reordering of the reference's f32 sums in some
// stage (SPEC §5: "widened for tensor-core accumulation where a stage uses it"). On each output it
// names, the orders' worst distance is scaled before the envelope's margins apply:
//   differing fraction (1 − identical), rel-L2, max abs: × spread;  row ulp: × spread + row_ulp_floor.
// The other outputs keep their bounds.
struct Widening {
    std::string reason;
    std::vector<std::string> outputs;
    double spread = 1;
    double row_ulp_floor = 0;  // bf16 ulps at row scale (not applied to ssm_state, judged without it)
};
// A copy of `env` whose bounds are widened by `w` (per_order keeps the measured distances).
Envelope widen(const Envelope& env, const Widening& w);
// The GPU kernel's in_proj on the matrix unit (mma: bf16 products summed in f32 in the unit's own
// order and alignment, not an order of rounded f32 adds): proj and everything computed from it
// (g1, qkv, o, core_out, ssm_state; x is upstream) may move further than a reorder of f32 sums.
// Spread 4/3 and row ulp + 0.5: with the margins, rel-L2 and max abs ≤ 2 × the worst (the factor of
// the rule the GPU test used before; max abs one binade up), row ulp ≤ 4/3 × the worst + 1 (one ulp
// more). The H200 sweep stayed inside even the measured bounds (docs/kernel.md), so this is a guard
// on the quantised metrics, not room the kernel uses.
Widening matrix_unit_in_proj_widening();

// The orders used by default: n of them, from a fixed list (sequential, pairwise, splits, shuffles).
std::vector<std::string> default_envelope_orders(int n);
// The length of that list: the most orders an envelope is measured with.
int max_envelope_order_count();
// How many of them an envelope measures when not told: 8 for k3-sized configs, 12 otherwise.
int default_envelope_order_count(const Config& c);
// One more measured run (`label`, its distances from the oracle, one per output in
// kEnvelopeOutputs order): appended to per_order and folded into the bounds.
void add_envelope_sample(Envelope& env, const std::string& label, const std::vector<TensorDiff>& distances);

std::string inputs_digest(const StepInputs& in);
std::string file_digest(const TensorFile& f);  // FNV-1a 64 over every tensor's name, size and 64-bit words, hex

// Runs the f64 oracle once and the f32 reference once per order (OpenMP over orders). The oracle's
// outputs go to *oracle_out when given, for checking a candidate without running it again.
Envelope build_envelope(const StepInputs& in, const std::vector<std::string>& orders, TensorFile* oracle_out = nullptr);
// More orders into an envelope measured on `in`, against the oracle it was measured with (no second
// oracle run, no order run twice).
void add_envelope_orders(Envelope& env, const StepInputs& in, const std::vector<std::string>& orders, const TensorFile& oracle);

// The bounds an output of `numel` elements is held to. bf16 outputs: the identical fraction and the
// row-scale ulps (a difference of bf16 tensors is a count of roundings moved and how far each
// moved; its rel-L2 and max abs follow from those and are the noisier numbers: on a small step one
// flip moves them by a lot). ssm_state (f32, every written element differs): rel-L2 and max abs.
struct EnvelopeLimits {
    bool state = false;              // ssm_state: the norms are judged, else identical and row ulp
    double min_frac_identical = 0;   // bf16
    int64_t max_differing = 0;       // the same floor as a count of elements: judged on counts, so a
                                     // candidate exactly at the floor is not failed by rounding
    double max_row_ulp = 0;          // bf16
    double max_rel_l2 = 0, max_abs = 0;  // ssm_state (reported for the others)
};
EnvelopeLimits envelope_limits(const Envelope& env, const EnvelopeBound& b, int64_t numel);

struct EnvelopeCheck {
    std::string name;
    TensorDiff diff;   // the candidate's distance from the oracle
    bool inside = true;
    std::string why;   // which bound it exceeds
};
// Distance of `candidate` (an output file's tensors) from the oracle's, against the bounds.
std::vector<EnvelopeCheck> check_envelope(const Envelope& env, const TensorFile& candidate, const TensorFile& oracle);
// Distances already measured (one per envelope output, in order) against the bounds.
std::vector<EnvelopeCheck> check_distances(const Envelope& env, const std::vector<TensorDiff>& distances);
// The distances of `candidate` from `oracle`, one per envelope output.
std::vector<TensorDiff> envelope_distances(const Envelope& env, const TensorFile& candidate, const TensorFile& oracle);
std::string format_envelope_checks(const std::vector<EnvelopeCheck>& checks, const Envelope& env);

std::string envelope_text(const Envelope& env);                      // the file's JSON
void write_envelope(const std::string& path, const Envelope& env);  // atomic (temp file + rename)
Envelope read_envelope(const std::string& path);                     // BadInput on a malformed file
Envelope parse_envelope(const std::string& json, const std::string& what);  // `what` names it in errors

// Envelopes measured once and built into the program, for built-in fixtures (key: FixtureSpec::str(),
// e.g. "k3.R2.L4.nb4.s1"); null when there is none. The caller must still compare the digest.
const Envelope* builtin_envelope(const std::string& fixture_key);

}  // namespace monokda::emu
