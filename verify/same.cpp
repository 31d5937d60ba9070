#include "verify/same.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "core/compare.hpp"
#include "core/error.hpp"
#include "reference/reference.hpp"

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

namespace {

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}
std::string pct(double frac) { return fmt("%.4g", 100 * frac) + " %"; }

double value_of(bf16 b) { return b.to_double(); }
double value_of(float f) { return f; }
double value_of(double d) { return d; }
std::string bits_of(bf16 b) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%04x", unsigned(b.bits));
    return s;
}
std::string bits_of(float f) {
    char s[16];
    std::snprintf(s, sizeof s, "0x%08x", unsigned(f32_bits(f)));
    return s;
}
std::string bits_of(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    char s[24];
    std::snprintf(s, sizeof s, "0x%016llx", (unsigned long long)u);
    return s;
}
template <class T>
bool same_bits_one(T a, T b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// A check under construction: differences are noted as they are found; the first is located.
struct Draft {
    Check ck;
    const Config& cfg;
    Draft(const Config& c, std::string name, std::string category, std::string tensor) : cfg(c) {
        ck.name = std::move(name);
        ck.category = std::move(category);
        ck.tensor = std::move(tensor);
    }
    template <class A, class B>
    void note(int64_t index, A cand, B want) {
        if (ck.differing++ == 0) first(index, cand, want);
    }
    template <class A, class B>
    void first(int64_t index, A cand, B want) {
        ck.has_first = true;
        ck.first = locate(cfg, ck.tensor, index);
        ck.first.candidate = value_of(cand);
        ck.first.expected = value_of(want);
        ck.first.candidate_bits = bits_of(cand);
        ck.first.expected_bits = bits_of(want);
    }
    // passed when nothing differs, else failed; `what` says what was compared
    Check exact(const std::string& what) {
        ck.status = ck.differing ? Status::failed : Status::passed;
        ck.summary = what + ": " + (ck.differing ? std::to_string(ck.differing) + " of " + std::to_string(ck.elements) +
                                                       " elements differ"
                                                 : "all " + std::to_string(ck.elements) + " elements bit-identical");
        ck.numbers = {{"elements", double(ck.elements)}, {"differing", double(ck.differing)}};
        return ck;
    }
    Check not_checked(const std::string& why) {
        ck.status = Status::not_checked;
        ck.summary = why;
        ck.differing = ck.elements = 0;
        ck.has_first = false;
        return ck;
    }
};

// The slots a step writes (SPEC §3 D, E): conv, the running slot of each request that has one;
// ssm, every positive slot of a request that has an initial state.
std::vector<char> conv_written(const StepInputs& in) {
    const Config& c = in.cfg;
    std::vector<char> w(size_t(std::max(c.slots, 0)), 0);
    for (int r = 0; r < c.R; ++r)
        if (in.idx(r, 0) > 0) w[size_t(in.idx(r, 0))] = 1;
    return w;
}
bool has_initial_state(const StepInputs& in, int r) { return in.idx(r, in.num_accepted[size_t(r)] - 1) > 0; }
std::vector<char> ssm_written(const StepInputs& in) {
    const Config& c = in.cfg;
    std::vector<char> w(size_t(std::max(c.slots, 0)), 0);
    for (int r = 0; r < c.R; ++r)
        if (has_initial_state(in, r))
            for (int t = 0; t < c.L; ++t)
                if (in.idx(r, t) > 0) w[size_t(in.idx(r, t))] = 1;
    return w;
}

const std::vector<bf16>& bf16_tensor(const StepOutputs<float>& o, const std::string& name) {
    if (name == "prefix_out") return o.prefix_out;
    if (name == "blocks") return o.blocks;
    if (name == "core_out") return o.core_out;
    if (name == "conv_state") return o.conv_state;
    if (name == "x") return o.x;
    if (name == "proj") return o.proj;
    if (name == "g1") return o.g1;
    if (name == "qkv") return o.qkv;
    if (name == "o") return o.o;
    throw std::logic_error("no bf16 output '" + name + "'");
}

int row_width(const Config& c, const std::string& name) {
    if (name == "prefix_out" || name == "x") return c.D;
    if (name == "proj") return c.N;
    if (name == "qkv") return c.C;
    return c.E();  // g1, o, core_out
}

// A [S, width] bf16 stage output against the reference stage's: the identical fraction against
// `floor` (with the small-step allowance) and the row-scale ulp bound. Where more elements differ
// than the floor allows, `noise` measures how many reordering the stage's own sums alone moves on
// this step (the most over other orders, fed the same inputs): up to that (with its margin) passes.
template <class Noise>
Check judge_stage(Draft d, const std::vector<bf16>& cand, const std::vector<bf16>& want, double floor,
                  const Thresholds& t, const std::string& fed, Noise noise) {
    const Config& c = d.cfg;
    const int width = row_width(c, d.ck.tensor);
    const std::vector<int64_t> shape{c.S(), width};
    const TensorDiff diff = diff_tensors(d.ck.tensor, Tensor::of(DType::BF16, shape, cand), Tensor::of(DType::BF16, shape, want));
    Check& ck = d.ck;
    ck.elements = diff.numel;
    ck.differing = diff.differing;
    const int64_t by_floor = allowed_differing(diff.numel, floor, t);
    int64_t reordered = -1, allowed = by_floor;  // reordered: what other orders move (measured only when needed)
    if (diff.differing > by_floor) {
        reordered = noise();
        allowed = std::max(by_floor, int64_t(std::floor(double(reordered) * (1 + t.stage_noise_margin))));
    }
    const bool rate_ok = diff.differing <= allowed, ulp_ok = diff.max_row_ulp <= t.stage_row_ulp && !diff.nan_mismatch;
    ck.status = rate_ok && ulp_ok ? Status::passed : Status::failed;
    if (!ulp_ok) {
        // the first element over the bound (or NaN against a number)
        for (int64_t s = 0; s < c.S() && !ck.has_first; ++s) {
            double scale = 0;
            for (int i = 0; i < width; ++i) scale = std::fmax(scale, std::fabs(value_of(want[size_t(s * width + i)])));
            const double ulp = bf16_row_ulp(scale);
            for (int i = 0; i < width; ++i) {
                const size_t k = size_t(s * width + i);
                const double a = value_of(cand[k]), b = value_of(want[k]);
                if (cand[k].bits == want[k].bits || (std::isnan(a) && std::isnan(b))) continue;
                if (std::isnan(a) != std::isnan(b) || !(std::fabs(a - b) <= t.stage_row_ulp * ulp)) {
                    d.first(int64_t(k), cand[k], want[k]);
                    break;
                }
            }
        }
    } else if (diff.first_differing >= 0) {
        d.first(diff.first_differing, cand[size_t(diff.first_differing)], want[size_t(diff.first_differing)]);
    }
    ck.summary = fed + ": " + pct(diff.frac_identical) + " bit-identical (floor " + pct(floor) + ": " +
                 std::to_string(diff.differing) + " of " + std::to_string(diff.numel) + " differ, " +
                 std::to_string(by_floor) + " allowed" +
                 (reordered >= 0 ? "; reordering the stage's sums alone moves " + std::to_string(reordered) + " here, " +
                                       std::to_string(allowed) + " allowed"
                                 : "") +
                 "), max " + fmt("%.3g", diff.max_row_ulp) + " ulp at row scale (bound " + fmt("%g", t.stage_row_ulp) + ")" +
                 (diff.nan_mismatch ? ", NaN against a number" : "");
    ck.numbers = {{"frac_identical", diff.frac_identical}, {"min_frac_identical", floor},
                  {"elements", double(diff.numel)},       {"differing", double(diff.differing)},
                  {"allowed_differing", double(allowed)}, {"reordered_differing", double(reordered)},
                  {"max_row_ulp", diff.max_row_ulp},      {"max_row_ulp_bound", t.stage_row_ulp},
                  {"rel_l2", diff.rel_l2}};
    return ck;
}

}  // namespace

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

