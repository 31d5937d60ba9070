#include "core/atomic_write.hpp"

#include <cstdio>
#include <fstream>

#include "core/error.hpp"

namespace monokda {

void write_file_atomic(const std::string& path, const void* data, size_t size) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) bad_input("cannot write '" + path + "'");
        out.write(static_cast<const char*>(data), std::streamsize(size));
        if (!out.flush()) { out.close(); std::remove(tmp.c_str()); bad_input("cannot write '" + path + "'"); }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        bad_input("cannot write '" + path + "'");
    }
}

}  // namespace monokda
