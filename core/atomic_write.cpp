// Output files written through a temporary beside them and renamed over (core/atomic_write.hpp),
// with the temporaries removed on SIGINT and SIGTERM.
#include "core/atomic_write.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.hpp"

namespace monokda {

namespace fs = std::filesystem;

namespace {

// The temporaries not yet renamed, for the signal handler: a fixed table (no allocation, no lock in
// the handler). state 0 free, 1 being filled, 2 a path to remove on a signal.
struct PendingSlot {
    std::atomic<int> state{0};
    char path[4096];
};
constexpr int kPendingSlots = 64;
PendingSlot g_pending[kPendingSlots];

extern "C" void remove_pending_and_reraise(int sig) {
    for (PendingSlot& s : g_pending)
        if (s.state.load() == 2) ::unlink(s.path);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

// Installed as a temporary is made, and only where the program left the default action (a handler
// of its own, or an ignored signal, stays as it is).
void install_signal_cleanup() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa {};
        sa.sa_handler = remove_pending_and_reraise;
        sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
}

// The signals whose handler reads the table, blocked while a temporary is created and registered.
struct SignalsBlocked {
    sigset_t old;
    SignalsBlocked() {
        sigset_t s;
        sigemptyset(&s);
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&s, sig);
        pthread_sigmask(SIG_BLOCK, &s, &old);
    }
    ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

int register_pending(const std::string& path) {
    if (path.size() >= sizeof(PendingSlot::path)) return -1;
    for (int i = 0; i < kPendingSlots; ++i) {
        int free = 0;
        if (g_pending[i].state.compare_exchange_strong(free, 1)) {
            std::memcpy(g_pending[i].path, path.c_str(), path.size() + 1);
            g_pending[i].state.store(2);
            return i;
        }
    }
    return -1;  // more pending temporaries than slots: this one is removed on failure, not on a signal
}

mode_t file_mode() {
    static const mode_t mode = [] {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        return mode_t(0666 & ~mask);
    }();
    return mode;
}

std::string folder_of(const std::string& path) {
    const fs::path p = fs::path(path).parent_path();
    return p.empty() ? std::string(".") : p.string();
}

}  // namespace

TempFile::TempFile(const std::string& final_path) : final_(final_path) {
    install_signal_cleanup();
    const fs::path p(final_path);
    std::string name = folder_of(final_path) + "/." + p.filename().string() + ".XXXXXX.tmp";
    std::unique_ptr<char[]> buf(new char[name.size() + 1]);
    std::memcpy(buf.get(), name.c_str(), name.size() + 1);
    {
        SignalsBlocked blocked;
        fd_ = ::mkstemps(buf.get(), 4);  // O_CREAT | O_EXCL: a fresh file, never a link's target
        if (fd_ < 0) bad_input("cannot write '" + final_path + "': " + std::strerror(errno));
        tmp_ = buf.get();
        slot_ = register_pending(tmp_);
    }
    ::fchmod(fd_, file_mode());
}

TempFile::~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    if (slot_ >= 0) g_pending[slot_].state.store(0);
}

void TempFile::write(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd_, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) bad_input("cannot write '" + final_ + "': " + std::strerror(n < 0 ? errno : ENOSPC));
        p += n;
        size -= size_t(n);
    }
}

void TempFile::commit() {
    if (::close(fd_) != 0) {
        fd_ = -1;
        bad_input("cannot write '" + final_ + "': " + std::strerror(errno));
    }
    fd_ = -1;
    if (::rename(tmp_.c_str(), final_.c_str()) != 0) bad_input("cannot write '" + final_ + "': " + std::strerror(errno));
    tmp_.clear();
    if (slot_ >= 0) g_pending[slot_].state.store(0);
    slot_ = -1;
}

void OutputSet::add(const std::string& path, std::string bytes) { files_.emplace_back(path, std::move(bytes)); }

void OutputSet::add(const std::string& path, const std::vector<uint8_t>& bytes) {
    files_.emplace_back(path, std::string(bytes.begin(), bytes.end()));
}

void OutputSet::commit() {
    std::vector<std::unique_ptr<TempFile>> temps;
    for (const auto& [path, bytes] : files_) {
        temps.push_back(std::make_unique<TempFile>(path));
        temps.back()->write(bytes.data(), bytes.size());
    }
    for (auto& t : temps) t->commit();
    files_.clear();
}

void write_file_atomic(const std::string& path, const void* data, size_t size) {
    TempFile t(path);
    t.write(data, size);
    t.commit();
}

namespace {

std::string named(const NamedPath& p) { return p.first + " '" + p.second + "'"; }

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::equivalent(a, b, ec)) return true;
    // not both existing: the same name, once the folders are resolved
    const fs::path ca = fs::weakly_canonical(a, ec);
    if (ec) return false;
    const fs::path cb = fs::weakly_canonical(b, ec);
    return !ec && ca == cb;
}

}  // namespace

void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
    for (size_t i = 0; i < outputs.size(); ++i) {
        const NamedPath& o = outputs[i];
        if (o.second.empty()) continue;
        for (const NamedPath& in : inputs)
            if (!in.second.empty() && same_file(o.second, in.second))
                bad_input(named(o) + " is the same file as " + named(in) + ": an input is never overwritten");
        for (size_t j = 0; j < i; ++j)
            if (!outputs[j].second.empty() && same_file(o.second, outputs[j].second))
                bad_input(named(o) + " and " + named(outputs[j]) + " are the same file");
        struct stat st {};
        if (::lstat(o.second.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode)) bad_input(named(o) + " is a directory; it needs a file name");
            if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
                bad_input(named(o) + " exists and is not a regular file (it would be replaced)");
        }
        const std::string dir = folder_of(o.second);
        struct stat ds {};
        if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
            bad_input("cannot write " + named(o) + ": no folder '" + dir + "'");
        if (::access(dir.c_str(), W_OK | X_OK) != 0)
            bad_input("cannot write " + named(o) + ": folder '" + dir + "' is not writable");
    }
}

void check_output_dir(const std::string& option, const std::string& dir) {
    fs::path p = fs::absolute(fs::path(dir)).lexically_normal();
    while (true) {
        struct stat st {};
        if (::stat(p.c_str(), &st) == 0) {
            if (!S_ISDIR(st.st_mode)) bad_input(option + " '" + dir + "': '" + p.string() + "' is not a folder");
            if (::access(p.c_str(), W_OK | X_OK) != 0)
                bad_input(option + " '" + dir + "' cannot be written: folder '" + p.string() + "' is not writable");
            return;
        }
        if (errno != ENOENT && errno != ENOTDIR) bad_input(option + " '" + dir + "': cannot use '" + p.string() + "': " + std::strerror(errno));
        if (!p.has_parent_path() || p.parent_path() == p) bad_input(option + " '" + dir + "' cannot be created");
        p = p.parent_path();
    }
}

}  // namespace monokda
