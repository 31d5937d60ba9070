// Kernel v2's plan file read back (core/plan_v2_read.cpp): a written plan reads back table for table
// (its flat table word for word, its file text the same) at the production shape's S = 1, 4, 16, 64
// and the small shape's, with and without the seam; the programs are the file's, not rebuilt; a
// malformed file is refused naming the value's path; an edited file's wrong table is named by the
// check it reaches, as a built plan's is.
#include <doctest/doctest.h>

#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/plan_v2.hpp"
#include "tests/bad_input_message.hpp"

using namespace monokda;
using monokda::test::bad_input_message;
using nlohmann::json;

namespace {

PlanV2 plan_for(const char* preset, int R, int L) {
    Config c = Config::preset(preset);
    c.R = R, c.L = L, c.slots = c.S() + 1;
    return PlanV2::build(c, PlanV2Params::for_config(c));
}

const PlanV2& small_plan() {
    static const PlanV2 p = plan_for("small", 2, 4);
    return p;
}

const json& small_json() {
    static const json j = json::parse(small_plan().to_json());
    return j;
}

// the small plan with the tail, as its file
const json& tail_json() {
    static const json j = [] {
        PlanV2Params pp = PlanV2Params::for_config(small_plan().config(), 1);
        return json::parse(PlanV2::build(small_plan().config(), pp).to_json());
    }();
    return j;
}

// the small plan's file with one edit, as a user's editor leaves it
template <class F>
std::string edited(F&& edit) {
    json j = small_json();
    edit(j);
    return j.dump(1);
}

void check_round_trip(const PlanV2& p) {
    const std::string text = p.to_json();
    const PlanV2 q = PlanV2::from_json(text);
    CHECK(q.serialize() == p.serialize());
    CHECK(q.to_json() == text);
    CHECK(q.misdescribed.empty());
    CHECK(q.problems().empty());
}

}  // namespace

TEST_CASE("a written plan reads back: its flat table word for word, its file the same text") {
    for (const auto& rl : std::vector<std::pair<int, int>>{{1, 1}, {1, 4}, {4, 4}, {16, 4}}) {
        const int R = rl.first, L = rl.second, S = R * L;  // not a structured binding: CAPTURE's lambda takes it (clang 14)
        CAPTURE(S);
        const PlanV2 p = plan_for("k3", R, L);
        CHECK(p.has_seam() == (R * L <= 4));  // both the seam's tables and their absence
        check_round_trip(p);
    }
    for (const auto& rl : std::vector<std::pair<int, int>>{{2, 4}, {1, 1}}) {
        const int R = rl.first, L = rl.second, S = R * L;
        CAPTURE(S);
        check_round_trip(plan_for("small", R, L));
    }
    PlanV2Params off = PlanV2Params::for_config(small_plan().config());
    off.seam = 0;
    check_round_trip(PlanV2::build(small_plan().config(), off));
    const PlanV2Params tail = PlanV2Params::for_config(small_plan().config(), 1);  // the tail's tasks too
    const PlanV2 t = PlanV2::build(small_plan().config(), tail);
    check_round_trip(t);
    CHECK(PlanV2::from_json(t.to_json()).tasks.size() == 8);
    CHECK(PlanV2::from_json(t.to_json()).params().tail == 1);
}

TEST_CASE("a tail step in a file without the tail is refused, naming it") {
    json j = small_json();
    auto& red = j["ctas"][0]["roles"][1]["program"];
    red.insert(red.begin() + 2, json{{"op", "PUBLISH"}, {"a", 0}});
    CHECK(bad_input_message([&] { PlanV2::from_json(j.dump()); }).find("ctas[0].roles[1].program[2].op: PUBLISH is a step of the tail, which this plan "
                                                                       "leaves out") != std::string::npos);
    json t = tail_json();
    t["ctas"][0]["roles"][10]["program"].back() = json{{"op", "NORM"}, {"a", 8}};  // the small plan has 8 tasks
    CHECK(bad_input_message([&] { PlanV2::from_json(t.dump()); }).find("ctas[0].roles[10].program") != std::string::npos);
}

