// The launch itself on the GPU: refused launches leave outputs untouched, the epoch advances on
// the device (so a captured graph replays), a poll that can never succeed gives up and names its
// mailbox entry, strided state pages and both conv layouts give the same bits.
#include <cstring>

#include "core/error.hpp"
#include "properties/transforms.hpp"
#include "tests/bad_input_message.hpp"
#include "tests/gpu/gpu_harness.hpp"

using namespace monokda;
using namespace monokda::gpu_test;

// One launch on a broken launcher: the error check() reports ("" if none).
static std::string launch_error(gpu::KdaLauncher& broken, const gpu::KdaTensors& t) {
    broken.launch(t);
    try {
        broken.check();
    } catch (const gpu::GpuError& e) {
        return e.what();
    }
    return "";
}

TEST_CASE("bad input on the device: the launch is refused, reported, and writes nothing") {
    require_gpu();
    const StepInputs in = make_case(Case{3, 4, 4, true, ConvLayout::sd, 21});
    gpu::KdaRunner runner(in);
    const std::vector<uint8_t> before = runner.output_bytes();
    struct Plant {
        const char* what;
        int r, t, value;  // t < 0: num_accepted[r] = value
        const char* expect;
    };
    const int dup = in.idx(1, 2), range = in.cfg.slots;
    for (const Plant& p : {Plant{"duplicate slot", 0, 1, dup, "appears more than once"},
                           Plant{"slot out of range", 2, 3, range, "out of range"},
                           Plant{"num_accepted 0", 1, -1, 0, "outside 1..L"},
                           Plant{"num_accepted L+1", 2, -1, 5, "outside 1..L"}}) {
        CAPTURE(p.what);
        if (p.t >= 0) runner.plant_state_index(p.r, p.t, p.value);
        else runner.plant_num_accepted(p.r, p.value);
        runner.launch();
        const std::string msg = test::bad_input_message([&] { runner.check(); });
        CHECK_MESSAGE(msg.find(p.expect) != std::string::npos, "got: '", msg, "'");
        CHECK(runner.output_bytes() == before);
        log_line("launch.md", std::string("| planted ") + p.what + " | " + (msg.empty() ? "NOT REPORTED" : msg) + " | outputs " +
                                  (runner.output_bytes() == before ? "untouched" : "CHANGED") + " |");
        // undo: the next launch is clean again
        if (p.t >= 0) runner.plant_state_index(p.r, p.t, in.idx(p.r, p.t));
        else runner.plant_num_accepted(p.r, in.num_accepted[size_t(p.r)]);
    }
    // host-side validation: a wrong view is refused before anything runs
    gpu::KdaTensors t = runner.tensors();
    t.proj.shape[1] -= 16;
    CHECK_THROWS_AS(runner.launcher().launch(t), BadInput);
    CHECK(runner.output_bytes() == before);
    // and the launcher still works afterwards, equal to a fresh runner
    runner.run();
    gpu::KdaRunner fresh(in);
    fresh.run();
    CHECK(runner.output_bytes() == fresh.output_bytes());
}

TEST_CASE("1000 graph replays of one step, states restored between, give identical outputs") {
    require_gpu();
    const StepInputs in = make_case(Case{2, 3, 4, true, ConvLayout::ds, 31});
    gpu::KdaRunner runner(in);
    const uint32_t e0 = runner.launcher().device_epoch();
    runner.run();
    const std::vector<uint8_t> first = runner.output_bytes();
    CHECK(runner.launcher().device_epoch() == e0 + 1);  // the launch advanced the epoch itself
    runner.capture_graph();
    int differ = 0;
    float ms_min = 1e9f, ms_sum = 0;
    for (int i = 0; i < 1000; ++i) {
        runner.restore_states();
        runner.replay_graph();
        runner.check();
        ms_min = std::min(ms_min, runner.last_ms());
        ms_sum += runner.last_ms();
        differ += runner.output_bytes() != first;
    }
    CHECK(differ == 0);
    CHECK(runner.launcher().device_epoch() == e0 + 1001);
    char b[200];
    snprintf(b, sizeof b, "| graph replays | 1000 | differing: %d | epoch %u -> %u | replay ms min %.3f mean %.3f |", differ,
             e0, runner.launcher().device_epoch(), ms_min, ms_sum / 1000);
    log_line("launch.md", b);
}

