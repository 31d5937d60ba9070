#include <iostream>

#include "cli/options.hpp"
#include "core/fixture_gen.hpp"

namespace monokda::cli {

int cmd_fixture(const Args& args) {
    po::options_description opts("monokda fixture");
    std::string config, layout, out;
    int R, L, nb, nulls, extra;
    uint64_t seed;
    opts.add_options()
        ("config", po::value(&config)->default_value("small"), "model preset: k3 | small")
        ("R", po::value(&R)->default_value(2), "requests")
        ("L", po::value(&L)->default_value(4), "tokens per request (num_spec + 1)")
        ("nb", po::value(&nb)->default_value(4), "AttnRes bank rows in use (1..8; <= 7 with --block-write)")
        ("block-write", "a block-write layer: P' is also stored to bank row nb")
        ("layout", po::value(&layout)->default_value("sd"), "conv_state layout: sd | ds")
        ("null-requests", po::value(&nulls)->default_value(0), "requests with no state slot")
        ("extra-slots", po::value(&extra)->default_value(3), "untouched state slots beyond those used")
        ("seed", po::value(&seed)->default_value(1), "generator seed")
        ("output,o", po::value(&out)->required(), "output fixture file");
    po::positional_options_description pos;
    po::variables_map vm;
    if (!parse_args(args, "monokda fixture --config k3|small [--R 2] [--L 4] [--nb 4] [--block-write] "
                          "[--layout sd|ds] [--null-requests K] [--seed 1] -o FILE", opts, pos, vm))
        return 0;
    Config c = Config::preset(config);
    c.R = R; c.L = L; c.nb = nb; c.block_write = vm.count("block-write") > 0;
    c.conv_layout = parse_conv_layout(layout);
    c.seed = seed;
    FixtureOptions fo;
    fo.null_requests = nulls;
    fo.extra_slots = extra;
    StepInputs in = make_fixture(c, fo);
    write_safetensors(out, in.to_file());
    std::cout << "wrote " << out << " (" << config << ", R=" << R << " L=" << L << " nb=" << nb
              << (c.block_write ? " block-write" : "") << " layout=" << layout << " seed=" << seed << ")\n";
    return 0;
}

}  // namespace monokda::cli
