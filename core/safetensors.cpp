// The safetensors reader and writer (core/safetensors.hpp): every length, offset and shape checked
// before a byte is used.
#include "core/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "core/atomic_write.hpp"
#include "core/bf16.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/version.hpp"

namespace monokda {

using json = nlohmann::json;

const char* to_string(DType t) {
    switch (t) {
        case DType::BF16: return "BF16";
        case DType::F32: return "F32";
        case DType::F64: return "F64";
        case DType::I32: return "I32";
        case DType::I64: return "I64";
    }
    return "?";
}

size_t dtype_size(DType t) {
    switch (t) {
        case DType::BF16: return 2;
        case DType::F32: case DType::I32: return 4;
        case DType::F64: case DType::I64: return 8;
    }
    return 0;
}

static bool parse_dtype(const std::string& s, DType& out) {
    if (s == "BF16") out = DType::BF16;
    else if (s == "F32") out = DType::F32;
    else if (s == "F64") out = DType::F64;
    else if (s == "I32") out = DType::I32;
    else if (s == "I64") out = DType::I64;
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
template std::vector<int64_t> Tensor::as<int64_t>() const;
template Tensor Tensor::of<bf16>(DType, std::vector<int64_t>, const std::vector<bf16>&);
template Tensor Tensor::of<float>(DType, std::vector<int64_t>, const std::vector<float>&);
template Tensor Tensor::of<double>(DType, std::vector<int64_t>, const std::vector<double>&);
template Tensor Tensor::of<int32_t>(DType, std::vector<int64_t>, const std::vector<int32_t>&);
template Tensor Tensor::of<int64_t>(DType, std::vector<int64_t>, const std::vector<int64_t>&);

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

// Bounds that keep a header's memory a small multiple of its bytes: the header is read as a stream
// of JSON events (no document tree is built), nesting deeper than the format's three levels
// ({name: {field: [dims]}}) is refused at the first bracket too many, and the entry counts are capped.
static constexpr int kMaxDepth = 3;
static constexpr size_t kMaxTensors = size_t(1) << 20, kMaxMetadata = size_t(1) << 16, kMaxEntryKeys = 64,
                        kMaxDims = 64;

namespace {

// The header's JSON events into a SafetensorsHeader, checked as they arrive. strict: only the dtypes
// of DType are accepted (a fixture); otherwise any dtype is indexed and its byte count checked where
// its element size is known. Every refusal is BadInput naming the problem; a duplicate key anywhere
// (a second copy of a tensor, of a metadata key, of an entry's field) is refused naming the key.
class HeaderReader final : public json::json_sax_t {
public:
    HeaderReader(uint64_t data_size, bool strict, const std::string& what)
        : data_size_(data_size), strict_(strict), what_(what) {}
    SafetensorsHeader out;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;

    [[noreturn]] void fail(const std::string& m) const { bad_input(what_ + ": " + m); }

    bool null() override { return scalar("null"); }
    bool boolean(bool) override { return scalar("a boolean"); }
    bool number_integer(number_integer_t) override { return number(false); }
    bool number_unsigned(number_unsigned_t v) override { return number(true, v); }
    bool number_float(number_float_t, const string_t&) override { return number(false); }
    bool binary(binary_t&) override { return scalar("binary"); }
    bool string(string_t& v) override {
        if (in_ == In::metadata) {
            if (out.metadata.size() >= kMaxMetadata) fail("__metadata__ has more than " + std::to_string(kMaxMetadata) + " keys");
            out.metadata.emplace(key_, std::move(v));
            return true;
        }
        if (in_ == In::entry && key_ == "dtype") {
            cur_.dtype = std::move(v);
            has_dtype_ = true;
            return true;
        }
        return scalar("a string");
    }

    bool start_object(std::size_t) override { return open(true); }
    bool start_array(std::size_t) override { return open(false); }
    bool key(string_t& k) override {
        if (in_ == In::top) {
            if (k == "__metadata__" ? seen_metadata_ : out.tensors.count(k) != 0)
                fail("duplicate key '" + k + "' in the header");
            name_ = k;
        } else if (in_ == In::metadata) {
            if (out.metadata.count(k)) fail("duplicate key '" + k + "' in __metadata__");
        } else if (in_ == In::entry) {
            if (!entry_keys_.insert(k).second) fail("duplicate key '" + k + "' in tensor '" + name_ + "'");
            if (entry_keys_.size() > kMaxEntryKeys)
                fail("tensor '" + name_ + "' has more than " + std::to_string(kMaxEntryKeys) + " keys");
        }
        key_ = std::move(k);
        return true;
    }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
        fail(std::string("header is not valid JSON: ") + e.what());
    }

private:
    enum class In { start, top, metadata, entry, shape, offsets, other, done };

    // A container opens: where it may, the state moves in; anything else is refused by the rule of
    // the place it stands in.
    bool open(bool object) {
        if (depth_ >= kMaxDepth) fail("header nests deeper than a safetensors header does (" + std::to_string(kMaxDepth) + " levels)");
        ++depth_;
        stack_.push_back(in_);
        switch (in_) {
            case In::start:
                if (!object) fail("header is not a JSON object");
                in_ = In::top;
                return true;
            case In::top:
                if (name_ == "__metadata__") {
                    if (!object) fail("__metadata__ is not an object");
                    seen_metadata_ = true;
                    in_ = In::metadata;
                    return true;
                }
                if (!object) fail("entry '" + name_ + "' is not an object");
                if (out.tensors.size() >= kMaxTensors) fail("header has more than " + std::to_string(kMaxTensors) + " tensors");
                cur_ = TensorEntry{};
                numel_ = 1;
                has_dtype_ = false;
                entry_keys_.clear();
                offsets_.clear();
                in_ = In::entry;
                return true;
            case In::metadata: fail("__metadata__ value of '" + key_ + "' is not a string");
            case In::entry:
                if (key_ == "dtype") fail("tensor '" + name_ + "' has no dtype string");
                if (key_ == "shape") {
                    if (object) fail("tensor '" + name_ + "' has no shape array");
                    in_ = In::shape;
                } else if (key_ == "data_offsets") {
                    if (object) fail("tensor '" + name_ + "' has no [begin, end] data_offsets");
                    in_ = In::offsets;
                } else {
                    in_ = In::other;  // a field this format does not define: skipped
                }
                return true;
            case In::shape: fail("tensor '" + name_ + "' has a non-integer or negative dimension");
            case In::offsets: fail("tensor '" + name_ + "' data_offsets are not non-negative integers");
            case In::other: in_ = In::other; return true;
            case In::done: break;
        }
        fail("header is not a JSON object");
    }

    bool close() {
        const In was = in_;
        in_ = stack_.back();
        stack_.pop_back();
        --depth_;
        if (was == In::entry) finish_entry();
        if (was == In::offsets && offsets_.size() != 2) fail("tensor '" + name_ + "' has no [begin, end] data_offsets");
        if (was == In::top) in_ = In::done;
        return true;
    }

    // A scalar value: where the format wants one, it is taken; elsewhere, refused.
    bool scalar(const char* kind) {
        switch (in_) {
            case In::start: fail("header is not a JSON object");
            case In::top:
                if (name_ == "__metadata__") fail("__metadata__ is not an object");
                fail("entry '" + name_ + "' is not an object");
            case In::metadata: fail("__metadata__ value of '" + key_ + "' is not a string");
            case In::entry:
                if (key_ == "dtype") fail("tensor '" + name_ + "' has no dtype string");
                if (key_ == "shape") fail("tensor '" + name_ + "' has no shape array");
                if (key_ == "data_offsets") fail("tensor '" + name_ + "' has no [begin, end] data_offsets");
                return true;
            case In::shape: fail("tensor '" + name_ + "' has a non-integer or negative dimension");
            case In::offsets: fail("tensor '" + name_ + "' data_offsets are not non-negative integers");
            case In::other: return true;
            case In::done: break;
        }
        fail(std::string("unexpected ") + kind + " in the header");
    }

    bool number(bool is_unsigned, uint64_t n = 0) {
        if (in_ == In::shape) {
            if (!is_unsigned) fail("tensor '" + name_ + "' has a non-integer or negative dimension");
            if (cur_.shape.size() >= kMaxDims) fail("tensor '" + name_ + "' has more than " + std::to_string(kMaxDims) + " dimensions");
            if (n > (uint64_t(1) << 40) || (n && numel_ > (uint64_t(1) << 40) / n))
                fail("tensor '" + name_ + "' shape is absurdly large");
            numel_ *= n;
            cur_.shape.push_back(int64_t(n));
            return true;
        }
        if (in_ == In::offsets) {
            if (!is_unsigned) fail("tensor '" + name_ + "' data_offsets are not non-negative integers");
            if (offsets_.size() >= 2) fail("tensor '" + name_ + "' has no [begin, end] data_offsets");
            offsets_.push_back(n);
            return true;
        }
        return scalar("a number");
    }

    void finish_entry() {
        const std::string& name = name_;
        if (!has_dtype_) fail("tensor '" + name + "' has no dtype string");
        if (!entry_keys_.count("shape")) fail("tensor '" + name + "' has no shape array");
        if (offsets_.size() != 2) fail("tensor '" + name + "' has no [begin, end] data_offsets");
        DType dt;
        if (strict_ && !parse_dtype(cur_.dtype, dt)) fail("tensor '" + name + "' has unsupported dtype '" + cur_.dtype + "'");
        cur_.begin = offsets_[0];
        cur_.end = offsets_[1];
        if (cur_.begin > cur_.end || cur_.end > data_size_)
            fail("tensor '" + name + "' data_offsets [" + std::to_string(cur_.begin) + ", " + std::to_string(cur_.end) +
                 "] lie outside the " + std::to_string(data_size_) + "-byte data section (truncated file?)");
        const uint64_t es = format_dtype_size(cur_.dtype);
        if (es && cur_.end - cur_.begin != numel_ * es)
            fail("tensor '" + name + "' holds " + std::to_string(cur_.end - cur_.begin) + " bytes but " + cur_.dtype +
                 cur_.shape_str() + " needs " + std::to_string(numel_ * es));
        if (cur_.end > cur_.begin) ranges.push_back({cur_.begin, cur_.end});  // an empty tensor overlaps nothing
        out.tensors.emplace(name, std::move(cur_));
    }

    const uint64_t data_size_;
    const bool strict_;
    const std::string& what_;
    In in_ = In::start;
    int depth_ = 0;
    std::vector<In> stack_;
    std::string name_, key_;  // the current top-level name, and the latest key
    bool seen_metadata_ = false, has_dtype_ = false;
    TensorEntry cur_;
    uint64_t numel_ = 1;
    std::set<std::string> entry_keys_;
    std::vector<uint64_t> offsets_;
};

}  // namespace

static SafetensorsHeader parse_header(const uint8_t* h, uint64_t hlen, uint64_t data_size, bool strict,
                                      const std::string& what) {
    HeaderReader reader(data_size, strict, what);
    json::sax_parse(h, h + hlen, &reader);
    std::sort(reader.ranges.begin(), reader.ranges.end());
    for (size_t i = 1; i < reader.ranges.size(); ++i)
        if (reader.ranges[i].first < reader.ranges[i - 1].second) reader.fail("tensor data ranges overlap");
    reader.out.data_start = 8 + hlen;
    return std::move(reader.out);
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

TensorFile read_safetensors(const std::string& path) {
    const InputFile in(path);  // a regular file, refused before its size is allocated otherwise
    const std::vector<uint8_t> data = in.read_all(UINT64_MAX);
    return parse_safetensors(data.data(), data.size(), path);
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
    const InputFile in(path);
    uint8_t first8[8] = {};
    in.read_at(0, first8, size_t(std::min<uint64_t>(in.size(), 8)));
    const uint64_t hlen = header_length(first8, in.size(), path);
    std::vector<uint8_t> h(static_cast<size_t>(hlen));
    if (hlen) in.read_at(8, h.data(), h.size());
    return parse_header(h.data(), hlen, in.size() - 8 - hlen, false, path);
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
    const InputFile in(path);
    const uint64_t off = h.data_start + e.begin + row_bytes * uint64_t(row0), n = row_bytes * uint64_t(rows);
    if (off + n > in.size()) bad_input("cannot read tensor '" + name + "' from '" + path + "' (file changed or truncated?)");
    t.bytes.resize(size_t(n));
    if (n) in.read_at(off, t.bytes.data(), t.bytes.size());
    return t;
}

static std::vector<uint8_t> serialize_with(const TensorFile& f, const std::map<std::string, std::string>& metadata) {
    json header = json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
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

std::vector<uint8_t> serialize_safetensors(const TensorFile& f) { return serialize_with(f, f.metadata); }

void write_safetensors(const std::string& path, const TensorFile& f) {
    std::map<std::string, std::string> metadata = f.metadata;
    stamp_version(metadata);  // every file monokda writes names the version and commit that wrote it
    const std::vector<uint8_t> bytes = serialize_with(f, metadata);
    write_file_atomic(path, bytes.data(), bytes.size());
}

}  // namespace monokda
