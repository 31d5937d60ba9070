// safetensors I/O: round trips, and malformed files rejected with a message naming the problem.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "core/version.hpp"
#include "tests/bad_input_message.hpp"

using namespace monokda;

namespace {

std::vector<uint8_t> file_bytes(const std::string& header, const std::vector<uint8_t>& data) {
    std::vector<uint8_t> out(8);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

// The BadInput message of parsing bytes, or "" when it parses.
std::string parse_error(const std::vector<uint8_t>& bytes) {
    return test::bad_input_message([&] { parse_safetensors(bytes.data(), bytes.size(), "t.safetensors"); });
}

bool mentions(const std::string& msg, const std::string& what) { return msg.find(what) != std::string::npos; }

std::string tmp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("monokda_test_st_" + name)).string();
}

TensorFile sample() {
    TensorFile f;
    f.metadata = {{"D", "4"}, {"eps", "1e-05"}, {"note", "ünïcode ok"}};
    f.tensors["b"] = Tensor::of<bf16>(DType::BF16, {2, 3}, {bf16::from_bits(1), bf16::from_bits(0x7f80), bf16::from_bits(0xffc1),
                                                          bf16::from_bits(0x8000), bf16::from_bits(0x3f80), bf16::from_bits(2)});
    f.tensors["f"] = Tensor::of<float>(DType::F32, {3}, {1.5f, -0.0f, 3e38f});
    f.tensors["d"] = Tensor::of<double>(DType::F64, {1, 1, 2}, {1e-300, -2.5});
    f.tensors["i"] = Tensor::of<int32_t>(DType::I32, {4}, {-1, 0, 2147483647, -2147483647 - 1});
    f.tensors["empty"] = Tensor::of<float>(DType::F32, {0, 5}, {});
    f.tensors["scalar"] = Tensor::of<int32_t>(DType::I32, {}, {7});
    return f;
}

void check_same(const TensorFile& a, const TensorFile& b) {
    CHECK(a.metadata == b.metadata);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (const auto& entry : a.tensors) {
        const std::string& name = entry.first;
        const Tensor& t = entry.second;
        CAPTURE(name);
        REQUIRE(b.has(name));
        const Tensor& u = b.get(name);
        CHECK(u.dtype == t.dtype);
        CHECK(u.shape == t.shape);
        CHECK(u.bytes == t.bytes);
    }
}

}  // namespace

