// `monokda gpu`: one launch of the kda_pre kernel on a fixture, its outputs and hand-offs written to
// a file; without a CUDA build it says so and exits 2.
#include <iostream>

#include "cli/options.hpp"
#include "kernels/kda_pre.hpp"

namespace monokda::cli {

int cmd_gpu(const Args& args) {
    po::options_description opts("monokda gpu");
    std::string fixture, out, placement;
    int64_t timeout_ms = 2000;
    int repeat = 1;
    opts.add_options()
        ("fixture", po::value(&fixture)->required(), "input fixture (safetensors, SPEC §2; production shape)")
        ("output,o", po::value(&out)->required(), "output file: every output and the kernel's hand-offs")
        ("no-handoffs", "do not export g1 and o (they are written as NaN)")
        ("packed-states", "hold conv_state and ssm_state of a slot in one page (strided slots)")
        ("timeout-ms", po::value(&timeout_ms)->default_value(2000), "a mailbox poll gives up after this")
        ("placement", po::value(&placement)->default_value("auto"),
         "lists on launch CTAs: auto (the plan's rule) | index | paired (the same sums: outputs do not change)")
        ("repeat", po::value(&repeat)->default_value(1), "launch N times (states restored between), keep the last");
    po::positional_options_description pos;
    pos.add("fixture", 1);
    po::variables_map vm;
    if (!parse_args(args, "monokda gpu FIXTURE -o OUT [--no-handoffs] [--packed-states] [--timeout-ms N] [--repeat N]"
                    " [--placement auto|index|paired]",
                    opts, pos, vm))
        return 0;
    require_range("--repeat", repeat, 1);
    check_outputs({{"-o", out}}, {{"FIXTURE", fixture}});
    const Placement place = parse_placement(placement);
    const gpu::DeviceInfo dev = gpu::probe();
    if (!dev.present) bad_input("no GPU to run on: " + dev.why);
    StepInputs in = StepInputs::from_file(read_safetensors(fixture));
    gpu::RunOptions ro;
    ro.export_handoffs = !vm.count("no-handoffs");
    ro.packed_state_pages = vm.count("packed-states") != 0;
    ro.poll_timeout_ms = timeout_ms;
    ro.placement = place;
    try {
        gpu::KdaRunner runner(in, ro);
        for (int i = 0; i < repeat; ++i) {
            if (i) runner.restore_states();
            runner.run();
        }
        TensorFile f = runner.outputs().to_file(in.cfg);
        f.metadata["gpu_device"] = dev.name;
        f.metadata["gpu_kernel_ms"] = std::to_string(runner.last_ms());
        f.metadata["gpu_placement"] = placement;
        f.metadata["gpu_handoffs"] = ro.export_handoffs ? "exported" : "not exported (g1, o are NaN)";
        write_safetensors(out, f);
        std::cout << "wrote " << out << " (" << dev.name << ", kda_pre " << runner.last_ms() << " ms)\n";
    } catch (const gpu::GpuError& e) {
        std::cerr << "monokda gpu: the kernel failed: " << e.what() << "\n";
        return 1;
    }
    return 0;
}

}  // namespace monokda::cli
