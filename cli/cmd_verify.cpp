// `monokda verify FIXTURE CANDIDATE`: a candidate's outputs against SPEC §5's checks, as text, JSON
// and JUnit reports (docs/verify.md).
#include <chrono>
#include <iostream>

#include "cli/options.hpp"
#include "core/atomic_write.hpp"
#include "emulator/envelope.hpp"
#include "reference/reference.hpp"
#include "verify/candidate.hpp"
#include "verify/report.hpp"
#include "verify/same.hpp"

namespace monokda::cli {

int cmd_verify(const Args& args) {
    po::options_description opts("monokda verify");
    std::string fixture, candidate, report, junit, map, in_proj, envelope, ssm_layout;
    int orders = 0;
    opts.add_options()
        ("fixture", po::value(&fixture)->required(), "the step's fixture (safetensors, SPEC §2)")
        ("candidate", po::value(&candidate)->required(), "the implementation's outputs for it (safetensors)")
        ("report", po::value(&report), "write the JSON report (docs/verify.md)")
        ("junit", po::value(&junit), "write JUnit XML, one testcase a check")
        ("map", po::value(&map), "the candidate's names: THEIRS=OURS,... (e.g. core_attn_out=core_out)")
        ("in-proj", po::value(&in_proj)->default_value("exact"),
         "exact | tensor-cores: in_proj's stage floor 99.5 % instead of 99.9 %, and the envelope widened by "
         "measured tensor-core-like runs")
        ("envelope", po::value(&envelope)->default_value("measure"),
         "measure (the reference in permuted reduction orders against the f64 oracle, on this fixture) | FILE "
         "(written by monokda emulate --envelope-out for this fixture)")
        ("envelope-orders", po::value(&orders)->default_value(0),
         "orders to measure (0: 8 for k3-sized fixtures, 12 otherwise, and all 18 before a candidate outside that sample fails)")
        ("ssm-layout", po::value(&ssm_layout)->default_value("hvk"), "the candidate's ssm_state: hvk [slots, H, V, K] | hkv [slots, H, K, V]");
    po::positional_options_description pos;
    pos.add("fixture", 1).add("candidate", 1);
    po::variables_map vm;
    const std::string usage =
        "monokda verify FIXTURE CANDIDATE [--report FILE.json] [--junit FILE.xml] [--map THEIRS=OURS,...] "
        "[--in-proj exact|tensor-cores] [--envelope measure|FILE] [--envelope-orders N] [--ssm-layout hvk|hkv]";
    if (!parse_args(args, usage, opts, pos, vm)) return 0;
    // every option checked before any work
    verify::Options vo;
    vo.in_proj = verify::parse_in_proj(in_proj);
    verify::CandidateOptions co;
    co.ssm_layout = verify::parse_ssm_layout(ssm_layout);
    co.rename = verify::parse_map(map);
    if (orders != 0) emu::default_envelope_orders(orders);  // range-checked
    check_outputs({{"--report", report}, {"--junit", junit}}, {{"FIXTURE", fixture}, {"CANDIDATE", candidate}, {"--envelope", envelope == "measure" ? "" : envelope}});

    const auto t0 = std::chrono::steady_clock::now();
    const TensorFile fx = read_safetensors(fixture);
    const StepInputs in = StepInputs::from_file(fx);
    const TensorFile cf = read_safetensors(candidate);
    const verify::ReadCandidate rc = verify::read_candidate(cf, in, co);
    const std::string digest = emu::inputs_digest(in);

    verify::ReportContext ctx;
    std::unique_ptr<emu::Envelope> env;
    TensorFile oracle;
    if (envelope == "measure") {
        verify::MeasuredEnvelope m = verify::envelope_for(in, rc.candidate, vo.in_proj, orders);  // widened
        env = std::make_unique<emu::Envelope>(std::move(m.envelope));
        oracle = std::move(m.oracle);
        ctx.envelope_source = "measured";
    } else {
        if (orders != 0) bad_input("--envelope-orders measures an envelope; --envelope " + envelope + " reads one");
        env = std::make_unique<emu::Envelope>(emu::read_envelope(envelope));
        if (env->fixture_digest != digest)
            bad_input("envelope '" + envelope + "' was measured on another fixture (digest " + env->fixture_digest + ", this one " +
                      digest + ")");
        oracle = ref::run<double>(in).to_file(in.cfg);
        ctx.envelope_source = "read from " + envelope;
        *env = verify::widen_for(*env, vo.in_proj, in, oracle);
    }
    const std::vector<verify::Check> checks = verify::verify_step(in, rc.candidate, vo, env.get(), &oracle);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    ctx.fixture_path = fixture;
    ctx.fixture_digest = digest;
    ctx.config = env->config;
    ctx.candidate_path = candidate;
    ctx.candidate_digest = emu::file_digest(cf);
    ctx.exported.assign(rc.candidate.present.begin(), rc.candidate.present.end());
    ctx.ignored = rc.ignored;
    ctx.options = {{"in_proj", verify::to_string(vo.in_proj)}, {"envelope", envelope},
                   {"ssm_layout", verify::to_string(co.ssm_layout)}, {"map", map}, {"stage_order", vo.stage_order.str()}};
    ctx.envelope_orders = env->orders;
    ctx.envelope_widening = env->widening;

    std::cout << "monokda verify " << candidate << " against " << fixture << " (" << env->config << ", envelope "
              << ctx.envelope_source << ", " << env->orders.size() << " runs" << (env->widening.empty() ? "" : "; " + env->widening)
              << "; " << secs << " s)\n";
    if (!rc.ignored.empty()) {
        std::cout << "ignored (not outputs):";
        for (const std::string& n : rc.ignored) std::cout << " " << n;
        std::cout << "\n";
    }
    std::cout << verify::report_text(checks);
    OutputSet outputs;  // both or neither
    if (!report.empty()) outputs.add(report, verify::report_json(checks, ctx).dump(1) + "\n");
    if (!junit.empty()) outputs.add(junit, verify::junit_xml(checks, ctx));
    outputs.commit();
    return verify::all_passed(checks) ? 0 : 1;
}

}  // namespace monokda::cli