TEST_CASE("a tail plan's file: a task's value out of range is refused, naming it") {
    Config c = small_plan().config();
    PlanV2Params pp = PlanV2Params::for_config(c, 1);
    json j = json::parse(PlanV2::build(c, pp).to_json());
    j["tail"]["tasks"][3]["rank"] = 99;
    CHECK(bad_input_message([&] { PlanV2::from_json(j.dump()); }).find("tail.tasks[3].rank: must be in 0..7 (got 99)") != std::string::npos);
    j["tail"]["tasks"][3].erase("rank");
    CHECK(bad_input_message([&] { PlanV2::from_json(j.dump()); }).find("tail.tasks[3]: has no \"rank\"") != std::string::npos);
    json k = tail_json();
    k["tail"]["tasks"][2]["share"]["qk_rows"] = {0, 99};
    CHECK(bad_input_message([&] { PlanV2::from_json(k.dump()); }).find("tail.tasks[2].share.qk_rows[1]: must be in 0..32 (got 99)") != std::string::npos);
}

TEST_CASE("the programs are the file's: an edited step order is read as written, not rebuilt from the parameters") {
    // CTA 3's consumer 0 (process 3 · 11 + 2): SYNC, XWAIT, TAKE 0, FREE 0, PAIR 0, ...; its FREE moved before its TAKE
    const PlanV2 q = PlanV2::from_json(edited([](json& j) { std::swap(j["ctas"][3]["roles"][2]["program"][2], j["ctas"][3]["roles"][2]["program"][3]); }));
    const auto& prog = q.programs[size_t(PlanV2::proc(3, V2Role::consumer, 0))];
    REQUIRE(prog.size() > 3);
    CHECK(prog[2].opcode() == V2Op::FREE);
    CHECK(prog[3].opcode() == V2Op::TAKE);
    CHECK(q.serialize() != small_plan().serialize());
    // the waits stay derived: the TAKE, now step 3, waits for its chunk as before
    CHECK(q.wait_texts(PlanV2::proc(3, V2Role::consumer, 0), 3) == std::vector<std::string>{"full[slot 0] of CTA 3 round 0"});
    bool named = false;
    for (const auto& x : q.problems()) named |= x.check == "ring_arrivals" && x.what.find("frees chunk 0 it has not taken") != std::string::npos;
    CHECK(named);
}

