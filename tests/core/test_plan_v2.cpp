// Kernel v2's plan (core/plan_v2.hpp): the production plan's units and runs, the packed weight's
// layout and its independence of the ring's setting and S, the small plan's tables and waits, all as
// worked out by hand, the JSON form, and the parameters' validation (the flat table:
// test_plan_v2_flat.cpp; the checks: test_plan_v2_checks.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

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

TEST_CASE("the production plan's units: the tiles in head order, 64-row blocks round-robin over the clusters, then the last tiles one by one") {
    const PlanV2 p = plan_for("k3");
    REQUIRE(p.ctas() == 120);
    REQUIRE(p.cluster_first.size() == 16);
    // head order, worked out by hand: f_a's 8 tiles (rows 6144..), beta and the pad (6272), then head
    // h's q (128h ..), k (1536 + 128h ..), v (3072 + 128h ..), 24 tiles a head, then g's 96 (4608 ..)
    auto in_order = [](int n) {
        if (n < 8) return 6144 + 16 * n;
        if (n == 8) return 6272;
        if (n < 297) {
            const int h = (n - 9) / 24, j = (n - 9) % 24;
            return 1536 * (j / 8) + 128 * h + 16 * (j % 8);
        }
        return 4608 + 16 * (n - 297);
    };
    const std::vector<int> order = v2_head_order_tiles(p.config());
    REQUIRE(order.size() == 393);
    for (int n = 0; n < 393; ++n) CHECK(order[size_t(n)] == in_order(n));
    CHECK(v2_row_head(p.config(), 6272) == -1);
    CHECK(v2_row_head(p.config(), 3072 + 128 * 5 + 7) == 5);  // v of head 5
    CHECK(v2_row_head(p.config(), 4608) == 12);                // g
    // 98 blocks of 64 rows: 90 in six whole rounds (order 0..359), then the last 33 tiles (g's from
    // row 5616) one by one, so clusters 0..2 get three of them (27 tiles, the last unit of 3), the
    // others two (26, the last of 2)
    for (int c = 0; c < 15; ++c) {
        CAPTURE(c);
        REQUIRE(p.cluster_first[size_t(c) + 1] - p.cluster_first[size_t(c)] == 7);
        for (int i = 0; i < 6; ++i) {
            const V2Unit& u = p.units[size_t(p.cluster_first[size_t(c)] + i)];
            CHECK(u.cluster == c);
            CHECK(u.tiles == 4);
            for (int k = 0; k < 4; ++k) CHECK(u.row0[k] == in_order(4 * (c + 15 * i) + k));
        }
        const V2Unit& last = p.units[size_t(p.cluster_first[size_t(c)] + 6)];
        CHECK(last.tiles == (c < 3 ? 3 : 2));
        CHECK(last.row0[0] == 5616 + 16 * c);
        CHECK(last.row0[1] == 5616 + 16 * (c + 15));
        CHECK(last.row0[2] == (c < 3 ? 5616 + 16 * (c + 30) : -1));
        CHECK(last.row0[3] == -1);
    }
    const V2Unit& f_a = p.units[0];  // cluster 0's first unit: f_a's first 64 rows
    CHECK(f_a.row0[0] == 6144);
    CHECK(f_a.row0[3] == 6192);
    const V2Unit& beta_q0 = p.units[size_t(p.cluster_first[2])];  // beta and the pad, then head 0's first q rows
    CHECK(beta_q0.row0[0] == 6272);
    CHECK(beta_q0.row0[1] == 0);
    CHECK(beta_q0.row0[3] == 32);
}

TEST_CASE("the production plan's runs: a CTA's its cluster's tiles x 56 k-steps x 512 bytes, back to back, the weight once") {
    const PlanV2 p = plan_for("k3", 1, 1);
    const int run27 = 27 * 56 * 512, run26 = 26 * 56 * 512;
    CHECK(p.run_offset[1] == run27);
    CHECK(p.run_offset[8] == 8 * run27);
    CHECK(p.run_offset[25] == 24 * run27 + run26);
    CHECK(p.run_offset.back() == 24 * run27 + 96 * run26);
    CHECK(p.run_offset.back() == 6288 * 7168 * 2);  // every weight element once
    // chunk j: 14 k-steps of all the unit's tiles, 4 chunks a unit
    CHECK(p.chunks[0].size() == 28);
    CHECK(p.chunks[0][5].offset == 5 * 14 * 4 * 512);
    CHECK(p.chunks[0][27].bytes == 14 * 3 * 512);
}

