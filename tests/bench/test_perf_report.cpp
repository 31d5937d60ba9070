// Results files and their renderings: the raw JSON keeps issue 6's exact schema, the targets are
// judged right (a planted miss is reported as FAIL), nothing unmeasured is shown as a number.
#include <doctest/doctest.h>

#include <set>

#include "bench/perf_report.hpp"
#include "core/error.hpp"
#include "core/version.hpp"

using namespace monokda;
using namespace monokda::bench;

namespace {

PerfRow make_row(int R, int L, int nb, std::optional<double> fused, double unfused, double floor_us) {
    PerfRow r;
    r.R = R;
    r.L = L;
    r.S = R * L;
    r.nb = nb;
    r.fused_us = fused;
    r.unfused_us = unfused;
    r.floor_us = floor_us;
    for (int i = 0; i < 6; ++i) { r.alone_us[i] = 1 + i; r.without_us[i] = unfused - 1; r.stage_bytes[i] = 1000 * (i + 1); }
    return r;
}

PerfRun make_run() {
    PerfRun run;
    run.device = "TEST GPU";
    run.commit = "abc123";
    run.date = "2026-01-01T00:00:00Z";
    run.command = "monokda bench";
    run.copy_tb_s = 4.3;
    run.sets = 4;
    run.reps = 100;
    run.steps_per_graph = 16;
    run.fused_status = "measured";
    run.rows.push_back(make_row(2, 4, 4, 25.0, 45.0, 23.0));   // S=8: 1.087x floor, 1.8x faster: both pass
    run.rows.push_back(make_row(4, 4, 4, 30.0, 40.0, 25.0));   // S=16: 1.2x floor (FAIL), 1.33x (FAIL)
    run.rows.push_back(make_row(8, 8, 4, std::nullopt, 90.0, 44.0));  // S=64: fused not measured
    run.rows.push_back(make_row(2, 4, 1, 25.0, 25.0, 23.0));  // nb=1: no target applies
    return run;
}

}  // namespace

TEST_CASE("perf JSON has exactly the schema of issue 6 (and the writer's version, issue 27), null where not measured") {
    const auto j = perf_json(make_run());
    std::set<std::string> keys;
    for (const auto& [k, v] : j.items()) keys.insert(k);
    // required, not checked: [] of a missing key of this const json would be undefined
    REQUIRE(keys == std::set<std::string>{"device", "commit", "date", "copy_tb_s", "monokda_version", "monokda_commit", "rows"});
    REQUIRE(j["rows"].size() == 4);
    std::set<std::string> row_keys;
    for (const auto& [k, v] : j["rows"][0].items()) row_keys.insert(k);
    REQUIRE(row_keys == std::set<std::string>{"R", "L", "S", "nb", "fused_us", "unfused_us", "floor_us"});
    CHECK(j["rows"][0]["fused_us"].get<double>() == 25.0);
    CHECK(j["rows"][2].at("fused_us").is_null());
    CHECK(j["rows"][1].at("S").get<int>() == 16);
}

TEST_CASE("detail JSON round-trips") {
    const PerfRun a = make_run();
    const PerfRun b = perf_from_detail_json(perf_detail_json(a));
    REQUIRE(b.rows.size() == a.rows.size());
    CHECK(b.device == a.device);
    CHECK(b.copy_tb_s == a.copy_tb_s);
    CHECK(b.rows[1].fused_us == a.rows[1].fused_us);
    CHECK_FALSE(b.rows[2].fused_us.has_value());
    CHECK(b.rows[0].alone_us[5] == 6);
    CHECK(b.rows[0].stage_bytes[2] == 3000);
    CHECK_THROWS_AS(perf_from_detail_json(nlohmann::json{{"device", "x"}}), BadInput);
}

TEST_CASE("targets: pass, planted miss, not measured, other nb ignored") {
    const auto t = judge_gpu_targets(make_run());
    // S=8: two targets; S=16: two; S=64: floor target only (no speed-up target at 64); nb=1: none
    REQUIRE(t.size() == 5);
    CHECK(t[0].measured);
    CHECK(t[0].pass);
    CHECK(t[0].value == doctest::Approx(25.0 / 23.0));
    CHECK(t[1].pass);
    CHECK(t[1].value == doctest::Approx(1.8));
    CHECK_FALSE(t[2].pass);  // 1.2x floor > 1.15
    CHECK_FALSE(t[3].pass);  // 1.33x < 1.5
    CHECK_FALSE(t[4].measured);
    CHECK(t[4].limit == 1.3);
}

