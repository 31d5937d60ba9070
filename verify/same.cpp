// SPEC §5 "the same": its thresholds, how a check's first failing element is located and written,
// the check list in report order, and verify_step, which runs them all (the checks themselves:
// exact_checks.cpp, stage_checks.cpp, envelope_checks.cpp).
#include "verify/same.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "verify/check_draft.hpp"

namespace monokda::verify {

const Thresholds& thresholds() {
    static const Thresholds t;
    return t;
}

int64_t allowed_differing(int64_t n, double floor, const Thresholds& t) {
    // the count at the floor's rate and three standard deviations of it (the 1e-9 keeps a whole
    // number from landing just below itself: 0.999 is not exact)
    const double mean = double(n) * (1.0 - floor);
    const int64_t by_rate = int64_t(std::floor(mean + 3 * std::sqrt(mean) + 1e-9));
    return std::max(by_rate, t.small_step_allowance);
}

InProj parse_in_proj(const std::string& s) {
    if (s == "exact") return InProj::exact;
    if (s == "tensor-cores") return InProj::tensor_cores;
    bad_input("--in-proj must be exact or tensor-cores (got '" + s + "')");
}

const char* to_string(InProj p) { return p == InProj::exact ? "exact" : "tensor-cores"; }

const char* to_string(Status s) {
    switch (s) {
        case Status::passed: return "pass";
        case Status::failed: return "fail";
        case Status::not_checked: return "not_checked";
    }
    return "?";
}

std::string Element::str() const {
    std::string s = tensor;
    if (!part.empty()) s += " (" + part + ")";
    for (const auto& [k, v] : at) s += " " + k + " " + std::to_string(v);
    auto val = [](double v, const std::string& bits) {
        char b[64];
        std::snprintf(b, sizeof b, "%.9g", v);
        return std::string(b) + " (" + bits + ")";
    };
    return s + ": " + val(candidate, candidate_bits) + ", expected " + val(expected, expected_bits);
}

Element locate(const Config& c, const std::string& tensor, int64_t index) {
    Element e;
    e.tensor = tensor;
    e.index = index;
    const int64_t L = c.L, E = c.E();
    auto row = [&](int64_t width) {
        const int64_t s = index / width;
        e.at = {{"request", s / L}, {"token", s % L}};
        return index % width;
    };
    // a column of the conv channels (q|k|v) as part and head
    auto channel = [&](int64_t ch) {
        e.part = std::string(1, "qkv"[std::min<int64_t>(ch / E, 2)]);
        e.at.push_back({"head", (ch % E) / (ch < 2 * E ? c.K : c.V)});
    };
    if (tensor == "prefix_out" || tensor == "x") {
        e.at.push_back({"column", row(c.D)});
    } else if (tensor == "blocks") {
        const int64_t s = index / (8 * int64_t(c.D));
        e.at = {{"request", s / L}, {"token", s % L}, {"bank_row", (index / c.D) % 8}, {"column", index % c.D}};
    } else if (tensor == "proj") {
        const int64_t col = row(c.N);
        if (col < 3 * E) channel(col);
        else if (col < 4 * E) e.part = "g", e.at.push_back({"head", (col - 3 * E) / c.V});
        else if (col < c.col_beta()) e.part = "f_a";
        else if (col < c.col_beta() + c.H) e.part = "beta", e.at.push_back({"head", col - c.col_beta()});
        else e.part = "pad";
        e.at.push_back({"column", col});
    } else if (tensor == "qkv") {
        const int64_t col = row(c.C);
        channel(col);
        e.at.push_back({"column", col});
    } else if (tensor == "g1" || tensor == "o" || tensor == "core_out") {
        const int64_t col = row(E);
        e.at.push_back({"head", col / (tensor == "g1" ? c.K : c.V)});
        e.at.push_back({"column", col});
    } else if (tensor == "conv_state") {
        const int64_t len = c.conv_len();
        const int64_t slot = index / (len * c.C);
        const int64_t entry = c.conv_layout == ConvLayout::sd ? (index / c.C) % len : index % len;
        const int64_t ch = c.conv_layout == ConvLayout::sd ? index % c.C : (index / len) % c.C;
        e.at = {{"slot", slot}, {"entry", entry}};
        channel(ch);
        e.at.push_back({"channel", ch});
    } else if (tensor == "ssm_state") {
        e.at = {{"slot", index / (int64_t(c.H) * c.V * c.K)}, {"head", (index / (int64_t(c.V) * c.K)) % c.H},
                {"v", (index / c.K) % c.V}, {"k", index % c.K}};
    }
    return e;
}

std::string Check::str() const {
    std::string s = std::string(status == Status::passed ? "PASS" : status == Status::failed ? "FAIL" : "----") + " " +
                    name + ": " + summary;
    if (status == Status::failed && has_first)
        s += "; first: " + first.str() + (differing > 1 ? " (and " + std::to_string(differing - 1) + " more)" : "");
    return s;
}

bool all_passed(const std::vector<Check>& checks) { return first_failure(checks) == nullptr; }

const Check* first_failure(const std::vector<Check>& checks) {
    for (const Check& c : checks)
        if (c.status == Status::failed) return &c;
    return nullptr;
}

Candidate Candidate::all(StepOutputs<float> out) {
    Candidate c;
    c.out = std::move(out);
    for (const std::string& n : output_names()) c.present.insert(n);
    return c;
}

const std::vector<std::string>& check_names() {
    static const std::vector<std::string> names = {
        "exact.prefix_out",  "exact.blocks",  "exact.conv_state.kept", "exact.conv_state.untouched",
        "exact.ssm_state.untouched", "exact.null_requests", "own_proj.conv_state",
        "stage.x", "stage.proj", "stage.g1", "stage.qkv", "stage.o", "stage.ssm_state", "stage.core_out",
        "envelope.x", "envelope.proj", "envelope.g1", "envelope.qkv", "envelope.o", "envelope.core_out",
        "envelope.ssm_state"};
    return names;
}

std::vector<Check> verify_step(const StepInputs& in, const Candidate& cand, const Options& o, const emu::Envelope* env,
                               const TensorFile* oracle, const std::string& no_envelope_why) {
    std::vector<Check> all = exact_checks(in, cand);
    for (Check& ck : stage_checks<float>(in, cand, o)) all.push_back(std::move(ck));
    if (env && oracle) {
        for (Check& ck : envelope_checks(in, cand, *env, *oracle)) all.push_back(std::move(ck));
    } else {
        for (const char* n : emu::kEnvelopeOutputs) {
            detail::Draft d(in.cfg, std::string("envelope.") + n, "envelope", n);
            all.push_back(d.not_checked(no_envelope_why));
        }
    }
    return all;
}

}  // namespace monokda::verify
