// `monokda emulate`: the emulator's command line (fixture, plan, schedule, faults, residency, envelope)
// and its report, timeline, trace and replay token (docs/emulator.md); --kernel v2 runs kernel v2's
// in_proj plan instead (cli/cmd_emulate_v2.cpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>

#include "cli/cmd_emulate_v2.hpp"
#include "cli/options.hpp"
#include "core/progress.hpp"
#include "core/input_file.hpp"
#include "core/version.hpp"
#include "emulator/emulate.hpp"
#include "emulator/replay_token.hpp"
#include "emulator/timeline.hpp"
#include "emulator/trace.hpp"

namespace monokda::cli {

using namespace monokda::emu;

std::string matching_preset(const Config& c, bool needed) {
    for (const char* name : {"k3", "small"}) {
        const Config p = Config::preset(name);
        if (p.D == c.D && p.H == c.H && p.K == c.K && p.V == c.V && p.F == c.F && p.N == c.N && p.W == c.W) return name;
    }
    if (needed) bad_input("the plan's model dims match no built-in fixture preset (k3, small): give a FIXTURE file");
    return "k3";
}

namespace {

// The command line's values, as parsed (EmulateOptions is built from them by emulate_options).
struct EmulateArgs {
    std::string fixture, config, schedule, inject, detectors_off, timeline, trace, out, env_out, env_in, replay, gemv,
        plan_file, kernel;
    int R = 0, L = 0, nb = 0, blocks = 0, resident = 0, steps = 0, orders = 0, sweep = 0, teams = 0;
    uint64_t seed = 0, fseed = 0;
};

po::options_description emulate_option_list(EmulateArgs& a) {
    po::options_description opts("monokda emulate");
    opts.add_options()
        ("fixture", po::value(&a.fixture), "fixture file (default: a built-in fixture from --config/--R/--L/--nb)")
        ("config", po::value(&a.config)->default_value("k3"), "built-in fixture preset: k3 | small")
        ("R", po::value(&a.R)->default_value(2), "built-in fixture: requests")
        ("L", po::value(&a.L)->default_value(4), "built-in fixture: tokens per request")
        ("nb", po::value(&a.nb)->default_value(4), "built-in fixture: AttnRes bank rows in use")
        ("fixture-seed", po::value(&a.fseed)->default_value(1), "built-in fixture: generator seed")
        ("plan", po::value(&a.plan_file),
         "run this plan file (docs/plan-file.md; `monokda plan` writes one) instead of the built-in plan; the "
         "built-in fixture then takes R, L and nb from it. With --kernel v2: a kernel v2 plan file (`monokda plan "
         "--kernel v2` writes one; docs/plan.md \"Kernel v2's plan file\"), its tables and programs as it gives them")
        ("tail", "--kernel v2: the plan built with the tail (the owners publish tagged words, the kda tasks run; qkv, g1, o, "
         "core_out and the states judged too)")
        ("plan-digest", po::value<std::string>(),
         "--kernel v2: the digest the --plan file must have (its replay line gives it; kernel v1's replay token carries its own)")
        ("blocks", po::value(&a.blocks)->default_value(0), "CTAs in the launch (default: 132 for k3, 24 for small)")
        ("gemv-bands", po::value(&a.gemv)->default_value("auto"),
         "who runs the in_proj bands: auto (the plan's choice: k3 from 16 rows every CTA, else SPEC) | spec (the "
         "CTAs past the attn slices, SPEC §4) | every (every CTA, the attn CTAs after ATTN_X)")
        ("schedule", po::value(&a.schedule)->default_value("random"),
         "random | pct | pct:D | rr | delay:attn | delay:gemv | delay:kda | delay:cta:N")
        ("seed", po::value(&a.seed)->default_value(1), "scheduler seed")
        ("resident", po::value(&a.resident)->default_value(0), "co-resident CTAs (default: all)")
        ("steps", po::value(&a.steps)->default_value(1), "consecutive launches over the same mailbox memory (1..64)")
        ("amd", "model AMD's in-order load retirement (a poll waits for the CTA's earlier loads)")
        ("kda-teams", po::value(&a.teams)->default_value(1),
         "kda tasks a CTA runs side by side (the NVIDIA kernel: 2; 1: the list order)")
        ("inject", po::value(&a.inject)->default_value("none"), "plant a protocol fault (see --list-faults)")
        ("list-faults", "list the faults --inject knows and exit")
        ("detectors-off", po::value(&a.detectors_off)->default_value("none"),
         "switch detectors off, NAME[+NAME...] (see --list-detectors): does a fault pass without them?")
        ("list-detectors", "list the detectors, the verdict of each and what only it catches, and exit")
        ("timeline", po::value(&a.timeline), "write the schedule as an SVG: one lane per CTA")
        ("trace", po::value(&a.trace),
         "write the run as a Chrome/Perfetto trace (JSON trace events: a track a CTA, a slice an instruction, flows "
         "from each product to its consumers; ui.perfetto.dev opens it), a failing run too")
        ("output,o", po::value(&a.out), "write the emulated outputs of the last step (safetensors)")
        ("envelope-out", po::value(&a.env_out), "write the reduction-order envelope (JSON, docs/emulator.md)")
        ("envelope-in", po::value(&a.env_in), "use a saved envelope instead of measuring one")
        ("envelope-orders", po::value(&a.orders)->default_value(0),
         "measure the envelope with N reduction orders (default: the built-in envelope of a built-in fixture if "
         "there is one, else 8 for k3-sized fixtures, 12 otherwise)")
        ("no-envelope", "skip the envelope check")
        ("sweep", po::value(&a.sweep)->default_value(0), "run N schedules (alternately random and pct, seeds SEED..) and summarise")
        ("replay", po::value(&a.replay), "re-run the run a report's replay token names")
        ("kernel", po::value(&a.kernel)->default_value("v1"),
         "the kernel whose plan runs: v1 | v2 (kernel v2's in_proj, core/plan_v2.hpp: clusters, rings, cluster buffers)");
    return opts;
}

void list_faults(std::ostream& os) {
    for (const auto& f : fault_list()) os << f.name << std::string(size_t(std::max(2, 30 - int(std::string(f.name).size()))), ' ') << f.what << "\n";
}

void list_detectors(std::ostream& os) {
    for (const auto& d : detector_list())
        os << d.name << std::string(20 - std::string(d.name).size(), ' ') << to_string(d.verdict) << ": " << d.what << "\n"
           << std::string(20, ' ') << "alone catches: "
           << (d.sole == Fault::none ? std::string(d.planted) : std::string("--inject ") + to_string(d.sole)) << "\n";
}

// --plan FILE: the plan read, and the built-in fixture's preset and shape taken from it.
void use_plan_file(EmulateOptions& o, const EmulateArgs& a, const po::variables_map& vm) {
    for (const char* k : {"blocks", "gemv-bands", "config", "R", "L", "nb"})
        if (!vm[k].defaulted())
            bad_input(std::string("--") + k + " describes the built-in plan or its fixture; --plan gives the plan (and R, L, nb)");
    o.plan = std::make_shared<const Plan>(Plan::read_json(a.plan_file));
    o.fixture.preset = matching_preset(o.plan->config(), a.fixture.empty());
    o.fixture.R = o.plan->config().R;
    o.fixture.L = o.plan->config().L;
    o.fixture.nb = o.plan->config().nb;
}

// --replay TOKEN: the token's run, which must be of the plan given (or of the built-in one when none is).
EmulateOptions apply_replay(const EmulateOptions& given, const EmulateArgs& a) {
    EmulateOptions o = apply_token(given, a.replay);
    if (o.plan_digest.empty() != !given.plan)
        bad_input(given.plan ? "--plan was given, but the replay token is of a run of the built-in plan (it has no plan field)"
                             : "the replay token is of a run of a plan file (plan=" + o.plan_digest + "): give --plan FILE too");
    if (given.plan) {
        const std::string d = plan_digest(*given.plan);
        if (d != o.plan_digest)
            bad_input("the replay token is of the plan with digest " + o.plan_digest + "; --plan " + a.plan_file + " has digest " + d);
        o.plan = given.plan;
        o.fixture = given.fixture;  // the plan's shape, whatever the token's built-in fixture fields say
    }
    return o;
}

// The run the command line asks for, every value checked (BadInput) before any work.
EmulateOptions emulate_options(const EmulateArgs& a, const po::variables_map& vm) {
    EmulateOptions o;
    if (!a.fixture.empty()) {
        for (const char* k : {"config", "R", "L", "nb", "fixture-seed"})
            if (!vm[k].defaulted()) bad_input(std::string("--") + k + " describes a built-in fixture; a FIXTURE file was given");
        o.fixture.file = a.fixture;
    }
    o.fixture.preset = a.config;
    o.fixture.R = a.R;
    o.fixture.L = a.L;
    o.fixture.nb = a.nb;
    o.fixture.seed = a.fseed;
    require_range("--blocks", a.blocks, 0);
    o.blocks = a.blocks;
    o.gemv_bands = parse_gemv_bands(a.gemv);
    o.schedule = Schedule::parse(a.schedule);
    o.schedule.seed = a.seed;
    require_range("--resident", a.resident, 0);
    o.resident = a.resident;
    require_range("--steps", a.steps, 1, 64);
    o.steps = a.steps;
    o.amd = vm.count("amd") > 0;
    require_range("--kda-teams", a.teams, 1, 8);
    o.kda_teams = a.teams;
    o.fault = parse_fault(a.inject);
    o.detectors = DetectorSet::parse_off(a.detectors_off);
    require_range("--sweep", a.sweep, 0, 100000);
    if (!a.plan_file.empty()) use_plan_file(o, a, vm);
    if (vm.count("replay")) o = apply_replay(o, a);
    if (o.fixture.file.empty()) Config::preset(o.fixture.preset);  // BadInput for an unknown preset, before any work
    o.envelope_orders = vm.count("no-envelope") ? -1 : a.orders;
    if (o.envelope_orders < 0 && (!a.env_out.empty() || !a.env_in.empty()))
        bad_input("--no-envelope contradicts --envelope-out/--envelope-in");
    if (o.envelope_orders != 0 && o.envelope_orders != -1) default_envelope_orders(o.envelope_orders);  // validates
    o.envelope_in = a.env_in;
    o.timeline = !a.timeline.empty() || !a.trace.empty();
    if (a.sweep > 0 && (!a.timeline.empty() || !a.trace.empty() || !a.out.empty()))
        bad_input("--sweep runs many schedules: --timeline, --trace and -o need a single run (use --replay with a token)");
    return o;
}

// --sweep N: N schedules (random and pct alternately, seeds SEED..), a count of each verdict and the
// first failure's report. Exit 1 on a failure or a plan with structural problems.
int run_sweep(Prepared& prep, const EmulateOptions& o, const EmulateArgs& a,
              std::chrono::steady_clock::time_point t0) {
    const int sweep = a.sweep;
    std::vector<Verdict> verdicts(static_cast<size_t>(sweep));
    std::vector<std::string> reports(static_cast<size_t>(sweep));  // of the runs that fail
    int first_fail = -1;
    Progress progress("sweep: schedules", sweep);
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < sweep; ++i) {
        EmulateOptions oi = o;
        oi.schedule.kind = i % 2 ? Schedule::pct : Schedule::random;
        oi.schedule.seed = a.seed + uint64_t(i);
        EmulateResult r = emulate(prep, oi);
        verdicts[size_t(i)] = r.verdict;
        if (r.verdict != Verdict::PASS) reports[size_t(i)] = std::move(r.report);
        progress.add();
    }
    progress.finish();
    if (!a.env_out.empty() && prep.envelope) write_file_atomic(a.env_out, envelope_text(*prep.envelope));  // after the runs
    std::map<std::string, int> count;
    for (int i = 0; i < sweep; ++i) {
        count[to_string(verdicts[size_t(i)])]++;
        if (verdicts[size_t(i)] != Verdict::PASS && first_fail < 0) first_fail = i;
    }
    std::cout << "sweep: " << sweep << " schedules (random and pct:3, seeds " << a.seed << ".." << a.seed + uint64_t(sweep) - 1
              << ") in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s:";
    for (auto& [v, n] : count) std::cout << " " << v << " " << n;
    std::cout << "\n";
    if (first_fail >= 0) {
        std::cout << "first failure (schedule " << first_fail << "):\n" << reports[size_t(first_fail)];
        return 1;
    }
    std::cout << "VERDICT: PASS\n";
    if (const auto probs = prep.plan.structural_problems(); !probs.empty()) {
        std::cout << "but the plan has " << probs.size() << " structural problem(s) (monokda plan check lists them); first: "
                  << probs[0] << "\n";
        return 1;
    }
    return 0;
}

// One run: its report, then its outputs (envelope, timeline, trace, -o) written as one set.
int run_once(Prepared& prep, EmulateOptions o, const EmulateArgs& a) {
    o.progress = true;
    EmulateResult r = emulate(prep, o);
    std::cout << r.report;
    OutputSet set;
    std::vector<std::string> wrote;
    if (!a.env_out.empty() && prep.envelope) {
        set.add(a.env_out, envelope_text(*prep.envelope));
        wrote.push_back(a.env_out);
    }
    if (!a.timeline.empty()) {
        set.add(a.timeline, timeline_svg(r.plan, r.run, "monokda emulate " + r.token + " : " + to_string(r.verdict)));
        wrote.push_back(a.timeline);
    }
    if (!a.trace.empty()) {
        set.add(a.trace, trace_json(r.plan, r.run, "monokda emulate " + r.token + " : " + to_string(r.verdict)));
        wrote.push_back(a.trace);
    }
    if (!a.out.empty()) {
        if (r.run.outputs.empty()) {
            std::cout << "no outputs written: the run stopped before a step completed\n";
        } else {
            TensorFile f = r.run.outputs.back().to_file(prep.input.cfg);
            f.metadata["emulate_verdict"] = to_string(r.verdict);
            f.metadata["emulate_token"] = r.token;
            f.metadata["emulate_plan_order"] = r.plan.reduction_order().str();
            stamp_version(f.metadata);  // as write_safetensors does: this one is written with the set
            set.add(a.out, serialize_safetensors(f));
            wrote.push_back(a.out);
        }
    }
    set.commit();
    for (const std::string& w : wrote) std::cout << "wrote " << w << "\n";
    return r.verdict == Verdict::PASS && r.problems.empty() ? 0 : 1;
}

}  // namespace

