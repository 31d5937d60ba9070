// Kernel v2's flat table (core/plan_v2_flat.cpp, docs/plan.md "The flat table"): the header's counts
// and a few words at positions worked out by hand, every entry the device reads decoding back, through
// PlanV2View at v2_layout's offsets, to the plan's own tables, and each planted corruption of a buffer
// refused by read_v2_header with what is wrong named.
#include <doctest/doctest.h>

#include <functional>

#include "core/error.hpp"
#include "core/plan_v2.hpp"

using namespace monokda;

namespace {

PlanV2 plan_for(const char* preset, int R, int L, int tail = 0) {
    Config c = Config::preset(preset);
    c.R = R, c.L = L, c.slots = c.S() + 1;
    const PlanV2Params pp = PlanV2Params::for_config(c, tail);
    return PlanV2::build(c, pp);
}

// read_v2_header refuses w, with `names` in its message
void refused(const std::vector<int32_t>& w, const char* names) {
    try {
        read_v2_header(w);
        FAIL("read_v2_header accepted a buffer that ", names);
    } catch (const BadInput& e) {
        CHECK_MESSAGE(std::string(e.what()).find(names) != std::string::npos, e.what());
    }
}

}  // namespace

TEST_CASE("the flat table: the header's counts, words where worked out by hand, refusals of a malformed buffer") {
    const PlanV2 p = plan_for("small", 2, 4);
    std::vector<int32_t> w = p.serialize();
    const PlanV2Header h = read_v2_header(w);
    CHECK(h.version == 6);
    CHECK(h.n_tasks == 0);  // no tail
    CHECK(h.pair_size == 0);
    CHECK(h.seam == 1);  // the small shape's seam: a slice of 32 columns a rank
    CHECK(h.nb == 4);
    CHECK(h.seam_slice_cols == 32);
    CHECK(h.n_seam_sends == 16 * (8 + 8 + 8));  // S = 8: every rank owns one row, so sends part, wgt and msq to every rank
    CHECK(h.ctas == 16);
    CHECK(h.n_units == 6);
    CHECK(h.n_chunks == 16 * 3);
    CHECK(h.n_recvs == int(p.recvs.size()));
    CHECK(h.n_partials == 8 * h.n_recvs);
    CHECK(h.partial_bytes == 256);
    CHECK(h.total_words == int(w.size()));
    const size_t hw = sizeof(PlanV2Header) / 4;
    CHECK(hw == 28);
    CHECK(std::vector<int32_t>(w.begin() + long(hw), w.begin() + long(hw) + 3) == std::vector<int32_t>{0, 3, 6});  // cluster_first
    CHECK(w[hw + 3] == 0);  // unit 0: cluster 0, 4 tiles, rows 256, 272, 0, 16 (head order: f_a, beta, head 0's q)
    CHECK(w[hw + 4] == 4);
    CHECK(w[hw + 5] == 256);
    CHECK(w[hw + 8] == 16);
    // unit 2, the short one: 1 tile, row 224 (g's third), then -1 past it
    CHECK(std::vector<int32_t>(w.begin() + long(hw + 3 + 2 * 6), w.begin() + long(hw + 3 + 3 * 6)) ==
          std::vector<int32_t>{0, 1, 224, -1, -1, -1});
    // the run offsets follow the 6 units: CTA 1's run starts after cluster 0's 9 tiles × 2 k-steps × 512 bytes
    const PlanV2Layout L = v2_layout(h);
    CHECK(L.cluster_first == 28);
    CHECK(L.units == 31);
    CHECK(L.run_offset == 31 + 36);
    CHECK(w[size_t(L.run_offset) + 1] == 9 * 2 * 512);
    CHECK(w[size_t(L.run_offset) + 16] == 8 * (9 + 9) * 2 * 512);
    std::vector<int32_t> bad = w;
    bad[0] ^= 1;
    refused(bad, "bad magic");
    bad = w;
    bad.push_back(0);
    refused(bad, "do not match its length");
    bad = w;
    bad[1] = 1;
    refused(bad, "version 1 (expected 6)");
    // the seam's tables follow the barriers: row 1's owner rank 1; CTA 9 (cluster 1 rank 1) owns one row,
    // armed for its 8 senders' part sends of one row x 5 sources x 1 slice x 8 bytes; its first send is to CTA 8's part
    CHECK(L.seam_owner == L.barriers + 4 * 3);
    CHECK(w[size_t(L.seam_owner) + 1] == 1);
    CHECK(std::vector<int32_t>(w.begin() + L.seam_ctas + 9 * 5, w.begin() + L.seam_ctas + 10 * 5) ==
          std::vector<int32_t>{(3 + 8 * 6) * 32 * 2, 8 * 40, 8 * 6 * 4, 8 * 8 * 4, 1});
    CHECK(w[size_t(L.seam_send_begin) + 9] == 9 * 24);
    CHECK(std::vector<int32_t>(w.begin() + L.seam_sends + 9 * 24 * 4, w.begin() + L.seam_sends + 9 * 24 * 4 + 4) ==
          std::vector<int32_t>{9, 8, int32_t(V2SeamBar::part), 40});
    refused(std::vector<int32_t>(3), "shorter than its header");
}

