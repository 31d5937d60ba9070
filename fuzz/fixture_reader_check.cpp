// The libFuzzer target's body over the fixture reader (fuzz/fixture_reader_check.hpp), shared with
// the unit tests that run the seed corpus.
#include "fuzz/fixture_reader_check.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "core/step.hpp"
#include "reference/reference.hpp"

namespace monokda::fuzz {

namespace {

[[noreturn]] void broken(const std::string& what) {
    std::fprintf(stderr, "fixture reader check: %s\n", what.c_str());
    std::abort();
}

void same_files(const TensorFile& a, const TensorFile& b, const char* what) {
    if (a.metadata != b.metadata) broken(std::string(what) + ": metadata changed in a write/read round trip");
    if (a.tensors.size() != b.tensors.size()) broken(std::string(what) + ": tensor count changed in a round trip");
    for (const auto& [name, t] : a.tensors) {
        if (!b.has(name)) broken(std::string(what) + ": tensor '" + name + "' lost in a round trip");
        const Tensor& u = b.get(name);
        if (t.dtype != u.dtype || t.shape != u.shape || t.bytes != u.bytes)
            broken(std::string(what) + ": tensor '" + name + "' changed in a round trip");
    }
}

// Small enough that the reference runs in microseconds; the point is UB on odd-but-valid shapes.
bool tiny(const Config& c) {
    const int64_t work = int64_t(c.S()) * c.N * c.D + int64_t(c.slots) * c.H * c.V * c.K +
                         int64_t(c.S()) * 8 * c.D;
    return work <= 200000;
}

}  // namespace

ReaderVerdict check_fixture_bytes(const uint8_t* data, size_t size) {
    ReaderVerdict v;
    v.stage = "safetensors";
    try {
        TensorFile f = parse_safetensors(data, size, "fuzz input");
        std::vector<uint8_t> again = serialize_safetensors(f);
        same_files(f, parse_safetensors(again.data(), again.size(), "rewritten"), "safetensors");

        v.stage = "step";
        StepInputs in = StepInputs::from_file(f);
        TensorFile g = in.to_file();
        std::vector<uint8_t> bytes = serialize_safetensors(g);
        TensorFile h = parse_safetensors(bytes.data(), bytes.size(), "rewritten step");
        same_files(g, h, "step");
        StepInputs back = StepInputs::from_file(h);
        same_files(g, back.to_file(), "step re-read");
        if (tiny(in.cfg)) {
            StepOutputs<float> out = ref::run<float>(in);
            if (out.core_out.size() != size_t(in.cfg.S()) * in.cfg.E()) broken("reference: core_out has the wrong size");
        }
        v.kind = ReaderVerdict::ACCEPTED;
        v.stage.clear();
    } catch (const BadInput& e) {
        v.kind = ReaderVerdict::REJECTED;
        v.message = e.what();
    } catch (const std::exception& e) {
        broken(std::string("not a BadInput: ") + e.what());
    }
    return v;
}

}  // namespace monokda::fuzz
