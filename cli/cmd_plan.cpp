// `monokda plan`: the built-in plan as a plan file (docs/plan-file.md), `monokda plan --kernel v2`: kernel
// v2's in_proj plan as a plan file (docs/plan.md), and `monokda plan check FILE`: a plan file's checks
// alone (no fixture, no run), kernel v1's or v2's as the file's format says.
#include <iostream>
#include <stdexcept>

#include "cli/options.hpp"
#include "core/atomic_write.hpp"
#include "core/input_file.hpp"
#include "core/plan_v2.hpp"
#include "emulator/emulate.hpp"

namespace monokda::cli {

namespace {

// A kernel v2 plan file's checks (PlanV2::problems, as a built plan's): exit 0 sound, 1 problems.
int plan_check_v2(const PlanV2& p, const std::string& file) {
    const Config& c = p.config();
    const PlanV2Params& pp = p.params();
    std::cout << file << ": kernel v2 in_proj, " << pp.clusters << " clusters of " << pp.ranks << " (" << p.ctas() << " CTAs), "
              << p.units.size() << " units, for D " << c.D << ", N " << c.N << ", R " << c.R << ", L " << c.L << ", nb " << c.nb << "; "
              << (p.has_seam() ? "the seam computes x" : "x an input") << "\n";
    const auto probs = p.problems();
    if (probs.empty()) {
        std::cout << "plan sound: all " << PlanV2::check_names().size() << " checks pass\n";
        return 0;
    }
    std::cout << probs.size() << " problem(s):\n";
    for (const auto& x : probs) std::cout << "  " << x.check << ": " << x.what << "\n";
    return 1;
}

int plan_check(const Args& args) {
    po::options_description opts("monokda plan check");
    std::string file;
    opts.add_options()("file", po::value(&file),
                       "the plan file: kernel v1's, or kernel v2's (its format monokda-plan-v2); exit 0 sound, 1 problems found, "
                       "2 a malformed file");
    po::positional_options_description pos;
    pos.add("file", 1);
    po::variables_map vm;
    if (!parse_args(args, "monokda plan check FILE", opts, pos, vm)) return 0;
    if (file.empty()) bad_input("plan check needs a FILE (usage: monokda plan check FILE)");
    const std::string text = read_text_file(file, size_t(256) << 20, "plan file");
    if (plan_file_format(text, file) == kPlanV2Format) return plan_check_v2(PlanV2::from_json(text, file), file);
    const Plan p = Plan::from_json(text, file);
    const Config& c = p.config();
    std::cout << file << ": " << (p.name().empty() ? "" : p.name() + ", ") << p.blocks() << " CTAs for D " << c.D << ", H " << c.H
              << ", R " << c.R << ", L " << c.L << ", nb " << c.nb << "; target " << p.target().name << " ("
              << p.co_resident() << " co-resident" << (p.target().cooperative ? ", cooperative" : "")
              << (p.target().in_order_loads ? ", in-order load retirement" : "") << ")\n";
    const auto probs = p.structural_problems();
    if (probs.empty()) {
        std::cout << "structure sound: every entry has one producer, every wait is what its instruction reads, the split "
                     "sums are the instructions', the lists complete; needs "
                  << p.min_residency() << " co-resident CTAs (admitted in launch order)\n";
        return 0;
    }
    std::cout << probs.size() << " structural problem(s):\n";
    for (const auto& l : probs) std::cout << "  " << l << "\n";
    return 1;
}

// `monokda plan --kernel v2`: kernel v2's in_proj plan (core/plan_v2.hpp) as JSON, after its checks.
int plan_v2(const po::variables_map& vm, const Config& c, const std::string& out) {
    for (const char* k : {"blocks", "gemv-bands", "amd", "name"})
        if (vm.count(k) && !vm[k].defaulted()) bad_input(std::string("--") + k + " is kernel v1's plan; --kernel v2 takes --config, --R, --L, --tail");
    const PlanV2Params pp = PlanV2Params::for_config(c, vm.count("tail") ? 1 : 0);
    const PlanV2 p = PlanV2::build(c, pp);
    p.require_fits();
    if (const auto probs = p.problems(); !probs.empty())
        throw std::logic_error("plan v2: the built plan fails its check " + probs[0].check + ": " + probs[0].what);
    write_file_atomic(out, p.to_json());
    std::cout << "wrote " << out << ": kernel v2 in_proj, " << p.params().clusters << " clusters of " << p.params().ranks << " ("
              << p.ctas() << " CTAs), " << p.units.size() << " units, " << p.params().ring_depth << "-slot rings of "
              << p.rings[0].slot_bytes << " bytes (" << p.params().in_flight << " in flight), " << p.params().recv_slots
              << " receive slots" << (p.has_tail() ? ", the tail's " + std::to_string(p.tasks.size()) + " kda tasks" : std::string())
              << "; " << PlanV2::check_names().size() << " checks passed\n";
    return 0;
}

}  // namespace

int cmd_plan(const Args& args) {
    if (!args.empty() && args[0] == "check") return plan_check(Args(args.begin() + 1, args.end()));
    po::options_description opts("monokda plan");
    std::string config, gemv, out, kernel;
    int R, L, nb, blocks;
    opts.add_options()
        ("config", po::value(&config)->default_value("k3"), "model preset: k3 | small")
        ("R", po::value(&R)->default_value(2), "requests")
        ("L", po::value(&L)->default_value(4), "tokens per request")
        ("nb", po::value(&nb)->default_value(4), "AttnRes bank rows in use")
        ("blocks", po::value(&blocks)->default_value(0), "CTAs in the launch (default: 132 for k3, 24 for small)")
        ("gemv-bands", po::value(&gemv)->default_value("auto"), "who runs the in_proj bands: auto | spec | every (as emulate)")
        ("amd", "an AMD part: in-order load retirement, CTAs in index order")
        ("kernel", po::value(&kernel)->default_value("v1"),
         "the kernel whose plan: v1 | v2 (kernel v2's in_proj, docs/plan.md; `plan check` and `emulate --kernel v2 --plan` read "
         "the file back)")
        ("tail", "--kernel v2: the tail in the plan (the owners publish tagged words, the kda tasks run; docs/kernel-v2.md)")
        ("name", po::value<std::string>(), "the plan's name in the file")
        ("output,o", po::value(&out), "the plan file to write");
    po::positional_options_description pos;
    po::variables_map vm;
    if (!parse_args(args,
                    "monokda plan [--config k3|small] [--R 2] [--L 4] [--nb 4] [--blocks N] [--gemv-bands auto|spec|every] "
                    "[--amd] [--name TEXT] -o FILE\n       monokda plan --kernel v2 [--config k3|small] [--R 2] [--L 4] [--tail] -o FILE\n"
                    "       monokda plan check FILE",
                    opts, pos, vm))
        return 0;
    if (out.empty()) bad_input("plan needs -o FILE (usage: monokda plan [...] -o FILE, or monokda plan check FILE)");
    if (kernel != "v1" && kernel != "v2") bad_input("--kernel must be v1 or v2 (got '" + kernel + "')");
    check_outputs({{"-o", out}}, {});
    Config c = Config::preset(config);
    require_range("--R", R, 1, 4096);
    require_range("--L", L, 1, 64);
    require_range("--nb", nb, 1, 8);
    require_range("--blocks", blocks, 0, 65536);
    c.R = R;
    c.L = L;
    c.nb = nb;
    c.slots = c.S() + 1;
    if (kernel == "v2") return plan_v2(vm, c, out);
    Plan p = emu::builtin_plan(c, blocks, parse_gemv_bands(gemv), vm.count("amd") > 0);
    if (vm.count("name")) p.set_name(vm["name"].as<std::string>());
    write_file_atomic(out, p.to_json());
    std::cout << "wrote " << out << ": " << p.blocks() << " CTAs, " << p.n_kda_tasks() << " kda tasks, digest "
              << emu::plan_digest(p) << "\n";
    return 0;
}

}  // namespace monokda::cli
