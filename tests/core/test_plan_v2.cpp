// Kernel v2's plan (core/plan_v2.hpp): the production plan deals its units and packs its runs as the
// in_proj probe does (bench/probes/v2_inproj_host.hpp, an independent definition of the same
// layout), the small plan's tables and waits as worked out by hand, the flat table's header and
// its refusals, and the parameters' validation.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "bench/probes/v2_inproj_host.hpp"
#include "core/error.hpp"
#include "core/plan_v2.hpp"
#include "core/rng.hpp"

using namespace monokda;

namespace {

Config step(const char* preset, int R, int L) {
    Config c = Config::preset(preset);
    c.R = R, c.L = L, c.slots = c.S() + 1;
    return c;
}

PlanV2 plan_for(const char* preset, int R = 2, int L = 4) {
    const Config c = step(preset, R, L);
    return PlanV2::build(c, PlanV2Params::for_config(c));
}

bool has_wait(const std::vector<V2Wait>& w, V2Bar kind, int cta, int index, int round) {
    for (const V2Wait& x : w)
        if (x.bar == V2BarRef{kind, cta, index} && x.round == round) return true;
    return false;
}

}  // namespace

TEST_CASE("the production plan's unit table is the probe's deal_units") {
    const PlanV2 p = plan_for("k3");
    const probe::v2::Units t = probe::v2::deal_units();
    REQUIRE(p.ctas() == probe::v2::kCtas);
    CHECK(p.cluster_first == t.first);
    REQUIRE(p.units.size() == t.mt.size());
    for (size_t u = 0; u < p.units.size(); ++u) {
        CAPTURE(u);
        CHECK(p.units[u].tiles == t.mt[u]);
        for (int k = 0; k < kV2UnitTiles; ++k) CHECK(p.units[u].row0[k] == (k < t.mt[u] ? t.row0[u * 4 + size_t(k)] : -1));
    }
    // every cluster has 26 or 27 tiles, in 7 units
    for (int c = 0; c < 15; ++c) {
        int tiles = 0;
        for (int u = p.cluster_first[size_t(c)]; u < p.cluster_first[size_t(c) + 1]; ++u) tiles += p.units[size_t(u)].tiles;
        CHECK((tiles == 26 || tiles == 27));
        CHECK(p.cluster_first[size_t(c) + 1] - p.cluster_first[size_t(c)] == 7);
    }
}

TEST_CASE("the production plan's packed weight and run offsets are the probe's pack") {
    const Config c = step("k3", 1, 1);
    const PlanV2 p = PlanV2::build(c, PlanV2Params::for_config(c));
    std::vector<uint16_t> w(size_t(c.N) * size_t(c.D));
    Rng rng(7);
    for (auto& v : w) v = uint16_t(rng.below(65536));
    std::vector<int> off;
    const std::vector<uint16_t> want = probe::v2::pack(w, probe::v2::deal_units(), off);
    CHECK(p.run_offset == off);
    const std::vector<uint16_t> got = p.pack_weight(w);
    REQUIRE(got.size() == want.size());
    CHECK(got == want);
    CHECK_THROWS_AS(p.pack_weight(std::vector<uint16_t>(10)), BadInput);
}