TEST_CASE("the packed weight: A fragments lane by lane, [k-step][tile], the same bytes whatever the ring, chunks or S") {
    Config c = Config::preset("small");
    c.D = 1024;  // 8 k-steps a rank: chunks of 2, 4 or 8
    c.R = 2, c.L = 4, c.slots = c.S() + 1;
    const PlanV2 p = PlanV2::build(c, PlanV2Params::for_config(c));
    // two weights naming each element's row and column
    std::vector<uint16_t> rows(size_t(c.N) * size_t(c.D)), cols(rows.size());
    for (int r = 0; r < c.N; ++r)
        for (int d = 0; d < c.D; ++d) rows[size_t(r) * size_t(c.D) + size_t(d)] = uint16_t(r), cols[size_t(r) * size_t(c.D) + size_t(d)] = uint16_t(d);
    const std::vector<uint16_t> pr = p.pack_weight(rows), pc = p.pack_weight(cols);
    REQUIRE(pr.size() == rows.size());
    auto at = [&](size_t i) { return std::make_pair(int(pr[i]), int(pc[i])); };
    // lane 4g + q holds rows g, g, g+8, g+8, g, g, g+8, g+8 of columns 2q, 2q+1, 2q, 2q+1, 2q+8, 2q+9, 2q+8, 2q+9
    const int lane0[8][2] = {{0, 0}, {0, 1}, {8, 0}, {8, 1}, {0, 8}, {0, 9}, {8, 8}, {8, 9}};
    const int lane5[8][2] = {{1, 2}, {1, 3}, {9, 2}, {9, 3}, {1, 10}, {1, 11}, {9, 10}, {9, 11}};
    const int r0 = 256;  // unit 0's first tile, in head order: f_a's rows 256..271, then beta's 272..
    for (int e = 0; e < 8; ++e) {
        CHECK(at(size_t(e)) == std::make_pair(r0 + lane0[e][0], lane0[e][1]));
        CHECK(at(size_t(5 * 8 + e)) == std::make_pair(r0 + lane5[e][0], lane5[e][1]));
    }
    CHECK(at(256) == std::make_pair(272, 0));      // tile 1 of k-step 0 (unit 0's rows 272..287)
    CHECK(at(4 * 256) == std::make_pair(r0, 16));  // k-step 1, tile 0
    CHECK(at(size_t(p.run_offset[1]) / 2) == std::make_pair(r0, 128));  // rank 1's slice starts at column 128
    std::vector<int> seen(rows.size(), 0);
    for (size_t i = 0; i < pr.size(); ++i) ++seen[size_t(pr[i]) * size_t(c.D) + pc[i]];
    CHECK(std::count(seen.begin(), seen.end(), 1) == long(seen.size()));
    // what the probe relies on when it packs once for every setting it runs
    std::vector<uint16_t> w(rows.size());
    Rng rng(11);
    for (auto& v : w) v = uint16_t(rng.below(65536));
    const std::vector<uint16_t> want = p.pack_weight(w);
    for (int kq : {4, 8})
        for (int depth : {2, 5})
            for (int slots : {1, 3})
                for (int L : {1, 8}) {
                    Config s = c;
                    s.R = 8 / L, s.L = L, s.slots = s.S() + 1;
                    PlanV2Params q = PlanV2Params::for_config(s);
                    q.chunk_ksteps = kq, q.ring_depth = depth, q.in_flight = 2, q.recv_slots = slots;
                    const PlanV2 other = PlanV2::build(s, q);
                    CAPTURE(kq);
                    CAPTURE(depth);
                    CAPTURE(slots);
                    CAPTURE(L);
                    CHECK(other.run_offset == p.run_offset);
                    CHECK(other.pack_weight(w) == want);
                }
    CHECK_THROWS_AS(p.pack_weight(std::vector<uint16_t>(10)), BadInput);
}

