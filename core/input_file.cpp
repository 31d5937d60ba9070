// Input files opened and read at offsets (core/input_file.hpp): regular files only, sized once.
#include "core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace monokda {

InputFile::InputFile(const std::string& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below like any non-file
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) bad_input("cannot open '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
        ::close(fd_);
        bad_input("cannot read '" + path + "': " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd_);
        bad_input("'" + path + "' " + (S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file") +
                  ", not a file to read");
    }
    size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

void InputFile::read_at(uint64_t offset, void* buf, size_t n) const {
    auto* p = static_cast<char*>(buf);
    while (n > 0) {
        const ssize_t got = ::pread(fd_, p, n, off_t(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) bad_input("cannot read '" + path_ + "' (file changed or truncated while read?)");
        p += got;
        offset += uint64_t(got);
        n -= size_t(got);
    }
}

std::vector<uint8_t> InputFile::read_all(uint64_t max_bytes, const std::string& what) const {
    if (size_ > max_bytes)
        bad_input("'" + path_ + "' holds " + std::to_string(size_) + " bytes, more than a " + what + " may (" +
                  std::to_string(max_bytes) + ")");
    std::vector<uint8_t> bytes(static_cast<size_t>(size_));
    if (!bytes.empty()) read_at(0, bytes.data(), bytes.size());
    return bytes;
}

std::string read_text_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
    const std::vector<uint8_t> b = InputFile(path).read_all(max_bytes, what);
    return std::string(b.begin(), b.end());
}

}  // namespace monokda
