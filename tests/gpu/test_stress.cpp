// The stress mode on the GPU (docs/kernel.md, "The stress mode"): the kernel built with MONOKDA_STRESS,
// its hand-off stores delayed and a share of its CTAs held at entry, replayed from one CUDA graph many
// times with the step's activations alternating between two fixtures, so that a consumer reading past
// a wait, a stale line from the previous launch or a ring slot still in flight changes a result. Every
// replay's every output byte must equal the unstressed run's of the same activations, which the
// sweep's checks hold to the reference (check_against_reference). A planted ring wait one stage short
// and a planted relaxed poll are measured (how often they show); on the H200 they did not, and the
// PTX ordering check is what guards them (ordering/test_kernel_ordering).
// MONOKDA_STRESS_REPLAYS: replays a case and profile (default 48).
#include <algorithm>
#include <cstring>
#include <tuple>

#include "core/error.hpp"
#include "tests/gpu/gpu_harness.hpp"

using namespace monokda;
using namespace monokda::gpu_test;

namespace {

struct Profile {
    const char* name;
    gpu::StressOptions opt;
};
gpu::StressOptions stress(int release_ns, int hold_ns, int hold_percent, uint32_t seed) {
    gpu::StressOptions o;
    o.release_delay_ns = release_ns, o.hold_ns = hold_ns, o.hold_percent = hold_percent, o.seed = seed;
    return o;
}
const Profile kProfiles[] = {
    {"release delays 0..2 us", stress(2000, 0, 0, 11)},
    {"half the CTAs held 0..20 us", stress(0, 20000, 50, 12)},
    {"delays 0..1 us, a quarter held 0..10 us", stress(1000, 10000, 25, 13)},
};

struct StressCase {
    Case k;
    bool exact;  // the exact in_proj body: the cp.async ring
};
std::vector<StressCase> stress_cases() {
    return {{Case{1, 1, 4, false, ConvLayout::sd, 501}, false}, {Case{2, 4, 4, true, ConvLayout::sd, 502}, false},
            {Case{4, 4, 5, false, ConvLayout::ds, 503}, false}, {Case{8, 8, 8, false, ConvLayout::sd, 504}, false},
            {Case{2, 4, 4, true, ConvLayout::sd, 505}, true},   {Case{4, 4, 5, false, ConvLayout::ds, 506}, true}};
}

int replays() {
    const char* r = std::getenv("MONOKDA_STRESS_REPLAYS");
    if (!r) return 48;
    char* end = nullptr;
    const long n = std::strtol(r, &end, 10);
    REQUIRE_MESSAGE((*r && end && *end == 0 && n >= 2 && n <= 100000), "MONOKDA_STRESS_REPLAYS must be 2..100000 (got '", r, "')");
    return int(n);
}

// The same step with another fixture's activations (prefix, delta, blocks): every hand-off differs,
// the weights, states and slots stay.
StepInputs other_activations(const StepInputs& a, Case k) {
    k.seed += 1000;
    const StepInputs o = make_case(k);
    StepInputs b = a;
    b.prefix = o.prefix, b.delta = o.delta, b.blocks = o.blocks;
    return b;
}

// The unstressed runs' bytes for activations in[0], in[1]; with a case name, each run is first held
// to the reference (check_against_reference, rows of stress.md).
void unstressed(const gpu::RunOptions& ro, const StepInputs* in[2], std::vector<uint8_t> golden[2], const std::string& cname) {
    gpu::KdaRunner plain(*in[0], ro);
    for (int x = 0; x < 2; ++x) {
        plain.set_activations(*in[x]);
        plain.restore_states();
        plain.run();
        if (!cname.empty()) {
            const Judged j = judge(*in[x], plain.launcher().plan().reduction_order(), plain.outputs());
            check_against_reference(*in[x], j, ro.exact_in_proj, cname + (x ? " (b)" : " (a)"), "stress.md");
        }
        golden[x] = plain.output_bytes();
    }
}

struct Replays {
    int differ = 0, first = -1;
    float ms_sum = 0;
};

// n replays of the runner's graph, activations a, b, a, ... against golden[0], golden[1]
Replays replay(gpu::KdaRunner& r, const StepInputs* in[2], const std::vector<uint8_t> golden[2], int n) {
    Replays out;
    r.capture_graph();
    for (int i = 0; i < n; ++i) {
        r.set_activations(*in[i % 2]);
        r.restore_states();
        r.replay_graph();
        r.check();
        out.ms_sum += r.last_ms();
        if (r.output_bytes() != golden[i % 2]) {
            if (out.first < 0) out.first = i;
            ++out.differ;
        }
    }
    return out;
}

std::string row(const std::string& what, const std::string& profile, int n, const Replays& rp) {
    char b[400];
    snprintf(b, sizeof b, "| %s | %s | %d | %d | %s | %.3f |", what.c_str(), profile.c_str(), n, rp.differ,
             rp.first < 0 ? "-" : std::to_string(rp.first).c_str(), rp.ms_sum / float(n));
    return b;
}

}  // namespace

