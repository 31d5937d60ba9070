// The libFuzzer target over kernel v2's plan file reader, through exactly what the fuzzer runs
// (fuzz/plan_v2_reader_check.hpp): a plan file as `monokda plan --kernel v2` writes it reads, and so
// do the seeds monokda_plan_v2_seeds makes of it (the same plan, a fifth of the bytes, CTA 0's
// descriptions kept in one); every truncation is refused and byte corruptions are read or refused,
// never a crash; the seed tool refuses what is not a v2 plan file and writes nothing then.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/plan_v2.hpp"
#include "fuzz/plan_v2_reader_check.hpp"
#include "tests/cli/cli_run.hpp"

using monokda::PlanV2;
using monokda::fuzz::check_plan_v2_bytes;
using monokda::fuzz::ReaderVerdict;
using monokda::test::run_cli;
using monokda::test::run_shell;
using monokda::test::shell_quote;
using monokda::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

ReaderVerdict check(const std::string& text) {
    return check_plan_v2_bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

// the plan file the CLI writes for the small preset at R 1, L 1, and the seeds made of it
struct Seeds {
    TempDir dir{"plan_v2_seeds"};
    std::string plan, compact, described;
    std::string file = dir / "small-R1-L1.json";
    Seeds() {
        REQUIRE(run_cli({"plan", "--kernel", "v2", "--config", "small", "--R", "1", "--L", "1", "-o", file}).code == 0);
        fs::create_directories(dir / "seeds");
        const auto r = run_shell(shell_quote(MONOKDA_PLAN_V2_SEEDS) + " " + shell_quote(dir / "seeds") + " " + shell_quote(file) + " 2>&1");
        INFO(r.out);
        REQUIRE(r.code == 0);
        plan = slurp(file), compact = slurp(dir / "seeds/small-R1-L1.json"), described = slurp(dir / "seeds/small-R1-L1-described.json");
    }
};

const Seeds& seeds() {
    static const Seeds s;
    return s;
}

}  // namespace

TEST_SUITE("fuzz") {
TEST_CASE("a plan file as monokda plan --kernel v2 writes it reads, and so do its compact seeds: the same plan") {
    const Seeds& s = seeds();
    for (const std::string* text : {&s.plan, &s.compact, &s.described}) {
        const ReaderVerdict v = check(*text);
        INFO(v.stage << ": " << v.message);
        CHECK(v.kind == ReaderVerdict::ACCEPTED);
        CHECK(PlanV2::from_json(*text).to_json(false) == PlanV2::from_json(s.plan).to_json(false));
    }
    CHECK(s.compact.size() * 4 < s.plan.size());
    CHECK(s.compact.find("\"step\"") == std::string::npos);
    CHECK(s.described.find("\"step\"") != std::string::npos);  // CTA 0's, for the reader's description checks
    CHECK(s.described.size() < s.compact.size() + s.compact.size() / 4);
}

TEST_CASE("every truncation of a seed is refused, and byte corruptions are read or refused, never a crash") {
    const std::string& good = seeds().compact;
    for (size_t n = 0; n < good.size(); n += 1009) {
        const ReaderVerdict v = check(good.substr(0, n));
        INFO("prefix of " << n << " bytes: " << v.message);
        CHECK(v.kind == ReaderVerdict::REJECTED);
    }
    std::string b = good;
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < b.size(); i += 401) {
        const char keep = b[i];
        b[i] = char(keep ^ 0x01);  // a digit another digit, a letter another letter, a quote or brace broken
        (check(b).kind == ReaderVerdict::ACCEPTED ? accepted : rejected)++;
        b[i] = keep;
    }
    CHECK(accepted > 0);
    CHECK(rejected > 0);
}

TEST_CASE("the seed tool refuses what is not a kernel v2 plan file, and a seed over its plan file; it writes nothing then") {
    TempDir t("plan_v2_seeds_bad");
    const std::string v1 = t / "v1.json", out = t / "out", v2 = seeds().file;
    REQUIRE(run_cli({"plan", "--config", "small", "-o", v1}).code == 0);
    fs::create_directories(out);
    auto seed = [&](const std::string& dir, const std::string& files) {
        return run_shell(shell_quote(MONOKDA_PLAN_V2_SEEDS) + " " + shell_quote(dir) + " " + files + " 2>&1");
    };
    auto r = seed(out, shell_quote(v2) + " " + shell_quote(v1));  // the v2 file first: its seeds are not written either
    CHECK(r.code == 2);
    CHECK(r.out.find("not a kernel v2 plan file") != std::string::npos);
    CHECK(fs::is_empty(out));
    const std::string before = slurp(v2);
    r = seed(seeds().dir.path.string(), shell_quote(v2));  // small-R1-L1.json's seed would replace it
    CHECK(r.code == 2);
    CHECK(slurp(v2) == before);
}
}
