// The replay token (replay_token.hpp): one table of named fields, written in table order and read
// back by name.
#include "emulator/replay_token.hpp"

#include <cstdlib>
#include <set>
#include <vector>

#include "core/error.hpp"

namespace monokda::emu {

namespace {

constexpr const char* kFormat = "v5";

[[noreturn]] void bad(const std::string& msg) { bad_input("replay token: " + msg); }

long long number(const std::string& field, const std::string& v, long long lo, long long hi) {
    if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
        bad(field + " must be a number (got '" + v + "')");
    const unsigned long long n = std::strtoull(v.c_str(), nullptr, 10);
    if (n < (unsigned long long)lo || n > (unsigned long long)hi)
        bad(field + " must be " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " + v + ")");
    return (long long)n;
}

// fields that describe the built-in plan (a token of a plan file has none)
bool plan_knob(const std::string& name) { return name == "blocks" || name == "gemv-bands"; }

// A field: its name (the `monokda emulate` option), how a run's options give its value, how a value
// sets them. `builtin`: a field of the built-in fixture (absent when the run reads a fixture file).
struct Field {
    const char* name;
    bool builtin;
    std::string (*get)(const EmulateOptions&);
    void (*set)(EmulateOptions&, const std::string&);
};

const std::vector<Field>& fields() {
    using O = EmulateOptions;
    using S = const std::string&;
    constexpr long long kMaxSeed = (long long)(~0ull >> 1);
    static const std::vector<Field> table = {
        {"config", true, [](const O& o) { return o.fixture.preset; }, [](O& o, S v) { o.fixture.preset = v; }},
        {"R", true, [](const O& o) { return std::to_string(o.fixture.R); },
         [](O& o, S v) { o.fixture.R = int(number("R", v, 1, 4096)); }},
        {"L", true, [](const O& o) { return std::to_string(o.fixture.L); },
         [](O& o, S v) { o.fixture.L = int(number("L", v, 1, 64)); }},
        {"nb", true, [](const O& o) { return std::to_string(o.fixture.nb); },
         [](O& o, S v) { o.fixture.nb = int(number("nb", v, 1, 8)); }},
        {"fixture-seed", true, [](const O& o) { return std::to_string(o.fixture.seed); },
         [](O& o, S v) { o.fixture.seed = uint64_t(number("fixture-seed", v, 0, kMaxSeed)); }},
        {"blocks", false, [](const O& o) { return std::to_string(o.blocks); },
         [](O& o, S v) { o.blocks = int(number("blocks", v, 0, 65536)); }},
        {"gemv-bands", false, [](const O& o) { return std::string(to_string(o.gemv_bands)); },
         [](O& o, S v) { o.gemv_bands = parse_gemv_bands(v); }},
        {"kda-teams", false, [](const O& o) { return std::to_string(o.kda_teams); },
         [](O& o, S v) { o.kda_teams = int(number("kda-teams", v, 1, 8)); }},
        {"schedule", false, [](const O& o) { return o.schedule.str(); },
         [](O& o, S v) {
             const uint64_t seed = o.schedule.seed;
             o.schedule = Schedule::parse(v);
             o.schedule.seed = seed;
         }},
        {"seed", false, [](const O& o) { return std::to_string(o.schedule.seed); },
         [](O& o, S v) { o.schedule.seed = uint64_t(number("seed", v, 0, kMaxSeed)); }},
        {"resident", false, [](const O& o) { return std::to_string(o.resident); },
         [](O& o, S v) { o.resident = int(number("resident", v, 0, 65536)); }},
        {"steps", false, [](const O& o) { return std::to_string(o.steps); },
         [](O& o, S v) { o.steps = int(number("steps", v, 1, 64)); }},
        {"amd", false, [](const O& o) { return std::string(o.amd ? "1" : "0"); },
         [](O& o, S v) { o.amd = number("amd", v, 0, 1) == 1; }},
        {"inject", false, [](const O& o) { return std::string(to_string(o.fault)); },
         [](O& o, S v) { o.fault = parse_fault(v); }},
        {"detectors-off", false, [](const O& o) { return o.detectors.off_str(); },
         [](O& o, S v) { o.detectors = DetectorSet::parse_off(v); }},
    };
    return table;
}

}  // namespace

std::string make_token(const EmulateOptions& o) {
    const bool file = !o.fixture.file.empty();
    std::string t = kFormat;
    if (file) t += ",fixture=file";
    const bool given = !o.plan_digest.empty();  // a plan file: its digest, not the built-in plan's knobs
    if (given) t += ",plan=" + o.plan_digest;
    for (const Field& f : fields())
        if (!(file && f.builtin) && !(given && plan_knob(f.name))) t += std::string(",") + f.name + "=" + f.get(o);
    return t;
}

EmulateOptions apply_token(EmulateOptions o, const std::string& token) {
    if (token.size() > 2 && token[0] == 'v' && token.find('/') != std::string::npos && token.find(',') == std::string::npos)
        bad("'" + token + "' is in the positional format of monokda's earlier versions (v1-v4), which is no longer read; "
            "its fields are v1/SCHEDULE/SEED/rRESIDENT/kSTEPS/aAMD/INJECT/bBLOCKS[/tKDA_TEAMS][/gGEMV_BANDS: g0 spec, "
            "g1 every, ga auto][/hG2_LAST: retired]/CONFIG.RR.LL.nbNB.sFIXTURE_SEED: give them as options "
            "(--schedule, --seed, ...) or run once more for a " + std::string(kFormat) + " token");
    std::vector<std::string> parts;
    for (size_t a = 0;;) {
        const size_t b = token.find(',', a);
        parts.push_back(token.substr(a, b == std::string::npos ? std::string::npos : b - a));
        if (b == std::string::npos) break;
        a = b + 1;
    }
    if (parts[0] != kFormat)
        bad("must start with " + std::string(kFormat) + ", then NAME=VALUE fields separated by commas, e.g. " +
            make_token(EmulateOptions{}) + " (got '" + token + "')");
    // every run choice from the token, the options' defaults where it says nothing
    const std::string file = o.fixture.file;
    const EmulateOptions defaults;
    o.fixture = defaults.fixture;
    o.blocks = defaults.blocks, o.gemv_bands = defaults.gemv_bands, o.kda_teams = defaults.kda_teams;
    o.schedule = defaults.schedule, o.resident = defaults.resident, o.steps = defaults.steps;
    o.amd = defaults.amd, o.fault = defaults.fault, o.detectors = defaults.detectors, o.plan_digest.clear();
    std::set<std::string> seen;
    bool from_file = false;
    for (size_t i = 1; i < parts.size(); ++i) {
        const size_t eq = parts[i].find('=');
        if (eq == std::string::npos || eq == 0) bad("field '" + parts[i] + "' is not NAME=VALUE");
        const std::string name = parts[i].substr(0, eq), value = parts[i].substr(eq + 1);
        if (!seen.insert(name).second) bad("field " + name + " appears twice");
        if (name == "plan") {
            if (value.size() != 16 || value.find_first_not_of("0123456789abcdef") != std::string::npos)
                bad("plan must be a plan file's digest, 16 hex digits (got '" + value + "')");
            o.plan_digest = value;
            continue;
        }
        if (name == "fixture") {
            if (value != "file") bad("fixture must be 'file' (a built-in fixture is config=..,R=..,L=..,nb=..,fixture-seed=..)");
            from_file = true;
            continue;
        }
        const Field* f = nullptr;
        for (const Field& k : fields())
            if (name == k.name) f = &k;
        if (!f) {
            std::string known = "fixture";
            for (const Field& k : fields()) known += std::string(", ") + k.name;
            bad("unknown field '" + name + "' (known: " + known + ")");
        }
        f->set(o, value);
    }
    if (!o.plan_digest.empty())
        for (const Field& k : fields())
            if (plan_knob(k.name) && seen.count(k.name)) bad("plan=... contradicts the built-in plan's field " + std::string(k.name));
    if (from_file) {
        for (const Field& k : fields())
            if (k.builtin && seen.count(k.name)) bad("fixture=file contradicts the built-in fixture field " + std::string(k.name));
        if (file.empty()) bad("it names a fixture file (fixture=file): give the FIXTURE argument too");
        o.fixture.file = file;
    }
    return o;
}

}  // namespace monokda::emu
