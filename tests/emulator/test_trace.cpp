// The Perfetto / Chrome trace of a run (emulator/trace.hpp) checked against the run itself: the
// trace-event fields, a track a CTA and launch, a slice an instruction with its spins inside it, a
// flow from each store to each poll that accepted it; a failing run marks where every CTA stopped.
// And the SVG timeline's viewBox and time axis.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "emu_util.hpp"
#include "emulator/timeline.hpp"
#include "emulator/trace.hpp"

using namespace monokda;
using namespace monokda::emu;
using namespace monokda::emu::test;
using nlohmann::json;

namespace {

EmulateResult traced(Fault f, int steps) {
    EmulateOptions o = small_options();
    o.timeline = true;
    o.steps = steps;
    o.fault = f;
    return emulate(small_prepared(), o);
}

// Every event has the fields its phase needs (the trace-event format's JSON object form). The
// fields the tests read are required, not checked: a const json's [] of a missing key is undefined.
void check_fields(const json& ev) {
    REQUIRE(ev.is_array());
    auto has = [](const json& e, std::initializer_list<const char*> keys) {
        for (const char* k : keys) REQUIRE_MESSAGE(e.contains(k), "an event without \"" << k << "\": " << e.dump());
    };
    for (const json& e : ev) {
        REQUIRE(e.is_object());
        has(e, {"ph", "name", "pid"});
        const std::string ph = e["ph"];
        CHECK(e["pid"].is_number_integer());
        if (ph == "M") {
            has(e, {"args"});
            if (e["name"] == "thread_name") { has(e, {"tid"}); has(e["args"], {"name"}); }
            continue;
        }
        has(e, {"tid", "ts"});
        CHECK(e["tid"].is_number_integer());
        CHECK(e["ts"].is_number());
        if (ph == "X") {
            has(e, {"dur", "cat", "args"});
            has(e["args"], {"instr"});  // an instruction's slice, or a spin or stall inside one
            CHECK(e["dur"].get<int64_t>() >= 1);
        }
        if (ph == "s" || ph == "f") { has(e, {"id"}); CHECK(e["id"].is_number_integer()); }
        if (ph == "f") { has(e, {"bp"}); CHECK(e["bp"] == "e"); }
        if (ph == "i") { has(e, {"s"}); CHECK(e["s"] == "t"); }
        CHECK((ph == "X" || ph == "s" || ph == "f" || ph == "i"));
    }
}

}  // namespace