TEST_CASE("the small plan: units, chunks, owners and frees as worked out by hand") {
    // N 288 (q 0, k 64, v 128, g 192, f_a 256, beta 272 and the pad): 18 tiles in head order (f_a,
    // beta; head 0's q 0, 16, k 64, 80, v 128, 144; head 1's; g's 4), 4 blocks of 64 rows and the last
    // 2 tiles over 2 clusters
    const PlanV2 p = plan_for("small");
    REQUIRE(p.ctas() == 16);
    REQUIRE(p.units.size() == 6);
    CHECK(p.cluster_first == std::vector<int32_t>{0, 3, 6});
    const int rows[6][4] = {{256, 272, 0, 16}, {32, 48, 96, 112}, {224, -1, -1, -1},
                            {64, 80, 128, 144}, {160, 176, 192, 208}, {240, -1, -1, -1}};
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
            CHECK(p.recvs[e].row0 == 224 + 8 * p.recvs[e].owner);
            CHECK(p.recvs[e].slot == 0);
            CHECK(p.recvs[e].round == 1);
            CHECK(p.frees[e].count == (p.recvs[e].owner == 0 ? 7 : 1));
        }
    CHECK(seen == 2);
    CHECK(p.problems().empty());
}

TEST_CASE("the small plan's waits: ring refills, the in-flight cap, receive slot reuse, the pair, the barriers") {
    const PlanV2 p = plan_for("small");
    const int k = 3, prod = PlanV2::proc(k, V2Role::producer);
    const auto& pp = p.programs[size_t(prod)];
    REQUIRE(pp.size() == 7);  // INIT, SYNC entry, INPUT, COPY 0..2, SYNC exit
    CHECK(pp[0].opcode() == V2Op::INIT);
    CHECK(p.waits(prod, 0).empty());
    CHECK(has_wait(p.waits(prod, 1), V2Bar::cluster, -1, p.barrier_index(0, V2Point::entry), 0));
    CHECK(pp[2].opcode() == V2Op::INPUT);  // the seam's inputs, ahead of the stream
    CHECK(p.waits(prod, 2).empty());
    CHECK(p.waits(prod, 3).empty());  // chunk 0: a free slot, nothing in flight
    const auto w2 = p.waits(prod, 5);  // chunk 2: the cap (chunk 0 landed) and slot 0 freed
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
    CHECK(p.describe(rp[5]) == "REDUCE(unit 2, rows 224..231, slot 0)");
    // rank 2 owns rows in units 0 and 1 only
    CHECK(p.programs[size_t(PlanV2::proc(p.cta(0, 2), V2Role::reducer))].size() == 2 + 2 * 2);
}