TEST_CASE("markdown and SVG say what was not measured, never a number for it") {
    const PerfRun run = make_run();
    const std::string md = perf_markdown(run);
    CHECK(md.find("not measured") != std::string::npos);
    CHECK(md.find("NOT MEASURED") != std::string::npos);
    CHECK(md.find("FAIL") != std::string::npos);
    CHECK(md.find("PASS") != std::string::npos);
    CHECK(md.find("abc123") != std::string::npos);
    const std::string svg = perf_svg(run);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    size_t lines = 0;
    for (size_t p = 0; (p = svg.find("<polyline", p)) != std::string::npos; ++p) ++lines;
    CHECK(lines == 3);  // floor, fused (some rows), unfused

    PerfRun none = run;
    for (auto& r : none.rows) r.fused_us.reset();
    const std::string svg2 = perf_svg(none);
    lines = 0;
    for (size_t p = 0; (p = svg2.find("<polyline", p)) != std::string::npos; ++p) ++lines;
    CHECK(lines == 2);
    CHECK(svg2.find("fused kda_pre (not measured)") != std::string::npos);
}

TEST_CASE("markdown leaves out the stage table of a run without stage variants") {
    PerfRun run = make_run();
    CHECK(perf_markdown(run).find("Where the unfused chain's time goes") != std::string::npos);
    for (auto& r : run.rows)
        for (int i = 0; i < 6; ++i) r.alone_us[i] = 0;
    const std::string md = perf_markdown(run);
    CHECK(md.find("Where the unfused chain's time goes") == std::string::npos);
    CHECK(md.find("per-stage variants not measured in this run") != std::string::npos);
}

TEST_CASE("CPU results: median, verdicts, round trip") {
    CHECK(median({3.0, 1.0, 2.0}) == 2.0);
    CHECK(median({4.0, 1.0, 2.0, 3.0}) == 2.5);
    CHECK_THROWS_AS(median({}), BadInput);
    CpuBench b;
    b.host = "cpu";
    b.commit = "c";
    b.date = "d";
    b.cores = 2;
    CpuBenchRow fast{"reference", "monokda reference", {0.4, 0.45, 0.42}, {0.7, 0.9, 0.8}, 0.42, 0.5, "", true};
    CpuBenchRow slow{"emulator", "monokda emulate", {2.5}, {4.75}, 2.5, 2.0, "", true};
    CpuBenchRow absent{"other", "x", {}, {}, 0, 2.0, "not measured: absent", false};
    b.rows = {fast, slow, absent};
    const std::string md = cpu_markdown(b);
    CHECK(md.find("| PASS |") != std::string::npos);
    CHECK(md.find("| FAIL |") != std::string::npos);
    CHECK(md.find("NOT MEASURED") != std::string::npos);
    CHECK(md.find("| 0.800 |") != std::string::npos);  // the CPU-seconds column: median of the runs
    CHECK(md.find("| 4.750 |") != std::string::npos);
    const CpuBench c = cpu_from_json(cpu_json(b));
    REQUIRE(c.rows.size() == 3);
    CHECK(c.rows[0].median_s == 0.42);
    CHECK(c.rows[0].cpu_s == std::vector<double>{0.7, 0.9, 0.8});
    CHECK_FALSE(c.rows[2].measured);
}

TEST_CASE("every rendering names the monokda version and commit that wrote it: JSON, markdown, SVG") {
    const std::string line = monokda::version_line();
    const PerfRun run = make_run();
    CHECK(perf_markdown(run).find("- written by: " + line + "\n") != std::string::npos);
    CHECK(perf_svg(run).find("<!-- written by " + line + " -->") != std::string::npos);
    for (const auto& j : {perf_json(run), perf_detail_json(run)}) {
        CHECK(j.at("monokda_version") == monokda::version());
        CHECK(j.at("monokda_commit") == monokda::commit());
    }
    CpuBench b;
    b.host = "cpu", b.commit = "c", b.date = "d", b.cores = 2;
    CHECK(cpu_markdown(b).find("written by " + line) != std::string::npos);
    CHECK(cpu_json(b).at("monokda_version") == monokda::version());
    CHECK(cpu_json(b).at("monokda_commit") == monokda::commit());
}
