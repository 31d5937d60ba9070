// The plan file (docs/plan-file.md): a built plan written and read back is the same plan; a file with
// a wrong wait, index, group or CTA count reads, and its problems are named by CTA, instruction and
// entry; a malformed file is refused, naming the place. Expected entries come from the SPEC's index
// arithmetic and the test's own edits, not from the checker.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "core/plan_policy.hpp"
#include "tests/core/plan_compare.hpp"

using namespace monokda;
using nlohmann::json;
using monokda::test::first_difference;

namespace {

Config shape(const char* preset, int R, int L) {
    Config c = Config::preset(preset);
    c.R = R;
    c.L = L;
    c.slots = c.S() + 1;
    return c;
}

Plan small_plan() { return Plan::build(shape("small", 2, 4), PlanPolicy::defaults_for(shape("small", 2, 4))); }

std::string problems_text(const Plan& p) {
    std::string s;
    for (const auto& l : p.structural_problems()) s += l + "\n";
    return s;
}
bool contains(const std::string& h, const std::string& n) { return h.find(n) != std::string::npos; }

std::string refusal(const std::string& text) {
    try {
        Plan::from_json(text, "p.json");
    } catch (const BadInput& e) {
        return e.what();
    }
    return "";
}

// The index of the first instruction of `cta` with opcode op (and operand a when given).
int find_instr(const Plan& p, int cta, Op op, int a = -1) {
    for (int i = 0; i < int(p.instrs(cta).size()); ++i)
        if (p.instrs(cta)[size_t(i)].opcode() == op && (a < 0 || p.instrs(cta)[size_t(i)].a == a)) return i;
    return -1;
}

}  // namespace

TEST_CASE("a built plan written and read back is the same plan, its checks the same") {
    struct Case { const char* preset; int R, L, blocks; bool amd; };
    for (const Case& c : {Case{"small", 2, 4, 0, false}, Case{"small", 1, 1, 0, false}, Case{"small", 3, 3, 40, true},
                          Case{"k3", 1, 1, 0, false}, Case{"k3", 2, 4, 0, false}, Case{"k3", 4, 4, 0, false},
                          Case{"k3", 8, 8, 256, true}}) {
        CAPTURE(c.preset);
        CAPTURE(c.R);
        CAPTURE(c.L);
        const Config cfg = shape(c.preset, c.R, c.L);
        PlanParams pp = PlanPolicy::defaults_for(cfg);
        if (c.blocks) pp.blocks = c.blocks;
        Plan a = Plan::build(cfg, pp);
        PlanTarget t = a.target();
        t.in_order_loads = c.amd;
        a.set_target(t);
        const std::string text = a.to_json();
        const Plan b = Plan::from_json(text, "p.json");
        CHECK(first_difference(a, b) == "");
        CHECK(b.structural_problems().empty());
        CHECK(b.min_residency() == a.min_residency());
        CHECK(b.products_match());
        CHECK(b.to_json() == text);  // the writer is a function of the plan alone
    }
}

TEST_CASE("the file spells entries with every dim named, ranges compressed row-major") {
    const Plan p = small_plan();  // 16 slices of 16, S = 8, nb 4, 4 chunks a head
    const json j = json::parse(p.to_json());
    CHECK(j.at("format") == "monokda-plan");
    CHECK(j.at("version") == 1);
    CHECK(j.at("mailboxes").at("PART").at("dims") == json::parse(R"([["row", 8], ["src", 5], ["slice", 16]])"));
    const json& cta0 = j.at("ctas").at(0).at("instrs");
    CHECK(cta0.at(0).at("op") == "ATTN_PART");
    CHECK(cta0.at(0).at("produces") == json::parse(R"(["PART[row 0..7][src 0..4][slice 0]"])"));
    CHECK(cta0.at(1).at("op") == "ATTN_GATE");
    CHECK(cta0.at(1).at("waits") == json::parse(R"(["PART[row 0][src 0..4][slice 0..15]"])"));
    // ATTN_MIX polls WGT row by row: one group a row
    const int mix = find_instr(p, 0, Op::ATTN_MIX);
    CHECK(cta0[size_t(mix)].at("waits") == json::parse(R"([{"each": "row", "on": "WGT[row 0..7]"}])"));
    CHECK(p.entry_spec(p.part(3, 2, 7)) == "PART[row 3][src 2][slice 7]");
    CHECK(p.entry_spec(p.xrdy(5, 0)) == "XRDY[slice 5][part 0]");
}

