// `monokda emulate --kernel v2` as a library (emulator/v2/emulate_v2.hpp): the prepared fixture (with
// the plan built for it or a given one), the run of kernel v2's in_proj plan, its judgement and its
// report.
#include "emulator/v2/emulate_v2.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "reference/reference.hpp"

namespace monokda::emu {

namespace {

float value_of(bf16 b) { return b.to_float(); }
float value_of(float f) { return f; }

double since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string secs(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v);
    return b;
}

// The first element of proj that differs from the reference, as the report names it ("" if none).
std::string first_difference(const V2Prepared& p, const V2EmulateResult& r, std::vector<int>& named) {
    const int N = p.plan.config().N;
    size_t bad = 0, first = r.run.proj.size();
    for (size_t i = 0; i < r.run.proj.size(); ++i)
        if (r.run.proj[i].bits != p.ref_proj[i].bits) bad += 1, first = std::min(first, i);
    if (!bad) return "";
    const int s = int(first / size_t(N)), col = int(first % size_t(N)), e = r.run.writer[first];
    std::string by = "no owner stored it";
    if (e >= 0) {
        const V2Recv& rv = r.plan.recvs[size_t(e)];
        const int owner = r.plan.cta(r.plan.units[size_t(rv.unit)].cluster, rv.owner);
        named.push_back(PlanV2::proc(owner, V2Role::reducer));
        by = "stored by " + r.plan.proc_name(named.back()) + " REDUCE(unit " + std::to_string(rv.unit) + ")";
    }
    char v[96];
    std::snprintf(v, sizeof v, "%.9g, the reference gives %.9g", double(r.run.proj[first].to_float()), double(p.ref_proj[first].to_float()));
    return "proj[row " + std::to_string(s) + "][col " + std::to_string(col) + "] = " + v + " (" +
           p.plan.reduction_order().at(Site::in_proj).str() + "); " + by + "; " + std::to_string(bad) + " of " +
           std::to_string(r.run.proj.size()) + " elements differ";
}

// The first element of the tail's outputs that differs from the reference, in the outputs' order
// ("" if none), with the task that stored it where one did.
std::string tail_difference(const V2Prepared& p, const V2EmulateResult& r, std::vector<int>& named) {
    std::string out;
    for_each_output<float>(p.plan.config(), [&](const char* name, DType, const std::vector<int64_t>&, auto member) {
        const auto& got = r.run.tail.*member;
        const auto& want = p.ref_tail.*member;
        if (!out.empty() || got.empty() || want.empty()) return;
        if (got.size() != want.size()) {
            out = std::string(name) + " has " + std::to_string(got.size()) + " elements, the reference " + std::to_string(want.size());
            return;
        }
        size_t bad = 0, first = got.size();
        for (size_t i = 0; i < got.size(); ++i)
            if (std::memcmp(&got[i], &want[i], sizeof got[i]) != 0) bad += 1, first = std::min(first, i);
        if (!bad) return;
        char v[96];
        std::snprintf(v, sizeof v, "%.9g, the reference gives %.9g", double(value_of(got[first])), double(value_of(want[first])));
        out = std::string(name) + "[" + std::to_string(first) + "] = " + v + "; " + std::to_string(bad) + " of " + std::to_string(got.size()) +
              " elements differ";
        const std::string n(name);
        if ((n == "o" || n == "core_out") && r.run.task_of[first] >= 0) {
            const V2Task& t = r.plan.tasks[size_t(r.run.task_of[first])];
            named.push_back(PlanV2::proc(r.plan.cta(t.cluster, t.rank), V2Role::seam));
            out += "; stored by " + r.plan.proc_name(named.back()) + " (task " + std::to_string(r.run.task_of[first]) + ")";
        }
    });
    return out;
}

// What the machine holds for a plan, roughly: each CTA's ring, receive slots, sums and seam values.
double machine_bytes(const PlanV2& p) {
    const double S = p.config().S(), R = p.params().ranks, cols = p.slice_cols(), src = p.config().nb + 1;
    double b = 0;
    for (int k = 0; k < p.ctas(); ++k)
        b += double(p.rings[size_t(k)].depth) * p.rings[size_t(k)].slot_bytes + 4 * S * (p.params().recv_slots * R * kV2OwnerRows + 12 * kV2TileRows) +
             (p.has_seam() ? 4 * S * (src * cols * 2 + 2 * cols + src * p.seam_slices() * 2) : 0);
    return b;
}

}  // namespace

std::string plan_digest(const PlanV2& p) { return text_digest(p.to_json(false)); }

