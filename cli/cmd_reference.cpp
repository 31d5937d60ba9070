// `monokda reference`: the reference (or the f64 oracle) on a fixture, in a chosen reduction order.
#include <chrono>
#include <iostream>

#include "cli/options.hpp"
#include "reference/reference.hpp"

namespace monokda::cli {

int cmd_reference(const Args& args) {
    po::options_description opts("monokda reference");
    std::string fixture, out, order;
    opts.add_options()
        ("fixture", po::value(&fixture)->required(), "input fixture (safetensors, SPEC §2)")
        ("output,o", po::value(&out)->required(), "output file: every output and intermediate")
        ("f64", "evaluate in f64 (the oracle; bf16 roundings kept, ssm_state written as F64)")
        ("order", po::value(&order)->default_value("sequential"),
         "reduction order of every sum: sequential | pairwise | split:P | cluster:P | shuffle:SEED, or per site as emulate writes it (SITE=ORDER,...; the output metadata's emulate_plan_order)");
    po::positional_options_description pos;
    pos.add("fixture", 1);
    po::variables_map vm;
    if (!parse_args(args, "monokda reference FIXTURE -o OUT [--f64] [--order sequential|pairwise|split:P|cluster:P|shuffle:SEED|SITE=ORDER,...]",
                    opts, pos, vm))
        return 0;
    check_outputs({{"-o", out}}, {{"FIXTURE", fixture}});
    ReductionOrder ord = ReductionOrder::parse(order);
    const TensorFile input = read_safetensors(fixture);
    StepInputs in = StepInputs::from_file(input);
    auto t0 = std::chrono::steady_clock::now();
    TensorFile f = vm.count("f64") ? ref::run<double>(in, ord).to_file(in.cfg) : ref::run<float>(in, ord).to_file(in.cfg);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    f.metadata = input.metadata;  // verbatim, including keys other tools added
    f.metadata["reference_order"] = ord.str();
    f.metadata["reference_precision"] = vm.count("f64") ? "f64" : "f32";
    write_safetensors(out, f);
    std::cout << "wrote " << out << " (" << (vm.count("f64") ? "f64" : "f32") << ", order " << ord.str() << ", "
              << ms << " ms)\n";
    return 0;
}

}  // namespace monokda::cli
