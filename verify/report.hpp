// `monokda verify`'s verdicts as text, as a JSON report (format "monokda-verify-report", version 1,
// docs/verify.md) and as JUnit XML (one testcase a check).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verify/same.hpp"

namespace monokda::verify {

// What the report says about the run besides the checks.
struct ReportContext {
    std::string fixture_path, fixture_digest, config;
    std::string candidate_path, candidate_digest;
    std::vector<std::string> exported, ignored;
    std::map<std::string, std::string> options;  // in_proj, envelope, ssm_layout, map, stage_order
    std::string envelope_source;                 // "measured", "read from FILE", or why there is none
    std::vector<std::string> envelope_orders;    // the runs the envelope's bounds come from
    std::string envelope_widening;
};

nlohmann::json report_json(const std::vector<Check>& checks, const ReportContext& ctx);
std::string junit_xml(const std::vector<Check>& checks, const ReportContext& ctx);
// One line a check, then the verdict line.
std::string report_text(const std::vector<Check>& checks);

}  // namespace monokda::verify
