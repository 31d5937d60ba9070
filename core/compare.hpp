// Per-tensor agreement between two results: the numbers SPEC §5 talks in.
#pragma once
#include <string>
#include <vector>

#include "core/safetensors.hpp"

namespace monokda {

struct TensorDiff {
    std::string name;
    int64_t numel = 0;
    double frac_identical = 0;  // bit-identical (same dtype) or equal value (mixed dtypes)
    int64_t differing = 0;        // elements that are not (numel × (1 − frac_identical))
    int64_t first_differing = -1; // flat index of the first of them, -1 when none
    int64_t max_ulp = -1;       // in the tensors' own dtype (bf16/f32 ulps); -1 when dtypes differ
    double max_row_ulp = 0;     // max |a-b| in bf16 ulps of the row's scale (max |b| over the last dim),
                                // the "1 ulp at row scale" of SPEC §5; meaningful for bf16 tensors
    double max_abs = 0;
    double rel_l2 = 0;          // |a-b| / |b|  (0 when both are zero)
    double cosine = 1;
    bool nan_mismatch = false;  // NaN in one where the other has a number
};

// BadInput if shapes differ. b is the baseline for rel_l2.
TensorDiff diff_tensors(const std::string& name, const Tensor& a, const Tensor& b);
// Every tensor present in both, in name order.
std::vector<TensorDiff> diff_files(const TensorFile& a, const TensorFile& b);
std::string format_diff_table(const std::vector<TensorDiff>& rows);

}  // namespace monokda
