// The exec target: a program's run is its verdict (outputs, a rejected step, a crash, a hang, a bad
// output file, each named, stderr kept, nothing left behind); and `monokda fuzz --target exec` end to
// end on the Python reference of examples/: no false alarm, a planted bug found and shrunk, shards
// disjoint and merged, an interrupted run keeping what it found.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
#include "core/safetensors.hpp"
#include "fuzz/shrink.hpp"
#include "properties/planted_bugs.hpp"
#include "properties/target_exec.hpp"
#include "reference/reference.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kPython = MONOKDA_PYTHON;  // "" when configure found no python3 with numpy
const std::string kExample = std::string(MONOKDA_SOURCE_DIR) + "/examples/kda_pre_numpy.py";

// The example's command line, with a planted bug or none.
std::string example_cmd(const std::string& bug = "") {
    return shell_quote(kPython) + " " + shell_quote(kExample) + (bug.empty() ? "" : " --bug " + bug) + " {fixture} {out}";
}

void require_python() {
    INFO("configure found no python3 with numpy and pytest: run scripts/install-deps.sh and reconfigure");
    REQUIRE(!kPython.empty());
}

std::string write_script(const TempDir& t, const std::string& name, const std::string& body) {
    const std::string p = t / name;
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(p, fs::perms::owner_all);
    return p;
}

StepInputs small_step(int R = 2, int L = 3) {
    Config c = Config::preset("small");
    c.R = R;
    c.L = L;
    c.nb = 3;
    c.slots = c.S() + 1;
    FixtureOptions fo;
    return make_fixture(c, fo);
}

props::Target exec_in(const TempDir& t, const std::string& cmd, double timeout = 60) {
    props::ExecOptions o;
    o.cmd = cmd;
    o.timeout_s = timeout;
    o.work_dir = t / "work";
    fs::create_directories(o.work_dir);
    return props::exec_target(o);
}

// The message of what target.run throws (as the given type), or "" if it does not throw that.
template <class E>
std::string thrown(const props::Target& target, const StepInputs& in) {
    try {
        target.run(in);
    } catch (const E& e) {
        return e.what();
    }
    return "";
}

bool empty_dir(const std::string& p) { return fs::is_empty(p); }

// Whether a process runs (a zombie, exited but not yet reaped, does not).
bool alive(long pid) {
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string a, b, state;
    return (st >> a >> b >> state) && state != "Z";
}

