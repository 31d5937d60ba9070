// The reduction-order envelope (emulator/envelope.hpp, SPEC §5): the fixture digests it is keyed by,
// measured over many orders, widened for the matrix unit's in_proj, saved and read back as JSON.
#include "emulator/envelope.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/progress.hpp"

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/version.hpp"
#include "emulator/builtin_envelopes.hpp"  // generated from emulator/envelopes/*.json
#include "reference/reference.hpp"

namespace monokda::emu {

const char* const kEnvelopeOutputs[7] = {"x", "proj", "g1", "qkv", "o", "core_out", "ssm_state"};

const EnvelopeBound* Envelope::find(const std::string& name) const {
    for (const auto& o : outputs)
        if (o.name == name) return &o;
    return nullptr;
}

namespace {
const char* const kOrderList[] = {"sequential", "pairwise",  "shuffle:1", "split:2",  "shuffle:2", "split:7",
                                 "shuffle:3",  "split:32",  "shuffle:4", "split:3",  "shuffle:5", "split:13",
                                 "shuffle:6",  "split:100", "shuffle:7", "split:5",  "shuffle:8", "split:64"};
}  // namespace

int max_envelope_order_count() { return int(sizeof kOrderList / sizeof kOrderList[0]); }

std::vector<std::string> default_envelope_orders(int n) {
    const int max = max_envelope_order_count();
    if (n < 2 || n > max) bad_input("envelope orders must be in 2.." + std::to_string(max) + " (got " + std::to_string(n) + ")");
    return std::vector<std::string>(kOrderList, kOrderList + n);
}

namespace {

// FNV-1a over named byte buffers in name order (as a TensorFile's map holds them): each name's
// characters, the buffer's size, its 64-bit words, then its tail bytes. The fixture's 100 MB in a
// few tens of ms.
std::string digest_of(std::vector<std::pair<std::string, std::pair<const uint8_t*, size_t>>> bufs) {
    std::sort(bufs.begin(), bufs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t w) { h ^= w; h *= 0x100000001b3ull; };
    for (const auto& [name, buf] : bufs) {
        const auto [p, size] = buf;
        for (char ch : name) mix(uint8_t(ch));
        mix(size);
        const size_t n8 = size / 8;
        for (size_t i = 0; i < n8; ++i) {
            uint64_t w;
            std::memcpy(&w, p + i * 8, 8);
            mix(w);
        }
        for (size_t i = n8 * 8; i < size; ++i) mix(p[i]);
    }
    char out[20];
    std::snprintf(out, sizeof out, "%016llx", (unsigned long long)h);
    return out;
}

}  // namespace

std::string file_digest(const TensorFile& f) {
    std::vector<std::pair<std::string, std::pair<const uint8_t*, size_t>>> bufs;
    for (const auto& [name, t] : f.tensors) bufs.push_back({name, {t.bytes.data(), t.bytes.size()}});
    return digest_of(std::move(bufs));
}

// the digest of in.to_file(), without building it
std::string inputs_digest(const StepInputs& in) {
    std::vector<std::pair<std::string, std::pair<const uint8_t*, size_t>>> bufs;
    for_each_input(in.cfg, [&](const char* name, DType, const std::vector<int64_t>&, auto member) {
        const auto& v = in.*member;
        bufs.push_back({name, {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(v[0])}});
    });
    return digest_of(std::move(bufs));
}

static std::string config_str(const Config& c) {
    return "D=" + std::to_string(c.D) + " H=" + std::to_string(c.H) + " K=" + std::to_string(c.K) + " V=" +
           std::to_string(c.V) + " F=" + std::to_string(c.F) + " N=" + std::to_string(c.N) + " R=" + std::to_string(c.R) +
           " L=" + std::to_string(c.L) + " nb=" + std::to_string(c.nb);
}

int default_envelope_order_count(const Config& c) { return c.D >= 4096 ? 8 : 12; }

void add_envelope_sample(Envelope& env, const std::string& label, const std::vector<TensorDiff>& distances) {
    if (env.outputs.empty())
        for (const char* name : kEnvelopeOutputs) env.outputs.push_back(EnvelopeBound{name, {}, 0, 1, 0, 0});
    if (distances.size() != env.outputs.size()) bad_input("envelope sample: one distance per output expected");
    env.orders.push_back(label);
    for (size_t k = 0; k < env.outputs.size(); ++k) {
        EnvelopeBound& b = env.outputs[k];
        const TensorDiff& d = distances[k];
        b.per_order.push_back(d);
        b.max_row_ulp = std::max(b.max_row_ulp, b.name == "ssm_state" ? 0.0 : d.max_row_ulp);
        b.max_frac_identical = b.per_order.size() == 1 ? d.frac_identical : std::max(b.max_frac_identical, d.frac_identical);
        b.min_frac_identical = std::min(b.min_frac_identical, d.frac_identical);
        b.max_rel_l2 = std::max(b.max_rel_l2, d.rel_l2);
        b.max_abs = std::max(b.max_abs, d.max_abs);
    }
}

namespace {

// The f32 reference once per order, each order's distance from `oracle` a sample of `env`.
void sample_orders(Envelope& env, const StepInputs& in, const std::vector<std::string>& orders, const TensorFile& oracle,
                   Progress& progress) {
    std::vector<ReductionOrder> ords;
    for (const auto& o : orders) ords.push_back(ReductionOrder::parse(o));
    std::vector<std::vector<TensorDiff>> diffs(orders.size());
    // each order's run is independent: spread the orders over the cores (the reference's own
    // parallel loops then run single-threaded inside each)
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < int(orders.size()); ++i) {
        TensorFile f = ref::run<float>(in, ords[size_t(i)]).to_file(in.cfg);
        for (const char* name : kEnvelopeOutputs) diffs[size_t(i)].push_back(diff_tensors(name, f.get(name), oracle.get(name)));
        progress.add();
    }
    progress.finish();
    for (size_t i = 0; i < orders.size(); ++i) add_envelope_sample(env, orders[i], diffs[i]);
}

}  // namespace

