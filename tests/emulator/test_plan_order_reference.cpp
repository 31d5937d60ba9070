// `reference --order` takes every order `emulate` writes into its output's metadata
// (emulate_plan_order), and the reference in that order is the emulator's output bit for bit:
// the built-in plans of both presets, other launch shapes, and a plan file whose sums use every
// kind of order (sequential, pairwise, split:P, shuffle:SEED).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/safetensors.hpp"
#include "tests/cli/cli_run.hpp"

using namespace monokda;
using namespace monokda::test;
using nlohmann::json;

namespace {

const char* kAll = "prefix_out,blocks,x,proj,g1,qkv,o,core_out,conv_state,ssm_state";

// emulate FIXTURE with `extra`; then reference --order with the order it wrote: the same bits.
// Returns the order.
std::string plan_order_round_trip(const TempDir& t, const std::string& fixture, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"emulate", fixture, "--no-envelope", "-o", t / "emu.safetensors"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult e = run_cli(args);
    REQUIRE_MESSAGE(e.code == 0, e.out);
    const std::string order = read_safetensors(t / "emu.safetensors").metadata.at("emulate_plan_order");
    CAPTURE(order);
    const CliResult r = run_cli({"reference", fixture, "--order", order, "-o", t / "ref.safetensors"});
    REQUIRE_MESSAGE(r.code == 0, r.out);
    CHECK(read_safetensors(t / "ref.safetensors").metadata.at("reference_order") == order);
    const CliResult same = run_cli({"compare", t / "ref.safetensors", t / "emu.safetensors", "--exact", kAll});
    INFO(same.out);
    CHECK(same.code == 0);
    return order;
}

std::string fixture(const TempDir& t, const std::string& name, const std::vector<std::string>& opts) {
    std::vector<std::string> args = {"fixture"};
    args.insert(args.end(), opts.begin(), opts.end());
    args.insert(args.end(), {"-o", t / name});
    const CliResult r = run_cli(args);
    REQUIRE_MESSAGE(r.code == 0, r.out);
    return t / name;
}

}  // namespace

TEST_SUITE("emulator") {

TEST_CASE("reference --order takes every order emulate writes, and gives the emulator's bits") {
    TempDir t("plan_order");
    std::set<std::string> orders;
    const std::string small = fixture(t, "small.safetensors", {"--config", "small", "--R", "2", "--L", "4", "--block-write"});
    orders.insert(plan_order_round_trip(t, small, {}));
    orders.insert(plan_order_round_trip(t, small, {"--blocks", "20", "--gemv-bands", "spec", "--kda-teams", "2"}));
    const std::string k3 = fixture(t, "k3.safetensors", {"--config", "k3", "--R", "1", "--L", "2", "--nb", "1"});
    orders.insert(plan_order_round_trip(t, k3, {}));

    // a plan file that declares its own order for the sums its instructions do not split
    REQUIRE(run_cli({"plan", "--config", "small", "--R", "2", "--L", "4", "-o", t / "plan.json"}).code == 0);
    json p;
    std::ifstream(t / "plan.json") >> p;
    json& ord = p.at("reduction_order");
    ord["softmax_den"] = "pairwise", ord["f_b"] = "sequential", ord["l2_q"] = "split:4", ord["rec_kS"] = "shuffle:3";
    std::ofstream(t / "own.json") << p.dump(1);
    const std::string plain = fixture(t, "plain.safetensors", {"--config", "small", "--R", "2", "--L", "4"});  // as the plan's config
    const std::string own = plan_order_round_trip(t, plain, {"--plan", t / "own.json"});
    CHECK(own.find("softmax_den=pairwise") != std::string::npos);
    CHECK(own.find("f_b=sequential") != std::string::npos);
    CHECK(own.find("l2_q=split:4") != std::string::npos);
    CHECK(own.find("rec_kS=shuffle:3") != std::string::npos);
    orders.insert(own);
    CHECK(orders.size() == 3);  // the two presets' plans (the launch shape keeps the sums) and the file's
}
}
