// Shared by the GPU differential tests: skip without a device, k3 fixtures, the kernel's outputs
// as tensors, per-tensor diffs against the reference, and a results log for docs/results/.
#pragma once
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/fixture_gen.hpp"
#include "core/plan.hpp"
#include "kernels/kda_pre.hpp"
#include "reference/reference.hpp"

namespace monokda::gpu_test {

// ctest maps exit code 77 to "skipped" (SKIP_RETURN_CODE): no device, no test.
inline void require_gpu() {
    static const gpu::DeviceInfo d = gpu::probe();
    if (!d.present) {
        std::cout << "SKIPPED: no GPU to run kda_pre on: " << d.why << "\n";
        std::exit(77);
    }
}

struct Case {
    int R = 1, L = 1, nb = 4;
    bool block_write = false;
    ConvLayout layout = ConvLayout::sd;
    uint64_t seed = 1;
    int null_requests = 0;
    bool init_null = false;  // a live running slot whose last-accepted slot is "none"
    int partial_nulls = 0;   // live requests with "none" at tokens other than a-1 (FixtureOptions)
    ScaleProfile scale = ScaleProfile::standard;
    std::string name() const {
        char b[240];
        snprintf(b, sizeof b, "S=%d R=%d L=%d nb=%d bw=%d %s seed=%llu null=%d%s%s%s%s", R * L, R, L, nb,
                 block_write ? 1 : 0, to_string(layout), (unsigned long long)seed, null_requests,
                 init_null ? " init-null" : "", partial_nulls ? (" partial-nulls=" + std::to_string(partial_nulls)).c_str() : "",
                 scale != ScaleProfile::standard ? " scale=" : "", scale != ScaleProfile::standard ? to_string(scale) : "");
        return b;
    }
};

inline StepInputs make_case(const Case& k) {
    Config c = Config::preset("k3");
    c.R = k.R, c.L = k.L, c.nb = k.nb, c.block_write = k.block_write, c.conv_layout = k.layout, c.seed = k.seed;
    FixtureOptions o;
    o.null_requests = k.null_requests;
    o.partial_nulls = k.partial_nulls;
    o.scale = k.scale;
    StepInputs in = make_fixture(c, o);
    if (k.init_null) {
        // the first live request with a > 1 keeps its running slot but loses its last-accepted slot:
        // the conv state is written, the recurrence starts from nothing and writes no state (SPEC §3 E)
        for (int r = 0; r < c.R; ++r) {
            const int a = in.num_accepted[size_t(r)];
            if (a > 1 && in.idx(r, 0) > 0) {
                in.state_indices[size_t(r * c.L + a - 1)] = -1;
                break;
            }
        }
        in.validate_step();
    }
    return in;
}

// MONOKDA_GPU_INPROJ=exact: the launches use the exact-order in_proj body (LaunchOptions).
inline bool exact_in_proj() {
    const char* m = std::getenv("MONOKDA_GPU_INPROJ");
    return m && std::string(m) == "exact";
}
inline gpu::RunOptions run_options() {
    gpu::RunOptions o;
    o.exact_in_proj = exact_in_proj();
    return o;
}


// Appends a line to $MONOKDA_GPU_RESULTS/<file> (the raw material of docs/results/), and prints it.
inline void log_line(const std::string& file, const std::string& line) {
    std::cout << line << "\n";
    if (const char* dir = std::getenv("MONOKDA_GPU_RESULTS")) {
        std::ofstream f(std::string(dir) + "/" + file, std::ios::app);
        f << line << "\n";
    }
}

inline std::string row(const std::string& what, const TensorDiff& d) {
    char b[320];
    snprintf(b, sizeof b, "| %s | %s | %lld | %.5f | %lld | %.3g | %.3g |%s", what.c_str(), d.name.c_str(),
             (long long)d.numel, 100.0 * d.frac_identical, (long long)d.max_ulp, d.max_row_ulp, d.rel_l2,
             d.nan_mismatch ? " NaN-mismatch |" : "");
    return b;
}

// The kernel's tensor against the expected one, logged as a row of `file` (every diff the tests
// judge is also a line of the results).
inline TensorDiff logged_diff(const std::string& file, const std::string& what, const std::string& name,
                              const Tensor& kernel, const Tensor& expected) {
    const TensorDiff d = diff_tensors(name, kernel, expected);
    log_line(file, row(what, d));
    return d;
}

inline const char* kTableHead = "| case | tensor | elements | identical % | max ulp | max row ulp | rel-L2 |\n|---|---|---|---|---|---|---|";

}  // namespace monokda::gpu_test
