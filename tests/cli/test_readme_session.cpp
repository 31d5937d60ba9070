// The README's "typical session", run as written: every command of it exits 0.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "tests/cli/cli_run.hpp"

using namespace monokda::test;

TEST_SUITE("cli") {
TEST_CASE("the README's typical session passes as written") {
    std::ifstream f(std::string(MONOKDA_SOURCE_DIR) + "/README.md");
    REQUIRE(f);
    std::vector<std::string> session;
    bool in = false;
    for (std::string line; std::getline(f, line);) {
        if (line == "A typical session:") { in = true; continue; }
        if (!in) continue;
        if (line.empty() && !session.empty()) break;
        if (line.rfind("    monokda ", 0) == 0) session.push_back(line.substr(12));
    }
    REQUIRE(session.size() >= 4);
    bool verifies = false;
    TempDir t("readme");
    for (const std::string& cmd : session) {
        CAPTURE(cmd);
        verifies = verifies || cmd.rfind("verify ", 0) == 0;
        // run in the temporary folder: the session's file names are relative
        const CliResult r = run_cli_line(cmd, MONOKDA_BIN, t.path.string());
        INFO(r.out);
        CHECK(r.code == 0);
    }
    CHECK(verifies);
}
}
