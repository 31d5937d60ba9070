// The CLI end to end: fixture -> reference -> compare, the output file's contents, and a fixture
// written by another tool (hand-laid-out safetensors bytes, SPEC §2 metadata spelled its own way).
#include <doctest/doctest.h>

#include <fstream>

#include "core/fixture_gen.hpp"
#include "core/step.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;

namespace {

std::string shape_json(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
    return out + "]";
}

// Lays the file out by hand, as another writer might: tensors in reverse name order, no padding,
// metadata after the tensors, numbers spelled "1e-05" and "-5", an extra metadata key.
void write_foreign(const std::string& path, const TensorFile& f) {
    std::string header = "{";
    std::vector<uint8_t> data;
    for (auto it = f.tensors.rbegin(); it != f.tensors.rend(); ++it) {
        const Tensor& t = it->second;
        const size_t begin = data.size();
        data.insert(data.end(), t.bytes.begin(), t.bytes.end());
        header += "\"" + it->first + "\":{\"dtype\":\"" + to_string(t.dtype) + "\",\"shape\":" + shape_json(t.shape) +
                  ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]},";
    }
    std::map<std::string, std::string> md = f.metadata;
    md["eps"] = "1e-05";
    md["l2_eps"] = "1e-06";
    md["lower_bound"] = "-5";
    md["producer"] = "another tool";
    header += "\"__metadata__\":{";
    bool first = true;
    for (auto it = md.rbegin(); it != md.rend(); ++it, first = false)
        header += std::string(first ? "" : ",") + "\"" + it->first + "\":\"" + it->second + "\"";
    header += "}}";
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(char(n >> (8 * i)));
    out << header;
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("fixture -> reference -> compare; the output holds every SPEC §2 name and the inputs' metadata") {
    TempDir t("workflow");
    const std::string fx = t / "f.safetensors", o32 = t / "o32.safetensors", o64 = t / "o64.safetensors";
    CliResult r = run_cli({"fixture", "--config", "small", "--R", "3", "--L", "2", "--nb", "5", "--block-write",
                           "--layout", "ds", "--null-requests", "1", "--seed", "4", "-o", fx});
    REQUIRE(r.code == 0);
    const TensorFile in = read_safetensors(fx);
    CHECK(in.metadata.at("conv_layout") == "ds");
    CHECK(in.metadata.at("block_write") == "1");
    CHECK(in.metadata.at("seed") == "4");
    REQUIRE(in.get("conv_state").shape.size() == 3);
    CHECK(in.get("conv_state").shape[1] == 192);  // ds: [slots, C, W-2+L]
    REQUIRE(run_cli({"reference", fx, "-o", o32}).code == 0);
    REQUIRE(run_cli({"reference", fx, "-o", o64, "--f64", "--order", "split:4"}).code == 0);
    const TensorFile a = read_safetensors(o32), b = read_safetensors(o64);
    for (const std::string& name : output_names()) {
        CAPTURE(name);
        CHECK(a.has(name));
        CHECK(b.has(name));
    }
    for (const auto& [k, v] : in.metadata) CHECK(a.metadata.at(k) == v);
    CHECK(a.metadata.at("reference_precision") == "f32");
    CHECK(a.metadata.at("reference_order") == "sequential");
    CHECK(b.metadata.at("reference_precision") == "f64");
    CHECK(b.metadata.at("reference_order") == "split:4");
    CHECK(a.get("ssm_state").dtype == DType::F32);
    CHECK(b.get("ssm_state").dtype == DType::F64);
    CHECK(a.get("blocks").shape == std::vector<int64_t>{6, 8, 256});
    // the f64 oracle agrees with the f32 reference on the exact tensors; its f64 state is not bit-identical
    CHECK(run_cli({"compare", o32, o64, "--exact", "prefix_out,blocks"}).code == 0);
    CHECK(run_cli({"compare", o32, o64, "--rel-l2", "0"}).code == 1);  // the f64 state differs
    // the same fixture gives the same bytes every time
    REQUIRE(run_cli({"reference", fx, "-o", t / "again.safetensors"}).code == 0);
    const TensorFile c = read_safetensors(t / "again.safetensors");
    for (const auto& [name, tensor] : a.tensors) CHECK(c.get(name).bytes == tensor.bytes);
}

TEST_CASE("monokda reference accepts a fixture written by another tool") {
    TempDir t("foreign");
    Config cfg = Config::preset("small");
    cfg.R = 2; cfg.L = 3; cfg.nb = 3; cfg.block_write = true; cfg.conv_layout = ConvLayout::ds; cfg.seed = 6;
    FixtureOptions fo;
    fo.null_requests = 1;
    const TensorFile ours = make_fixture(cfg, fo).to_file();
    const std::string mine = t / "ours.safetensors", theirs = t / "theirs.safetensors";
    write_safetensors(mine, ours);
    write_foreign(theirs, ours);
    // the hand-written file really is laid out differently
    CHECK(read_safetensors(theirs).metadata.at("eps") == "1e-05");
    REQUIRE(run_cli({"reference", mine, "-o", t / "a.safetensors"}).code == 0);
    CliResult r = run_cli({"reference", theirs, "-o", t / "b.safetensors"});
    REQUIRE_MESSAGE(r.code == 0, r.out);
    const TensorFile a = read_safetensors(t / "a.safetensors"), b = read_safetensors(t / "b.safetensors");
    for (const std::string& name : output_names()) {
        CAPTURE(name);
        CHECK(a.get(name).bytes == b.get(name).bytes);
    }
    CHECK(b.metadata.at("eps") == "1e-05");  // metadata copied verbatim
    CHECK(b.metadata.at("producer") == "another tool");
}
}