Envelope build_envelope(const StepInputs& in, const std::vector<std::string>& orders, TensorFile* oracle_out) {
    Envelope env;
    env.fixture_digest = inputs_digest(in);
    env.config = config_str(in.cfg);
    Progress progress("envelope: the f64 oracle and " + std::to_string(orders.size()) + " reduction orders",
                      int64_t(orders.size()) + 1);
    const TensorFile oracle = ref::run<double>(in, {}).to_file(in.cfg);
    progress.add();
    sample_orders(env, in, orders, oracle, progress);
    if (oracle_out) *oracle_out = oracle;
    return env;
}

void add_envelope_orders(Envelope& env, const StepInputs& in, const std::vector<std::string>& orders, const TensorFile& oracle) {
    if (env.fixture_digest != inputs_digest(in)) bad_input("envelope orders added from another fixture");
    Progress progress("envelope: " + std::to_string(orders.size()) + " more reduction orders", int64_t(orders.size()));
    sample_orders(env, in, orders, oracle, progress);
}

Envelope widen(const Envelope& env, const Widening& w) {
    if (!(w.spread >= 1) || !(w.row_ulp_floor >= 0)) bad_input("widening: spread must be >= 1 and the row ulp floor >= 0");
    Envelope out = env;
    for (const auto& name : w.outputs) {
        auto it = std::find_if(out.outputs.begin(), out.outputs.end(), [&](const EnvelopeBound& b) { return b.name == name; });
        if (it == out.outputs.end()) bad_input("widening: the envelope has no output '" + name + "'");
        it->min_frac_identical = std::max(0.0, 1 - w.spread * (1 - it->min_frac_identical));
        it->max_frac_identical = std::max(0.0, 1 - w.spread * (1 - it->max_frac_identical));  // the spread × spread too
        it->max_rel_l2 *= w.spread;
        it->max_abs *= w.spread;
        if (name != "ssm_state") it->max_row_ulp = w.spread * it->max_row_ulp + w.row_ulp_floor;
    }
    char how[200];
    std::snprintf(how, sizeof how, " (worst × %.4g, row ulp + %g, on %zu outputs)", w.spread, w.row_ulp_floor, w.outputs.size());
    out.widening += (out.widening.empty() ? "" : "; ") + w.reason + how;
    return out;
}

