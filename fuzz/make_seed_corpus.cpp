// Writes the libFuzzer seed corpus: a few valid tiny fixtures (valid-*) and malformed variants
// (bad-*), each named for the one thing it breaks. The committed fuzz/corpus/ is this program's
// output; tests/fuzz checks every valid seed is accepted and every bad one rejected with BadInput.
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/fixture_gen.hpp"
#include "core/safetensors.hpp"

using namespace monokda;
using json = nlohmann::json;
using Bytes = std::vector<uint8_t>;

namespace {

Config tiny(int R, int L, int nb, int W, int pad, ConvLayout layout, bool block_write, uint64_t seed) {
    Config c;
    c.D = 8; c.H = 1; c.K = 4; c.V = 4; c.F = 2; c.W = W;
    c.C = 3 * c.E();
    c.N = c.min_N() + pad;
    c.R = R; c.L = L; c.nb = nb; c.block_write = block_write; c.conv_layout = layout; c.seed = seed;
    return c;
}

uint64_t header_length(const Bytes& file) {
    uint64_t hl = 0;
    for (int i = 7; i >= 0; --i) hl = (hl << 8) | file[size_t(i)];
    return hl;
}

// `header` in place of the file's header, the file's data after it
Bytes with_header(const std::string& header, const Bytes& file) {
    const uint64_t hl = header_length(file);
    Bytes out(8);
    for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(uint64_t(header.size()) >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), file.begin() + 8 + long(hl), file.end());
    return out;
}

Bytes header_and_data(const Bytes& file, const std::function<void(json&)>& edit) {
    const uint64_t hl = header_length(file);
    json h = json::parse(file.begin() + 8, file.begin() + 8 + long(hl));
    edit(h);
    return with_header(h.dump(), file);
}