bool wait_gone(long pid, int ms = 30000) {
    for (int i = 0; i < ms / 10 && alive(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return !alive(pid);
}

// (held non-const by the tests: a missing key then reads as null and fails its check, where [] of a
// const json is undefined)
json read_json(const std::string& p) {
    std::ifstream f(p);
    return json::parse(f);
}

std::string slurp(const std::string& p) {
    std::ifstream f(p);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST_SUITE("fuzz") {

TEST_CASE("exec: a program that writes the reference's outputs is the reference, bit for bit") {
    TempDir t("exec_ref");
    const props::Target target = exec_in(t, shell_quote(MONOKDA_BIN) + " reference {fixture} -o {out}");
    const StepInputs in = small_step();
    const StepOutputs<float> got = target.run(in), want = ref::run<float>(in);
    CHECK(same_bits(got.core_out, want.core_out));
    CHECK(same_bits(got.proj, want.proj));
    CHECK(same_bits(got.ssm_state, want.ssm_state));
    CHECK(same_bits(got.conv_state, want.conv_state));
    CHECK(empty_dir(t / "work"));  // each run's folder is gone
}

TEST_CASE("exec: each way a run can end is named, with the program's stderr, and leaves nothing behind") {
    TempDir t("exec_ends");
    const StepInputs in = small_step();
    const std::string work = t / "work";
    SUBCASE("a non-zero exit") {
        const std::string s = write_script(t, "exit3.sh", "echo 'cannot open the weights' >&2\nexit 3");
        const std::string msg = thrown<props::TargetFailure>(exec_in(t, s + " {fixture} {out}"), in);
        CHECK(msg.find("exit status 3") != std::string::npos);
        CHECK(msg.find("cannot open the weights") != std::string::npos);
    }
    SUBCASE("a crash") {
        const std::string s = write_script(t, "crash.sh", "echo 'about to fault' >&2\nkill -SEGV $$");
        const std::string msg = thrown<props::TargetFailure>(exec_in(t, s + " {fixture} {out}"), in);
        CHECK(msg.find("signal 11") != std::string::npos);
        CHECK(msg.find("about to fault") != std::string::npos);
    }
    SUBCASE("a hang: killed at the limit, with everything it started") {
        const std::string pidfile = t / "sleeper.pid";
        const std::string s = write_script(t, "hang.sh", "sleep 300 &\necho $! > " + shell_quote(pidfile) + "\nwait");
        const auto t0 = std::chrono::steady_clock::now();
        const std::string msg = thrown<props::TargetFailure>(exec_in(t, s + " {fixture} {out}", 1.0), in);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        CHECK(msg.find("no answer within 1 s") != std::string::npos);
        CHECK(took < 10);
        long pid = 0;
        std::ifstream(pidfile) >> pid;
        REQUIRE(pid > 0);
        CHECK(wait_gone(pid, 2000));  // the background sleep was in the killed group
    }
    SUBCASE("exit 77: the step is not for this target (BadInput, not a failure)") {
        const std::string s = write_script(t, "k3only.sh", "echo 'k3 only' >&2\nexit 77");
        const std::string msg = thrown<BadInput>(exec_in(t, s + " {fixture} {out}"), in);
        CHECK(msg.find("rejected the step") != std::string::npos);
        CHECK(msg.find("k3 only") != std::string::npos);
    }
    SUBCASE("exit 0 without an output file") {
        const std::string s = write_script(t, "silent.sh", "exit 0");
        CHECK(thrown<props::TargetFailure>(exec_in(t, s + " {fixture} {out}"), in).find("no output file") != std::string::npos);
    }
    SUBCASE("an output that is not safetensors") {
        const std::string s = write_script(t, "junk.sh", "echo junk > \"$2\"");
        CHECK(thrown<props::TargetFailure>(exec_in(t, s + " {fixture} {out}"), in).find("unreadable output") != std::string::npos);
    }
    CHECK(empty_dir(work));
}

TEST_CASE("exec: an output file is held to SPEC §2's names, dtypes and shapes") {
    const StepInputs in = small_step();
    const TensorFile good = ref::run<float>(in).to_file(in.cfg);
    CHECK_NOTHROW(props::outputs_from_file(good, in.cfg));
    auto message = [&](TensorFile f) {
        try {
            props::outputs_from_file(f, in.cfg);
        } catch (const BadInput& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    TensorFile f = good;
    f.tensors.erase("qkv");
    CHECK(message(f).find("no tensor 'qkv'") != std::string::npos);
    f = good;
    f.tensors["core_out"].dtype = DType::F32;
    CHECK(message(f).find("'core_out' has dtype F32, expected BF16") != std::string::npos);
    f = good;
    f.tensors["ssm_state"].shape = {in.cfg.slots, in.cfg.H, in.cfg.K * in.cfg.V};
    CHECK(message(f).find("'ssm_state' has shape") != std::string::npos);
}

TEST_CASE("exec: bad commands are bad input") {
    TempDir t("exec_bad");
    props::ExecOptions o;
    o.cmd = "prog {fixture}";
    CHECK_THROWS_AS(props::exec_target(o), BadInput);
    o.cmd = "";
    CHECK_THROWS_AS(props::exec_target(o), BadInput);
    o.cmd = "prog {fixture} {out}";
    o.timeout_s = 0;
    CHECK_THROWS_AS(props::exec_target(o), BadInput);
    o.timeout_s = 10;
    o.work_dir = t / "missing";
    CHECK_THROWS_AS(props::exec_target(o), BadInput);
    CHECK(run_cli({"fuzz", "--target", "exec", "--iters", "1"}).code == 2);
    CHECK(run_cli({"fuzz", "--target", "exec", "--cmd", "prog {fixture}", "--iters", "1"}).code == 2);
    CHECK(run_cli({"fuzz", "--target", "reference", "--cmd", "prog {fixture} {out}", "--iters", "1"}).code == 2);
    CHECK(run_cli({"fuzz", "--shapes", "k3", "--config", "small", "--iters", "1"}).code == 2);
    CHECK(run_cli({"fuzz", "--shapes", "huge", "--iters", "1"}).code == 2);
    for (const char* s : {"2/2", "-1/2", "1/0", "a/b", "1", "1/2/3"})
        CHECK_MESSAGE(run_cli({"fuzz", "--shard", s, "--iters", "1"}).code == 2, s);
    CHECK(run_cli({"fuzz", "--iters", "1", "--report", t / "no/such/dir/r.json"}).code == 2);
}

TEST_CASE("keep_dims: shrinking a failure changes R, L, slots and values but no model dim") {
    const StepInputs in = small_step(4, 3);
    const props::Target bad = props::planted_target("skip-token-states");
    const fuzz::ShrinkResult r = fuzz::shrink_failure(bad, "reference-stages", 1, in, 60, true);
    CHECK(r.taken > 0);
    CHECK(r.in.cfg.R == 1);
    CHECK(r.in.cfg.L == 2);
    CHECK(r.in.cfg.D == in.cfg.D);
    CHECK(r.in.cfg.H == in.cfg.H);
    CHECK(r.in.cfg.K == in.cfg.K);
    CHECK(r.in.cfg.F == in.cfg.F);
    CHECK(r.in.cfg.N == in.cfg.N);
    // without keep_dims the same failure goes down to the smallest dims
    CHECK(fuzz::shrink_failure(bad, "reference-stages", 1, in, 60, false).in.cfg.D < in.cfg.D);
}

TEST_CASE("monokda fuzz --target exec: the Python reference passes (no false alarm)") {
    require_python();
    TempDir t("exec_py_ok");
    const CliResult r = run_cli({"fuzz", "--target", "exec", "--cmd", example_cmd(), "--iters", "8", "--jobs", "2",
                                 "--seed", "11", "--quiet", "--out", t / "out", "--report", t / "r.json"});
    INFO(r.out);
    CHECK(r.code == 0);
    json rep = read_json(t / "r.json");
    CHECK(rep["verdict"] == "passed");
    CHECK(rep["cases"] == 8);
    CHECK(rep["checks"]["reference-stages"]["pass"] == 8);
    CHECK(rep["checks"]["oracle"]["fail"] == 0);
}

TEST_CASE("monokda fuzz --target exec: a planted bug is found, written at once, shrunk, and replays") {
    require_python();
    TempDir t("exec_py_bug");
    const CliResult r = run_cli({"fuzz", "--target", "exec", "--cmd", example_cmd("last-state-only"), "--iters", "20",
                                 "--jobs", "2", "--seed", "5", "--quiet", "--shrink-time", "120", "--out", t / "out",
                                 "--report", t / "r.json"});
    INFO(r.out);
    CHECK(r.code == 1);
    json rep = read_json(t / "r.json");
    REQUIRE(rep["failures"].size() == 1);
    const json& f = rep["failures"][0];
    CHECK(f["check"] == "reference-stages");
    CHECK(f["detail"].get<std::string>().find("stage.ssm_state: ") != std::string::npos);  // verify's check, named
    CHECK(fs::exists(f["original"].get<std::string>()));
    const StepInputs small = StepInputs::from_file(read_safetensors(f["fixture"].get<std::string>()));
    CHECK(small.cfg.R == 1);
    CHECK(small.cfg.L == 2);  // the bug needs a state written before the last token
    CHECK(small.cfg.D <= 16);
    CHECK(small.cfg.H == 1);
    CHECK(f["shrunk"]["nonzero_after"].get<long>() < f["shrunk"]["nonzero_before"].get<long>());
    CHECK(f["shrunk"]["final"]["verdict"] == "FAIL");
    // the replay line, run as printed: it fails with the bug and passes without it
    const std::string replay = f["replay"];
    REQUIRE(replay.rfind("monokda fuzz --target exec --cmd ", 0) == 0);
    CHECK(run_cli_line(replay.substr(8)).code == 1);
    const std::string fixed = replay.substr(8);
    const size_t at = fixed.find(" --bug last-state-only");
    REQUIRE(at != std::string::npos);
    CHECK(run_cli_line(fixed.substr(0, at) + fixed.substr(at + 22)).code == 0);
    CHECK(slurp(t / "out/exec-reference-stages-case" + std::to_string(f["case_index"].get<long>()) + ".txt")
              .find("replay (shrunk): ") != std::string::npos);
}

TEST_CASE("monokda fuzz --target exec: a crash keeps the program's stderr (the Python traceback)") {
    require_python();
    TempDir t("exec_py_crash");
    const CliResult r = run_cli({"fuzz", "--target", "exec", "--cmd", example_cmd("crash-on-nb8"), "--iters", "40",
                                 "--jobs", "2", "--seed", "3", "--quiet", "--no-shrink", "--only", "target-run",
                                 "--out", t / "out", "--report", t / "r.json"});
    INFO(r.out);
    CHECK(r.code == 1);
    json rep = read_json(t / "r.json");
    REQUIRE(rep["failures"].size() == 1);
    const std::string detail = rep["failures"][0]["detail"];
    CHECK(rep["failures"][0]["check"] == "target-run");
    CHECK(detail.find("exit status 1") != std::string::npos);
    CHECK(detail.find("RuntimeError: planted crash: nb = 8") != std::string::npos);
    CHECK(rep["failures"][0]["shape"].get<std::string>().find("nb=8") != std::string::npos);
}

TEST_CASE("--shard I/N: disjoint cases whose union is the unsharded run; --merge gives one verdict") {
    TempDir t("exec_shards");
    // a target that records which step it was given (the fixture's bytes) and fails: one run a case
    const std::string seen = t / "seen.txt";
    const std::string s = write_script(t, "record.sh", "sha1sum \"$1\" | cut -c1-40 >> " + shell_quote(seen) + "\nexit 1");
    auto run = [&](const std::string& shard, long iters, const std::string& report) {
        std::vector<std::string> a = {"fuzz", "--target", "exec", "--cmd", s + " {fixture} {out}", "--iters",
                                      std::to_string(iters), "--keep-going", "--no-shrink", "--jobs", "2", "--seed", "7",
                                      "--quiet", "--out", t / "out", "--report", report};
        if (!shard.empty()) a.insert(a.end(), {"--shard", shard});
        return run_cli(a);
    };
    auto lines = [&] {
        std::set<std::string> l;
        std::ifstream f(seen);
        for (std::string x; std::getline(f, x);) l.insert(x);
        fs::remove(seen);
        return l;
    };
    CHECK(run("", 9, t / "all.json").code == 1);
    const std::set<std::string> all = lines();
    CHECK(all.size() == 9);
    std::set<std::string> united;
    size_t total = 0;
    for (int i = 0; i < 3; ++i) {
        CHECK(run(std::to_string(i) + "/3", 3, t / ("r" + std::to_string(i) + ".json")).code == 1);
        const std::set<std::string> part = lines();
        CHECK(part.size() == 3);
        total += part.size();
        united.insert(part.begin(), part.end());
    }
    CHECK(united.size() == total);  // disjoint
    CHECK(united == all);           // together, the unsharded campaign

    const CliResult m = run_cli({"fuzz", "--merge", t / "r0.json", t / "r1.json", t / "r2.json", "--report", t / "m.json"});
    INFO(m.out);
    CHECK(m.code == 1);
    json merged = read_json(t / "m.json");
    CHECK(merged["verdict"] == "FAILED");
    CHECK(merged["cases"] == 9);
    CHECK(merged["failed_cases"] == 9);
    CHECK(merged["shards"].size() == 3);
    REQUIRE(merged["failures"].size() == 3);  // the first failing case of each shard: cases 0, 1, 2
    for (int i = 0; i < 3; ++i) {
        CHECK(merged["failures"][size_t(i)]["case_index"] == i);
        CHECK(merged["failures"][size_t(i)]["shard"] == i);
        CHECK(m.out.find(merged["failures"][size_t(i)]["replay"].get<std::string>()) != std::string::npos);
    }
    const CliResult part = run_cli({"fuzz", "--merge", t / "r0.json", t / "r2.json"});
    CHECK(part.code == 1);
    CHECK(part.out.find("no report for shard(s) 1 of 3") != std::string::npos);
    CHECK(run_cli({"fuzz", "--merge", t / "r0.json", t / "r0.json"}).code == 2);   // a shard twice
    CHECK(run_cli({"fuzz", "--merge", t / "r0.json", t / "all.json"}).code == 2);  // another campaign
    std::ofstream(t / "junk.json") << "{\"kind\": \"something else\"}";
    CHECK(run_cli({"fuzz", "--merge", t / "junk.json"}).code == 2);
    CHECK(run_cli({"fuzz", "--merge", t / "missing.json"}).code == 2);
}

TEST_CASE("monokda fuzz, interrupted: the failure found so far is on disk and in the report; nothing is left running") {
    TempDir t("exec_interrupt");
    // the first case fails at once; every later one hangs until the run is stopped
    const std::string marker = t / "failed-once", pidfile = t / "hang.pid";
    const std::string s = write_script(t, "once.sh", "if [ ! -e " + shell_quote(marker) + " ]; then touch " +
                                                         shell_quote(marker) + "; echo 'first case broken' >&2; exit 1; fi\n"
                                                         "echo $$ > " + shell_quote(pidfile) + "\nexec sleep 300");
    fs::create_directories(t / "tmp");
    const std::string cmd = "cd " + shell_quote(t.path.string()) + "; ( TMPDIR=" + shell_quote(t / "tmp") + " exec " +
                            shell_quote(MONOKDA_BIN) + " fuzz --target exec --cmd " + shell_quote(s + " {fixture} {out}") +
                            " --iters 50 --keep-going --jobs 1 --quiet --out out --report r.json > log.txt 2>&1 ) & echo $! > pid";
    REQUIRE(std::system(cmd.c_str()) == 0);
    long pid = 0;
    std::ifstream(t / "pid") >> pid;
    REQUIRE(pid > 0);
    for (int i = 0; i < 3000 && !fs::exists(pidfile); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(fs::exists(pidfile));  // the second case is hanging
    CHECK(kill(pid_t(pid), SIGTERM) == 0);
    CHECK(wait_gone(pid));
    INFO(slurp(t / "log.txt"));
    json rep = read_json(t / "r.json");
    CHECK(rep["stopped_by"] == "interrupted");
    REQUIRE(rep["failures"].size() == 1);
    CHECK(rep["failures"][0]["detail"].get<std::string>().find("first case broken") != std::string::npos);
    CHECK(fs::exists(t.path / rep["failures"][0]["original"].get<std::string>()));
    CHECK(rep["failures"][0]["replay"].get<std::string>().find("-original.safetensors") != std::string::npos);
    CHECK(empty_dir(t / "tmp"));  // the hanging run's folder is gone
    long hung = 0;
    std::ifstream(pidfile) >> hung;
    CHECK(wait_gone(hung, 2000));
}
}