Widening matrix_unit_in_proj_widening() {
    Widening w;
    w.reason = "in_proj on the matrix unit";
    w.outputs = {"proj", "g1", "qkv", "o", "core_out", "ssm_state"};
    w.spread = 4.0 / 3;
    w.row_ulp_floor = 0.5;
    return w;
}

std::vector<TensorDiff> envelope_distances(const Envelope& env, const TensorFile& candidate, const TensorFile& oracle) {
    std::vector<TensorDiff> out;
    for (const auto& b : env.outputs) {
        if (!candidate.has(b.name) || !oracle.has(b.name)) bad_input("envelope check: output '" + b.name + "' missing");
        out.push_back(diff_tensors(b.name, candidate.get(b.name), oracle.get(b.name)));
    }
    return out;
}

EnvelopeLimits envelope_limits(const Envelope& env, const EnvelopeBound& b, int64_t numel) {
    EnvelopeLimits l;
    l.state = b.name == "ssm_state";
    const double spread = std::max(0.0, b.max_frac_identical - b.min_frac_identical);
    const double slack = numel > 0 ? double(env.identical_slack) / double(numel) : 0.0;
    l.min_frac_identical = b.min_frac_identical - std::max({env.identical_margin, spread, slack});
    l.max_differing = int64_t(std::floor(std::max(0.0, 1 - l.min_frac_identical) * double(numel) + 1e-6));
    l.max_row_ulp = std::max(b.max_row_ulp + env.row_ulp_margin, 1.0);
    l.max_rel_l2 = b.max_rel_l2 * (1 + env.rel_margin);
    l.max_abs = b.max_abs * (1 + env.rel_margin);
    return l;
}

std::vector<EnvelopeCheck> check_distances(const Envelope& env, const std::vector<TensorDiff>& distances) {
    if (distances.size() != env.outputs.size()) bad_input("envelope check: one distance per output expected");
    std::vector<EnvelopeCheck> out;
    for (size_t k = 0; k < env.outputs.size(); ++k) {
        const EnvelopeBound& b = env.outputs[k];
        EnvelopeCheck c;
        c.name = b.name;
        c.diff = distances[k];
        const EnvelopeLimits l = envelope_limits(env, b, c.diff.numel);
        auto over = [&](const char* what, double v, double bound) {
            if (!(v <= bound)) {
                c.inside = false;
                char buf[160];
                std::snprintf(buf, sizeof buf, "%s%s %.4g > bound %.4g", c.why.empty() ? "" : "; ", what, v, bound);
                c.why += buf;
            }
        };
        if (l.state) {
            over("rel-L2", c.diff.rel_l2, l.max_rel_l2);
            over("max abs", c.diff.max_abs, l.max_abs);
        } else {
            over("row ulp", c.diff.max_row_ulp, l.max_row_ulp);
            if (c.diff.differing > l.max_differing) {
                c.inside = false;
                char buf[160];
                std::snprintf(buf, sizeof buf, "%sidentical %.4f%% < floor %.4f%%", c.why.empty() ? "" : "; ",
                              100 * c.diff.frac_identical, 100 * l.min_frac_identical);
                c.why += buf;
            }
        }
        if (c.diff.nan_mismatch) { c.inside = false; c.why += c.why.empty() ? "NaN mismatch" : "; NaN mismatch"; }
        out.push_back(c);
    }
    return out;
}

