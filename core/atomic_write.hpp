// Every output file is written here. Its bytes go to a temporary created beside it, exclusively and
// under a unique name (O_EXCL: never a user's file, never through a link), which is then renamed
// over it: a failed run leaves no partial output, and SIGINT or SIGTERM removes a pending temporary.
// A command checks its output paths before any work (check_outputs) and writes several outputs as
// one set (OutputSet): every temporary first, then every rename, so no output appears without the others.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace monokda {

// (how the command line names it, the path): "-o", "out.safetensors"; an empty path is "not given".
using NamedPath = std::pair<std::string, std::string>;

// BadInput naming the problem unless every given output can be written and none is an input or
// another output (the same file by any name: a path, a hard link, a symbolic link). An output may be
// a new name or an existing regular file (replaced, a link there replaced, not followed); a
// directory or a device is refused, as is a folder that does not exist or cannot be written.
void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {});
// BadInput unless `dir` is a folder, or can be made one (its nearest existing ancestor is a writable
// folder and nothing on the way is a file). Nothing is created.
void check_output_dir(const std::string& option, const std::string& dir);

// One output's temporary: created at construction, removed by the destructor unless committed.
class TempFile {
public:
    explicit TempFile(const std::string& final_path);  // BadInput "cannot write 'PATH'"
    ~TempFile();
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    void write(const void* data, size_t size);  // BadInput on a short write (disk full...)
    void commit();                              // renames it over the final path
    const std::string& path() const { return tmp_; }

private:
    std::string final_, tmp_;
    int fd_ = -1, slot_ = -1;
};

// Several outputs written together: commit() writes every temporary, then renames them all.
class OutputSet {
public:
    void add(const std::string& path, std::string bytes);
    void add(const std::string& path, const std::vector<uint8_t>& bytes);
    void commit();

private:
    std::vector<std::pair<std::string, std::string>> files_;
};

void write_file_atomic(const std::string& path, const void* data, size_t size);
inline void write_file_atomic(const std::string& path, const std::string& text) {
    write_file_atomic(path, text.data(), text.size());
}

}  // namespace monokda
