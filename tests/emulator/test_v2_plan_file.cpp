// Kernel v2's plan file under the emulator (emulate_v2 with a given plan) and the command line: a
// plan written and read back runs exactly as the built one (verdict, detector, report detail, every
// scheduler step, proj) under every schedule and planted fault tried, at the small and the production
// shape; `monokda plan check` and `monokda emulate --kernel v2 --plan` as a user runs them: exit 0
// sound or passing, 1 a problem or a fault caught (an edited partial's bytes, a dropped step: the
// check names it, the run deadlocks), 2 a malformed file or conflicting options, naming the field,
// nothing written; the replay line carries the plan's digest, and a changed file is refused.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "emu_util.hpp"
#include "emulator/v2/emulate_v2.hpp"
#include "tests/bad_input_message.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;
using namespace monokda::test;
using nlohmann::json;

namespace {

V2EmulateOptions options(const char* preset, int R, int L) {
    V2EmulateOptions o;
    o.fixture.preset = preset;
    o.fixture.R = R, o.fixture.L = L;
    return o;
}

// The built plan's preparation and the same fixture's with the plan written and read back.
struct Pair {
    V2Prepared built, read;
};
Pair prepare_both(const V2EmulateOptions& o) {
    Pair p{prepare_v2(o), {}};
    V2EmulateOptions r = o;
    r.plan = std::make_shared<const PlanV2>(PlanV2::from_json(p.built.plan.to_json(), "v2.json"));
    r.plan_file = "v2.json";
    p.read = prepare_v2(r);
    return p;
}

const Pair& small_pair() {
    static const Pair p = prepare_both(options("small", 2, 4));
    return p;
}

// Two runs are the same run: verdict, detector, what it names, every scheduler step, every proj bit.
void check_same_run(const V2EmulateResult& a, const V2EmulateResult& b) {
    CHECK(to_string(a.verdict) == std::string(to_string(b.verdict)));
    CHECK(a.run.detector == b.run.detector);
    CHECK(a.run.detail == b.run.detail);
    CHECK(a.run.named == b.run.named);
    CHECK(a.run.history == b.run.history);
    CHECK(a.run.sched_steps == b.run.sched_steps);
    CHECK(a.run.ticks == b.run.ticks);
    CHECK(same_bits(a.run.proj, b.run.proj));
    CHECK(a.problems.size() == b.problems.size());
}

std::string line_after(const std::string& out, const std::string& key) {
    const size_t at = out.find(key);
    return at == std::string::npos ? "" : out.substr(at + key.size(), out.find('\n', at) - at - key.size());
}

json read_json_file(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
}

// the small plan's file, written by monokda plan --kernel v2 into dir
std::string written(const TempDir& dir) {
    const std::string file = dir / "v2.json";
    REQUIRE(run_cli({"plan", "--kernel", "v2", "--config", "small", "-o", file}).code == 0);
    return file;
}

// file with one edit, written as `name` into dir: plan check names the edit (exit 1, `check_says`) and
// the emulation deadlocks on it (exit 1, `run_says`); returns the edited file's path
template <class F>
std::string run_edited(const TempDir& dir, const std::string& file, const std::string& name, F&& edit, const std::string& check_says,
                       const std::string& run_says) {
    json j = read_json_file(file);
    edit(j);
    const std::string path = dir / name;
    write_text(path, j.dump(1));
    const CliResult c = run_cli({"plan", "check", path});
    INFO(c.out);
    CHECK(c.code == 1);
    CHECK(contains(c.out, check_says));
    const CliResult r = run_cli({"emulate", "--kernel", "v2", "--plan", path});
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(contains(r.out, "VERDICT: DEADLOCK"));
    CHECK(contains(r.out, run_says));
    CHECK(contains(r.out, "problem(s); first: " + check_says.substr(2)));  // the report's plan checks
    return path;
}

std::vector<std::string> listing(const std::filesystem::path& dir) {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

TEST_CASE("a plan written and read back runs as the built one, clean and under every planted fault") {
    const Pair& p = small_pair();
    REQUIRE(!p.read.plan_digest.empty());
    std::vector<Fault> faults{Fault::none};
    for (const FaultInfo& f : fault_list())  // the tail's faults: on the tail's plan file (below)
        if (f.kernel == 2 && std::string(f.name).rfind("tail_", 0) != 0) faults.push_back(f.fault);
    for (Fault f : faults)
        for (const char* s : {"random", "pct", "rr", "delay:cta:1"}) {
            V2EmulateOptions o = options("small", 2, 4);
            o.fault = f;
            o.schedule = Schedule::parse(s);
            o.schedule.seed = 2;
            INFO(to_string(f), " under ", s);
            const V2EmulateResult a = emulate_v2(p.built, o), b = emulate_v2(p.read, o);
            check_same_run(a, b);
            CHECK((a.verdict == Verdict::PASS) == (f == Fault::none));
            CHECK(contains(b.report, "plan: v2.json (digest " + p.read.plan_digest + "), as the file gives its tables and programs"));
            CHECK(contains(b.report, "replay: monokda emulate --kernel v2 --plan v2.json --plan-digest " + p.read.plan_digest + " --fixture-seed 1"));
        }
}

TEST_CASE("the production plan written and read back runs as the built one (S = 4, the seam's)") {
    const Pair p = prepare_both(options("k3", 1, 4));
    CHECK(p.read.plan.has_seam());
    V2EmulateOptions o = options("k3", 1, 4);
    o.schedule = Schedule::parse("pct");
    const V2EmulateResult a = emulate_v2(p.built, o), b = emulate_v2(p.read, o);
    check_same_run(a, b);
    CHECK(b.verdict == Verdict::PASS);
    CHECK(contains(b.report, "proj: bit-identical to the reference in in_proj=cluster:8 (25152 elements)"));
}

TEST_CASE("a plan without the seam (x an input) written and read back runs as the built one") {
    Config c = Config::preset("small");
    c.R = 2, c.L = 4, c.slots = c.S() + 1;
    PlanV2Params pp = PlanV2Params::for_config(c);
    pp.seam = 0;
    const PlanV2 built = PlanV2::build(c, pp);
    V2EmulateOptions o = options("small", 2, 4);
    o.plan = std::make_shared<const PlanV2>(built);
    const V2Prepared a = prepare_v2(o);
    o.plan = std::make_shared<const PlanV2>(PlanV2::from_json(built.to_json()));
    const V2Prepared b = prepare_v2(o);
    REQUIRE(!b.plan.has_seam());
    for (Fault f : {Fault::none, Fault::recv_slot_reused}) {
        o.fault = f;
        const V2EmulateResult ra = emulate_v2(a, o), rb = emulate_v2(b, o);
        INFO(rb.report);
        check_same_run(ra, rb);
        CHECK(rb.verdict == (f == Fault::none ? Verdict::PASS : Verdict::REUSE_BEFORE_FREE));
        if (f == Fault::none) CHECK(contains(rb.report, "proj: bit-identical to the reference in in_proj=cluster:8 (2304 elements)"));
    }
}

TEST_CASE("any integer of a written file set to an extreme: refused naming the file, or read, checked and run to a verdict") {
    const std::string text = small_pair().built.plan.to_json();
    const json base = json::parse(text);
    std::vector<json::json_pointer> ints;  // every integer of the file, by its place
    std::vector<std::pair<const json*, json::json_pointer>> todo{{&base, json::json_pointer()}};
    while (!todo.empty()) {
        const auto [j, at] = todo.back();
        todo.pop_back();
        if (j->is_object())
            for (auto it = j->begin(); it != j->end(); ++it) todo.push_back({&it.value(), at / it.key()});
        else if (j->is_array())
            for (size_t i = 0; i < j->size(); ++i) todo.push_back({&(*j)[i], at / i});
        else if (j->is_number_integer())
            ints.push_back(at);
    }
    REQUIRE(ints.size() > 1000);
    int refused = 0, ran = 0;
    for (size_t i = 0; i < ints.size(); i += ints.size() / 40) {
        for (const int64_t v : {int64_t(-1), int64_t(1) << 30, base[ints[i]].get<int64_t>() + 1}) {
            json j = base;
            j[ints[i]] = v;
            INFO(ints[i].to_string(), " = ", v);
            PlanV2 p;
            const std::string m = bad_input_message([&] { p = PlanV2::from_json(j.dump(), "edited.json"); });
            if (!m.empty()) {
                CHECK(m.rfind("edited.json: ", 0) == 0);
                ++refused;
                continue;
            }
            p.problems();
            CHECK(PlanV2::from_json(p.to_json()).serialize() == p.serialize());
            V2EmulateOptions o = options("small", 2, 4);
            o.plan = std::make_shared<const PlanV2>(p);
            if (!bad_input_message([&] { emulate_v2(prepare_v2(o), o); }).empty()) continue;  // another shape: refused
            ++ran;
        }
    }
    CHECK(refused > 15);
    CHECK(ran > 15);
}

TEST_CASE("a given plan not of the fixture's shape, or of another digest, is refused before any work") {
    V2EmulateOptions o = options("small", 2, 4);
    o.plan = std::make_shared<const PlanV2>(small_pair().built.plan);
    o.fixture.L = 2;  // the plan is for L = 4
    CHECK_THROWS_WITH_AS(prepare_v2(o), doctest::Contains("the plan is for L = 4, the fixture has L = 2"), BadInput);
    o.fixture.L = 4;
    o.plan_digest = "0000000000000000";
    CHECK_THROWS_WITH_AS(prepare_v2(o), doctest::Contains("--plan-digest 0000000000000000: the plan has digest"), BadInput);
    o.plan_digest = plan_digest(*o.plan);
    CHECK(prepare_v2(o).plan_digest == o.plan_digest);
}

TEST_CASE("plan check and emulate --kernel v2 --plan on a written file: sound, a pass, its replay line, a fault caught as on the built plan") {
    TempDir dir("v2planfile");
    const std::string file = written(dir);
    CliResult r = run_cli({"plan", "check", file});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "kernel v2 in_proj, 2 clusters of 8 (16 CTAs), 6 units, for D 256, N 288, R 2, L 4, nb 4; the seam computes x"));
    CHECK(contains(r.out, "plan sound: all 20 checks pass"));
    r = run_cli({"emulate", "--kernel", "v2", "--plan", file, "--schedule", "pct", "--seed", "3"});
    CHECK(r.code == 0);
    CHECK(contains(r.out, "VERDICT: PASS"));
    const std::string replay = line_after(r.out, "replay: monokda ");
    CHECK(contains(replay, "--plan " + file + " --plan-digest "));
    const CliResult again = run_cli_line(replay);
    CHECK(again.code == 0);
    CHECK(line_after(again.out, "run: ").substr(0, 40) == line_after(r.out, "run: ").substr(0, 40));
    // the built plan's run, the same interleaving
    const CliResult built = run_cli({"emulate", "--kernel", "v2", "--config", "small", "--schedule", "pct", "--seed", "3"});
    CHECK(line_after(built.out, "run: ").substr(0, 40) == line_after(r.out, "run: ").substr(0, 40));
    const CliResult sweep = run_cli({"emulate", "--kernel", "v2", "--plan", file, "--sweep", "6"});
    CHECK(sweep.code == 0);
    CHECK(contains(sweep.out, "PASS 6"));
    // a planted fault: caught as on the built plan
    const CliResult fault = run_cli({"emulate", "--kernel", "v2", "--plan", file, "--inject", "recv_slot_reused"});
    const CliResult fault_built = run_cli({"emulate", "--kernel", "v2", "--config", "small", "--inject", "recv_slot_reused"});
    CHECK(fault.code == 1);
    CHECK(contains(fault.out, "VERDICT: REUSE_BEFORE_FREE\ncaught by: recv_slot_free ("));
    CHECK(line_after(fault.out, "caught by: recv_slot_free") == line_after(fault_built.out, "caught by: recv_slot_free"));
}