TEST_CASE("kda_pre under stress: every graph replay, activations alternating, gives the unstressed bytes") {
    require_gpu();
    REQUIRE_MESSAGE(gpu::kernel_has_stress_mode(), "this test needs the MONOKDA_STRESS kernel (monokda_kernels_stress)");
    const int n = replays();
    log_line("stress.md", "\n### stress: " + std::to_string(n) +
                              " graph replays a case and profile, activations alternating\n\n"
                              "| case | profile | replays | differing | first | mean ms |\n|---|---|---|---|---|---|");
    for (const StressCase& sc : stress_cases()) {
        const std::string cname = sc.k.name() + (sc.exact ? " exact-in_proj" : "");
        CAPTURE(cname);
        const StepInputs a = make_case(sc.k), b = other_activations(a, sc.k);
        const StepInputs* in[2] = {&a, &b};
        gpu::RunOptions ro = run_options();
        ro.exact_in_proj = sc.exact;
        // unstressed, each activation set held to the reference; its bytes are what every replay must give
        std::vector<uint8_t> golden[2];
        unstressed(ro, in, golden, cname);
        REQUIRE_MESSAGE(golden[0] != golden[1], "the two activation sets give the same bytes: alternating shows nothing");
        for (const Profile& p : kProfiles) {
            gpu::RunOptions rs = ro;
            rs.stress = p.opt;
            gpu::KdaRunner stressed(a, rs);
            const Replays rp = replay(stressed, in, golden, n);
            log_line("stress.md", row(cname, p.name, n, rp));
            CHECK_MESSAGE(rp.differ == 0, p.name, ": ", rp.differ, " of ", n, " replays differ (first: replay ", rp.first, ")");
        }
    }
}

// Measured, not asserted: on the H200 neither planted bug changed a byte under any profile (0 of 72
// replays each, docs/results/2026-12-02-h200-gpu-stress.md), so both are guarded by construction:
// the PTX ordering check fails each (ordering/test_kernel_ordering, planted_ring_short and
// planted_relaxed_poll). The table says how often stress shows them on the device at hand.
TEST_CASE("the stress mode measures a planted ring wait one stage short and a planted relaxed poll") {
    require_gpu();
    REQUIRE(gpu::kernel_has_stress_mode());
    const int n = std::min(replays(), 24);
    log_line("stress.md", "\n### planted bugs under stress\n\n| case | planted, profile | replays | differing | first | mean ms |\n|---|---|---|---|---|---|");
    for (const auto& [plant, name, exact] : {std::tuple{gpu::StressOptions::Plant::ring_short, "ring wait one stage short", true},
                                             std::tuple{gpu::StressOptions::Plant::relaxed_poll, "relaxed flag polls", false}}) {
        const Case k{2, 4, 4, true, ConvLayout::sd, 507};
        const StepInputs a = make_case(k), b = other_activations(a, k);
        const StepInputs* in[2] = {&a, &b};
        gpu::RunOptions ro = run_options();
        ro.exact_in_proj = exact;
        std::vector<uint8_t> golden[2];
        unstressed(ro, in, golden, "");
        Replays total;
        for (const Profile& p : kProfiles) {
            gpu::RunOptions rs = ro;
            rs.stress = p.opt;
            rs.stress.plant = plant;
            gpu::KdaRunner planted(a, rs);
            const Replays rp = replay(planted, in, golden, n);
            log_line("stress.md", row(k.name() + (exact ? " exact-in_proj" : ""), std::string(name) + ", " + p.name, n, rp));
            total.differ += rp.differ;
        }
        MESSAGE(name, ": ", total.differ, " of ", 3 * n, " stressed replays differ");
    }
}

TEST_CASE("stress options out of range, and another step's activations, are refused before anything runs") {
    require_gpu();
    const StepInputs in = make_case(Case{1, 1, 2, false, ConvLayout::sd, 508});
    const Plan plan = gpu::device_plan(in.cfg);
    for (const gpu::StressOptions& bad : {stress(-1, 0, 0, 1), stress(0, gpu::kMaxStressDelayNs + 1, 50, 1), stress(0, 1000, 101, 1)}) {
        gpu::LaunchOptions lo;
        lo.stress = bad;
        CHECK_THROWS_WITH_AS(gpu::KdaLauncher(plan, lo), doctest::Contains("stress"), BadInput);
    }
    gpu::LaunchOptions lo;
    lo.stress = stress(gpu::kMaxStressDelayNs, gpu::kMaxStressDelayNs, 100, 1);  // the largest still launch
    CHECK_NOTHROW(gpu::KdaLauncher(plan, lo));
    // activations of another step's shape are refused
    gpu::KdaRunner runner(in);
    CHECK_THROWS_WITH_AS(runner.set_activations(make_case(Case{1, 2, 2, false, ConvLayout::sd, 509})),
                         doctest::Contains("set_activations"), BadInput);
}
