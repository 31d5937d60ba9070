// The benchmark's results and their renderings (bench/perf_report.hpp): the raw and detail JSON,
// the markdown table with its targets judged, and the SVG plot.
#include "bench/perf_report.hpp"

#include <ctime>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "bench/step_floor.hpp"
#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

namespace monokda::bench {

using nlohmann::json;

namespace {

json opt_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::optional<double> opt_from(const json& j) {
    if (j.is_null()) return std::nullopt;
    return j.get<double>();
}

}  // namespace

double median(std::vector<double> v) {
    if (v.empty()) bad_input("median of no values");
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json perf_json(const PerfRun& run) {
    json rows = json::array();
    for (const auto& r : run.rows)
        rows.push_back({{"R", r.R}, {"L", r.L}, {"S", r.S}, {"nb", r.nb}, {"fused_us", opt_json(r.fused_us)},
                        {"unfused_us", r.unfused_us}, {"floor_us", r.floor_us}});
    return {{"device", run.device}, {"commit", run.commit}, {"date", run.date}, {"copy_tb_s", run.copy_tb_s},
            {"monokda_version", version()}, {"monokda_commit", monokda::commit()}, {"rows", rows}};
}

json perf_detail_json(const PerfRun& run) {
    json j = perf_json(run);
    j["command"] = run.command;
    j["sets"] = run.sets;
    j["set_bytes"] = run.set_bytes;
    j["l2_bytes"] = run.l2_bytes;
    j["reps"] = run.reps;
    j["steps_per_graph"] = run.steps_per_graph;
    j["fused_status"] = run.fused_status;
    json rows = json::array();
    for (const auto& r : run.rows) {
        json s = json::array();
        for (int i = 0; i < 6; ++i)
            s.push_back({{"stage", kStageNames[i]}, {"alone_us", r.alone_us[i]}, {"without_us", r.without_us[i]},
                         {"bytes", r.stage_bytes[i]}});
        rows.push_back({{"R", r.R}, {"L", r.L}, {"S", r.S}, {"nb", r.nb}, {"block_write", r.block_write},
                        {"fused_us", opt_json(r.fused_us)}, {"fused_p10", opt_json(r.fused_p10)},
                        {"fused_p90", opt_json(r.fused_p90)}, {"fused_reps", r.fused_reps},
                        {"fused_attn_us", opt_json(r.fused_attn_us)}, {"fused_attn_gemv_us", opt_json(r.fused_attn_gemv_us)},
                        {"unfused_us", r.unfused_us},
                        {"unfused_p10", r.unfused_p10}, {"unfused_p90", r.unfused_p90}, {"floor_us", r.floor_us},
                        {"floor_bytes", r.floor_bytes}, {"gemm_algos", r.gemm_algos}, {"stages", s}});
    }
    j["rows"] = rows;
    return j;
}

PerfRun perf_from_detail_json(const json& j) {
    try {
        PerfRun run;
        run.device = j.at("device").get<std::string>();
        run.commit = j.at("commit").get<std::string>();
        run.date = j.at("date").get<std::string>();
        run.copy_tb_s = j.at("copy_tb_s").get<double>();
        run.command = j.value("command", "");
        run.sets = j.value("sets", 0);
        run.set_bytes = j.value("set_bytes", int64_t(0));
        run.l2_bytes = j.value("l2_bytes", int64_t(0));
        run.reps = j.value("reps", 0);
        run.steps_per_graph = j.value("steps_per_graph", 0);
        run.fused_status = j.value("fused_status", "");
        for (const auto& jr : j.at("rows")) {
            PerfRow r;
            r.R = jr.at("R").get<int>();
            r.L = jr.at("L").get<int>();
            r.S = jr.at("S").get<int>();
            r.nb = jr.at("nb").get<int>();
            r.block_write = jr.value("block_write", false);
            r.fused_us = opt_from(jr.at("fused_us"));
            r.unfused_us = jr.at("unfused_us").get<double>();
            r.floor_us = jr.at("floor_us").get<double>();
            r.floor_bytes = jr.value("floor_bytes", int64_t(0));
            if (jr.contains("fused_p10")) r.fused_p10 = opt_from(jr["fused_p10"]);
            if (jr.contains("fused_p90")) r.fused_p90 = opt_from(jr["fused_p90"]);
            r.fused_reps = jr.value("fused_reps", 0);
            if (jr.contains("fused_attn_us")) r.fused_attn_us = opt_from(jr["fused_attn_us"]);
            if (jr.contains("fused_attn_gemv_us")) r.fused_attn_gemv_us = opt_from(jr["fused_attn_gemv_us"]);
            r.unfused_p10 = jr.value("unfused_p10", 0.0);
            r.unfused_p90 = jr.value("unfused_p90", 0.0);
            r.gemm_algos = jr.value("gemm_algos", "");
            if (jr.contains("stages")) {
                const json& s = jr["stages"];
                if (!s.is_array() || s.size() != 6) bad_input("perf results: 'stages' must list six stages");
                for (int i = 0; i < 6; ++i) {
                    r.alone_us[i] = s[size_t(i)].at("alone_us").get<double>();
                    r.without_us[i] = s[size_t(i)].at("without_us").get<double>();
                    r.stage_bytes[i] = s[size_t(i)].at("bytes").get<int64_t>();
                }
            }
            run.rows.push_back(r);
        }
        return run;
    } catch (const json::exception& e) {
        bad_input(std::string("perf results: ") + e.what());
    }
}

std::vector<TargetCheck> judge_gpu_targets(const PerfRun& run) {
    std::vector<TargetCheck> out;
    for (const auto& r : run.rows) {
        if (r.nb != 4) continue;  // the targets are stated for the production shape, nb = 4
        const std::string shape = "S = " + std::to_string(r.S) + " (R=" + std::to_string(r.R) + " L=" +
                                  std::to_string(r.L) + ")";
        double floor_limit = r.S <= 16 ? 1.15 : (r.S == 64 ? 1.3 : 0);
        if (floor_limit > 0) {
            TargetCheck t;
            t.what = "fused <= " + fmt(floor_limit, 2) + " x floor, " + shape;
            t.limit = floor_limit;
            t.measured = bool(r.fused_us);
            if (t.measured) { t.value = *r.fused_us / r.floor_us; t.pass = t.value <= floor_limit; }
            out.push_back(t);
        }
        double speed_limit = r.S <= 8 ? 1.7 : (r.S == 16 ? 1.5 : 0);
        if (speed_limit > 0) {
            TargetCheck t;
            t.what = "unfused / fused >= " + fmt(speed_limit, 2) + ", " + shape;
            t.limit = speed_limit;
            t.measured = bool(r.fused_us);
            if (t.measured) { t.value = r.unfused_us / *r.fused_us; t.pass = t.value >= speed_limit; }
            out.push_back(t);
        }
    }
    return out;
}

json cpu_json(const CpuBench& b) {
    json rows = json::array();
    for (const auto& r : b.rows)
        rows.push_back({{"what", r.what}, {"command", r.command}, {"runs_s", r.runs_s}, {"cpu_s", r.cpu_s},
                        {"median_s", r.measured ? json(r.median_s) : json(nullptr)}, {"target_s", r.target_s},
                        {"note", r.note}});
    return {{"host", b.host}, {"commit", b.commit}, {"date", b.date}, {"cores", b.cores}, {"loadavg", b.loadavg},
            {"monokda_version", version()}, {"monokda_commit", monokda::commit()}, {"rows", rows}};
}

CpuBench cpu_from_json(const json& j) {
    try {
        CpuBench b;
        b.host = j.at("host").get<std::string>();
        b.commit = j.at("commit").get<std::string>();
        b.date = j.at("date").get<std::string>();
        b.cores = j.at("cores").get<int>();
        b.loadavg = j.value("loadavg", "");
        for (const auto& jr : j.at("rows")) {
            CpuBenchRow r;
            r.what = jr.at("what").get<std::string>();
            r.command = jr.at("command").get<std::string>();
            r.runs_s = jr.at("runs_s").get<std::vector<double>>();
            r.cpu_s = jr.value("cpu_s", std::vector<double>{});
            r.measured = !jr.at("median_s").is_null();
            r.median_s = r.measured ? jr.at("median_s").get<double>() : 0;
            r.target_s = jr.at("target_s").get<double>();
            r.note = jr.value("note", "");
            b.rows.push_back(r);
        }
        return b;
    } catch (const json::exception& e) {
        bad_input(std::string("cpu bench results: ") + e.what());
    }
}

std::string cpu_markdown(const CpuBench& b) {
    std::ostringstream os;
    os << "## CPU benchmarks\n\n"
       << "Host " << b.host << " (" << b.cores << " cores), " << b.date << ", commit `" << b.commit << "`"
       << (b.loadavg.empty() ? "" : ", load average at the start " + b.loadavg) << ", written by " << version_line() << ". "
       << "Wall-clock time of the whole command (process start to exit), median of the runs listed.\n\n"
       << "| what | command | median s | target s | verdict | runs s | CPU s a run (median) |\n|---|---|---|---|---|---|---|\n";
    for (const auto& r : b.rows) {
        std::string runs;
        for (double v : r.runs_s) runs += (runs.empty() ? "" : " ") + fmt(v, 3);
        os << "| " << r.what << " | `" << r.command << "` | " << (r.measured ? fmt(r.median_s, 3) : "not measured")
           << " | " << fmt(r.target_s, 2) << " | "
           << (!r.measured ? "NOT MEASURED" : (r.median_s <= r.target_s ? "PASS" : "FAIL")) << " | " << runs << " | "
           << (r.cpu_s.empty() ? std::string("–") : fmt(median(r.cpu_s), 3)) << " |\n";
    }
    for (const auto& r : b.rows)
        if (!r.note.empty()) os << "\n- " << r.what << ": " << r.note;
    os << "\n";
    return os.str();
}

std::string perf_markdown(const PerfRun& run, const CpuBench* cpu) {
    std::ostringstream os;
    os << "# kda_pre performance: " << run.device << "\n\n"
       << "- date: " << run.date << "\n- commit: `" << run.commit << "`\n- written by: " << version_line()
       << "\n- device: " << run.device
       << "\n- command: `" << run.command << "`\n"
       << "- copy bandwidth (device-to-device, bytes read + written, measured in this run): "
       << fmt(run.copy_tb_s, 3) << " TB/s\n"
       << "- every number is the median over " << run.reps
       << " replays (fewer for a slow fused kernel: at least 20, about 0.5 s a measurement; the detail file "
          "lists them) of a CUDA graph of " << run.steps_per_graph
       << " steps, divided by " << run.steps_per_graph << "; the steps rotate among " << run.sets
       << " weight/state sets of " << fmt(double(run.set_bytes) / 1e6, 0) << " MB each, so the "
       << fmt(double(run.l2_bytes) / 1e6, 0) << " MB L2 cannot hold the 90 MB in_proj weight between steps\n"
       << "- fused kernel: " << run.fused_status << "\n"
       << "- floor: the step's minimum bytes (bench/step_floor.cpp) over the copy bandwidth\n\n";

    os << "| R | L | S | nb | floor µs | fused µs | fused/floor | unfused µs | unfused/floor | unfused/fused |\n"
       << "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : run.rows) {
        os << "| " << r.R << " | " << r.L << " | " << r.S << " | " << r.nb << (r.block_write ? " bw" : "") << " | "
           << fmt(r.floor_us) << " | " << (r.fused_us ? fmt(*r.fused_us) : "not measured") << " | "
           << (r.fused_us ? fmt(*r.fused_us / r.floor_us, 2) : "–") << " | " << fmt(r.unfused_us) << " | "
           << fmt(r.unfused_us / r.floor_us, 2) << " | "
           << (r.fused_us ? fmt(r.unfused_us / *r.fused_us, 2) : "–") << " |\n";
    }

    auto targets = judge_gpu_targets(run);
    if (!targets.empty()) {
        os << "\n## Targets of issue 6 (nb = 4)\n\n| target | measured | verdict |\n|---|---|---|\n";
        for (const auto& t : targets)
            os << "| " << t.what << " | " << (t.measured ? fmt(t.value, 2) : "–") << " | "
               << (!t.measured ? "NOT MEASURED" : (t.pass ? "PASS" : "FAIL")) << " |\n";
    }

    bool stages = false;
    for (const auto& r : run.rows) stages |= r.alone_us[0] > 0;
    if (stages) os << "\n## Where the unfused chain's time goes\n\n"
       << "Per stage: the stage alone in its own graph (same rotation), the achieved bandwidth of that alone "
          "time over the stage's own bytes (bench/step_floor.cpp), and the chain minus the chain without "
          "the stage (what the stage adds in place, launch gap included).\n\n"
       << "| R | L | S | stage | alone µs | GB/s alone | chain − without µs |\n|---|---|---|---|---|---|---|\n";
    if (!stages) os << "\n(per-stage variants not measured in this run)\n";
    for (const auto& r : run.rows) {
        if (r.alone_us[0] == 0) continue;
        for (int i = 0; i < 6; ++i)
            os << "| " << r.R << " | " << r.L << " | " << r.S << " | " << kStageNames[i] << " | " << fmt(r.alone_us[i], 2)
               << " | " << fmt(double(r.stage_bytes[i]) / (r.alone_us[i] * 1e3), 0) << " | "
               << fmt(r.unfused_us - r.without_us[i], 2) << " |\n";
    }
    bool parts = false;
    for (const auto& r : run.rows) parts |= r.fused_attn_us.has_value() && r.fused_attn_gemv_us.has_value() && r.fused_us;
    if (parts) {
        os << "\n## Where the fused kernel's time goes\n\n"
           << "The same launch with its plan cut: the attn role's instructions alone, then attn + gemv (in_proj), "
              "then the whole plan; each difference is what the later role adds.\n\n"
           << "| R | L | S | attn only µs | attn + gemv µs | full µs | gemv adds | kda adds |\n|---|---|---|---|---|---|---|---|\n";
        for (const auto& r : run.rows)
            if (r.fused_attn_us && r.fused_attn_gemv_us && r.fused_us)
                os << "| " << r.R << " | " << r.L << " | " << r.S << " | " << fmt(*r.fused_attn_us) << " | "
                   << fmt(*r.fused_attn_gemv_us) << " | " << fmt(*r.fused_us) << " | "
                   << fmt(*r.fused_attn_gemv_us - *r.fused_attn_us) << " | " << fmt(*r.fused_us - *r.fused_attn_gemv_us)
                   << " |\n";
    }
    bool algos = false;
    for (const auto& r : run.rows) algos |= !r.gemm_algos.empty();
    if (algos) {
        os << "\n## cuBLASLt algorithms chosen (fastest of the heuristic's candidates, timed in this run)\n\n"
           << "| S | B in_proj; C f_b |\n|---|---|\n";
        std::map<int, std::string> seen;
        for (const auto& r : run.rows) seen.emplace(r.S, r.gemm_algos);
        for (const auto& [s, a] : seen) os << "| " << s << " | " << a << " |\n";
    }
    if (cpu) os << "\n" << cpu_markdown(*cpu);
    return os.str();
}

std::string perf_svg(const PerfRun& run) {
    // µs against S on a log2 axis; one marker a row (R×L split), a line through each S's median
    const double W = 840, H = 470, x0 = 70, x1 = 600, y0 = 410, y1 = 50;
    double ymax = 1, ymin = 1e30;
    int smax = 1;
    for (const auto& r : run.rows) {
        ymax = std::max({ymax, r.unfused_us, r.floor_us, r.fused_us.value_or(0)});
        ymin = std::min({ymin, r.unfused_us, r.floor_us, r.fused_us.value_or(1e30)});
        smax = std::max(smax, r.S);
    }
    if (ymin > ymax) ymin = 1;
    const double lmax = std::max(1.0, std::ceil(std::log2(double(smax))));
    // µs on a log axis when the series span more than a decade (floor and a slow kernel on one plot)
    const bool logy = ymax / ymin > 10;
    std::vector<double> ticks;
    double ylo = 0, yhi;
    if (logy) {
        ylo = std::pow(10.0, std::floor(std::log10(ymin)));
        yhi = ylo;
        while (yhi < ymax * 1.05) yhi *= (std::lround(yhi / std::pow(10.0, std::floor(std::log10(yhi) + 1e-9))) == 2 ? 2.5 : 2);  // 1-2-5
        for (double dec = ylo; dec < yhi * 1.001; dec *= 10)
            for (double m : {1.0, 2.0, 5.0})
                if (dec * m <= yhi * 1.001) ticks.push_back(dec * m);
    } else {
        const double step = ymax > 200 ? 50 : (ymax > 100 ? 20 : 10);
        yhi = std::ceil(ymax * 1.05 / step) * step;
        for (double v = 0; v <= yhi + 1e-9; v += step) ticks.push_back(v);
    }
    auto X = [&](double s) { return x0 + (x1 - x0) * std::log2(s) / lmax; };
    auto Y = [&](double us) {
        return logy ? y0 - (y0 - y1) * std::log10(us / ylo) / std::log10(yhi / ylo) : y0 - (y0 - y1) * us / yhi;
    };

    struct Series { const char* name; const char* color; const char* dash; int which; };
    const Series series[] = {{"floor (bytes / copy bandwidth)", "#555555", "6,4", 0},
                             {"fused kda_pre", "#1f5fbf", "", 1},
                             {"unfused six-kernel chain", "#c0392b", "", 2}};
    auto value = [](const PerfRow& r, int which) -> std::optional<double> {
        if (which == 0) return r.floor_us;
        if (which == 1) return r.fused_us;
        return r.unfused_us;
    };

    std::ostringstream os;
    os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
       << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
       << "<!-- written by " << version_line() << " -->\n"
       << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
       << "<text x=\"" << x0 << "\" y=\"22\" font-size=\"14\">kda_pre step time, " << run.device << " (nb = "
       << (run.rows.empty() ? 0 : run.rows[0].nb) << ")</text>\n"
       << "<text x=\"" << x0 << "\" y=\"38\" fill=\"#555\">" << run.date << ", commit " << run.commit.substr(0, 12)
       << ", copy " << fmt(run.copy_tb_s, 2) << " TB/s, " << run.sets << " rotating sets</text>\n";
    // axes and grid
    for (double v : ticks)
        os << "<line x1=\"" << x0 << "\" y1=\"" << Y(v) << "\" x2=\"" << x1 << "\" y2=\"" << Y(v)
           << "\" stroke=\"#e4e4e4\"/><text x=\"" << x0 - 8 << "\" y=\"" << Y(v) + 4 << "\" text-anchor=\"end\">"
           << fmt(v, 0) << "</text>\n";
    for (int l = 0; l <= int(lmax); ++l)
        os << "<line x1=\"" << X(std::ldexp(1.0, l)) << "\" y1=\"" << y0 << "\" x2=\"" << X(std::ldexp(1.0, l))
           << "\" y2=\"" << y0 + 5 << "\" stroke=\"black\"/><text x=\"" << X(std::ldexp(1.0, l)) << "\" y=\"" << y0 + 20
           << "\" text-anchor=\"middle\">" << (1 << l) << "</text>\n";
    os << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x1 << "\" y2=\"" << y0 << "\" stroke=\"black\"/>\n"
       << "<line x1=\"" << x0 << "\" y1=\"" << y0 << "\" x2=\"" << x0 << "\" y2=\"" << y1 << "\" stroke=\"black\"/>\n"
       << "<text x=\"" << (x0 + x1) / 2 << "\" y=\"" << y0 + 40 << "\" text-anchor=\"middle\">S = R·L rows (log scale)</text>\n"
       << "<text x=\"20\" y=\"" << (y0 + y1) / 2 << "\" transform=\"rotate(-90 20 " << (y0 + y1) / 2
       << ")\" text-anchor=\"middle\">µs per step (median" << (logy ? ", log scale" : "") << ")</text>\n";
    int legend = 0;
    for (const auto& s : series) {
        std::map<int, std::vector<double>> by_s;
        for (const auto& r : run.rows)
            if (auto v = value(r, s.which)) {
                by_s[r.S].push_back(*v);
                os << "<circle cx=\"" << X(r.S) << "\" cy=\"" << Y(*v) << "\" r=\"3\" fill=\"" << s.color << "\"/>\n";
            }
        if (!by_s.empty()) {
            os << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\""
               << (*s.dash ? std::string(" stroke-dasharray=\"") + s.dash + "\"" : std::string()) << " points=\"";
            for (const auto& [S, vs] : by_s) os << X(S) << "," << Y(median(vs)) << " ";
            os << "\"/>\n";
        }
        const double ly = y1 + 10 + 20 * legend++;
        os << "<line x1=\"" << x1 + 15 << "\" y1=\"" << ly << "\" x2=\"" << x1 + 40 << "\" y2=\"" << ly << "\" stroke=\""
           << s.color << "\" stroke-width=\"2\""
           << (*s.dash ? std::string(" stroke-dasharray=\"") + s.dash + "\"" : std::string()) << "/>"
           << "<text x=\"" << x1 + 45 << "\" y=\"" << ly + 4 << "\" font-size=\"10\">" << s.name
           << (by_s.empty() ? " (not measured)" : "") << "</text>\n";
    }
    os << "</svg>\n";
    return os.str();
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

std::string fmt(double v, int prec) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", prec, v);
    return buf;
}

std::string json_sibling(const std::string& json_path, const std::string& suffix) {
    const size_t n = json_path.size();
    return (n > 5 && json_path.compare(n - 5, 5, ".json") == 0 ? json_path.substr(0, n - 5) : json_path) + suffix;
}

}  // namespace monokda::bench