TEST_CASE("launch options out of range are refused before anything runs") {
    require_gpu();
    const StepInputs in = make_case(Case{1, 2, 2, false, ConvLayout::sd, 41});
    const Plan plan = gpu::device_plan(in.cfg);
    for (int pace : {-2, gpu::kMaxWeightPaceNs + 1}) {
        gpu::LaunchOptions lo;
        lo.weight_pace_ns = pace;
        CHECK_THROWS_WITH_AS(gpu::KdaLauncher(plan, lo), doctest::Contains("weight pace must be"), BadInput);
    }
    gpu::LaunchOptions lo;
    lo.poll_timeout_ms = 0;
    CHECK_THROWS_WITH_AS(gpu::KdaLauncher(plan, lo), doctest::Contains("poll timeout"), BadInput);
    lo.poll_timeout_ms = 2000;
    lo.weight_pace_ns = gpu::kMaxWeightPaceNs;  // the largest pace still launches
    CHECK_NOTHROW(gpu::KdaLauncher(plan, lo));
    // the stress mode's options need its own kernel build (tests/gpu/test_stress.cpp)
    REQUIRE_FALSE(gpu::kernel_has_stress_mode());
    lo.stress.release_delay_ns = 100;
    CHECK_THROWS_WITH_AS(gpu::KdaLauncher(plan, lo), doctest::Contains("MONOKDA_STRESS"), BadInput);
}

TEST_CASE("a mailbox that is never filled: the polls give up and the error names the entry") {
    require_gpu();
    const StepInputs in = make_case(Case{1, 2, 2, false, ConvLayout::sd, 41});
    gpu::KdaRunner runner(in);
    Plan plan = gpu::device_plan(in.cfg);
    // CTA 5 loses its ATTN_X: XRDY[slice 5] is never released
    const auto& l = plan.instrs(5);
    int at = -1;
    for (size_t i = 0; i < l.size(); ++i)
        if (l[i].opcode() == Op::ATTN_X) at = int(i);
    REQUIRE(at >= 0);
    plan.erase_instr(5, at);
    gpu::LaunchOptions lo;
    lo.export_handoffs = true;
    lo.poll_timeout_ms = 200;
    lo.check_plan = false;
    CHECK_THROWS_AS(gpu::KdaLauncher(plan, gpu::LaunchOptions{}), BadInput);  // refused when checked
    gpu::KdaLauncher broken(plan, lo);
    const std::string msg = launch_error(broken, runner.tensors());
    // which starved poll gives up first is a race: the gemv CTAs wait for XRDY[slice 5], and CTA 5,
    // having skipped its ATTN_X, goes on to its kda tasks and waits for proj that never comes
    CHECK_MESSAGE(msg.find("TIMEOUT") != std::string::npos, msg);
    CHECK_MESSAGE((msg.find("waiting for XRDY[slice 5]") != std::string::npos ||
                   msg.find("waiting for PROJ[group ") != std::string::npos),
                  msg);
    log_line("launch.md", "| unfilled mailbox | " + msg + " |");
    // the error word was cleared: a sound launch on the same tensors succeeds
    runner.restore_states();
    runner.run();
}

