// `monokda bench`: the GPU benchmark's command line (shapes, repetitions, the plan's choices) and its
// reports; without a CUDA build it says so and exits 2.
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/options.hpp"
#include "core/atomic_write.hpp"
#include "core/plan.hpp"
#include "kernels/kda_pre.hpp"
#ifdef MONOKDA_HAVE_GPU_BENCH
#include "bench/gpu_bench.hpp"
#endif

namespace monokda::cli {

namespace {

// The shapes the benchmark runs (its fixtures and the fused kernel's limits): R in 1..64, L in 1..8,
// R·L <= 64. BadInput naming the option and the shape otherwise.
void require_bench_shape(const std::string& option, long r, long l) {
    if (r < 1 || r > 64 || l < 1 || l > 8 || r * l > 64)
        bad_input(option + ": " + std::to_string(r) + "x" + std::to_string(l) +
                  ": the benchmark runs R in 1..64, L in 1..8, R·L <= 64");
}

// The shapes asked for: --R/--L (one) or --shapes (several); none: the benchmark's sweep.
std::vector<std::pair<int, int>> bench_shapes(const po::variables_map& vm, int R, int L, const std::string& shapes) {
    std::vector<std::pair<int, int>> shape_list;
    if (vm.count("R")) shape_list.push_back({R, L});
    if (vm.count("shapes")) {
        if (vm.count("R")) bad_input("--shapes and --R/--L exclude each other");
        for (const std::string& item : comma_list(shapes)) {
            const size_t x = item.find('x');
            const std::optional<long> r = parse_int(item.substr(0, x)),
                                      l = x == std::string::npos ? std::nullopt : parse_int(item.substr(x + 1));
            if (!r || !l) bad_input("--shapes: '" + item + "' is not RxL");
            require_bench_shape("--shapes", *r, *l);
            shape_list.push_back({int(*r), int(*l)});
        }
        if (shape_list.empty()) bad_input("--shapes: no shape given");
    }
    return shape_list;
}

#ifdef MONOKDA_HAVE_GPU_BENCH
// --check: the unfused chain against the reference, its report on stdout or in `out`.
int bench_check(const std::vector<std::pair<int, int>>& shape_list, int nb, bool block_write, const std::string& plant,
                const std::string& out) {
    std::vector<bench::CheckCase> cases = bench::default_check_cases();
    if (!shape_list.empty()) {
        cases.clear();
        for (const auto& [r, l] : shape_list) {
            bench::CheckCase c;
            c.R = r;
            c.L = l;
            c.nb = nb;
            c.block_write = block_write;
            cases.push_back(c);
        }
    }
    std::ostringstream report;
    const int rc = bench::run_unfused_check(cases, plant, report, std::cout);
    if (!out.empty()) {
        write_file_atomic(out, report.str());
        std::cout << "wrote " << out << "\n";
    } else {
        std::cout << report.str();
    }
    return rc;
}
#endif

}  // namespace

int cmd_bench(const Args& args) {
    po::options_description opts("monokda bench");
    int R = 0, L = 0, nb = 4, reps = 200, sets = 4;
    std::string out, commit, plant, shapes, evict, gemv, parts, placement, pace;
    opts.add_options()
        ("R", po::value(&R), "requests (with --L: one shape instead of the sweep)")
        ("L", po::value(&L), "tokens a request (with --R)")
        ("shapes", po::value(&shapes), "several shapes instead of the sweep: RxL,RxL,...")
        ("nb", po::value(&nb)->default_value(4), "AttnRes bank rows in use")
        ("block-write", "a block-write layer (writes bank row nb)")
        ("reps", po::value(&reps)->default_value(200), "timed graph replays a measurement (median)")
        ("sets", po::value(&sets)->default_value(4), "weight/state sets rotated through (>= 3)")
        ("no-fused", "skip the fused kernel")
        ("no-stages", "skip the per-stage variants of the unfused chain")
        ("weight-evict", po::value(&evict)->default_value("first"),
         "the fused kernel's in_proj weight copies in L2: first (evict-first, the default) | normal")
        ("gemv-bands", po::value(&gemv)->default_value("auto"),
         "who runs the fused kernel's in_proj bands: auto (the plan's choice) | spec (the CTAs past the attn "
         "slices) | every (every CTA)")
        ("attn-parts", po::value(&parts)->default_value("auto"),
         "the fused kernel's attn CTAs a slice (its rows split between them): auto (the plan's choice) | 1 | 2")
        ("weight-pace", po::value(&pace)->default_value("auto"),
         "ns between the fused kernel's weight steps copied before x exists: auto (the launcher's choice) | 0..20000")
        ("placement", po::value(&placement)->default_value("auto"),
         "the fused kernel's lists on launch CTAs: auto (the plan's rule) | index (list b on CTA b) | paired (attn "
         "list c on launch CTA 2c, list A + c on 2c + 1)")
        ("commit", po::value(&commit), "commit recorded in the results")
        ("output,o", po::value(&out), "results JSON (issue 6 schema); -detail.json, .md and .svg beside it")
        ("check", "instead of timing: check the unfused chain against the reference (exit 1 on a failure)")
        ("plant", po::value(&plant), "with --check: corrupt this tensor of the GPU result first (the check must fail)");
    po::positional_options_description pos;
    po::variables_map vm;
    const std::string usage =
        "monokda bench [--R R --L L | --shapes RxL,...] [--nb 4] [--block-write] [--reps 200] [--sets 4] [--no-fused]\n"
        "              [--weight-evict first|normal] [--gemv-bands auto|spec|every] [--attn-parts auto|1|2]\n"
        "              [--placement auto|index|paired] [--weight-pace auto|NS] [-o results.json]\n"
        "       monokda bench --check [--R R --L L --nb 4] [--plant TENSOR] [-o report.md]";
    if (!parse_args(args, usage, opts, pos, vm)) return 0;
    if (vm.count("R") != vm.count("L")) bad_input("--R and --L go together");
    if (vm.count("R")) require_bench_shape("--R/--L", R, L);
    if (vm.count("plant") && !vm.count("check")) bad_input("--plant needs --check");
    if (evict != "first" && evict != "normal") bad_input("--weight-evict must be first or normal (got '" + evict + "')");
    const GemvBands bands = parse_gemv_bands(gemv);
    if (parts != "auto" && parts != "1" && parts != "2") bad_input("--attn-parts must be auto, 1 or 2 (got '" + parts + "')");
    const int attn_parts = parts == "auto" ? 0 : std::stoi(parts);
    const Placement place = parse_placement(placement);
    int pace_ns = -1;
    if (pace != "auto") {
        const std::optional<long> v = parse_int(pace);
        if (!v || *v < 0 || *v > gpu::kMaxWeightPaceNs)
            bad_input("--weight-pace must be auto or 0.." + std::to_string(gpu::kMaxWeightPaceNs) + " ns (got '" + pace + "')");
        pace_ns = int(*v);
    }
    const std::vector<std::pair<int, int>> shape_list = bench_shapes(vm, R, L, shapes);
#ifndef MONOKDA_HAVE_GPU_BENCH
    (void)nb; (void)reps; (void)sets; (void)bands; (void)attn_parts; (void)place; (void)pace_ns;
    bad_input("this monokda was built without CUDA; configure with -DMONOKDA_CUDA=ON to run the GPU benchmark");
#else
    if (!out.empty()) {  // before any GPU time: the outputs and the siblings written beside -o
        std::vector<NamedPath> outs = {{"-o", out}};
        if (!vm.count("check"))
            for (const char* sib : {"-detail.json", ".md", ".svg"})
                outs.push_back({std::string("-o's ") + sib, bench::json_sibling(out, sib)});
        check_outputs(outs);
    }
    if (vm.count("check")) return bench_check(shape_list, nb, vm.count("block-write") > 0, plant, out);
    bench::GpuBenchOptions o;
    o.shapes = shape_list;
    o.nb = nb;
    o.block_write = vm.count("block-write") > 0;
    o.reps = reps;
    o.sets = sets;
    o.fused = !vm.count("no-fused");
    o.stages = !vm.count("no-stages");
    o.fused_choices.weight_evict_first = evict == "first";
    o.fused_choices.gemv_bands = bands;
    o.fused_choices.attn_parts = attn_parts;
    o.fused_choices.placement = place;
    o.fused_choices.weight_pace_ns = pace_ns;
    o.commit = commit;
    o.command = "monokda bench";
    for (const auto& a : args) o.command += " " + a;
    const bench::PerfRun run = bench::run_gpu_bench(o, std::cout);
    const std::string md = bench::perf_markdown(run);
    if (!out.empty()) {
        OutputSet set;
        set.add(out, bench::perf_json(run).dump(2) + "\n");
        set.add(bench::json_sibling(out, "-detail.json"), bench::perf_detail_json(run).dump(2) + "\n");
        set.add(bench::json_sibling(out, ".md"), md);
        set.add(bench::json_sibling(out, ".svg"), bench::perf_svg(run));
        set.commit();
        std::cout << "wrote " << out << " and its -detail.json, .md, .svg\n";
    }
    std::cout << "\n" << md;
    return 0;
#endif
}

}  // namespace monokda::cli
