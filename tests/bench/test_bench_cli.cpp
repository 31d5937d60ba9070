// `monokda bench` in a build without CUDA exists, and fails clearly with exit 2; its option checks
// come first in every build.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/cli/cli_run.hpp"

namespace {

using Result = monokda::test::CliResult;
Result run(const std::string& args, const std::string& bin = MONOKDA_BIN) { return monokda::test::run_cli_line(args, bin); }

}  // namespace

TEST_CASE("bench --help works without a GPU") {
    const Result r = run("bench --help");
    CHECK(r.code == 0);
    CHECK(r.out.find("--reps") != std::string::npos);
}

#if !MONOKDA_TEST_CUDA_BUILD
TEST_CASE("bench in a CPU-only build: exit 2, and it says why") {
    const Result r = run("bench --R 2 --L 4");
    CHECK(r.code == 2);
    CHECK(r.out.find("without CUDA") != std::string::npos);
    CHECK(run("bench --check").code == 2);
}
#endif

TEST_CASE("bench option errors are bad input") {
    CHECK(run("bench --R 2").code == 2);                 // --L missing
    CHECK(run("bench --R 65 --L 1").code == 2);          // R out of range
    CHECK(run("bench --R 16 --L 8").code == 2);          // S > 64
    CHECK(run("bench --plant x").code == 2);             // --plant without --check
    CHECK(run("bench --reps").code == 2);                // missing value
    CHECK(run("bench --shapes 2x4,9").code == 2);        // not RxL
    CHECK(run("bench --shapes 2x4,16x8").code == 2);     // S > 64
    CHECK(run("bench --shapes 2x4 --R 2 --L 4").code == 2);
    // the fused kernel's launch choices, checked before anything runs (in every build)
    struct Bad { const char* option; const char* message; };
    for (const Bad b : {Bad{"--weight-evict sometimes", "--weight-evict must be first or normal"},
                        Bad{"--gemv-bands all", "--gemv-bands must be auto, spec or every"},
                        Bad{"--attn-parts 3", "--attn-parts must be auto, 1 or 2"},
                        Bad{"--attn-parts 0", "--attn-parts must be auto, 1 or 2"},
                        Bad{"--attn-parts two", "--attn-parts must be auto, 1 or 2"},
                        Bad{"--placement pairs", "--placement must be auto, index or paired (got 'pairs')"},
                        Bad{"--weight-pace -1", "--weight-pace must be auto or 0..20000 ns"},
                        Bad{"--weight-pace 20001", "--weight-pace must be auto or 0..20000 ns"},
                        Bad{"--weight-pace fast", "--weight-pace must be auto or 0..20000 ns"}}) {
        CAPTURE(b.option);
        const Result r = run(std::string("bench --R 2 --L 4 ") + b.option);
        CHECK(r.code == 2);
        CHECK(r.out.find(b.message) != std::string::npos);
    }
}

TEST_CASE("monokda-bench-cpu renders a detail file and refuses a broken one") {
    const std::string dir = std::string(MONOKDA_TEST_TMP) + "/bench_render";
    std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
    const std::string detail = dir + "/d.json";
    FILE* f = fopen(detail.c_str(), "w");
    REQUIRE(f != nullptr);
    fputs(R"({"device":"G","commit":"c0ffee","date":"d","copy_tb_s":4.0,"rows":[)"
          R"({"R":2,"L":4,"S":8,"nb":4,"fused_us":null,"unfused_us":45.5,"floor_us":24.9}]})", f);
    fclose(f);
    const Result ok = run("--render " + detail + " --md " + dir + "/t.md --svg " + dir + "/t.svg", MONOKDA_BENCH_CPU_BIN);
    CHECK(ok.code == 0);
    FILE* md = fopen((dir + "/t.md").c_str(), "r");
    REQUIRE(md != nullptr);
    std::string text;
    std::array<char, 4096> buf;
    while (size_t n = fread(buf.data(), 1, buf.size(), md)) text.append(buf.data(), n);
    fclose(md);
    CHECK(text.find("c0ffee") != std::string::npos);
    CHECK(text.find("45.5") != std::string::npos);
    CHECK(text.find("not measured") != std::string::npos);

    f = fopen(detail.c_str(), "w");
    fputs(R"({"device":"G","rows":[)", f);  // truncated
    fclose(f);
    const Result bad = run("--render " + detail + " --md " + dir + "/u.md", MONOKDA_BENCH_CPU_BIN);
    CHECK(bad.code == 2);
    FILE* none = fopen((dir + "/u.md").c_str(), "r");
    CHECK(none == nullptr);  // nothing written
    if (none) fclose(none);
}
