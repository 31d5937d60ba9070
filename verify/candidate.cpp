// A candidate's output file as `monokda verify` reads it (verify/candidate.hpp): names, layouts and
// every tensor checked before a check runs.
#include "verify/candidate.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include "core/error.hpp"

namespace monokda::verify {

SsmLayout parse_ssm_layout(const std::string& s) {
    if (s == "hvk") return SsmLayout::hvk;
    if (s == "hkv") return SsmLayout::hkv;
    bad_input("--ssm-layout must be hvk ([slots, H, V, K], SPEC §2) or hkv ([slots, H, K, V]) (got '" + s + "')");
}

const char* to_string(SsmLayout l) { return l == SsmLayout::hvk ? "hvk" : "hkv"; }

std::map<std::string, std::string> parse_map(const std::string& text) {
    std::map<std::string, std::string> out;
    std::set<std::string> ours;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t end = std::min(text.find(',', pos), text.size());
        const std::string item = text.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
            bad_input("--map: '" + item + "' is not THEIRS=OURS");
        const std::string theirs = item.substr(0, eq), name = item.substr(eq + 1);
        if (std::find(output_names().begin(), output_names().end(), name) == output_names().end()) {
            std::string names;
            for (const std::string& n : output_names()) names += (names.empty() ? "" : ", ") + n;
            bad_input("--map: '" + name + "' is not an output name of SPEC §2 (" + names + ")");
        }
        if (out.count(theirs)) bad_input("--map: '" + theirs + "' is mapped twice");
        if (!ours.insert(name).second) bad_input("--map: two names map to '" + name + "'");
        out[theirs] = name;
    }
    return out;
}

ReadCandidate read_candidate(const TensorFile& f, const StepInputs& in, const CandidateOptions& o) {
    const Config& c = in.cfg;
    // the file under SPEC §2's names
    TensorFile g;
    std::map<std::string, std::string> written_as;  // our name -> the file's
    for (const auto& [theirs, ours] : o.rename)
        if (!f.has(theirs)) bad_input("--map " + theirs + "=" + ours + ": the candidate has no tensor '" + theirs + "'");
    for (const auto& [name, t] : f.tensors) {
        auto it = o.rename.find(name);
        const std::string ours = it == o.rename.end() ? name : it->second;
        if (g.has(ours))
            bad_input("the candidate has '" + ours + "' twice: as '" + written_as[ours] + "' and as '" + name + "' (--map)");
        g.tensors[ours] = t;
        written_as[ours] = name;
    }
    auto as_written = [&](const std::string& ours) {
        return written_as[ours] == ours ? "'" + ours + "'" : "'" + written_as[ours] + "' (" + ours + ")";
    };
    // take_tensor's message, naming the tensor as the file does when --map renamed it
    auto rethrow = [&](const std::string& ours, const BadInput& e, const std::string& hint = "") {
        bad_input("candidate: " + std::string(e.what()) +
                  (written_as[ours] == ours ? "" : " (the file's '" + written_as[ours] + "')") + hint);
    };

    ReadCandidate rc;
    Candidate& cand = rc.candidate;
    StepOutputs<float>& out = cand.out;
    const int64_t S = c.S(), D = c.D, E = c.E();
    auto required = [&](const std::string& name, const std::string& why) {
        if (!g.has(name))
            bad_input("the candidate has no '" + name + "' (" + why + "; a writer's own name maps with --map THEIRS=" + name + ")");
    };
    required("prefix_out", "an output of every step");
    required("core_out", "an output of every step");
    required("conv_state", "the updated state of every step");
    required("ssm_state", "the updated state of every step");
    if (c.block_write) required("blocks", "the bank, whose row nb a block-write layer writes");

    auto take = [&](const std::string& name, const std::vector<int64_t>& shape, std::vector<bf16>& into) {
        if (!g.has(name)) return;
        try {
            into = take_tensor<bf16>(g, name, DType::BF16, shape);
        } catch (const BadInput& e) {
            rethrow(name, e);
        }
        cand.present.insert(name);
    };
    take("prefix_out", {S, D}, out.prefix_out);
    take("blocks", {S, 8, D}, out.blocks);
    take("core_out", {S, E}, out.core_out);
    take("conv_state", c.conv_state_shape(), out.conv_state);
    take("x", {S, D}, out.x);
    take("proj", {S, c.N}, out.proj);
    take("g1", {S, E}, out.g1);
    take("qkv", {S, c.C}, out.qkv);
    take("o", {S, E}, out.o);

    // ssm_state, f32, in either layout
    {
        const bool hkv = o.ssm_layout == SsmLayout::hkv;
        const std::vector<int64_t> spec{c.slots, c.H, c.V, c.K}, theirs{c.slots, c.H, c.K, c.V};
        const Tensor& t = g.get("ssm_state");
        if (t.shape != (hkv ? theirs : spec) && t.shape == (hkv ? spec : theirs) && c.K != c.V)
            bad_input("candidate tensor " + as_written("ssm_state") + " has shape " + t.shape_str() + ", [slots, H, " +
                      (hkv ? "V, K" : "K, V") + "]: give --ssm-layout " + (hkv ? "hvk" : "hkv"));
        std::vector<float> s;
        try {
            s = take_tensor<float>(g, "ssm_state", DType::F32, hkv ? theirs : spec);
        } catch (const BadInput& e) {
            rethrow("ssm_state", e, hkv ? " ([slots, H, K, V], --ssm-layout hkv)" : " ([slots, H, V, K]; [slots, H, K, V] is --ssm-layout hkv)");
        }
        if (hkv) {
            out.ssm_state.resize(s.size());
            const size_t head = size_t(c.V) * c.K;
            for (size_t sh = 0; sh < size_t(c.slots) * c.H; ++sh)
                for (int v = 0; v < c.V; ++v)
                    for (int k = 0; k < c.K; ++k) out.ssm_state[sh * head + size_t(v) * c.K + k] = s[sh * head + size_t(k) * c.V + v];
        } else {
            out.ssm_state = std::move(s);
        }
        cand.present.insert("ssm_state");
    }

    // the step's index tensors, when the file carries them, are the fixture's: else it ran another step
    for (const auto& [name, want, shape] :
         {std::tuple<const char*, const std::vector<int32_t>*, std::vector<int64_t>>{"state_indices", &in.state_indices, {c.R, c.L}},
          {"num_accepted", &in.num_accepted, {c.R}}}) {
        if (!g.has(name)) continue;
        std::vector<int32_t> got;
        try {
            got = take_tensor<int32_t>(g, name, DType::I32, shape);
        } catch (const BadInput& e) {
            rethrow(name, e);
        }
        if (got != *want)
            bad_input("candidate tensor " + as_written(name) + " differs from the fixture's: the candidate ran another step");
    }

    for (const auto& [name, t] : g.tensors)
        if (!cand.has(name) && name != "state_indices" && name != "num_accepted") rc.ignored.push_back(written_as[name]);
    return rc;
}

}  // namespace monokda::verify
