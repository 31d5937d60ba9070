// On the GPU: the unfused six-kernel chain (the benchmark's baseline) agrees with the reference
// stage by stage, and the check fires on every kind of planted error.
#include <doctest/doctest.h>

#include <string>

#include "tests/cli/cli_run.hpp"

namespace {

int run(const std::string& args) {
    const monokda::test::CliResult r = monokda::test::run_cli_line(args);
    MESSAGE(r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0));
    return r.code;
}

}  // namespace

TEST_CASE("unfused chain matches the reference on the default cases") {
    CHECK(run("bench --check") == 0);
}

TEST_CASE("the check fires on planted errors") {
    for (const char* t : {"x", "proj", "prefix_out", "conv_state", "o", "core_out", "ssm_state"}) {
        CAPTURE(t);
        CHECK(run(std::string("bench --check --R 2 --L 4 --plant ") + t) == 1);
    }
    CHECK(run("bench --check --plant nonsense") == 2);
}
