// `monokda fixture`: writes a deterministic fixture (SPEC §2) from a preset or a Kimi-K3 checkpoint.
#include <iostream>

#include "cli/options.hpp"
#include "core/fixture_gen.hpp"
#include "core/hf_checkpoint.hpp"

namespace monokda::cli {

int cmd_fixture(const Args& args) {
    po::options_description opts("monokda fixture");
    std::string config, layout, out, hf_dir, scale;
    int R, L, nb, nulls, partial, extra, layer, tp_rank, tp_size;
    uint64_t seed;
    opts.add_options()
        ("config", po::value(&config)->default_value("small"), "model preset: k3 | small")
        ("R", po::value(&R)->default_value(2), "requests")
        ("L", po::value(&L)->default_value(4), "tokens per request (num_spec + 1)")
        ("nb", po::value(&nb)->default_value(4), "AttnRes bank rows in use (1..8; <= 7 with --block-write)")
        ("block-write", "a block-write layer: P' is also stored to bank row nb")
        ("layout", po::value(&layout)->default_value("sd"), "conv_state layout: sd | ds")
        ("null-requests", po::value(&nulls)->default_value(0), "requests with no state slot")
        ("partial-nulls", po::value(&partial)->default_value(0),
         "live requests with no slot (0 and -1 in turn) at some tokens other than a-1")
        ("scale", po::value(&scale)->default_value("default"),
         "scale profile: default | attnres-large | prefix-large | norm-tiny | gate-low (docs/fixtures.md)")
        ("extra-slots", po::value(&extra)->default_value(3), "untouched state slots beyond those used")
        ("seed", po::value(&seed)->default_value(1), "generator seed")
        ("from-hf", po::value(&hf_dir), "take the weights of one rank's layer from a Kimi-K3 HF checkpoint folder "
                                        "(the model dims follow it; --config, if given, must match)")
        ("layer", po::value(&layer)->default_value(1), "with --from-hf: layer index")
        ("tp-rank", po::value(&tp_rank)->default_value(0), "with --from-hf: tensor-parallel rank")
        ("tp-size", po::value(&tp_size)->default_value(8), "with --from-hf: tensor-parallel size")
        ("output,o", po::value(&out)->required(), "output fixture file");
    po::positional_options_description pos;
    po::variables_map vm;
    if (!parse_args(args, "monokda fixture --config k3|small [--R 2] [--L 4] [--nb 4] [--block-write] "
                          "[--layout sd|ds] [--null-requests K] [--partial-nulls K] [--scale PROFILE] [--extra-slots 3] "
                          "[--seed 1] -o FILE\n"
                          "       monokda fixture --from-hf DIR --layer I --tp-rank R --tp-size T [...] -o FILE",
                    opts, pos, vm))
        return 0;
    check_outputs({{"-o", out}});
    const bool from_hf = vm.count("from-hf") > 0;
    for (const char* o : {"layer", "tp-rank", "tp-size"})
        if (!from_hf && !vm[o].defaulted()) bad_input(std::string("--") + o + " needs --from-hf");
    const ScaleProfile profile = parse_scale_profile(scale);
    if (from_hf && profile != ScaleProfile::standard)  // the profiles set weights the checkpoint would replace
        bad_input("--scale " + scale + " sets weights of its own: it does not go with --from-hf");
    Config c = Config::preset(config);
    HfLayerWeights w;
    if (from_hf) {
        w = load_hf_layer(hf_dir, layer, tp_rank, tp_size);
        Config want = c;
        set_model_dims(w, c);
        if (!vm["config"].defaulted() &&
            (want.D != c.D || want.H != c.H || want.K != c.K || want.F != c.F || want.W != c.W || want.N != c.N))
            bad_input("--config " + config + " does not match the checkpoint's rank (D " + std::to_string(c.D) + ", H " +
                      std::to_string(c.H) + ", K " + std::to_string(c.K) + ", F " + std::to_string(c.F) + ", W " +
                      std::to_string(c.W) + ", N " + std::to_string(c.N) + ")");
    }
    c.R = R; c.L = L; c.nb = nb; c.block_write = vm.count("block-write") > 0;
    c.conv_layout = parse_conv_layout(layout);
    c.seed = seed;
    FixtureOptions fo;
    fo.null_requests = nulls;
    fo.partial_nulls = partial;
    fo.extra_slots = extra;
    fo.scale = profile;
    StepInputs in = make_fixture(c, fo);
    if (from_hf) apply_weights(w, in);
    TensorFile f = in.to_file();
    if (fo.scale != ScaleProfile::standard) f.metadata["scale"] = scale;  // informational, like "weights"
    if (from_hf)  // informational: where the weights came from
        f.metadata["weights"] = "hf " + w.prefix + " tp " + std::to_string(tp_rank) + "/" + std::to_string(tp_size);
    write_safetensors(out, f);
    std::cout << "wrote " << out << " (" << (from_hf ? "weights of " + w.prefix + " rank " + std::to_string(tp_rank) +
                                                           "/" + std::to_string(tp_size)
                                                     : config)
              << ", R=" << R << " L=" << L << " nb=" << nb << (c.block_write ? " block-write" : "")
              << " layout=" << layout << (fo.scale != ScaleProfile::standard ? " scale=" + scale : "") << " seed=" << seed
              << ")\n";
    return 0;
}

}  // namespace monokda::cli
