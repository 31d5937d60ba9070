// Comparison helpers shared by the property checks: they record the first difference with enough
// context (tensor, request, token, column, both values) to act on it, and count the rest.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>

#include "core/bf16.hpp"
#include "properties/properties.hpp"
#include "properties/target.hpp"
#include "verify/same.hpp"

namespace monokda::props::detail {

class Findings {
public:
    explicit Findings(std::string check) : check_(std::move(check)) {}
    void add(const std::string& what) {
        if (count_++ == 0) first_ = what;
    }
    bool any() const { return count_ > 0; }
    Verdict verdict() const {
        Verdict v;
        v.check = check_;
        if (!count_) return v;
        v.kind = Verdict::FAIL;
        v.detail = first_ + (count_ > 1 ? " (and " + std::to_string(count_ - 1) + " more)" : "");
        return v;
    }

private:
    std::string check_, first_;
    long count_ = 0;
};

inline Verdict skip(const std::string& check, const std::string& why) {
    Verdict v;
    v.kind = Verdict::SKIP;
    v.check = check;
    v.detail = why;
    return v;
}

inline std::string hex16(bf16 b) {
    char s[32];
    snprintf(s, sizeof s, "%g (0x%04x)", double(b.to_float()), unsigned(b.bits));
    return s;
}
inline std::string hexf(float f) {
    char s[40];
    snprintf(s, sizeof s, "%.9g (0x%08x)", double(f), unsigned(f32_bits(f)));
    return s;
}

// bf16 ulp of the largest magnitude in a row (the "row scale" of SPEC §5); 0 for an all-zero row.
inline double row_ulp(const bf16* b, int n) {
    double m = 0;
    for (int i = 0; i < n; ++i) m = std::fmax(m, std::fabs(double(b[i].to_float())));
    return bf16_row_ulp(m);
}

// Compares n bf16 values: bit-exact when `exact`, else within tol_row_ulp bf16 ulps of b's row
// scale. NaN matches only NaN.
inline void rows_match(Findings& f, const std::string& where, const bf16* a, const bf16* b, int n, bool exact,
                       double tol_row_ulp = 0) {
    const double ulp = exact ? 0 : row_ulp(b, n);
    for (int i = 0; i < n; ++i) {
        if (a[i].bits == b[i].bits) continue;
        const double x = a[i].to_float(), y = b[i].to_float();
        if (!exact && !std::isnan(x) && !std::isnan(y) && std::fabs(x - y) <= tol_row_ulp * ulp) continue;
        f.add(where + " col " + std::to_string(i) + ": " + hex16(a[i]) + " vs expected " + hex16(b[i]));
        return;  // one finding per row keeps the count meaningful
    }
}

// f32 states: exact, or max |a-b| <= rel * max |b| over the n values.
inline void states_match(Findings& f, const std::string& where, const float* a, const float* b, int n, bool exact,
                         double rel = 0) {
    double scale = 0;
    if (!exact)
        for (int i = 0; i < n; ++i) scale = std::fmax(scale, std::fabs(double(b[i])));
    for (int i = 0; i < n; ++i) {
        if (f32_bits(a[i]) == f32_bits(b[i])) continue;
        if (!exact && std::fabs(double(a[i]) - double(b[i])) <= rel * scale) continue;
        f.add(where + " element " + std::to_string(i) + ": " + hexf(a[i]) + " vs expected " + hexf(b[i]));
        return;
    }
}

inline std::string at(int r, int t) { return "request " + std::to_string(r) + " token " + std::to_string(t); }

}  // namespace monokda::props::detail

namespace monokda::props::detail {

// Which per-row outputs a comparison covers.
enum RowMask : unsigned {
    kPrefix = 1, kBlocks = 2, kX = 4, kProj = 8, kG1 = 16, kQkv = 32, kO = 64, kCore = 128,
    kStateFree = kPrefix | kBlocks | kX | kProj | kG1,  // what does not read conv or ssm state
    kAllRows = 255,
};

// Row ra of a against row rb of b for every output in mask (dims equal; R and L may differ).
// proj_cols limits proj to its first columns (the pad columns are free to differ in pad-rows).
void rows_match_all(Findings& f, const std::string& where, const Config& c, const StepOutputs<float>& a, size_t ra,
                    const StepOutputs<float>& b, size_t rb, unsigned mask, bool exact, double tol_row_ulp = 0,
                    int proj_cols = -1);

// conv_state entries ja..ja+n-1 of slot sa in a against jb.. of slot sb in b (each entry a C-wide row).
void conv_entries_match(Findings& f, const std::string& where, const StepInputs& la, const std::vector<bf16>& a,
                        int sa, int ja, const StepInputs& lb, const std::vector<bf16>& b, int sb, int jb, int n,
                        bool exact, double tol_row_ulp = 0);

// ssm_state of slot sa in a against slot sb in b, head by head.
void ssm_slot_match(Findings& f, const std::string& where, const Config& c, const std::vector<float>& a, int sa,
                    const std::vector<float>& b, int sb, bool exact, double rel = 0);

// Every tensor of a against b, bit for bit (same shape).
void outputs_identical(Findings& f, const Config& c, const StepOutputs<float>& a, const StepOutputs<float>& b);

using verify::zero_core_bits;  // the bits step F gives a row of o that is +0 throughout

// o and core_out rows of request r are those of a request without an initial state (SPEC §3 E).
void null_outputs(Findings& f, const StepInputs& in, const StepOutputs<float>& out, int r);

}  // namespace monokda::props::detail
