// The ordering check on kda_pre itself, from the committed summaries (kernels/ordering/*.ordering,
// made by `ninja ptx-ordering-update`; CTest ordering/fresh holds them to the source where nvcc
// exists): the kernel as the contract requires, the two planted bugs each caught by its rule alone,
// and monokda-ptx-ordering's exit codes.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "core/input_file.hpp"
#include "kernels/ordering/ordering.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;

namespace {

const std::string kSrc = MONOKDA_SOURCE_DIR;
const std::string kKernel = kSrc + "/kernels/ordering/kda_pre.sm_90a.ordering";
const std::string kRelaxed = kSrc + "/tests/ordering/planted_relaxed_poll.sm_90a.ordering";
const std::string kRingShort = kSrc + "/tests/ordering/planted_ring_short.sm_90a.ordering";

ordering::Summary load(const std::string& path) { return ordering::parse_summary(read_text_file(path, 1 << 24), path); }

std::multiset<std::string> rules(const ordering::Summary& s) {
    std::multiset<std::string> out;
    for (const ordering::Violation& v : ordering::check(s)) out.insert(to_string(v.rule));
    return out;
}

// a site of this kind, memory and facts in the entry
bool has(const ordering::Entry& e, const std::string& kind, const std::string& memory,
         const std::map<std::string, std::string>& facts) {
    for (const ordering::Site& s : e.sites) {
        bool match = s.kind == kind && s.memory == memory;
        for (const auto& [k, v] : facts) match = match && s.fact(k) == v;
        if (match) return true;
    }
    return false;
}

test::CliResult tool(const std::string& line) { return test::run_cli_line(line, MONOKDA_PTX_ORDERING_BIN); }

}  // namespace

TEST_CASE("kda_pre's hand-offs, as nvcc compiled them, are every one as the contract requires") {
    const ordering::Summary s = load(kKernel);
    CHECK(s.source == "kernels/kda_pre.cu");
    REQUIRE(s.entries.size() == 2);
    for (const ordering::Violation& v : ordering::check(s)) FAIL_CHECK(ordering::format_violation(v));
    // the summary covers what the kernel does: not an empty or truncated file
    for (const ordering::Entry& e : s.entries) {
        CAPTURE(e.name);
        CHECK(has(e, "read", "flags", {{"sem", "acquire.gpu"}}));
        CHECK(has(e, "write", "flags", {{"sem", "release.gpu"}, {"barrier", "yes"}}));
        CHECK(has(e, "read", "tagged", {{"sem", "relaxed.gpu"}, {"type", "u64"}}));
        CHECK(has(e, "write", "tagged", {{"sem", "relaxed.gpu"}, {"type", "u64"}}));
        CHECK(has(e, "poll", "flags", {{"clock", "yes"}, {"error", "yes"}}));
        CHECK(has(e, "poll", "tagged", {{"clock", "yes"}, {"error", "yes"}}));
    }
    // the exact body's cp.async ring (kda_pre_kernel<true>), the gemv pass's XRDY peek and copy waits (<false>)
    const ordering::Entry& exact = s.entries[0].name == "kda_pre_kernel<true>" ? s.entries[0] : s.entries[1];
    const ordering::Entry& mma = &exact == &s.entries[0] ? s.entries[1] : s.entries[0];
    CHECK(has(exact, "wait", "cp.async", {{"pending", "15"}}));
    CHECK(has(mma, "read", "flags", {{"peek", "reread"}}));
    CHECK(has(mma, "read", "flags", {{"type", "v4.u32"}, {"sem", "acquire.gpu"}}));
    CHECK(has(mma, "poll", "mbarrier", {{"clock", "yes"}, {"error", "yes"}}));
}

TEST_CASE("planted: the flag polls relaxed instead of acquire -> FLAG_READ_RELAXED, nothing else") {
    const std::multiset<std::string> r = rules(load(kRelaxed));
    CHECK(r.count("FLAG_READ_RELAXED") >= 1);
    CHECK(r.size() == r.count("FLAG_READ_RELAXED"));
}

TEST_CASE("planted: the cp.async ring waits one stage short -> RING_WAIT, nothing else") {
    const ordering::Summary s = load(kRingShort);
    const std::vector<ordering::Violation> v = ordering::check(s);
    REQUIRE(v.size() == 1);
    CHECK(std::string(to_string(v[0].rule)) == "RING_WAIT");
    CHECK_MESSAGE(v[0].message.find("wait_group 16") != std::string::npos, v[0].message);
    CHECK_MESSAGE(v[0].where.find("gemv_group") != std::string::npos, v[0].where);
}

TEST_CASE("monokda-ptx-ordering: 0 clean, 1 naming the rule, 2 for bad input with nothing written") {
    const test::CliResult clean = tool("check " + kKernel);
    CHECK_MESSAGE(clean.code == 0, clean.out);
    const test::CliResult relaxed = tool("check " + kRelaxed);
    CHECK(relaxed.code == 1);
    CHECK_MESSAGE(relaxed.out.find("FLAG_READ_RELAXED kda_pre_kernel<") != std::string::npos, relaxed.out);
    const test::CliResult ring = tool("check " + kRingShort);
    CHECK(ring.code == 1);
    CHECK_MESSAGE(ring.out.find("RING_WAIT kda_pre_kernel<true> at async_wait<") != std::string::npos, ring.out);

    test::TempDir dir("ptx_ordering");
    for (const auto& bad : std::vector<std::pair<std::string, std::string>>{
             {"", "no command"},
             {"frobnicate x", "unknown command 'frobnicate'"},
             {"check", "check needs a file"},
             {"check " + dir / "missing.ordering", "cannot open"},
             {"check " + dir.path.string(), "is a directory"},
             {"check --bogus " + kKernel, "unknown option '--bogus'"},
             {"summarize " + kKernel + " -o " + dir / "out.ordering", "not PTX"},
             {"summarize a.ptx b.ptx", "one PTX file"},
         }) {
        const std::string &line = bad.first, &expect = bad.second;
        CAPTURE(line);
        const test::CliResult r = tool(line);
        CHECK(r.code == 2);
        CHECK_MESSAGE(r.out.find(expect) != std::string::npos, r.out);
    }
    CHECK(std::filesystem::is_empty(dir.path));  // nothing written, no temporary left
}