TEST_CASE("a malformed file is refused, naming the value and the problem") {
    const std::string text = small_plan().to_json();
    struct Case {
        const char* what;
        std::string file, names;
    };
    const std::vector<Case> cases = {
        {"truncated", text.substr(0, text.size() / 2), "plan v2 file: not valid JSON at byte"},
        {"not an object", "[1, 2]", "plan v2 file: must be an object"},
        {"kernel v1's file", edited([](json& j) { j["format"] = "monokda-plan"; }), "format: is \"monokda-plan\": kernel v1's plan file"},
        {"another format", edited([](json& j) { j["format"] = "x"; }), "format: must be \"monokda-plan-v2\""},
        {"an older version", edited([](json& j) { j["version"] = 4; }), "version: is 4; this monokda reads version 5 (an older file"},
        {"a missing key", edited([](json& j) { j.erase("cluster_first"); }), "has no \"cluster_first\""},
        {"an unknown key", edited([](json& j) { j["ctas"][0]["extra"] = 1; }), "ctas[0]: unknown key \"extra\""},
        {"a wrong type", edited([](json& j) { j["recv_slots"] = "2"; }), "recv_slots: must be an integer"},
        {"a fraction", edited([](json& j) { j["ctas"][3]["chunks"][1]["slot"] = 1.5; }), "ctas[3].chunks[1].slot: must be an integer"},
        {"a unit out of range", edited([](json& j) { j["ctas"][3]["chunks"][1]["unit"] = 99; }), "ctas[3].chunks[1].unit: must be in 0..5 (got 99)"},
        {"a slot past the ring", edited([](json& j) { j["ctas"][3]["chunks"][1]["slot"] = 2; }), "ctas[3].chunks[1].slot: must be in 0..1 (got 2)"},
        {"k-steps past the slice", edited([](json& j) { j["ctas"][3]["chunks"][1]["kstep0"] = 1; }), "ctas[3].chunks[1].ksteps: must be in 1..1 (got 2)"},
        {"a chunk past the packed weight", edited([](json& j) { j["ctas"][15]["chunks"][2]["offset"] = 9000; }),
         "ctas[15].chunks[2].offset: the chunk's 1024 bytes from byte 9000 of the CTA's run (at byte 138240) end past the packed weight's "
         "147456 bytes"},
        {"an odd packed weight", edited([](json& j) { j["packed_weight_bytes"] = 147457; }), "packed_weight_bytes: is 147457"},
        {"a step's operand out of range", edited([](json& j) { j["ctas"][3]["roles"][2]["program"][2]["a"] = 50; }),
         "ctas[3].roles[2].program[2].a: must be in 0..2 (got 50)"},
        {"an unknown op", edited([](json& j) { j["ctas"][3]["roles"][2]["program"][2]["op"] = "JUMP"; }),
         "ctas[3].roles[2].program[2].op: unknown op \"JUMP\" (known: INIT, COPY"},
        {"another role's step", edited([](json& j) { j["ctas"][3]["roles"][0]["program"][3]["op"] = "TAKE"; }),
         "ctas[3].roles[0].program[3].op: TAKE is not a step of the producer (CTA 3 (cluster 0 rank 3) producer)"},
        {"a role out of place", edited([](json& j) { std::swap(j["ctas"][3]["roles"][0], j["ctas"][3]["roles"][1]); }),
         "ctas[3].roles[0].role: is \"CTA 3 (cluster 0 rank 3) reducer\", but place 0 of a CTA's roles is \"CTA 3 (cluster 0 rank 3) producer\""},
        {"a role missing", edited([](json& j) { j["ctas"][2]["roles"].erase(10); }), "ctas[2].roles: must hold 11 entries (got 10)"},
        {"a CTA missing", edited([](json& j) { j["ctas"].erase(15); }), "ctas: must hold 16 entries (got 15)"},
        {"a CTA out of place", edited([](json& j) { j["ctas"][4]["cta"] = 5; }), "ctas[4].cta: is 5, but this is CTA 4"},
        {"a sender missing", edited([](json& j) { j["cluster_buffers"][0]["senders"].erase(7); }),
         "cluster_buffers[0].senders: must hold 8 entries (got 7)"},
        {"a sender's rank out of range", edited([](json& j) { j["cluster_buffers"][0]["senders"][2]["rank"] = 8; }),
         "cluster_buffers[0].senders[2].rank: must be in 0..7 (got 8)"},
        {"a receive slot out of range", edited([](json& j) { j["cluster_buffers"][2]["slot"] = 5; }), "cluster_buffers[2].slot: must be in 0..1 (got 5)"},
        {"an owner's rows not 8", edited([](json& j) { j["cluster_buffers"][0]["rows"][1] = 9; }),
         "cluster_buffers[0].rows: must be [first, first + 7]"},
        {"rows past in_proj", edited([](json& j) { j["cluster_buffers"][0]["rows"] = {284, 291}; }),
         "cluster_buffers[0].rows[0]: must be in 0..280 (got 284)"},
        {"a tile row past in_proj", edited([](json& j) { j["units"][0]["tile_rows"][0] = 280; }), "units[0].tile_rows[0]: must be in 0..272 (got 280)"},
        {"five tiles a unit", edited([](json& j) { j["units"][0]["tile_rows"].push_back(64); }), "units[0].tile_rows: must hold 1..4 entries (got 5)"},
        {"more units than twice the tiles", edited([](json& j) {
             for (int u = 0; u < 31; ++u) j["units"].push_back(json{{"cluster", 0}, {"tile_rows", {0}}});
         }),
         "units: must hold 1..36 entries (got 37)"},
        {"cluster_first's count", edited([](json& j) { j["cluster_first"].erase(2); }), "cluster_first: must hold 3 entries (got 2)"},
        {"barriers out of order", edited([](json& j) { std::swap(j["cluster_barriers"][0], j["cluster_barriers"][1]); }),
         "cluster_barriers[0]: must be cluster 0's entry barrier"},
        {"a barrier's scope", edited([](json& j) { j["cluster_barriers"][0]["scope"] = "grid"; }), "cluster_barriers[0].scope: is \"grid\""},
        {"a row without an owner entry", edited([](json& j) { j["seam"]["row_owner"].erase(0); }), "seam.row_owner: must hold 8 entries (got 7)"},
        {"a seam send outside the cluster", edited([](json& j) { j["seam"]["ctas"][0]["sends"][0]["to"] = 9; }),
         "seam.ctas[0].sends[0].to: is CTA 9, outside CTA 0's cluster (CTAs 0..7)"},
        {"a seam send into no hand-off", edited([](json& j) { j["seam"]["ctas"][0]["sends"][0]["barrier"] = "x"; }),
         "seam.ctas[0].sends[0].barrier: is \"x\""},
        {"the seam's tables without it", edited([](json& j) { j["seam"]["enabled"] = false; }), "seam: is not enabled (x an input), so it has no row_owner"},
        {"a ring slot of a gigabyte", edited([](json& j) { j["ctas"][0]["ring"]["slot_bytes"] = 1 << 30; }),
         "ctas[0].ring.slot_bytes: must be in 1..1048576 (got 1073741824)"},
        {"S not R × L", edited([](json& j) { j["config"]["S"] = 9; }), "config.S: is 9, but R × L is 8"},
        {"parameters the plan cannot have", edited([](json& j) { j["ring"]["chunk_ksteps"] = 3; }), "plan v2: chunk_ksteps = 3 must be even"},
        {"nested too deep", edited([](json& j) { j["ctas"][0]["roles"][0]["program"][0]["waits"] = json::array({json::array({1})}); }),
         "nested deeper than 8 levels at ctas[0].roles[0].program[0].waits[0]"},
        {"a wait not a text", edited([](json& j) { j["ctas"][0]["roles"][0]["program"][1]["waits"][0] = 3; }),
         "ctas[0].roles[0].program[1].waits[0]: must be a string"},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        const std::string m = bad_input_message([&] { PlanV2::from_json(c.file); });
        CAPTURE(m);
        CHECK(m.find(c.names) != std::string::npos);
    }
    // without the seam, a seam step has no seam to be a step of
    PlanV2Params off = PlanV2Params::for_config(small_plan().config());
    off.seam = 0;
    json j = json::parse(PlanV2::build(small_plan().config(), off).to_json());
    j["ctas"][0]["roles"][2]["program"].insert(j["ctas"][0]["roles"][2]["program"].begin() + 1, json{{"op", "XWAIT"}, {"a", 0}});
    CHECK(bad_input_message([&] { PlanV2::from_json(j.dump()); }).find("ctas[0].roles[2].program[1].op: XWAIT is a step of the seam, which this plan "
                                                                       "leaves out") != std::string::npos);
}

