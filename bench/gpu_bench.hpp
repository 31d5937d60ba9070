// `monokda bench` on the GPU (issue 6): the fused kernel, the unfused six-kernel chain and the
// memory floor, each step graph-replayed over rotating weight/state sets; and the unfused chain's
// correctness check against the reference. Plain C++ interface; defined in the CUDA build only.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bench/fused_step.hpp"
#include "bench/perf_report.hpp"
#include "core/config.hpp"
#include "core/step.hpp"

namespace monokda::bench {

struct GpuBenchOptions {
    std::vector<std::pair<int, int>> shapes;  // (R, L); empty: the sweep of issue 6
    int nb = 4;
    bool block_write = false;
    int reps = 200;            // timed replays a measurement
    int sets = 4;              // weight/state sets rotated through (>= 3)
    int steps_per_set = 4;     // a graph holds sets·steps_per_set steps
    bool fused = true;         // measure the fused kernel when the build has it
    bool stages = true;        // per-stage variants of the unfused chain
    FusedChoices fused_choices;  // launch choices of the fused kernel (defaults: the production launch)
    std::string commit, command;
};

// The sweep of issue 6: S in {1,2,4,8,16,32,64}, several R×L splits each (R <= 64, L <= 8).
std::vector<std::pair<int, int>> default_sweep();

// Runs every measurement; progress lines go to log. Throws BadInput for options out of range.
PerfRun run_gpu_bench(const GpuBenchOptions& opt, std::ostream& log);

// The unfused chain against ref::run<float> and the teacher-forced reference stages.
struct CheckCase {
    int R = 2, L = 4, nb = 4;
    bool block_write = false;
    bool ds_layout = false;
    int null_requests = 0;
    uint64_t seed = 1;
    std::string str() const;
};
std::vector<CheckCase> default_check_cases();
// The unfused chain's outputs for one step, every hand-off included (x, proj, g1, qkv, o), as a
// candidate of `monokda verify` (tests/gpu/test_verify_gpu.cpp). BadInput without a device.
StepOutputs<float> run_unfused(const StepInputs& in);
// plant: "" or a tensor name (x, proj, conv_state, o, core_out, ssm_state) whose GPU result is
// corrupted after download, to show the check fires. Returns 0 when every check passes, 1 otherwise;
// the report (markdown) goes to report.
int run_unfused_check(const std::vector<CheckCase>& cases, const std::string& plant, std::ostream& report,
                      std::ostream& log);

}  // namespace monokda::bench
