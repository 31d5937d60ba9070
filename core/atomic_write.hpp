// Every output file is written to PATH.tmp and renamed, so a failed run leaves no partial file.
#pragma once
#include <cstddef>
#include <string>

namespace monokda {

// BadInput ("cannot write 'PATH'") when the file cannot be written; the temporary is removed.
void write_file_atomic(const std::string& path, const void* data, size_t size);
inline void write_file_atomic(const std::string& path, const std::string& text) {
    write_file_atomic(path, text.data(), text.size());
}

}  // namespace monokda