std::vector<EnvelopeCheck> check_envelope(const Envelope& env, const TensorFile& candidate, const TensorFile& oracle) {
    return check_distances(env, envelope_distances(env, candidate, oracle));
}

std::string format_envelope_checks(const std::vector<EnvelopeCheck>& checks, const Envelope& env) {
    std::string s;
    char line[400];
    if (!env.widening.empty()) s += "  bounds widened: " + env.widening + "\n";
    std::snprintf(line, sizeof line, "  %-10s %-7s %22s %16s %22s\n", "output", "", "identical (floor)", "row-ulp (bound)",
                  "rel-L2 (bound)");
    s += line;
    for (const auto& c : checks) {
        const EnvelopeBound* b = env.find(c.name);
        const EnvelopeLimits l = b ? envelope_limits(env, *b, c.diff.numel) : EnvelopeLimits{};
        char ident[40], ulp[40], rel[40];
        if (l.state) {
            std::snprintf(ident, sizeof ident, "%9.4f%% %12s", 100 * c.diff.frac_identical, "");
            std::snprintf(ulp, sizeof ulp, "%16s", "-");
            std::snprintf(rel, sizeof rel, "%9.3g (%9.3g)", c.diff.rel_l2, l.max_rel_l2);
        } else {
            std::snprintf(ident, sizeof ident, "%9.4f%% (%8.4f%%)", 100 * c.diff.frac_identical, 100 * l.min_frac_identical);
            std::snprintf(ulp, sizeof ulp, "%6.2f (%6.2f)", c.diff.max_row_ulp, l.max_row_ulp);
            std::snprintf(rel, sizeof rel, "%9.3g %11s", c.diff.rel_l2, "");
        }
        std::snprintf(line, sizeof line, "  %-10s %-7s %s %s %s%s%s\n", c.name.c_str(), c.inside ? "inside" : "OUTSIDE", ident,
                      ulp, rel, c.inside ? "" : "  : ", c.why.c_str());
        s += line;
    }
    return s;
}

using nlohmann::json;

static json diff_json(const TensorDiff& d) {
    return {{"numel", d.numel}, {"frac_identical", d.frac_identical}, {"max_row_ulp", d.max_row_ulp}, {"rel_l2", d.rel_l2},
            {"max_abs", d.max_abs}, {"cosine", d.cosine}, {"max_ulp", d.max_ulp}};
}

std::string envelope_text(const Envelope& env) {
    json j;
    j["format"] = "monokda-envelope";
    j["format_version"] = env.format_version;
    j["monokda_version"] = version();
    j["monokda_commit"] = commit();
    j["fixture_digest"] = env.fixture_digest;
    j["config"] = env.config;
    j["orders"] = env.orders;
    j["margins"] = {{"rel", env.rel_margin}, {"identical", env.identical_margin}, {"identical_slack", env.identical_slack},
                    {"row_ulp", env.row_ulp_margin}};
    json outs = json::object();
    for (const auto& b : env.outputs) {
        json o;
        o["max_row_ulp"] = b.max_row_ulp;
        o["min_frac_identical"] = b.min_frac_identical;
        o["max_rel_l2"] = b.max_rel_l2;
        o["max_abs"] = b.max_abs;
        json per = json::array();
        for (size_t i = 0; i < b.per_order.size(); ++i) {
            json d = diff_json(b.per_order[i]);
            d["order"] = i < env.orders.size() ? env.orders[i] : "?";
            per.push_back(d);
        }
        o["per_order"] = per;
        outs[b.name] = o;
    }
    j["outputs"] = outs;
    if (!env.plan_order.empty()) {
        j["plan_order"] = env.plan_order;
        j["plan_order_reference_digest"] = env.plan_order_reference_digest;
        json d = json::object();
        for (size_t k = 0; k < env.plan_order_distance.size() && k < env.outputs.size(); ++k)
            d[env.outputs[k].name] = diff_json(env.plan_order_distance[k]);
        j["plan_order_distance"] = d;
    }
    if (!env.widening.empty()) j["widening"] = env.widening;
    return j.dump(1) + "\n";
}

