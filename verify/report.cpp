// `monokda verify`'s verdicts as text, JSON and JUnit XML (verify/report.hpp, docs/verify.md).
#include "verify/report.hpp"

#include <cmath>

#include "core/version.hpp"

namespace monokda::verify {

using nlohmann::json;

namespace {

// JSON has no Inf or NaN: those go as the strings "inf", "-inf", "nan"
json number(double v) {
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

int count(const std::vector<Check>& checks, Status s) {
    int n = 0;
    for (const Check& c : checks) n += c.status == s;
    return n;
}

std::string xml_escape(const std::string& s) {
    std::string o;
    for (char ch : s) {
        switch (ch) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            case '\'': o += "&apos;"; break;
            default: o += ch;
        }
    }
    return o;
}

}  // namespace

json report_json(const std::vector<Check>& checks, const ReportContext& ctx) {
    json j;
    j["format"] = "monokda-verify-report";
    j["format_version"] = 1;
    j["monokda_version"] = version();
    j["monokda_commit"] = commit();
    j["fixture"] = {{"path", ctx.fixture_path}, {"digest", ctx.fixture_digest}, {"config", ctx.config}};
    j["candidate"] = {{"path", ctx.candidate_path}, {"digest", ctx.candidate_digest}, {"exported", ctx.exported},
                      {"ignored", ctx.ignored}};
    j["options"] = ctx.options;
    j["envelope"] = {{"source", ctx.envelope_source}, {"runs", ctx.envelope_orders}, {"widening", ctx.envelope_widening}};
    j["verdict"] = all_passed(checks) ? "pass" : "fail";
    j["counts"] = {{"pass", count(checks, Status::passed)}, {"fail", count(checks, Status::failed)},
                   {"not_checked", count(checks, Status::not_checked)}};
    json arr = json::array();
    for (const Check& c : checks) {
        json k;
        k["name"] = c.name;
        k["category"] = c.category;
        k["tensor"] = c.tensor;
        k["status"] = to_string(c.status);
        k["summary"] = c.summary;
        k["elements"] = c.elements;
        k["differing"] = c.differing;
        json nums = json::object();
        for (const auto& [key, v] : c.numbers) nums[key] = number(v);
        k["numbers"] = nums;
        if (c.status == Status::failed && c.has_first) {
            const Element& e = c.first;
            json at = json::object();
            for (const auto& [key, v] : e.at) at[key] = v;
            k["first"] = {{"tensor", e.tensor}, {"index", e.index}, {"part", e.part}, {"at", at},
                          {"candidate", number(e.candidate)}, {"expected", number(e.expected)},
                          {"candidate_bits", e.candidate_bits}, {"expected_bits", e.expected_bits},
                          {"text", e.str()}};
            k["more"] = c.differing > 0 ? c.differing - 1 : 0;
        } else {
            k["first"] = nullptr;
            k["more"] = 0;
        }
        arr.push_back(k);
    }
    j["checks"] = arr;
    return j;
}

std::string junit_xml(const std::vector<Check>& checks, const ReportContext& ctx) {
    const int n = int(checks.size()), fail = count(checks, Status::failed), skip = count(checks, Status::not_checked);
    std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    x += "<testsuites name=\"monokda verify\" tests=\"" + std::to_string(n) + "\" failures=\"" + std::to_string(fail) +
         "\" skipped=\"" + std::to_string(skip) + "\">\n";
    x += "  <testsuite name=\"" + xml_escape("monokda verify " + ctx.candidate_path) + "\" tests=\"" + std::to_string(n) +
         "\" failures=\"" + std::to_string(fail) + "\" errors=\"0\" skipped=\"" + std::to_string(skip) + "\">\n";
    x += "    <properties>\n";
    auto prop = [&](const std::string& k, const std::string& v) {
        x += "      <property name=\"" + xml_escape(k) + "\" value=\"" + xml_escape(v) + "\"/>\n";
    };
    prop("monokda_version", version());
    prop("monokda_commit", commit());
    prop("fixture", ctx.fixture_path);
    prop("fixture_digest", ctx.fixture_digest);
    prop("candidate_digest", ctx.candidate_digest);
    for (const auto& [k, v] : ctx.options) prop(k, v);
    x += "    </properties>\n";
    for (const Check& c : checks) {
        x += "    <testcase classname=\"monokda.verify." + xml_escape(c.category) + "\" name=\"" + xml_escape(c.name) + "\">\n";
        if (c.status == Status::failed)
            x += "      <failure message=\"" + xml_escape(c.str()) + "\" type=\"" + xml_escape(c.category) + "\">" +
                 xml_escape(c.str()) + "</failure>\n";
        else if (c.status == Status::not_checked)
            x += "      <skipped message=\"" + xml_escape("not checked: " + c.summary) + "\"/>\n";
        x += "      <system-out>" + xml_escape(c.summary) + "</system-out>\n    </testcase>\n";
    }
    x += "  </testsuite>\n</testsuites>\n";
    return x;
}

std::string report_text(const std::vector<Check>& checks) {
    std::string s;
    std::string failed;
    for (const Check& c : checks) {
        s += c.str() + "\n";
        if (c.status == Status::failed) failed += (failed.empty() ? "" : ", ") + c.name;
    }
    const int pass = count(checks, Status::passed), nc = count(checks, Status::not_checked), fail = count(checks, Status::failed);
    s += "verify: " + std::string(fail ? "FAIL" : "PASS") + " (" + std::to_string(pass) + " passed, " + std::to_string(fail) +
         " failed" + (fail ? ": " + failed : "") + ", " + std::to_string(nc) + " not checked)\n";
    return s;
}

}  // namespace monokda::verify
