// monokda's version and the git commit it was configured from: `monokda --version`, and a
// monokda_version / monokda_commit entry in the metadata of every file monokda writes.
#pragma once
#include <map>
#include <string>

namespace monokda {

const char* version();  // the project's version (CMakeLists.txt)
const char* commit();   // the source tree's git commit at configure time, "unknown" outside git
// "monokda 0.1.0 (commit 1a2b...)"
std::string version_line();
// Adds monokda_version and monokda_commit to a file's metadata (replacing older values).
void stamp_version(std::map<std::string, std::string>& metadata);

}  // namespace monokda
