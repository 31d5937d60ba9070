// Plans as files under the emulator: the built-in plan written and read back runs exactly as the
// built one (verdict, outputs, history, replay), under every schedule and planted fault tried; a
// hand-edited file's wrong wait, index or group is a real protocol bug the run catches and names;
// `monokda plan`, `plan check` and `emulate --plan` as a user runs them.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "emu_util.hpp"
#include "emulator/replay_token.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;
using nlohmann::json;

namespace {

EmulateOptions with_plan(EmulateOptions o, const Plan& p) {
    o.plan = std::make_shared<const Plan>(p);
    return o;
}

Plan reread(const Plan& p) { return Plan::from_json(p.to_json(), "p.json"); }

// Two runs are the same run: verdict, report detail, every event, every output bit.
void check_same_run(const EmulateResult& a, const EmulateResult& b) {
    CHECK(to_string(a.verdict) == std::string(to_string(b.verdict)));
    CHECK(a.run.detail == b.run.detail);
    CHECK(a.run.sched_steps == b.run.sched_steps);
    CHECK(a.run.ticks == b.run.ticks);
    CHECK(a.run.history.size() == b.run.history.size());
    CHECK(a.run.named == b.run.named);
    CHECK(a.run.entry == b.run.entry);
    REQUIRE(a.run.outputs.size() == b.run.outputs.size());
    for (size_t k = 0; k < a.run.outputs.size(); ++k) CHECK(first_different(a.run.outputs[k], b.run.outputs[k]) == "");
}

}  // namespace

TEST_CASE("the built-in plan through its file runs as the built one: every shape, schedule and fault tried") {
    struct Shape { int R, L; };
    for (const Shape sh : {Shape{2, 4}, Shape{1, 1}, Shape{3, 3}}) {
        EmulateOptions o = small_options();
        o.fixture.R = sh.R;
        o.fixture.L = sh.L;
        Prepared built = prepare(o, 2);
        Prepared filed = prepare(with_plan(o, reread(built.plan)), 2);
        for (const char* sched : {"random", "pct", "delay:gemv"})
            for (const FaultInfo& f : fault_list()) {
                if (f.kernel != 1) continue;  // kernel v2's faults: tests/emulator/test_v2_faults.cpp
                if (f.fault == Fault::wrong_accepted_window && sh.L < 2) continue;
                EmulateOptions r = o;
                r.schedule = Schedule::parse(sched);
                r.schedule.seed = 3;
                r.fault = f.fault;
                CAPTURE(sh.R);
                CAPTURE(sh.L);
                CAPTURE(sched);
                CAPTURE(f.name);
                const EmulateResult a = emulate(built, r);
                const EmulateResult b = emulate(filed, with_plan(r, filed.plan));
                check_same_run(a, b);
                // the file's token names the plan; read back, it is the same run's
                const EmulateOptions back = apply_token(small_options(), b.token);
                CHECK(back.plan_digest == plan_digest(filed.plan));
                CHECK(back.schedule.str() == r.schedule.str());
                CHECK(back.fault == r.fault);
            }
    }
}

TEST_CASE("a dropped XRDY wait in a file is a real dropped wait: the gemv CTA reads x unordered") {
    Prepared& p = small_prepared();
    const int gemv = p.plan.n_attn_ctas();
    json j = json::parse(p.plan.to_json());
    int at = -1;
    for (size_t i = 0; i < j["ctas"][size_t(gemv)]["instrs"].size(); ++i)
        if (j["ctas"][size_t(gemv)]["instrs"][i]["op"] == "GEMV_GROUP") { at = int(i); break; }
    REQUIRE(at >= 0);
    j["ctas"][size_t(gemv)]["instrs"][size_t(at)]["waits"] =
        json::parse(R"([{"each": "slice", "on": "XRDY[slice 0..3][part 0]"}, {"each": "slice", "on": "XRDY[slice 5..15][part 0]"}])");
    const Plan q = Plan::from_json(j.dump(), "dropped.json");
    Prepared pq = prepare(with_plan(small_options(), q), 1);
    for (const char* sched : {"random", "pct", "rr", "delay:attn"}) {
        EmulateOptions o = with_plan(small_options(), q);
        o.schedule = Schedule::parse(sched);
        const EmulateResult r = emulate(pq, o);
        INFO(r.report);
        CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
        CHECK(r.run.entry == q.xrdy(4, 0));
        REQUIRE(!r.run.named.empty());
        CHECK(r.run.named[0] == gemv);
        CHECK(contains(r.run.detail, "CTA " + std::to_string(gemv) + " (gemv) GEMV_GROUP"));
        CHECK(contains(r.run.detail, "XRDY[slice 4]"));
        CHECK(!r.problems.empty());
    }
}

