// `monokda emulate` as a library (emulator/emulate.hpp): preparing a fixture, running the plan under a
// schedule, fault and residency, and judging the run.
#include "emulator/emulate.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/fixture_gen.hpp"
#include "core/safetensors.hpp"
#include "emulator/replay_token.hpp"
#include "reference/reference.hpp"

namespace monokda::emu {

namespace {

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

}  // namespace

std::string FixtureSpec::str() const {
    if (!file.empty()) return "file";
    return preset + ".R" + std::to_string(R) + ".L" + std::to_string(L) + ".nb" + std::to_string(nb) + ".s" +
           std::to_string(seed);
}

int steps_for(const EmulateOptions& o) { return FaultHooks{o.fault}.launches(o.steps); }

StepRows step_rows(const StepInputs& in, int k) {
    StepRows r;
    const int S = in.cfg.S();
    const size_t D = size_t(in.cfg.D);
    if (k % S == 0) return r;
    r.prefix.resize(in.prefix.size());
    r.delta.resize(in.delta.size());
    r.blocks.resize(in.blocks.size());
    for (int s = 0; s < S; ++s) {
        const int from = (s + k) % S;
        std::copy_n(&in.prefix[size_t(from) * D], D, &r.prefix[size_t(s) * D]);
        std::copy_n(&in.delta[size_t(from) * D], D, &r.delta[size_t(s) * D]);
        std::copy_n(&in.blocks[size_t(from) * 8 * D], 8 * D, &r.blocks[size_t(s) * 8 * D]);
    }
    return r;
}

StepInputs rotate_rows(const StepInputs& in, int k) {
    StepInputs o = in;
    StepRows r = step_rows(in, k);
    if (!r.prefix.empty()) o.prefix = std::move(r.prefix), o.delta = std::move(r.delta), o.blocks = std::move(r.blocks);
    return o;
}

// Step k's rows and its reference. The reference reads step 0's inputs with the step's rows
// swapped in for its run and swapped back: no copy of the 100 MB a step.
static void extend(Prepared& p, int steps) {
    while (int(p.rows.size()) < steps) {
        const int k = int(p.rows.size());
        p.rows.push_back(step_rows(p.input, k));
        StepRows& r = p.rows.back();
        auto swap_in = [&] {
            if (r.prefix.empty()) return;
            std::swap(p.input.prefix, r.prefix);
            std::swap(p.input.delta, r.delta);
            std::swap(p.input.blocks, r.blocks);
        };
        auto t0 = std::chrono::steady_clock::now();
        swap_in();
        try {
            p.refs.push_back(ref::run<float>(p.input, p.plan.reduction_order()));
        } catch (...) {
            swap_in();  // back
            throw;
        }
        swap_in();
        p.seconds_reference += since(t0);
    }
}

Plan builtin_plan(const Config& cfg, int blocks, GemvBands bands, bool amd) {
    PlanParams pp = PlanPolicy::defaults_for(cfg, blocks, amd);
    apply_gemv_bands(pp, bands);
    Plan p = Plan::build(cfg, pp);
    PlanTarget t = p.target();
    if (amd) t.name = "AMD";
    t.in_order_loads = amd;
    p.set_target(t);
    return p;
}

std::string text_digest(const std::string& text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", (unsigned long long)h);
    return b;
}

std::string plan_digest(const Plan& p) { return text_digest(p.to_json(false)); }

void require_plan_shape(const Config& a, const Config& b) {
    const std::pair<const char*, std::pair<int, int>> dims[] = {
        {"D", {a.D, b.D}}, {"H", {a.H, b.H}}, {"K", {a.K, b.K}}, {"V", {a.V, b.V}}, {"F", {a.F, b.F}},
        {"N", {a.N, b.N}}, {"W", {a.W, b.W}}, {"R", {a.R, b.R}}, {"L", {a.L, b.L}}, {"nb", {a.nb, b.nb}}};
    for (const auto& [name, v] : dims)
        if (v.first != v.second)
            bad_input("the plan is for " + std::string(name) + " = " + std::to_string(v.first) + ", the fixture has " +
                      std::string(name) + " = " + std::to_string(v.second));
}

StepInputs FixtureSpec::inputs() const {
    if (!file.empty()) return StepInputs::from_file(read_safetensors(file));
    Config c = Config::preset(preset);
    c.R = R;
    c.L = L;
    c.nb = nb;
    c.seed = seed;
    return make_fixture(c);
}

Prepared prepare(const EmulateOptions& o, int steps) {
    Prepared p;
    p.fixture = o.fixture;
    auto t0 = std::chrono::steady_clock::now();
    StepInputs fixture_in = o.fixture.inputs();
    p.seconds_fixture = since(t0);
    if (o.plan) {
        require_plan_shape(o.plan->config(), fixture_in.cfg);
        if (!o.plan->products_match()) {
            std::string first;
            for (const auto& l : o.plan->structural_problems())
                if (l.find(" as its product ") != std::string::npos || l.find("which it does not list as its product") != std::string::npos) {
                    first = l;
                    break;
                }
            bad_input("plan" + (o.plan->source().empty() ? std::string() : " " + o.plan->source()) +
                      ": its products are not what its instructions store, so it cannot be run (monokda plan check lists "
                      "every difference); first: " + first);
        }
        p.plan = *o.plan;
        p.plan_digest = plan_digest(p.plan);
    } else {
        p.plan = builtin_plan(fixture_in.cfg, o.blocks, o.gemv_bands, o.amd);
    }
    p.input = std::move(fixture_in);  // 100 MB for k3: moved, not copied
    extend(p, std::max(steps, 1));
    const StepInputs& in = p.input;
    if (o.envelope_orders >= 0) {
        t0 = std::chrono::steady_clock::now();
        const std::string digest = inputs_digest(in);
        const Envelope* builtin = o.envelope_in.empty() && o.envelope_orders == 0 && o.fixture.file.empty()
                                      ? builtin_envelope(o.fixture.str())
                                      : nullptr;
        if (!o.envelope_in.empty()) {
            p.envelope = std::make_unique<Envelope>(read_envelope(o.envelope_in));
            if (p.envelope->fixture_digest != digest)
                bad_input("envelope '" + o.envelope_in + "' was measured on another fixture (digest " +
                          p.envelope->fixture_digest + ", this one " + digest + ")");
            p.envelope_source = "read from " + o.envelope_in;
        } else if (builtin && builtin->fixture_digest == digest) {
            p.envelope = std::make_unique<Envelope>(*builtin);
            p.envelope_source = "built in";
        } else {
            const int n = o.envelope_orders > 0 ? o.envelope_orders : default_envelope_order_count(in.cfg);
            TensorFile oracle;  // build_envelope runs the oracle anyway: kept, not run again below
            p.envelope = std::make_unique<Envelope>(build_envelope(in, default_envelope_orders(n), &oracle));
            p.oracle = std::make_unique<TensorFile>(std::move(oracle));
            p.envelope_source = "measured";
        }
        // The reference in the plan's order: its distance from the oracle, recorded with the envelope
        // when it was measured on these very reference bytes, else measured now (and recorded).
        Envelope& env = *p.envelope;
        const TensorFile ref_file = p.refs[0].to_file(in.cfg);
        const std::string plan_order = p.plan.reduction_order().str(), ref_digest = file_digest(ref_file);
        if (env.plan_order == plan_order && env.plan_order_reference_digest == ref_digest &&
            env.plan_order_distance.size() == env.outputs.size()) {
            p.ref_checks = check_distances(env, env.plan_order_distance);
        } else {
            if (!p.oracle) p.oracle = std::make_unique<TensorFile>(ref::run<double>(in, {}).to_file(in.cfg));
            env.plan_order = plan_order;
            env.plan_order_reference_digest = ref_digest;
            env.plan_order_distance = envelope_distances(env, ref_file, *p.oracle);
            p.ref_checks = check_distances(env, env.plan_order_distance);
        }
        p.seconds_envelope = since(t0);
    }
    return p;
}

namespace {

struct Mismatch {
    std::string tensor;
    size_t index = 0;
    bool found = false;
};

template <class T>
bool first_diff(const std::vector<T>& a, const std::vector<T>& b, size_t& at) {
    if (a.size() != b.size()) { at = 0; return true; }
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) { at = i; return true; }
    return false;
}

// The first element that differs, in pipeline order (for_each_output): the first stage that differs
// is the one to look at.
Mismatch compare_outputs(const Config& c, const StepOutputs<float>& e, const StepOutputs<float>& r) {
    Mismatch m;
    for_each_output<float>(c, [&](const char* name, DType, const std::vector<int64_t>&, auto member) {
        size_t at = 0;
        if (!m.found && first_diff(e.*member, r.*member, at)) m = {name, at, true};
    });
    return m;
}

// "proj[row 3][col 17]" for a matrix, "ssm_state[4711]" otherwise.
std::string describe_element(const Plan& plan, const std::string& t, size_t i) {
    std::string d = t + "[" + std::to_string(i) + "]";
    for_each_output<float>(plan.config(), [&](const char* name, DType, const std::vector<int64_t>& shape, auto) {
        if (t != name || shape.size() != 2) return;
        const size_t w = size_t(shape[1]);
        d = t + "[row " + std::to_string(i / w) + "][col " + std::to_string(i % w) + "]";
    });
    return d;
}

// The mailbox entry that carried an element to other CTAs, if any.
std::string carrier(const Plan& plan, const std::string& t, size_t i) {
    for (int k = 0; k < int(HandOff::count); ++k) {
        const HandOff h = HandOff(k);
        if (t != to_string(h)) continue;
        const size_t w = size_t(plan.handoff_cols(h));
        MailboxRef g{Mailbox::count, 0};
        return plan.guard_of(h, int(i / w), int(i % w), g) ? plan.entry_name(g) : "";
    }
    return "";
}

template <class T>
std::string value_str(const std::vector<T>& v, size_t i) {
    if constexpr (std::is_same<T, bf16>::value) return fmt("%.6g", double(v[i].to_float()));
    else return fmt("%.9g", double(v[i]));
}

std::string values(const Config& c, const StepOutputs<float>& o, const std::string& t, size_t i) {
    std::string v;
    for_each_output<float>(c, [&](const char* name, DType, const std::vector<int64_t>&, auto member) {
        if (t == name) v = value_str(o.*member, i);
    });
    return v;
}

// The run's report: the fixture, the plan, the run, the results and the envelope, the verdict with the
// detector that gave it, the detail and history of a failure, and the replay line.
std::string format_report(const Prepared& prep, const EmulateOptions& o, const EmulateResult& res, bool amd, int need,
                          const std::string& results, const std::string& env) {
    const Plan& plan = res.plan;
    const Config& cfg = plan.config();
    const PlanParams& pp = plan.params();
    std::string r;
    r += "monokda emulate: " + prep.fixture.str() + " (D " + std::to_string(cfg.D) + ", H " + std::to_string(cfg.H) +
         ", K " + std::to_string(cfg.K) + ", R " + std::to_string(cfg.R) + ", L " + std::to_string(cfg.L) + ", nb " +
         std::to_string(cfg.nb) + ", S " + std::to_string(cfg.S()) + ")\n";
    if (!plan.source().empty() || o.plan)
        r += "plan file " + (plan.source().empty() ? std::string("(in memory)") : plan.source()) + ": " +
             (plan.name().empty() ? "" : plan.name() + ", ") + "target " + plan.target().name + ", " +
             std::to_string(plan.co_resident()) + " co-resident" + (plan.target().cooperative ? " (cooperative)" : "") +
             ", digest " + prep.plan_digest + "\n";
    r += "plan: " + std::to_string(plan.launch_blocks()) + " CTAs: " + std::to_string(plan.n_attn_ctas()) + " attn (" +
         (plan.attn_parts() > 1 ? std::to_string(plan.attn_parts()) + " row parts a slice, " : "") + "slices of " +
         std::to_string(pp.slice_width) + "), in_proj in " + std::to_string(plan.n_groups()) + " groups of " +
         std::to_string(pp.gemv_group_rows) + " on " + std::to_string(plan.n_gemv()) + " CTAs (" +
         (o.plan ? "as the file deals them" : pp.gemv_every_cta ? "bands over every CTA" : "past the slices") +
"), " + std::to_string(plan.n_kda_tasks()) + " kda tasks (" +
         std::to_string(plan.n_chunks()) + " chunks of " + std::to_string(pp.kda_chunk_rows) + " rows); " +
         (pp.interleave_ctas ? "launch order interleaved (runs of " + std::to_string(pp.interleave_width) +
                                   " attn CTAs and " + std::to_string(pp.interleave_width) + " CTAs from " +
                                   std::to_string(plan.n_attn_ctas()) + " on alternate launch CTAs, " +
                                   std::to_string(plan.n_paired()) + " pairs); "
                             : "") +
         (o.kda_teams > 1 ? "kda in " + std::to_string(o.kda_teams) + " teams a CTA (" +
                                std::to_string(plan.blocks() - plan.launch_blocks()) + " team lists after the CTAs); "
                          : "");
    const std::vector<std::string>& probs = res.problems;
    r += probs.empty() ? "structure sound" : std::to_string(probs.size()) + " structural problem(s), first: " + probs[0];
    r += "; needs " + std::to_string(need) + " co-resident CTAs (admitted in launch order)\n";
    r += "run: schedule " + o.schedule.str() + " seed " + std::to_string(o.schedule.seed) + ", resident " +
         std::to_string(res.resident) + ", steps " + std::to_string(res.steps) + " (epochs";
    for (uint32_t e : res.run.epochs) r += " " + std::to_string(e);
    r += "), AMD in-order loads " + std::string(amd ? "on" : "off") +
         (o.fault == Fault::none ? "" : ", injected fault " + std::string(to_string(o.fault))) +
         (o.detectors.all() ? "" : ", detectors off: " + o.detectors.off_str()) + "\n";
    r += "  " + std::to_string(res.run.sched_steps) + " scheduler steps, " + std::to_string(res.run.ticks) + " ticks, " +
         fmt("%.3f", res.seconds_run) + " s; " + std::to_string(res.run.steps_done) + " of " + std::to_string(res.steps) +
         " steps completed";
    if (res.run.verdict == Verdict::PASS)
        r += o.detectors.all() ? "; deadlock-free; no stale read; no visibility fault\n"
                               : "; no violation found by the detectors on\n";
    else r += "\n";
    r += results;
    r += env;
    r += std::string("VERDICT: ") + to_string(res.verdict) + "\n";
    if (res.run.detector != Detector::none)
        r += std::string("caught by: ") + to_string(res.run.detector) + " (" + info(res.run.detector).what + ")\n";
    if (res.verdict == Verdict::PASS && !probs.empty())
        r += "but the plan has " + std::to_string(probs.size()) + " structural problem(s) (monokda plan check lists them): " +
             "the run passed, the plan does not; first: " + probs[0] + "\n";
    if (res.verdict != Verdict::PASS) {
        r += res.run.detail;
        if (r.back() != '\n') r += "\n";
        if (res.run.verdict != Verdict::PASS) r += format_history(plan, res.run, 30);
    }
    r += "replay: monokda emulate" + std::string(prep.fixture.file.empty() ? "" : " " + prep.fixture.file) +
         (o.plan ? " --plan " + (plan.source().empty() ? std::string("PLAN_FILE") : plan.source()) : std::string()) + " --replay " +
         res.token + "\n";
    return r;
}

}  // namespace