TEST_CASE("the trace of the default run: its fields, a track a CTA, a slice an instruction, flows as the history") {
    const EmulateResult r = traced(Fault::none, 2);
    REQUIRE(r.verdict == Verdict::PASS);
    const Plan& p = r.plan;
    const json doc = json::parse(trace_json(p, r.run, "t"));
    const json& ev = doc.at("traceEvents");
    check_fields(ev);
    CHECK(doc.at("otherData").at("verdict") == "PASS");
    // tracks: a thread a CTA in each launch's process, named as the reports name the CTA
    std::map<std::pair<int, int>, std::string> track;
    for (const json& e : ev)
        if (e["ph"] == "M" && e["name"] == "thread_name") track[{e["pid"], e["tid"]}] = e["args"]["name"];
    CHECK(track.size() == size_t(2 * p.blocks()));
    CHECK(track[{1, 0}] == "CTA 0 (attn)");
    CHECK(track[{2, p.n_attn_ctas()}] == "CTA " + std::to_string(p.n_attn_ctas()) + " (gemv)");
    // a slice an instruction per launch, in list order on its CTA's track; spins inside a slice
    std::map<std::pair<int, int>, std::vector<const json*>> runs;
    for (const json& e : ev)
        if (e["ph"] == "X" && e["cat"] != "spin" && e["cat"] != "stall") runs[{e["pid"], e["tid"]}].push_back(&e);
    for (int k = 1; k <= 2; ++k)
        for (int c = 0; c < p.blocks(); ++c) {
            const auto& l = runs[{k, c}];
            REQUIRE(l.size() == p.instrs(c).size());
            for (size_t i = 0; i < l.size(); ++i) {
                CHECK((*l[i])["name"] == p.describe(p.instrs(c)[i]));
                CHECK((*l[i])["args"]["instr"] == int(i));
                if (i) CHECK((*l[i])["ts"].get<int64_t>() >= (*l[i - 1])["ts"].get<int64_t>() + (*l[i - 1])["dur"].get<int64_t>());
            }
        }
    size_t spins = 0;
    for (const json& e : ev) {
        if (e["ph"] != "X" || e["cat"] != "spin") continue;
        ++spins;
        const auto& l = runs[{e["pid"], e["tid"]}];
        const size_t i = size_t(e["args"]["instr"].get<int>());
        REQUIRE(i < l.size());
        const json& in = *l[i];
        CHECK(e["ts"].get<int64_t>() >= in["ts"].get<int64_t>());
        CHECK(e["ts"].get<int64_t>() + e["dur"].get<int64_t>() <= in["ts"].get<int64_t>() + in["dur"].get<int64_t>());
        CHECK(e["name"].get<std::string>().rfind("spin on ", 0) == 0);
    }
    CHECK(spins > 10);
    // flows: one per poll that accepted an entry, from its producer's track, never backwards in time
    std::map<int64_t, const json*> starts;
    size_t flows = 0;
    for (const json& e : ev)
        if (e["ph"] == "s") starts[e["id"]] = &e;
    size_t acquires = 0;
    for (const Event& e : r.run.history) acquires += e.kind == EventKind::acquire;
    for (const json& e : ev) {
        if (e["ph"] != "f") continue;
        ++flows;
        const json& s = *starts.at(e["id"]);
        CHECK(s["name"] == e["name"]);
        CHECK(s["ts"].get<int64_t>() <= e["ts"].get<int64_t>());
        CHECK(s["pid"] == e["pid"]);
        // the entry named is stored by its plan producer's CTA
        bool producer = false;
        for (int m = 0; m < kMailboxCount && !producer; ++m)
            for (int x = 0; x < p.entries(Mailbox(m)) && !producer; ++x)
                if (p.entry_name({Mailbox(m), x}) == s["name"]) producer = p.producer({Mailbox(m), x}).cta == s["tid"];
        CHECK(producer);
        if (flows > 200) break;  // the name lookup is quadratic: a sample of them
    }
    size_t all_f = 0;
    for (const json& e : ev) all_f += e["ph"] == "f";
    CHECK(all_f == acquires);
    CHECK(starts.size() == acquires);
}

TEST_CASE("the trace of a failing run marks where each CTA stopped") {
    const EmulateResult r = traced(Fault::missing_xrdy, 1);
    REQUIRE(r.verdict == Verdict::LIVELOCK);
    const json doc = json::parse(trace_json(r.plan, r.run, "t"));
    const json& ev = doc.at("traceEvents");
    check_fields(ev);
    CHECK(doc.at("otherData").at("verdict") == "LIVELOCK");
    std::set<int> stopped;
    bool gemv_spins_on_xrdy1 = false, open_slice = false;
    for (const json& e : ev) {
        if (e["ph"] == "i") {
            stopped.insert(e["tid"].get<int>());
            CHECK(e["name"].get<std::string>().rfind("stopped: ", 0) == 0);
            gemv_spins_on_xrdy1 |= e["tid"] == r.plan.n_attn_ctas() &&
                                   contains(e["name"].get<std::string>(), "spinning on XRDY[slice 1]");
        }
        if (e["ph"] == "X" && e.contains("args") && e["args"].contains("stopped")) open_slice = true;
    }
    CHECK(stopped.size() == size_t(r.plan.blocks()));  // every CTA says where it stopped
    CHECK(gemv_spins_on_xrdy1);
    CHECK(open_slice);
}

TEST_CASE("the SVG timeline scales with the window and labels its time axis") {
    const EmulateResult r = traced(Fault::none, 1);
    const std::string svg = timeline_svg(r.plan, r.run, "t");
    CHECK(contains(svg, "viewBox=\"0 0 "));
    CHECK(contains(svg, "width=\"100%\""));
    size_t ticks = 0;
    for (size_t at = svg.find("class=\"tick\""); at != std::string::npos; at = svg.find("class=\"tick\"", at + 1)) ++ticks;
    CHECK(ticks >= 4);
    CHECK(ticks <= 12);
    CHECK(contains(svg, ">0</text>"));
    CHECK(contains(svg, "ticks (of " + std::to_string(r.run.spans.empty() ? 0 : [&] {
                                 int64_t t = 0;
                                 for (const Span& s : r.run.spans) t = std::max(t, s.t1);
                                 return t;
                             }()) + ")"));
}