TEST_CASE("a transposed QK index in a file: the recurrence reads its sibling's q share unordered") {
    Prepared& p = small_prepared();
    const int cta = p.plan.kda_cta(0, 1, 0);
    json j = json::parse(p.plan.to_json());
    for (json& in : j["ctas"][size_t(cta)]["instrs"])
        if (in["op"] == "KDA_REC" && in["r"] == 0 && in["h"] == 1 && in["chunk"] == 0) {
            std::string t = in["waits"].dump();
            const size_t at = t.find("QK[r 0][h 1][chunk 1..3]");
            REQUIRE(at != std::string::npos);
            t.replace(at, 24, "QK[r 1][h 0][chunk 1..3]");
            in["waits"] = json::parse(t);
        }
    const Plan q = Plan::from_json(j.dump(), "transposed.json");
    Prepared pq = prepare(with_plan(small_options(), q), 1);
    for (uint64_t seed : {1ull, 2ull, 3ull}) {
        EmulateOptions o = with_plan(small_options(), q);
        o.schedule.seed = seed;
        const EmulateResult r = emulate(pq, o);
        INFO(r.report);
        CHECK(r.verdict == Verdict::VISIBILITY_FAULT);
        CHECK(r.run.entry == q.qk(0, 1, 1));
        CHECK(contains(r.run.detail, "KDA_REC(r 0, h 1, chunk 0) read g1[row 0][col 40]"));  // the sibling chunk 1's share
        CHECK(contains(r.run.detail, "QK[r 0][h 1][chunk 1]"));
    }
}

TEST_CASE("a file that lost a gemv group: the kda tasks wait for its PROJ entry forever, named") {
    Prepared& p = small_prepared();
    const int g = 7, cta = p.plan.gemv_cta(g);
    json j = json::parse(p.plan.to_json());
    json kept = json::array();
    for (const json& in : j["ctas"][size_t(cta)]["instrs"])
        if (!(in.contains("group") && in["group"] == g)) kept.push_back(in);
    j["ctas"][size_t(cta)]["instrs"] = kept;
    const Plan q = Plan::from_json(j.dump(), "lost.json");
    Prepared pq = prepare(with_plan(small_options(), q), 1);
    const EmulateResult r = emulate(pq, with_plan(small_options(), q));
    INFO(r.report);
    CHECK((r.verdict == Verdict::LIVELOCK || r.verdict == Verdict::DEADLOCK));
    CHECK(contains(r.run.detail, "PROJ[group 7]"));
    CHECK(contains(r.run.detail, "no CTA produces it"));
}

TEST_CASE("a file whose split order is not its instructions': the comparison with the reference names the element") {
    // k3 at one token: 56 slices of 128 columns; the file says the 7168-term sums are split in 28
    EmulateOptions o;
    o.fixture.R = 1;
    o.fixture.L = 1;
    o.envelope_orders = -1;
    Prepared built = prepare(o, 1);
    json j = json::parse(built.plan.to_json());
    j["reduction_order"]["in_proj"] = "split:28";
    const Plan q = Plan::from_json(j.dump(), "split.json");
    Prepared pq = prepare(with_plan(o, q), 1);
    const EmulateResult r = emulate(pq, with_plan(o, q));
    INFO(r.report);
    CHECK(r.verdict == Verdict::WRONG_RESULT);
    CHECK(contains(r.run.detail, "step 0: proj[row 0][col "));
    CHECK(contains(r.run.detail, "the reference in the plan's order gives"));
    CHECK(contains(r.report, "reduction_order.in_proj is split:28, but the instructions sum it as split:56"));
}

TEST_CASE("a file with a CTA too many for its target: the run may pass, the plan does not") {
    Prepared& p = small_prepared();
    json j = json::parse(p.plan.to_json());
    j["ctas"].push_back(json::parse(R"({"cta": 24, "instrs": []})"));
    j["launch"]["order"].push_back(24);
    const Plan q = Plan::from_json(j.dump(), "toomany.json");
    Prepared pq = prepare(with_plan(small_options(), q), 1);
    const EmulateResult r = emulate(pq, with_plan(small_options(), q));
    CHECK(r.resident == 24);  // the target's places
    REQUIRE(!r.problems.empty());
    CHECK(contains(r.problems[0], "launch: 25 CTAs, but the target holds 24 co-resident"));
    CHECK(contains(r.report, "the run passed, the plan does not"));
}

TEST_CASE("a file whose products misdescribe an instruction is refused before a run") {
    Prepared& p = small_prepared();
    json j = json::parse(p.plan.to_json());
    j["ctas"][3]["instrs"][0]["produces"] = json::parse(R"(["PART[row 0..7][src 0..4][slice 4]"])");
    const Plan q = Plan::from_json(j.dump(), "products.json");
    CHECK_THROWS_WITH_AS(prepare(with_plan(small_options(), q), 1),
                         doctest::Contains("products.json: its products are not what its instructions store"), BadInput);
}