TEST_CASE("an edited file as a user runs it: the check names the edit (exit 1), the run fails on it, the old replay line is refused") {
    TempDir dir("v2planedit");
    const std::string file = written(dir);
    const std::string replay = line_after(run_cli({"emulate", "--kernel", "v2", "--plan", file}).out, "replay: monokda ");
    REQUIRE(contains(replay, "--plan-digest "));
    // an edited partial's bytes: the check names it, and the owner's barrier, armed for all eight, never completes
    const std::string short_partial = run_edited(dir, file, "short_partial.json", [](json& j) { j["cluster_buffers"][0]["senders"][3]["bytes"] = 255; },
                                                 "  recv_bytes: partial 3 is 255 bytes, not 256",
                                                 "REDUCE(unit 0, rows 256..263, slot 0) waits for recv[slot 0] of CTA 0 round 0 (0 phases completed, 0 "
                                                 "arrivals and 1 bytes pending)");
    // the replay line of the first file does not run on the edited one: its digest is another
    std::string moved = replay;
    moved.replace(moved.find(file), file.size(), short_partial);
    const CliResult r = run_cli_line(moved);
    CHECK(r.code == 2);
    CHECK(contains(r.out, "has digest"));
    CHECK(contains(r.out, "(the file is not the one the replay line was printed for)"));
    // a program step dropped: CTA 3's consumer 0 sends nothing for unit 0's first owner
    run_edited(dir, file, "dropped_send.json",
               [](json& j) {
                   auto& prog = j["ctas"][3]["roles"][2]["program"];
                   REQUIRE(prog[5]["op"] == "SEND");
                   prog.erase(5);
               },
               "  recv_senders: partial 3 is sent 0 times",
               "CTA 0 (cluster 0 rank 0) reducer REDUCE(unit 0, rows 256..263, slot 0) waits for recv[slot 0] of CTA 0 round 0");
}

