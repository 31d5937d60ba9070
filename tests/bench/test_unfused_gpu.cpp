// On the GPU: the unfused six-kernel chain (the benchmark's baseline) agrees with the reference
// stage by stage, and the check fires on every kind of planted error.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

int run(const std::string& args) {
    const std::string cmd = std::string(MONOKDA_BIN) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    std::string out;
    while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    const int st = pclose(p);
    MESSAGE(out.substr(out.size() > 3000 ? out.size() - 3000 : 0));
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
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