TEST_CASE("a copy-engine copy that never completes: the pass's wait gives up and the error names the copy") {
    require_gpu();
    const StepInputs in = make_case(Case{1, 1, 2, false, ConvLayout::sd, 43});
    gpu::KdaRunner runner(in);
    // without the kda tasks nothing but the pass waits for what the copies feed (with them, the
    // tasks' PROJ polls gave up first in all six launches of a measured run)
    Plan plan = gpu::device_plan(in.cfg);
    for (int l = 0; l < plan.blocks(); ++l)
        for (int i = int(plan.instrs(l).size()) - 1; i >= 0; --i) {
            const int32_t op = plan.instrs(l)[size_t(i)].op;
            if (op >= int32_t(Op::KDA_LOAD) && op <= int32_t(Op::KDA_NORM)) plan.erase_instr(l, i);
        }
    using Fault = gpu::LaunchOptions::CopyFault;
    for (const auto& planted : {std::pair{Fault::x, std::string("gave up waiting for its copy of x for step 0")},
                                std::pair{Fault::weight, std::string("gave up waiting for its in_proj weight copy of step 0")}}) {
        const Fault fault = planted.first;
        const std::string& name = planted.second;
        CAPTURE(name);
        gpu::LaunchOptions lo;
        lo.poll_timeout_ms = 200;
        lo.check_plan = false;  // the plan without kda tasks is refused otherwise
        lo.plant_copy_fault = fault;
        gpu::KdaLauncher broken(plan, lo);  // each copy of the planted map lands half the bytes waited for
        const std::string msg = launch_error(broken, runner.tensors());
        CHECK_MESSAGE(msg.find("TIMEOUT") != std::string::npos, msg);
        CHECK_MESSAGE(msg.find(name) != std::string::npos, msg);
        log_line("launch.md", "| planted copy fault | " + msg + " |");
        // the control: the same plan and options without the fault run clean
        gpu::LaunchOptions ok = lo;
        ok.plant_copy_fault = Fault::none;
        gpu::KdaLauncher whole(plan, ok);
        runner.restore_states();
        whole.launch(runner.tensors());
        CHECK_NOTHROW(whole.check());
    }
}

TEST_CASE("strided state pages and the ds layout give the same bits as plain sd tensors") {
    require_gpu();
    const StepInputs in = make_case(Case{4, 4, 4, true, ConvLayout::sd, 51});
    gpu::KdaRunner plain(in);
    plain.run();
    const StepOutputs<float> a = plain.outputs();
    gpu::RunOptions packed;
    packed.packed_state_pages = true;
    gpu::KdaRunner pages(in, packed);
    pages.run();
    const StepOutputs<float> b = pages.outputs();
    CHECK(same_bits(a.conv_state, b.conv_state));
    CHECK(std::memcmp(a.ssm_state.data(), b.ssm_state.data(), a.ssm_state.size() * 4) == 0);
    CHECK(same_bits(a.core_out, b.core_out));
    // the same fixture with conv_state transposed to [slots, C, W-2+L]
    const StepInputs ds = in.with_conv_layout(ConvLayout::ds);
    gpu::KdaRunner dsr(ds);
    dsr.run();
    const StepOutputs<float> d = dsr.outputs();
    int64_t conv_bad = 0;
    for (int s = 0; s < in.cfg.slots; ++s)
        for (int j = 0; j < in.cfg.conv_len(); ++j)
            for (int ch = 0; ch < in.cfg.C; ++ch)
                conv_bad += d.conv_state[size_t(ds.conv_at(s, j, ch))].bits != a.conv_state[size_t(in.conv_at(s, j, ch))].bits;
    CHECK(conv_bad == 0);
    CHECK(same_bits(d.core_out, a.core_out));
    CHECK(std::memcmp(d.ssm_state.data(), a.ssm_state.data(), a.ssm_state.size() * 4) == 0);
    log_line("launch.md", std::string("| packed pages / ds layout vs plain sd | ") +
                              (same_bits(a.core_out, b.core_out) && conv_bad == 0 && same_bits(d.core_out, a.core_out) ? "identical" : "DIFFER") + " |");
}