std::vector<Check> exact_checks(const StepInputs& in, const Candidate& cand) {
    const Config& c = in.cfg;
    const StepOutputs<float>& o = cand.out;
    std::vector<Check> out;
    std::vector<bf16> prefix_out, blocks, x;
    ref::attnres<float>(in, ReductionOrder{}, prefix_out, blocks, x);  // #1 is elementwise: any order

    {
        Draft d(c, "exact.prefix_out", "exact", "prefix_out");
        for (size_t i = 0; i < prefix_out.size(); ++i, ++d.ck.elements)
            if (o.prefix_out[i].bits != prefix_out[i].bits) d.note(int64_t(i), o.prefix_out[i], prefix_out[i]);
        out.push_back(d.exact("bf16(prefix + delta) (#1)"));
    }
    {
        Draft d(c, "exact.blocks", "exact", "blocks");
        if (!cand.has("blocks")) {
            out.push_back(d.not_checked("not exported (" + std::string(c.block_write ? "required on a block-write layer" : "the layer writes no block row") + ")"));
        } else {
            for (size_t i = 0; i < blocks.size(); ++i, ++d.ck.elements)
                if (o.blocks[i].bits != blocks[i].bits) d.note(int64_t(i), o.blocks[i], blocks[i]);
            out.push_back(d.exact(c.block_write ? "row nb = prefix_out, the other rows as input" : "the bank unchanged (not a block-write layer)"));
        }
    }
    const std::vector<char> conv_w = conv_written(in), ssm_w = ssm_written(in);
    {
        Draft d(c, "exact.conv_state.kept", "exact", "conv_state");
        for (int r = 0; r < c.R; ++r) {
            const int32_t slot = in.idx(r, 0);
            if (slot <= 0) continue;
            const int a = in.num_accepted[size_t(r)];
            for (int j = 0; j < c.W - 2; ++j)
                for (int ch = 0; ch < c.C; ++ch, ++d.ck.elements) {
                    const bf16 got = o.conv_state[size_t(in.conv_at(slot, j, ch))], want = in.conv_state[size_t(in.conv_at(slot, a + j, ch))];
                    if (got.bits != want.bits) d.note(in.conv_at(slot, j, ch), got, want);
                }
        }
        out.push_back(d.ck.elements ? d.exact("entries 0..W-3 of each written slot = the old entries from offset a")
                                    : d.not_checked("no request has a running slot"));
    }
    {
        Draft d(c, "exact.conv_state.untouched", "exact", "conv_state");
        for (int s = 0; s < c.slots; ++s) {
            if (conv_w[size_t(s)]) continue;
            for (int j = 0; j < c.conv_len(); ++j)
                for (int ch = 0; ch < c.C; ++ch, ++d.ck.elements) {
                    const size_t k = size_t(in.conv_at(s, j, ch));
                    if (o.conv_state[k].bits != in.conv_state[k].bits) d.note(int64_t(k), o.conv_state[k], in.conv_state[k]);
                }
        }
        out.push_back(d.exact("slots no request runs on, as input"));
    }
    {
        Draft d(c, "exact.ssm_state.untouched", "exact", "ssm_state");
        const size_t per = size_t(c.H) * c.V * c.K;
        for (int s = 0; s < c.slots; ++s) {
            if (ssm_w[size_t(s)]) continue;
            for (size_t i = 0; i < per; ++i, ++d.ck.elements) {
                const size_t k = size_t(s) * per + i;
                if (!same_bits_one(o.ssm_state[k], in.ssm_state[k])) d.note(int64_t(k), o.ssm_state[k], in.ssm_state[k]);
            }
        }
        out.push_back(d.exact("slots no live request writes (no initial state: no write), as input"));
    }
    {
        // o = +0 and core_out = step F on +0 for every token of a request without an initial state
        int64_t elements = 0, differing = 0;
        bool any = false;
        Draft dout(c, "exact.null_requests", "exact", "o"), dcore(c, "exact.null_requests", "exact", "core_out");
        const int E = c.E();
        for (int r = 0; r < c.R; ++r) {
            if (has_initial_state(in, r)) continue;
            any = true;
            for (int t = 0; t < c.L; ++t)
                for (int e = 0; e < E; ++e) {
                    const size_t k = size_t(r * c.L + t) * E + e;
                    if (cand.has("o")) {
                        ++elements;
                        if (o.o[k].bits != 0) ++differing, dout.note(int64_t(k), o.o[k], bf16{});
                    }
                    ++elements;
                    const bf16 want = bf16::from_bits(zero_core_bits(in.o_norm_w[size_t(e % c.V)]));
                    if (o.core_out[k].bits != want.bits) ++differing, dcore.note(int64_t(k), o.core_out[k], want);
                }
        }
        Draft d = dout.ck.has_first ? dout : dcore;  // o first: core_out follows from it
        d.ck.tensor = "o, core_out";
        d.ck.elements = elements;
        d.ck.differing = differing;
        out.push_back(any ? d.exact(std::string("requests without an initial state: ") + (cand.has("o") ? "o = +0, " : "") +
                                    "core_out = step F on o = +0")
                          : d.not_checked("every request has an initial state"));
    }
    {
        Draft d(c, "own_proj.conv_state", "own_proj", "conv_state");
        if (!cand.has("proj")) {
            out.push_back(d.not_checked("needs proj (not exported): the new entries are the candidate's own proj"));
        } else {
            for (int r = 0; r < c.R; ++r) {
                const int32_t slot = in.idx(r, 0);
                if (slot <= 0) continue;
                for (int t = 0; t < c.L; ++t)
                    for (int ch = 0; ch < c.C; ++ch, ++d.ck.elements) {
                        const int64_t k = in.conv_at(slot, c.W - 2 + t, ch);
                        const bf16 got = o.conv_state[size_t(k)], want = o.proj[size_t(r * c.L + t) * c.N + ch];
                        if (got.bits != want.bits) d.note(k, got, want);
                    }
            }
            out.push_back(d.ck.elements ? d.exact("new entries W-2.. of each written slot = the candidate's own proj[:, 0:C]")
                                        : d.not_checked("no request has a running slot"));
        }
    }
    return out;
}

