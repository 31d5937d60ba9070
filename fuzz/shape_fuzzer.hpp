// The shape fuzzer behind `monokda fuzz`: draws cases, runs a target on them, checks it against the
// reference and the properties, writes a failing case's fixture as soon as it is found, and at the
// end shrinks it and writes the minimal, replayable fixture beside it. A campaign can be split into
// shards (disjoint case indices) run on different machines; fuzz/report.hpp merges their reports.
#pragma once
#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <vector>
#include <string>

#include "fuzz/case_gen.hpp"
#include "fuzz/shrink.hpp"
#include "properties/properties.hpp"

namespace monokda::fuzz {

constexpr int kMaxJobs = 1024;  // worker threads at most (a thread a case: more only waits)

struct FuzzOptions {
    std::string config = "small";     // model preset the cases use
    long iters = 0;                   // cases to run; 0 = until `seconds`
    double seconds = 0;               // wall-clock budget; 0 = until `iters`
    uint64_t seed = 1;
    int jobs = 0;                     // worker threads; 0 = one a core
    std::string out_dir = "fuzz-failures";
    int properties_per_case = 0;      // properties that rerun the target, per case, in turn; 0: all
    std::vector<std::string> only;    // non-empty: run only these checks (names as all_check_names())
    bool keep_going = false;          // false: stop at the first failure; true: run on, keep the first of each check
    bool shrink = true;
    double shrink_seconds = 120;
    std::string target_args = "--target reference";  // how the replay line names the target
    bool progress = true;
    bool keep_dims = false;           // shrinking never changes a model dim (--shapes k3: the target takes only k3)
    int shard_index = 0, shard_count = 1;  // this run takes case indices i with i % shard_count == shard_index
};

struct FuzzFailure {
    long case_index = 0;
    uint64_t case_seed = 0;
    CaseShape shape;
    props::Verdict verdict;        // as first seen
    props::Verdict final_verdict;  // on the shrunk step
    ShrinkResult shrunk;
    long long nonzero_before = 0, nonzero_after = 0;
    std::string fixture_path, original_path, replay;  // fixture_path: the shrunk step ("" until shrunk)
    std::string original_replay;                      // the replay line of the step as found
};

struct FuzzReport {
    std::string stopped_by;  // "iters", "time", "failure" or "interrupted"
    long cases = 0;     // cases whose every check ran (or that failed)
    long rejected = 0;  // cases the target refused (BadInput), e.g. a shape a GPU build does not support
    double seconds = 0;
    std::map<std::string, std::array<long, 3>> verdicts;  // per check: PASS, FAIL, SKIP counts
    std::map<std::string, double> check_seconds;          // per check (plus "base run"): CPU time spent
    long failed_cases = 0;
    std::vector<FuzzFailure> failures;  // the first failing case of each check, shrunk and written
};

uint64_t case_seed(uint64_t seed, long index);
// The global index of this shard's n-th case.
inline long shard_case(const FuzzOptions& o, long n) { return long(o.shard_index) + n * long(o.shard_count); }

// Runs until iters cases, `seconds`, the first failure (unless keep_going), or a stop request
// (props::request_cancel: a signal; then nothing is shrunk). Progress and the summary go to log.
FuzzReport run_fuzz(const props::Target& target, const FuzzOptions& opt, std::ostream& log);

// Loads a written fixture and runs one check on it.
props::Verdict replay(const props::Target& target, const std::string& fixture, const std::string& check,
                      uint64_t check_seed);

}  // namespace monokda::fuzz