TEST_SUITE("core") {

TEST_CASE("safetensors round trip: every dtype, metadata, empty and 0-d tensors, in memory and on disk") {
    TensorFile f = sample();
    std::vector<uint8_t> bytes = serialize_safetensors(f);
    check_same(f, parse_safetensors(bytes.data(), bytes.size()));
    // the data section starts 8-byte aligned
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | bytes[size_t(i)];
    CHECK((8 + hlen) % 8 == 0);
    const std::string p = tmp_path("roundtrip.safetensors");
    write_safetensors(p, f);
    CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
    TensorFile stamped = f;  // a written file names the monokda that wrote it
    stamp_version(stamped.metadata);
    CHECK(stamped.metadata.at("monokda_version") == version());
    check_same(stamped, read_safetensors(p));
    // the header index reads the same entries, and rows on demand
    SafetensorsHeader h = read_safetensors_header(p);
    CHECK(h.metadata == stamped.metadata);
    CHECK(h.tensors.at("b").dtype == "BF16");
    CHECK(h.tensors.at("b").shape == std::vector<int64_t>{2, 3});
    Tensor row1 = read_safetensors_tensor(p, h, "b", 1, 1);
    CHECK(row1.shape == std::vector<int64_t>{1, 3});
    CHECK(row1.as<bf16>()[0].bits == 0x8000);
    CHECK(read_safetensors_tensor(p, h, "empty").numel() == 0);
    CHECK(read_safetensors_tensor(p, h, "scalar").as<int32_t>() == std::vector<int32_t>{7});
    CHECK_THROWS_AS(read_safetensors_tensor(p, h, "b", 1, 2), BadInput);
    CHECK_THROWS_AS(read_safetensors_tensor(p, h, "nope"), BadInput);
    std::remove(p.c_str());
}

TEST_CASE("a file written by another tool: any tensor order, no padding, metadata last") {
    // hand-written header: not our writer's order or spacing
    std::string h = R"({"z":{"dtype":"I32","shape":[2],"data_offsets":[4,12]},"a":{"dtype":"BF16","shape":[2],)"
                    R"("data_offsets":[0,4]},"__metadata__":{"eps":"1e-05"}})";
    std::vector<uint8_t> data = {0x80, 0x3f, 0x00, 0xc0, 1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff};
    std::vector<uint8_t> bytes = file_bytes(h, data);
    TensorFile f = parse_safetensors(bytes.data(), bytes.size());
    CHECK(f.metadata.at("eps") == "1e-05");
    CHECK(f.get("a").as<bf16>()[0].to_float() == 1.0f);
    CHECK(f.get("a").as<bf16>()[1].to_float() == -2.0f);
    CHECK(f.get("z").as<int32_t>() == std::vector<int32_t>{1, -2});
}

TEST_CASE("malformed safetensors files are bad input naming the problem") {
    const std::vector<uint8_t> four = {0, 0, 0, 0};
    struct Case { const char* what; std::vector<uint8_t> bytes; const char* needle; };
    std::vector<uint8_t> huge(8, 0);
    huge[4] = 0x10;  // header length 2^36
    std::vector<uint8_t> past = file_bytes("{}", {});
    past[0] = 200;   // header length 200 in a 10-byte file
    const std::string ok_entry = R"("t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    const Case cases[] = {
        {"empty file", {}, "truncated"},
        {"shorter than the length field", {1, 2, 3}, "truncated"},
        {"header length past EOF", past, "past the end"},
        {"header beyond the limit", huge, "limit"},
        {"bad JSON", file_bytes("{\"t\": {\"dtype\": ", four), "not valid JSON"},
        {"JSON not an object", file_bytes("[1,2]", four), "not a JSON object"},
        {"metadata not strings", file_bytes(R"({"__metadata__":{"D":4}})", {}), "not a string"},
        {"entry not an object", file_bytes(R"({"t":3})", four), "not an object"},
        {"no dtype", file_bytes(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", four), "dtype"},
        {"unknown dtype", file_bytes(R"({"t":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", four), "unsupported dtype 'F16'"},
        {"no shape", file_bytes(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", four), "shape"},
        {"negative dim", file_bytes(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four), "negative"},
        {"fractional dim", file_bytes(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", four), "non-integer"},
        {"absurd shape", file_bytes(R"({"t":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}})", four), "absurdly large"},
        {"no offsets", file_bytes(R"({"t":{"dtype":"F32","shape":[1]}})", four), "data_offsets"},
        {"one offset", file_bytes(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", four), "data_offsets"},
        {"negative offset", file_bytes(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", four), "non-negative"},
        {"offsets out of range", file_bytes(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", four), "outside"},
        {"begin after end", file_bytes(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", four), "outside"},
        {"truncated data", file_bytes("{" + ok_entry + "}", {0, 0}), "truncated"},
        {"byte count not matching shape", file_bytes(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four), "needs 8"},
        {"overlapping tensors",
         file_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                    std::vector<uint8_t>(8)),
         "overlap"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        const std::string msg = parse_error(c.bytes);
        CHECK_MESSAGE(mentions(msg, c.needle), msg);
        CHECK(mentions(msg, "t.safetensors"));  // names the file
    }
    // an empty tensor placed inside another's range overlaps nothing
    CHECK(parse_error(file_bytes(
              R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
              std::vector<uint8_t>(8))) == "");
}

TEST_CASE("a duplicate key is refused naming it, wherever it stands") {
    const std::vector<uint8_t> eight(8);
    const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
    const std::string a2 = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})";
    struct Case { const char* what; std::string header; const char* needle; };
    const Case cases[] = {
        {"a tensor twice (the second copy would win)", "{" + a + "," + a2 + "}", "duplicate key 'a' in the header"},
        {"a metadata key twice", R"({"__metadata__":{"D":"128","D":"256"}})", "duplicate key 'D' in __metadata__"},
        {"__metadata__ twice", R"({"__metadata__":{"D":"128"},"__metadata__":{"H":"2"}})", "duplicate key '__metadata__'"},
        {"a field of an entry twice", R"({"a":{"dtype":"F32","shape":[1],"shape":[2],"data_offsets":[0,4]}})",
         "duplicate key 'shape' in tensor 'a'"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.what);
        const std::string msg = parse_error(file_bytes(c.header, eight));
        CHECK_MESSAGE(mentions(msg, c.needle), msg);
    }
    // the same key in two different objects is no duplicate
    CHECK(parse_error(file_bytes(R"({"__metadata__":{"a":"1"},)" + a + "}", eight)) == "");
}

TEST_CASE("a header's nesting and entry counts are bounded before they cost memory") {
    // a megabyte of '[' (a tree of a million arrays): refused at the fourth level, not after the last
    const std::string deep(1u << 20, '[');
    CHECK(mentions(parse_error(file_bytes(R"({"a":{"b":)" + deep, {})), "nests deeper"));
    CHECK(mentions(parse_error(file_bytes(deep, {})), "not a JSON object"));
    CHECK(mentions(parse_error(file_bytes(R"({"a":{"x":[[1]]}})", {})), "nests deeper"));
    // an unknown field of an entry is skipped (its value no deeper than the format's three levels)
    CHECK(parse_error(file_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"note":[1,"x"]}})",
                                 std::vector<uint8_t>(4))) == "");
    // entries that are not tensors are refused at the first, not after all of them are read
    std::string empties = "{";
    for (int i = 0; i < 200000; ++i) empties += (i ? ",\"" : "\"") + std::to_string(i) + "\":{}";
    CHECK(mentions(parse_error(file_bytes(empties + "}", {})), "tensor '0' has no dtype string"));
    // metadata: at most 65536 keys
    std::string md = R"({"__metadata__":{)";
    for (int i = 0; i <= 65536; ++i) md += (i ? ",\"" : "\"") + std::to_string(i) + "\":\"\"";
    CHECK(mentions(parse_error(file_bytes(md + "}}", {})), "more than 65536 keys"));
    std::string dims = R"({"a":{"dtype":"F32","shape":[)";
    for (int i = 0; i < 65; ++i) dims += i ? ",1" : "1";
    CHECK(mentions(parse_error(file_bytes(dims + R"(],"data_offsets":[0,4]}})", std::vector<uint8_t>(4))),
                   "more than 64 dimensions"));
}

TEST_CASE("only a regular file is read: a directory, FIFO or device is refused before allocating") {
    const std::string dir = tmp_path("a_dir");
    std::filesystem::create_directories(dir);
    CHECK_THROWS_WITH_AS(read_safetensors(dir), doctest::Contains("is a directory"), BadInput);
    CHECK_THROWS_WITH_AS(read_safetensors_header(dir), doctest::Contains("is a directory"), BadInput);
    std::filesystem::remove_all(dir);
    const std::string fifo = tmp_path("a_fifo");
    std::remove(fifo.c_str());
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(read_safetensors(fifo), doctest::Contains("is not a regular file"), BadInput);  // no writer: must not wait
    std::remove(fifo.c_str());
    CHECK_THROWS_WITH_AS(read_safetensors("/dev/zero"), doctest::Contains("is not a regular file"), BadInput);
}

TEST_CASE("the header index keeps dtypes it does not compute with, but still checks their sizes") {
    const std::string p = tmp_path("index.safetensors");
    auto write = [&](const std::string& header, size_t data) {
        std::vector<uint8_t> b = file_bytes(header, std::vector<uint8_t>(data));
        std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    };
    write(R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"l":{"dtype":"I64","shape":[1],"data_offsets":[4,12]},)"
          R"("q":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[12,16]}})", 16);
    SafetensorsHeader h = read_safetensors_header(p);
    CHECK(h.tensors.at("h").dtype == "F16");
    CHECK(h.tensors.at("l").shape == std::vector<int64_t>{1});
    CHECK_THROWS_WITH_AS(read_safetensors_tensor(p, h, "h"), doctest::Contains("unsupported dtype 'F16'"), BadInput);
    write(R"({"l":{"dtype":"I64","shape":[2],"data_offsets":[0,8]}})", 8);
    CHECK_THROWS_WITH_AS(read_safetensors_header(p), doctest::Contains("needs 16"), BadInput);
    write(R"({"l":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 4);
    CHECK_THROWS_WITH_AS(read_safetensors_header(p), doctest::Contains("outside"), BadInput);
    std::remove(p.c_str());
    CHECK_THROWS_WITH_AS(read_safetensors_header(p), doctest::Contains("cannot open"), BadInput);
}

TEST_CASE("a failed write leaves nothing behind") {
    const std::string dir = tmp_path("no_such_dir");
    std::filesystem::remove_all(dir);
    CHECK_THROWS_AS(write_safetensors(dir + "/x.safetensors", sample()), BadInput);
    CHECK_FALSE(std::filesystem::exists(dir));
    CHECK_THROWS_WITH_AS(read_safetensors(dir + "/x.safetensors"), doctest::Contains("cannot open"), BadInput);
}
}