EmulateResult emulate(Prepared& prep, const EmulateOptions& o) {
    EmulateResult res;
    const Config& cfg = prep.plan.config();
    res.plan = apply_plan_fault(prep.plan, o.fault);
    if (o.kda_teams > 1) res.plan = res.plan.with_kda_teams(o.kda_teams);
    const FaultHooks hooks{o.fault};
    MachineOptions mo;
    mo.schedule = o.schedule;
    mo.fault = o.fault;
    mo.detectors = o.detectors;
    mo.progress = o.progress;
    mo.amd_in_order_loads = hooks.amd_in_order_loads(o.amd || res.plan.target().in_order_loads);
    mo.record_spans = o.timeline;
    res.steps = steps_for(o);
    hooks.require(cfg);
    // several steps straddle the epoch counter's wrap-around
    mo.epoch_start = res.steps == 1 ? 1u : 0xffffffffu - uint32_t(res.steps / 2 - 1);
    const int need = res.plan.min_residency();
    const int places = std::min(res.plan.co_resident(), res.plan.launch_blocks());  // a file's target may hold fewer
    res.resident = o.resident > 0 ? std::min(o.resident, res.plan.launch_blocks()) : places;
    res.resident = hooks.resident(res.resident, need);
    mo.resident = res.resident;
    extend(prep, res.steps);
    EmulateOptions tok = o;
    if (o.plan) tok.plan_digest = prep.plan_digest;
    res.token = make_token(tok);

    auto t0 = std::chrono::steady_clock::now();
    res.run = run_machine(res.plan, prep.input, prep.rows, res.steps, mo);  // every step shares prep.input
    res.seconds_run = since(t0);
    res.verdict = res.run.verdict;
    const Plan& plan = res.plan;

    // results: bit for bit against the reference in the plan's order
    std::string results, pipeline;
    for (const std::string& n : output_names()) pipeline += (pipeline.empty() ? "" : ", ") + n;
    const bool compare = o.detectors.has(Detector::result);
    if (res.verdict == Verdict::PASS && compare) {
        for (int k = 0; k < res.run.steps_done && res.verdict == Verdict::PASS; ++k) {
            Mismatch m = compare_outputs(cfg, res.run.outputs[size_t(k)], prep.refs[size_t(k)]);
            if (!m.found) continue;
            const Provenance& pv = res.run.provenance[size_t(k)][size_t(output_index(m.tensor))];
            std::string by = pv.cta.empty() || pv.cta[m.index] < 0
                                 ? "no CTA stored it in this step"
                                 : "stored by CTA " + std::to_string(pv.cta[m.index]) + " (" +
                                       to_string(role_of(plan.instrs(pv.cta[m.index])[size_t(pv.instr[m.index])].opcode())) +
                                       ") " + plan.describe(plan.instrs(pv.cta[m.index])[size_t(pv.instr[m.index])]);
            std::string car = carrier(plan, m.tensor, m.index);
            res.verdict = Verdict::WRONG_RESULT;
            res.run.detector = Detector::result;
            res.run.detail = "step " + std::to_string(k) + ": " + describe_element(plan, m.tensor, m.index) + " = " +
                             values(cfg, res.run.outputs[size_t(k)], m.tensor, m.index) + ", the reference in the plan's order gives " +
                             values(cfg, prep.refs[size_t(k)], m.tensor, m.index) + "; " + by +
                             (car.empty() ? "" : ", handed off through " + car) +
                             " (first difference in pipeline order: " + pipeline + ")";
            if (!pv.cta.empty() && pv.cta[m.index] >= 0) res.run.named = {pv.cta[m.index]};
        }
        if (res.verdict == Verdict::PASS)
            results = "results: all " + std::to_string(kOutputCount) + " outputs bit-identical to the reference in the plan's order, in every step\n";
    }
    if (!compare) results = "results: not compared with the reference (detector result off)\n";
    // envelope (step 0)
    std::string env;
    if (prep.envelope && res.run.steps_done > 0) {
        const bool exact = !compare_outputs(cfg, res.run.outputs[0], prep.refs[0]).found;
        std::vector<EnvelopeCheck> checks;
        if (exact) {
            checks = prep.ref_checks;
        } else {  // a wrong result: its own distance (the oracle once more if the envelope spared it)
            std::unique_ptr<TensorFile> computed;
            const TensorFile* oracle = prep.oracle.get();
            if (!oracle) oracle = (computed = std::make_unique<TensorFile>(ref::run<double>(prep.input, {}).to_file(cfg))).get();
            checks = check_envelope(*prep.envelope, res.run.outputs[0].to_file(cfg), *oracle);
        }
        bool inside = true;
        for (const auto& c : checks) inside = inside && c.inside;
        env = "envelope (" + prep.envelope_source + ": " + std::to_string(prep.envelope->orders.size()) +
              " reduction orders vs the f64 oracle, step 0): " +
              (inside ? "every output inside" : "OUTSIDE") + "\n" + format_envelope_checks(checks, *prep.envelope);
        if (!inside && res.verdict == Verdict::PASS && o.detectors.has(Detector::envelope)) {
            res.verdict = Verdict::OUT_OF_ENVELOPE;
            res.run.detector = Detector::envelope;
            for (const auto& c : checks)
                if (!c.inside) res.run.detail += (res.run.detail.empty() ? "" : "; ") + c.name + ": " + c.why;
        }
    }

    res.problems = plan.structural_problems();
    res.report = format_report(prep, o, res, mo.amd_in_order_loads, need, results, env);
    return res;
}

}  // namespace monokda::emu
