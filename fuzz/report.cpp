// A fuzz run's JSON report and the merge of a sharded campaign's reports (fuzz/report.hpp).
#include "fuzz/report.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <set>

#include "core/error.hpp"
#include "core/version.hpp"

namespace monokda::fuzz {

using nlohmann::json;

namespace {

constexpr int kFormat = 1;
const std::string kBaseRun = "(base run)";  // check_seconds' entry for the target's own runs

json verdict_json(const props::Verdict& v) { return {{"verdict", to_string(v.kind)}, {"check", v.check}, {"detail", v.detail}}; }

json failure_json(const FuzzFailure& f) {
    json j = {{"check", f.verdict.check},
              {"case_index", f.case_index},
              {"case_seed", f.case_seed},
              {"shape", f.shape.str()},
              {"detail", f.verdict.detail},
              {"original", f.original_path},
              {"original_replay", f.original_replay},
              {"replay", f.replay}};
    if (!f.fixture_path.empty()) {
        j["fixture"] = f.fixture_path;
        j["shrunk"] = {{"tried", f.shrunk.tried}, {"taken", f.shrunk.taken}, {"timed_out", f.shrunk.timed_out},
                       {"steps", f.shrunk.steps}, {"nonzero_before", f.nonzero_before},
                       {"nonzero_after", f.nonzero_after}, {"final", verdict_json(f.final_verdict)}};
    }
    return j;
}

json campaign_json(const Campaign& c, int shard_count) {
    return {{"target_args", c.target_args}, {"config", c.config}, {"shapes", c.shapes}, {"seed", c.seed},
            {"properties", c.properties}, {"only", c.only}, {"shard_count", shard_count}};
}

json read_json(const std::string& path) {
    std::ifstream f(path);
    if (!f) bad_input("cannot read report '" + path + "'");
    try {
        json j = json::parse(f);
        if (!j.is_object() || j.value("kind", "") != "monokda-fuzz-report" || !j.contains("campaign") ||
            !j.contains("checks") || !j.contains("failures") || !j.contains("shard"))
            bad_input("'" + path + "' is not a monokda fuzz report");
        if (j.value("format", 0) != kFormat)
            bad_input("'" + path + "' is a fuzz report of format " + std::to_string(j.value("format", 0)) +
                      " (this monokda reads " + std::to_string(kFormat) + ")");
        return j;
    } catch (const json::exception& e) {
        bad_input("report '" + path + "' is not valid: " + e.what());
    }
}

}  // namespace

json report_json(const FuzzReport& rep, const FuzzOptions& opt, const Campaign& campaign) {
    json checks = json::object();
    for (const auto& [name, v] : rep.verdicts)
        if (name != kBaseRun) checks[name] = {{"pass", v[0]}, {"fail", v[1]}, {"skip", v[2]}};
    for (const auto& [name, t] : rep.check_seconds)
        if (checks.contains(name)) checks[name]["seconds"] = t;
    const auto base = rep.check_seconds.find(kBaseRun);
    json failures = json::array();
    for (const auto& f : rep.failures) failures.push_back(failure_json(f));
    return {{"kind", "monokda-fuzz-report"},
            {"format", kFormat},
            {"monokda_version", version()},
            {"monokda_commit", monokda::commit()},
            {"campaign", campaign_json(campaign, opt.shard_count)},
            {"shard", {{"index", opt.shard_index}, {"count", opt.shard_count}}},
            {"budget", {{"iters", opt.iters}, {"seconds", opt.seconds}}},
            {"stopped_by", rep.stopped_by},
            {"cases", rep.cases},
            {"rejected", rep.rejected},
            {"failed_cases", rep.failed_cases},
            {"seconds", rep.seconds},
            {"target_seconds", base == rep.check_seconds.end() ? 0.0 : base->second},
            {"checks", checks},
            {"failures", failures},
            {"verdict", !rep.failures.empty() ? "FAILED" : rep.cases == 0 ? "NO CASES" : "passed"}};
}

std::string report_verdict(const json& r) { return r.value("verdict", "?"); }

Merged merge_reports(const std::vector<std::string>& paths) {
    if (paths.empty()) bad_input("--merge needs at least one report");
    Merged m;
    json first;
    std::string first_path;
    std::map<int, std::string> seen;  // shard index -> report
    json checks = json::object(), failures = json::array(), shards = json::array();
    long cases = 0, rejected = 0, failed_cases = 0;
    double seconds = 0, machine_seconds = 0;
    for (const std::string& p : paths) {
        const json r = read_json(p);
        if (first.is_null()) {
            first = r;
            first_path = p;
        } else if (r["campaign"] != first["campaign"]) {
            bad_input("'" + p + "' is from another campaign than '" + first_path + "' (campaign " + r["campaign"].dump() +
                      " vs " + first["campaign"].dump() + ")");
        }
        const int index = r["shard"].value("index", -1);
        auto [it, fresh] = seen.emplace(index, p);
        if (!fresh) bad_input("shard " + std::to_string(index) + " is given twice: '" + it->second + "' and '" + p + "'");
        cases += r.value("cases", 0L);
        rejected += r.value("rejected", 0L);
        failed_cases += r.value("failed_cases", 0L);
        seconds = std::max(seconds, r.value("seconds", 0.0));
        machine_seconds += r.value("seconds", 0.0);
        for (const auto& [name, c] : r["checks"].items()) {
            json& sum = checks[name];
            if (!sum.is_object()) sum = json::object();
            for (const char* k : {"pass", "fail", "skip", "seconds"})
                if (c.contains(k)) sum[k] = sum.value(k, 0.0) + c[k].get<double>();
        }
        for (json f : r["failures"]) {
            f["shard"] = index;
            failures.push_back(f);
        }
        shards.push_back({{"index", index}, {"report", p}, {"cases", r.value("cases", 0L)},
                          {"stopped_by", r.value("stopped_by", "")}, {"verdict", report_verdict(r)}});
        if (r.value("stopped_by", "") == "interrupted")
            m.notes.push_back("shard " + std::to_string(index) + " was interrupted after " +
                              std::to_string(r.value("cases", 0L)) + " cases (" + p + ")");
    }
    // counts are whole numbers; "seconds" sums stay fractional
    for (auto& [name, c] : checks.items())
        for (const char* k : {"pass", "fail", "skip"})
            if (c.contains(k)) c[k] = long(c[k].get<double>());
    std::sort(failures.begin(), failures.end(),
              [](const json& a, const json& b) { return a.value("case_index", 0L) < b.value("case_index", 0L); });
    const int count = first["campaign"].value("shard_count", 1);
    std::vector<int> missing;
    for (int i = 0; i < count; ++i)
        if (!seen.count(i)) missing.push_back(i);
    for (const auto& [i, p] : seen)
        if (i < 0 || i >= count) bad_input("'" + p + "' names shard " + std::to_string(i) + " of " + std::to_string(count));
    if (!missing.empty()) {
        std::string list;
        for (int i : missing) list += (list.empty() ? "" : ", ") + std::to_string(i);
        m.notes.push_back("no report for shard(s) " + list + " of " + std::to_string(count));
    }
    m.report = {{"kind", "monokda-fuzz-report"},
                {"format", kFormat},
                {"monokda_version", version()},
                {"monokda_commit", monokda::commit()},
                {"campaign", first["campaign"]},
                {"shard", nullptr},
                {"shards", shards},
                {"missing_shards", missing},
                {"cases", cases},
                {"rejected", rejected},
                {"failed_cases", failed_cases},
                {"seconds", seconds},
                {"machine_seconds", machine_seconds},
                {"checks", checks},
                {"failures", failures},
                {"verdict", !failures.empty() ? "FAILED" : !missing.empty() ? "INCOMPLETE" : cases == 0 ? "NO CASES" : "passed"}};
    return m;
}

void print_summary(const json& r, std::ostream& os) {
    os << report_verdict(r) << ": " << r.value("cases", 0L) << " cases, " << r.value("failed_cases", 0L) << " failing";
    if (r.value("rejected", 0L) > 0) os << ", " << r.value("rejected", 0L) << " rejected by the target";
    if (r.contains("shards")) os << ", " << r["shards"].size() << " of " << r["campaign"].value("shard_count", 1) << " shards";
    os << "\n";
    for (const auto& f : r["failures"]) {
        os << "FAIL " << f.value("check", "?") << " on case " << f.value("case_index", 0L);
        if (f.contains("shard") && !f["shard"].is_null()) os << " (shard " << f["shard"].get<int>() << ")";
        os << "\nreplay: " << f.value("replay", "") << "\n";
    }
}

}  // namespace monokda::fuzz
