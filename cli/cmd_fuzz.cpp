// `monokda fuzz`: the shape fuzzer's command line (target, shapes, shards, budget, planted bugs),
// the replay of one case, and the merge of shard reports (docs/properties.md).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "cli/options.hpp"
#include "core/atomic_write.hpp"
#include "fuzz/checks.hpp"
#include "fuzz/report.hpp"
#include "fuzz/shape_fuzzer.hpp"
#include "properties/planted_bugs.hpp"
#include "properties/target.hpp"
#include "properties/target_exec.hpp"
#include "verify/same.hpp"

namespace monokda::cli {

namespace {

void list_all(std::ostream& os) {
    os << "targets:\n";
    for (const auto& t : props::target_registry()) {
        const std::string why = t.unavailable();
        os << "  " << t.name << std::string(12 - std::min<size_t>(11, t.name.size()), ' ') << t.summary
           << (why.empty() ? "" : "  [not available: " + why + "]") << "\n";
    }
    os << "checks (every case runs reference-stages for non-reference targets, oracle on unit-scale steps, and "
          "every property):\n";
    os << "  reference-stages    the exact set and each reference stage fed the target's own hand-offs: >= 99.9 % "
          "identical, <= 1 ulp at row scale (SPEC §5, docs/verify.md)\n";
    os << "  oracle              the same with the stages in f64\n";
    os << "  envelope            free-running, inside the reduction-order envelope measured on the case\n";
    for (const auto& p : props::all_properties())
        os << "  " << p.name << std::string(20 - std::min<size_t>(19, std::string(p.name).size()), ' ') << p.summary
           << " [" << p.exactness << "]\n";
    os << "planted bugs (--plant NAME: the reference with this bug, to watch detection and shrinking):\n";
    for (const auto& b : props::planted_bugs())
        os << "  " << b.name << std::string(20 - std::min<size_t>(19, std::string(b.name).size()), ' ') << b.what
           << " [caught by " << b.caught_by << "]\n";
}

// BadInput unless `name` is one of the fuzzer's checks (`option`: the option that named it).
void require_check(const std::string& option, const std::string& name) {
    const auto names = fuzz::all_check_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
        bad_input(option + ": unknown check '" + name + "' (see monokda fuzz --list)");
}

// SIGINT / SIGTERM: the run stops drawing cases, kills a running exec target, keeps what it found and
// writes its report; a second signal ends the process at once.
std::atomic<int> g_signal{0};
void on_stop_signal(int sig) {
    g_signal.store(sig);
    props::request_cancel();
    signal(sig, SIG_DFL);
}

// "I/N" -> (I, N), 0 <= I < N.
std::pair<int, int> parse_shard(const std::string& text) {
    const size_t slash = text.find('/');
    const std::optional<long> i = slash == std::string::npos ? std::nullopt : parse_int(text.substr(0, slash));
    const std::optional<long> n = slash == std::string::npos ? std::nullopt : parse_int(text.substr(slash + 1));
    if (!i || !n || *n < 1 || *n > 1000000 || *i < 0 || *i >= *n)
        bad_input("--shard must be I/N with 0 <= I < N (got '" + text + "')");
    return {int(*i), int(*n)};
}

int merge(const std::vector<std::string>& paths, const std::string& report_path) {
    const fuzz::Merged m = fuzz::merge_reports(paths);
    if (!report_path.empty()) write_file_atomic(report_path, m.report.dump(2) + "\n");
    for (const auto& n : m.notes) std::cout << "note: " << n << "\n";
    fuzz::print_summary(m.report, std::cout);
    return fuzz::report_verdict(m.report) == "passed" ? 0 : 1;
}

// The command line's values, as parsed.
struct FuzzArgs {
    std::string target_name, config, plant, order, replay_file, check, out_dir, per_case, only, cmd, shapes, shard,
        report_path, in_proj;
    std::vector<std::string> merge_paths;
    long iters = 0;
    double seconds = 0, shrink_seconds = 120, case_timeout = 300;
    uint64_t seed = 1, check_seed = 0;
    int jobs = 0;
};

po::options_description fuzz_option_list(FuzzArgs& a) {
    po::options_description opts("monokda fuzz");
    opts.add_options()
        ("target", po::value(&a.target_name)->default_value("reference"), "what to fuzz: reference | emulator | gpu | exec")
        ("cmd", po::value(&a.cmd), "exec target: the command, with {fixture} and {out} (run by /bin/sh; exit 77: step not taken)")
        ("case-timeout", po::value(&a.case_timeout)->default_value(300), "exec target: seconds a run may take before it is killed")
        ("config", po::value(&a.config)->default_value("small"), "model preset of the cases: small | k3")
        ("shapes", po::value(&a.shapes)->default_value("any"),
         "any | k3: every case (and every shrunk step) at the production dims, for targets that take only those")
        ("shard", po::value(&a.shard), "I/N: run the cases i with i % N == I of the campaign (N machines, one shard each)")
        ("report", po::value(&a.report_path), "write a JSON report (with --merge: the merged report)")
        ("merge", po::value(&a.merge_paths)->multitoken(), "merge shard reports into one verdict (REPORT...)")
        ("iters", po::value(&a.iters), "number of cases (default 1000 when --time is not given)")
        ("time", po::value(&a.seconds), "wall-clock budget in seconds")
        ("seed", po::value(&a.seed)->default_value(1), "fuzzer seed: case i is a function of (seed, i)")
        ("jobs", po::value(&a.jobs)->default_value(0), "worker threads (0: one a core)")
        ("out", po::value(&a.out_dir)->default_value("fuzz-failures"), "where a failing case's fixtures are written")
        ("properties", po::value(&a.per_case)->default_value("2"),
         "properties that rerun the target, per case: all, or N (each case takes the next N in turn)")
        ("plant", po::value(&a.plant), "fuzz the reference with a planted bug instead of --target (see --list)")
        ("in-proj", po::value(&a.in_proj)->default_value("auto"),
         "the target's in_proj: auto (tensor-cores for gpu, else exact) | exact | tensor-cores (SPEC §5: proj "
         "held to 99.5 % identical and the envelope widened for it)")
        ("order", po::value(&a.order), "reference target only: its reduction order (sequential | pairwise | split:P | shuffle:S)")
        ("only", po::value(&a.only), "run only these checks (comma-separated names, see --list)")
        ("keep-going", "run on after a failure; the first failing case of each check is shrunk and written")
        ("no-shrink", "write the failing case as found")
        ("shrink-time", po::value(&a.shrink_seconds)->default_value(120), "shrinking budget in seconds")
        ("quiet", "no progress line")
        ("replay", po::value(&a.replay_file), "run one check on a written fixture (with --check, --check-seed)")
        ("check", po::value(&a.check), "the check to replay (see --list)")
        ("check-seed", po::value(&a.check_seed), "the seed the check was run with")
        ("list", "list targets, checks and planted bugs");
    return opts;
}

// The target the command line names, and the options that name it again in a replay line.
std::pair<props::Target, std::string> fuzz_target(const FuzzArgs& a, const po::variables_map& vm) {
    props::Target target;
    std::string target_args;
    if (vm.count("plant")) {
        if (!vm["target"].defaulted() && a.target_name != "reference")
            bad_input("--plant runs the reference with a bug; it does not combine with --target " + a.target_name);
        target = props::planted_target(a.plant);
        target_args = "--plant " + a.plant;
    } else if (vm.count("order")) {
        if (a.target_name != "reference") bad_input("--order applies to the reference target only");
        target = props::reference_target(a.order);
        target_args = "--target reference --order " + a.order;
    } else if (a.target_name == "exec") {
        props::ExecOptions eo;
        eo.cmd = a.cmd;
        eo.timeout_s = a.case_timeout;
        target = props::exec_target(eo);
        target_args = "--target exec --cmd " + props::shell_quote(a.cmd);
        if (!vm["case-timeout"].defaulted()) {
            std::ostringstream t;
            t << a.case_timeout;
            target_args += " --case-timeout " + t.str();
        }
    } else {
        target = props::make_target(a.target_name);
        target_args = "--target " + a.target_name;
    }
    if (vm.count("cmd") && a.target_name != "exec") bad_input("--cmd goes with --target exec");

    if (a.in_proj != "auto") {
        target.tensor_core_in_proj = verify::parse_in_proj(a.in_proj) == verify::InProj::tensor_cores;
        target_args += " --in-proj " + a.in_proj;
    }
    return {std::move(target), target_args};
}

// The campaign the command line asks for, every value checked (BadInput) before any case runs.
// `config` comes back as the preset the cases use (--shapes k3 sets it).
fuzz::FuzzOptions fuzz_options(const FuzzArgs& a, const po::variables_map& vm, const std::string& target_args,
                               std::string& config) {
    fuzz::FuzzOptions fo;
    fo.config = config;
    fo.iters = vm.count("iters") ? a.iters : (vm.count("time") ? 0 : 1000);
    fo.seconds = a.seconds;
    if (vm.count("iters")) require_range("--iters", a.iters, 1);
    if (vm.count("time") && !(a.seconds > 0 && std::isfinite(a.seconds))) bad_input("--time must be a positive number of seconds");
    require_range("--jobs", a.jobs, 0, fuzz::kMaxJobs);
    require_finite_min("--shrink-time", a.shrink_seconds, 0);
    check_output_dir("--out", a.out_dir);
    fo.seed = a.seed;
    fo.jobs = a.jobs;
    if (a.per_case != "all") {
        const std::optional<long> n = parse_int(a.per_case);
        if (!n || *n < 1 || *n > 100) bad_input("--properties must be all or a number 1..100 (got '" + a.per_case + "')");
        fo.properties_per_case = int(*n);
    }
    fo.out_dir = a.out_dir;
    fo.shrink = !vm.count("no-shrink");
    fo.keep_going = vm.count("keep-going") > 0;
    for (const std::string& n : comma_list(a.only)) {
        if (n.empty()) continue;
        require_check("--only", n);
        fo.only.push_back(n);
    }
    fo.shrink_seconds = a.shrink_seconds;
    fo.target_args = target_args + (config != "small" ? " --config " + config : "");
    fo.progress = !vm.count("quiet");
    if (a.shapes != "any" && a.shapes != "k3") bad_input("--shapes must be any or k3 (got '" + a.shapes + "')");
    if (a.shapes == "k3") {
        if (!vm["config"].defaulted() && config != "k3") bad_input("--shapes k3 runs the k3 preset; it does not combine with --config " + config);
        fo.config = config = "k3";
        fo.keep_dims = true;
        fo.target_args = target_args + " --config k3";
    }
    if (vm.count("shard")) std::tie(fo.shard_index, fo.shard_count) = parse_shard(a.shard);
    Config::preset(config);  // a bad preset is bad input before any case runs
    return fo;
}

// The campaign run with SIGINT/SIGTERM stopping it cleanly; its report printed (and written).
int run_campaign(const props::Target& target, const fuzz::FuzzOptions& fo, const fuzz::Campaign& campaign,
                 const std::string& report_path) {
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    const fuzz::FuzzReport rep = fuzz::run_fuzz(target, fo, std::cerr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    const nlohmann::json report = fuzz::report_json(rep, fo, campaign);
    if (!report_path.empty()) write_file_atomic(report_path, report.dump(2) + "\n");
    fuzz::print_summary(report, std::cout);
    if (fuzz::report_verdict(report) != "passed") return 1;
    return g_signal ? 128 + g_signal.load() : 0;
}

}  // namespace

int cmd_fuzz(const Args& args) {
    FuzzArgs a;
    po::options_description opts = fuzz_option_list(a);
    po::positional_options_description pos;
    po::variables_map vm;
    if (!parse_args(args, "monokda fuzz --target reference|emulator|gpu|exec [--cmd 'PROG {fixture} {out}'] "
                          "[--config small|k3] [--shapes any|k3] [--iters N] [--seed S] [--time SECONDS] "
                          "[--shard I/N] [--report F.json] [--plant BUG]\n"
                          "       monokda fuzz --replay FILE --check NAME --check-seed N [--target T | --plant BUG]\n"
                          "       monokda fuzz --merge REPORT... [--report F.json]\n"
                          "       monokda fuzz --list",
                    opts, pos, vm))
        return 0;
    if (vm.count("list")) { list_all(std::cout); return 0; }
    if (vm.count("merge")) {
        check_outputs({{"--report", a.report_path}}, [&] {
            std::vector<NamedPath> in;
            for (const auto& p : a.merge_paths) in.push_back({"--merge", p});
            return in;
        }());
        return merge(a.merge_paths, a.report_path);
    }

    const auto [target, target_args] = fuzz_target(a, vm);
    if (vm.count("replay")) {
        if (!vm.count("check") || !vm.count("check-seed")) bad_input("--replay needs --check NAME and --check-seed N");
        require_check("--check", a.check);
        const props::Verdict v = fuzz::replay(target, a.replay_file, a.check, a.check_seed);
        std::cout << to_string(v.kind) << " " << v.check << (v.detail.empty() ? "" : ": " + v.detail) << "\n";
        return v.kind == props::Verdict::FAIL ? 1 : 0;
    }

    std::string config = a.config;
    const fuzz::FuzzOptions fo = fuzz_options(a, vm, target_args, config);
    check_outputs({{"--report", a.report_path}});  // a report that cannot be written is bad input now, not after the run
    const fuzz::Campaign campaign{fo.target_args, config, a.shapes, a.seed, a.per_case, fo.only};
    return run_campaign(target, fo, campaign, a.report_path);
}

}  // namespace monokda::cli
