// Fixture transforms: new valid steps made from an old one. Properties build their variant steps
// from these (permuted requests, relabelled slots, ...) and the fuzzer's shrinker uses them to make a
// failing step smaller. Every result passes StepInputs::validate_step.
#pragma once
#include <vector>

#include "core/rng.hpp"
#include "core/step.hpp"

namespace monokda::props {

// Row index of token t of request r.
inline size_t row_of(const Config& c, int r, int t) { return size_t(r) * size_t(c.L) + size_t(t); }

// Requests reqs[0], reqs[1], ... of `in` become requests 0, 1, ...: their rows, state_indices rows and
// num_accepted move; slots and the state tensors are unchanged. reqs must not repeat a live request.
StepInputs select_requests(const StepInputs& in, const std::vector<int>& reqs);

// Old slot s becomes slot map[s] (map[s] < 0: dropped), in a state of new_slots slots; slots that
// nothing maps to are filled with random values from rng (they are untouched slots of the new step).
StepInputs relabel_slots(const StepInputs& in, const std::vector<int32_t>& map, int new_slots, Rng& rng);

// Keeps tokens 0..L2-1 of every request (num_accepted clamped to L2, conv_state entries 0..W-3+L2).
StepInputs truncate_tokens(const StepInputs& in, int L2);

// Keeps the first D2 hidden columns, H2 heads, K2 = V2 key/value dims and F2 forget-gate rank;
// in_proj keeps its number of zero pad rows. Each kept weight, state and input element is unchanged.
StepInputs restrict_dims(const StepInputs& in, int D2, int H2, int K2, int F2);

// A new conv_state for `to` (whose cfg may have another L) whose entry j of each slot is entry j of
// `from` where both have it; entries `from` lacks are random values from rng.
std::vector<bf16> resize_conv_state(const StepInputs& from, const Config& to, Rng& rng);

// Random bf16 values (uniform, standard deviation sd): fills for new rows and untouched slots.
std::vector<bf16> random_bf16(size_t n, Rng& rng, double sd = 1.0);

}  // namespace monokda::props