TEST_CASE("monokda plan, plan check and emulate --plan from the command line") {
    using monokda::test::run_cli;
    monokda::test::TempDir dir("plan_file");
    const std::string f = dir / "p.json";
    auto w = run_cli({"plan", "--config", "small", "--R", "1", "--L", "2", "-o", f});
    REQUIRE(w.code == 0);
    CHECK(contains(w.out, "wrote " + f));
    auto c = run_cli({"plan", "check", f});
    CHECK(c.code == 0);
    CHECK(contains(c.out, "structure sound"));
    auto e = run_cli({"emulate", "--plan", f, "--no-envelope", "--schedule", "pct", "--seed", "4"});
    CHECK(e.code == 0);
    CHECK(contains(e.out, "plan file " + f));
    CHECK(contains(e.out, "(D 256, H 2, K 32, R 1, L 2, nb 4, S 2)"));  // the built-in fixture took the plan's shape
    const size_t at = e.out.find("--replay ");
    REQUIRE(at != std::string::npos);
    const std::string token = e.out.substr(at + 9, e.out.find('\n', at) - at - 9);
    auto re = run_cli({"emulate", "--plan", f, "--no-envelope", "--replay", token});
    CHECK(re.code == 0);
    auto steps_ticks = [](const std::string& out) {  // "  8369 scheduler steps, 8395 ticks" (no times)
        const size_t a = out.rfind('\n', out.find(" scheduler steps")), b = out.find(" ticks", a);
        return out.substr(a, b - a);
    };
    CHECK(steps_ticks(e.out) == steps_ticks(re.out));
    // the token needs its plan, and that plan
    CHECK(run_cli({"emulate", "--no-envelope", "--replay", token}).code == 2);
    const std::string g = dir / "q.json";
    REQUIRE(run_cli({"plan", "--config", "small", "--R", "1", "--L", "2", "--blocks", "30", "-o", g}).code == 0);
    auto other = run_cli({"emulate", "--plan", g, "--no-envelope", "--replay", token});
    CHECK(other.code == 2);
    CHECK(contains(other.out, "the replay token is of the plan with digest"));
    // a plan with a problem: plan check exits 1 and lists it
    json j = json::parse(std::ifstream(f));
    j["reduction_order"]["x_sumsq"] = "split:2";
    std::ofstream(g) << j.dump();
    auto bad = run_cli({"plan", "check", g});
    CHECK(bad.code == 1);
    CHECK(contains(bad.out, "reduction_order.x_sumsq is split:2, but the instructions sum it as split:16"));
    // options of the built-in plan contradict --plan; a malformed file is bad input
    CHECK(run_cli({"emulate", "--plan", f, "--blocks", "30"}).code == 2);
    std::ofstream(g) << "{\"format\": \"monokda-plan\", \"format\": 1}";
    auto dup = run_cli({"plan", "check", g});
    CHECK(dup.code == 2);
    CHECK(contains(dup.out, "duplicate key 'format'"));
    CHECK(run_cli({"plan", "check", dir / "missing.json"}).code == 2);
}

TEST_CASE("plan files follow their JSON Schema (docs/plan-file.schema.json), which refuses a malformed one") {
    using monokda::test::run_cli;
    monokda::test::TempDir dir("plan_schema");
    const std::string f = dir / "p.json", seed = dir / "seed.json", bad = dir / "bad.json";
    REQUIRE(run_cli({"plan", "--config", "small", "-o", f}).code == 0);
    const std::string py = monokda::test::shell_quote(MONOKDA_PYTHON);
    const std::string src = std::string(MONOKDA_SOURCE_DIR);
    REQUIRE(monokda::test::run_cli_line("'" + src + "/examples/plans/seed_mi355x.py' --R 1 --L 1 -o '" + seed + "'", MONOKDA_PYTHON).code == 0);
    json j = json::parse(std::ifstream(f));
    j["ctas"][0]["instrs"][0]["row"] = 3;  // an operand ATTN_PART does not have
    std::ofstream(bad) << j.dump();
    const std::string check =
        "-c \"import json, sys, jsonschema; v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))); "
        "[print(f, 'ok' if v.is_valid(json.load(open(f))) else 'invalid') for f in sys.argv[2:]]\" '" +
        src + "/docs/plan-file.schema.json' '" + f + "' '" + seed + "' '" + bad + "'";
    const auto r = monokda::test::run_cli_line(check, MONOKDA_PYTHON);
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, f + " ok"));
    CHECK(contains(r.out, seed + " ok"));
    CHECK(contains(r.out, bad + " invalid"));
}
