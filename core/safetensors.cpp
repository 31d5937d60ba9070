#include "core/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/atomic_write.hpp"
#include "core/bf16.hpp"
#include "core/error.hpp"

namespace monokda {

using json = nlohmann::json;

const char* to_string(DType t) {
    switch (t) {
        case DType::BF16: return "BF16";
        case DType::F32: return "F32";
        case DType::F64: return "F64";
        case DType::I32: return "I32";
    }
    return "?";
}

size_t dtype_size(DType t) {
    switch (t) {
        case DType::BF16: return 2;
        case DType::F32: case DType::I32: return 4;
        case DType::F64: return 8;
    }
    return 0;
}

static bool parse_dtype(const std::string& s, DType& out) {
    if (s == "BF16") out = DType::BF16;
    else if (s == "F32") out = DType::F32;
    else if (s == "F64") out = DType::F64;
    else if (s == "I32") out = DType::I32;
    else return false;
    return true;
}

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t Tensor::numel() const { return monokda::numel(shape); }
std::string Tensor::shape_str() const { return monokda::shape_str(shape); }

template <class T> std::vector<T> Tensor::as() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
}

template <class T> Tensor Tensor::of(DType dt, std::vector<int64_t> shape, const std::vector<T>& data) {
    Tensor t;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.bytes.resize(data.size() * sizeof(T));
    if (!data.empty()) memcpy(t.bytes.data(), data.data(), t.bytes.size());
    return t;
}

template std::vector<bf16> Tensor::as<bf16>() const;
template std::vector<float> Tensor::as<float>() const;
template std::vector<double> Tensor::as<double>() const;
template std::vector<int32_t> Tensor::as<int32_t>() const;
template Tensor Tensor::of<bf16>(DType, std::vector<int64_t>, const std::vector<bf16>&);
template Tensor Tensor::of<float>(DType, std::vector<int64_t>, const std::vector<float>&);
template Tensor Tensor::of<double>(DType, std::vector<int64_t>, const std::vector<double>&);
template Tensor Tensor::of<int32_t>(DType, std::vector<int64_t>, const std::vector<int32_t>&);

const Tensor& TensorFile::get(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) bad_input("missing tensor '" + name + "'");
    return it->second;
}

static constexpr uint64_t kMaxHeader = 100u << 20;  // the format's own limit

// Element size of every dtype the safetensors format names (0: sub-byte or unknown), so that a
// header holding dtypes this project does not compute with can still be checked for consistency.
static uint64_t format_dtype_size(const std::string& s) {
    static const std::map<std::string, uint64_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
        {"F32", 4},  {"I64", 8}, {"U64", 8}, {"F64", 8}};
    auto it = sizes.find(s);
    return it == sizes.end() ? 0 : it->second;
}

int64_t TensorEntry::numel() const { return monokda::numel(shape); }
std::string TensorEntry::shape_str() const { return monokda::shape_str(shape); }

// The checks every reader shares. strict: only the dtypes of DType are accepted (a fixture);
// otherwise any dtype is indexed and its byte count checked where its element size is known.
static SafetensorsHeader parse_header(const uint8_t* h, uint64_t hlen, uint64_t data_size, bool strict,
                                      const std::string& what) {
    auto fail = [&](const std::string& m) { bad_input(what + ": " + m); };
    json header;
    try {
        header = json::parse(h, h + hlen);
    } catch (const json::exception& e) {
        fail(std::string("header is not valid JSON: ") + e.what());
    }
    if (!header.is_object()) fail("header is not a JSON object");
    SafetensorsHeader out;
    out.data_start = 8 + hlen;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const json& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object()) fail("__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) fail("__metadata__ value of '" + m.key() + "' is not a string");
                out.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object()) fail("entry '" + name + "' is not an object");
        if (!v.contains("dtype") || !v["dtype"].is_string()) fail("tensor '" + name + "' has no dtype string");
        if (!v.contains("shape") || !v["shape"].is_array()) fail("tensor '" + name + "' has no shape array");
        if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
            fail("tensor '" + name + "' has no [begin, end] data_offsets");
        TensorEntry t;
        t.dtype = v["dtype"].get<std::string>();
        DType dt;
        if (strict && !parse_dtype(t.dtype, dt)) fail("tensor '" + name + "' has unsupported dtype '" + t.dtype + "'");
        uint64_t numel = 1;
        for (const json& d : v["shape"]) {
            if (!d.is_number_unsigned()) fail("tensor '" + name + "' has a non-integer or negative dimension");
            uint64_t n = d.get<uint64_t>();
            if (n > (uint64_t(1) << 40) || (n && numel > (uint64_t(1) << 40) / n))
                fail("tensor '" + name + "' shape is absurdly large");
            numel *= n;
            t.shape.push_back(int64_t(n));
        }
        for (const json& o : v["data_offsets"])
            if (!o.is_number_unsigned()) fail("tensor '" + name + "' data_offsets are not non-negative integers");
        t.begin = v["data_offsets"][0].get<uint64_t>();
        t.end = v["data_offsets"][1].get<uint64_t>();
        if (t.begin > t.end || t.end > data_size)
            fail("tensor '" + name + "' data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                 "] lie outside the " + std::to_string(data_size) + "-byte data section (truncated file?)");
        const uint64_t es = format_dtype_size(t.dtype);
        if (es && t.end - t.begin != numel * es)
            fail("tensor '" + name + "' holds " + std::to_string(t.end - t.begin) + " bytes but " + t.dtype +
                 t.shape_str() + " needs " + std::to_string(numel * es));
        if (t.end > t.begin) ranges.push_back({t.begin, t.end});  // an empty tensor overlaps nothing
        out.tensors.emplace(name, std::move(t));
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].first < ranges[i - 1].second) fail("tensor data ranges overlap");
    return out;
}

