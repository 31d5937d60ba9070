// The shape fuzzer behind `monokda fuzz` (fuzz/shape_fuzzer.hpp): cases drawn, run, checked, and a
// failing one written and shrunk.
#include "fuzz/shape_fuzzer.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <system_error>
#include <thread>
#include <vector>

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "core/rng.hpp"
#include "fuzz/checks.hpp"

namespace monokda::fuzz {

using props::Verdict;

uint64_t case_seed(uint64_t seed, long index) {
    Rng r(seed * 0x100000001b3ull + uint64_t(index));
    return r.next() >> 1;  // keeps it printable as a positive int64 as well
}

namespace {

using Clock = std::chrono::steady_clock;

std::string file_safe(const std::string& s) {
    std::string o;
    for (char ch : s) o += (isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
    return o;
}

struct Shared {
    std::atomic<long> next{0}, cases{0}, rejected{0};
    std::atomic<bool> stop{false};
    std::mutex mu;
    std::string current;  // shape of the latest case, for the progress line
    std::map<std::string, std::array<long, 3>> verdicts;
    std::map<std::string, double> seconds;
    std::atomic<long> failed{0};
    std::map<std::string, FuzzFailure> first_failure;  // by check
};

std::string stem_of(const FuzzOptions& opt, const props::Target& target, const std::string& check, long index) {
    return opt.out_dir + "/" + file_safe(target.name) + "-" + check + "-case" + std::to_string(index);
}

std::string replay_line(const FuzzOptions& opt, const std::string& fixture, const std::string& check, uint64_t seed) {
    return "monokda fuzz " + opt.target_args + " --replay " + fixture + " --check " + check + " --check-seed " +
           std::to_string(seed);
}

// What a failure's text file says: the check, the case, the verdict's detail, the replay line(s).
std::string failure_text(const FuzzFailure& f) {
    std::string t = "FAIL " + f.verdict.check + " on case " + std::to_string(f.case_index) + " (seed " +
                    std::to_string(f.case_seed) + ", " + f.shape.str() + ")\n" + f.verdict.detail + "\n\nreplay (as found): " +
                    f.original_replay + "\n";
    if (!f.fixture_path.empty())
        t += "replay (shrunk): " + f.replay + "\n\nshrunk step: " + to_string(f.final_verdict.kind) + " " +
             f.final_verdict.check + ": " + f.final_verdict.detail + "\n";
    return t + "\nwritten by " + version_line() + "\n";
}

// Keeps the lowest-index failure of each check; stops the run unless keep_going. A failure that
// becomes its check's recorded one is written at once (fixture and text), outside the lock, so an
// interrupted run keeps it.
void record_failure(Shared& sh, const FuzzOptions& opt, const props::Target& target, long i, uint64_t cs,
                    const CaseShape& shape, const StepInputs& in, const Verdict& v, std::ostream& log) {
    ++sh.failed;
    FuzzFailure f;
    {
        std::lock_guard<std::mutex> lock(sh.mu);
        if (!opt.keep_going) sh.stop = true;
        auto it = sh.first_failure.find(v.check);
        if (it != sh.first_failure.end() && it->second.case_index <= i) return;
        f.case_index = i;
        f.case_seed = cs;
        f.shape = shape;
        f.verdict = v;
        sh.first_failure[v.check] = f;
    }
    std::filesystem::create_directories(opt.out_dir);
    const std::string stem = stem_of(opt, target, v.check, i);
    f.original_path = stem + "-original.safetensors";
    f.original_replay = replay_line(opt, f.original_path, v.check, cs);
    write_safetensors(f.original_path, in.to_file());
    write_file_atomic(stem + ".txt", failure_text(f));
    std::lock_guard<std::mutex> lock(sh.mu);
    log << "\nFAIL " << v.check << " on case " << i << ": wrote " << f.original_path << "\n  replay: " << f.original_replay
        << "\n" << std::flush;
    auto it = sh.first_failure.find(v.check);
    if (it != sh.first_failure.end() && it->second.case_index == i) it->second = f;
}

void worker(const props::Target& target, const FuzzOptions& opt, const Config& preset, Clock::time_point t0, Shared& sh,
            std::ostream& log) {
    // The workers are the parallelism. A case is small: an OpenMP team inside it costs more in
    // wake-ups and spinning than it saves, and with several workers it only oversubscribes.
    omp_set_num_threads(1);
    std::map<std::string, std::array<long, 3>> counts;
    std::map<std::string, double> secs;
    auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    while (!sh.stop && !props::cancel_requested()) {
        const long n = sh.next++;
        if (opt.iters && n >= opt.iters) break;
        if (opt.seconds > 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= opt.seconds) break;
        const long i = shard_case(opt, n);
        const uint64_t cs = case_seed(opt.seed, i);
        const CaseShape shape = draw_shape(preset, cs);
        {
            std::lock_guard<std::mutex> lock(sh.mu);
            sh.current = "case " + std::to_string(i) + ": " + shape.str();
        }
        const StepInputs in = build_case(shape);
        StepOutputs<float> out;
        auto tc = Clock::now();
        try {
            out = target.run(in);
        } catch (const BadInput&) {
            ++sh.rejected;
            continue;
        } catch (const props::TargetFailure& e) {
            record_failure(sh, opt, target, i, cs, shape, in, Verdict{Verdict::FAIL, "target-run", e.what()}, log);
            ++sh.cases;
            continue;
        } catch (const props::Cancelled&) {
            break;
        }
        secs["(base run)"] += since(tc);
        std::map<std::string, std::array<long, 3>> case_counts;
        std::vector<Verdict> failed;
        try {
            for (const std::string& name : case_checks(target, i, opt.properties_per_case)) {
                if (!opt.only.empty() && std::find(opt.only.begin(), opt.only.end(), name) == opt.only.end()) continue;
                tc = Clock::now();
                const Verdict v = run_check(name, target, in, out, cs);
                secs[name] += since(tc);
                ++case_counts[name][size_t(v.kind)];
                if (v.kind == Verdict::FAIL) failed.push_back(v);
                if (v.kind == Verdict::FAIL && !opt.keep_going) break;
            }
        } catch (const props::Cancelled&) {
            break;  // a case cut short by a stop is not counted
        }
        for (const auto& [k, v] : case_counts)
            for (size_t j = 0; j < 3; ++j) counts[k][j] += v[j];
        for (const Verdict& v : failed) record_failure(sh, opt, target, i, cs, shape, in, v, log);
        ++sh.cases;
    }
    std::lock_guard<std::mutex> lock(sh.mu);
    for (const auto& [k, v] : counts)
        for (size_t j = 0; j < 3; ++j) sh.verdicts[k][j] += v[j];
    for (const auto& [k, v] : secs) sh.seconds[k] += v;
}

// The progress line: cases, rate, failures, rejections and the latest case's shape.
std::string progress_line(const props::Target& target, const FuzzOptions& opt, Clock::time_point t0, Shared& sh) {
    const double el = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string cur;
    {
        std::lock_guard<std::mutex> lock(sh.mu);
        cur = sh.current;
    }
    char buf[160];
    snprintf(buf, sizeof buf, "fuzz %s/%s: %ld cases, %.1f cases/s, %ld failures, %ld rejected | ", target.name.c_str(),
             opt.config.c_str(), sh.cases.load(), el > 0 ? double(sh.cases) / el : 0.0, sh.failed.load(),
             sh.rejected.load());
    return std::string(buf) + cur;
}

// `jobs` workers draw and check cases until the budget, a failure or a stop; a monitor thread writes
// the progress line meanwhile (every second on a terminal, every 10 s to a file).
void run_workers(const props::Target& target, const FuzzOptions& opt, const Config& preset, int jobs, Clock::time_point t0,
                 Shared& sh, std::ostream& log) {
    std::vector<std::thread> pool;
    try {
        for (int j = 0; j < jobs; ++j) pool.emplace_back([&] { worker(target, opt, preset, t0, sh, log); });
    } catch (const std::system_error& e) {
        sh.stop = true;
        for (auto& t : pool) t.join();
        bad_input("cannot start " + std::to_string(jobs) + " worker threads (" + e.what() + "): use fewer --jobs");
    }
    const bool tty = isatty(STDERR_FILENO);
    std::atomic<bool> done{false};
    std::thread monitor([&] {
        auto last = Clock::now();
        while (!done) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            if (!opt.progress) continue;
            const double since = std::chrono::duration<double>(Clock::now() - last).count();
            if ((tty && since >= 1.0) || (!tty && since >= 10.0)) {
                const std::string line = progress_line(target, opt, t0, sh);
                std::lock_guard<std::mutex> lock(sh.mu);
                log << (tty ? "\r" : "") << line << (tty ? "\033[K" : "\n") << std::flush;
                last = Clock::now();
            }
        }
    });
    for (auto& t : pool) t.join();
    done = true;
    monitor.join();
}

// The table of checks (verdict counts and share of the time) and the rate. A timed entry with no
// verdicts (the base run) gets a row of zeros in rep.verdicts, as the report lists it.
void log_check_table(FuzzReport& rep, int jobs, std::ostream& log) {
    double total = 0;
    for (const auto& [name, t] : rep.check_seconds) total += t;
    log << "check                    PASS  FAIL  SKIP  time%\n";
    for (const auto& [name, t] : rep.check_seconds) {
        const auto v = rep.verdicts[name];
        char buf[128];
        snprintf(buf, sizeof buf, "  %-20s %7ld %5ld %5ld %5.1f\n", name.c_str(), v[0], v[1], v[2],
                 total > 0 ? 100 * t / total : 0.0);
        log << buf;
    }
    char rate[128];
    snprintf(rate, sizeof rate, "%ld cases in %.1f s: %.0f cases/min on %d worker(s)\n", rep.cases, rep.seconds,
             rep.seconds > 0 ? 60.0 * double(rep.cases) / rep.seconds : 0.0, jobs);
    log << rate;
}

// A failure's step shrunk (unless opt.shrink is off), its check run again on the minimal step, and the
// minimal fixture and the failure's text written with a replay line for it.
void shrink_and_write(FuzzFailure& f, const props::Target& target, const FuzzOptions& opt, std::ostream& log) {
    const StepInputs original = build_case(f.shape);
    f.nonzero_before = nonzero_inputs(original);
    StepInputs minimal = original;
    if (opt.shrink) {
        log << "shrinking (" << step_summary(original) << ", " << f.nonzero_before << " non-zero inputs)...\n" << std::flush;
        f.shrunk = shrink_failure(target, f.verdict.check, f.case_seed, original, opt.shrink_seconds, opt.keep_dims);
        minimal = f.shrunk.in;
        for (const auto& st : f.shrunk.steps) log << "  " << st << "\n";
        log << "shrunk in " << f.shrunk.taken << " of " << f.shrunk.tried << " tries"
            << (f.shrunk.timed_out ? " (time limit reached)" : "") << "\n";
    }
    f.nonzero_after = nonzero_inputs(minimal);
    try {
        f.final_verdict = run_target_and_check(f.verdict.check, target, minimal, f.case_seed);
    } catch (const props::Cancelled&) {
        f.final_verdict = Verdict{Verdict::SKIP, f.verdict.check, "interrupted"};
    }
    const std::string stem = stem_of(opt, target, f.verdict.check, f.case_index);
    f.fixture_path = stem + ".safetensors";
    write_safetensors(f.fixture_path, minimal.to_file());
    f.replay = replay_line(opt, f.fixture_path, f.verdict.check, f.case_seed);
    write_file_atomic(stem + ".txt", failure_text(f));
    log << "minimal case: " << step_summary(minimal) << ", " << f.nonzero_after << " non-zero inputs (was "
        << f.nonzero_before << ")\n"
        << "  " << to_string(f.final_verdict.kind) << " " << f.final_verdict.check << ": " << f.final_verdict.detail << "\n"
        << "wrote " << f.fixture_path << " (original: " << f.original_path << ")\n"
        << "replay: " << f.replay << "\n";
}

}  // namespace

FuzzReport run_fuzz(const props::Target& target, const FuzzOptions& opt, std::ostream& log) {
    if (opt.iters <= 0 && opt.seconds <= 0) bad_input("fuzz: give --iters N or --time SECONDS");
    if (opt.shard_count < 1 || opt.shard_index < 0 || opt.shard_index >= opt.shard_count)
        bad_input("fuzz: shard " + std::to_string(opt.shard_index) + "/" + std::to_string(opt.shard_count) + " is not I/N with 0 <= I < N");
    const Config preset = Config::preset(opt.config);
    const int jobs = opt.jobs > 0 ? opt.jobs : std::max(1u, std::thread::hardware_concurrency());
    Shared sh;
    const auto t0 = Clock::now();
    run_workers(target, opt, preset, jobs, t0, sh, log);

    FuzzReport rep;
    const bool interrupted = props::cancel_requested();
    rep.stopped_by = interrupted ? "interrupted" : !sh.first_failure.empty() && !opt.keep_going ? "failure"
                     : opt.iters && sh.next >= opt.iters ? "iters" : "time";
    rep.cases = sh.cases;
    rep.rejected = sh.rejected;
    rep.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    rep.verdicts = sh.verdicts;
    rep.check_seconds = sh.seconds;
    if (opt.progress) {
        const bool tty = isatty(STDERR_FILENO);
        log << (tty ? "\r" : "") << progress_line(target, opt, t0, sh) << (tty ? "\033[K" : "") << "\n";
    }
    log_check_table(rep, jobs, log);
    rep.failed_cases = sh.failed;
    if (interrupted) log << "interrupted: nothing is shrunk; each failure's step as found is written\n";
    // Shrinking runs here, serially, on steps that soon get small: one thread, as in the workers.
    struct OmpThreads {
        int saved = omp_get_max_threads();
        OmpThreads() { omp_set_num_threads(1); }
        ~OmpThreads() { omp_set_num_threads(saved); }
    } one_thread;
    std::vector<FuzzFailure> found;
    for (const auto& [check, f] : sh.first_failure) found.push_back(f);
    std::sort(found.begin(), found.end(), [](const FuzzFailure& a, const FuzzFailure& b) { return a.case_index < b.case_index; });
    for (FuzzFailure f : found) {
        log << "FAIL " << f.verdict.check << " on case " << f.case_index << " (seed " << f.case_seed << ", "
            << f.shape.str() << "):\n  " << f.verdict.detail << "\n";
        f.replay = f.original_replay;
        if (interrupted)
            log << "replay: " << f.replay << "\n";
        else
            shrink_and_write(f, target, opt, log);
        rep.failures.push_back(f);
    }
    return rep;
}

props::Verdict replay(const props::Target& target, const std::string& fixture, const std::string& check,
                      uint64_t check_seed) {
    const StepInputs in = StepInputs::from_file(read_safetensors(fixture));
    const StepOutputs<float> out = target.run(in);
    return run_check(check, target, in, out, check_seed);
}

}  // namespace monokda::fuzz