TEST_CASE("the attn seam is the same whichever TP rank's kda weights the launch carries") {
    require_gpu();
    // rank B: the same replicated inputs (prefix, delta, bank, AttnRes gains) and another rank's
    // in_proj / f_b / conv / gate / norm weights and states
    const StepInputs a = make_case(Case{4, 2, 5, true, ConvLayout::sd, 61});
    const StepInputs other = make_case(Case{4, 2, 5, true, ConvLayout::sd, 62});
    StepInputs b = a;
    b.in_proj_w = other.in_proj_w, b.f_b_w = other.f_b_w, b.conv_w = other.conv_w, b.A_log = other.A_log;
    b.dt_bias = other.dt_bias, b.o_norm_w = other.o_norm_w, b.conv_state = other.conv_state, b.ssm_state = other.ssm_state;
    gpu::KdaRunner ra(a), rb(b);
    ra.run();
    rb.run();
    const StepOutputs<float> oa = ra.outputs(), ob = rb.outputs();
    CHECK(same_bits(oa.prefix_out, ob.prefix_out));
    CHECK(same_bits(oa.blocks, ob.blocks));
    CHECK(same_bits(oa.x, ob.x));
    CHECK(!same_bits(oa.core_out, ob.core_out));  // the kda part did see other weights
    log_line("launch.md", std::string("| seam across TP ranks (prefix_out, blocks, x) | ") +
                              (same_bits(oa.prefix_out, ob.prefix_out) && same_bits(oa.blocks, ob.blocks) && same_bits(oa.x, ob.x) ? "identical" : "DIFFER") + " |");
}

TEST_CASE("a token's outputs do not depend on what it is batched with (batch invariance)") {
    // The matrix-unit in_proj splits its sums the same way whatever S is (kda_gemv_batch.hpp), so
    // a request run alone, or with others, or with fewer tokens gives its rows the same bits.
    require_gpu();
    const StepInputs big = make_case(Case{8, 8, 4, true, ConvLayout::sd, 41});  // S = 64
    gpu::KdaRunner rb(big, run_options());
    rb.run();
    const StepOutputs<float> ob = rb.outputs();
    const Config& cb = big.cfg;
    struct Sub {
        std::vector<int> reqs;
        int L;  // < 8: tokens truncated, so the conv window moves and only row-wise stages compare
    };
    for (const Sub& sub : {Sub{{3}, 8}, Sub{{5, 2}, 8}, Sub{{0, 1, 2, 3}, 8}, Sub{{6}, 1}, Sub{{7, 4, 1}, 2}}) {
        StepInputs in = props::select_requests(big, sub.reqs);
        if (sub.L < cb.L) in = props::truncate_tokens(in, sub.L);
        gpu::KdaRunner rs(in, run_options());
        rs.run();
        const StepOutputs<float> os = rs.outputs();
        const Config& cs = in.cfg;
        int differing_rows = 0;
        std::string first;
        for (int j = 0; j < cs.R; ++j)
            for (int t = 0; t < cs.L; ++t) {
                const size_t rs_row = size_t(j * cs.L + t), rb_row = size_t(sub.reqs[size_t(j)] * cb.L + t);
                struct Part { const char* name; const std::vector<bf16>& a; const std::vector<bf16>& b; size_t width; };
                std::vector<Part> parts{{"prefix_out", os.prefix_out, ob.prefix_out, size_t(cb.D)},
                                        {"x", os.x, ob.x, size_t(cb.D)},
                                        {"proj", os.proj, ob.proj, size_t(cb.N)},
                                        {"g1", os.g1, ob.g1, size_t(cb.E())}};
                if (sub.L == cb.L)
                    for (Part p : {Part{"qkv", os.qkv, ob.qkv, size_t(cb.C)}, Part{"o", os.o, ob.o, size_t(cb.E())},
                                   Part{"core_out", os.core_out, ob.core_out, size_t(cb.E())}})
                        parts.push_back(p);
                for (const Part& p : parts)
                    if (std::memcmp(p.a.data() + rs_row * p.width, p.b.data() + rb_row * p.width, p.width * 2) != 0) {
                        ++differing_rows;
                        if (first.empty())
                            first = std::string(p.name) + " of request " + std::to_string(sub.reqs[size_t(j)]) +
                                    " token " + std::to_string(t);
                    }
            }
        std::string reqs;
        for (int r : sub.reqs) reqs += (reqs.empty() ? "" : ",") + std::to_string(r);
        CHECK_MESSAGE(differing_rows == 0, "requests {", reqs, "} L=", sub.L, ": first differing row: ", first);
        log_line("launch.md", "| batch invariance: requests {" + reqs + "} of the S=64 step, L=" +
                                  std::to_string(sub.L) + " | " +
                                  (differing_rows == 0 ? "every row identical" : "DIFFERS: " + first) + " |");
    }
}
