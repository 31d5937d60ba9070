// The plan file's reader (docs/plan-file.md): Plan::from_json and read_json, which refuse a malformed
// file naming the place (BadInput), and the checks a plan read from a file gets beyond a built one's
// (its waits, products, split orders and residency against what its instructions need).
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_bounded.hpp"
#include "core/plan.hpp"
#include "core/plan_file.hpp"
#include "core/plan_v2.hpp"

namespace monokda {

using nlohmann::json;
using plan_file::kFormat;
using plan_file::operand_names;
using plan_file::Spec;

namespace {

Mailbox parse_box(const std::string& name, bool& ok) {
    for (int m = 0; m < kMailboxCount; ++m)
        if (name == to_string(Mailbox(m))) { ok = true; return Mailbox(m); }
    ok = false;
    return Mailbox::count;
}

std::string box_names() {
    std::string s;
    for (int m = 0; m < kMailboxCount; ++m) s += std::string(m ? ", " : "") + to_string(Mailbox(m));
    return s;
}

bool parse_op(const std::string& s, Op& op) {
    for (int o = int(Op::ATTN_PART); o <= int(Op::KDA_NORM); ++o)
        if (s == to_string(Op(o))) { op = Op(o); return true; }
    return false;
}

using Reader = JsonReader;

// "PART[row 3][src 0..4][slice 17]" against the plan's dims of PART; BadInput (through rd) naming path.
Spec parse_spec(const Plan& p, const Reader& rd, const std::string& text, const std::string& path) {
    const size_t open = text.find('[');
    bool ok = false;
    Spec sp;
    sp.box = parse_box(text.substr(0, open), ok);
    if (!ok) rd.fail(path, "\"" + text + "\": unknown mailbox (known: " + box_names() + ")");
    const auto dims = p.entry_dims(sp.box);
    std::string want = to_string(sp.box);
    for (const auto& d : dims) want += "[" + std::string(d.name) + " i]";
    size_t at = open;
    for (size_t k = 0; k < dims.size(); ++k) {
        const size_t close = at == std::string::npos ? std::string::npos : text.find(']', at);
        if (at == std::string::npos || text[at] != '[' || close == std::string::npos)
            rd.fail(path, "\"" + text + "\" must read " + want + " (an index i or a range i..j for each dim)");
        const std::string inner = text.substr(at + 1, close - at - 1);
        const std::string name = dims[k].name;
        if (inner.compare(0, name.size() + 1, name + " ") != 0)
            rd.fail(path, "\"" + text + "\": dim " + std::to_string(k + 1) + " of " + to_string(sp.box) + " is " + name +
                              " (it must read " + want + ")");
        const std::string r = inner.substr(name.size() + 1);
        const size_t dots = r.find("..");
        auto num = [&](const std::string& v) {
            if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
                rd.fail(path, "\"" + text + "\": " + name + " '" + r + "' is not an index i or a range i..j");
            return std::stoi(v);
        };
        const int lo = num(dots == std::string::npos ? r : r.substr(0, dots));
        const int hi = dots == std::string::npos ? lo : num(r.substr(dots + 2));
        if (lo > hi) rd.fail(path, "\"" + text + "\": " + name + " range " + r + " runs backwards");
        if (hi >= dims[k].size)
            rd.fail(path, "\"" + text + "\": " + name + " " + std::to_string(hi) + " is outside 0.." +
                              std::to_string(dims[k].size - 1) + " (the mailboxes' dims)");
        sp.ranges.push_back({lo, hi});
        at = close + 1 < text.size() ? close + 1 : std::string::npos;
    }
    if (at != std::string::npos) rd.fail(path, "\"" + text + "\": text after the last dim (it must read " + want + ")");
    return sp;
}

void expand(const Plan& p, const Spec& sp, std::vector<MailboxRef>& out) {
    const auto dims = p.entry_dims(sp.box);
    std::vector<int> idx(dims.size());
    for (size_t k = 0; k < dims.size(); ++k) idx[k] = sp.ranges[k].first;
    for (;;) {
        int64_t e = 0;
        for (size_t k = 0; k < dims.size(); ++k) e = e * dims[k].size + idx[k];
        out.push_back({sp.box, int32_t(e)});
        size_t k = dims.size();
        while (k-- > 0) {
            if (idx[k] < sp.ranges[k].second) { ++idx[k]; break; }
            idx[k] = sp.ranges[k].first;
        }
        if (k == size_t(-1)) return;
    }
}

}  // namespace

// Fills a Plan from a parsed file, one part of the file a step, in the order from_json checks them.
class PlanFileReader {
public:
    PlanFileReader(Plan& p, const Reader& rd) : p_(p), rd_(rd) {}
    void config(const json& j);
    void layout(const json& j);
    void mailboxes(const json& j);
    void reduction_order(const json& j);
    void target(const json& j);
    void lists(const json& j);
    void launch(const json& j);

private:
    void instr(const json& ji, const std::string& ipath, int cta);
    std::vector<Plan::Wait> waits(const json& jw, const std::string& path);
    // the plan's waits and products, expanded, stay within 2^27 entries whatever the ranges
    void count(const Spec& sp, const std::string& path) {
        total_ += sp.count();
        if (total_ > (int64_t(1) << 27)) rd_.fail(path, "the plan's waits and products exceed 2^27 entries");
    }