template <class T>
std::vector<Check> stage_checks(const StepInputs& in, const Candidate& cand, const Options& opt) {
    const Config& c = in.cfg;
    const StepOutputs<float>& o = cand.out;
    const ReductionOrder& ord = opt.stage_order;
    const Thresholds& t = opt.thresholds;
    std::vector<Check> out;
    auto stage = [&](const char* tensor, std::initializer_list<const char*> inputs, const std::string& fed, auto compute) {
        Draft d(c, std::string("stage.") + tensor, "stage", tensor);
        std::vector<const char*> all(inputs);
        all.push_back(tensor);
        std::string missing;
        for (const char* n : all)
            if (!cand.has(n)) missing += (missing.empty() ? "" : ", ") + std::string(n);
        if (!missing.empty()) {
            out.push_back(d.not_checked("needs " + missing + " (not exported)"));
            return;
        }
        const double floor = std::string(tensor) == "proj" && opt.in_proj == InProj::tensor_cores ? t.stage_identical_tensor_cores
                                                                                                   : t.stage_identical;
        const std::vector<bf16> want = compute(static_cast<T*>(nullptr), ord);
        // the noise: the f32 stage in other orders against `want` (for the oracle, T = double: how far
        // an f32 evaluation in any order moves from the correctly rounded stage)
        auto noise = [&] {
            int64_t most = 0;
            for (const std::string& other : emu::default_envelope_orders(emu::default_envelope_order_count(c))) {
                const ReductionOrder r = ReductionOrder::parse(other);
                if (std::is_same_v<T, float> && r.str() == ord.str()) continue;
                const std::vector<bf16> v = compute(static_cast<float*>(nullptr), r);
                int64_t n = 0;
                for (size_t i = 0; i < v.size(); ++i) n += v[i].bits != want[i].bits;
                most = std::max(most, n);
            }
            return most;
        };
        out.push_back(judge_stage(d, bf16_tensor(o, tensor), want, floor, t, fed, noise));
    };
    // each stage as compute(U*, order): the reference stage in U (float or double) and that order
    stage("x", {}, "A on the fixture", [&](auto* u, const ReductionOrder& r) {
        using U = std::remove_pointer_t<decltype(u)>;
        std::vector<bf16> po, bl, x;
        ref::attnres<U>(in, r, po, bl, x);
        return x;
    });
    stage("proj", {"x"}, "B fed the candidate's x", [&](auto* u, const ReductionOrder& r) {
        return ref::in_proj<std::remove_pointer_t<decltype(u)>>(in, r, o.x);
    });
    stage("g1", {"proj"}, "C fed the candidate's proj", [&](auto* u, const ReductionOrder& r) {
        return ref::f_b<std::remove_pointer_t<decltype(u)>>(in, r, o.proj);
    });
    stage("qkv", {"proj"}, "D fed the candidate's proj", [&](auto* u, const ReductionOrder&) {
        std::vector<bf16> qkv, conv;
        ref::short_conv<std::remove_pointer_t<decltype(u)>>(in, o.proj, qkv, conv);  // no sum: one order
        return qkv;
    });
    // E once for o and ssm_state (again in other orders only for the noise of o)
    std::vector<bf16> rec_o;
    std::vector<T> rec_state;
    const bool rec = cand.has("qkv") && cand.has("proj") && cand.has("g1");
    if (rec) ref::recurrence<T>(in, ord, o.qkv, o.proj, o.g1, rec_o, rec_state);
    stage("o", {"qkv", "proj", "g1"}, "E fed the candidate's qkv, proj, g1", [&](auto* u, const ReductionOrder& r) {
        using U = std::remove_pointer_t<decltype(u)>;
        if (std::is_same_v<U, T> && r.str() == ord.str()) return rec_o;
        std::vector<bf16> oo;
        std::vector<U> st;
        ref::recurrence<U>(in, r, o.qkv, o.proj, o.g1, oo, st);
        return oo;
    });
    {
        Draft d(c, "stage.ssm_state", "stage", "ssm_state");
        if (!rec) {
            std::string missing;
            for (const char* n : {"qkv", "proj", "g1"})
                if (!cand.has(n)) missing += (missing.empty() ? "" : ", ") + std::string(n);
            out.push_back(d.not_checked("needs " + missing + " (not exported)"));
        } else {
            // per written slot and head: max |a - b| <= state_rel * max |b|
            const std::vector<char> w = ssm_written(in);
            const size_t per = size_t(c.V) * c.K;
            double worst = 0, num = 0, den = 0;
            bool nan_mismatch = false;
            for (int s = 0; s < c.slots; ++s) {
                if (!w[size_t(s)]) continue;
                for (int h = 0; h < c.H; ++h) {
                    const size_t off = (size_t(s) * c.H + h) * per;
                    double scale = 0;
                    for (size_t i = 0; i < per; ++i) scale = std::fmax(scale, std::fabs(double(float(rec_state[off + i]))));
                    for (size_t i = 0; i < per; ++i, ++d.ck.elements) {
                        const double a = o.ssm_state[off + i], b = double(float(rec_state[off + i]));
                        if (std::isnan(a) || std::isnan(b)) {
                            if (std::isnan(a) != std::isnan(b)) nan_mismatch = true, d.note(int64_t(off + i), float(a), float(b));
                            continue;
                        }
                        const double err = std::fabs(a - b);
                        num += err * err, den += b * b;
                        const double rel = err == 0 ? 0 : scale > 0 ? err / scale : INFINITY;
                        worst = std::max(worst, rel);
                        if (rel > t.state_rel) d.note(int64_t(off + i), float(a), float(b));
                    }
                }
            }
            Check& ck = d.ck;
            ck.status = ck.differing ? Status::failed : Status::passed;
            if (!ck.elements) ck.status = Status::not_checked;
            const double rel_l2 = den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
            ck.summary = ck.elements ? "E fed the candidate's qkv, proj, g1, written slots: max |diff| " + fmt("%.3g", worst) +
                                           " of the slot-head's largest magnitude (bound " + fmt("%g", t.state_rel) + "), " +
                                           std::to_string(ck.differing) + " of " + std::to_string(ck.elements) +
                                           " over, rel-L2 " + fmt("%.3g", rel_l2) + (nan_mismatch ? ", NaN against a number" : "")
                                     : "no slot is written (no request has an initial state)";
            ck.numbers = {{"max_rel", worst}, {"max_rel_bound", t.state_rel}, {"elements", double(ck.elements)},
                          {"over_bound", double(ck.differing)}, {"rel_l2", rel_l2}};
            out.push_back(ck);
        }
    }
    stage("core_out", {"o", "proj"}, "F fed the candidate's o, proj",
          [&](auto* u, const ReductionOrder& r) { return ref::out_norm<std::remove_pointer_t<decltype(u)>>(in, r, o.o, o.proj); });
    return out;
}

