// `monokda verify` on what the GPU computes, as a user runs it (output files, the command line):
// the kda_pre kernel's outputs and the unfused six-kernel chain's (bench/unfused_path.cu) pass every
// check of SPEC §5 on k3 steps of every kind (plain decode, block-write, ds layout, null requests, a
// live request without an initial state, live requests with slot-less tokens, each scale profile,
// S = 64 as 64 x 1); the same file with
// one planted error fails, naming it. in_proj runs on the matrix unit in both, so they are judged
// with --in-proj tensor-cores (MONOKDA_GPU_INPROJ=exact: the kernel's exact-order in_proj, judged exact).
#include <string>
#include <vector>

#include "bench/gpu_bench.hpp"
#include "core/safetensors.hpp"
#include "tests/cli/cli_run.hpp"
#include "tests/gpu/gpu_harness.hpp"

using namespace monokda;
using namespace monokda::gpu_test;
using monokda::test::CliResult;
using monokda::test::run_cli;
using monokda::test::TempDir;

namespace {

std::vector<Case> cases() {
    std::vector<Case> out(4);
    out[0].R = 1, out[0].L = 1, out[0].nb = 1, out[0].seed = 21;  // plain decode
    out[1].R = 2, out[1].L = 4, out[1].nb = 4, out[1].block_write = true, out[1].null_requests = 1, out[1].seed = 22;
    out[2].R = 3, out[2].L = 5, out[2].nb = 8, out[2].layout = ConvLayout::ds, out[2].init_null = true, out[2].seed = 23;
    out[3].R = 8, out[3].L = 8, out[3].nb = 7, out[3].block_write = true, out[3].null_requests = 2, out[3].partial_nulls = 2, out[3].seed = 24;
    // 2 x 4 under each scale profile (docs/fixtures.md), and S = 64 as 64 x 1
    uint64_t seed = 25;
    for (ScaleProfile sp : {ScaleProfile::attnres_large, ScaleProfile::prefix_large, ScaleProfile::norm_tiny, ScaleProfile::gate_low}) {
        Case k;
        k.R = 2, k.L = 4, k.nb = 4, k.scale = sp, k.seed = seed++;
        out.push_back(k);
    }
    Case wide;
    wide.R = 64, wide.L = 1, wide.nb = 3, wide.block_write = true, wide.layout = ConvLayout::ds, wide.null_requests = 4, wide.seed = seed;
    out.push_back(wide);
    return out;
}

// `monokda verify FIXTURE CANDIDATE` with in_proj judged as `in_proj`
CliResult verify(const std::string& fixture, const std::string& candidate, const std::string& in_proj) {
    const CliResult r = run_cli({"verify", fixture, candidate, "--in-proj", in_proj});
    log_line("verify.md", r.out);
    return r;
}

}  // namespace

TEST_CASE("monokda verify passes the kernel's outputs and the unfused chain's, and fails a planted error") {
    require_gpu();
    TempDir t("verify_gpu");
    const std::string kernel_in_proj = exact_in_proj() ? "exact" : "tensor-cores";
    bool planted = false;
    for (const Case& k : cases()) {
        CAPTURE(k.name());
        log_line("verify.md", "\n### " + k.name());
        const StepInputs in = make_case(k);
        const std::string fx = t / "step.safetensors", kern = t / "kernel.safetensors", unf = t / "unfused.safetensors";
        write_safetensors(fx, in.to_file());

        gpu::KdaRunner runner(in, run_options());
        runner.run();
        write_safetensors(kern, runner.outputs().to_file(in.cfg));
        const CliResult kr = verify(fx, kern, kernel_in_proj);
        INFO("kernel:\n", kr.out);
        CHECK(kr.code == 0);

        write_safetensors(unf, bench::run_unfused(in).to_file(in.cfg));
        const CliResult ur = verify(fx, unf, "tensor-cores");  // cuBLASLt's in_proj
        INFO("unfused chain:\n", ur.out);
        CHECK(ur.code == 0);

        if (!planted && k.block_write) {
            // the kernel's file with row nb of the bank one bit off: exact.blocks, and only it
            planted = true;
            TensorFile f = read_safetensors(kern);
            std::vector<bf16> b = f.get("blocks").as<bf16>();
            b[size_t(k.nb) * in.cfg.D].bits ^= 1;  // request 0, token 0, bank row nb, column 0
            f.tensors["blocks"] = Tensor::of(DType::BF16, f.get("blocks").shape, b);
            write_safetensors(t / "planted.safetensors", f);
            const CliResult pr = verify(fx, t / "planted.safetensors", kernel_in_proj);
            INFO("planted:\n", pr.out);
            CHECK(pr.code == 1);
            CHECK(pr.out.find("FAIL exact.blocks: ") != std::string::npos);
            CHECK(pr.out.find("first: blocks request 0 token 0 bank_row " + std::to_string(k.nb) + " column 0:") != std::string::npos);
            CHECK(pr.out.find("verify: FAIL (20 passed, 1 failed") != std::string::npos);
        }
    }
    CHECK(planted);
}