TEST_CASE("a dropped wait reads, and the check names the CTA, the instruction and the entry") {
    const Plan p = small_plan();
    const int gemv = p.n_attn_ctas(), i = find_instr(p, gemv, Op::GEMV_GROUP);
    REQUIRE(i >= 0);
    json j = json::parse(p.to_json());
    json& w = j["ctas"][size_t(gemv)]["instrs"][size_t(i)]["waits"];
    REQUIRE(w == json::parse(R"([{"each": "slice", "on": "XRDY[slice 0..15][part 0]"}])"));
    w = json::parse(R"([{"each": "slice", "on": "XRDY[slice 0..3][part 0]"}, {"each": "slice", "on": "XRDY[slice 5..15][part 0]"}])");
    const Plan q = Plan::from_json(j.dump(), "p.json");
    const std::string probs = problems_text(q);
    CHECK(contains(probs, "CTA " + std::to_string(gemv) + " instruction " + std::to_string(i) + " GEMV_GROUP(group " +
                              std::to_string(p.instrs(gemv)[size_t(i)].a) + "): does not wait for XRDY[slice 4], which it reads"));
    CHECK(q.products_match());
    // the loaded plan runs the file's waits: 15 slices, not 16
    CHECK(q.waits(gemv, i).size() == 15);
    CHECK(q.needs(gemv, i).size() == 16);
}

TEST_CASE("a transposed mailbox index is named as a wait it does not need and one it lacks") {
    const Plan p = small_plan();
    const int cta = p.kda_cta(0, 1, 0), i = find_instr(p, cta, Op::KDA_REC);
    REQUIRE(i >= 0);
    json j = json::parse(p.to_json());
    json& w = j["ctas"][size_t(cta)]["instrs"][size_t(i)]["waits"];
    std::string text = w.dump();
    const size_t at = text.find("QK[r 0][h 1][chunk 1..3]");
    REQUIRE(at != std::string::npos);
    text.replace(at, 24, "QK[r 1][h 0][chunk 1..3]");  // r and h swapped
    w = json::parse(text);
    const Plan q = Plan::from_json(j.dump(), "p.json");
    const std::string probs = problems_text(q);
    const std::string where = "CTA " + std::to_string(cta) + " instruction " + std::to_string(i) + " KDA_REC(r 0, h 1, chunk 0): ";
    CHECK(contains(probs, where + "does not wait for QK[r 0][h 1][chunk 1], QK[r 0][h 1][chunk 2], QK[r 0][h 1][chunk 3], which it reads"));
    CHECK(contains(probs, where + "waits for QK[r 1][h 0][chunk 1], QK[r 1][h 0][chunk 2], QK[r 1][h 0][chunk 3], which it does not read"));
    // an index outside its dim is malformed, not merely wrong
    text.replace(at, 24, "QK[r 0][h 2][chunk 1..3]");
    w = json::parse(text);
    CHECK(contains(refusal(j.dump()), "p.json: ctas[" + std::to_string(cta) + "].instrs[" + std::to_string(i) +
                                          "].waits[0][0]: \"QK[r 0][h 2][chunk 1..3]\": h 2 is outside 0..1"));
}

TEST_CASE("a lost gemv group: its PROJ entry has no producer, and every wait for it is named") {
    const Plan p = small_plan();
    const int g = 7, cta = p.gemv_cta(g);
    json j = json::parse(p.to_json());
    json& l = j["ctas"][size_t(cta)]["instrs"];
    json kept = json::array();
    for (const json& in : l)
        if (!(in.contains("group") && in["group"] == g)) kept.push_back(in);
    REQUIRE(kept.size() + 2 == l.size());  // its GEMV_PREFETCH and GEMV_GROUP
    l = kept;
    const Plan q = Plan::from_json(j.dump(), "p.json");
    const std::string probs = problems_text(q);
    CHECK(contains(probs, "PROJ[group 7] has no producer"));
    CHECK(contains(probs, "waits for PROJ[group 7], which nothing produces"));
    CHECK(q.gemv_cta(g) == -1);
}

TEST_CASE("a CTA too many for the target's residency is named with its launch place") {
    const Plan p = small_plan();  // 24 CTAs, 24 co-resident
    json j = json::parse(p.to_json());
    REQUIRE(j["launch"]["co_resident"] == 24);
    j["ctas"].push_back(json::parse(R"({"cta": 24, "instrs": []})"));
    j["launch"]["order"].push_back(24);
    const Plan q = Plan::from_json(j.dump(), "p.json");
    CHECK(contains(problems_text(q), "launch: 25 CTAs, but the target holds 24 co-resident and the launch is cooperative "
                                     "(all or none): launch CTA 24 (CTA 24) and after it have no place"));
    // not cooperative: enough when the lists complete with 24 places in launch order
    j["launch"]["cooperative"] = false;
    CHECK(problems_text(Plan::from_json(j.dump(), "p.json")).empty());
    // and too few places for them: named with the number they need
    j["launch"]["co_resident"] = p.min_residency() - 1;
    CHECK(contains(problems_text(Plan::from_json(j.dump(), "p.json")),
                   "launch: the lists need " + std::to_string(p.min_residency()) + " co-resident CTAs"));
}

