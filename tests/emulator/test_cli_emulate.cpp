// `monokda emulate` as a user runs it: exit 0 pass, 1 a check failed, 2 bad input (nothing written).
#include <doctest/doctest.h>

#include <filesystem>

#include "core/safetensors.hpp"
#include "core/step.hpp"
#include "emu_util.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;
using namespace monokda::emu::test;

namespace {

// The token after "--replay " in a report ("" if none).
std::string replay_token(const std::string& out) {
    const size_t at = out.find("--replay ");
    return at == std::string::npos ? "" : out.substr(at + 9, out.find('\n', at) - at - 9);
}

}  // namespace

TEST_CASE("a clean small run passes, prints the verdict and a replay token that reproduces it") {
    CliResult r = run_cli({"emulate", "--config", "small", "--schedule", "pct", "--seed", "5"});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "VERDICT: PASS"));
    CHECK(contains(r.out, "every output inside"));
    const std::string token = replay_token(r.out);
    REQUIRE(token != "");
    CliResult again = run_cli({"emulate", "--replay", token});
    CHECK(again.code == 0);
    // same interleaving: same number of scheduler steps and ticks (the wall time may differ)
    auto steps = [](const std::string& s) {
        size_t a = s.find(" scheduler steps, "), b = s.rfind('\n', a);
        return s.substr(b + 1, s.find(" s;", a) - b);
    };
    auto ticks = [](const std::string& s) { size_t a = s.find(" scheduler steps, "); return s.substr(a, s.find(" ticks", a) - a); };
    CHECK(ticks(again.out) == ticks(r.out));
    CHECK(steps(again.out).substr(0, 8) == steps(r.out).substr(0, 8));
}

TEST_CASE("--gemv-bands every|spec runs the small preset with either layout, and its token replays it") {
    for (const std::string g : {"every", "spec"}) {
        const std::string layout = g == "every" ? "(bands over every CTA)" : "(past the slices)";
        CliResult r = run_cli({"emulate", "--config", "small", "--gemv-bands", g, "--no-envelope"});
        const std::string token = replay_token(r.out);
        INFO(r.out);
        CHECK((r.code == 0 && contains(r.out, "VERDICT: PASS") && contains(r.out, layout)));
        REQUIRE(token.rfind("v5,", 0) == 0);
        CHECK(contains(token, ",gemv-bands=" + g + ","));
        CliResult again = run_cli({"emulate", "--replay", token, "--no-envelope"});
        CHECK((again.code == 0 && contains(again.out, layout)));
    }
}

TEST_CASE("faults exit 1 with their verdict; --list-faults lists them") {
    CliResult l = run_cli({"emulate", "--list-faults"});
    CHECK(l.code == 0);
    for (const auto& f : monokda::emu::fault_list()) CHECK(contains(l.out, f.name));
    CliResult r = run_cli({"emulate", "--config", "small", "--inject", "missing_xrdy", "--no-envelope"});
    CHECK(r.code == 1);
    CHECK(contains(r.out, "VERDICT: LIVELOCK"));
    CHECK(contains(r.out, "Wait-for chain:"));
    CHECK(contains(r.out, "history (last"));
}

TEST_CASE("--detectors-off: the fault passes without its detector, the token replays that; --list-detectors") {
    CliResult l = run_cli({"emulate", "--list-detectors"});
    CHECK(l.code == 0);
    for (const auto& d : monokda::emu::detector_list()) CHECK(contains(l.out, d.name));
    CHECK(contains(l.out, "alone catches: --inject g1_share_long"));
    CliResult on = run_cli({"emulate", "--config", "small", "--inject", "g1_share_long", "--no-envelope"});
    CHECK(on.code == 1);
    CHECK(contains(on.out, "VERDICT: WRITE_CONFLICT\ncaught by: write_conflict ("));
    CliResult off = run_cli({"emulate", "--config", "small", "--inject", "g1_share_long", "--no-envelope",
                             "--detectors-off", "write_conflict+split_order"});
    INFO(off.out);
    CHECK(off.code == 0);
    CHECK(contains(off.out, "detectors off: write_conflict+split_order"));
    CHECK(contains(off.out, "no violation found by the detectors on"));
    CHECK(contains(off.out, "VERDICT: PASS"));
    const size_t at = off.out.find("--replay ");
    REQUIRE(at != std::string::npos);
    const std::string token = off.out.substr(at + 9, off.out.find('\n', at) - at - 9);
    CHECK(contains(token, "detectors-off=write_conflict+split_order"));
    CliResult again = run_cli({"emulate", "--replay", token, "--no-envelope"});
    CHECK((again.code == 0 && contains(again.out, "VERDICT: PASS")));
    CliResult bad = run_cli({"emulate", "--config", "small", "--detectors-off", "sanity"});
    CHECK(bad.code == 2);
    CHECK(contains(bad.out, "unknown detector 'sanity' (known: delayed_visibility, "));
}