TEST_CASE("malformed files and conflicting options: exit 2, the field named, nothing written") {
    TempDir dir("v2planbad");
    const std::string file = written(dir);
    const auto before = listing(dir.path);
    const std::string text = read_json_file(file).dump(1);
    struct Bad {
        std::string name, text, names;
        std::string check_names = "";  // what plan check says, where it is not what emulate says
    };
    auto edit = [&](auto f) {
        json x = read_json_file(file);
        f(x);
        return x.dump(1);
    };
    const std::vector<Bad> bad = {
        {"truncated.json", text.substr(0, text.size() / 3), "not valid JSON at byte"},
        {"wrong_type.json", edit([](json& x) { x["ctas"][2]["ring"]["depth"] = "2"; }), "ctas[2].ring.depth: must be an integer"},
        {"out_of_range.json", edit([](json& x) { x["ctas"][3]["roles"][4]["program"][4]["a"] = 9; }),
         "ctas[3].roles[4].program[4].a: must be in 0..5 (got 9)"},
        {"count.json", edit([](json& x) { x["cluster_barriers"].erase(3); }), "cluster_barriers: must hold 4 entries (got 3)"},
        // the file says it is kernel v1's: plan check reads it as one, emulate --kernel v2 refuses it as one
        {"v1_format.json", edit([](json& x) { x["format"] = "monokda-plan"; }), "format: is \"monokda-plan\": kernel v1's plan file",
         "v1_format.json: has no \"layout\""},
    };
    for (const Bad& b : bad) write_text(dir / b.name, b.text);
    const auto with_bad = listing(dir.path);
    for (const Bad& b : bad) {
        INFO(b.name);
        for (const bool check : {true, false}) {
            const CliResult x = run_cli(check ? std::vector<std::string>{"plan", "check", dir / b.name}
                                              : std::vector<std::string>{"emulate", "--kernel", "v2", "--plan", dir / b.name});
            INFO(x.out);
            CHECK(x.code == 2);
            CHECK(contains(x.out, "error: "));
            CHECK(contains(x.out, check && !b.check_names.empty() ? b.check_names : b.names));
        }
    }
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"emulate", "--kernel", "v2", "--plan", file, "--config", "small"},
             {"emulate", "--kernel", "v2", "--plan", file, "--R", "2"},
             {"emulate", "--kernel", "v2", "--plan-digest", "0123"},
             {"emulate", "--plan", file},
             {"emulate", "--config", "small", "--plan-digest", "0123"},
             {"emulate", "--kernel", "v2", "--plan", dir / "missing.json"}}) {
        std::string line;
        for (const auto& a : args) line += a + " ";
        INFO(line);
        const CliResult x = run_cli(args);
        INFO(x.out);
        CHECK(x.code == 2);
        CHECK(contains(x.out, "error: "));
    }
    CHECK(contains(run_cli({"emulate", "--kernel", "v2", "--plan", file, "--L", "2"}).out,
                   "--L describes the plan built for the fixture; --plan gives the plan (and its config, R, L, nb)"));
    CHECK(contains(run_cli({"emulate", "--plan", file}).out, "kernel v2's plan file (monokda emulate --kernel v2 --plan runs it)"));
    CHECK(listing(dir.path) == with_bad);
    CHECK(before.size() + bad.size() == with_bad.size());
}

