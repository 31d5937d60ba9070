// Progress of a long run (an envelope's reduction orders, a sweep's schedules, a run's launches), on
// stderr: on a terminal one line redrawn in place (label, done/total, elapsed, ETA), elsewhere (a log,
// CI) a line every few seconds. A run that ends within its first interval prints nothing.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>

namespace monokda {

class Progress {
public:
    using Clock = std::function<double()>;  // seconds since any fixed point
    // tty < 0: whether stderr is a terminal. os, clock: for tests.
    Progress(std::string label, int64_t total, int tty = -1, std::ostream* os = nullptr, Clock clock = {});
    ~Progress();  // finish()
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    void add(int64_t n = 1);  // thread-safe
    void finish();            // the last line (when any was shown); idempotent

    static constexpr double kTtyEvery = 0.25, kLogEvery = 5.0;

private:
    void show(bool last);
    std::string label_;
    int64_t total_, done_ = 0;
    bool tty_, shown_ = false, finished_ = false;
    std::ostream* os_;
    Clock clock_;
    double t0_, next_;
    std::mutex mu_;
};

}  // namespace monokda
