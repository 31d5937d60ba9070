// A program as a target (properties/target_exec.hpp): run once a step in a fresh folder, with a time
// limit, its exit status the run's verdict.
#include "properties/target_exec.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/error.hpp"

extern char** environ;

namespace monokda::props {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
    std::string o = "'";
    for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return o + "'";
}

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

// The last `max_lines` lines of a file (at most 64 KiB of its end), for a failure's message.
std::string tail_of(const std::string& path, int max_lines = 40) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return "";
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    const std::streamoff from = size > 65536 ? size - 65536 : 0;
    f.seekg(from);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    size_t at = text.size();
    for (int n = 0; n < max_lines && at != std::string::npos && at > 0; ++n) at = text.rfind('\n', at - 1);
    if (at != std::string::npos && at > 0) text = "..." + text.substr(at);
    else if (from > 0) text = "..." + text;
    return text;
}

std::string with_stderr(const std::string& what, const std::string& err_path) {
    const std::string err = tail_of(err_path);
    if (err.empty()) return what + " (stderr empty)";
    std::string indented;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);) indented += "\n    | " + line;
    return what + "; its stderr:" + indented;
}

// One run's folder, removed with everything in it when the run ends, however it ends.
struct RunDir {
    std::string path;
    explicit RunDir(const std::string& base) {
        std::string tmpl = (fs::path(base) / "monokda-exec-XXXXXX").string();
        if (!mkdtemp(tmpl.data())) throw TargetFailure("exec: cannot make a folder under '" + base + "': " + std::strerror(errno));
        path = tmpl;
    }
    ~RunDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

enum class Ended { exited, signalled, timed_out };

struct RunResult {
    Ended how = Ended::exited;
    int code = 0;  // exit status or signal number
};

// Runs /bin/sh -c cmd in its own process group, stdin from /dev/null, stdout discarded, stderr to
// err_path; kills the group at the limit or when a stop is requested (then throws Cancelled).
RunResult run_shell(const std::string& cmd, const std::string& err_path, double timeout_s) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawnattr_setpgroup(&attr, 0);
    // the child starts with default signal handling, whatever monokda installed
    sigset_t def;
    sigemptyset(&def);
    sigaddset(&def, SIGINT);
    sigaddset(&def, SIGTERM);
    sigaddset(&def, SIGPIPE);
    posix_spawnattr_setsigdefault(&attr, &def);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
    char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), const_cast<char*>(cmd.c_str()), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw TargetFailure(std::string("exec: cannot start /bin/sh: ") + std::strerror(rc));

    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    auto pause = std::chrono::microseconds(500);
    for (;;) {
        // WNOWAIT: the shell stays a zombie, so its group id cannot be reused before the group is killed
        siginfo_t info{};
        const int w = waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT);
        if (w < 0 && errno != EINTR) throw TargetFailure(std::string("exec: waitid: ") + std::strerror(errno));
        const bool ended = w == 0 && info.si_pid == pid;
        const bool late = !ended && std::chrono::duration<double>(Clock::now() - t0).count() > timeout_s;
        const bool stop = !ended && !late && cancel_requested();
        if (ended || late || stop) {
            kill(-pid, SIGKILL);  // whatever the command left running in its group goes too
            int status = 0;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            if (stop) throw Cancelled("exec: stopped");
            if (late) return {Ended::timed_out, 0};
            if (WIFSIGNALED(status)) return {Ended::signalled, WTERMSIG(status)};
            return {Ended::exited, WEXITSTATUS(status)};
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
}

std::string signal_name(int sig) {
    const char* d = strsignal(sig);
    return "signal " + std::to_string(sig) + (d ? std::string(" (") + d + ")" : "");
}

// the project's one tensor check (core/step.hpp), naming a missing tensor as the output's
template <class T>
std::vector<T> take(const TensorFile& f, const std::string& name, DType dt, const std::vector<int64_t>& shape) {
    if (!f.has(name)) bad_input("the output has no tensor '" + name + "'");
    return take_tensor<T>(f, name, dt, shape);
}

}  // namespace