TEST_CASE("the small plan's seam: owners, armed bytes, hand-offs and each stage's wait, as worked out by hand") {
    // S = 8 rows, nb = 4 (5 sources, 6 weights a row), a rank's 32 columns one seam slice of 32: 8 slices
    const PlanV2 p = plan_for("small");
    REQUIRE(p.has_seam());
    CHECK(p.seam_slices() == 8);
    CHECK(p.seam_owner == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
    const int k = 11;  // cluster 1 rank 3: owns row 3
    const V2SeamCta& e = p.seam_ctas[size_t(k)];
    CHECK(e.in_bytes == (3 + 8 * (2 + 4)) * 32 * 2);
    CHECK(e.part_bytes == 8 * 1 * 5 * 1 * 8);  // 8 senders x 1 row x 5 sources x 1 slice x (Σv², Σv·wq)
    CHECK(e.wgt_bytes == 8 * 6 * 4);           // every row's e_0 .. e_4, Σe
    CHECK(e.msq_bytes == 8 * 8 * 4);           // every row's 8 slices
    CHECK(e.rows_owned == 1);
    const int b = p.seam_send_begin[size_t(k)];
    REQUIRE(p.seam_send_begin[size_t(k) + 1] - b == 24);
    CHECK((p.seam_sends[size_t(b)].to == 8 && p.seam_sends[size_t(b)].bar == int32_t(V2SeamBar::part) && p.seam_sends[size_t(b)].bytes == 40));
    CHECK((p.seam_sends[size_t(b + 8)].to == 8 && p.seam_sends[size_t(b + 8)].bar == int32_t(V2SeamBar::wgt) && p.seam_sends[size_t(b + 8)].bytes == 24));
    CHECK((p.seam_sends[size_t(b + 23)].to == 15 && p.seam_sends[size_t(b + 23)].bar == int32_t(V2SeamBar::msq) && p.seam_sends[size_t(b + 23)].bytes == 32));
    const int q = PlanV2::proc(k, V2Role::seam);
    const auto& sp = p.programs[size_t(q)];
    REQUIRE(sp.size() == 7);  // SYNC entry, LOAD, PART, GATE, MIX, X, SYNC exit
    const V2Op ops[] = {V2Op::SYNC, V2Op::LOAD, V2Op::PART, V2Op::GATE, V2Op::MIX, V2Op::X, V2Op::SYNC};
    const V2SeamBar waited[] = {V2SeamBar::count, V2SeamBar::in, V2SeamBar::count, V2SeamBar::part, V2SeamBar::wgt, V2SeamBar::msq};
    for (int i = 0; i < 6; ++i) {
        CAPTURE(i);
        CHECK(sp[size_t(i)].opcode() == ops[i]);
        if (i == 0 || waited[i] == V2SeamBar::count) continue;
        CHECK(p.waits(q, i).size() == 1);
        CHECK(has_wait(p.waits(q, i), V2Bar::seam, k, int(waited[i]), 0));
    }
    CHECK(p.describe(sp[3]) == "GATE(CTA 11: rows 3)");
    CHECK(p.bar_name(p.waits(q, 3)[0].bar) == "the seam's part barrier of CTA 11");
    // each consumer waits for the CTA's x before its first take
    const int con = PlanV2::proc(k, V2Role::consumer, 5);
    CHECK(p.programs[size_t(con)][1].opcode() == V2Op::XWAIT);
    CHECK(has_wait(p.waits(con, 1), V2Bar::seam, k, int(V2SeamBar::x), 0));
    CHECK(p.programs[size_t(con)][2].opcode() == V2Op::TAKE);
    // at S = 2 only ranks 0 and 1 own a row: the others have no GATE and send part to two owners
    Config c = Config::preset("small");
    c.R = 1, c.L = 2, c.slots = c.S() + 1;
    const PlanV2 two = PlanV2::build(c, PlanV2Params::for_config(c));
    CHECK(two.problems().empty());
    CHECK(two.programs[size_t(PlanV2::proc(5, V2Role::seam))].size() == 6);
    CHECK(two.seam_send_begin[6] - two.seam_send_begin[5] == 2 + 8);
    CHECK(two.seam_ctas[1].part_bytes == 8 * 40);
    CHECK(two.seam_ctas[5].part_bytes == 0);
}

TEST_CASE("the JSON form holds every table and every role's program") {
    const PlanV2 p = plan_for("small");
    const auto j = nlohmann::json::parse(p.to_json());
    CHECK(j["format"] == "monokda-plan-v2");
    CHECK(j["clusters"]["size"] == 8);
    CHECK(j["units"].size() == 6);
    CHECK(j["ctas"].size() == 16);
    CHECK(j["ctas"][3]["roles"].size() == size_t(kV2ProcsPerCta));
    CHECK(j["ctas"][3]["roles"][0]["program"][5]["waits"].size() == 2);
    CHECK(j["seam"]["row_owner"].size() == 8);
    CHECK(j["seam"]["ctas"][3]["sends"].size() == 24);
    CHECK(j["seam"]["ctas"][3]["sends"][8]["barrier"] == "wgt");
    CHECK(j["cluster_buffers"].size() == p.recvs.size());
    // the small shape's 256 columns in 32-column seam slices: 8 partials a sum
    CHECK(j["reduction_order"] ==
          "attn_sumsq=split:8,attn_dot=split:8,softmax_den=sequential,mix=sequential,x_sumsq=split:8,in_proj=cluster:8,"
          "f_b=sequential,l2_q=sequential,l2_k=sequential,rec_kS=sequential,rec_oq=sequential,onorm_sumsq=sequential");
    PlanV2Params off = PlanV2Params::for_config(p.config());
    off.seam = 0;  // x an input: in_proj's order alone
    CHECK(nlohmann::json::parse(PlanV2::build(p.config(), off).to_json())["reduction_order"].get<std::string>().find("attn_sumsq=split") ==
          std::string::npos);
}

TEST_CASE("the seam's shared memory: the production shape's offsets, as worked out by hand") {
    // S 1, nb 4, a rank's 896 columns, 128-column slices, 8 ranks, from 0: source rows of 896 + 8
    // bf16 (1 808 bytes), mixed blocks of 128 + 4 f32 (528 bytes)
    const V2SeamLayout l = V2SeamLayout::make(0, 1, 4, 896, 128, 8);
    CHECK(l.row_h == 904);
    CHECK(l.mix_row == 132);
    CHECK(l.gains == 0);
    CHECK(l.prefix == 5376);   // 3 gains x 1 792
    CHECK(l.delta == 7184);    // + P's row
    CHECK(l.bank == 8992);     // + delta's
    CHECK(l.wq == 16224);      // + 4 bank rows
    CHECK(l.nw == 19808);      // + 896 f32
    CHECK(l.part == 23392);
    CHECK(l.wgt == 25632);     // + 1 owned row x 5 sources x 56 slices x 8
    CHECK(l.msq == 25664);     // + 6 f32, to 16
    CHECK(l.rr == 25888);      // + 56 f32
    CHECK(l.mixed == 25904);   // + 1 f32, to 16
    CHECK(l.bytes == 29600);   // + 7 blocks x 528
    CHECK(l.mixed_at(0, 130) == 134);  // slice 1's column 2
    CHECK(V2SeamLayout::make(100, 1, 4, 896, 128, 8).gains == 112);  // its start 16-byte aligned
    Config c = step("k3", 1, 1);
    c.nb = 4;
    CHECK(PlanV2::seam_smem_bytes(c, PlanV2Params::for_config(c)) == 29600 + 15);
}

TEST_CASE("the parameters: the seam where its shared memory fits beside in_proj's, else x an input") {
    CHECK(PlanV2Params::for_config(step("k3", 1, 1)).seam == 1);
    CHECK(PlanV2Params::for_config(step("k3", 2, 2)).seam == 1);   // S = 4
    CHECK(PlanV2Params::for_config(step("k3", 2, 8)).seam == 0);   // S = 16: 172 KB of inputs alone
    CHECK(PlanV2Params::for_config(step("k3", 8, 8)).seam == 0);
    CHECK(PlanV2Params::for_config(step("small", 2, 4)).seam == 1);
    Config c = step("k3", 2, 8);
    PlanV2Params pp = PlanV2Params::for_config(c);
    const PlanV2 off = PlanV2::build(c, pp);
    CHECK(off.problems().empty());
    CHECK(off.seam_sends.empty());
    CHECK(off.programs[size_t(PlanV2::proc(3, V2Role::seam))].size() == 2);  // the spare warps pass the cluster barriers
    pp.seam = 1;  // asked for anyway: it does not fit
    bool over = false;
    for (const auto& pr : PlanV2::build(c, pp).problems()) over |= pr.check == "smem_fits";
    CHECK(over);
    pp.seam_slice_cols = 100;
    CHECK_THROWS_WITH_AS(pp.validate(c), doctest::Contains("seam_slice_cols = 100 must divide a rank's 896 columns"), BadInput);
}

TEST_CASE("the tail's shared memory: the production shape's offsets as worked out by hand, and where one launch does not fit") {
    // 1 pair, L = 1: barriers 3 × 8 -> 32; q, k, f_a 256 each; beta 4 -> 816; v, o 32 each; Σō² 8 tiles
    // × 4; decays 128 × 4; 16 wait rows × 4; staged words 16 × 8 × 2 = 256; q̂, k̂ 512 each; the task's 16
    // rows of f_b_w 16 × (128 × 2 + 16); their dt_bias 64; one PUBLISH at R = 1, W = 4: its 8 rows 16, the
    // windows 8 × 3 × 2 = 48 -> 7248, the weights 8 × 4 × 4 = 128, the request's slot and token and the
    // PUBLISH's first row 3 × 4 -> 7392
    const V2TailLayout l = V2TailLayout::make(0, {1, 1, 1, 1, 128, 128, 4, 8});
    CHECK(std::vector<int>{l.bars, l.q, l.k, l.fa, l.beta, l.v, l.o, l.onrm, l.decay, l.wrow, l.stage, l.qn, l.kn, l.fb, l.dtb, l.rows,
                           l.cwin, l.cw, l.slot, l.bytes} ==
          std::vector<int>{0, 32, 288, 544, 800, 816, 848, 880, 912, 1424, 1488, 1744, 2256, 2768, 7120, 7184, 7200, 7248, 7376, 7392});
    CHECK(V2TailLayout::make(100, {1, 1, 1, 1, 128, 128, 4, 8}).q == 144);  // from an unaligned base: aligned first
    // 3 pairs, 5 PUBLISHes, R = 2, L = 2: the shares 3 × 2 × 128 × 2 = 1536 bytes each, the decays 3 × 2
    // × 128 × 4; the rows 4 × 8 × 2; the windows 5 × 8 × 2 × 3 × 2, the weights 5 × 8 × 4 × 4, 2 slots
    // and tokens and 5 first rows (9 × 4 -> 48)
    const V2TailLayout m = V2TailLayout::make(0, {3, 5, 2, 2, 128, 128, 4, 8});
    CHECK(m.k - m.q == 1536);
    CHECK(m.wrow - m.decay == 3072);
    CHECK(m.rows - m.dtb == 16 * 4);
    CHECK(std::vector<int>{m.cwin - m.rows, m.cw - m.cwin, m.slot - m.cw, m.bytes - m.slot} == std::vector<int>{64, 480, 640, 48});
    // The plan counts it after in_proj's and the seam's, from the next 16-byte boundary: 1 × 1 with the seam
    const Config one = step("k3", 1, 1);
    const PlanV2 bare = PlanV2::build(one, PlanV2Params::for_config(one)), tail = PlanV2::build(one, PlanV2Params::for_config(one, 1));
    REQUIRE(tail.has_seam());
    CHECK(tail.tail_pairs(0) == 1);
    CHECK(tail.tail_pairs(12 * 8) == 0);  // clusters 12-14 have no head at R = 1
    // 105 units, 7 a cluster: every rank owns 8 rows of each, so 7 PUBLISHes a CTA; the 1-pair layout
    // above from the rows on, with 7: windows 7 × 48 -> 7536, weights 7 × 128, slot, token and 7 first
    // rows 9 × 4 -> 8480. Every CTA is laid out alike, tasks or not: a CTA without one still publishes.
    CHECK(tail.tail_publishes(0) == 7);
    CHECK(tail.tail_publishes(-1) == 7);
    CHECK(tail.smem_bytes(0) == (bare.smem_bytes(0) + 15) / 16 * 16 + 8480);
    CHECK(tail.smem_bytes(12 * 8) == (bare.smem_bytes(12 * 8) + 15) / 16 * 16 + 8480);
    CHECK(tail.problems().empty());
    // the seam stays on with the tail wherever it is on without (S <= 4), at nb 4 and at nb 8 (8 bank rows
    // a row in the seam's inputs: 1 × 4 fits with 464 bytes to spare)
    CHECK(PlanV2Params::for_config(step("k3", 1, 4), 1).seam == 1);
    CHECK(PlanV2Params::for_config(step("k3", 4, 1), 1).seam == 1);
    CHECK(PlanV2Params::for_config(step("k3", 1, 4), 1).tail == 1);
    Config wide = step("k3", 1, 4);
    wide.nb = 8;
    CHECK(PlanV2Params::for_config(wide).seam == 1);
    CHECK(PlanV2Params::for_config(wide, 1).seam == 1);
    const PlanV2 w = PlanV2::build(wide, PlanV2Params::for_config(wide, 1));
    CHECK(w.smem_bytes(0) == kV2SmemBytes - 464);
    CHECK(w.problems().empty());
    // 8 × 8: R·H = 96 pairs over 15 clusters, 7 on cluster 0; in_proj's and the tail's memory alone do not fit
    const Config big = step("k3", 8, 8);
    const PlanV2 p = PlanV2::build(big, PlanV2Params::for_config(big, 1));
    CHECK_FALSE(p.has_seam());
    CHECK(p.tail_pairs(0) == 7);
    // in_proj at S = 64: ring 3 × 16384, x 64 × 904 × 2, receive 2 × 8 × 8 × 64 × 4, pair buffer 4 × 32 × 8 × 16
    // = 214016; the tail: barriers 168 -> 176, shares 3 × 14336, beta 224, v, o, Σō² 1792 each, decays
    // 28672, wait rows 64, staged words 2048, q̂ and k̂ 2 × 4096, f_b_w 16 × 272, dt_bias 64 = 92176;
    // PUBLISH's rows 64 × 16, 7 PUBLISHes' windows 7 × 8 × 8 × 3 × 2 and weights 896, 8 slots, 8 tokens,
    // 7 first rows 23 × 4 -> 96 = 96880
    CHECK(p.smem_bytes(0) == 214016 + 96880);
    CHECK(p.smem_bytes(0) > kV2SmemBytes);
    std::vector<std::string> fits;
    for (const auto& pr : p.problems()) fits.push_back(pr.check);
    CHECK(std::count(fits.begin(), fits.end(), "smem_fits") == int(fits.size()));  // that check alone fires
    CHECK_FALSE(fits.empty());
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

TEST_CASE("the tail's tasks: a (request, head)'s tiles on the ranks of one cluster, the pairs round-robin, as worked out by hand") {
    auto tail_plan = [](const char* preset, int R, int L) {
        const Config c = step(preset, R, L);
        CHECK(PlanV2Params::for_config(c).tail == 0);  // off by default: emulate --kernel v2 --tail and plan --tail turn it on
        return PlanV2::build(c, PlanV2Params::for_config(c, 1));
    };
    auto is = [](const V2Task& t, std::array<int, 6> want) {
        return std::array<int, 6>{t.request, t.head, t.tile, t.cluster, t.rank, t.onrm} == want;
    };
    auto share_is = [](const V2Task& t, std::array<int, 4> want) { return std::array<int, 4>{t.qk0, t.qkn, t.fa0, t.fan} == want; };
    CHECK(plan_for("k3", 1, 4).tasks.empty());
    // R = 1: head h on cluster h, tile t (state rows 16t ..) on rank t; clusters 12-14 have none
    const PlanV2 one = tail_plan("k3", 1, 4);
    REQUIRE(one.tasks.size() == 12 * 8);
    CHECK(is(one.tasks[0], {0, 0, 0, 0, 0, 0}));
    CHECK(is(one.tasks[5 * 8 + 3], {0, 5, 3, 5, 3, 0}));
    CHECK(is(one.tasks[11 * 8 + 7], {0, 11, 7, 11, 7, 0}));
    // tile t polls q and k rows 16t .. 16t + 15 of the head (K 128 over 8 tiles) and f_a rows 16t .. (F 128)
    CHECK(share_is(one.tasks[5 * 8 + 3], {48, 16, 48, 16}));
    CHECK(one.problems().empty());
    // R = 2: pair q = 12r + h on cluster q mod 15, barrier q / 15: (1, 2) is q 14 on cluster 14, (1, 3) q 15 back on cluster 0
    const PlanV2 two = tail_plan("k3", 2, 1);
    REQUIRE(two.tasks.size() == 24 * 8);
    CHECK(is(two.tasks[14 * 8 + 6], {1, 2, 6, 14, 6, 0}));
    CHECK(is(two.tasks[15 * 8 + 2], {1, 3, 2, 0, 2, 1}));
    CHECK(two.problems().empty());
    // the small shape: V 32, two tiles a pair; two clusters
    const PlanV2 small = tail_plan("small", 2, 4);
    REQUIRE(small.tasks.size() == 8);
    const std::array<std::array<int, 6>, 8> want = {{{0, 0, 0, 0, 0, 0}, {0, 0, 1, 0, 1, 0}, {0, 1, 0, 1, 0, 0}, {0, 1, 1, 1, 1, 0},
                                                     {1, 0, 0, 0, 0, 1}, {1, 0, 1, 0, 1, 1}, {1, 1, 0, 1, 0, 1}, {1, 1, 1, 1, 1, 1}}};
    for (size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(is(small.tasks[i], want[i]));
        CHECK(share_is(small.tasks[i], i % 2 ? std::array<int, 4>{16, 16, 8, 8} : std::array<int, 4>{0, 16, 0, 8}));  // K 32, F 16
    }
    CHECK(small.problems().empty());
}

TEST_CASE("the tail's steps and waits: PUBLISH after each REDUCE and RELEASE, a task's POLL, DECAY, REC and NORM after the seam, as worked out by hand") {
    Config c = step("k3", 1, 4);
    const PlanV2 p = PlanV2::build(c, PlanV2Params::for_config(c, 1));
    REQUIRE(p.has_seam());
    // every reducer: each REDUCE followed by its RELEASE, then the PUBLISH of its entry
    int published = 0;
    for (int k = 0; k < p.ctas(); ++k) {
        const auto& prog = p.programs[size_t(PlanV2::proc(k, V2Role::reducer))];
        for (size_t i = 0; i < prog.size(); ++i)
            if (prog[i].opcode() == V2Op::REDUCE) {
                REQUIRE(i + 2 < prog.size());
                CHECK(prog[i + 1].opcode() == V2Op::RELEASE);
                CHECK(prog[i + 2].opcode() == V2Op::PUBLISH);
                CHECK(prog[i + 2].a == prog[i].a);
                ++published;
            }
    }
    CHECK(published == int(p.recvs.size()));
    // task 26 = (request 0, head 3, tile 2) on cluster 3 rank 2 (CTA 26): its steps after the seam's X
    const int k = p.cta(3, 2), sp = PlanV2::proc(k, V2Role::seam);
    const auto& prog = p.programs[size_t(sp)];
    std::vector<std::pair<V2Op, int>> ops;
    for (const V2Instr& in : prog) ops.push_back({in.opcode(), in.a});
    const std::vector<std::pair<V2Op, int>> want = {{V2Op::SYNC, p.barrier_index(3, V2Point::entry)},
                                                   {V2Op::LOAD, k}, {V2Op::PART, k}, {V2Op::GATE, k}, {V2Op::MIX, k}, {V2Op::X, k},
                                                   {V2Op::POLL, 26}, {V2Op::DECAY, 26}, {V2Op::REC, 26}, {V2Op::NORM, 26},
                                                   {V2Op::SYNC, p.barrier_index(3, V2Point::exit)}};
    CHECK(ops == want);
    // POLL waits for the words of the 8-row groups of: q rows 3·128 + 32 .., k rows 1536 + 416 .., v rows
    // 3072 + 416 .., f_a rows 6144 + 32 .., and beta's row 6144 + 128 + 3 (in 6272 .. 6279); request 0
    auto rows_of = [&](const std::vector<V2Wait>& w, V2Bar kind) {
        std::set<int> r;
        for (const V2Wait& x : w)
            if (x.bar.kind == kind) r.insert(kind == V2Bar::words ? p.recvs[size_t(x.bar.index)].row0 : x.bar.index);
        return r;
    };
    const std::vector<V2Wait> poll = p.waits(sp, 6), decay = p.waits(sp, 7), rec = p.waits(sp, 8), norm = p.waits(sp, 9);
    CHECK(rows_of(poll, V2Bar::words) == std::set<int>{416, 424, 1952, 1960, 3488, 3496, 6176, 6184, 6272});
    CHECK(poll.size() == 9);
    for (const V2Wait& x : poll) CHECK(x.round == 0);
    REQUIRE(decay.size() == 1);
    CHECK(decay[0].bar == V2BarRef{V2Bar::share, k, 0});
    REQUIRE(rec.size() == 1);
    CHECK(rec[0].bar == V2BarRef{V2Bar::decay, k, 0});
    CHECK(p.wait_texts(sp, 8)[0] == "decay[pair 0] of CTA 26 round 0");
    // NORM: g's rows 4608 + 416 .. 431, then the pair's Σō²
    REQUIRE(norm.size() == 3);
    CHECK(rows_of(norm, V2Bar::words) == std::set<int>{5024, 5032});
    CHECK(norm[2].bar == V2BarRef{V2Bar::onrm, k, 0});
    CHECK(p.wait_texts(sp, 9)[2] == "onrm[pair 0] of CTA 26 round 0");
    CHECK(p.describe(prog[6]) == "POLL(task 26: request 0, head 3, rows 32..47)");
    // R = 2, L = 1: cluster 0 has pairs q 0 and 15, each rank takes them in that order, on its barriers 0 and 1,
    // both NORMs after the last REC (a NORM waits for g, which streams last)
    c = step("k3", 2, 1);
    const PlanV2 two = PlanV2::build(c, PlanV2Params::for_config(c, 1));
    std::vector<std::pair<V2Op, int>> tail_ops;
    for (const V2Instr& in : two.programs[size_t(PlanV2::proc(two.cta(0, 5), V2Role::seam))])
        if (in.opcode() >= V2Op::POLL) tail_ops.push_back({in.opcode(), in.a});
    CHECK(tail_ops == std::vector<std::pair<V2Op, int>>{{V2Op::POLL, 5}, {V2Op::DECAY, 5}, {V2Op::REC, 5}, {V2Op::POLL, 125},
                                                       {V2Op::DECAY, 125}, {V2Op::REC, 125}, {V2Op::NORM, 5}, {V2Op::NORM, 125}});
    CHECK(two.waits(PlanV2::proc(two.cta(0, 5), V2Role::seam), int(two.programs[size_t(PlanV2::proc(two.cta(0, 5), V2Role::seam))].size()) - 2)
              .back()
              .bar == V2BarRef{V2Bar::onrm, two.cta(0, 5), 1});
    // the tail's sums: trees within a task, Σō² the tiles' partials in tile order
    const ReductionOrder o = p.reduction_order();
    CHECK(o.at(Site::onorm_sumsq).str() == "split:8");
    CHECK(o.at(Site::rec_kS).str() == "pairwise");
    CHECK(o.at(Site::f_b).str() == "pairwise");
    CHECK(plan_for("k3", 1, 4).reduction_order().at(Site::rec_kS).str() == "sequential");  // not v2's without the tail
}