template std::vector<Check> stage_checks<float>(const StepInputs&, const Candidate&, const Options&);
template std::vector<Check> stage_checks<double>(const StepInputs&, const Candidate&, const Options&);

namespace {

Tensor tensor_of(const Config& c, const StepOutputs<float>& o, const std::string& name) {
    if (name == "ssm_state") return Tensor::of(DType::F32, {c.slots, c.H, c.V, c.K}, o.ssm_state);
    return Tensor::of(DType::BF16, {c.S(), row_width(c, name)}, bf16_tensor(o, name));
}

}  // namespace

std::vector<Check> envelope_checks(const StepInputs& in, const Candidate& cand, const emu::Envelope& env,
                                   const TensorFile& oracle) {
    const Config& c = in.cfg;
    std::vector<TensorDiff> dist;
    for (const emu::EnvelopeBound& b : env.outputs) {
        TensorDiff d;
        d.name = b.name;
        d.frac_identical = 1;
        if (cand.has(b.name)) {
            d = diff_tensors(b.name, tensor_of(c, cand.out, b.name), oracle.get(b.name));
        }
        dist.push_back(d);
    }
    const std::vector<emu::EnvelopeCheck> judged = emu::check_distances(env, dist);
    std::vector<Check> out;
    for (size_t k = 0; k < judged.size(); ++k) {
        const emu::EnvelopeCheck& j = judged[k];
        const emu::EnvelopeBound& b = env.outputs[k];
        Draft d(c, "envelope." + j.name, "envelope", j.name);
        if (!cand.has(j.name)) {
            out.push_back(d.not_checked("not exported"));
            continue;
        }
        const TensorDiff& td = j.diff;
        Check& ck = d.ck;
        ck.elements = td.numel;
        ck.differing = td.differing;
        ck.status = j.inside ? Status::passed : Status::failed;
        if (td.first_differing >= 0) {
            const Tensor& want = oracle.get(j.name);
            const size_t i = size_t(td.first_differing);
            if (j.name == "ssm_state") {
                const double w = want.dtype == DType::F64 ? want.as<double>()[i] : double(want.as<float>()[i]);
                d.first(td.first_differing, cand.out.ssm_state[i], w);
            } else {
                d.first(td.first_differing, bf16_tensor(cand.out, j.name)[i], want.as<bf16>()[i]);
            }
        }
        const emu::EnvelopeLimits l = emu::envelope_limits(env, b, td.numel);
        if (l.state) {
            ck.summary = "against the f64 oracle: rel-L2 " + fmt("%.3g", td.rel_l2) + " (bound " + fmt("%.3g", l.max_rel_l2) +
                         "), max abs " + fmt("%.3g", td.max_abs) + " (bound " + fmt("%.3g", l.max_abs) + ")";
            ck.numbers = {{"rel_l2", td.rel_l2},   {"rel_l2_bound", l.max_rel_l2}, {"max_abs", td.max_abs},
                          {"max_abs_bound", l.max_abs}, {"frac_identical", td.frac_identical},
                          {"elements", double(td.numel)}, {"differing", double(td.differing)}};
        } else {
            ck.summary = "against the f64 oracle: " + pct(td.frac_identical) + " identical (floor " + pct(l.min_frac_identical) +
                         "), " + fmt("%.3g", td.max_row_ulp) + " ulp at row scale (bound " + fmt("%.3g", l.max_row_ulp) +
                         "), rel-L2 " + fmt("%.3g", td.rel_l2);
            ck.numbers = {{"frac_identical", td.frac_identical}, {"min_frac_identical", l.min_frac_identical},
                          {"max_row_ulp", td.max_row_ulp},       {"max_row_ulp_bound", l.max_row_ulp},
                          {"rel_l2", td.rel_l2},                 {"max_abs", td.max_abs},
                          {"elements", double(td.numel)},        {"differing", double(td.differing)}};
        }
        if (!j.inside) ck.summary += ": " + j.why;
        out.push_back(ck);
    }
    return out;
}

