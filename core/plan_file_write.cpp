// The plan file's writer (docs/plan-file.md): Plan::to_json. Entries are written as
// "BOX[dim i][dim j..k]": every dim named, ranges inclusive and expanded row-major, a list of entries
// as the fewest such boxes, so a file stays short and reads like the emulator's reports.
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/plan.hpp"
#include "core/plan_file.hpp"
#include "core/version.hpp"

namespace monokda {

using ojson = nlohmann::ordered_json;
using plan_file::kFormat;
using plan_file::operand_names;
using plan_file::Spec;

std::string Plan::entry_spec(const MailboxRef& e) const {
    const std::vector<Dim> dims = entry_dims(e.box);
    std::string s = to_string(e.box);
    int64_t stride = 1;
    std::vector<int> idx(dims.size());
    for (size_t k = dims.size(); k-- > 0;) {
        idx[k] = int((e.entry / stride) % dims[k].size);
        stride *= dims[k].size;
    }
    for (size_t k = 0; k < dims.size(); ++k) s += "[" + std::string(dims[k].name) + " " + std::to_string(idx[k]) + "]";
    return s;
}

namespace {

std::string spec_text(const Plan& p, const Spec& sp) {
    const auto dims = p.entry_dims(sp.box);
    std::string s = to_string(sp.box);
    for (size_t k = 0; k < dims.size(); ++k) {
        const auto& r = sp.ranges[k];
        s += "[" + std::string(dims[k].name) + " " + std::to_string(r.first) +
             (r.second > r.first ? ".." + std::to_string(r.second) : "") + "]";
    }
    return s;
}

// Entries (in order) as the fewest boxes whose row-major expansions, one after another, give them:
// the longest run along the last dim, then as many copies of it along each outer dim as follow.
std::vector<Spec> compress(const Plan& p, const std::vector<MailboxRef>& es) {
    std::vector<Spec> out;
    size_t i = 0;
    while (i < es.size()) {
        const Mailbox box = es[i].box;
        const auto dims = p.entry_dims(box);
        const size_t k = dims.size();
        std::vector<int64_t> stride(k, 1);
        for (size_t j = k - 1; j-- > 0;) stride[j] = stride[j + 1] * dims[j + 1].size;
        std::vector<int> c(k);
        for (size_t j = 0; j < k; ++j) c[j] = int((es[i].entry / stride[j]) % dims[j].size);
        std::vector<int> len(k, 1);
        size_t block = 1;
        while (i + block < es.size() && es[i + block].box == box && es[i + block].entry == es[i].entry + int64_t(block) &&
               c[k - 1] + int(block) < dims[k - 1].size)
            ++block;
        len[k - 1] = int(block);
        for (size_t j = k - 1; j-- > 0;) {
            int t = 1;
            while (c[j] + t < dims[j].size && i + size_t(t + 1) * block <= es.size()) {
                bool same = true;
                for (size_t q = 0; q < block && same; ++q) {
                    const MailboxRef& e = es[i + size_t(t) * block + q];
                    same = e.box == box && e.entry == es[i + q].entry + t * stride[j];
                }
                if (!same) break;
                ++t;
            }
            len[j] = t;
            block *= size_t(t);
        }
        Spec sp;
        sp.box = box;
        for (size_t j = 0; j < k; ++j) sp.ranges.push_back({c[j], c[j] + len[j] - 1});
        out.push_back(sp);
        i += block;
    }
    return out;
}

ojson spec_list(const Plan& p, const std::vector<Spec>& specs) {
    ojson a = ojson::array();
    for (const Spec& s : specs) a.push_back(spec_text(p, s));
    return a;
}

// An instruction's wait groups: a group of one box is its text, a longer one a list of texts, and a
// run of such one-box groups that step one dim by one from group to group is {"each": dim, "on": box}.
ojson wait_groups(const Plan& p, const std::vector<Plan::Wait>& waits) {
    std::vector<std::vector<Spec>> groups;
    for (size_t a = 0; a < waits.size();) {
        size_t b = a;
        std::vector<MailboxRef> es;
        while (b < waits.size() && waits[b].group == waits[a].group) es.push_back(waits[b++].entry);
        groups.push_back(compress(p, es));
        a = b;
    }
    // the dim along which group g + 1 is group g moved by one (-1: none)
    auto step_dim = [](const std::vector<Spec>& x, const std::vector<Spec>& y) {
        if (x.size() != 1 || y.size() != 1 || x[0].box != y[0].box) return -1;
        int d = -1;
        for (size_t k = 0; k < x[0].ranges.size(); ++k) {
            const auto &rx = x[0].ranges[k], &ry = y[0].ranges[k];
            if (rx == ry) continue;
            if (d >= 0 || rx.first != rx.second || ry.first != ry.second || ry.first != rx.first + 1) return -1;
            d = int(k);
        }
        return d;
    };
    ojson out = ojson::array();
    for (size_t g = 0; g < groups.size();) {
        const int d = g + 1 < groups.size() ? step_dim(groups[g], groups[g + 1]) : -1;
        size_t e = g + 1;
        while (d >= 0 && e < groups.size() && step_dim(groups[e - 1], groups[e]) == d) ++e;
        if (d >= 0 && e - g >= 2) {
            Spec run = groups[g][0];
            run.ranges[size_t(d)].second = groups[e - 1][0].ranges[size_t(d)].first;
            ojson each;
            each["each"] = p.entry_dims(run.box)[size_t(d)].name;
            each["on"] = spec_text(p, run);
            out.push_back(each);
            g = e;
            continue;
        }
        if (groups[g].size() == 1) out.push_back(spec_text(p, groups[g][0]));
        else out.push_back(spec_list(p, groups[g]));
        ++g;
    }
    return out;
}

}  // namespace

std::string Plan::to_json(bool stamped) const {
    if (!team_parent_.empty()) throw std::logic_error("plan: a with_kda_teams plan is the emulator's, not a file's");
    const Config& c = cfg_;
    ojson cfg = {{"D", c.D}, {"H", c.H}, {"K", c.K}, {"V", c.V}, {"F", c.F}, {"N", c.N}, {"C", c.C},
                 {"W", c.W}, {"R", c.R}, {"L", c.L}, {"nb", c.nb}};
    ojson layout = {{"slice_width", params_.slice_width},
                    {"attn_row_parts", params_.attn_row_parts},
                    {"gemv_group_rows", params_.gemv_group_rows},
                    {"kda_chunk_rows", params_.kda_chunk_rows}};
    ojson target = {{"name", target_.name}, {"in_order_loads", target_.in_order_loads}};
    ojson order = ojson::array();
    for (int b = 0; b < launch_blocks(); ++b) order.push_back(list_at(b));
    ojson launch = {{"co_resident", co_resident()}, {"cooperative", target_.cooperative}, {"order", order}};
    ojson ord = ojson::object();
    for (int s = 0; s < kSiteCount; ++s) ord[to_string(Site(s))] = order_.at(Site(s)).str();

    std::string o = "{\n";
    auto line = [&](const char* key, const ojson& v, bool last = false) {
        o += "  \"" + std::string(key) + "\": " + v.dump() + (last ? "\n" : ",\n");
    };
    line("format", kFormat);
    line("version", kFileVersion);
    if (stamped) {
        line("monokda_version", version());
        line("monokda_commit", commit());
    }
    line("name", name_.empty() ? target_.name + " plan, " + std::to_string(launch_blocks()) + " CTAs" : name_);
    line("config", cfg);
    line("layout", layout);
    line("target", target);
    line("launch", launch);
    o += "  \"mailboxes\": {\n";
    for (int m = 0; m < kMailboxCount; ++m) {
        ojson dims = ojson::array();
        for (const Dim& d : entry_dims(Mailbox(m))) dims.push_back(ojson::array({d.name, d.size}));
        ojson mb = {{"kind", is_tagged(Mailbox(m)) ? "tagged" : "flag"}, {"words", words_per_entry(Mailbox(m))}, {"dims", dims}};
        o += "    \"" + std::string(to_string(Mailbox(m))) + "\": " + mb.dump() + (m + 1 < kMailboxCount ? ",\n" : "\n");
    }
    o += "  },\n";
    line("reduction_order", ord);
    o += "  \"ctas\": [\n";
    for (int cta = 0; cta < blocks(); ++cta) {
        o += "    {\"cta\": " + std::to_string(cta) + ", \"instrs\": [";
        const auto& l = instrs_[size_t(cta)];
        for (size_t i = 0; i < l.size(); ++i) {
            ojson in;
            const Op op = l[i].opcode();
            in["op"] = to_string(op);
            const int32_t ops[3] = {l[i].a, l[i].b, l[i].c};
            const auto names = operand_names(op);
            for (size_t k = 0; k < names.size(); ++k) in[names[k]] = ops[k];
            if (names.empty()) in["operands"] = ojson::array({l[i].op, l[i].a, l[i].b, l[i].c});
            if (!waits_[size_t(cta)][i].empty()) in["waits"] = wait_groups(*this, waits_[size_t(cta)][i]);
            if (!produces_[size_t(cta)][i].empty()) in["produces"] = spec_list(*this, compress(*this, produces_[size_t(cta)][i]));
            o += std::string(i ? ",\n" : "\n") + "      " + in.dump();
        }
        o += std::string(l.empty() ? "" : "\n    ") + "]}" + (cta + 1 < blocks() ? ",\n" : "\n");
    }
    o += "  ]\n}\n";
    return o;
}

}  // namespace monokda