static uint64_t header_length(const uint8_t* first8, uint64_t size, const std::string& what) {
    auto fail = [&](const std::string& m) { bad_input(what + ": " + m); };
    if (size < 8) fail("truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | first8[i];
    if (hlen > kMaxHeader) fail("header length " + std::to_string(hlen) + " exceeds the 100 MiB limit");
    if (hlen > size - 8)
        fail("header length " + std::to_string(hlen) + " runs past the end of the file (" + std::to_string(size) +
             " bytes)");
    return hlen;
}

TensorFile parse_safetensors(const uint8_t* data, size_t size, const std::string& what) {
    const uint64_t hlen = header_length(data, size, what);
    SafetensorsHeader h = parse_header(data + 8, hlen, size - 8 - hlen, true, what);
    const uint8_t* buf = data + h.data_start;
    TensorFile out;
    out.metadata = std::move(h.metadata);
    for (auto& [name, e] : h.tensors) {
        Tensor t;
        parse_dtype(e.dtype, t.dtype);
        t.shape = e.shape;
        t.bytes.assign(buf + e.begin, buf + e.end);
        out.tensors.emplace(name, std::move(t));
    }
    return out;
}

// Opens path for reading and returns its size (BadInput when it cannot be opened or sized).
static std::streamoff open_sized(const std::string& path, std::ifstream& in) {
    in.open(path, std::ios::binary);
    if (!in) bad_input("cannot open '" + path + "'");
    in.seekg(0, std::ios::end);
    std::streamoff n = in.tellg();
    if (n < 0) bad_input("cannot read '" + path + "'");
    in.seekg(0);
    return n;
}

TensorFile read_safetensors(const std::string& path) {
    std::ifstream in;
    const std::streamoff n = open_sized(path, in);
    std::vector<uint8_t> data(static_cast<size_t>(n));
    if (n && !in.read(reinterpret_cast<char*>(data.data()), n)) bad_input("cannot read '" + path + "'");
    return parse_safetensors(data.data(), data.size(), path);
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
    std::ifstream in;
    const std::streamoff n = open_sized(path, in);
    uint8_t first8[8] = {};
    in.read(reinterpret_cast<char*>(first8), std::min<std::streamoff>(n, 8));
    const uint64_t hlen = header_length(first8, uint64_t(n), path);
    std::vector<uint8_t> h(static_cast<size_t>(hlen));
    if (hlen && !in.read(reinterpret_cast<char*>(h.data()), std::streamsize(hlen))) bad_input("cannot read '" + path + "'");
    return parse_header(h.data(), hlen, uint64_t(n) - 8 - hlen, false, path);
}

Tensor read_safetensors_tensor(const std::string& path, const SafetensorsHeader& h, const std::string& name,
                               int64_t row0, int64_t rows) {
    auto it = h.tensors.find(name);
    if (it == h.tensors.end()) bad_input(path + ": missing tensor '" + name + "'");
    const TensorEntry& e = it->second;
    Tensor t;
    if (!parse_dtype(e.dtype, t.dtype)) bad_input(path + ": tensor '" + name + "' has unsupported dtype '" + e.dtype + "'");
    t.shape = e.shape;
    const int64_t dim0 = e.shape.empty() ? 1 : e.shape[0];
    if (rows < 0) { row0 = 0; rows = dim0; }
    if (row0 < 0 || row0 + rows > dim0)
        bad_input(path + ": rows [" + std::to_string(row0) + ", " + std::to_string(row0 + rows) + ") of tensor '" + name +
                  "' " + e.shape_str() + " are out of range");
    const uint64_t row_bytes = dim0 ? (e.end - e.begin) / uint64_t(dim0) : 0;
    if (!e.shape.empty()) t.shape[0] = rows;
    t.bytes.resize(size_t(row_bytes * uint64_t(rows)));
    std::ifstream in(path, std::ios::binary);
    if (!in) bad_input("cannot open '" + path + "'");
    in.seekg(std::streamoff(h.data_start + e.begin + row_bytes * uint64_t(row0)));
    if (!t.bytes.empty() && !in.read(reinterpret_cast<char*>(t.bytes.data()), std::streamsize(t.bytes.size())))
        bad_input("cannot read tensor '" + name + "' from '" + path + "' (file changed or truncated?)");
    return t;
}

std::vector<uint8_t> serialize_safetensors(const TensorFile& f) {
    json header = json::object();
    if (!f.metadata.empty()) header["__metadata__"] = f.metadata;
    uint64_t off = 0;
    for (const auto& [name, t] : f.tensors) {  // std::map: names sorted, as the reference writer does
        header[name] = {{"dtype", to_string(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + t.bytes.size()}}};
        off += t.bytes.size();
    }
    std::string h = header.dump();
    while ((8 + h.size()) % 8) h += ' ';  // keep the data section 8-byte aligned
    std::vector<uint8_t> out(8 + h.size() + off);
    uint64_t hl = h.size();
    for (int i = 0; i < 8; ++i) out[i] = uint8_t(hl >> (8 * i));
    memcpy(out.data() + 8, h.data(), h.size());
    uint8_t* p = out.data() + 8 + h.size();
    for (const auto& [name, t] : f.tensors) {
        if (!t.bytes.empty()) memcpy(p, t.bytes.data(), t.bytes.size());
        p += t.bytes.size();
    }
    return out;
}

void write_safetensors(const std::string& path, const TensorFile& f) {
    const std::vector<uint8_t> bytes = serialize_safetensors(f);
    write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace monokda
