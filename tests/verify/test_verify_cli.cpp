// `monokda verify` as a user runs it: exit codes, the JSON report and JUnit XML, candidates as
// PyTorch users write them (--map, --ssm-layout hkv, I64 indices), bad input named and nothing
// written, an envelope read from `emulate --envelope-out`, and the emulator's output passing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fixture_gen.hpp"
#include "core/safetensors.hpp"
#include "core/version.hpp"
#include "tests/cli/cli_run.hpp"
#include "tests/verify/verify_util.hpp"

using namespace monokda;
using namespace monokda::test;
using nlohmann::json;

namespace {

bool has(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

json read_json(const std::string& path) {
    std::ifstream f(path);
    return json::parse(f);
}

// fixture and its reference output in dir
void write_step(const TempDir& t) {
    write_safetensors(t / "step.safetensors", verify::test::varied_step().to_file());
    REQUIRE(run_cli({"reference", t / "step.safetensors", "-o", t / "ref.safetensors"}).code == 0);
}

}  // namespace

TEST_SUITE("verify") {

TEST_CASE("verify passes the reference: exit 0, a report with every check and the version, JUnit one testcase a check") {
    TempDir t("verify_pass");
    write_step(t);
    CliResult r = run_cli({"verify", t / "step.safetensors", t / "ref.safetensors", "--report", t / "r.json", "--junit",
                           t / "r.xml"});
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(has(r.out, "verify: PASS (21 passed, 0 failed, 0 not checked)"));
    const json j = read_json(t / "r.json");
    CHECK(j.at("format") == "monokda-verify-report");
    CHECK(j.at("format_version") == 1);
    CHECK(j.at("monokda_version") == version());
    CHECK(j.at("monokda_commit") == commit());
    CHECK(j.at("verdict") == "pass");
    CHECK(j.at("checks").size() == verify::check_names().size());
    CHECK(j.at("fixture").at("digest").get<std::string>().size() == 16);
    for (const json& c : j.at("checks")) {
        CHECK(c.at("status") == "pass");
        CHECK(c.at("first").is_null());
    }
    std::ifstream x(t / "r.xml");
    const std::string xml((std::istreambuf_iterator<char>(x)), std::istreambuf_iterator<char>());
    size_t cases = 0;
    for (size_t p = xml.find("<testcase "); p != std::string::npos; p = xml.find("<testcase ", p + 1)) ++cases;
    CHECK(cases == verify::check_names().size());
    CHECK(has(xml, "name=\"stage.qkv\""));
    CHECK(has(xml, "failures=\"0\""));
}

TEST_CASE("a failing candidate: exit 1, the check and its first element in the report and the XML") {
    TempDir t("verify_fail");
    write_step(t);
    TensorFile c = read_safetensors(t / "ref.safetensors");
    std::vector<bf16> o = c.get("o").as<bf16>();
    o[5] = bf16::round(0.5f);  // request 0 is null: its o must be +0
    c.tensors["o"] = Tensor::of(DType::BF16, c.get("o").shape, o);
    write_safetensors(t / "bad.safetensors", c);
    CliResult r = run_cli({"verify", t / "step.safetensors", t / "bad.safetensors", "--report", t / "r.json", "--junit",
                           t / "r.xml"});
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(has(r.out, "FAIL exact.null_requests"));
    CHECK(has(r.out, "first: o request 0 token 0 head 0 column 5: 0.5 (0x3f00), expected 0 (0x0000)"));
    const json j = read_json(t / "r.json");
    CHECK(j.at("verdict") == "fail");
    const json* k = nullptr;
    for (const json& c2 : j.at("checks"))
        if (c2.at("name") == "exact.null_requests") k = &c2;
    REQUIRE(k);
    CHECK(k->at("status") == "fail");
    CHECK(k->at("first").at("tensor") == "o");
    CHECK(k->at("first").at("at").at("request") == 0);
    CHECK(k->at("first").at("at").at("column") == 5);
    CHECK(k->at("first").at("candidate_bits") == "0x3f00");
    CHECK(k->at("more") == 0);
    std::ifstream x(t / "r.xml");
    const std::string xml((std::istreambuf_iterator<char>(x)), std::istreambuf_iterator<char>());
    CHECK(has(xml, "<failure message=\"FAIL exact.null_requests"));
}

TEST_CASE("candidates as PyTorch users write them: vLLM names through --map, ssm_state [slots, H, K, V], I64 indices") {
    TempDir t("verify_torch");
    write_step(t);
    const StepInputs in = verify::test::varied_step();
    const Config& cfg = in.cfg;
    TensorFile ref = read_safetensors(t / "ref.safetensors");
    TensorFile c;
    c.tensors["core_attn_out"] = ref.get("core_out");
    for (const char* n : {"prefix_out", "blocks", "conv_state", "x", "proj", "g1", "qkv", "o"}) c.tensors[n] = ref.get(n);
    const std::vector<float> s = ref.get("ssm_state").as<float>();
    std::vector<float> hkv(s.size());
    const size_t head = size_t(cfg.V) * cfg.K;
    for (size_t sh = 0; sh < size_t(cfg.slots) * cfg.H; ++sh)
        for (int v = 0; v < cfg.V; ++v)
            for (int k = 0; k < cfg.K; ++k) hkv[sh * head + size_t(k) * cfg.V + v] = s[sh * head + size_t(v) * cfg.K + k];
    c.tensors["recurrent_state"] = Tensor::of(DType::F32, {cfg.slots, cfg.H, cfg.K, cfg.V}, hkv);
    std::vector<int64_t> idx(in.state_indices.begin(), in.state_indices.end());
    c.tensors["state_indices"] = Tensor::of(DType::I64, {cfg.R, cfg.L}, idx);  // the step it ran, as torch saves it
    c.tensors["extra_debug"] = Tensor::of(DType::F32, {2}, std::vector<float>{1, 2});
    write_safetensors(t / "torch.safetensors", c);
    // the fixture with I64 index tensors too
    TensorFile fx = read_safetensors(t / "step.safetensors");
    fx.tensors["state_indices"] = Tensor::of(DType::I64, {cfg.R, cfg.L}, idx);
    std::vector<int64_t> na(in.num_accepted.begin(), in.num_accepted.end());
    fx.tensors["num_accepted"] = Tensor::of(DType::I64, {cfg.R}, na);
    write_safetensors(t / "step64.safetensors", fx);

    CliResult ok = run_cli({"verify", t / "step64.safetensors", t / "torch.safetensors", "--map",
                            "core_attn_out=core_out,recurrent_state=ssm_state", "--ssm-layout", "hkv"});
    INFO(ok.out);
    CHECK(ok.code == 0);
    CHECK(has(ok.out, "ignored (not outputs): extra_debug"));
    // without the layout the transposed state fails the exact and stage checks (K = V: the shape cannot tell)
    CliResult transposed = run_cli({"verify", t / "step.safetensors", t / "torch.safetensors", "--map",
                                    "core_attn_out=core_out,recurrent_state=ssm_state"});
    CHECK(transposed.code == 1);
    CHECK(has(transposed.out, "FAIL exact.ssm_state.untouched"));
    // without the map core_out is missing: bad input, named
    CliResult unmapped = run_cli({"verify", t / "step.safetensors", t / "torch.safetensors", "--report", t / "no.json"});
    CHECK(unmapped.code == 2);
    CHECK(has(unmapped.out, "no 'core_out'"));
    CHECK_FALSE(std::filesystem::exists(t / "no.json"));
}

TEST_CASE("bad input is exit 2, named, and writes nothing") {
    TempDir t("verify_bad");
    write_step(t);
    TensorFile ref = read_safetensors(t / "ref.safetensors");
    auto variant = [&](const std::string& name, auto edit) {
        TensorFile c = ref;
        edit(c);
        write_safetensors(t / (name + ".safetensors"), c);
        return t / (name + ".safetensors");
    };
    const std::string f32_core = variant("f32", [](TensorFile& c) {
        std::vector<float> v;
        for (bf16 b : c.get("core_out").as<bf16>()) v.push_back(b.to_float());
        c.tensors["core_out"] = Tensor::of(DType::F32, c.get("core_out").shape, v);
    });
    const std::string no_core = variant("nocore", [](TensorFile& c) { c.tensors.erase("core_out"); });
    const std::string short_proj = variant("shortproj", [](TensorFile& c) { c.tensors["proj"].shape[1] -= 1; c.tensors["proj"].bytes.resize(c.tensors["proj"].bytes.size() - 2 * c.tensors["proj"].shape[0]); });
    const std::string other_step = variant("otherstep", [&](TensorFile& c) {
        std::vector<int32_t> idx = verify::test::varied_step().state_indices;
        std::swap(idx[3], idx[9]);
        c.tensors["state_indices"] = Tensor::of(DType::I32, {4, 3}, idx);
    });
    struct Case {
        std::vector<std::string> args;
        const char* needle;
    };
    const std::string fx = t / "step.safetensors", good = t / "ref.safetensors";
    for (const Case& k : std::vector<Case>{
             {{fx, f32_core}, "tensor 'core_out' has dtype F32, expected BF16"},
             {{fx, no_core}, "the candidate has no 'core_out'"},
             {{fx, short_proj}, "tensor 'proj' has shape"},
             {{fx, other_step}, "state_indices"},
             {{fx, good, "--in-proj", "tensorcores"}, "--in-proj must be exact or tensor-cores"},
             {{fx, good, "--ssm-layout", "vhk"}, "--ssm-layout must be"},
             {{fx, good, "--map", "core_attn_out"}, "is not THEIRS=OURS"},
             {{fx, good, "--map", "a=b"}, "'b' is not an output name"},
             {{fx, good, "--map", "nothere=core_out"}, "the candidate has no tensor 'nothere'"},
             {{fx, good, "--envelope", t / "missing.json"}, "cannot open"},
             {{fx, good, "--report", fx}, "an input is never overwritten"},
             {{fx, good, "--envelope-orders", "1"}, "envelope orders must be in"},
             {{fx, good, "--report", t / "nodir/r.json"}, "no folder"},
             {{fx, t / "nothere.safetensors"}, "cannot open"},
         }) {
        std::vector<std::string> args = {"verify"};
        args.insert(args.end(), k.args.begin(), k.args.end());
        args.insert(args.end(), {"--junit", t / "j.xml"});
        if (std::find(args.begin(), args.end(), "--report") == args.end()) args.insert(args.end(), {"--report", t / "r.json"});
        CliResult r = run_cli(args);
        INFO(k.needle, "\n", r.out);
        CHECK(r.code == 2);
        CHECK(has(r.out, k.needle));
        CHECK_FALSE(std::filesystem::exists(t / "r.json"));
        CHECK_FALSE(std::filesystem::exists(t / "j.xml"));
    }
}

TEST_CASE("the emulator's output passes, against a measured envelope and against the envelope emulate wrote") {
    TempDir t("verify_emu");
    write_step(t);
    CliResult e = run_cli({"emulate", t / "step.safetensors", "--schedule", "pct", "--seed", "3", "--envelope-out",
                           t / "env.json", "-o", t / "emu.safetensors"});
    REQUIRE_MESSAGE(e.code == 0, e.out);
    CliResult m = run_cli({"verify", t / "step.safetensors", t / "emu.safetensors"});
    INFO(m.out);
    CHECK(m.code == 0);
    CliResult f = run_cli({"verify", t / "step.safetensors", t / "emu.safetensors", "--envelope", t / "env.json"});
    INFO(f.out);
    CHECK(f.code == 0);
    CHECK(has(f.out, "envelope read from"));
    // the plan-order reference, built from the order emulate wrote into its output
    const std::string order = read_safetensors(t / "emu.safetensors").metadata.at("emulate_plan_order");
    REQUIRE(run_cli({"reference", t / "step.safetensors", "--order", order, "-o", t / "plan.safetensors"}).code == 0);
    CliResult same = run_cli({"compare", t / "plan.safetensors", t / "emu.safetensors", "--exact",
                              "prefix_out,blocks,x,proj,g1,qkv,o,core_out,conv_state,ssm_state"});
    INFO(same.out);
    CHECK(same.code == 0);
    CHECK(run_cli({"verify", t / "step.safetensors", t / "plan.safetensors"}).code == 0);
    // another fixture's envelope is refused
    Config c = Config::preset("small");
    write_safetensors(t / "other.safetensors", make_fixture(c).to_file());
    CliResult other = run_cli({"verify", t / "other.safetensors", t / "emu.safetensors", "--envelope", t / "env.json"});
    CHECK(other.code == 2);
}
}
