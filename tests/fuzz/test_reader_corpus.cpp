// The committed libFuzzer seed corpus, run through exactly what the fuzzer runs: valid seeds are
// accepted, each malformed seed is rejected with BadInput naming its problem, and every prefix of a
// valid seed (a truncated file) is rejected without a crash. The malformed seeds through the command
// line too: exit 2, the same message, nothing written.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "fuzz/fixture_reader_check.hpp"
#include "tests/cli/cli_run.hpp"

using monokda::fuzz::check_fixture_bytes;
using monokda::fuzz::ReaderVerdict;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::map<std::string, std::vector<uint8_t>> corpus() {
    std::map<std::string, std::vector<uint8_t>> files;
    for (const auto& e : fs::directory_iterator(fs::path(MONOKDA_SOURCE_DIR) / "fuzz" / "corpus"))
        files[e.path().filename().string()] = slurp(e.path());
    return files;
}

// The part of the message that names each malformed seed's problem (by the seed's name without
// its extension).
const std::map<std::string, std::string>& expected_messages() {
    static const std::map<std::string, std::string> why = {
        {"bad-empty", "truncated"}, {"bad-short-length", "truncated"}, {"bad-length-huge", "100 MiB"},
        {"bad-length-past-end", "past the end"}, {"bad-length-to-end", "outside the 0-byte data section"},
        {"bad-length-one-past-end", "past the end"}, {"bad-length-at-end", "outside the 0-byte data section"},
        {"bad-length-at-end-less-one", "outside the 1-byte data section"},
        {"bad-duplicate-tensor", "duplicate key 'A_log'"}, {"bad-duplicate-md-D", "duplicate key 'D' in __metadata__"},
        {"bad-deep-nesting", "nests deeper"}, {"bad-md-D-blank", "'D' is not an integer"},
        {"bad-md-D-plus", "'D' is not an integer"}, {"bad-truncated-data", "outside"}, {"bad-header-not-json", "JSON"},
        {"bad-header-array", "not a JSON object"}, {"bad-dtype-f16", "unsupported dtype"},
        {"bad-dim-negative", "negative"}, {"bad-dim-huge", "absurdly large"}, {"bad-offsets-outside", "outside"},
        {"bad-offsets-reversed", "outside"}, {"bad-offsets-overlap", "overlap"}, {"bad-bytes-mismatch", "needs"},
        {"bad-metadata-number", "not a string"}, {"bad-md-missing-D", "missing key 'D'"},
        {"bad-md-D-not-int", "'D' is not an integer"}, {"bad-md-D-overflow", "'D' is not an integer"},
        {"bad-md-V-ne-K", "V must equal K"}, {"bad-md-N-too-small", "N must hold"}, {"bad-md-nb-9", "nb must be in"},
        {"bad-md-L-zero", "L must be in"}, {"bad-md-layout", "conv_layout"}, {"bad-md-block-write", "block_write"},
        {"bad-md-eps-nan", "eps"}, {"bad-md-eps-range", "'eps' is not a number"}, {"bad-md-lb-inf", "lower_bound"},
        {"bad-md-nb8-block-write", "block-write"}, {"bad-slot-duplicate", "more than once"},
        {"bad-slot-duplicate-across-requests", "more than once"}, {"bad-slot-out-of-range", "out of range"},
        {"bad-accepted-zero", "num_accepted"}, {"bad-accepted-above-L", "num_accepted"},
        {"bad-conv_w-bf16", "conv_w' has dtype BF16"}, {"bad-blocks-7-rows", "blocks' has shape"},
        {"bad-missing-ssm_state", "missing tensor 'ssm_state'"}, {"bad-slots-mismatch", "has shape"},
    };
    return why;
}

}  // namespace