TEST_CASE("a product that is not what the instruction stores is named, and marks the file as misdescribing it") {
    const Plan p = small_plan();
    json j = json::parse(p.to_json());
    j["ctas"][3]["instrs"][0]["produces"] = json::parse(R"(["PART[row 0..7][src 0..4][slice 4]"])");
    const Plan q = Plan::from_json(j.dump(), "p.json");
    CHECK_FALSE(q.products_match());
    const std::string probs = problems_text(q);
    CHECK(contains(probs, "CTA 3 instruction 0 ATTN_PART(slice 3): lists as its product PART[row 0][src 0][slice 4]"));
    CHECK(contains(probs, "CTA 3 instruction 0 ATTN_PART(slice 3): stores PART[row 0][src 0][slice 3]"));
}

TEST_CASE("a split order other than the instructions' is named") {
    const Plan p = small_plan();
    json j = json::parse(p.to_json());
    j["reduction_order"]["in_proj"] = "split:8";
    CHECK(contains(problems_text(Plan::from_json(j.dump(), "p.json")),
                   "reduction_order.in_proj is split:8, but the instructions sum it as split:16 (16 slice partials"));
    j["reduction_order"]["in_proj"] = "split:16";
    j["reduction_order"]["f_b"] = "sequential";  // a sum inside one CTA: the kernel's choice
    CHECK(problems_text(Plan::from_json(j.dump(), "p.json")).empty());
}

TEST_CASE("a malformed plan file is refused, naming the place") {
    const Plan p = small_plan();
    const std::string good = p.to_json();
    auto edited = [&](const std::function<void(json&)>& f) {
        json j = json::parse(good);
        f(j);
        return j.dump();
    };
    CHECK(refusal(good).empty());
    CHECK(refusal("{\"format\": \"monokda-plan\", \"format\": \"x\"}") == "p.json: duplicate key 'format'");
    CHECK(refusal(edited([](json& j) { j["format"] = "other"; })) ==
          "p.json: format: must be \"monokda-plan\" (this is not a monokda plan file)");
    CHECK(refusal(edited([](json& j) { j["version"] = 2; })) == "p.json: version: is 2; this monokda reads version 1");
    CHECK(refusal(edited([](json& j) { j["ctas"][2]["instrs"][0]["op"] = "ATTN_PARTS"; })).rfind(
              "p.json: ctas[2].instrs[0].op: unknown opcode \"ATTN_PARTS\"", 0) == 0);
    CHECK(refusal(edited([](json& j) { j["ctas"][2]["instrs"][0].erase("slice"); })) ==
          "p.json: ctas[2].instrs[0]: ATTN_PART has no \"slice\"");
    CHECK(refusal(edited([](json& j) { j["ctas"][2]["instrs"][0]["row"] = 1; })) ==
          "p.json: ctas[2].instrs[0]: unknown key \"row\" (ATTN_PART has: op, slice, part, waits, produces)");
    CHECK(refusal(edited([](json& j) { j["ctas"][2]["instrs"][1]["waits"][0] = "PART[row 0][slice 0..15][src 0..4]"; })) ==
          "p.json: ctas[2].instrs[1].waits[0]: \"PART[row 0][slice 0..15][src 0..4]\": dim 2 of PART is src (it must read "
          "PART[row i][src i][slice i])");
    CHECK(refusal(edited([](json& j) { j["ctas"][2]["instrs"][1]["waits"][0] = "PART[row 0][src 4..0][slice 0]"; })) ==
          "p.json: ctas[2].instrs[1].waits[0]: \"PART[row 0][src 4..0][slice 0]\": src range 4..0 runs backwards");
    CHECK(refusal(edited([](json& j) { j["ctas"][5]["cta"] = 6; })) ==
          "p.json: ctas[5].cta: is 6, but this is CTA 5 (the list's place in \"ctas\")");
    CHECK(refusal(edited([](json& j) { j["launch"]["order"][3] = 2; })) ==
          "p.json: launch.order[3]: list 2 is launched twice (also at 2)");
    CHECK(refusal(edited([](json& j) { j["mailboxes"]["PART"]["dims"][2][1] = 8; })).rfind(
              "p.json: mailboxes.PART.dims: must be [row 8][src 5][slice 16] for this config and layout", 0) == 0);
    CHECK(refusal(edited([](json& j) { j["layout"]["slice_width"] = 24; })) == "p.json: layout.slice_width: must divide D = 256");
    CHECK(refusal(edited([](json& j) { j["reduction_order"]["mix"] = "split:x"; })).rfind("p.json: reduction_order.mix: ", 0) == 0);
    CHECK(refusal(edited([](json& j) { j["config"]["nb"] = 9; })) == "p.json: config: nb must be in 1..8 (got 9)");
    CHECK(refusal(std::string(64, '[')).rfind("p.json: nested deeper than 8 levels", 0) == 0);
    CHECK(refusal("{\"format\": \"monokda-plan\"").rfind("p.json: not valid JSON at byte", 0) == 0);
    CHECK_THROWS_AS(Plan::read_json("/nonexistent/plan.json"), BadInput);
}
