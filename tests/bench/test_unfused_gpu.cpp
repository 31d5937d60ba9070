// On the GPU: the unfused six-kernel chain (the benchmark's baseline) agrees with the reference
// stage by stage, and the check fires on every kind of planted error.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "core/version.hpp"
#include "kernels/kda_pre.hpp"
#include "tests/cli/cli_run.hpp"

namespace {

// ctest maps exit code 77 to "skipped": no device, no test
void require_gpu() {
    static const monokda::gpu::DeviceInfo d = monokda::gpu::probe();
    if (!d.present) {
        std::cout << "SKIPPED: no GPU for the unfused chain: " << d.why << "\n";
        std::exit(77);
    }
}

int run(const std::string& args) {
    const monokda::test::CliResult r = monokda::test::run_cli_line(args);
    MESSAGE(r.out.substr(r.out.size() > 3000 ? r.out.size() - 3000 : 0));
    return r.code;
}

}  // namespace

TEST_CASE("unfused chain matches the reference on the default cases; the report names the version that wrote it") {
    require_gpu();
    const monokda::test::TempDir t("unfused_check");
    CHECK(run("bench --check -o " + monokda::test::shell_quote(t / "check.md")) == 0);
    std::ifstream f(t / "check.md");
    const std::string md((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(md.find("- written by: " + monokda::version_line() + "\n") != std::string::npos);
}

TEST_CASE("the check fires on planted errors") {
    require_gpu();
    for (const char* t : {"x", "proj", "prefix_out", "conv_state", "o", "core_out", "ssm_state"}) {
        CAPTURE(t);
        CHECK(run(std::string("bench --check --R 2 --L 4 --plant ") + t) == 1);
    }
    CHECK(run("bench --check --plant nonsense") == 2);
}
