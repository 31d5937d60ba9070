// The plan file (docs/plan-file.md): Plan's own serialisation as JSON, and the checks a plan read from
// a file gets beyond a built one's (its waits, products, split orders and residency against what its
// instructions need). Entries are written as "BOX[dim i][dim j..k]": every dim named, ranges inclusive
// and expanded row-major, so a file stays short and reads like the emulator's reports.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/json_bounded.hpp"
#include "core/plan.hpp"
#include "core/version.hpp"

namespace monokda {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kFormat = "monokda-plan";

// One box of entries of one mailbox: an inclusive range per dim.
struct Spec {
    Mailbox box = Mailbox::count;
    std::vector<std::pair<int, int>> ranges;
    int64_t count() const {
        int64_t n = 1;
        for (const auto& r : ranges) n *= r.second - r.first + 1;
        return n;
    }
};

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

// The operands an opcode names in the file, in operand order (a, b, c).
std::vector<const char*> operand_names(Op op) {
    switch (op) {
        case Op::ATTN_PART: case Op::ATTN_MIX: case Op::ATTN_X: return {"slice", "part"};
        case Op::ATTN_GATE: return {"row"};
        case Op::GEMV_PREFETCH: case Op::GEMV_GROUP: return {"group"};
        case Op::KDA_LOAD: case Op::KDA_CONV: case Op::KDA_REC: case Op::KDA_NORM: return {"r", "h", "chunk"};
    }
    return {};
}

bool parse_op(const std::string& s, Op& op) {
    for (int o = int(Op::ATTN_PART); o <= int(Op::KDA_NORM); ++o)
        if (s == to_string(Op(o))) { op = Op(o); return true; }
    return false;
}

// The reader's view of a JSON value: typed accessors that refuse with the value's path.
class Reader {
public:
    explicit Reader(std::string what) : what_(std::move(what)) {}
    [[noreturn]] void fail(const std::string& path, const std::string& m) const {
        bad_input(what_ + ": " + (path.empty() ? "" : path + ": ") + m);
    }
    const json& object(const json& j, const std::string& path, std::initializer_list<const char*> required,
                       std::initializer_list<const char*> optional = {}) const {
        if (!j.is_object()) fail(path, "must be an object");
        for (const char* k : required)
            if (!j.contains(k)) fail(path, "has no \"" + std::string(k) + "\"");
        for (auto it = j.begin(); it != j.end(); ++it) {
            bool known = false;
            for (const char* k : required) known |= it.key() == k;
            for (const char* k : optional) known |= it.key() == k;
            if (!known) {
                std::string keys;
                for (const char* k : required) keys += std::string(keys.empty() ? "" : ", ") + k;
                for (const char* k : optional) keys += std::string(keys.empty() ? "" : ", ") + k;
                fail(path, "unknown key \"" + it.key() + "\" (known: " + keys + ")");
            }
        }
        return j;
    }
    int64_t integer(const json& j, const std::string& path, int64_t lo, int64_t hi) const {
        if (!j.is_number_integer()) fail(path, "must be an integer");
        const int64_t v = j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : j.get<int64_t>();
        if (v < lo || v > hi) fail(path, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " + std::to_string(v) + ")");
        return v;
    }
    std::string string(const json& j, const std::string& path) const {
        if (!j.is_string()) fail(path, "must be a string");
        return j.get<std::string>();
    }
    bool boolean(const json& j, const std::string& path) const {
        if (!j.is_boolean()) fail(path, "must be true or false");
        return j.get<bool>();
    }
    const json& array(const json& j, const std::string& path) const {
        if (!j.is_array()) fail(path, "must be an array");
        return j;
    }
    const std::string& what() const { return what_; }

private:
    std::string what_;
};

}  // namespace

// ---------------------------------------------------------------- entries as text

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

// ---------------------------------------------------------------- writing

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

void Plan::write_json(const std::string& path) const { write_file_atomic(path, to_json()); }

// ---------------------------------------------------------------- reading

