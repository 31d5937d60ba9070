// `monokda emulate --kernel v2` (cli/cmd_emulate_v2.hpp): the fixture, plan file, schedule, fault and
// detector options of emulate as kernel v2's in_proj takes them, one run's report or a sweep's summary.
#include "cli/cmd_emulate_v2.hpp"

#include <chrono>
#include <iostream>
#include <map>

#include "core/progress.hpp"
#include "emulator/v2/emulate_v2.hpp"

namespace monokda::cli {

using namespace monokda::emu;

int emulate_v2(const po::variables_map& vm) {
    static const char* kTaken[] = {"fixture", "config", "R", "L", "nb", "fixture-seed", "schedule", "seed",
                                   "inject", "detectors-off", "sweep", "kernel", "plan", "plan-digest", "tail"};
    for (const auto& [name, value] : vm) {
        bool taken = false;
        for (const char* t : kTaken) taken |= name == t;
        if (!taken && !value.defaulted())
            bad_input("--" + name + " is not for --kernel v2 (it takes FIXTURE, --config, --R, --L, --nb, --fixture-seed, --tail, "
                      "--plan, --plan-digest, --schedule, --seed, --inject, --detectors-off, --sweep)");
    }
    V2EmulateOptions o;
    if (vm.count("fixture")) {
        for (const char* k : {"config", "R", "L", "nb", "fixture-seed"})
            if (!vm[k].defaulted()) bad_input(std::string("--") + k + " describes a built-in fixture; a FIXTURE file was given");
        o.fixture.file = vm["fixture"].as<std::string>();
        check_outputs({}, {{"FIXTURE", o.fixture.file}});
    }
    o.fixture.preset = vm["config"].as<std::string>();
    o.fixture.R = vm["R"].as<int>();
    o.fixture.L = vm["L"].as<int>();
    o.fixture.nb = vm["nb"].as<int>();
    o.fixture.seed = vm["fixture-seed"].as<uint64_t>();
    o.tail = vm.count("tail") > 0;
    if (vm.count("plan-digest") && !vm.count("plan")) bad_input("--plan-digest is the digest of a --plan file: give --plan FILE too");
    if (vm.count("plan")) {  // the plan file's: the plan, and the built-in fixture's preset and shape
        for (const char* k : {"config", "R", "L", "nb"})
            if (!vm[k].defaulted())
                bad_input(std::string("--") + k + " describes the plan built for the fixture; --plan gives the plan (and its config, R, L, nb)");
        o.plan_file = vm["plan"].as<std::string>();
        check_outputs({}, {{"--plan", o.plan_file}});
        o.plan = std::make_shared<const PlanV2>(PlanV2::read_json(o.plan_file));
        if (vm.count("tail")) bad_input("--tail builds the tail into the plan made for the fixture; --plan gives the plan (with its tail or without)");
        const Config& c = o.plan->config();
        o.fixture.preset = matching_preset(c, o.fixture.file.empty());
        o.fixture.R = c.R, o.fixture.L = c.L, o.fixture.nb = c.nb;
        if (vm.count("plan-digest")) o.plan_digest = vm["plan-digest"].as<std::string>();
    }
    if (o.fixture.file.empty()) Config::preset(o.fixture.preset);  // BadInput for an unknown preset, before any work
    o.schedule = Schedule::parse(vm["schedule"].as<std::string>());
    o.schedule.seed = vm["seed"].as<uint64_t>();
    if (o.schedule.kind == Schedule::delay && o.schedule.delay_role)
        bad_input("--kernel v2 delays one CTA (delay:cta:N); " + o.schedule.str() + " names a role of kernel v1");
    o.fault = parse_fault(vm["inject"].as<std::string>());
    FaultHooks{o.fault}.require_kernel(2);
    o.detectors = DetectorSet::parse_off(vm["detectors-off"].as<std::string>());
    const int sweep = vm["sweep"].as<int>();
    require_range("--sweep", sweep, 0, 100000);

    const V2Prepared prep = prepare_v2(o);
    if (sweep == 0) {
        const V2EmulateResult r = emulate_v2(prep, o);
        std::cout << r.report;
        return r.verdict == Verdict::PASS && r.problems.empty() ? 0 : 1;
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Verdict> verdicts(static_cast<size_t>(sweep));
    std::vector<std::string> reports(static_cast<size_t>(sweep));
    Progress progress("sweep: schedules", sweep);
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < sweep; ++i) {
        V2EmulateOptions oi = o;
        oi.schedule.kind = i % 2 ? Schedule::pct : Schedule::random;
        oi.schedule.seed = o.schedule.seed + uint64_t(i);
        V2EmulateResult r = emulate_v2(prep, oi);
        verdicts[size_t(i)] = r.verdict;
        if (r.verdict != Verdict::PASS) reports[size_t(i)] = std::move(r.report);
        progress.add();
    }
    progress.finish();
    std::map<std::string, int> count;
    int first_fail = -1;
    for (int i = 0; i < sweep; ++i) {
        count[to_string(verdicts[size_t(i)])]++;
        if (verdicts[size_t(i)] != Verdict::PASS && first_fail < 0) first_fail = i;
    }
    std::cout << "sweep --kernel v2: " << sweep << " schedules (random and pct:3, seeds " << o.schedule.seed << ".."
              << o.schedule.seed + uint64_t(sweep) - 1 << ") in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s:";
    for (const auto& c : count) std::cout << " " << c.first << " " << c.second;
    std::cout << "\n";
    if (first_fail >= 0) {
        std::cout << "first failure (schedule " << first_fail << "):\n" << reports[size_t(first_fail)];
        return 1;
    }
    std::cout << "VERDICT: PASS\n";
    return 0;
}

}  // namespace monokda::cli
