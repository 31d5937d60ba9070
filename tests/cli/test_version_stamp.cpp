// `monokda --version`, and every kind of file the CLI writes naming the version and commit that
// wrote it: fixtures and outputs (fixture, reference, emulate, a fuzz failure's fixtures), envelopes,
// plans, traces, timelines, verify's report and JUnit, fuzz reports (merged too) and a fuzz
// failure's text. (The GPU's writers: bench renderings in tests/bench/test_perf_report.cpp; `monokda
// gpu -o` writes through the same safetensors writer.)
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/safetensors.hpp"
#include "core/version.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;
using nlohmann::json;

namespace {

std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

void run_ok(const std::vector<std::string>& args) {
    const CliResult r = run_cli(args);
    INFO(args[0], ": ", r.out);
    REQUIRE(r.code == 0);
}

void expect_stamped_safetensors(const std::string& path) {
    CAPTURE(path);
    const TensorFile f = read_safetensors(path);
    CHECK(f.metadata.at("monokda_version") == version());
    CHECK(f.metadata.at("monokda_commit") == commit());
}

void expect_stamped_json(const std::string& path, const std::string& under = "") {
    CAPTURE(path);
    const json j = json::parse(slurp(path));
    const json& o = under.empty() ? j : j.at(under);
    CHECK(o.at("monokda_version") == version());
    CHECK(o.at("monokda_commit") == commit());
}

void expect_line(const std::string& path, const std::string& text) {
    CAPTURE(path);
    CHECK(slurp(path).find(text) != std::string::npos);
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("monokda --version names the version and the commit") {
    const CliResult v = run_cli({"--version"});
    CHECK(v.code == 0);
    CHECK(v.out == version_line() + "\n");
    CHECK(std::string(commit()).size() >= 7);  // a git hash, or "unknown" outside a checkout
    CHECK(run_cli({"--help"}).out.find(version_line()) != std::string::npos);
}

TEST_CASE("every file monokda writes names the version and commit that wrote it") {
    TempDir t("version_stamp");
    const std::string fx = t / "step.safetensors";
    run_ok({"fixture", "--config", "small", "--R", "2", "--L", "3", "--block-write", "-o", fx});
    expect_stamped_safetensors(fx);
    run_ok({"reference", fx, "-o", t / "ref.safetensors"});
    expect_stamped_safetensors(t / "ref.safetensors");

    run_ok({"emulate", fx, "-o", t / "emu.safetensors", "--envelope-out", t / "env.json", "--trace", t / "trace.json",
            "--timeline", t / "timeline.svg"});
    expect_stamped_safetensors(t / "emu.safetensors");
    expect_stamped_json(t / "env.json");
    expect_stamped_json(t / "trace.json", "otherData");
    expect_line(t / "timeline.svg", "<!-- written by " + version_line() + " -->");

    run_ok({"plan", "--config", "small", "-o", t / "plan.json"});
    expect_stamped_json(t / "plan.json");

    run_ok({"verify", fx, t / "emu.safetensors", "--report", t / "verify.json", "--junit", t / "verify.xml"});
    expect_stamped_json(t / "verify.json");
    expect_line(t / "verify.xml", "<property name=\"monokda_version\" value=\"" + std::string(version()) + "\"/>");
    expect_line(t / "verify.xml", "<property name=\"monokda_commit\" value=\"" + std::string(commit()) + "\"/>");

    // a fuzz run that fails at once: its failure's fixtures, text and the report; then the merge
    const CliResult f = run_cli({"fuzz", "--target", "exec", "--cmd", "false {fixture} {out}", "--iters", "1", "--quiet",
                                 "--shrink-time", "5", "--out", t / "failures", "--report", t / "fuzz.json"});
    INFO(f.out);
    REQUIRE(f.code == 1);
    expect_stamped_json(t / "fuzz.json");
    const json rep = json::parse(slurp(t / "fuzz.json"));
    REQUIRE(rep.at("failures").size() == 1);
    const json& failure = rep.at("failures")[0];
    expect_stamped_safetensors(failure.at("original").get<std::string>());
    expect_stamped_safetensors(failure.at("fixture").get<std::string>());
    int texts = 0;
    for (const auto& e : std::filesystem::directory_iterator(t / "failures"))
        if (e.path().extension() == ".txt") ++texts, expect_line(e.path().string(), "written by " + version_line() + "\n");
    CHECK(texts == 1);
    REQUIRE(run_cli({"fuzz", "--merge", t / "fuzz.json", "--report", t / "merged.json"}).code == 1);
    expect_stamped_json(t / "merged.json");
}
}
