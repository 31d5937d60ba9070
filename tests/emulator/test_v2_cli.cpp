// `monokda emulate --kernel v2` and `monokda plan --kernel v2` as a user runs them: exit 0 a pass, 1 a
// fault caught, 2 an option kernel v2 does not take (nothing written); the replay line re-runs the
// same interleaving; a sweep; the plan's JSON written after its checks.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "emu_util.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;
using namespace monokda::emu::test;

namespace {

std::string line_after(const std::string& out, const std::string& key) {
    const size_t at = out.find(key);
    return at == std::string::npos ? "" : out.substr(at + key.size(), out.find('\n', at) - at - key.size());
}

}  // namespace

TEST_CASE("emulate --kernel v2: a clean run passes, and its replay line gives the same interleaving") {
    const CliResult r = run_cli({"emulate", "--kernel", "v2", "--config", "small", "--schedule", "pct", "--seed", "3"});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "VERDICT: PASS"));
    const std::string replay = line_after(r.out, "replay: monokda ");
    REQUIRE(!replay.empty());
    const CliResult again = run_cli_line(replay);
    CHECK(again.code == 0);
    CHECK(line_after(again.out, "run: ").substr(0, 40) == line_after(r.out, "run: ").substr(0, 40));
    const CliResult sweep = run_cli({"emulate", "--kernel", "v2", "--config", "small", "--sweep", "20"});
    CHECK(sweep.code == 0);
    CHECK(contains(sweep.out, "20 schedules"));
    CHECK(contains(sweep.out, "PASS 20"));
}

TEST_CASE("emulate --kernel v2: a fault exits 1 with its detector, off it is not that detector's") {
    const CliResult r = run_cli({"emulate", "--kernel", "v2", "--config", "small", "--inject", "recv_slot_reused"});
    INFO(r.out);
    CHECK(r.code == 1);
    CHECK(contains(r.out, "VERDICT: REUSE_BEFORE_FREE\ncaught by: recv_slot_free ("));
    CHECK(contains(r.out, "last events:\n[t="));
    const CliResult off = run_cli({"emulate", "--kernel", "v2", "--config", "small", "--inject", "recv_slot_reused",
                                   "--detectors-off", "recv_slot_free"});
    CHECK(!contains(off.out, "caught by: recv_slot_free"));
    CHECK(contains(off.out, "replay: monokda emulate --kernel v2 --config small"));
    CHECK(contains(off.out, "--detectors-off recv_slot_free"));
}

TEST_CASE("emulate and plan refuse what kernel v2 does not take, naming it, with exit 2") {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"emulate", "--kernel", "v2", "--config", "small", "--amd"},
             {"emulate", "--kernel", "v2", "--config", "small", "--steps", "2"},
             {"emulate", "--kernel", "v2", "--config", "small", "--schedule", "delay:kda"},
             {"emulate", "--kernel", "v2", "--config", "small", "--inject", "missing_xrdy"},
             {"emulate", "--config", "small", "--inject", "ring_refill_early"},
             {"emulate", "--kernel", "v3"},
             {"plan", "--kernel", "v2", "--blocks", "4", "-o", "never.json"},
             {"plan", "--kernel", "v9", "-o", "never.json"}}) {
        std::string line;
        for (const auto& a : args) line += a + " ";
        CAPTURE(line);
        const CliResult r = run_cli(args);
        CHECK(r.code == 2);
        CHECK(contains(r.out, "error: "));
    }
    CHECK(!std::filesystem::exists("never.json"));
    // a shape whose memory does not fit one launch: exit 2, the CTA and its bytes named, nothing written
    const CliResult big = run_cli({"plan", "--kernel", "v2", "--tail", "--R", "8", "--L", "8", "-o", "never.json"});
    CHECK(big.code == 2);
    CHECK(contains(big.out, "R 8 x L 8 with the tail does not fit one launch: CTA 0 needs 310896 bytes of shared memory, over 232448"));
    CHECK(!std::filesystem::exists("never.json"));
    const CliResult emu = run_cli({"emulate", "--kernel", "v2", "--tail", "--R", "8", "--L", "8"});  // refused the same way
    CHECK(emu.code == 2);
    CHECK(contains(emu.out, "R 8 x L 8 with the tail does not fit one launch: CTA 0 needs 310896 bytes"));
}

TEST_CASE("plan --kernel v2 writes the plan's JSON: its clusters, units, buffers and every role's steps") {
    TempDir dir("v2plan");
    const std::string file = (dir.path / "v2.json").string();
    const CliResult r = run_cli({"plan", "--kernel", "v2", "--config", "small", "-o", file});
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "2 clusters of 8 (16 CTAs), 6 units"));
    std::ifstream in(file);
    const nlohmann::json j = nlohmann::json::parse(in);
    CHECK(j["format"] == "monokda-plan-v2");
    CHECK(j["ctas"].size() == 16);
    CHECK(j["cluster_barriers"].size() == 4);
    CHECK(j["ctas"][0]["roles"][1]["role"] == "CTA 0 (cluster 0 rank 0) reducer");
}