std::vector<Check> verify_step(const StepInputs& in, const Candidate& cand, const Options& o, const emu::Envelope* env,
                               const TensorFile* oracle, const std::string& no_envelope_why) {
    std::vector<Check> all = exact_checks(in, cand);
    for (Check& ck : stage_checks<float>(in, cand, o)) all.push_back(std::move(ck));
    if (env && oracle) {
        for (Check& ck : envelope_checks(in, cand, *env, *oracle)) all.push_back(std::move(ck));
    } else {
        for (const char* n : emu::kEnvelopeOutputs) {
            Draft d(in.cfg, std::string("envelope.") + n, "envelope", n);
            all.push_back(d.not_checked(no_envelope_why));
        }
    }
    return all;
}

std::vector<bf16> tensor_core_like_proj(const StepInputs& in, const std::vector<bf16>& x, double differing_fraction) {
    const Config& c = in.cfg;
    const int64_t n = int64_t(c.S()) * c.N;
    std::vector<bf16> proj(static_cast<size_t>(n));
    // an element whose exact value lies within differing_fraction of half an ulp of a tie goes the
    // other way: decided element by element (as a GEMM's rounding is), so a row is the same in any step
    const double near = 0.5 * (1 - differing_fraction);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const bf16* xr = &x[size_t(i / c.N) * c.D];
        const bf16* wr = &in.in_proj_w[size_t(i % c.N) * c.D];
        // bf16 products are exact in double, and so is a sum of 7168 of them to 2^-40 or so; the
        // first term starts it, as the reference's sums start (the sign of an exact zero)
        double p = c.D > 0 ? xr[0].to_double() * wr[0].to_double() : 0.0;
        for (int d = 1; d < c.D; ++d) p += xr[d].to_double() * wr[d].to_double();
        const bf16 r = bf16::round(p);
        const double rv = r.to_double();
        proj[size_t(i)] = r;
        if (p == rv || !std::isfinite(p)) continue;
        const int32_t o = bf16_ordered(r.bits) + (p > rv ? 1 : -1);  // the neighbour on p's side
        const bf16 nb = bf16::from_bits(uint16_t(o >= 0 ? o : (0x8000 | -o)));
        if (!std::isfinite(nb.to_double())) continue;
        if (std::fabs(p - rv) / std::fabs(nb.to_double() - rv) > near) proj[size_t(i)] = nb;  // 0.5: a tie
    }
    return proj;
}

