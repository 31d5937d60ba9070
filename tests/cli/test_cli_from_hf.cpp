// monokda fixture --from-hf: generated step tensors, a rank's layer weights from a checkpoint.
#include <doctest/doctest.h>

#include "core/fixture_gen.hpp"
#include "core/hf_checkpoint.hpp"
#include "core/step.hpp"
#include "tests/cli/cli_run.hpp"
#include "tests/core/synthetic_checkpoint.hpp"

using namespace monokda;
using namespace monokda::test;

TEST_SUITE("cli") {

TEST_CASE("fixture --from-hf takes the rank's weights and keeps the generator's step tensors") {
    TempDir t("from_hf");
    const std::string ck = t / "ckpt";
    fs::create_directories(ck);
    Synthetic m = make_model();
    write_checkpoint(ck, m.tensors);
    const std::string fx = t / "f.safetensors";
    CliResult r = run_cli({"fixture", "--from-hf", ck, "--layer", "2", "--tp-rank", "1", "--tp-size", "2", "--R", "2",
                           "--L", "3", "--nb", "2", "--seed", "5", "-o", fx});
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const StepInputs in = StepInputs::from_file(read_safetensors(fx));
    const HfLayerWeights w = load_hf_layer(ck, 2, 1, 2);
    CHECK(in.cfg.D == 32);
    CHECK(in.cfg.H == 2);
    CHECK(in.cfg.K == 8);
    CHECK(in.cfg.N == w.N);
    auto same = [](const std::vector<bf16>& a, const std::vector<bf16>& b) {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); ++i)
            if (a[i].bits != b[i].bits) return false;
        return true;
    };
    CHECK(same(in.in_proj_w, w.in_proj_w));
    CHECK(same(in.f_b_w, w.f_b_w));
    CHECK(same(in.o_norm_w, w.o_norm_w));
    CHECK(same(in.res_proj_w, w.res_proj_w));
    CHECK(in.conv_w == w.conv_w);
    CHECK(in.A_log == w.A_log);
    CHECK(in.dt_bias == w.dt_bias);
    // step tensors are the generator's: the same as a plain fixture of those dims and seed
    Config c = Config::preset("small");
    set_model_dims(w, c);
    c.R = 2; c.L = 3; c.nb = 2; c.seed = 5;
    const TensorFile plain_file = make_fixture(c).to_file();
    const TensorFile f = read_safetensors(fx);
    for (const char* name : {"prefix", "delta", "blocks", "conv_state", "ssm_state", "state_indices", "num_accepted"}) {
        CAPTURE(name);
        CHECK(f.get(name).bytes == plain_file.get(name).bytes);
    }
    CHECK(f.metadata.at("weights").find("model.layers.2.") != std::string::npos);
    REQUIRE(run_cli({"reference", fx, "-o", t / "out.safetensors"}).code == 0);

    // explicit --config must match the checkpoint's rank; bad TP requests are bad input
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"fixture", "--from-hf", ck, "--config", "k3", "--tp-size", "2", "-o", fx + "2"},
             {"fixture", "--from-hf", ck, "--tp-size", "3", "-o", fx + "2"},
             {"fixture", "--from-hf", ck, "--layer", "0", "-o", fx + "2"},
             {"fixture", "--from-hf", ck, "--layer", "5", "--tp-size", "1", "-o", fx + "2"}}) {
        r = run_cli(args);
        CHECK(r.code == 2);
        CHECK(r.out.find("error") != std::string::npos);
        CHECK_FALSE(fs::exists(fx + "2"));
    }
    CHECK(run_cli({"fixture", "--from-hf", ck, "--config", "k3", "--tp-size", "2", "-o", fx + "2"}).out.find("does not match") != std::string::npos);
}
}