void write_envelope(const std::string& path, const Envelope& env) { write_file_atomic(path, envelope_text(env)); }

static TensorDiff diff_from_json(const json& d, const std::string& name) {
    TensorDiff t;
    t.name = name;
    t.frac_identical = d.at("frac_identical").get<double>();
    t.max_row_ulp = d.at("max_row_ulp").get<double>();
    t.rel_l2 = d.at("rel_l2").get<double>();
    t.max_abs = d.at("max_abs").get<double>();
    t.cosine = d.at("cosine").get<double>();
    t.max_ulp = d.at("max_ulp").get<int64_t>();
    if (d.contains("numel")) t.numel = d.at("numel").get<int64_t>();
    return t;
}

Envelope parse_envelope(const std::string& text, const std::string& what) {
    Envelope env;
    try {
        json j = json::parse(text);
        if (j.at("format").get<std::string>() != "monokda-envelope") bad_input(what + " is not a monokda envelope");
        env.format_version = j.at("format_version").get<int>();
        if (env.format_version != 1) bad_input(what + ": unsupported format_version");
        env.fixture_digest = j.at("fixture_digest").get<std::string>();
        env.config = j.at("config").get<std::string>();
        env.orders = j.at("orders").get<std::vector<std::string>>();
        env.rel_margin = j.at("margins").at("rel").get<double>();
        env.identical_margin = j.at("margins").at("identical").get<double>();
        env.row_ulp_margin = j.at("margins").at("row_ulp").get<double>();
        if (j.at("margins").contains("identical_slack")) env.identical_slack = j.at("margins").at("identical_slack").get<int64_t>();
        for (const char* name : kEnvelopeOutputs) {
            const json& o = j.at("outputs").at(name);
            EnvelopeBound b;
            b.name = name;
            b.max_row_ulp = o.at("max_row_ulp").get<double>();
            b.min_frac_identical = o.at("min_frac_identical").get<double>();
            b.max_rel_l2 = o.at("max_rel_l2").get<double>();
            b.max_abs = o.at("max_abs").get<double>();
            for (const json& d : o.at("per_order")) b.per_order.push_back(diff_from_json(d, name));
            b.max_frac_identical = b.min_frac_identical;  // the spread, from the orders' own distances
            for (const TensorDiff& d : b.per_order) b.max_frac_identical = std::max(b.max_frac_identical, d.frac_identical);
            env.outputs.push_back(b);
        }
        if (j.contains("plan_order")) {
            env.plan_order = j.at("plan_order").get<std::string>();
            env.plan_order_reference_digest = j.at("plan_order_reference_digest").get<std::string>();
            for (const char* name : kEnvelopeOutputs)
                env.plan_order_distance.push_back(diff_from_json(j.at("plan_order_distance").at(name), name));
        }
        if (j.contains("widening")) env.widening = j.at("widening").get<std::string>();
    } catch (const json::exception& e) {
        bad_input(what + " is malformed: " + e.what());
    }
    return env;
}

Envelope read_envelope(const std::string& path) {
    return parse_envelope(read_text_file(path, uint64_t(1) << 26, "envelope"), "envelope '" + path + "'");
}

const Envelope* builtin_envelope(const std::string& key) {
    static const std::vector<std::pair<std::string, Envelope>> all = [] {
        std::vector<std::pair<std::string, Envelope>> v;
        for (const auto& [k, text] : kBuiltinEnvelopes) v.emplace_back(k, parse_envelope(text, std::string("built-in envelope ") + k));
        return v;
    }();
    for (const auto& [k, e] : all)
        if (k == key) return &e;
    return nullptr;
}

}  // namespace monokda::emu
