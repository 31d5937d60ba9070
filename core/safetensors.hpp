// safetensors files: 8-byte little-endian header length, JSON header, raw little-endian data.
// The reader trusts nothing: every length, offset and shape is checked before a byte is used.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace monokda {

enum class DType { BF16, F32, F64, I32 };
const char* to_string(DType t);
size_t dtype_size(DType t);

struct Tensor {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;  // little-endian, row-major

    int64_t numel() const;
    std::string shape_str() const;
    // Typed copies out of / into the byte buffer (host is little-endian).
    template <class T> std::vector<T> as() const;
    template <class T> static Tensor of(DType dt, std::vector<int64_t> shape, const std::vector<T>& data);
};

struct TensorFile {
    std::map<std::string, Tensor> tensors;
    std::map<std::string, std::string> metadata;

    const Tensor& get(const std::string& name) const;  // BadInput if missing
    bool has(const std::string& name) const { return tensors.count(name) != 0; }
};

// Parse from memory / a file. BadInput names the problem (truncated, bad JSON, offsets out of range...).
TensorFile parse_safetensors(const uint8_t* data, size_t size, const std::string& what = "input");
TensorFile read_safetensors(const std::string& path);
std::vector<uint8_t> serialize_safetensors(const TensorFile& f);
// Writes to PATH.tmp then renames, so a failed run leaves no partial file.
void write_safetensors(const std::string& path, const TensorFile& f);

}  // namespace monokda