emu::Envelope widen_for(const emu::Envelope& env, InProj p, const StepInputs& in, const TensorFile& oracle,
                        const Thresholds& t) {
    if (p == InProj::exact) return env;
    emu::Envelope out = env;
    const double frac = 1 - t.stage_identical_tensor_cores;
    for (const char* order : {"sequential", "pairwise"}) {
        const ReductionOrder ord = ReductionOrder::parse(order);
        StepOutputs<float> s;
        ref::attnres<float>(in, ord, s.prefix_out, s.blocks, s.x);
        s.proj = tensor_core_like_proj(in, s.x, frac);
        s.g1 = ref::f_b<float>(in, ord, s.proj);
        ref::short_conv<float>(in, s.proj, s.qkv, s.conv_state);
        ref::recurrence<float>(in, ord, s.qkv, s.proj, s.g1, s.o, s.ssm_state);
        s.core_out = ref::out_norm<float>(in, ord, s.o, s.proj);
        std::vector<TensorDiff> dist;
        for (const emu::EnvelopeBound& b : out.outputs)
            dist.push_back(diff_tensors(b.name, tensor_of(in.cfg, s, b.name), oracle.get(b.name)));
        emu::add_envelope_sample(out, std::string("tensor-cores:") + order, dist);
    }
    out.widening += (out.widening.empty() ? "" : "; ") + std::string("in_proj through tensor cores: two runs with ") +
                    pct(frac) + " of proj's roundings (those nearest a tie) flipped, the later stages recomputed";
    return out;
}

