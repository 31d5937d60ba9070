// Every CLI path on bad input: exit 2, a message naming the problem, and no output file.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>

#include "core/fixture_gen.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

std::vector<uint8_t> slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& p, const std::vector<uint8_t>& b) {
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

void check_rejected(const std::vector<std::string>& args, const std::string& needle, const std::string& out_file) {
    CliResult r = run_cli(args);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.out.find(needle) != std::string::npos, r.out);
    CHECK(r.out.find("error") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out_file));
    CHECK_FALSE(std::filesystem::exists(out_file + ".tmp"));
}

StepInputs small_step() {
    Config c = Config::preset("small");
    c.R = 2; c.L = 3; c.nb = 2;
    return make_fixture(c);
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("monokda reference: damaged files") {
    TempDir t("ref_files");
    const std::string good = t / "good.safetensors", bad = t / "bad.safetensors", out = t / "out.safetensors";
    write_safetensors(good, small_step().to_file());
    const std::vector<uint8_t> bytes = slurp(good);
    REQUIRE(run_cli({"reference", good, "-o", out}).code == 0);
    std::filesystem::remove(out);

    check_rejected({"reference", t / "missing.safetensors", "-o", out}, "cannot open", out);
    spit(bad, std::vector<uint8_t>(bytes.begin(), bytes.end() - 100));
    check_rejected({"reference", bad, "-o", out}, "truncated", out);
    spit(bad, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 5));
    check_rejected({"reference", bad, "-o", out}, "truncated", out);
    std::vector<uint8_t> b = bytes;
    b[0] = 0xff; b[1] = 0xff; b[2] = 0x7f; b[3] = 0; b[4] = 0;  // about 8 MB: past the end of the file
    spit(bad, b);
    check_rejected({"reference", bad, "-o", out}, "runs past the end of the file", out);
    b = bytes;
    b[6] = 1;  // 2^48 bytes
    spit(bad, b);
    check_rejected({"reference", bad, "-o", out}, "exceeds the 100 MiB limit", out);
    b = bytes;
    b[8] = 'x';  // the header's opening brace
    spit(bad, b);
    check_rejected({"reference", bad, "-o", out}, "not valid JSON", out);
}

TEST_CASE("monokda reference: wrong tensors, slots and num_accepted") {
    TempDir t("ref_tensors");
    const std::string bad = t / "bad.safetensors", out = t / "out.safetensors";
    const StepInputs in = small_step();
    struct Case { const char* what; std::function<void(TensorFile&)> spoil; const char* needle; };
    const Case cases[] = {
        {"wrong dtype", [](TensorFile& f) { f.tensors["A_log"].dtype = DType::I32; }, "tensor 'A_log' has dtype I32, expected F32"},
        {"wrong dtype bf16", [](TensorFile& f) { Tensor& p = f.tensors["o_norm_w"]; p.dtype = DType::F32; p.shape = {16}; },
         "tensor 'o_norm_w' has dtype F32, expected BF16"},
        {"wrong shape", [](TensorFile& f) { f.tensors["dt_bias"].shape = {2, 32}; }, "tensor 'dt_bias' has shape [2, 32], expected [64]"},
        {"layout mismatch", [](TensorFile& f) { f.metadata["conv_layout"] = "ds"; }, "tensor 'conv_state' has shape"},
        {"missing tensor", [](TensorFile& f) { f.tensors.erase("f_b_w"); }, "missing tensor 'f_b_w'"},
        {"missing metadata", [](TensorFile& f) { f.metadata.erase("lower_bound"); }, "missing key 'lower_bound'"},
        {"bad metadata", [](TensorFile& f) { f.metadata["nb"] = "9"; }, "config: nb"},
        {"duplicate slots",
         [](TensorFile& f) { f.tensors["state_indices"] = Tensor::of<int32_t>(DType::I32, {2, 3}, {1, 2, 3, 4, 2, 6}); },
         "slot 2 appears more than once"},
        {"slot out of range",
         [](TensorFile& f) { f.tensors["state_indices"] = Tensor::of<int32_t>(DType::I32, {2, 3}, {1, 2, 3, 4, 5, 99}); },
         "state_indices[1][2] = 99 is out of range"},
        {"num_accepted 0", [](TensorFile& f) { f.tensors["num_accepted"] = Tensor::of<int32_t>(DType::I32, {2}, {1, 0}); },
         "num_accepted[1] = 0 is outside 1..L = 1..3"},
        {"num_accepted > L", [](TensorFile& f) { f.tensors["num_accepted"] = Tensor::of<int32_t>(DType::I32, {2}, {4, 1}); },
         "num_accepted[0] = 4 is outside 1..L = 1..3"},
    };
    for (const Case& k : cases) {
        CAPTURE(k.what);
        TensorFile f = in.to_file();
        k.spoil(f);
        write_safetensors(bad, f);
        check_rejected({"reference", bad, "-o", out}, k.needle, out);
    }
}