TEST_CASE("outputs, envelope and timeline files; a fixture file as input") {
    TempDir dir("emulate");
    CliResult fx = run_cli({"fixture", "--config", "small", "--seed", "3", "-o", dir / "f.safetensors"});
    REQUIRE(fx.code == 0);
    CliResult r = run_cli({"emulate", dir / "f.safetensors", "--schedule", "rr", "-o", dir / "out.safetensors",
                           "--envelope-out", dir / "env.json", "--timeline", dir / "t.svg"});
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, " --replay v5,fixture=file,blocks=0,gemv-bands=auto,kda-teams=1,schedule=rr,seed=1,"));
    StepInputs in = StepInputs::from_file(read_safetensors(dir / "f.safetensors"));
    Plan plan = Plan::build(in.cfg, PlanPolicy::defaults_for(in.cfg));
    TensorFile mine = read_safetensors(dir / "out.safetensors");
    TensorFile expect = ref::run<float>(in, plan.reduction_order()).to_file(in.cfg);
    for (const std::string& name : output_names()) {
        INFO(name);
        REQUIRE(mine.has(name));
        CHECK(mine.get(name).bytes == expect.get(name).bytes);
    }
    CHECK(mine.metadata.at("emulate_verdict") == "PASS");
    CHECK(std::filesystem::file_size(dir / "env.json") > 1000);
    CHECK(std::filesystem::file_size(dir / "t.svg") > 1000);
    // the saved envelope is reused, and refused for another fixture
    CliResult again = run_cli({"emulate", dir / "f.safetensors", "--envelope-in", dir / "env.json"});
    CHECK(again.code == 0);
    CliResult other = run_cli({"emulate", "--config", "small", "--envelope-in", dir / "env.json"});
    CHECK(other.code == 2);
    CHECK(contains(other.out, "measured on another fixture"));
}

TEST_CASE("bad input exits 2 and writes nothing") {
    TempDir dir("emulate_bad");
    const std::string out = dir / "o.safetensors", svg = dir / "t.svg", env = dir / "env.json";
    const std::vector<std::vector<std::string>> bad = {
        {"--config", "huge"},
        {"--config", "small", "--schedule", "fifo"},
        {"--config", "small", "--schedule", "pct:0"},
        {"--config", "small", "--schedule", "delay:cta:24"},
        {"--config", "small", "--inject", "cosmic_ray"},
        {"--config", "small", "--steps", "0"},
        {"--config", "small", "--steps", "65"},
        {"--config", "small", "--blocks", "16"},
        {"--config", "small", "--blocks", "-3"},
        {"--config", "small", "--gemv-bands", "all"},
        {"--config", "small", "--resident", "-1"},
        {"--config", "small", "--nb", "9"},
        {"--config", "small", "--L", "0"},
        {"--config", "small", "--replay", "v1/random"},
        {"--config", "small", "--envelope-orders", "1"},
        {"--config", "small", "--no-envelope", "--envelope-out", dir / "e.json"},
        {"--config", "small", "--inject", "wrong_accepted_window", "--L", "1"},
        {dir / "missing.safetensors"},
        {dir / "missing.safetensors", "--config", "small"},
        {"--config", "small", "--sweep", "3", "--timeline", svg},
        {"--config", "small", "--unknown-option"},
        {"--config", "small", "--envelope-in", dir.path.string()},  // a folder: exit 2, not 3
        {"--config", "small", "--envelope-in", dir / "missing.json"},
        {"--config", "small", "--timeline", out},                   // the same file as -o
        {"--config", "small", "--seed", "-1"},
        {"--config", "small", "--fixture-seed", "-2"},
    };
    for (const auto& a : bad) {
        std::vector<std::string> args{"emulate"};
        args.insert(args.end(), a.begin(), a.end());
        auto has = [&](const char* o) { return std::find(a.begin(), a.end(), o) != a.end(); };
        if (!has("--sweep")) args.insert(args.end(), {"-o", out});
        if (!has("--timeline")) args.insert(args.end(), {"--timeline", svg});
        if (!has("--no-envelope")) args.insert(args.end(), {"--envelope-out", env});
        CliResult r = run_cli(args);
        std::string cmd;
        for (const auto& s : args) cmd += s + " ";
        INFO(cmd, "\n", r.out);
        CHECK(r.code == 2);
        CHECK(contains(r.out, "error"));
        CHECK_FALSE(std::filesystem::exists(out));
        CHECK_FALSE(std::filesystem::exists(svg));
        CHECK_FALSE(std::filesystem::exists(env));
    }
}

TEST_CASE("every output path is checked before any is written; an input is never an output") {
    TempDir dir("emulate_outputs");
    const std::string env = dir / "env.json", svg = dir / "t.svg", fx = dir / "f.safetensors";
    // -o in a folder that does not exist: before, the envelope and timeline were written, then exit 2
    CliResult r = run_cli({"emulate", "--config", "small", "--envelope-out", env, "--timeline", svg, "-o",
                           dir / "no/such/o.safetensors"});
    INFO(r.out);
    CHECK(r.code == 2);
    CHECK(contains(r.out, "cannot write -o"));
    CHECK_FALSE(contains(r.out, "prepared:"));  // refused before the fixture was built
    CHECK_FALSE(std::filesystem::exists(env));
    CHECK_FALSE(std::filesystem::exists(svg));
    REQUIRE(run_cli({"fixture", "--config", "small", "-o", fx}).code == 0);
    const auto size = std::filesystem::file_size(fx);
    std::filesystem::create_symlink(fx, dir / "link.safetensors");
    for (const std::string& o : {fx, dir / "link.safetensors"}) {
        CliResult same = run_cli({"emulate", fx, "--no-envelope", "-o", o});
        INFO(same.out);
        CHECK(same.code == 2);
        CHECK(contains(same.out, "is the same file as FIXTURE"));
    }
    CHECK(std::filesystem::file_size(fx) == size);
    CHECK(StepInputs::from_file(read_safetensors(fx)).cfg.D == 256);  // still the fixture
}

TEST_CASE("--sweep runs many schedules and summarises") {
    CliResult r = run_cli({"emulate", "--config", "small", "--sweep", "20", "--no-envelope"});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "sweep: 20 schedules"));
    CHECK(contains(r.out, "PASS 20"));
    CliResult f = run_cli({"emulate", "--config", "small", "--sweep", "6", "--no-envelope", "--inject", "flag_before_data"});
    CHECK(f.code == 1);
    CHECK(contains(f.out, "VISIBILITY_FAULT 6"));
    CHECK(contains(f.out, "first failure (schedule 0)"));
}