int cmd_emulate(const Args& args) {
    EmulateArgs a;
    po::options_description opts = emulate_option_list(a);
    po::positional_options_description pos;
    pos.add("fixture", 1);
    po::variables_map vm;
    if (!parse_args(args,
                    "monokda emulate [FIXTURE] [--plan FILE] [--config k3|small] [--R 2] [--L 4] [--nb 4] [--fixture-seed 1] "
                    "[--blocks N] [--gemv-bands auto|spec|every] [--schedule random|pct|rr|delay:ROLE|delay:cta:N] [--seed S] "
                    "[--resident N] [--steps K] [--amd] [--kda-teams N] [--inject NAME] [--list-faults] [--detectors-off LIST] "
                    "[--list-detectors] [--timeline F] [--trace F] [-o OUT] [--envelope-out F] [--envelope-in F] "
                    "[--envelope-orders N] [--no-envelope] [--sweep N] [--replay TOKEN]\n"
                    "       monokda emulate --kernel v2 [FIXTURE] [--config k3|small] [--R 2] [--L 4] [--nb 4] [--fixture-seed 1] [--tail] "
                    "[--schedule random|pct|rr|delay:cta:N] [--seed S] [--inject NAME] [--detectors-off LIST] [--sweep N]\n"
                    "       monokda emulate --kernel v2 --plan FILE [--plan-digest D] [FIXTURE] [--fixture-seed 1] [--schedule ...] "
                    "[--seed S] [--inject NAME] [--detectors-off LIST] [--sweep N]",
                    opts, pos, vm))
        return 0;
    if (vm.count("list-faults")) {
        list_faults(std::cout);
        return 0;
    }
    if (vm.count("list-detectors")) {
        list_detectors(std::cout);
        return 0;
    }
    if (a.kernel != "v1" && a.kernel != "v2") bad_input("--kernel must be v1 or v2 (got '" + a.kernel + "')");
    if (a.kernel == "v2") return emulate_v2(vm);
    if (vm.count("plan-digest")) bad_input("--plan-digest is for --kernel v2 (kernel v1's replay token carries its plan's digest)");
    // every output path checked before any work; the outputs are written at the end, as one set
    check_outputs({{"-o", a.out}, {"--timeline", a.timeline}, {"--trace", a.trace}, {"--envelope-out", a.env_out}},
                  {{"FIXTURE", a.fixture}, {"--envelope-in", a.env_in}, {"--plan", a.plan_file}});
    if (!a.env_in.empty()) InputFile probe(a.env_in);  // a missing file or a folder: refused now, not after the fixture
    const EmulateOptions o = emulate_options(a, vm);
    FaultHooks{o.fault}.require_kernel(1);  // a kernel v2 fault: refused before the fixture is built

    const auto t0 = std::chrono::steady_clock::now();
    Prepared prep = prepare(o, steps_for(o));
    if (!o.envelope_in.empty() || o.envelope_orders >= 0)
        std::cout << "prepared: fixture " << prep.seconds_fixture << " s, reference " << prep.seconds_reference
                  << " s, envelope (" << prep.envelope_source << ") " << prep.seconds_envelope << " s\n";
    return a.sweep > 0 ? run_sweep(prep, o, a, t0) : run_once(prep, o, a);
}

}  // namespace monokda::cli