TEST_CASE("monokda reference: bad options") {
    TempDir t("ref_opts");
    const std::string fx = t / "f.safetensors", out = t / "out.safetensors";
    write_safetensors(fx, small_step().to_file());
    check_rejected({"reference", fx, "-o", out, "--order", "split:0"}, "--order", out);
    check_rejected({"reference", fx, "-o", out, "--order", "random"}, "--order must be", out);
    check_rejected({"reference", fx, "-o", out, "--frobnicate"}, "frobnicate", out);
    check_rejected({"reference", fx}, "output", out);
    check_rejected({"reference", fx, "-o", t / "no/such/dir/out.safetensors"}, "cannot write", t / "no/such/dir/out.safetensors");
}

TEST_CASE("monokda fixture: bad options") {
    TempDir t("fixture_opts");
    const std::string out = t / "f.safetensors";
    check_rejected({"fixture", "--config", "k4", "-o", out}, "unknown config preset 'k4'", out);
    check_rejected({"fixture", "--layout", "dd", "-o", out}, "conv_layout", out);
    check_rejected({"fixture", "--nb", "8", "--block-write", "-o", out}, "nb must be <= 7", out);
    check_rejected({"fixture", "--nb", "0", "-o", out}, "config: nb", out);
    check_rejected({"fixture", "--R", "0", "-o", out}, "config: R", out);
    check_rejected({"fixture", "--L", "0", "-o", out}, "config: L", out);
    check_rejected({"fixture", "--R", "abc", "-o", out}, "R", out);
    check_rejected({"fixture", "--R", "2", "--null-requests", "3", "-o", out}, "null requests", out);
    check_rejected({"fixture", "--R", "2", "--null-requests", "1", "--partial-nulls", "2", "-o", out},
                   "partial null requests must be in 0..R - null requests = 0..1 (got 2)", out);
    check_rejected({"fixture", "--L", "1", "--partial-nulls", "1", "-o", out}, "partial null columns need L >= 2", out);
    check_rejected({"fixture", "--scale", "huge", "-o", out},
                   "unknown scale profile 'huge' (known: default, attnres-large, prefix-large, norm-tiny, gate-low)", out);
    check_rejected({"fixture", "--scale", "gate-low", "--from-hf", t / "nowhere", "-o", out},
                   "--scale gate-low sets weights of its own: it does not go with --from-hf", out);
    check_rejected({"fixture", "--tp-size", "4", "-o", out}, "--tp-size needs --from-hf", out);
    check_rejected({"fixture", "--from-hf", t / "nowhere", "-o", out}, "not a directory", out);
    check_rejected({"fixture"}, "output", out);
}

TEST_CASE("monokda compare: bad input is exit 2, a failed check exit 1") {
    TempDir t("compare");
    const std::string a = t / "a.safetensors", b = t / "b.safetensors", odd = t / "odd.safetensors";
    write_safetensors(a, small_step().to_file());
    TensorFile f = small_step().to_file();
    f.tensors["A_log"] = Tensor::of<float>(DType::F32, {2}, {0.5f, 0.25f});  // a different value
    write_safetensors(b, f);
    f.tensors["A_log"] = Tensor::of<float>(DType::F32, {1, 2}, {0.5f, 0.25f});
    write_safetensors(odd, f);

    CliResult r = run_cli({"compare", a, a, "--max-ulp", "0", "--exact", "A_log,prefix"});
    CHECK(r.code == 0);
    CHECK(r.out.find("checks passed") != std::string::npos);
    r = run_cli({"compare", a, b, "--exact", "A_log"});
    CHECK(r.code == 1);
    CHECK(r.out.find("FAIL A_log: not bit-identical") != std::string::npos);
    r = run_cli({"compare", a, b, "--rel-l2", "1e-9"});
    CHECK(r.code == 1);
    r = run_cli({"compare", a, b});  // no threshold given: a report only, and it says so
    CHECK(r.code == 0);
    CHECK(r.out.find("no checks requested") != std::string::npos);
    CHECK(r.out.find("checks passed") == std::string::npos);

    for (const auto& args : std::vector<std::vector<std::string>>{
             {"compare", a, odd}, {"compare", a, t / "missing.safetensors"}, {"compare", a, b, "--exact", "nothing"},
             {"compare", a}, {"compare", a, b, "--max-ulp", "many"}}) {
        CAPTURE(args.back());
        r = run_cli(args);
        CHECK(r.code == 2);
        CHECK(r.out.find("error") != std::string::npos);
    }
    CHECK(run_cli({"compare", a, odd}).out.find("tensor 'A_log' has shape") != std::string::npos);
}

