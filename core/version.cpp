// monokda's version and configured git commit (core/version.hpp).
#include "core/version.hpp"

#include "core/version_info.hpp"  // generated: only this file includes it, so a new commit rebuilds one file

namespace monokda {

const char* version() { return MONOKDA_VERSION_STRING; }
const char* commit() { return MONOKDA_GIT_COMMIT_STRING; }

std::string version_line() { return std::string("monokda ") + version() + " (commit " + commit() + ")"; }

void stamp_version(std::map<std::string, std::string>& metadata) {
    metadata["monokda_version"] = version();
    metadata["monokda_commit"] = commit();
}

}  // namespace monokda
