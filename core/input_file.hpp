// Every input file is opened here: a regular file only (a directory, FIFO or device is refused
// before a byte is allocated for it), sized once, read at offsets.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace monokda {

class InputFile {
public:
    // BadInput: "cannot open 'PATH'", or "'PATH' is a directory / is not a regular file".
    explicit InputFile(const std::string& path);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    const std::string& path() const { return path_; }
    uint64_t size() const { return size_; }
    // n bytes at offset; BadInput if the file no longer holds them (changed or truncated since opened).
    void read_at(uint64_t offset, void* buf, size_t n) const;
    // The whole file; BadInput naming `what` when it is larger than max_bytes.
    std::vector<uint8_t> read_all(uint64_t max_bytes, const std::string& what = "file") const;

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

// The whole of a small text file (an envelope, a checkpoint index), through InputFile.
std::string read_text_file(const std::string& path, uint64_t max_bytes, const std::string& what = "file");

}  // namespace monokda
