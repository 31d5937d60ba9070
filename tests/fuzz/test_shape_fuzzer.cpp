// The shape fuzzer: cases are reproducible, the reference passes, a planted bug is found, shrunk to
// a small step, written, and replays; the CLI reports a target the build lacks as bad input.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <filesystem>
#include <map>
#include <fstream>
#include <set>
#include <sstream>

#include "core/safetensors.hpp"
#include "fuzz/case_gen.hpp"
#include "fuzz/checks.hpp"
#include "fuzz/shape_fuzzer.hpp"
#include "properties/planted_bugs.hpp"

using namespace monokda;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
    fs::path p = fs::temp_directory_path() / ("monokda-test-fuzz-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
}

int run_cli(const std::string& args, const fs::path& log) {
    const std::string cmd = std::string(MONOKDA_BIN) + " " + args + " > " + log.string() + " 2>&1";
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST_SUITE("fuzz") {
TEST_CASE("a case is a function of its seed") {
    const Config preset = Config::preset("small");
    for (long i = 0; i < 5; ++i) {
        const uint64_t s = fuzz::case_seed(9, i);
        const fuzz::CaseShape a = fuzz::draw_shape(preset, s), b = fuzz::draw_shape(preset, s);
        CHECK(a.str() == b.str());
        CHECK(serialize_safetensors(fuzz::build_case(a).to_file()) == serialize_safetensors(fuzz::build_case(b).to_file()));
    }
    CHECK(fuzz::case_seed(9, 0) != fuzz::case_seed(9, 1));
    CHECK(fuzz::case_seed(9, 0) != fuzz::case_seed(10, 0));
}

TEST_CASE("the draws cover the shape space") {
    const Config preset = Config::preset("small");
    int maxR = 0, maxL = 0, bw = 0, ds = 0, nulls = 0, init_null = 0, strided = 0, extreme = 0, partial = 0;
    std::map<ScaleProfile, int> profiles;
    for (long i = 0; i < 400; ++i) {
        const fuzz::CaseShape s = fuzz::draw_shape(preset, fuzz::case_seed(1, i));
        maxR = std::max(maxR, s.cfg.R);
        maxL = std::max(maxL, s.cfg.L);
        bw += s.cfg.block_write;
        ds += s.cfg.conv_layout == ConvLayout::ds;
        nulls += s.null_requests > 0;
        init_null += s.init_null;
        strided += s.stride > 1;
        extreme += s.extreme;
        partial += s.partial_nulls > 0;
        ++profiles[s.scale];
        CHECK((s.partial_nulls == 0 || (s.cfg.L >= 2 && s.partial_nulls <= s.cfg.R - s.null_requests)));
        CHECK((s.scale == ScaleProfile::standard || !s.extreme));
        CHECK(s.cfg.R >= 1);
        CHECK(s.cfg.R <= 64);
        CHECK(s.cfg.L <= 8);
        CHECK((!s.cfg.block_write || s.cfg.nb <= 7));
    }
    CHECK(maxR > 32);
    CHECK(maxL == 8);
    CHECK(bw > 40);
    CHECK(ds > 100);
    CHECK(nulls > 40);
    CHECK(init_null > 40);
    CHECK(strided > 40);
    CHECK(extreme > 80);
    CHECK(partial > 50);
    for (const ScaleProfileInfo& p : scale_profiles()) {
        INFO(p.name);
        CHECK(profiles[p.profile] > 20);
    }
}

TEST_CASE("the fuzzer finds the bugs that only partial null columns and the scale profiles show") {
    for (const props::PlantedBug& b : props::planted_bugs()) {
        if (!*b.needs_scale && !b.needs_partial_nulls) continue;
        fuzz::FuzzOptions o;
        o.iters = 60;
        o.seed = 8;
        o.jobs = 1;
        o.progress = false;
        o.only = {"reference-stages"};
        o.shrink = false;
        o.out_dir = scratch(b.name).string();
        std::ostringstream log;
        const fuzz::FuzzReport rep = fuzz::run_fuzz(props::planted_target(b.name), o, log);
        INFO(b.name << "\n" << log.str());
        REQUIRE(rep.failures.size() == 1);
        const fuzz::CaseShape& sh = rep.failures[0].shape;
        // the case that shows it has what the bug needs (or extreme values, which reach past f16 too)
        if (b.needs_partial_nulls) CHECK(sh.partial_nulls > 0);
        if (*b.needs_scale) CHECK((sh.scale == parse_scale_profile(b.needs_scale) || sh.extreme));
    }
}

TEST_CASE("the reference passes a short fuzz run") {
    fuzz::FuzzOptions o;
    o.iters = 8;
    o.seed = 3;
    o.jobs = 2;
    o.progress = false;
    o.out_dir = scratch("ref").string();
    std::ostringstream log;
    const fuzz::FuzzReport rep = fuzz::run_fuzz(props::make_target("reference"), o, log);
    INFO(log.str());
    CHECK(rep.failures.empty());
    CHECK(rep.cases == 8);
    CHECK(rep.verdicts.at("determinism")[0] == 8);
}

TEST_CASE("a planted bug is found, shrunk to S <= 4 with small dims, written and replayed") {
    for (const char* bug : {"conv-keep-offset", "conv-neighbour", "skip-token-states"}) {
        fuzz::FuzzOptions o;
        o.iters = 50;
        o.seed = 5;
        o.jobs = 1;
        o.progress = false;
        o.out_dir = scratch(bug).string();
        o.target_args = std::string("--plant ") + bug;
        std::ostringstream log;
        const props::Target bad = props::planted_target(bug);
        const fuzz::FuzzReport rep = fuzz::run_fuzz(bad, o, log);
        INFO(bug << "\n" << log.str());
        REQUIRE(rep.failures.size() == 1);
        const fuzz::FuzzFailure& f = rep.failures[0];
        const StepInputs small = StepInputs::from_file(read_safetensors(f.fixture_path));
        CHECK(small.cfg.S() <= 4);
        CHECK(small.cfg.D <= 16);
        CHECK(small.cfg.H == 1);
        CHECK(small.cfg.K <= 4);
        CHECK(f.nonzero_after < f.nonzero_before);
        CHECK(f.final_verdict.kind == props::Verdict::FAIL);
        // the written step still shows the bug, and the correct target passes the same check on it
        CHECK(fuzz::replay(bad, f.fixture_path, f.verdict.check, f.case_seed).kind == props::Verdict::FAIL);
        CHECK(fuzz::replay(props::make_target("reference"), f.fixture_path, f.verdict.check, f.case_seed).kind ==
              props::Verdict::PASS);
        CHECK(f.replay.find(std::string("--plant ") + bug) != std::string::npos);
    }
}

TEST_CASE("a property failure alone is shrunk too (the bug the teacher-forced check cannot see)") {
    // first-request-eps changes request 0 only; with only the permutation property checked, the
    // smallest failing step needs two requests
    fuzz::FuzzOptions o;
    o.iters = 20;
    o.seed = 2;
    o.jobs = 1;
    o.progress = false;
    o.only = {"permutation"};
    o.out_dir = scratch("only").string();
    std::ostringstream log;
    const fuzz::FuzzReport rep = fuzz::run_fuzz(props::planted_target("first-request-eps"), o, log);
    INFO(log.str());
    REQUIRE(rep.failures.size() == 1);
    const StepInputs small = StepInputs::from_file(read_safetensors(rep.failures[0].fixture_path));
    CHECK(rep.failures[0].verdict.check == "permutation");
    CHECK(small.cfg.R == 2);
    CHECK(small.cfg.L == 1);
    CHECK(small.cfg.D <= 16);
    CHECK(rep.verdicts.count("reference-stages") == 0);
}

TEST_CASE("keep-going records the first failing case of every check that fails") {
    fuzz::FuzzOptions o;
    o.iters = 6;
    o.seed = 4;
    o.jobs = 2;
    o.progress = false;
    o.keep_going = true;
    o.shrink = false;
    o.out_dir = scratch("keep").string();
    std::ostringstream log;
    const fuzz::FuzzReport rep = fuzz::run_fuzz(props::planted_target("gate-sign"), o, log);
    INFO(log.str());
    CHECK(rep.cases == 6);
    std::set<std::string> checks;
    for (const auto& f : rep.failures) checks.insert(f.verdict.check);
    CHECK(checks.count("reference-stages") == 1);
    CHECK(checks.count("gate-bounds") == 1);
    CHECK(rep.failed_cases >= 6);
}

TEST_CASE("monokda fuzz: planted bug end to end, replay line, bad input") {
    const fs::path dir = scratch("cli");
    const fs::path log = dir / "log.txt";
    CHECK(run_cli("fuzz --plant conv-state-rounded --iters 20 --jobs 1 --quiet --out " + (dir / "out").string(), log) == 1);
    const std::string out = slurp(log);
    INFO(out);
    const size_t at = out.rfind("replay: ");
    REQUIRE(at != std::string::npos);
    const std::string replay = out.substr(at + 8, out.find('\n', at) - at - 8);
    CHECK(replay.rfind("monokda fuzz --plant conv-state-rounded --replay ", 0) == 0);
    // the printed line, run as printed (with the binary's path), reproduces the failure
    CHECK(run_cli(replay.substr(std::string("monokda ").size()), dir / "replay.txt") == 1);
    CHECK(slurp(dir / "replay.txt").rfind("FAIL ", 0) == 0);

    CHECK(run_cli("fuzz --target gpu --iters 1", log) == 2);
    CHECK(slurp(log).find("GPU backend") != std::string::npos);
    CHECK(run_cli("fuzz --target nope --iters 1", log) == 2);
    CHECK(run_cli("fuzz --plant nope --iters 1", log) == 2);
    CHECK(run_cli("fuzz --iters 0", log) == 2);
    CHECK(run_cli("fuzz --config k4 --iters 1", log) == 2);
    CHECK(run_cli("fuzz --replay " + (dir / "missing.safetensors").string() + " --check determinism --check-seed 1", log) == 2);
    CHECK(run_cli("fuzz --only nope --iters 1", log) == 2);
    CHECK(run_cli("fuzz --properties 0 --iters 1", log) == 2);
    CHECK(run_cli("fuzz --list", log) == 0);
    CHECK(slurp(log).find("beta-zero-decay") != std::string::npos);

    // options refused before any case runs, naming the option (each once ran, aborted or exited 3)
    struct Bad { std::string args, needle; };
    const Bad bad[] = {
        {"--seed -1", "--seed must be a whole number >= 0 (got '-1')"},
        {"--jobs 100000", "--jobs must be in 0..1024"},
        {"--shrink-time -5", "--shrink-time must be a finite number >= 0"},
        {"--shrink-time nan", "--shrink-time must be a finite number >= 0"},
        {"--time inf", "--time must be a positive number"},
        {"--properties +2", "--properties must be all or a number"},
        {"--out /proc/version/x", "is not a folder"},
        {"--out " + (dir / "log.txt/x").string(), "is not a folder"},
    };
    for (const Bad& b : bad) {
        CAPTURE(b.args);
        CHECK(run_cli("fuzz --plant gate-sign --iters 1 --quiet " + b.args, log) == 2);
        CHECK_MESSAGE(slurp(log).find(b.needle) != std::string::npos, slurp(log));
        CHECK(slurp(log).find("cases") == std::string::npos);  // refused before any case ran
    }
}

TEST_CASE("monokda fuzz --keep-going writes each failure as found: an interrupted run keeps it") {
    const fs::path dir = scratch("interrupt");
    const fs::path out = dir / "out", log = dir / "log.txt";
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::execl(MONOKDA_BIN, MONOKDA_BIN, "fuzz", "--plant", "gate-sign", "--keep-going", "--time", "600", "--jobs", "1",
                "--out", out.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    // wait (at most a minute) for the first failure's fixture, then interrupt the run
    auto written = [&] {
        std::vector<fs::path> files;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(out, ec)) files.push_back(e.path());
        return files;
    };
    for (int i = 0; i < 600 && written().empty(); ++i) ::usleep(100000);
    ::usleep(200000);
    ::kill(child, SIGINT);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    // the run stops at the signal, keeps what it found and says so: exit 1 (failures found)
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 1);
    const std::vector<fs::path> files = written();
    INFO(slurp(log));
    REQUIRE(!files.empty());
    for (const fs::path& f : files) {
        CAPTURE(f);
        // no temporary left behind: each failure's step as found and its text (check, detail, replay)
        const bool step = f.filename().string().find("-original.safetensors") != std::string::npos;
        CHECK((step || f.extension() == ".txt"));
    }
    // the line printed as it was found replays it
    const std::string text = slurp(log);
    const size_t at = text.find("replay: ");
    REQUIRE(at != std::string::npos);
    const std::string replay = text.substr(at + 8, text.find('\n', at) - at - 8);
    CHECK(run_cli(replay.substr(std::string("monokda ").size()), dir / "replay.txt") == 1);
    fs::remove_all(dir);
}
}
