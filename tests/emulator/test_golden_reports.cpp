// `monokda emulate`'s report as a reader meets it: one golden file a verdict of the closed set
// (tests/emulator/golden/NAME.txt: the command line, the report on stdout with times, paths and
// versions normalised, the exit code), regenerated here and compared line by line. The runs are
// deterministic (built-in small fixture, fixed schedule and seed). After a deliberate change to the
// report: `ninja -C build update-goldens` (or MONOKDA_UPDATE_GOLDENS=1 on this test) rewrites the
// files, and the diff is reviewed with the change (tests/emulator/golden/README.md).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "emu_util.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;
using namespace monokda::emu::test;
namespace fs = std::filesystem;

namespace {

struct Golden {
    const char* name;     // tests/emulator/golden/NAME.txt
    const char* args;     // after `monokda`; {tmp} is the case's temporary folder
    const char* verdict;  // the VERDICT line the report must end its judgement with
    int code;             // the exit code
};

// One case a verdict: a clean run, then a planted fault (--list-faults) that each verdict catches.
const Golden kGoldens[] = {
    {"pass", "emulate --config small --schedule pct --seed 7", "PASS", 0},
    {"deadlock", "emulate --config small --inject too_few_resident --no-envelope", "DEADLOCK", 1},
    {"livelock_lost_store", "emulate --config small --inject missing_xrdy --no-envelope", "LIVELOCK", 1},
    {"livelock_wrong_epoch", "emulate --config small --inject stale_epoch_tag --no-envelope", "LIVELOCK", 1},
    {"stale_read_epoch_by_value", "emulate --config small --inject epoch_by_value --no-envelope", "STALE_READ", 1},
    {"visibility_fault_no_release", "emulate --config small --inject flag_before_data --no-envelope", "VISIBILITY_FAULT", 1},
    {"write_conflict", "emulate --config small --inject slice_off_by_one --no-envelope", "WRITE_CONFLICT", 1},
    {"wrong_split", "emulate --config small --inject partial_counted_twice --no-envelope", "WRONG_SPLIT", 1},
    {"poll_behind_loads", "emulate --config small --inject poll_behind_loads --no-envelope", "POLL_BEHIND_LOADS", 1},
    {"wrong_result", "emulate --config small --inject wrong_accepted_window --no-envelope", "WRONG_RESULT", 1},
    // {tmp}/tight.json: the small fixture's own envelope with its rel-L2 and abs bounds set to 0
    {"out_of_envelope", "emulate --config small --envelope-in {tmp}/tight.json", "OUT_OF_ENVELOPE", 1},
};

const fs::path kGoldenDir = fs::path(MONOKDA_SOURCE_DIR) / "tests/emulator/golden";

std::string read_text(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    if (from.empty()) return s;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
}

// What varies between runs and machines, replaced by a placeholder: durations in seconds, the
// case's temporary folder, the source tree, git commits and monokda's version; and spaces at line ends.
std::string normalise(std::string s, const std::string& tmp) {
    s = replace_all(s, tmp, "<tmp>");
    s = replace_all(s, MONOKDA_SOURCE_DIR, "<src>");
    s = std::regex_replace(s, std::regex(R"(\b[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)? s\b)"), "<time> s");
    s = std::regex_replace(s, std::regex(R"(\b[0-9a-f]{40}\b)"), "<commit>");
    s = std::regex_replace(s, std::regex(R"(\bmonokda [0-9]+\.[0-9]+\.[0-9]+\b)"), "monokda <version>");
    s = std::regex_replace(s, std::regex(R"( +\n)"), "\n");  // table padding at line ends
    return s;
}

// The small fixture's envelope, measured by `monokda emulate --envelope-out`, with every output's
// rel-L2 and abs bounds and the relative margin set to 0: the plan's order (never identical to the
// f64 oracle in ssm_state) lies outside it.
void write_tight_envelope(const TempDir& dir) {
    const CliResult m = run_cli({"emulate", "--config", "small", "--envelope-out", dir / "measured.json"});
    INFO(m.out);
    REQUIRE(m.code == 0);
    nlohmann::json j = nlohmann::json::parse(read_text(dir / "measured.json"));
    for (auto& bound : j.at("outputs")) {
        bound["max_rel_l2"] = 0.0;
        bound["max_abs"] = 0.0;
    }
    j["margins"]["rel"] = 0.0;
    std::ofstream(dir / "tight.json") << j.dump(1);
}

// The golden text of one case: the command, the report (stdout alone: progress goes to stderr and
// depends on the clock), the exit code.
std::string run_case(const Golden& g, const TempDir& dir) {
    const std::string args = replace_all(g.args, "{tmp}", dir.path.string());
    const CliResult r = run_cli_line(args, MONOKDA_BIN, "", dir / "stderr.txt");
    const std::string err = read_text(dir / "stderr.txt");
    INFO("stderr:\n", err);
    CHECK(r.code == g.code);
    return normalise("$ monokda " + args + "\n" + r.out + "[exit " + std::to_string(r.code) + "]\n", dir.path.string());
}

// The first line where two texts differ, both lines shown ("" when they are the same).
std::string first_difference(const std::string& want, const std::string& got) {
    std::istringstream a(want), b(got);
    std::string la, lb;
    for (int n = 1;; ++n) {
        const bool ha = bool(std::getline(a, la)), hb = bool(std::getline(b, lb));
        if (!ha && !hb) return "";
        if (!ha || !hb || la != lb)
            return "line " + std::to_string(n) + ":\n  golden: " + (ha ? la : "(end of file)") + "\n  now:    " + (hb ? lb : "(end of output)");
    }
}

bool updating() {
    const char* u = std::getenv("MONOKDA_UPDATE_GOLDENS");
    return u && std::string(u) == "1";
}

}  // namespace