TEST_CASE("the small plan: units, chunks, owners and frees as worked out by hand") {
    const PlanV2 p = plan_for("small");  // N 288: 18 tiles, 4 blocks of 64 rows and 2 tail tiles over 2 clusters
    REQUIRE(p.ctas() == 16);
    REQUIRE(p.units.size() == 6);
    CHECK(p.cluster_first == std::vector<int32_t>{0, 3, 6});
    const int rows[6][4] = {{0, 16, 32, 48}, {128, 144, 160, 176}, {256, -1, -1, -1},
                            {64, 80, 96, 112}, {192, 208, 224, 240}, {272, -1, -1, -1}};
    for (int u = 0; u < 6; ++u)
        for (int k = 0; k < 4; ++k) CHECK(p.units[size_t(u)].row0[k] == rows[u][k]);
    // D 256 over 8 ranks: 2 k-steps a slice, one chunk a unit; ring of 2: chunk 2 refills slot 0
    const auto& ch = p.chunks[3];
    REQUIRE(ch.size() == 3);
    CHECK(ch[2].unit == 2);
    CHECK(ch[2].bytes == 2 * 1 * 512);
    CHECK(ch[2].offset == 2 * 2 * 4 * 512);
    CHECK(ch[2].slot == 0);
    CHECK(ch[2].round == 1);
    // S = 8: one n-tile, a partial 8 rows x 8 fp32 columns; an owner's barrier the 8 ranks'
    CHECK(p.partial_bytes() == 256);
    CHECK(p.recvs[0].bytes == 8 * 256);
    // unit 2 (one tile) has owners 0 and 1: rank 0 arrives 7 times on each free barrier, rank 1 once
    int seen = 0;
    for (size_t e = 0; e < p.recvs.size(); ++e)
        if (p.recvs[e].unit == 2) {
            ++seen;
            CHECK(p.recvs[e].row0 == 256 + 8 * p.recvs[e].owner);
            CHECK(p.recvs[e].slot == 0);
            CHECK(p.recvs[e].round == 1);
            CHECK(p.frees[e].count == (p.recvs[e].owner == 0 ? 7 : 1));
            CHECK(p.recvs[e].armed_by >= 0);
            CHECK(p.recvs[size_t(p.recvs[e].armed_by)].unit == 0);  // its slot's use before, re-armed when summed
        }
    CHECK(seen == 2);
    CHECK(p.problems().empty());
}

TEST_CASE("the small plan's waits: ring refills, the in-flight cap, receive slot reuse, the pair, the barriers") {
    const PlanV2 p = plan_for("small");
    const int k = 3, prod = PlanV2::proc(k, V2Role::producer);
    const auto& pp = p.programs[size_t(prod)];
    REQUIRE(pp.size() == 6);  // INIT, SYNC entry, COPY 0..2, SYNC exit
    CHECK(pp[0].opcode() == V2Op::INIT);
    CHECK(p.waits(prod, 0).empty());
    CHECK(has_wait(p.waits(prod, 1), V2Bar::cluster, -1, p.barrier_index(0, V2Point::entry), 0));
    CHECK(p.waits(prod, 2).empty());  // chunk 0: a free slot, nothing in flight
    const auto w2 = p.waits(prod, 4);  // chunk 2: the cap (chunk 0 landed) and slot 0 freed
    CHECK(w2.size() == 2);
    CHECK(has_wait(w2, V2Bar::full, k, 0, 0));
    CHECK(has_wait(w2, V2Bar::empty, k, 0, 0));
    // consumer 0 (tile 0, even): TAKE chunk 2 waits slot 0's second round; unit 2's partials wait for slot 0's free
    const int con = PlanV2::proc(k, V2Role::consumer, 0);
    const auto& cp = p.programs[size_t(con)];
    bool take2 = false, send2 = false, pair = false;
    for (int i = 0; i < int(cp.size()); ++i) {
        const V2Instr& in = cp[size_t(i)];
        if (in.opcode() == V2Op::TAKE && in.a == 2) take2 = has_wait(p.waits(con, i), V2Bar::full, k, 0, 1);
        if (in.opcode() == V2Op::SEND && p.partials[size_t(in.a)].unit == 2) send2 = has_wait(p.waits(con, i), V2Bar::free, k, 0, 0);
        if (in.opcode() == V2Op::PAIR && in.a == 1) pair = has_wait(p.waits(con, i), V2Bar::pair, k, 0, 2) && has_wait(p.waits(con, i), V2Bar::pair, k, 0, 3);
        if (in.opcode() == V2Op::SEND && p.partials[size_t(in.a)].unit == 0) CHECK(p.waits(con, i).empty());
    }
    CHECK(take2);
    CHECK(send2);
    CHECK(pair);
    // consumer 2 (tile 1) has no tile in unit 2: it takes and frees the chunk and sends nothing for it
    int sends = 0;
    for (const V2Instr& in : p.programs[size_t(PlanV2::proc(k, V2Role::consumer, 2))]) sends += in.opcode() == V2Op::SEND;
    CHECK(sends == 2 * 2);  // units 0 and 1, two owners each
    // the reducer of rank 0 owns rows in all three units; its REDUCE of unit 2 waits recv slot 0 round 1
    const int red = PlanV2::proc(p.cta(0, 0), V2Role::reducer);
    const auto& rp = p.programs[size_t(red)];
    REQUIRE(rp.size() == 2 + 2 * 3);
    CHECK(has_wait(p.waits(red, 5), V2Bar::recv, 0, 0, 1));
    CHECK(p.describe(rp[5]) == "REDUCE(unit 2, rows 256..263, slot 0)");
    // rank 2 owns rows in units 0 and 1 only
    CHECK(p.programs[size_t(PlanV2::proc(p.cta(0, 2), V2Role::reducer))].size() == 2 + 2 * 2);
}