TEST_CASE("the tail in the flat table: the tasks and their pairs after the seam's sends, each as worked out by hand, its steps' waits with them") {
    Config c = Config::preset("small");
    c.R = 2, c.L = 4, c.slots = c.S() + 1;
    PlanV2Params pp = PlanV2Params::for_config(c, 1);
    const PlanV2 p = PlanV2::build(c, pp);
    std::vector<int32_t> w = p.serialize();
    const PlanV2Header h = read_v2_header(w);
    CHECK(h.n_tasks == 8);
    CHECK(h.pair_size == 2);  // V = 32: two tiles of 16 state rows a (request, head)
    const PlanV2Layout L = v2_layout(h);
    CHECK(L.tasks == L.seam_sends + h.n_seam_sends * 4);
    CHECK(L.pair_tasks == L.tasks + 8 * 10);
    CHECK(L.prog_begin == L.pair_tasks + 8 * 2);
    // the tasks by request, head, tile (task 4r + 2h + tile: (0, 0) is tasks 0 and 1, (0, 1) 2 and 3, (1, 0) 4 and
    // 5, (1, 1) 6 and 7): each task's pair by tile, the pair's two tasks listed by each
    CHECK(std::vector<int32_t>(w.begin() + L.pair_tasks, w.begin() + L.prog_begin) ==
          std::vector<int32_t>{0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7});
    // task 5: (request 1, head 0, tile 1) on cluster 0 rank 1, barrier 1, q/k rows 16 + 16, f_a rows 8 + 8
    CHECK(std::vector<int32_t>(w.begin() + L.tasks + 5 * 10, w.begin() + L.tasks + 6 * 10) ==
          std::vector<int32_t>{1, 0, 1, 0, 1, 1, 16, 16, 8, 8});
    // CTA 1's seam team: ... X, then tasks 1 and 5's POLL, DECAY, REC, then their NORMs; task 5's DECAY waits for
    // share[pair 1] of CTA 1, its REC for decay[pair 1] (V2Bar 8 and 10)
    const PlanV2View v{w.data(), L};
    const int q = PlanV2::proc(1, V2Role::seam), end = v.prog_begin(q + 1);
    CHECK(v.instr(end - 5).op == int32_t(V2Op::DECAY));
    CHECK(v.instr(end - 4).op == int32_t(V2Op::REC));
    CHECK(v.instr(end - 4).a == 5);
    CHECK((v.instr(end - 3).op == int32_t(V2Op::NORM) && v.instr(end - 3).a == 1 && v.instr(end - 2).op == int32_t(V2Op::NORM)));
    const int wi = w[size_t(L.wait_begin + end - 5)];
    CHECK(std::vector<int32_t>(w.begin() + L.waits + wi * 4, w.begin() + L.waits + wi * 4 + 8) ==
          std::vector<int32_t>{8, 1, 1, 0, 10, 1, 1, 0});
    CHECK(v.wait_begin(end - 5) == wi);  // the view's reading of the same words
    CHECK(v.wait_begin(end - 4) == wi + 1);
    CHECK(v.wait_begin(end - 3) == wi + 2);
    CHECK((v.wait(wi).bar.kind == V2Bar::share && v.wait(wi).bar.cta == 1 && v.wait(wi).bar.index == 1 && v.wait(wi).round == 0));
    CHECK((v.wait(wi + 1).bar.kind == V2Bar::decay && v.wait(wi + 1).bar.cta == 1 && v.wait(wi + 1).bar.index == 1));
    // what INIT arms the pair's barriers with, from the tasks as the device reads them: 2 tasks, (16 + 16 + 8) rows, 4 tokens, bf16;
    // 16 keys' decays of 4 tokens, f32
    CHECK(v2_share_bytes(v.task(5), c.L) == (16 + 16 + 8) * 4 * 2);
    CHECK(v2_decay_bytes(v.task(5), c.L) == 16 * 4 * 4);
    CHECK(v2_onrm_bytes(c.L) == 16);
    CHECK((v.pair_task(5, 0) == 4 && v.pair_task(5, 1) == 5 && v.pair_task(4, 1) == 5));
    std::vector<int32_t> bad = w;
    bad[size_t(L.tasks + 5 * 10 + 3)] = 7;  // task 5 on cluster 7 of 2
    refused(bad, "task 5 names a CTA, barrier, tile or share outside the plan's");
    bad = w;
    bad[size_t(L.instrs + 2 * (end - 3) + 1)] = 8;  // REC of task 8 of 8
    refused(bad, "has operand 8, outside the table it names");
    // a wrong pair: the device would send to and arm for other tasks than the pair's
    const auto pair_word = [&](int i, int m) { return size_t(L.pair_tasks + 2 * i + m); };
    bad = w;
    bad[pair_word(5, 0)] = 8;  // task 8 of 8
    refused(bad, "task 5's pair (pair_tasks) names task 8 for tile 0, outside the tasks");
    bad = w;
    std::swap(bad[pair_word(5, 0)], bad[pair_word(5, 1)]);  // task 5's tiles swapped
    refused(bad, "task 5's pair (pair_tasks) names task 5 for tile 0, which is not that tile of its request and head");
    bad = w;
    bad[pair_word(5, 0)] = 2;  // tile 0 of (request 0, head 1)
    refused(bad, "task 5's pair (pair_tasks) names task 2 for tile 0, which is not that tile");
    bad = w;
    bad[size_t(L.tasks + 7 * 10 + 1)] = 0;  // task 7 as (request 1, head 0, tile 1): task 5's tile 1 once more
    bad[pair_word(5, 1)] = 7;
    refused(bad, "task 5's pair (pair_tasks) names task 7 for tile 1, its own tile, not itself");
    bad = w;
    bad[size_t(L.tasks + 6 * 10 + 1)] = bad[size_t(L.tasks + 7 * 10 + 1)] = 0;  // tasks 6 and 7 a second (request 1, head 0)
    bad[pair_word(5, 0)] = 6, bad[pair_word(6, 1)] = 5;  // 5 and 6 list each other, 4 and 7 list 5 and 6 apart
    refused(bad, "task 4's pair (pair_tasks) names task 5 for tile 1, whose pair is another");
    bad = w;
    bad[offsetof(PlanV2Header, pair_size) / 4] = 0;  // tasks, but no pairs
    refused(bad, "its pair size is not 0 exactly where it has no tasks");
}

