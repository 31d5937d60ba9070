// Results of `monokda bench` and of the CPU benchmarks, and their renderings: the raw JSON of issue 6
// (exact schema), a detail JSON (per-stage times, bytes, settings), a markdown table with the targets
// judged, and an SVG plot. Pure C++, so reports can be re-rendered on a machine without a GPU.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace monokda::bench {

struct PerfRow {
    int R = 0, L = 0, S = 0, nb = 0;
    bool block_write = false;
    std::optional<double> fused_us;  // empty: not measured (never invented)
    double unfused_us = 0, floor_us = 0;
    int64_t floor_bytes = 0;
    // unfused chain, per stage A..F: the stage alone, and the chain without it (both graph-replayed)
    double alone_us[6] = {0, 0, 0, 0, 0, 0};
    double without_us[6] = {0, 0, 0, 0, 0, 0};
    int64_t stage_bytes[6] = {0, 0, 0, 0, 0, 0};
    // spread of the replays (p10, p90) of the two headline numbers
    double unfused_p10 = 0, unfused_p90 = 0;
    std::optional<double> fused_p10, fused_p90;
    int fused_reps = 0;  // replays a fused measurement used (fewer than reps for a slow kernel)
    // the fused kernel with its plan cut after the attn role, and after the gemv role
    std::optional<double> fused_attn_us, fused_attn_gemv_us;
    std::string gemm_algos;  // the tuned cuBLASLt algorithms of B and C, for the record
};

struct PerfRun {
    std::string device, commit, date, command;
    double copy_tb_s = 0;          // device-to-device copy, bytes read + written over time, same run
    int sets = 0;                  // weight/state sets rotated through
    int64_t set_bytes = 0;         // bytes of one set (weights + states + activations)
    int64_t l2_bytes = 0;          // the device's L2
    int reps = 0, steps_per_graph = 0;
    std::string fused_status;      // "measured" or why not
    std::vector<PerfRow> rows;
};

// {"device","commit","date","copy_tb_s","rows":[{"R","L","S","nb","fused_us","unfused_us","floor_us"}]};
// fused_us is null where not measured.
nlohmann::json perf_json(const PerfRun& run);
nlohmann::json perf_detail_json(const PerfRun& run);
PerfRun perf_from_detail_json(const nlohmann::json& j);  // BadInput on a malformed file

// One judged target of issue 6 (production shape, nb = 4).
struct TargetCheck {
    std::string what;    // e.g. "fused <= 1.15 x floor, S = 8 (R=2 L=4)"
    double value = 0;    // the measured ratio
    double limit = 0;
    bool measured = false, pass = false;
};
std::vector<TargetCheck> judge_gpu_targets(const PerfRun& run);

struct CpuBenchRow {
    std::string what, command;
    std::vector<double> runs_s;
    std::vector<double> cpu_s;  // user + system seconds of each run (all threads)
    double median_s = 0, target_s = 0;
    std::string note;  // e.g. why it was not measured
    bool measured = true;
};
struct CpuBench {
    std::string host, commit, date;
    int cores = 0;
    std::string loadavg;  // /proc/loadavg when the runs started: other work on the machine slows them
    std::vector<CpuBenchRow> rows;
};
nlohmann::json cpu_json(const CpuBench& b);
CpuBench cpu_from_json(const nlohmann::json& j);

double median(std::vector<double> v);  // of a non-empty vector
std::string perf_markdown(const PerfRun& run, const CpuBench* cpu = nullptr);
std::string cpu_markdown(const CpuBench& b);
std::string perf_svg(const PerfRun& run);

// Small helpers of the two benchmark programs (gpu_bench.cu, cpu_bench.cpp):
std::string utc_now();                                   // "2026-11-30T07:59:06Z"
std::string fmt(double v, int prec = 1);                 // fixed-point, prec decimals
std::string json_sibling(const std::string& json_path, const std::string& suffix);  // R.json -> R<suffix>

}  // namespace monokda::bench
