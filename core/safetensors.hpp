// safetensors files: 8-byte little-endian header length, JSON header, raw little-endian data.
// The reader trusts nothing: every length, offset and shape is checked before a byte is used.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace monokda {

enum class DType { BF16, F32, F64, I32, I64 };  // I64: index tensors as PyTorch writes them
const char* to_string(DType t);
size_t dtype_size(DType t);

// Elements of a shape, and the shape as "[2, 3]" (for messages).
int64_t numel(const std::vector<int64_t>& shape);
std::string shape_str(const std::vector<int64_t>& shape);

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

// One tensor's entry in a header. The dtype is kept as written, so that a checkpoint shard holding
// dtypes this project never computes with (F16, I64, F8_*...) can still be indexed; begin/end are
// byte offsets within the data section.
struct TensorEntry {
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
    int64_t numel() const;
    std::string shape_str() const;
};

struct SafetensorsHeader {
    std::map<std::string, TensorEntry> tensors;
    std::map<std::string, std::string> metadata;
    uint64_t data_start = 0;  // file offset of the data section
};

// Reads and checks only the header (sizes, offsets, overlaps), for files too large to load whole.
SafetensorsHeader read_safetensors_header(const std::string& path);
// Rows [row0, row0 + rows) along dim 0 of one tensor (rows < 0: the whole tensor), read from PATH.
// BadInput if the name is missing, the dtype is not one of DType or the rows are out of range.
Tensor read_safetensors_tensor(const std::string& path, const SafetensorsHeader& h, const std::string& name,
                               int64_t row0 = 0, int64_t rows = -1);

// Parse from memory / a file. BadInput names the problem (truncated, bad JSON, offsets out of range...).
TensorFile parse_safetensors(const uint8_t* data, size_t size, const std::string& what = "input");
TensorFile read_safetensors(const std::string& path);
std::vector<uint8_t> serialize_safetensors(const TensorFile& f);
// Through write_file_atomic (core/atomic_write.hpp): a failed run leaves no partial file. The metadata gains
// monokda_version and monokda_commit (core/version.hpp).
void write_safetensors(const std::string& path, const TensorFile& f);

}  // namespace monokda
