// Config: presets, validation naming the field, metadata I/O.
#include <doctest/doctest.h>

#include <functional>

#include "core/config.hpp"
#include "core/error.hpp"
#include "tests/bad_input_message.hpp"

using namespace monokda;
using monokda::test::bad_input_message;

TEST_SUITE("core") {

TEST_CASE("presets: k3 is the production rank, small is N = 4HK+F+H padded to 16") {
    Config k3 = Config::preset("k3");
    CHECK(k3.D == 7168);
    CHECK(k3.H == 12);
    CHECK(k3.K == 128);
    CHECK(k3.V == 128);
    CHECK(k3.F == 128);
    CHECK(k3.N == 6288);
    CHECK(k3.C == 4608);
    CHECK(k3.W == 4);
    CHECK(k3.E() == 1536);
    CHECK(k3.eps == 1e-5);
    CHECK(k3.l2_eps == 1e-6);
    CHECK(k3.lower_bound == -5.0);
    Config s = Config::preset("small");
    CHECK(s.D == 256);
    CHECK(s.H == 2);
    CHECK(s.K == 32);
    CHECK(s.F == 16);
    CHECK(s.N == 288);  // 4*64 + 16 + 2 = 274 -> 288
    CHECK(s.C == 192);
    // proj column offsets (SPEC §3 B)
    CHECK(k3.col_g2() == 4608);
    CHECK(k3.col_fa() == 6144);
    CHECK(k3.col_beta() == 6272);
    CHECK(bad_input_message([] { Config::preset("k4"); }).find("unknown config preset 'k4'") != std::string::npos);
}

TEST_CASE("validation names the inconsistent field") {
    struct Case { const char* field; std::function<void(Config&)> spoil; };
    const Case cases[] = {
        {"D", [](Config& c) { c.D = 0; }},
        {"H", [](Config& c) { c.H = -1; }},
        {"K", [](Config& c) { c.K = 0; }},
        {"V", [](Config& c) { c.V = c.K + 1; }},
        {"F", [](Config& c) { c.F = 0; }},
        {"C", [](Config& c) { c.C += 1; }},
        {"N", [](Config& c) { c.N = c.min_N() - 1; }},
        {"W", [](Config& c) { c.W = 1; }},
        {"nb", [](Config& c) { c.nb = 0; }},
        {"nb", [](Config& c) { c.nb = 9; }},
        {"nb", [](Config& c) { c.nb = 8; c.block_write = true; }},
        {"R", [](Config& c) { c.R = 0; }},
        {"L", [](Config& c) { c.L = 0; }},
        {"slots", [](Config& c) { c.slots = 0; }},
        {"eps", [](Config& c) { c.eps = 0; }},
        {"l2_eps", [](Config& c) { c.l2_eps = -1; }},
        {"lower_bound", [](Config& c) { c.lower_bound = 1.0 / 0.0; }},
    };
    for (const Case& k : cases) {
        CAPTURE(k.field);
        Config c = Config::preset("small");
        k.spoil(c);
        const std::string msg = bad_input_message([&] { c.validate(); });
        CHECK_MESSAGE(msg.rfind(std::string("config: ") + k.field + " ", 0) == 0, msg);
    }
    Config ok = Config::preset("small");
    ok.nb = 7;
    ok.block_write = true;
    CHECK_NOTHROW(ok.validate());
}

TEST_CASE("metadata round trip, and values written by other tools") {
    Config c = Config::preset("k3");
    c.nb = 3; c.R = 5; c.L = 2; c.block_write = true; c.conv_layout = ConvLayout::ds; c.slots = 40; c.seed = 99;
    auto md = c.to_metadata();
    for (const char* key : {"D", "H", "K", "V", "F", "N", "C", "W", "nb", "R", "L", "block_write", "conv_layout", "eps",
                            "l2_eps", "lower_bound", "slots", "seed"})
        CHECK(md.count(key) == 1);
    CHECK(md["block_write"] == "1");
    CHECK(md["conv_layout"] == "ds");
    Config back = Config::from_metadata(md);
    CHECK(back.to_metadata() == md);
    CHECK(back.eps == c.eps);
    // another tool's spelling of the same numbers
    md["eps"] = "1e-05";
    md["l2_eps"] = "1e-06";
    md["lower_bound"] = "-5";
    md.erase("seed");  // informational only
    back = Config::from_metadata(md);
    CHECK(back.eps == 1e-5);
    CHECK(back.l2_eps == 1e-6);
    CHECK(back.lower_bound == -5.0);
}

TEST_CASE("bad metadata names the key") {
    const auto good = Config::preset("small").to_metadata();
    struct Case { const char* key; const char* value; const char* needle; };
    const Case cases[] = {
        {"D", nullptr, "missing key 'D'"},
        {"slots", nullptr, "missing key 'slots'"},
        {"H", "two", "'H' is not an integer"},
        {"L", "4.5", "'L' is not an integer"},
        {"R", "99999999999", "'R' is not an integer"},
        {"eps", "tiny", "'eps' is not a number"},
        {"D", " 256", "'D' is not an integer"},  // strtol would take the blank and the sign
        {"D", "+256", "'D' is not an integer"},
        {"R", "\t2", "'R' is not an integer"},
        {"eps", " 1e-5", "'eps' is not a number"},
        {"eps", "+1e-5", "'eps' is not a number"},
        {"block_write", "yes", "'block_write'"},
        {"conv_layout", "sdd", "conv_layout"},
        {"N", "100", "config: N"},
        {"nb", "0", "config: nb"},
    };
    for (const Case& k : cases) {
        CAPTURE(k.key);
        auto md = good;
        if (k.value) md[k.key] = k.value;
        else md.erase(k.key);
        const std::string msg = bad_input_message([&] { Config::from_metadata(md); });
        CHECK_MESSAGE(msg.find(k.needle) != std::string::npos, msg);
    }
}
}