TEST_CASE("normalising replaces times, paths, commits and the version, and nothing else") {
    const std::string in =
        "prepared: fixture 0.0200959 s, reference 1e-05 s, envelope (measured) 2 s\n"
        "  2603 scheduler steps, 2608 ticks, 0.002 s; 1 of 1 steps completed\n"
        "wrote /tmp/x/out.safetensors, monokda 0.1.0 (commit 9368960c761aac3e5369f19a9c7d71494bedd752)\n"
        "spin on PROJ[group 0] (sees tag 0); 16 slices   \n";
    CHECK(normalise(in, "/tmp/x") ==
          "prepared: fixture <time> s, reference <time> s, envelope (measured) <time> s\n"
          "  2603 scheduler steps, 2608 ticks, <time> s; 1 of 1 steps completed\n"
          "wrote <tmp>/out.safetensors, monokda <version> (commit <commit>)\n"
          "spin on PROJ[group 0] (sees tag 0); 16 slices\n");
}

TEST_CASE("first_difference names the first line that differs") {
    CHECK(first_difference("a\nb\n", "a\nb\n") == "");
    CHECK(first_difference("a\nb\n", "a\nc\n") == "line 2:\n  golden: b\n  now:    c");
    CHECK(first_difference("a\n", "a\nb\n") == "line 2:\n  golden: (end of file)\n  now:    b");
}

TEST_CASE("every emulate verdict's report matches its golden file") {
    TempDir dir("golden");
    write_tight_envelope(dir);
    std::set<std::string> names;
    for (const Golden& g : kGoldens) {
        const std::string name = g.name;
        CAPTURE(name);
        names.insert(name + ".txt");
        const std::string got = run_case(g, dir);
        CHECK_MESSAGE(contains(got, std::string("\nVERDICT: ") + g.verdict + "\n"), got);
        const fs::path file = kGoldenDir / (name + ".txt");
        if (updating()) {
            std::ofstream(file, std::ios::binary) << got;
            MESSAGE("rewrote ", file.string());
            continue;
        }
        REQUIRE_MESSAGE(fs::exists(file), file.string() << " is missing: `ninja -C build update-goldens` writes it");
        const std::string diff = first_difference(read_text(file), got);
        CHECK_MESSAGE(diff.empty(), file.string() << " differs from the report now (after a deliberate change: "
                                                  << "`ninja -C build update-goldens`, then review the diff), " << diff);
    }
    // a golden file no case writes is a case that was removed: its file goes too
    for (const auto& e : fs::directory_iterator(kGoldenDir)) {
        if (e.path().extension() != ".txt") continue;
        CHECK_MESSAGE(names.count(e.path().filename().string()), e.path().string() << ": no case writes it");
    }
}