TEST_CASE("the flat table: the header's counts, its length, and refusals of a malformed buffer") {
    const PlanV2 p = plan_for("small");
    std::vector<int32_t> w = p.serialize();
    const PlanV2Header h = read_v2_header(w);
    CHECK(h.ctas == 16);
    CHECK(h.n_units == 6);
    CHECK(h.n_chunks == 16 * 3);
    CHECK(h.n_recvs == int(p.recvs.size()));
    CHECK(h.n_partials == 8 * h.n_recvs);
    CHECK(h.partial_bytes == 256);
    CHECK(h.total_words == int(w.size()));
    const size_t hw = sizeof(PlanV2Header) / 4;
    CHECK(std::vector<int32_t>(w.begin() + long(hw), w.begin() + long(hw) + 3) == std::vector<int32_t>{0, 3, 6});  // cluster_first
    CHECK(w[hw + 3] == 0);  // unit 0: cluster 0, 4 tiles, rows 0, 16, 32, 48
    CHECK(w[hw + 4] == 4);
    CHECK(w[hw + 8] == 48);
    std::vector<int32_t> bad = w;
    bad[0] ^= 1;
    CHECK_THROWS_AS(read_v2_header(bad), BadInput);
    bad = w;
    bad.push_back(0);
    CHECK_THROWS_AS(read_v2_header(bad), BadInput);
    bad = w;
    bad[1] = 99;
    CHECK_THROWS_AS(read_v2_header(bad), BadInput);
    CHECK_THROWS_AS(read_v2_header(std::vector<int32_t>(3)), BadInput);
}

TEST_CASE("the JSON form holds every table and every role's program") {
    const PlanV2 p = plan_for("small");
    const auto j = nlohmann::json::parse(p.to_json());
    CHECK(j["format"] == "monokda-plan-v2");
    CHECK(j["clusters"]["size"] == 8);
    CHECK(j["units"].size() == 6);
    CHECK(j["ctas"].size() == 16);
    CHECK(j["ctas"][3]["roles"].size() == size_t(kV2ProcsPerCta));
    CHECK(j["ctas"][3]["roles"][0]["program"][4]["waits"].size() == 2);
    CHECK(j["cluster_buffers"].size() == p.recvs.size());
    CHECK(j["reduction_order"] == "cluster:8");
}

TEST_CASE("the parameters: the probes' setting by S, and bad values named") {
    CHECK(PlanV2Params::for_config(step("k3", 2, 4)).chunk_ksteps == 14);
    CHECK(PlanV2Params::for_config(step("k3", 8, 8)).chunk_ksteps == 8);
    CHECK(PlanV2Params::for_config(step("k3", 8, 8)).recv_slots == 2);
    for (const auto& shape : std::vector<std::pair<int, int>>{{1, 1}, {2, 8}, {8, 8}}) {
        const int R = shape.first, L = shape.second;
        CAPTURE(R);
        CAPTURE(L);
        const PlanV2 p = plan_for("k3", R, L);
        CHECK(p.problems().empty());
    }
    const Config c = step("k3", 2, 4);
    auto refused = [&](void (*edit)(PlanV2Params&), const char* field) {
        PlanV2Params p = PlanV2Params::for_config(c);
        edit(p);
        try {
            PlanV2::build(c, p);
            FAIL("built with a bad ", field);
        } catch (const BadInput& e) {
            CHECK(std::string(e.what()).find(field) != std::string::npos);
        }
    };
    refused([](PlanV2Params& p) { p.chunk_ksteps = 5; }, "chunk_ksteps");
    refused([](PlanV2Params& p) { p.chunk_ksteps = 7; }, "chunk_ksteps");
    refused([](PlanV2Params& p) { p.in_flight = 4; }, "in_flight");
    refused([](PlanV2Params& p) { p.ranks = 4; }, "ranks");
    refused([](PlanV2Params& p) { p.recv_slots = 0; }, "recv_slots");
    refused([](PlanV2Params& p) { p.ring_depth = 0; }, "ring_depth");
}
