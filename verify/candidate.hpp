// A candidate's output file as `monokda verify` reads it: SPEC §2's names and layouts, or the
// names its writer used (--map) and ssm_state as [slots, H, K, V] (--ssm-layout hkv). Every
// tensor is checked (take_tensor) before a check runs; a problem is BadInput naming the tensor.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/safetensors.hpp"
#include "core/step.hpp"
#include "verify/same.hpp"

namespace monokda::verify {

enum class SsmLayout { hvk, hkv };  // hvk: SPEC §2's [slots, H, V, K]; hkv: [slots, H, K, V] (vLLM's)
SsmLayout parse_ssm_layout(const std::string& s);  // BadInput unless hvk | hkv
const char* to_string(SsmLayout l);

struct CandidateOptions {
    std::map<std::string, std::string> rename;  // their name -> SPEC §2's
    SsmLayout ssm_layout = SsmLayout::hvk;
};

// "core_attn_out=core_out,recurrent_state=ssm_state" -> {their: ours}; BadInput for a malformed
// item, an unknown SPEC name, or a name mapped twice.
std::map<std::string, std::string> parse_map(const std::string& text);

struct ReadCandidate {
    Candidate candidate;
    std::vector<std::string> ignored;  // tensors of the file that are not outputs (inputs, extras), as named there
};

// The outputs of `in`'s step from file f. Required: prefix_out, conv_state, ssm_state, core_out,
// and blocks on a block-write layer; x, proj, g1, qkv, o when exported. Index tensors the file
// carries (state_indices, num_accepted; I32 or I64) must be the fixture's.
ReadCandidate read_candidate(const TensorFile& f, const StepInputs& in, const CandidateOptions& o);

}  // namespace monokda::verify