StepOutputs<float> outputs_from_file(const TensorFile& f, const Config& c) {
    const int64_t S = c.S(), D = c.D, E = c.E();
    StepOutputs<float> o;
    o.prefix_out = take<bf16>(f, "prefix_out", DType::BF16, {S, D});
    o.blocks = take<bf16>(f, "blocks", DType::BF16, {S, 8, D});
    o.conv_state = take<bf16>(f, "conv_state", DType::BF16, c.conv_state_shape());
    o.ssm_state = take<float>(f, "ssm_state", DType::F32, {c.slots, c.H, c.V, c.K});
    o.x = take<bf16>(f, "x", DType::BF16, {S, D});
    o.proj = take<bf16>(f, "proj", DType::BF16, {S, c.N});
    o.g1 = take<bf16>(f, "g1", DType::BF16, {S, E});
    o.qkv = take<bf16>(f, "qkv", DType::BF16, {S, c.C});
    o.o = take<bf16>(f, "o", DType::BF16, {S, E});
    o.core_out = take<bf16>(f, "core_out", DType::BF16, {S, E});
    return o;
}

Target exec_target(const ExecOptions& opt) {
    if (opt.cmd.empty()) bad_input("--target exec needs --cmd 'PROGRAM ... {fixture} {out}'");
    if (opt.cmd.find("{fixture}") == std::string::npos || opt.cmd.find("{out}") == std::string::npos)
        bad_input("--cmd must name both {fixture} and {out} (got '" + opt.cmd + "')");
    if (!(opt.timeout_s > 0 && std::isfinite(opt.timeout_s))) bad_input("--case-timeout must be a positive number of seconds");
    std::string base = opt.work_dir;
    if (base.empty()) {
        const char* t = std::getenv("TMPDIR");
        base = t && *t ? t : "/tmp";
    }
    if (access(base.c_str(), W_OK | X_OK) != 0)
        bad_input("--target exec: cannot write under '" + base + "': " + std::strerror(errno));
    Target t;
    t.name = "exec";
    t.run = [opt, base](const StepInputs& in) {
        RunDir dir(base);
        const std::string fixture = dir.path + "/fixture.safetensors", out = dir.path + "/out.safetensors",
                          err = dir.path + "/stderr.txt";
        write_safetensors(fixture, in.to_file());
        const std::string cmd = replace_all(replace_all(opt.cmd, "{fixture}", shell_quote(fixture)), "{out}", shell_quote(out));
        const RunResult r = run_shell(cmd, err, opt.timeout_s);
        char limit[32];
        snprintf(limit, sizeof limit, "%g", opt.timeout_s);
        if (r.how == Ended::timed_out) throw TargetFailure(with_stderr(std::string("exec: no answer within ") + limit + " s (killed)", err));
        if (r.how == Ended::signalled) throw TargetFailure(with_stderr("exec: killed by " + signal_name(r.code), err));
        if (r.code == opt.reject_exit)
            throw BadInput(with_stderr("exec: the target rejected the step (exit " + std::to_string(r.code) + ")", err));
        if (r.code != 0) {
            // a shell reports a child's signal as 128 + its number
            const std::string sig = r.code > 128 && r.code < 128 + 65 ? ", as a shell reports " + signal_name(r.code - 128) : "";
            throw TargetFailure(with_stderr("exec: exit status " + std::to_string(r.code) + sig, err));
        }
        if (!fs::exists(out)) throw TargetFailure(with_stderr("exec: exit status 0 but no output file written", err));
        try {
            return outputs_from_file(read_safetensors(out), in.cfg);
        } catch (const BadInput& e) {
            throw TargetFailure(with_stderr(std::string("exec: unreadable output: ") + e.what(), err));
        }
    };
    return t;
}

}  // namespace monokda::props