void put(const std::string& dir, const std::string& name, const Bytes& b) {
    std::ofstream f(dir + "/" + name + ".safetensors", std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    if (!f) { std::fprintf(stderr, "cannot write %s/%s\n", dir.c_str(), name.c_str()); std::exit(2); }
}

// the valid seeds; returns the base fixture the bad ones break
StepInputs valid_seeds(const std::string& dir) {
    FixtureOptions one_null;
    one_null.null_requests = 1;
    one_null.extra_slots = 1;
    StepInputs base = make_fixture(tiny(2, 2, 1, 4, 0, ConvLayout::sd, false, 11));
    put(dir, "valid-sd-R2-L2", serialize_safetensors(base.to_file()));
    put(dir, "valid-ds-blockwrite-null",
        serialize_safetensors(make_fixture(tiny(2, 3, 2, 4, 13, ConvLayout::ds, true, 12), one_null).to_file()));
    put(dir, "valid-W2-decode", serialize_safetensors(make_fixture(tiny(1, 1, 1, 2, 5, ConvLayout::sd, false, 13)).to_file()));
    put(dir, "valid-nb8-W5", serialize_safetensors(make_fixture(tiny(1, 2, 8, 5, 0, ConvLayout::ds, false, 14)).to_file()));

    return base;
}

// bad-*: the container (lengths, header, offsets, duplicate keys)
void bad_container(const std::string& dir, const Bytes& good) {
    auto bad = [&](const std::string& name, const Bytes& b) { put(dir, "bad-" + name, b); };
    bad("empty", {});
    bad("short-length", Bytes(good.begin(), good.begin() + 5));
    {
        Bytes b = good;
        b[5] = 0x01;  // header length beyond the 100 MiB limit
        bad("length-huge", b);
        Bytes c = good;
        c[0] = 0xff; c[1] = 0xff; c[2] = 0x0f;  // past the end of the file but under the limit
        bad("length-past-end", c);
    }
    bad("truncated-data", Bytes(good.begin(), good.end() - 40));
    {
        // header lengths at the file's end: the header runs into the data (not JSON), one byte past
        // the end, and a header that ends the file exactly (no data section left for the tensors)
        auto with_length = [&](uint64_t hl) {
            Bytes b = good;
            for (int i = 0; i < 8; ++i) b[size_t(i)] = uint8_t(hl >> (8 * i));
            return b;
        };
        bad("length-to-end", with_length(good.size() - 8));
        bad("length-one-past-end", with_length(good.size() - 7));
        const uint64_t hl = header_length(good);
        bad("length-at-end", Bytes(good.begin(), good.begin() + 8 + long(hl)));
        bad("length-at-end-less-one", Bytes(good.begin(), good.begin() + 8 + long(hl) + 1));
    }
    {
        Bytes b = good;
        b[8] = '[';
        bad("header-not-json", b);
    }
    bad("header-array", header_and_data(good, [](json& h) { h = json::array({1, 2}); }));
    bad("dtype-f16", header_and_data(good, [](json& h) { h["A_log"]["dtype"] = "F16"; }));
    bad("dim-negative", header_and_data(good, [](json& h) { h["A_log"]["shape"] = {-1}; }));
    bad("dim-huge", header_and_data(good, [](json& h) { h["blocks"]["shape"] = {1ull << 40, 1ull << 40}; }));
    bad("offsets-outside", header_and_data(good, [](json& h) { h["ssm_state"]["data_offsets"][1] = 1u << 30; }));
    bad("offsets-reversed", header_and_data(good, [](json& h) {
        auto o = h["ssm_state"]["data_offsets"];
        h["ssm_state"]["data_offsets"] = {o[1], o[0]};
    }));
    bad("offsets-overlap", header_and_data(good, [](json& h) { h["A_log"]["data_offsets"] = h["conv_w"]["data_offsets"]; h["A_log"]["shape"] = h["conv_w"]["shape"]; }));
    bad("bytes-mismatch", header_and_data(good, [](json& h) { h["dt_bias"]["shape"] = {3}; }));
    bad("metadata-number", header_and_data(good, [](json& h) { h["__metadata__"]["D"] = 8; }));
    {
        // duplicate keys: nlohmann's writer cannot emit them, so they are spliced into the header text
        auto spliced = [&](const std::string& find, const std::string& insert) {
            const uint64_t hl = header_length(good);
            std::string h(good.begin() + 8, good.begin() + 8 + long(hl));
            h.insert(h.find(find), insert);
            return with_header(h, good);
        };
        bad("duplicate-tensor", spliced("\"A_log\"", "\"A_log\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"));
        bad("duplicate-md-D", spliced("\"D\":", "\"D\":\"16\","));
        bad("deep-nesting", spliced("\"A_log\"", "\"x\":{\"y\":[[[[0]]]]},"));
    }

}

// bad-*: the config in the metadata
void bad_config(const std::string& dir, const StepInputs& base) {
    auto bad = [&](const std::string& name, const Bytes& b) { put(dir, "bad-" + name, b); };
    auto md = [&](const std::string& name, const std::string& key, const std::string& value) {
        TensorFile f = base.to_file();
        if (value.empty()) f.metadata.erase(key);
        else f.metadata[key] = value;
        bad(name, serialize_safetensors(f));
    };
    md("md-missing-D", "D", "");
    md("md-D-not-int", "D", "8x");
    md("md-D-overflow", "D", "99999999999999999999");
    md("md-D-blank", "D", " 8");
    md("md-D-plus", "D", "+8");
    md("md-V-ne-K", "V", "5");
    md("md-N-too-small", "N", "18");
    md("md-nb-9", "nb", "9");
    md("md-L-zero", "L", "0");
    md("md-layout", "conv_layout", "dsd");
    md("md-block-write", "block_write", "yes");
    md("md-eps-nan", "eps", "nan");
    md("md-eps-range", "eps", "1e999");
    md("md-lb-inf", "lower_bound", "-inf");
    {
        StepInputs b = base;
        b.cfg.nb = 8; b.cfg.block_write = true;  // a block-write layer writes row nb, so nb <= 7
        bad("md-nb8-block-write", serialize_safetensors(b.to_file()));
    }

}

// bad-*: the step tensors
void bad_step(const std::string& dir, const StepInputs& base) {
    auto bad = [&](const std::string& name, const Bytes& b) { put(dir, "bad-" + name, b); };
    auto step = [&](const std::string& name, const std::function<void(StepInputs&)>& edit) {
        StepInputs b = base;
        edit(b);
        bad(name, serialize_safetensors(b.to_file()));
    };
    step("slot-duplicate", [](StepInputs& b) { b.state_indices[1] = b.state_indices[0]; });
    step("slot-duplicate-across-requests", [](StepInputs& b) { b.state_indices[3] = b.state_indices[0]; });
    step("slot-out-of-range", [](StepInputs& b) { b.state_indices[2] = b.cfg.slots; });
    step("accepted-zero", [](StepInputs& b) { b.num_accepted[0] = 0; });
    step("accepted-above-L", [](StepInputs& b) { b.num_accepted[1] = b.cfg.L + 1; });
    {
        TensorFile f = base.to_file();
        Tensor& t = f.tensors["conv_w"];
        t.dtype = DType::BF16;
        t.bytes.resize(t.bytes.size() / 2);
        bad("conv_w-bf16", serialize_safetensors(f));
    }
    {
        TensorFile f = base.to_file();
        Tensor& t = f.tensors["blocks"];
        t.shape[1] = 7;
        t.bytes.resize(size_t(t.numel()) * 2);
        bad("blocks-7-rows", serialize_safetensors(f));
    }
    {
        TensorFile f = base.to_file();
        f.tensors.erase("ssm_state");
        bad("missing-ssm_state", serialize_safetensors(f));
    }
    {
        TensorFile f = base.to_file();
        f.metadata["slots"] = std::to_string(base.cfg.slots + 1);  // conv_state / ssm_state no longer match
        bad("slots-mismatch", serialize_safetensors(f));
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) { std::fprintf(stderr, "usage: %s OUTDIR\n", argv[0]); return 2; }
    const std::string dir = argv[1];
    const StepInputs base = valid_seeds(dir);
    bad_container(dir, serialize_safetensors(base.to_file()));
    bad_config(dir, base);
    bad_step(dir, base);
    std::printf("wrote the seed corpus to %s\n", dir.c_str());
    return 0;
}