MeasuredEnvelope measure_envelope(const StepInputs& in, int orders) {
    MeasuredEnvelope m;
    m.envelope = emu::build_envelope(in, emu::default_envelope_orders(orders > 0 ? orders : emu::default_envelope_order_count(in.cfg)),
                                     &m.oracle);
    return m;
}

MeasuredEnvelope envelope_for(const StepInputs& in, const Candidate& c, InProj p, int orders, const std::string& declared) {
    auto measure = [&](int n) {
        std::vector<std::string> list = emu::default_envelope_orders(n);
        const std::string own = declared.empty() ? "" : ReductionOrder::parse(declared).str();
        if (!own.empty() && std::find(list.begin(), list.end(), own) == list.end()) list.push_back(own);
        MeasuredEnvelope m;
        m.envelope = widen_for(emu::build_envelope(in, list, &m.oracle), p, in, m.oracle);
        return m;
    };
    const int widest = emu::max_envelope_order_count();
    const int n = orders > 0 ? orders : emu::default_envelope_order_count(in.cfg);
    MeasuredEnvelope m = measure(n);
    if (orders != 0 || n >= widest || !first_failure(envelope_checks(in, c, m.envelope, m.oracle)))
        return m;
    const size_t sampled = m.envelope.orders.size();
    MeasuredEnvelope w = measure(widest);
    w.envelope.widening += (w.envelope.widening.empty() ? "" : "; ") + std::string("re-measured with ") +
                           std::to_string(widest) + " orders: the candidate is outside the " + std::to_string(sampled) +
                           "-run sample";
    return w;
}

}  // namespace monokda::verify
