// The README's CLI section and `monokda SUB --help` agree: each subcommand's usage lines in the
// README are the ones its --help prints (as text, spaces and line wrapping aside), every subcommand
// `monokda --help` lists has them, and every option a usage line names is one the subcommand takes.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "tests/cli/cli_run.hpp"

using namespace monokda::test;

namespace {

std::string squeeze(const std::string& s) {  // runs of blanks as one space, none at the ends
    std::istringstream in(s);
    std::string w, out;
    while (in >> w) out += (out.empty() ? "" : " ") + w;
    return out;
}

// A usage line's subcommand: its words after `monokda` up to the first that is not a lowercase word
// ("plan check FILE" -> "plan check", "fixture --config ..." -> "fixture").
std::string subcommand(const std::string& usage) {
    std::istringstream in(usage);
    std::string w, sub;
    in >> w;  // monokda
    while (in >> w && std::regex_match(w, std::regex("[a-z]+"))) sub += (sub.empty() ? "" : " ") + w;
    return sub;
}

// Usage lines from a block of lines: a line that starts with `monokda ` starts one, a line that does
// not continues the one before; "(GPU build)" at a line's end is the README's note, not usage.
std::vector<std::string> usage_lines(const std::vector<std::string>& block) {
    std::vector<std::string> out;
    for (std::string line : block) {
        line = squeeze(std::regex_replace(line, std::regex(R"(\(GPU build\)\s*$)"), ""));
        if (line.rfind("monokda ", 0) == 0) out.push_back(line);
        else if (!out.empty() && !line.empty()) out.back() += " " + line;
    }
    return out;
}

// The README's usage block: the first indented block after "## The CLI".
std::vector<std::string> readme_usage() {
    std::ifstream f(std::string(MONOKDA_SOURCE_DIR) + "/README.md");
    std::vector<std::string> block;
    bool section = false;
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("## ", 0) == 0) {
            if (section) break;
            section = line == "## The CLI";
            continue;
        }
        if (!section) continue;
        if (line.rfind("    ", 0) == 0) block.push_back(line);
        else if (!block.empty()) break;
    }
    return usage_lines(block);
}

// `monokda SUB --help`: its usage lines, and the options its table lists.
struct Help {
    std::vector<std::string> usage;
    std::set<std::string> options;
    std::string text;
};
Help help_of(const std::string& sub) {
    Help h;
    h.text = run_cli_line(sub + " --help").out;
    std::istringstream in(h.text);
    std::vector<std::string> block;
    std::string line;
    while (std::getline(in, line) && !line.empty()) block.push_back(line.rfind("usage: ", 0) == 0 ? line.substr(7) : line);
    h.usage = usage_lines(block);
    const std::regex table(R"(^  (-[a-zA-Z] \[ )?(--[a-zA-Z0-9-]+))");
    const std::regex short_opt(R"(^  (-[a-zA-Z]) \[)");
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, table)) h.options.insert(m[2]);
        if (std::regex_search(line, m, short_opt)) h.options.insert(m[1]);
    }
    return h;
}

// The options a usage line names (--name and -x).
std::set<std::string> options_in(const std::string& usage) {
    std::set<std::string> out;
    const std::regex opt(R"((^|[\s\[|])(--?[a-zA-Z][a-zA-Z0-9-]*))");
    for (auto it = std::sregex_iterator(usage.begin(), usage.end(), opt); it != std::sregex_iterator(); ++it)
        out.insert((*it)[2]);
    return out;
}

std::string joined(const std::set<std::string>& s) {
    std::string out;
    for (const auto& x : s) out += (out.empty() ? "" : " ") + x;
    return out.empty() ? "(none)" : out;
}

// The options one set has and the other lacks, both ways, as one line.
std::string option_difference(const std::vector<std::string>& readme, const std::vector<std::string>& help) {
    std::set<std::string> a, b, only_a, only_b;
    for (const auto& l : readme) a.merge(options_in(l));
    for (const auto& l : help) b.merge(options_in(l));
    for (const auto& o : a) if (!b.count(o)) only_a.insert(o);
    for (const auto& o : b) if (!a.count(o)) only_b.insert(o);
    return "only in the README: " + joined(only_a) + "; only in --help: " + joined(only_b);
}

std::string lines(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& l : v) out += "\n    " + l;
    return out;
}

}  // namespace

TEST_CASE("the helpers read usage lines, subcommands and options as written") {
    CHECK(subcommand("monokda plan check FILE") == "plan check");
    CHECK(subcommand("monokda compare A B [--exact names]") == "compare");
    CHECK(usage_lines({"    monokda gpu FIXTURE -o OUT", "        [--repeat N]   (GPU build)", "    monokda plan check FILE"}) ==
          std::vector<std::string>{"monokda gpu FIXTURE -o OUT [--repeat N]", "monokda plan check FILE"});
    CHECK(options_in("monokda x [--a|--b N] -o OUT [--sets 4] split:P|--c") == std::set<std::string>{"--a", "--b", "-o", "--sets", "--c"});
    CHECK(option_difference({"monokda x [--a] [--b]"}, {"monokda x [--b] [--c]"}) ==
          "only in the README: --a; only in --help: --c");
}

TEST_CASE("each subcommand's usage lines in the README are the ones its --help prints") {
    const std::vector<std::string> readme = readme_usage();
    REQUIRE(readme.size() >= 10);
    std::map<std::string, std::vector<std::string>> by_sub;  // README lines, by subcommand
    for (const auto& l : readme) by_sub[subcommand(l)].push_back(l);

    // the subcommands `monokda --help` lists, each with README lines
    const std::string top = run_cli_line("--help").out;
    std::set<std::string> listed;
    const std::regex command(R"(^  ([a-z]+) {2,})");
    std::istringstream in(top);
    std::smatch m;
    for (std::string line; std::getline(in, line);)
        if (std::regex_search(line, m, command)) listed.insert(m[1]);
    REQUIRE(listed.size() >= 9);
    for (const auto& sub : listed) CHECK_MESSAGE(by_sub.count(sub), "the README's CLI section has no usage of monokda " << sub);

    for (const auto& entry : by_sub) {
        const std::string& sub = entry.first;
        CAPTURE(sub);
        CHECK_MESSAGE(listed.count(sub.substr(0, sub.find(' '))), "monokda --help lists no command " << sub);
        const Help h = help_of(sub);
        std::vector<std::string> help;  // --help's lines of this subcommand (plan --help prints plan check's too)
        for (const auto& l : h.usage)
            if (subcommand(l) == sub) help.push_back(l);
        CHECK_MESSAGE(help == entry.second, "README:" << lines(entry.second) << "\n  monokda " << sub << " --help:" << lines(help)
                                                     << "\n  " << option_difference(entry.second, help));
        // every option a usage line names is one the subcommand takes
        for (const auto& l : help)
            for (const auto& o : options_in(l))
                CHECK_MESSAGE(h.options.count(o), "monokda " << sub << "'s usage names " << o << ", which its options table lacks");
    }
}