TEST_CASE("an output is never an input; only regular files are read") {
    TempDir t("same_file");
    const std::string fx = t / "f.safetensors";
    write_safetensors(fx, small_step().to_file());
    const std::vector<uint8_t> before = slurp(fx);
    std::filesystem::create_hard_link(fx, t / "hard.safetensors");
    std::filesystem::create_symlink(fx, t / "soft.safetensors");
    for (const std::string& o : {fx, t / "hard.safetensors", t / "soft.safetensors", t / "." + std::string("/f.safetensors")}) {
        CAPTURE(o);
        CliResult r = run_cli({"reference", fx, "-o", o});
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find("is the same file as FIXTURE") != std::string::npos, r.out);
    }
    CHECK(slurp(fx) == before);
    // a folder or a device as input, or as output
    CliResult r = run_cli({"reference", t.path.string(), "-o", t / "out.safetensors"});
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.out.find("is a directory") != std::string::npos, r.out);
    r = run_cli({"compare", fx, "/dev/zero"});
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.out.find("is not a regular file") != std::string::npos, r.out);
    check_rejected({"reference", fx, "-o", t.path.string()}, "is a directory", t / "none");
    check_rejected({"fixture", "-o", "/dev/null"}, "not a regular file", t / "none");
}

TEST_CASE("numbers are spelt plainly, thresholds are numbers, a bad count names its option") {
    TempDir t("numbers");
    const std::string out = t / "f.safetensors", a = t / "a.safetensors";
    check_rejected({"fixture", "--seed", "-1", "-o", out}, "--seed must be a whole number >= 0 (got '-1')", out);
    check_rejected({"fixture", "--R", "-1", "-o", out}, "config: R must be in", out);
    check_rejected({"fixture", "--R", "-1", "--null-requests", "1", "-o", out}, "config: R must be in", out);
    check_rejected({"fixture", "--L", "-3", "-o", out}, "config: L must be in", out);
    write_safetensors(a, small_step().to_file());
    struct Threshold { std::string option, value; };
    for (const Threshold& k : {Threshold{"--rel-l2", "nan"}, Threshold{"--rel-l2", "-1"}, Threshold{"--rel-l2", "inf"},
                               Threshold{"--max-ulp", "-1"}}) {
        CAPTURE(k.option);
        CAPTURE(k.value);
        CliResult r = run_cli({"compare", a, a, k.option, k.value});
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find(k.option + " must be") != std::string::npos, r.out);
    }
    // metadata integers as another tool might misspell them
    for (const std::string v : {" 256", "+256"}) {
        TensorFile f = small_step().to_file();
        f.metadata["D"] = v;
        write_safetensors(t / "bad.safetensors", f);
        check_rejected({"reference", t / "bad.safetensors", "-o", out}, "'D' is not an integer", out);
    }
}

TEST_CASE("unknown commands and --help") {
    CliResult r = run_cli({"frobnicate"});
    CHECK(r.code == 2);
    CHECK(r.out.find("unknown command 'frobnicate'") != std::string::npos);
    CHECK(run_cli({}).code == 2);
    for (const char* cmd : {"fixture", "reference", "compare"}) {
        CAPTURE(cmd);
        r = run_cli({cmd, "--help"});
        CHECK(r.code == 0);
        CHECK(r.out.find("usage: monokda " + std::string(cmd)) != std::string::npos);
    }
    CHECK(run_cli({"--help"}).code == 0);
}
}
