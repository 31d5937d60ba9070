// Per-tensor comparison: the numbers SPEC §5 talks in, checked on hand-made differences.
#include <doctest/doctest.h>

#include <cmath>

#include "core/bf16.hpp"
#include "core/compare.hpp"
#include "core/error.hpp"

using namespace monokda;

namespace {

Tensor bf(std::vector<int64_t> shape, std::initializer_list<float> v) {
    std::vector<bf16> b;
    for (float x : v) b.push_back(bf16::round(x));
    return Tensor::of(DType::BF16, std::move(shape), b);
}

}  // namespace

TEST_SUITE("core") {

TEST_CASE("compare: identical tensors") {
    Tensor a = bf({2, 2}, {1, -2, 0.5f, 3});
    TensorDiff d = diff_tensors("t", a, a);
    CHECK(d.frac_identical == 1.0);
    CHECK(d.max_ulp == 0);
    CHECK(d.max_row_ulp == 0);
    CHECK(d.max_abs == 0);
    CHECK(d.rel_l2 == 0);
    CHECK(d.cosine == doctest::Approx(1.0));
    CHECK_FALSE(d.nan_mismatch);
}

TEST_CASE("compare: one bf16 ulp, measured in the element's and in the row's ulps") {
    // row 0: [1, 0.5] vs [1 + 2^-7, 0.5]: one ulp of 1, and one ulp at the row's scale (1)
    // row 1: [0.25, 4] vs [0.25 + 2^-9, 4]: one ulp of 0.25, but 1/16 ulp at the row's scale (4)
    Tensor a = bf({2, 2}, {1 + 1.0f / 128, 0.5f, 0.25f + 1.0f / 512, 4});
    Tensor b = bf({2, 2}, {1, 0.5f, 0.25f, 4});
    TensorDiff d = diff_tensors("t", a, b);
    CHECK(d.frac_identical == 0.5);
    CHECK(d.max_ulp == 1);
    CHECK(d.max_row_ulp == doctest::Approx(1.0));
    CHECK(d.max_abs == doctest::Approx(1.0 / 128));
    // |a-b| / |b| by hand
    const double nd = std::sqrt(std::pow(1.0 / 128, 2) + std::pow(1.0 / 512, 2));
    const double nb = std::sqrt(1 + 0.25 + 0.0625 + 16);
    CHECK(d.rel_l2 == doctest::Approx(nd / nb));
    // the ulp distance crosses zero on the ordered line: +0 and -0 are 0 apart, -tiny..+tiny 2
    Tensor z1 = Tensor::of<bf16>(DType::BF16, {2}, {bf16::from_bits(0x0000), bf16::from_bits(0x0001)});
    Tensor z2 = Tensor::of<bf16>(DType::BF16, {2}, {bf16::from_bits(0x8000), bf16::from_bits(0x8001)});
    CHECK(diff_tensors("z", z1, z2).max_ulp == 2);
}

TEST_CASE("compare: NaN against a number is flagged; shapes must match; mixed dtypes compare values") {
    Tensor a = bf({2}, {NAN, 1});
    Tensor b = bf({2}, {0, 1});
    CHECK(diff_tensors("t", a, b).nan_mismatch);
    CHECK_FALSE(diff_tensors("t", a, a).nan_mismatch);
    CHECK_THROWS_WITH_AS(diff_tensors("t", a, bf({1, 2}, {0, 1})), doctest::Contains("has shape [2] in one file and [1, 2]"),
                         BadInput);
    Tensor f = Tensor::of<float>(DType::F32, {2}, {0.0f, 1.0f});
    Tensor d = Tensor::of<double>(DType::F64, {2}, {0.0, 1.0 + 1e-12});
    TensorDiff m = diff_tensors("m", f, d);
    CHECK(m.max_ulp == -1);
    CHECK(m.frac_identical == 0.5);
    CHECK(m.max_abs == doctest::Approx(1e-12).epsilon(0.01));
}
}
