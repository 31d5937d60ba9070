// Output files: written whole or not at all, through an exclusive temporary that is never a user's
// file or a link's target and that a signal removes; output paths checked before any work.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/atomic_write.hpp"
#include "core/error.hpp"
#include "tests/bad_input_message.hpp"

using namespace monokda;
namespace fs = std::filesystem;

namespace {

struct Folder {
    fs::path path;
    explicit Folder(const std::string& name)
        : path(fs::temp_directory_path() / ("monokda_test_aw_" + name + "_" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~Folder() { fs::remove_all(path); }
    std::string operator/(const std::string& f) const { return (path / f).string(); }
    // the names in the folder, sorted
    std::vector<std::string> names() const {
        std::vector<std::string> n;
        for (const auto& e : fs::directory_iterator(path)) n.push_back(e.path().filename().string());
        std::sort(n.begin(), n.end());
        return n;
    }
};

std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

}  // namespace

TEST_SUITE("core") {

TEST_CASE("the temporary is exclusive: a user's OUT.tmp and a link there are left alone") {
    Folder d("exclusive");
    spit(d / "out.tmp", "a user's file");
    spit(d / "victim", "not to be touched");
    fs::create_symlink(d / "victim", d / "out.safetensors.tmp");
    write_file_atomic(d / "out.safetensors", "new bytes");
    CHECK(slurp(d / "out.safetensors") == "new bytes");
    CHECK(slurp(d / "out.tmp") == "a user's file");
    CHECK(slurp(d / "victim") == "not to be touched");
    CHECK(fs::is_symlink(d / "out.safetensors.tmp"));
    CHECK(d.names() == std::vector<std::string>{"out.safetensors", "out.safetensors.tmp", "out.tmp", "victim"});
    // an existing output that is a link: the link is replaced by the file, its target untouched
    fs::create_symlink(d / "victim", d / "linked");
    write_file_atomic(d / "linked", "fresh");
    CHECK_FALSE(fs::is_symlink(d / "linked"));
    CHECK(slurp(d / "linked") == "fresh");
    CHECK(slurp(d / "victim") == "not to be touched");
}

TEST_CASE("SIGINT and SIGTERM remove a pending temporary") {
    for (int sig : {SIGINT, SIGTERM}) {
        CAPTURE(sig);
        Folder d("signal");
        const pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            ::signal(sig, SIG_DFL);  // as in the CLI (the test runner has handlers of its own)
            TempFile t(d / "out.safetensors");
            t.write("half", 4);
            ::kill(::getpid(), sig);
            ::_exit(0);  // not reached: the default action ends the process after the clean-up
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == sig);
        CHECK(d.names().empty());
    }
}

TEST_CASE("an output set is written whole: a failing member leaves no member behind") {
    Folder d("set");
    OutputSet set;
    set.add(d / "a.json", std::string("a"));
    set.add(d / "missing/b.svg", std::string("b"));
    CHECK_THROWS_AS(set.commit(), BadInput);
    CHECK(d.names().empty());
    OutputSet ok;
    ok.add(d / "a.json", std::string("a"));
    ok.add(d / "b.svg", std::vector<uint8_t>{'b'});
    ok.commit();
    CHECK(d.names() == std::vector<std::string>{"a.json", "b.svg"});
}

TEST_CASE("output paths are checked before any work: not an input, not each other, writable") {
    Folder d("check");
    spit(d / "in.safetensors", "x");
    fs::create_hard_link(d / "in.safetensors", d / "hard");
    fs::create_symlink(d / "in.safetensors", d / "soft");
    fs::create_directories(d / "sub");
    const std::vector<NamedPath> in = {{"FIXTURE", d / "in.safetensors"}};
    auto why = [&](const std::vector<NamedPath>& outs) {
        return test::bad_input_message([&] { check_outputs(outs, in); });
    };
    CHECK(why({{"-o", d / "in.safetensors"}}).find("-o '" + (d / "in.safetensors") + "' is the same file as FIXTURE") == 0);
    CHECK(why({{"-o", d / "hard"}}).find("is the same file as FIXTURE") != std::string::npos);
    CHECK(why({{"-o", d / "soft"}}).find("is the same file as FIXTURE") != std::string::npos);
    CHECK(why({{"-o", d / "sub/../in.safetensors"}}).find("is the same file as FIXTURE") != std::string::npos);
    CHECK(why({{"-o", d / "x"}, {"--timeline", d / "sub/../x"}}).find("--timeline '" + (d / "sub/../x") + "' and -o") == 0);
    CHECK(why({{"-o", d / "sub"}}).find("is a directory") != std::string::npos);
    CHECK(why({{"-o", "/dev/null"}}).find("not a regular file") != std::string::npos);
    CHECK(why({{"-o", d / "no/such/out"}}).find("cannot write -o") == 0);
    CHECK(why({{"-o", d / "new.safetensors"}, {"--timeline", ""}}) == "");  // an empty path: not given

    CHECK(test::bad_input_message([&] { check_output_dir("--out", d / "a/b/c"); }) == "");
    CHECK_FALSE(fs::exists(d / "a"));  // checked, not created
    CHECK(test::bad_input_message([&] { check_output_dir("--out", d / "in.safetensors/f"); }).find("is not a folder") !=
          std::string::npos);
}
}
