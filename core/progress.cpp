// Progress lines of a long run on stderr (core/progress.hpp): redrawn on a terminal, periodic elsewhere.
#include "core/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace monokda {

namespace {

std::string secs(double s) {
    char b[32];
    if (s < 60) std::snprintf(b, sizeof b, "%.1f s", s);
    else std::snprintf(b, sizeof b, "%dm%02ds", int(s) / 60, int(s) % 60);
    return b;
}

}  // namespace

Progress::Progress(std::string label, int64_t total, int tty, std::ostream* os, Clock clock)
    : label_(std::move(label)), total_(total), tty_(tty < 0 ? ::isatty(2) != 0 : tty != 0), os_(os ? os : &std::cerr),
      clock_(clock ? std::move(clock) : Clock([] {
          return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
      })) {
    t0_ = clock_();
    next_ = t0_ + (tty_ ? 2 * kTtyEvery : kLogEvery);
}

Progress::~Progress() { finish(); }

void Progress::add(int64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    done_ += n;
    const double now = clock_();
    if (now < next_ || finished_) return;
    next_ = now + (tty_ ? kTtyEvery : kLogEvery);
    show(false);
}

void Progress::finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
    if (shown_) show(true);
}

void Progress::show(bool last) {
    const double el = clock_() - t0_;
    std::string line = label_ + ": " + std::to_string(done_) + "/" + std::to_string(total_) + ", " + secs(el);
    if (!last && done_ > 0 && done_ < total_) line += ", ETA " + secs(el / double(done_) * double(total_ - done_));
    if (last) line += done_ >= total_ ? ", done" : ", stopped";
    if (tty_) *os_ << "\r" << line << "\033[K" << (last ? "\n" : "") << std::flush;
    else *os_ << line << "\n" << std::flush;
    shown_ = true;
}

}  // namespace monokda