TEST_CASE("every entry the device reads decodes, at v2_layout's offsets, to the plan's tables") {
    struct Shape {
        const char* preset;
        int L, tail;
    };
    for (const Shape& shape : std::vector<Shape>{{"small", 8, 0}, {"k3", 1, 0}, {"k3", 64, 0}, {"small", 4, 1}, {"k3", 4, 1}}) {
        const PlanV2 p = plan_for(shape.preset, 1, shape.L, shape.tail);
        CAPTURE(shape.preset);
        CAPTURE(shape.L);
        CAPTURE(shape.tail);
        const std::vector<int32_t> w = p.serialize();
        const PlanV2View v{w.data(), v2_layout(read_v2_header(w))};
        for (int c = 0; c <= p.params().clusters; ++c) CHECK(v.cluster_first(c) == p.cluster_first[size_t(c)]);
        for (size_t u = 0; u < p.units.size(); ++u) {
            const V2Unit& x = v.unit(int(u));
            CHECK(x.cluster == p.units[u].cluster);
            CHECK(x.tiles == p.units[u].tiles);
            for (int m = 0; m < kV2UnitTiles; ++m) CHECK(x.row0[m] == p.units[u].row0[m]);
        }
        for (int k = 0; k < p.ctas(); ++k) {
            CHECK(v.run_offset(k) == p.run_offset[size_t(k)]);
            REQUIRE(v.chunk_begin(k + 1) - v.chunk_begin(k) == int(p.chunks[size_t(k)].size()));
            for (size_t j = 0; j < p.chunks[size_t(k)].size(); ++j) {
                const V2Chunk &x = v.chunk(k, int(j)), &y = p.chunks[size_t(k)][j];
                CHECK((x.unit == y.unit && x.kstep0 == y.kstep0 && x.ksteps == y.ksteps && x.bytes == y.bytes &&
                       x.offset == y.offset && x.slot == y.slot && x.round == y.round));
            }
        }
        CHECK(v.run_offset(p.ctas()) == p.run_offset.back());
        for (size_t e = 0; e < p.recvs.size(); ++e) {
            const V2Recv &x = v.recv(int(e)), &y = p.recvs[e];
            CHECK((x.unit == y.unit && x.owner == y.owner && x.slot == y.slot && x.round == y.round && x.row0 == y.row0));
            CHECK(x.bytes == p.params().ranks * p.partial_bytes());  // the byte count the reducer arms with
            CHECK(v.free_entry(int(e)).count == p.frees[e].count);
            CHECK(v.free_entry(int(e)).slot == p.frees[e].slot);
        }
        CHECK(v.at.seam_sends - v.at.seam_owner == (p.has_seam() ? p.config().S() + 5 * p.ctas() + p.ctas() + 1 : 0));
        for (size_t s = 0; s < p.seam_owner.size(); ++s) CHECK(v.seam_owner(int(s)) == p.seam_owner[s]);
        for (size_t k = 0; k < p.seam_ctas.size(); ++k) {
            const V2SeamCta &x = v.seam_cta(int(k)), &y = p.seam_ctas[k];
            CHECK((x.in_bytes == y.in_bytes && x.part_bytes == y.part_bytes && x.wgt_bytes == y.wgt_bytes && x.msq_bytes == y.msq_bytes &&
                   x.rows_owned == y.rows_owned));
            CHECK(v.seam_send_begin(int(k)) == p.seam_send_begin[k]);
        }
        for (size_t e = 0; e < p.seam_sends.size(); ++e) {
            const V2SeamSend &x = v.seam_send(int(e)), &y = p.seam_sends[e];
            CHECK((x.from == y.from && x.to == y.to && x.bar == y.bar && x.bytes == y.bytes));
        }
        for (size_t i = 0; i < p.tasks.size(); ++i) {
            const V2Task &x = v.task(int(i)), &y = p.tasks[i];
            CHECK((x.request == y.request && x.head == y.head && x.tile == y.tile && x.cluster == y.cluster && x.rank == y.rank &&
                   x.onrm == y.onrm && x.qk0 == y.qk0 && x.qkn == y.qkn && x.fa0 == y.fa0 && x.fan == y.fan));
            CHECK(v2_share_bytes(x, p.config().L) == p.tail_share_bytes(y));
            const std::vector<int> pair = p.tail_pair(int(i));
            REQUIRE(int(pair.size()) == v.header().pair_size);
            for (int m = 0; m < v.header().pair_size; ++m) CHECK(v.pair_task(int(i), m) == pair[size_t(m)]);
        }
        for (int q = 0; q < p.processes(); ++q) {
            const auto& prog = p.programs[size_t(q)];
            REQUIRE(v.prog_begin(q + 1) - v.prog_begin(q) == int(prog.size()));
            for (size_t i = 0; i < prog.size(); ++i) {
                const int gi = v.prog_begin(q) + int(i);
                CHECK(v.instr(gi).op == prog[i].op);
                CHECK(v.instr(gi).a == prog[i].a);
                const std::vector<V2Wait> want = p.waits(q, int(i));
                REQUIRE(v.wait_begin(gi + 1) - v.wait_begin(gi) == int(want.size()));
                for (size_t j = 0; j < want.size(); ++j) {
                    const V2Wait& x = v.wait(v.wait_begin(gi) + int(j));
                    CHECK((x.bar == want[j].bar && x.round == want[j].round));
                }
            }
        }
    }
}