V2Prepared prepare_v2(const V2EmulateOptions& o) {
    if (o.plan) {  // the given plan's digest before any work
        const std::string digest = plan_digest(*o.plan);
        if (!o.plan_digest.empty() && o.plan_digest != digest)
            bad_input("--plan-digest " + o.plan_digest + ": the plan " + (o.plan_file.empty() ? std::string() : o.plan_file + " ") + "has digest " +
                      digest + " (the file is not the one the replay line was printed for)");
        if (const double gib = machine_bytes(*o.plan) / double(1 << 30); gib > 16)
            bad_input("emulate --kernel v2: the plan's machine would hold about " + std::to_string(int(gib)) + " GiB (its CTAs' rings, "
                      "receive slots and sums), over 16");
    }
    auto t0 = std::chrono::steady_clock::now();
    const StepInputs in = o.fixture.inputs();
    const double read = since(t0);
    V2Prepared p = prepare_v2(o, in);
    p.seconds_fixture = read;
    return p;
}

V2Prepared prepare_v2(const V2EmulateOptions& o, const StepInputs& in) {
    V2Prepared p;
    p.fixture = o.fixture;
    if (o.plan) p.plan_file = o.plan_file, p.plan_digest = plan_digest(*o.plan);
    if (o.plan) {
        require_plan_shape(o.plan->config(), in.cfg);
        p.plan = *o.plan;
    } else {
        const PlanV2Params pp = PlanV2Params::for_config(in.cfg, o.tail ? 1 : 0);
        p.plan = PlanV2::build(in.cfg, pp);
        p.plan.require_fits();  // a shape one launch cannot hold is refused, as plan --kernel v2 refuses it
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<bf16> prefix_out, blocks;
    ref::attnres<float>(in, p.plan.reduction_order(), prefix_out, blocks, p.x);  // x, in the seam's order where it has one
    if (p.plan.has_seam())
        p.seam = {in.prefix, in.delta, in.blocks, in.res_norm_w, in.res_proj_w, in.input_norm_w, float(in.cfg.eps)};
    const ReductionOrder ord = p.plan.reduction_order();
    p.ref_proj = ref::in_proj<float>(in, ord, p.x);
    if (p.plan.has_tail()) {
        StepOutputs<float>& t = p.ref_tail;
        t.g1 = ref::f_b<float>(in, ord, p.ref_proj);
        ref::short_conv<float>(in, p.ref_proj, t.qkv, t.conv_state);
        ref::recurrence<float>(in, ord, t.qkv, p.ref_proj, t.g1, t.o, t.ssm_state);
        t.core_out = ref::out_norm<float>(in, ord, t.o, p.ref_proj);
        p.step = std::make_shared<const StepInputs>(in);
    }
    p.seconds_reference = since(t0);
    std::vector<uint16_t> w(in.in_proj_w.size());
    for (size_t i = 0; i < w.size(); ++i) w[i] = in.in_proj_w[i].bits;
    p.packed = p.plan.pack_weight(w);
    return p;
}

std::string v2_replay(const V2Prepared& prep, const V2EmulateOptions& o) {
    const FixtureSpec& f = o.fixture;
    // a given plan names its shape: the built-in fixture then takes only its seed
    const std::string plan = prep.plan_digest.empty() ? "" : " --plan " + (prep.plan_file.empty() ? "PLAN_FILE" : prep.plan_file) +
                                                                 " --plan-digest " + prep.plan_digest;
    const std::string shape = plan.empty() ? " --config " + f.preset + " --R " + std::to_string(f.R) + " --L " + std::to_string(f.L) +
                                                 " --nb " + std::to_string(f.nb)
                                           : "";
    std::string s = "monokda emulate --kernel v2" + plan + (plan.empty() && o.tail ? " --tail" : "") +
                    (f.file.empty() ? shape + " --fixture-seed " + std::to_string(f.seed) : " " + f.file) +
                    " --schedule " + o.schedule.str() + " --seed " + std::to_string(o.schedule.seed);
    if (o.fault != Fault::none) s += std::string(" --inject ") + to_string(o.fault);
    if (!o.detectors.all()) s += " --detectors-off " + o.detectors.off_str();
    return s;
}

V2EmulateResult emulate_v2(const V2Prepared& prep, const V2EmulateOptions& o) {
    FaultHooks{o.fault}.require_kernel(2);
    if (!prep.plan.has_tail() && (o.fault == Fault::tail_word_unwaited || o.fault == Fault::tail_stale_tag || o.fault == Fault::tail_onrm_unwaited ||
                                   o.fault == Fault::tail_decay_unwaited))
        bad_input(std::string("fault ") + to_string(o.fault) + " is planted in the tail, which this plan leaves out (--tail builds it)");
    if (!prep.plan.has_seam() && (o.fault == Fault::seam_part_short || o.fault == Fault::x_before_seam || o.fault == Fault::seam_wgt_dropped))
        bad_input(std::string("fault ") + to_string(o.fault) + " is planted in the seam, which this plan leaves out (x an input: its shared "
                  "memory does not fit beside in_proj's at S = " + std::to_string(prep.plan.config().S()) + ")");
    V2EmulateResult r;
    r.plan = apply_v2_plan_fault(prep.plan, o.fault);
    V2MachineOptions mo;
    mo.schedule = o.schedule;
    mo.fault = o.fault;
    mo.detectors = o.detectors;
    mo.watchdog_steps = o.watchdog_steps;
    auto t0 = std::chrono::steady_clock::now();
    r.run = run_v2_machine(r.plan, prep.x, prep.packed, mo, prep.seam, prep.step.get());
    r.seconds_run = since(t0);
    r.verdict = r.run.verdict;
    const std::string order = prep.plan.reduction_order().at(Site::in_proj).str();
    std::string results;
    if (r.verdict == Verdict::PASS && o.detectors.has(Detector::result)) {
        std::vector<int> named;
        std::string diff = first_difference(prep, r, named);
        if (diff.empty() && prep.plan.has_tail()) diff = tail_difference(prep, r, named);
        if (diff.empty()) {
            results = "proj: bit-identical to the reference in in_proj=" + order + " (" + std::to_string(r.run.proj.size()) + " elements)\n";
            if (prep.plan.has_tail())
                results += "the tail: g1, qkv, conv_state, o, ssm_state and core_out bit-identical to the reference in the plan's order (" +
                           prep.plan.reduction_order().str() + ")\n";
        } else {
            r.verdict = Verdict::WRONG_RESULT;
            r.run.detector = Detector::result;
            r.run.detail = diff;
            r.run.named = named;
        }
    } else if (r.verdict == Verdict::PASS) {
        results = std::string(prep.plan.has_tail() ? "proj and the tail's outputs" : "proj") + ": not compared with the reference (detector result off)\n";
    }
    r.problems = r.plan.problems();

    const PlanV2& p = r.plan;
    const PlanV2Params& pp = p.params();
    std::string s = "emulate --kernel v2: fixture " + prep.fixture.str() + " (S " + std::to_string(p.config().S()) +
                    "), in_proj on " + std::to_string(pp.clusters) + " clusters of " + std::to_string(pp.ranks) + " (" +
                    std::to_string(p.ctas()) + " CTAs), " + std::to_string(p.units.size()) + " units, rings of " +
                    std::to_string(pp.ring_depth) + " x " + std::to_string(p.rings[0].slot_bytes) + " bytes (" +
                    std::to_string(pp.in_flight) + " in flight), " + std::to_string(pp.recv_slots) + " receive slots\n";
    if (!prep.plan_digest.empty())
        s += "plan: " + (prep.plan_file.empty() ? std::string("a given plan") : prep.plan_file) + " (digest " + prep.plan_digest +
             "), as the file gives its tables and programs\n";
    s += "prepared: fixture " + secs(prep.seconds_fixture) + " s, x and the reference proj in in_proj=" + order + " " +
         secs(prep.seconds_reference) + " s\n";
    s += "schedule " + o.schedule.str() + " seed " + std::to_string(o.schedule.seed) + ", fault " + to_string(o.fault) +
         (o.detectors.all() ? "" : ", detectors off: " + o.detectors.off_str()) + "\n";
    s += "run: " + std::to_string(p.processes()) + " role instances, " + std::to_string(r.run.sched_steps) + " scheduler steps, " +
         std::to_string(r.run.ticks) + " ticks, " + secs(r.seconds_run) + " s" +
         (r.run.finished ? "; every role ran to its end\n" : "; stopped\n");
    s += results;
    s += r.problems.empty() ? "plan checks: all " + std::to_string(PlanV2::check_names().size()) + " pass\n"
                            : "plan checks: " + std::to_string(r.problems.size()) + " problem(s); first: " + r.problems[0].check +
                                  ": " + r.problems[0].what + "\n";
    s += std::string("VERDICT: ") + to_string(r.verdict) + "\n";
    if (r.run.detector != Detector::none) {
        s += std::string("caught by: ") + to_string(r.run.detector) + " (" + info(r.run.detector).what + ")\n" + r.run.detail + "\n";
        if (!r.run.history.empty()) s += "last events:\n" + r.run.history;
    }
    s += "replay: " + v2_replay(prep, o) + "\n";
    r.report = s;
    return r;
}

}  // namespace monokda::emu