TEST_CASE("an edited file's wrong table is named by the check it reaches") {
    struct Edit {
        const char* check;
        const char* names;
        std::function<void(json&)> edit;
        bool tail = false;  // an edit of the tail plan's file
    };
    auto buffer = [](const json& j, int unit, int owner) {
        for (size_t e = 0; e < j["cluster_buffers"].size(); ++e)
            if (j["cluster_buffers"][e]["unit"] == unit && j["cluster_buffers"][e]["owner"] == owner) return e;
        FAIL("no buffer");
        return size_t(0);
    };
    const std::vector<Edit> edits = {
        // a tile's rows moved onto another's (its owners' rows with it)
        {"units_cover_rows", "in_proj rows 256..271 are in 0 units",
         [&](json& j) {
             j["units"][0]["tile_rows"][0] = 16;
             j["cluster_buffers"][buffer(j, 0, 0)]["rows"] = {16, 23};
             j["cluster_buffers"][buffer(j, 0, 1)]["rows"] = {24, 31};
         }},
        {"chunks_contiguous", "CTA 3 chunk 1 starts at byte 4608", [](json& j) { j["ctas"][3]["chunks"][1]["offset"] = 4608; }},
        {"chunks_match_units", "CTA 3 chunk 1 is unit 2 k-step 0, where unit 1 k-step 0 is next", [](json& j) { j["ctas"][3]["chunks"][1]["unit"] = 2; }},
        {"ring_depth", "CTA 0's in-flight cap 3", [](json& j) { j["ctas"][0]["ring"]["in_flight"] = 3; }},
        {"chunk_slots", "CTA 2 chunk 2 is in slot 1 round 1", [](json& j) { j["ctas"][2]["chunks"][2]["slot"] = 1; }},
        {"ring_arrivals", "its empty barrier counts 7", [](json& j) { j["ctas"][5]["ring"]["consumers"] = 7; }},
        // one partial's bytes: the owner's barrier then completes on what the others send
        {"recv_bytes", "partial 3 is 255 bytes, not 256", [](json& j) { j["cluster_buffers"][0]["senders"][3]["bytes"] = 255; }},
        {"recv_bytes", "completes on 1792 bytes; its senders send 2048", [](json& j) { j["cluster_buffers"][0]["bytes"] = 1792; }},
        {"recv_senders", "has partials from 7 of 8 ranks", [](json& j) { j["cluster_buffers"][0]["senders"][1]["rank"] = 0; }},
        {"owners_publish_rows", "publishes rows 264..; owner rank 0 of unit 0 owns 256..", [](json& j) { j["cluster_buffers"][0]["rows"] = {264, 271}; }},
        {"recv_slot_rounds", "is slot 0 round 2; unit 2 of its cluster takes slot 0 round 1", [&](json& j) { j["cluster_buffers"][buffer(j, 2, 0)]["round"] = 2; }},
        {"free_counts", "arrive 9 times on each free barrier", [](json& j) { j["cluster_buffers"][0]["free_arrivals"] = 2; }},
        {"cluster_barriers", "the entry barrier of cluster 0 has CTA scope", [](json& j) { j["cluster_barriers"][0]["scope"] = "cta"; }},
        {"seam_armed", "CTA 3's part barrier is armed for 312 bytes; its senders send 320", [](json& j) { j["seam"]["ctas"][3]["part_bytes"] = 312; }},
        {"seam_sends", "seam send 0 is CTA 0 -> CTA 0 part, 48 bytes",
         [](json& j) {
             j["seam"]["ctas"][0]["sends"][0]["bytes"] = 48;
             j["seam"]["ctas"][1]["sends"][0]["bytes"] = 32;
         }},
        {"seam_owners", "CTA 1's seam entry owns 1 rows; the owner table gives rank 1 0", [](json& j) { j["seam"]["row_owner"][1] = 2; }},
        // a program step dropped: consumer 5 of CTA 3 starts in_proj without waiting for x
        {"seam_programs", "CTA 3 (cluster 0 rank 3) consumer 5 (tile 2, odd k-steps) has 0 seam steps, not XWAIT in order",
         [](json& j) { j["ctas"][3]["roles"][7]["program"].erase(1); }},
        // a program step dropped: consumer 0 of CTA 3 frees chunk 0 without taking it
        {"ring_arrivals", "CTA 3 consumer 0 frees chunk 0 it has not taken", [](json& j) { j["ctas"][3]["roles"][2]["program"].erase(2); }},
        {"smem_fits", "CTA 4 needs", [](json& j) { j["ctas"][4]["ring"]["slot_bytes"] = 240 * 1024; }},
        // the tail plan's file: (request 0, head 0)'s tile 1 polls q and k rows 8 .. 23, which tile 0's share overlaps
        {"tail_tasks", "(request 0, head 0)'s tasks share q and k row 8 of the head 2 times", [](json& j) { j["tail"]["tasks"][1]["share"]["qk_rows"] = {8, 16}; }, true},
        // the tail plan's file: CTA 0's reducer without its first PUBLISH
        {"tail_programs", "is never published", [](json& j) { j["ctas"][0]["roles"][1]["program"].erase(3); }, true},
        // the tables as written, a description that is not theirs
        {"file_descriptions", "ctas[3].roles[2].program[2].waits is [\"full[slot 1] of CTA 3 round 0\"]; the tables give [\"full[slot 0] of CTA 3 round 0\"]",
         [](json& j) { j["ctas"][3]["roles"][2]["program"][2]["waits"][0] = "full[slot 1] of CTA 3 round 0"; }},
        {"file_descriptions", "ctas[3].roles[2].program[2].step is \"TAKE(chunk 1)\"; the tables give \"TAKE(chunk 0)\"",
         [](json& j) { j["ctas"][3]["roles"][2]["program"][2]["step"] = "TAKE(chunk 1)"; }},
        {"file_descriptions", "ctas[6].smem_bytes is 1; the tables give", [](json& j) { j["ctas"][6]["smem_bytes"] = 1; }},
    };
    std::set<std::string> reached;
    for (const Edit& e : edits) {
        INFO(e.check, ": ", e.names);
        json j = e.tail ? tail_json() : small_json();
        e.edit(j);
        const PlanV2 p = PlanV2::from_json(j.dump(1));
        std::set<std::string> fired;
        bool named = false;
        std::string all;
        for (const auto& x : p.problems()) {
            fired.insert(x.check);
            named |= x.check == e.check && x.what.find(e.names) != std::string::npos;
            all += "\n  " + x.check + ": " + x.what;
        }
        INFO("problems:", all);
        CHECK(named);
        // the check it is for, and where the edit changes what a step waits for or names, the file's stale text of it
        fired.erase("file_descriptions");
        CHECK((fired.empty() ? std::string("file_descriptions") : *fired.begin()) == e.check);
        CHECK(fired.size() <= 1);
        reached.insert(e.check);
    }
    CHECK(reached == std::set<std::string>(PlanV2::check_names().begin(), PlanV2::check_names().end()));
}