TEST_SUITE("fuzz") {
TEST_CASE("the seed corpus is small and has valid and malformed files") {
    size_t total = 0, valid = 0, bad = 0;
    for (const auto& [name, bytes] : corpus()) {
        total += bytes.size();
        valid += name.rfind("valid-", 0) == 0;
        bad += name.rfind("bad-", 0) == 0;
    }
    CHECK(valid >= 4);
    CHECK(bad >= 30);
    CHECK(total < (1u << 20));
}

TEST_CASE("the corpus holds header lengths at and around the file's end") {
    // a header length that reaches exactly the end, one byte short of it, one past it, and a file cut
    // right after its header: each once read past the buffer
    const auto files = corpus();
    for (const char* name : {"bad-length-to-end", "bad-length-one-past-end", "bad-length-at-end", "bad-length-at-end-less-one"}) {
        CAPTURE(name);
        REQUIRE(files.count(std::string(name) + ".safetensors") == 1);
        const std::vector<uint8_t>& b = files.at(std::string(name) + ".safetensors");
        REQUIRE(b.size() >= 8);
        uint64_t hlen = 0;
        for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | b[size_t(i)];
        CHECK(hlen + 8 >= b.size() - 1);  // the header runs to within a byte of the end, or past it
        CHECK(hlen + 8 <= b.size() + 1);
    }
}

TEST_CASE("valid seeds are accepted, malformed seeds rejected with a message") {
    const std::map<std::string, std::string>& why = expected_messages();
    for (const auto& entry : corpus()) {
        const std::string& name = entry.first;
        const auto& bytes = entry.second;
        const ReaderVerdict v = check_fixture_bytes(bytes.data(), bytes.size());
        INFO(name << ": " << v.message);
        if (name.rfind("valid-", 0) == 0) {
            CHECK(v.kind == ReaderVerdict::ACCEPTED);
            continue;
        }
        CHECK(v.kind == ReaderVerdict::REJECTED);
        const std::string stem = name.substr(0, name.find('.'));
        REQUIRE_MESSAGE(why.count(stem), "no expected message for " << stem);
        CHECK(v.message.find(why.at(stem)) != std::string::npos);
    }
}

TEST_CASE("every truncation and single-byte corruption of a valid seed is handled") {
    const auto files = corpus();
    const std::vector<uint8_t>& good = files.at("valid-sd-R2-L2.safetensors");
    for (size_t n = 0; n < good.size(); n += 23) {
        const ReaderVerdict v = check_fixture_bytes(good.data(), n);
        INFO("prefix of " << n << " bytes");
        CHECK(v.kind == ReaderVerdict::REJECTED);
    }
    std::vector<uint8_t> b = good;
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < b.size(); i += 11) {
        const uint8_t keep = b[i];
        b[i] = uint8_t(keep ^ 0x5a);
        (check_fixture_bytes(b.data(), b.size()).kind == ReaderVerdict::ACCEPTED ? accepted : rejected)++;
        b[i] = keep;
    }
    // corrupting data bytes may still give a valid step; corrupting the header must not
    CHECK(rejected > 0);
    CHECK(accepted > 0);
}

TEST_CASE("every malformed seed through monokda reference: exit 2, its message, nothing written") {
    using monokda::test::TempDir;
    const std::map<std::string, std::string>& why = expected_messages();
    TempDir t("corpus");
    const std::string out = t / "out.safetensors";
    size_t runs = 0;
    for (const auto& e : fs::directory_iterator(fs::path(MONOKDA_SOURCE_DIR) / "fuzz" / "corpus")) {
        const std::string name = e.path().filename().string();
        if (name.rfind("bad-", 0) != 0) continue;
        const std::string stem = name.substr(0, name.find('.'));
        REQUIRE_MESSAGE(why.count(stem), "no expected message for " << stem);
        const monokda::test::CliResult r = monokda::test::run_cli({"reference", e.path().string(), "-o", out});
        INFO(name << ": " << r.out);
        CHECK(r.code == 2);
        CHECK(r.out.find("error") != std::string::npos);
        CHECK(r.out.find(why.at(stem)) != std::string::npos);
        CHECK(fs::is_empty(t.path));  // no output, no temporary left
        ++runs;
    }
    CHECK(runs == why.size());
}
}
