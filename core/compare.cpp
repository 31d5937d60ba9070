// Per-tensor agreement between two results (core/compare.hpp): ulp distances and rel-L2.
#include "core/compare.hpp"

#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/bf16.hpp"
#include "core/error.hpp"

namespace monokda {

namespace {

Eigen::ArrayXd to_double(const Tensor& t) {
    Eigen::ArrayXd out(t.numel());
    const uint8_t* p = t.bytes.data();
    for (int64_t i = 0; i < t.numel(); ++i) {
        switch (t.dtype) {
            case DType::BF16: { uint16_t b; memcpy(&b, p + 2 * i, 2); out[i] = bf16::from_bits(b).to_double(); break; }
            case DType::F32: { float v; memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
            case DType::F64: { double v; memcpy(&v, p + 8 * i, 8); out[i] = v; break; }
            case DType::I32: { int32_t v; memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
            case DType::I64: { int64_t v; memcpy(&v, p + 8 * i, 8); out[i] = double(v); break; }
        }
    }
    return out;
}

// position on the ordered integer line of the dtype, so that adjacent values differ by 1
int64_t ordered(const Tensor& t, int64_t i) {
    const uint8_t* p = t.bytes.data();
    switch (t.dtype) {
        case DType::BF16: { uint16_t b; memcpy(&b, p + 2 * i, 2); return bf16_ordered(b); }
        case DType::F32: { int32_t u; memcpy(&u, p + 4 * i, 4); return u < 0 ? -int64_t(u & 0x7fffffff) : u; }
        case DType::F64: { int64_t u; memcpy(&u, p + 8 * i, 8); return u < 0 ? -(u & 0x7fffffffffffffffll) : u; }
        case DType::I32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
        case DType::I64: { int64_t v; memcpy(&v, p + 8 * i, 8); return v; }
    }
    return 0;
}

}  // namespace

TensorDiff diff_tensors(const std::string& name, const Tensor& a, const Tensor& b) {
    if (a.shape != b.shape)
        bad_input("tensor '" + name + "' has shape " + a.shape_str() + " in one file and " + b.shape_str() + " in the other");
    TensorDiff d;
    d.name = name;
    d.numel = a.numel();
    if (d.numel == 0) { d.frac_identical = 1; d.max_ulp = 0; return d; }
    Eigen::ArrayXd x = to_double(a), y = to_double(b);
    const bool same_dtype = a.dtype == b.dtype;
    const size_t es = dtype_size(a.dtype);
    int64_t identical = 0, max_ulp = 0;
    for (int64_t i = 0; i < d.numel; ++i) {
        bool xn = std::isnan(x[i]), yn = std::isnan(y[i]);
        if (xn != yn) d.nan_mismatch = true;
        bool same;
        if (same_dtype) {
            same = memcmp(&a.bytes[size_t(i) * es], &b.bytes[size_t(i) * es], es) == 0;
            if (!xn && !yn) max_ulp = std::max<int64_t>(max_ulp, std::llabs(ordered(a, i) - ordered(b, i)));
        } else {
            same = x[i] == y[i] || (xn && yn);
        }
        identical += same;
        if (!same && d.first_differing < 0) d.first_differing = i;
        // the norms ignore positions where either side is NaN (those are counted by nan_mismatch);
        // zeroed in place: two arrays of the tensor's size, not six (k3 fixtures are 100 MB)
        if (xn || yn) x[i] = y[i] = 0.0;
    }
    d.frac_identical = double(identical) / double(d.numel);
    d.differing = d.numel - identical;
    d.max_ulp = same_dtype ? max_ulp : -1;
    const auto diff = x - y;  // an expression: the reductions below see the same values in the same order
    d.max_abs = diff.abs().maxCoeff();
    const int64_t row = a.shape.empty() ? 1 : std::max<int64_t>(1, a.shape.back());
    for (int64_t r0 = 0; r0 < d.numel; r0 += row) {
        double scale = y.segment(r0, row).abs().maxCoeff();
        double err = (x.segment(r0, row) - y.segment(r0, row)).abs().maxCoeff();
        if (err == 0) continue;
        // a zero row counts any error as huge
        double ulp = bf16_row_ulp(scale);
        d.max_row_ulp = std::max(d.max_row_ulp, ulp > 0 ? err / ulp : INFINITY);
    }
    double nb = std::sqrt((y * y).sum()), nx = std::sqrt((x * x).sum()), nd = std::sqrt((diff * diff).sum());
    d.rel_l2 = nb > 0 ? nd / nb : (nd > 0 ? INFINITY : 0.0);
    d.cosine = (nb > 0 && nx > 0) ? (x * y).sum() / (nx * nb) : (nb == nx ? 1.0 : 0.0);
    return d;
}

std::vector<TensorDiff> diff_files(const TensorFile& a, const TensorFile& b) {
    std::vector<TensorDiff> rows;
    for (const auto& [name, t] : a.tensors)
        if (b.has(name)) rows.push_back(diff_tensors(name, t, b.get(name)));
    return rows;
}

std::string format_diff_table(const std::vector<TensorDiff>& rows) {
    std::string out;
    char line[256];
    snprintf(line, sizeof line, "%-14s %10s %12s %8s %8s %12s %12s %12s\n", "tensor", "elements", "identical%",
             "max_ulp", "row_ulp", "max_abs", "rel_l2", "cosine");
    out += line;
    for (const auto& r : rows) {
        snprintf(line, sizeof line, "%-14s %10lld %12.4f %8s %8.3g %12.4g %12.4g %12.9f%s\n", r.name.c_str(),
                 (long long)r.numel, 100.0 * r.frac_identical,
                 r.max_ulp < 0 ? "-" : std::to_string(r.max_ulp).c_str(), r.max_row_ulp, r.max_abs, r.rel_l2, r.cosine,
                 r.nan_mismatch ? "  NaN-mismatch" : "");
        out += line;
    }
    return out;
}

}  // namespace monokda
