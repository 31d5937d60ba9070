// A fuzz run's JSON report (`monokda fuzz --report FILE`) and the merge of a sharded campaign's
// reports (`monokda fuzz --merge REPORTS...`): one verdict, the counts summed, every failure with
// its replay line. The format is written down in docs/properties.md ("Campaigns on many machines").
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fuzz/shape_fuzzer.hpp"

namespace monokda::fuzz {

// What makes two shards parts of one campaign: the same cases (seed, preset, shapes), the same
// target and the same checks. Shown in the report under "campaign".
struct Campaign {
    std::string target_args;  // as in the replay lines
    std::string config;       // preset
    std::string shapes;       // "any" | "k3"
    uint64_t seed = 1;
    std::string properties;   // "all" or N
    std::vector<std::string> only;
};

nlohmann::json report_json(const FuzzReport& rep, const FuzzOptions& opt, const Campaign& campaign);
// "passed" | "FAILED" | "NO CASES" (the target rejected every case, or none ran); a merged report
// may also say "INCOMPLETE" (shards missing). Only "passed" is a pass.
std::string report_verdict(const nlohmann::json& report);

struct Merged {
    nlohmann::json report;              // a report of the whole campaign, with "shards"
    std::vector<std::string> notes;     // missing or interrupted shards, for the summary
};

// Reads and merges shard reports. BadInput names the file for an unreadable report, reports of
// different campaigns, different shard counts, or one shard given twice.
Merged merge_reports(const std::vector<std::string>& paths);

// The summary `monokda fuzz` prints for a report: verdict, counts, each failure's replay line.
void print_summary(const nlohmann::json& report, std::ostream& os);

}  // namespace monokda::fuzz