    Plan& p_;
    const Reader& rd_;
    int64_t total_ = 0;
};

// config: the step's shape the lists are for
void PlanFileReader::config(const json& j) {
    const json& jc = rd_.object(j.at("config"), "config", {"D", "H", "K", "V", "F", "N", "C", "W", "R", "L", "nb"});
    Config& c = p_.cfg_;
    auto ci = [&](const char* k) { return int(rd_.integer(jc.at(k), std::string("config.") + k, 1, 1 << 20)); };
    c.D = ci("D"); c.H = ci("H"); c.K = ci("K"); c.V = ci("V"); c.F = ci("F"); c.N = ci("N"); c.C = ci("C");
    c.W = ci("W"); c.R = ci("R"); c.L = ci("L"); c.nb = ci("nb");
    if (int64_t(c.R) * c.L > (1 << 20)) rd_.fail("config", "R × L is too large");
    c.slots = c.S() + 1;
    try {
        c.validate();
    } catch (const BadInput& e) {
        bad_input(rd_.what() + ": " + e.what());
    }
}

// layout: what the operands and the mailboxes' dims mean
void PlanFileReader::layout(const json& j) {
    const Config& c = p_.cfg_;
    const json& jl = rd_.object(j.at("layout"), "layout", {"slice_width", "attn_row_parts", "gemv_group_rows", "kda_chunk_rows"});
    PlanParams& pp = p_.params_;
    pp.slice_width = int(rd_.integer(jl.at("slice_width"), "layout.slice_width", 1, c.D));
    if (c.D % pp.slice_width) rd_.fail("layout.slice_width", "must divide D = " + std::to_string(c.D));
    pp.attn_row_parts = int(rd_.integer(jl.at("attn_row_parts"), "layout.attn_row_parts", 1, c.S()));
    pp.gemv_group_rows = int(rd_.integer(jl.at("gemv_group_rows"), "layout.gemv_group_rows", 1, c.N));
    if (c.N % pp.gemv_group_rows) rd_.fail("layout.gemv_group_rows", "must divide N = " + std::to_string(c.N));
    pp.kda_chunk_rows = int(rd_.integer(jl.at("kda_chunk_rows"), "layout.kda_chunk_rows", 1, c.V));
    if (c.V % pp.kda_chunk_rows || c.K % (c.V / pp.kda_chunk_rows))
        rd_.fail("layout.kda_chunk_rows", "must divide V = " + std::to_string(c.V) + " into chunks that split K = " +
                                              std::to_string(c.K) + " evenly");
    pp.gemv_every_cta = false;
    pp.interleave_ctas = false;
    for (int m = 0; m < kMailboxCount; ++m) {  // bounded before anything is sized by them
        int64_t n = 1;
        p_.n_attn_ = c.D / pp.slice_width;
        p_.n_groups_ = c.N / pp.gemv_group_rows;
        p_.n_chunks_ = c.V / pp.kda_chunk_rows;
        for (const Plan::Dim& d : p_.entry_dims(Mailbox(m))) n *= d.size;
        if (n > (int64_t(1) << 26)) rd_.fail("config", std::string(to_string(Mailbox(m))) + " would have " + std::to_string(n) + " entries (at most 2^26)");
    }
    p_.init_layout();
}

// mailboxes: as the layout needs them (a check: the file states what it assumes)
void PlanFileReader::mailboxes(const json& j) {
    const json& jm = rd_.object(j.at("mailboxes"), "mailboxes", {"PART", "WGT", "MSQ", "XRDY", "PROJ", "QK", "ONRM"});
    for (int m = 0; m < kMailboxCount; ++m) {
        const Mailbox box = Mailbox(m);
        const std::string path = std::string("mailboxes.") + to_string(box);
        const json& mb = rd_.object(jm.at(to_string(box)), path, {"kind", "words", "dims"});
        const std::string kind = rd_.string(mb.at("kind"), path + ".kind");
        if (kind != (is_tagged(box) ? "tagged" : "flag"))
            rd_.fail(path + ".kind", "is \"" + kind + "\"; " + to_string(box) + " is " + (is_tagged(box) ? "tagged" : "a flag"));
        const int64_t words = rd_.integer(mb.at("words"), path + ".words", 1, 64);
        if (words != p_.words_per_entry(box))
            rd_.fail(path + ".words", "is " + std::to_string(words) + "; an entry of " + to_string(box) + " holds " +
                                          std::to_string(p_.words_per_entry(box)) + " words with nb = " + std::to_string(p_.cfg_.nb));
        const json& dims = rd_.array(mb.at("dims"), path + ".dims");
        const auto want = p_.entry_dims(box);
        std::string want_s;
        for (const auto& d : want) want_s += "[" + std::string(d.name) + " " + std::to_string(d.size) + "]";
        bool same = dims.size() == want.size();
        for (size_t k = 0; same && k < want.size(); ++k)
            same = dims[k].is_array() && dims[k].size() == 2 && dims[k][0] == want[k].name && dims[k][1] == want[k].size;
        if (!same) rd_.fail(path + ".dims", "must be " + want_s + " for this config and layout (got " + dims.dump() + ")");
    }
}

// reduction order: every site
void PlanFileReader::reduction_order(const json& j) {
    const json& jr = j.at("reduction_order");
    if (!jr.is_object()) rd_.fail("reduction_order", "must be an object");
    for (int s = 0; s < kSiteCount; ++s) {
        const char* site = to_string(Site(s));
        if (!jr.contains(site)) rd_.fail("reduction_order", "has no \"" + std::string(site) + "\"");
        const std::string spec = rd_.string(jr.at(site), std::string("reduction_order.") + site);
        try {
            p_.order_.set(Site(s), ReductionOrder::parse(spec).at(Site(s)));
        } catch (const BadInput& e) {
            rd_.fail(std::string("reduction_order.") + site, e.what());
        }
    }
    for (auto it = jr.begin(); it != jr.end(); ++it) {
        bool known = false;
        for (int s = 0; s < kSiteCount; ++s) known |= it.key() == to_string(Site(s));
        if (!known) rd_.fail("reduction_order", "unknown site \"" + it.key() + "\"");
    }
}

void PlanFileReader::target(const json& j) {
    const json& jt = rd_.object(j.at("target"), "target", {"name", "in_order_loads"});
    p_.target_.name = rd_.string(jt.at("name"), "target.name");
    p_.target_.in_order_loads = rd_.boolean(jt.at("in_order_loads"), "target.in_order_loads");
}

// the lists: one a CTA, its instructions with their waits and products
void PlanFileReader::lists(const json& j) {
    const json& jctas = rd_.array(j.at("ctas"), "ctas");
    if (jctas.empty() || jctas.size() > 65536) rd_.fail("ctas", "must hold 1..65536 CTAs (got " + std::to_string(jctas.size()) + ")");
    const int B = int(jctas.size());
    p_.params_.blocks = B;
    p_.instrs_.assign(size_t(B), {});
    p_.waits_.assign(size_t(B), {});
    p_.produces_.assign(size_t(B), {});
    for (int cta = 0; cta < B; ++cta) {
        const std::string cpath = json_path_index("ctas", size_t(cta));
        const json& jcta = rd_.object(jctas[size_t(cta)], cpath, {"instrs"}, {"cta"});
        if (jcta.contains("cta") && rd_.integer(jcta.at("cta"), cpath + ".cta", 0, 65535) != cta)
            rd_.fail(cpath + ".cta", "is " + jcta.at("cta").dump() + ", but this is CTA " + std::to_string(cta) +
                                         " (the list's place in \"ctas\")");
        const json& jins = rd_.array(jcta.at("instrs"), cpath + ".instrs");
        for (size_t i = 0; i < jins.size(); ++i) instr(jins[i], json_path_index(cpath + ".instrs", i), cta);
    }
}

void PlanFileReader::instr(const json& ji, const std::string& ipath, int cta) {
    if (!ji.is_object() || !ji.contains("op")) rd_.fail(ipath, "must be an object with an \"op\"");
    Op op{};
    const std::string opname = rd_.string(ji.at("op"), ipath + ".op");
    if (!parse_op(opname, op)) {
        std::string known;
        for (int o = int(Op::ATTN_PART); o <= int(Op::KDA_NORM); ++o) known += std::string(known.empty() ? "" : ", ") + to_string(Op(o));
        rd_.fail(ipath + ".op", "unknown opcode \"" + opname + "\" (known: " + known + ")");
    }
    const auto names = operand_names(op);
    for (auto it = ji.begin(); it != ji.end(); ++it) {
        bool known = it.key() == "op" || it.key() == "waits" || it.key() == "produces";
        for (const char* n : names) known |= it.key() == n;
        if (!known) {
            std::string ks;
            for (const char* n : names) ks += std::string(ks.empty() ? "" : ", ") + n;
            rd_.fail(ipath, "unknown key \"" + it.key() + "\" (" + opname + " has: op, " + ks + ", waits, produces)");
        }
    }
    int32_t v[3] = {0, 0, 0};
    for (size_t k = 0; k < names.size(); ++k) {
        if (!ji.contains(names[k])) rd_.fail(ipath, opname + " has no \"" + names[k] + "\"");
        v[k] = int32_t(rd_.integer(ji.at(names[k]), ipath + "." + names[k], 0, INT32_MAX));
    }
    p_.instrs_[size_t(cta)].push_back({int32_t(op), v[0], v[1], v[2]});
    std::vector<Plan::Wait> w;
    if (ji.contains("waits")) w = waits(rd_.array(ji.at("waits"), ipath + ".waits"), ipath + ".waits");
    std::vector<MailboxRef> pr;
    if (ji.contains("produces")) {
        const json& jp = rd_.array(ji.at("produces"), ipath + ".produces");
        for (size_t s = 0; s < jp.size(); ++s) {
            const std::string spath = json_path_index(ipath + ".produces", s);
            const Spec sp = parse_spec(p_, rd_, rd_.string(jp[s], spath), spath);
            count(sp, spath);
            expand(p_, sp, pr);
        }
    }
    p_.waits_[size_t(cta)].push_back(std::move(w));
    p_.produces_[size_t(cta)].push_back(std::move(pr));
}

// waits: groups polled in order; a group is a text, a list of texts, or {"each": dim, "on": text}
std::vector<Plan::Wait> PlanFileReader::waits(const json& jw, const std::string& path) {
    std::vector<Plan::Wait> w;
    int32_t group = 0;
    for (size_t g = 0; g < jw.size(); ++g) {
        const std::string gpath = json_path_index(path, g);
        const json& jg = jw[g];
        std::vector<std::vector<MailboxRef>> groups(1);
        if (jg.is_string()) {
            const Spec sp = parse_spec(p_, rd_, jg.get<std::string>(), gpath);
            count(sp, gpath);
            expand(p_, sp, groups[0]);
        } else if (jg.is_array()) {
            for (size_t s = 0; s < jg.size(); ++s) {
                const std::string spath = json_path_index(gpath, s);
                const Spec sp = parse_spec(p_, rd_, rd_.string(jg[s], spath), spath);
                count(sp, spath);
                expand(p_, sp, groups[0]);
            }
        } else if (jg.is_object()) {
            rd_.object(jg, gpath, {"each", "on"});
            const std::string dim = rd_.string(jg.at("each"), gpath + ".each");
            const Spec sp = parse_spec(p_, rd_, rd_.string(jg.at("on"), gpath + ".on"), gpath + ".on");
            const auto dims = p_.entry_dims(sp.box);
            size_t d = dims.size();
            for (size_t k = 0; k < dims.size(); ++k)
                if (dim == dims[k].name) d = k;
            if (d == dims.size()) rd_.fail(gpath + ".each", "\"" + dim + "\" is not a dim of " + to_string(sp.box));
            count(sp, gpath);
            groups.clear();
            for (int x = sp.ranges[d].first; x <= sp.ranges[d].second; ++x) {
                Spec one = sp;
                one.ranges[d] = {x, x};
                groups.emplace_back();
                expand(p_, one, groups.back());
            }
        } else {
            rd_.fail(gpath, "a wait group must be an entry text, a list of them, or {\"each\": dim, \"on\": text}");
        }
        for (const auto& es : groups) {
            if (es.empty()) rd_.fail(gpath, "an empty wait group");
            for (const MailboxRef& e : es) w.push_back({e, group});
            ++group;
        }
    }
    return w;
}

// launch: order and residency
void PlanFileReader::launch(const json& j) {
    const int B = p_.blocks();
    const json& jla = rd_.object(j.at("launch"), "launch", {"co_resident", "cooperative", "order"});
    p_.target_.co_resident = int(rd_.integer(jla.at("co_resident"), "launch.co_resident", 1, 1 << 20));
    p_.target_.cooperative = rd_.boolean(jla.at("cooperative"), "launch.cooperative");
    const json& jord = rd_.array(jla.at("order"), "launch.order");
    if (int(jord.size()) != B)
        rd_.fail("launch.order", "has " + std::to_string(jord.size()) + " launch CTAs for " + std::to_string(B) +
                                     " lists (one a list: launch CTA b runs list order[b])");
    p_.list_at_.assign(size_t(B), -1);
    p_.launch_cta_.assign(size_t(B), -1);
    for (int b = 0; b < B; ++b) {
        const int list = int(rd_.integer(jord[size_t(b)], json_path_index("launch.order", size_t(b)), 0, B - 1));
        if (p_.launch_cta_[size_t(list)] >= 0)
            rd_.fail(json_path_index("launch.order", size_t(b)), "list " + std::to_string(list) + " is launched twice (also at " +
                                                                     std::to_string(p_.launch_cta_[size_t(list)]) + ")");
        p_.list_at_[size_t(b)] = list;
        p_.launch_cta_[size_t(list)] = b;
    }
}

Plan Plan::from_json(const std::string& text, const std::string& what) {
    const json j = parse_json_bounded(text, what, plan_file::bounds());
    const Reader rd(what);
    if (j.is_object() && j.contains("format") && j.at("format") == kPlanV2Format)
        rd.fail("format", "is \"" + std::string(kPlanV2Format) + "\": kernel v2's plan file (monokda emulate --kernel v2 --plan runs it)");
    rd.object(j, "", {"format", "version", "config", "layout", "target", "launch", "mailboxes", "reduction_order", "ctas"},
              {"name", "comment", "monokda_version", "monokda_commit"});
    if (!j.at("format").is_string() || j.at("format") != kFormat)
        rd.fail("format", "must be \"" + std::string(kFormat) + "\" (this is not a monokda plan file)");
    const int64_t version = rd.integer(j.at("version"), "version", 0, INT32_MAX);
    if (version != kFileVersion)
        rd.fail("version", "is " + std::to_string(version) + "; this monokda reads version " + std::to_string(kFileVersion));

    Plan p;
    p.source_ = what;
    if (j.contains("name")) p.name_ = rd.string(j.at("name"), "name");
    for (const char* k : {"comment", "monokda_version", "monokda_commit"})
        if (j.contains(k)) rd.string(j.at(k), k);
    PlanFileReader r(p, rd);
    r.config(j);
    r.layout(j);
    r.mailboxes(j);
    r.reduction_order(j);
    r.target(j);
    r.lists(j);
    r.launch(j);
    p.explicit_waits_ = true;
    p.derive();
    return p;
}

Plan Plan::read_json(const std::string& path) {
    return from_json(read_text_file(path, size_t(256) << 20, "plan file"), path);
}

// A file's own checks (structural_problems adds them for a plan read from a file).
void Plan::file_problems(std::vector<std::string>& out) const {
    // waits against what each instruction reads (polling order and grouping are the kernel's choice)
    auto less = [](const MailboxRef& a, const MailboxRef& b) { return a.box != b.box ? a.box < b.box : a.entry < b.entry; };
    for (int cta = 0; cta < blocks(); ++cta)
        for (size_t i = 0; i < instrs_[size_t(cta)].size(); ++i) {
            std::vector<MailboxRef> have, need;
            for (const Wait& w : waits_[size_t(cta)][i]) have.push_back(w.entry);
            for (const Wait& w : needs_[size_t(cta)][i]) need.push_back(w.entry);
            std::sort(have.begin(), have.end(), less);
            std::sort(need.begin(), need.end(), less);
            if (have == need) continue;
            const std::string at = "CTA " + std::to_string(cta) + " instruction " + std::to_string(i) + " " +
                                   describe(instrs_[size_t(cta)][i]) + ": ";
            std::vector<MailboxRef> missing, extra, twice;
            std::set_difference(need.begin(), need.end(), have.begin(), have.end(), std::back_inserter(missing), less);
            std::set_difference(have.begin(), have.end(), need.begin(), need.end(), std::back_inserter(extra), less);
            for (size_t k = 1; k < have.size(); ++k)
                if (have[k] == have[k - 1] && (twice.empty() || !(twice.back() == have[k]))) twice.push_back(have[k]);
            if (!missing.empty()) out.push_back(at + "does not wait for " + entry_list(missing) + ", which it reads");
            if (!extra.empty()) out.push_back(at + "waits for " + entry_list(extra) + ", which it does not read");
            if (!twice.empty()) out.push_back(at + "waits twice for " + entry_list(twice));
        }
    out.insert(out.end(), product_problems_.begin(), product_problems_.end());
    // the split sums: as the instructions decompose them
    const ReductionOrder d = decomposition_order();
    for (int s = 0; s < kSiteCount; ++s) {
        const OrderSpec &have = order_.at(Site(s)), &want = d.at(Site(s));
        if (want.kind != OrderSpec::split || have.str() == want.str()) continue;
        out.push_back("reduction_order." + std::string(to_string(Site(s))) + " is " + have.str() + ", but the instructions sum it as " +
                      want.str() + " (" + std::to_string(want.parts) + (Site(s) == Site::onorm_sumsq ? " chunk" : " slice") +
                      " partials, added in order)");
    }
    // residency
    const int P = launch_blocks(), M = co_resident();
    if (target_.cooperative && P > M)
        out.push_back("launch: " + std::to_string(P) + " CTAs, but the target holds " + std::to_string(M) +
                      " co-resident and the launch is cooperative (all or none): launch CTA " + std::to_string(M) + " (CTA " +
                      std::to_string(list_at(M)) + ") and after it have no place, so the launch is refused");
    else if (!target_.cooperative && out.empty() && min_residency() > M)
        out.push_back("launch: the lists need " + std::to_string(min_residency()) +
                      " co-resident CTAs (admitted in launch order), but the target holds " + std::to_string(M));
}

}  // namespace monokda