TEST_CASE("a corrupted flat table is refused by read_v2_header, naming what it would send the device past") {
    const PlanV2 p = plan_for("small", 2, 4);
    const std::vector<int32_t> w = p.serialize();
    const PlanV2Layout L = v2_layout(read_v2_header(w));
    const PlanV2View v{w.data(), L};
    // the reducer of CTA 0: its first REDUCE's operand
    const int red = v.prog_begin(PlanV2::proc(0, V2Role::reducer)) + 1;
    REQUIRE(v.instr(red).op == int32_t(V2Op::REDUCE));
    struct Plant {
        const char* names;
        std::function<void(std::vector<int32_t>&)> edit;
    };
    const std::vector<Plant> plants = {
        {"a negative count", [](std::vector<int32_t>& x) { x[offsetof(PlanV2Header, n_frees) / 4] = -1; }},
        {"an index table", [&](std::vector<int32_t>& x) { x[size_t(L.chunk_begin) + 3] += 4; }},  // CTA 3's after CTA 4's
        {"an index table", [&](std::vector<int32_t>& x) { x[size_t(L.chunk_begin) + 16] -= 1; }},  // the last CTA loses a chunk
        {"an index table", [&](std::vector<int32_t>& x) { x[size_t(L.cluster_first) + 1] = 7; }},  // past the 6 units
        {"an index table", [&](std::vector<int32_t>& x) { std::swap(x[size_t(L.prog_begin) + 4], x[size_t(L.prog_begin) + 5]); }},
        {"unit 2 has 5 tiles", [&](std::vector<int32_t>& x) { x[size_t(L.units) + 2 * 6 + 1] = 5; }},
        {"receive entry 3 names a slot", [&](std::vector<int32_t>& x) { x[size_t(L.recvs) + 3 * 6 + 2] = 2; }},
        {"receive entry 0 names a slot or rows", [&](std::vector<int32_t>& x) { x[size_t(L.recvs) + 4] = p.config().N - 4; }},
        {"CTA 0 chunk 1 names a ring slot", [&](std::vector<int32_t>& x) { x[size_t(L.chunks) + 7 + 5] = 2; }},
        {"outside the table it names",
         [&](std::vector<int32_t>& x) { x[size_t(L.instrs) + 2 * size_t(red) + 1] = int32_t(p.recvs.size()); }},
        {"outside the table it names", [&](std::vector<int32_t>& x) { x[size_t(L.instrs) + 1] = 5; }},  // INIT 5
        {"outside the table it names", [&](std::vector<int32_t>& x) { x[size_t(L.instrs)] = 42; }},   // no such op
        {"seam flag is neither", [](std::vector<int32_t>& x) { x[offsetof(PlanV2Header, seam) / 4] = 2; }},
        {"row 3's seam owner is rank 8", [&](std::vector<int32_t>& x) { x[size_t(L.seam_owner) + 3] = 8; }},
        {"seam_send_begin", [&](std::vector<int32_t>& x) { x[size_t(L.seam_send_begin) + 16] -= 1; }},  // the last send lost
        {"seam send 5 names a CTA outside its cluster", [&](std::vector<int32_t>& x) { x[size_t(L.seam_sends) + 5 * 4 + 1] = 8; }},
        {"seam send 30 names a CTA outside its cluster or a barrier", [&](std::vector<int32_t>& x) { x[size_t(L.seam_sends) + 30 * 4 + 2] = 0; }},
        {"outside the table it names",  // the seam's GATE of CTA 0 names CTA 16
         [&](std::vector<int32_t>& x) {
             const int q = PlanV2::proc(0, V2Role::seam);
             for (int i = v.prog_begin(q); i < v.prog_begin(q + 1); ++i)
                 if (v.instr(i).op == int32_t(V2Op::GATE)) x[size_t(L.instrs) + 2 * size_t(i) + 1] = 16;
         }},
    };
    for (const Plant& pl : plants) {
        CAPTURE(pl.names);
        std::vector<int32_t> bad = w;
        pl.edit(bad);
        REQUIRE(bad != w);
        refused(bad, pl.names);
    }
    read_v2_header(w);  // the unplanted buffer is accepted
}