TEST_CASE("a plan file with the tail: plan check reads and checks it, emulate runs it; an edited task is named, and its run judged") {
    TempDir dir("v2plantail");
    const std::string path = dir / "tail.json";
    const CliResult w = run_cli({"plan", "--kernel", "v2", "--config", "small", "--tail", "-o", path});
    INFO(w.out);
    REQUIRE(w.code == 0);
    CHECK(contains(w.out, "the tail's 8 kda tasks"));
    const CliResult c = run_cli({"plan", "check", path});
    INFO(c.out);
    CHECK(c.code == 0);
    const CliResult r = run_cli({"emulate", "--kernel", "v2", "--plan", path});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "the tail: g1, qkv, conv_state, o, ssm_state and core_out bit-identical to the reference"));
    CHECK(contains(r.out, "VERDICT: PASS"));
    const CliResult f = run_cli({"emulate", "--kernel", "v2", "--plan", path, "--inject", "tail_onrm_unwaited"});
    INFO(f.out);
    CHECK(f.code == 1);
    CHECK(contains(f.out, "caught by: tail_landed"));
    json j = read_json_file(path);
    j["tail"]["tasks"][1]["share"]["qk_rows"] = {8, 16};  // tile 1 polls q and k rows 8 .. 23: 24 .. 31 never
    write_text(path, j.dump(1));
    const CliResult bad = run_cli({"plan", "check", path});
    INFO(bad.out);
    CHECK(bad.code == 1);
    CHECK(contains(bad.out, "(request 0, head 0)'s tasks share q and k row 8 of the head 2 times, not once"));
    const CliResult run = run_cli({"emulate", "--kernel", "v2", "--plan", path});
    INFO(run.out);
    CHECK(run.code == 1);
    CHECK(contains(run.out, " problem(s); first: tail_tasks:"));
    const CliResult both = run_cli({"emulate", "--kernel", "v2", "--plan", path, "--tail"});
    CHECK(both.code == 2);
    CHECK(contains(both.out, "--tail builds the tail into the plan made for the fixture"));
}
