// Runs the monokda binary (MONOKDA_BIN) as a user would, capturing its exit code and output.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace monokda::test {

struct CliResult {
    int code = -1;
    std::string out;  // stdout, and stderr with it unless sent to a file
};

inline std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// Runs a shell command line, capturing its exit code and stdout.
inline CliResult run_shell(const std::string& cmd) {
    CliResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

// Runs `bin line` through the shell (line as written: its words split, nothing quoted), in folder
// `dir` when one is given; out holds stdout and stderr together, or stdout alone when stderr goes to
// the file `stderr_file`.
inline CliResult run_cli_line(const std::string& line, const std::string& bin = MONOKDA_BIN, const std::string& dir = "",
                              const std::string& stderr_file = "") {
    return run_shell((dir.empty() ? "" : "cd " + shell_quote(dir) + " && ") + shell_quote(bin) + " " + line + " 2>" +
                     (stderr_file.empty() ? "&1" : shell_quote(stderr_file)));
}

inline CliResult run_cli(const std::vector<std::string>& args) {
    std::string line;
    for (const std::string& a : args) line += (line.empty() ? "" : " ") + shell_quote(a);
    return run_cli_line(line);
}

// A fresh folder for one test case, removed when the case ends.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& name)
        : path(std::filesystem::temp_directory_path() / ("monokda_cli_" + name + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string operator/(const std::string& f) const { return (path / f).string(); }
};

}  // namespace monokda::test