namespace {

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

Plan Plan::from_json(const std::string& text, const std::string& what) {
    JsonBounds bounds;
    bounds.max_bytes = size_t(256) << 20;
    bounds.max_depth = 8;  // the format's deepest value: ctas[i].instrs[k].waits[g][s]
    bounds.max_values = size_t(1) << 26;
    const json j = parse_json_bounded(text, what, bounds);
    const Reader rd(what);
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
    // config: the step's shape the lists are for
    const json& jc = rd.object(j.at("config"), "config", {"D", "H", "K", "V", "F", "N", "C", "W", "R", "L", "nb"});
    Config& c = p.cfg_;
    auto ci = [&](const char* k) { return int(rd.integer(jc.at(k), std::string("config.") + k, 1, 1 << 20)); };
    c.D = ci("D"); c.H = ci("H"); c.K = ci("K"); c.V = ci("V"); c.F = ci("F"); c.N = ci("N"); c.C = ci("C");
    c.W = ci("W"); c.R = ci("R"); c.L = ci("L"); c.nb = ci("nb");
    if (int64_t(c.R) * c.L > (1 << 20)) rd.fail("config", "R × L is too large");
    c.slots = c.S() + 1;
    try {
        c.validate();
    } catch (const BadInput& e) {
        bad_input(what + ": " + e.what());
    }
    // layout: what the operands and the mailboxes' dims mean
    const json& jl = rd.object(j.at("layout"), "layout", {"slice_width", "attn_row_parts", "gemv_group_rows", "kda_chunk_rows"});
    PlanParams& pp = p.params_;
    pp.slice_width = int(rd.integer(jl.at("slice_width"), "layout.slice_width", 1, c.D));
    if (c.D % pp.slice_width) rd.fail("layout.slice_width", "must divide D = " + std::to_string(c.D));
    pp.attn_row_parts = int(rd.integer(jl.at("attn_row_parts"), "layout.attn_row_parts", 1, c.S()));
    pp.gemv_group_rows = int(rd.integer(jl.at("gemv_group_rows"), "layout.gemv_group_rows", 1, c.N));
    if (c.N % pp.gemv_group_rows) rd.fail("layout.gemv_group_rows", "must divide N = " + std::to_string(c.N));
    pp.kda_chunk_rows = int(rd.integer(jl.at("kda_chunk_rows"), "layout.kda_chunk_rows", 1, c.V));
    if (c.V % pp.kda_chunk_rows || c.K % (c.V / pp.kda_chunk_rows))
        rd.fail("layout.kda_chunk_rows", "must divide V = " + std::to_string(c.V) + " into chunks that split K = " +
                                             std::to_string(c.K) + " evenly");
    pp.gemv_every_cta = false;
    pp.interleave_ctas = false;
    for (int m = 0; m < kMailboxCount; ++m) {  // bounded before anything is sized by them
        int64_t n = 1;
        p.n_attn_ = c.D / pp.slice_width;
        p.n_groups_ = c.N / pp.gemv_group_rows;
        p.n_chunks_ = c.V / pp.kda_chunk_rows;
        for (const Dim& d : p.entry_dims(Mailbox(m))) n *= d.size;
        if (n > (int64_t(1) << 26)) rd.fail("config", std::string(to_string(Mailbox(m))) + " would have " + std::to_string(n) + " entries (at most 2^26)");
    }
    p.init_layout();
    // mailboxes: as the layout needs them (a check: the file states what it assumes)
    const json& jm = rd.object(j.at("mailboxes"), "mailboxes", {"PART", "WGT", "MSQ", "XRDY", "PROJ", "QK", "ONRM"});
    for (int m = 0; m < kMailboxCount; ++m) {
        const Mailbox box = Mailbox(m);
        const std::string path = std::string("mailboxes.") + to_string(box);
        const json& mb = rd.object(jm.at(to_string(box)), path, {"kind", "words", "dims"});
        const std::string kind = rd.string(mb.at("kind"), path + ".kind");
        if (kind != (is_tagged(box) ? "tagged" : "flag"))
            rd.fail(path + ".kind", "is \"" + kind + "\"; " + to_string(box) + " is " + (is_tagged(box) ? "tagged" : "a flag"));
        const int64_t words = rd.integer(mb.at("words"), path + ".words", 1, 64);
        if (words != p.words_per_entry(box))
            rd.fail(path + ".words", "is " + std::to_string(words) + "; an entry of " + to_string(box) + " holds " +
                                         std::to_string(p.words_per_entry(box)) + " words with nb = " + std::to_string(c.nb));
        const json& dims = rd.array(mb.at("dims"), path + ".dims");
        const auto want = p.entry_dims(box);
        std::string want_s;
        for (const auto& d : want) want_s += "[" + std::string(d.name) + " " + std::to_string(d.size) + "]";
        bool same = dims.size() == want.size();
        for (size_t k = 0; same && k < want.size(); ++k)
            same = dims[k].is_array() && dims[k].size() == 2 && dims[k][0] == want[k].name && dims[k][1] == want[k].size;
        if (!same) rd.fail(path + ".dims", "must be " + want_s + " for this config and layout (got " + dims.dump() + ")");
    }
    // reduction order: every site
    const json& jr = j.at("reduction_order");
    if (!jr.is_object()) rd.fail("reduction_order", "must be an object");
    for (int s = 0; s < kSiteCount; ++s) {
        const char* site = to_string(Site(s));
        if (!jr.contains(site)) rd.fail("reduction_order", "has no \"" + std::string(site) + "\"");
        const std::string spec = rd.string(jr.at(site), std::string("reduction_order.") + site);
        try {
            p.order_.set(Site(s), ReductionOrder::parse(spec).at(Site(s)));
        } catch (const BadInput& e) {
            rd.fail(std::string("reduction_order.") + site, e.what());
        }
    }
    for (auto it = jr.begin(); it != jr.end(); ++it) {
        bool known = false;
        for (int s = 0; s < kSiteCount; ++s) known |= it.key() == to_string(Site(s));
        if (!known) rd.fail("reduction_order", "unknown site \"" + it.key() + "\"");
    }
    // target
    const json& jt = rd.object(j.at("target"), "target", {"name", "in_order_loads"});
    p.target_.name = rd.string(jt.at("name"), "target.name");
    p.target_.in_order_loads = rd.boolean(jt.at("in_order_loads"), "target.in_order_loads");
    // the lists
    const json& jctas = rd.array(j.at("ctas"), "ctas");
    if (jctas.empty() || jctas.size() > 65536) rd.fail("ctas", "must hold 1..65536 CTAs (got " + std::to_string(jctas.size()) + ")");
    const int B = int(jctas.size());
    pp.blocks = B;
    p.instrs_.assign(size_t(B), {});
    p.waits_.assign(size_t(B), {});
    p.produces_.assign(size_t(B), {});
    int64_t total = 0;  // entries expanded so far: bounded, whatever the ranges
    for (int cta = 0; cta < B; ++cta) {
        const std::string cpath = json_path_index("ctas", size_t(cta));
        const json& jcta = rd.object(jctas[size_t(cta)], cpath, {"instrs"}, {"cta"});
        if (jcta.contains("cta") && rd.integer(jcta.at("cta"), cpath + ".cta", 0, 65535) != cta)
            rd.fail(cpath + ".cta", "is " + jcta.at("cta").dump() + ", but this is CTA " + std::to_string(cta) +
                                        " (the list's place in \"ctas\")");
        const json& jins = rd.array(jcta.at("instrs"), cpath + ".instrs");
        for (size_t i = 0; i < jins.size(); ++i) {
            const std::string ipath = json_path_index(cpath + ".instrs", i);
            const json& ji = jins[i];
            if (!ji.is_object() || !ji.contains("op")) rd.fail(ipath, "must be an object with an \"op\"");
            Op op{};
            const std::string opname = rd.string(ji.at("op"), ipath + ".op");
            if (!parse_op(opname, op)) {
                std::string known;
                for (int o = int(Op::ATTN_PART); o <= int(Op::KDA_NORM); ++o) known += std::string(known.empty() ? "" : ", ") + to_string(Op(o));
                rd.fail(ipath + ".op", "unknown opcode \"" + opname + "\" (known: " + known + ")");
            }
            const auto names = operand_names(op);
            for (auto it = ji.begin(); it != ji.end(); ++it) {
                bool known = it.key() == "op" || it.key() == "waits" || it.key() == "produces";
                for (const char* n : names) known |= it.key() == n;
                if (!known) {
                    std::string ks;
                    for (const char* n : names) ks += std::string(ks.empty() ? "" : ", ") + n;
                    rd.fail(ipath, "unknown key \"" + it.key() + "\" (" + opname + " has: op, " + ks + ", waits, produces)");
                }
            }
            int32_t v[3] = {0, 0, 0};
            for (size_t k = 0; k < names.size(); ++k) {
                if (!ji.contains(names[k])) rd.fail(ipath, opname + " has no \"" + names[k] + "\"");
                v[k] = int32_t(rd.integer(ji.at(names[k]), ipath + "." + names[k], 0, INT32_MAX));
            }
            p.instrs_[size_t(cta)].push_back({int32_t(op), v[0], v[1], v[2]});
            // waits: groups polled in order; a group is a text, a list of texts, or {"each": dim, "on": text}
            std::vector<Wait> w;
            if (ji.contains("waits")) {
                const json& jw = rd.array(ji.at("waits"), ipath + ".waits");
                int32_t group = 0;
                for (size_t g = 0; g < jw.size(); ++g) {
                    const std::string gpath = json_path_index(ipath + ".waits", g);
                    const json& jg = jw[g];
                    std::vector<std::vector<MailboxRef>> groups(1);
                    if (jg.is_string()) {
                        const Spec sp = parse_spec(p, rd, jg.get<std::string>(), gpath);
                        total += sp.count();
                        if (total > (int64_t(1) << 27)) rd.fail(gpath, "the plan's waits and products exceed 2^27 entries");
                        expand(p, sp, groups[0]);
                    } else if (jg.is_array()) {
                        for (size_t s = 0; s < jg.size(); ++s) {
                            const std::string spath = json_path_index(gpath, s);
                            const Spec sp = parse_spec(p, rd, rd.string(jg[s], spath), spath);
                            total += sp.count();
                            if (total > (int64_t(1) << 27)) rd.fail(spath, "the plan's waits and products exceed 2^27 entries");
                            expand(p, sp, groups[0]);
                        }
                    } else if (jg.is_object()) {
                        rd.object(jg, gpath, {"each", "on"});
                        const std::string dim = rd.string(jg.at("each"), gpath + ".each");
                        const Spec sp = parse_spec(p, rd, rd.string(jg.at("on"), gpath + ".on"), gpath + ".on");
                        const auto dims = p.entry_dims(sp.box);
                        size_t d = dims.size();
                        for (size_t k = 0; k < dims.size(); ++k)
                            if (dim == dims[k].name) d = k;
                        if (d == dims.size()) rd.fail(gpath + ".each", "\"" + dim + "\" is not a dim of " + to_string(sp.box));
                        total += sp.count();
                        if (total > (int64_t(1) << 27)) rd.fail(gpath, "the plan's waits and products exceed 2^27 entries");
                        groups.clear();
                        for (int x = sp.ranges[d].first; x <= sp.ranges[d].second; ++x) {
                            Spec one = sp;
                            one.ranges[d] = {x, x};
                            groups.emplace_back();
                            expand(p, one, groups.back());
                        }
                    } else {
                        rd.fail(gpath, "a wait group must be an entry text, a list of them, or {\"each\": dim, \"on\": text}");
                    }
                    for (const auto& es : groups) {
                        if (es.empty()) rd.fail(gpath, "an empty wait group");
                        for (const MailboxRef& e : es) w.push_back({e, group});
                        ++group;
                    }
                }
            }
            std::vector<MailboxRef> pr;
            if (ji.contains("produces")) {
                const json& jp = rd.array(ji.at("produces"), ipath + ".produces");
                for (size_t s = 0; s < jp.size(); ++s) {
                    const std::string spath = json_path_index(ipath + ".produces", s);
                    const Spec sp = parse_spec(p, rd, rd.string(jp[s], spath), spath);
                    total += sp.count();
                    if (total > (int64_t(1) << 27)) rd.fail(spath, "the plan's waits and products exceed 2^27 entries");
                    expand(p, sp, pr);
                }
            }
            p.waits_[size_t(cta)].push_back(std::move(w));
            p.produces_[size_t(cta)].push_back(std::move(pr));
        }
    }
    // launch: order and residency
    const json& jla = rd.object(j.at("launch"), "launch", {"co_resident", "cooperative", "order"});
    p.target_.co_resident = int(rd.integer(jla.at("co_resident"), "launch.co_resident", 1, 1 << 20));
    p.target_.cooperative = rd.boolean(jla.at("cooperative"), "launch.cooperative");
    const json& jord = rd.array(jla.at("order"), "launch.order");
    if (int(jord.size()) != B)
        rd.fail("launch.order", "has " + std::to_string(jord.size()) + " launch CTAs for " + std::to_string(B) +
                                    " lists (one a list: launch CTA b runs list order[b])");
    p.list_at_.assign(size_t(B), -1);
    p.launch_cta_.assign(size_t(B), -1);
    for (int b = 0; b < B; ++b) {
        const int list = int(rd.integer(jord[size_t(b)], json_path_index("launch.order", size_t(b)), 0, B - 1));
        if (p.launch_cta_[size_t(list)] >= 0)
            rd.fail(json_path_index("launch.order", size_t(b)), "list " + std::to_string(list) + " is launched twice (also at " +
                                                                    std::to_string(p.launch_cta_[size_t(list)]) + ")");
        p.list_at_[size_t(b)] = list;
        p.launch_cta_[size_t(list)] = b;
    }
    p.explicit_waits_ = true;
    p.derive();
    return p;
}

Plan Plan::read_json(const std::string& path) {
    return from_json(read_text_file(path, size_t(256) << 20, "plan file"), path);
}

// ---------------------------------------------------------------- a file's own checks

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
