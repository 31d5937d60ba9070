// The fixture generator draws its large tensors in parallel blocks; a seed must still name the same
// values as the sequential generator did. Digests recorded from the sequential generator (commit
// 762017c); the k3 one is checked in test_k3.cpp, where that fixture is built anyway.
#include <doctest/doctest.h>

#include "core/fixture_gen.hpp"
#include "emu_util.hpp"

using namespace monokda;

TEST_CASE("a seed names the same fixture as the sequential generator") {
    struct Case { int R, L, nb; bool bw; ConvLayout lay; int nulls; uint64_t seed; const char* digest; };
    const Case cases[] = {
        {2, 4, 4, false, ConvLayout::sd, 0, 1, "4c9554b1ca1707dc"},
        {2, 4, 4, false, ConvLayout::sd, 0, 2, "d4176403fc1d99bf"},
        {3, 3, 7, true, ConvLayout::ds, 1, 9, "b9c3492ef9e72b18"},
    };
    for (const Case& k : cases) {
        Config c = Config::preset("small");
        c.R = k.R; c.L = k.L; c.nb = k.nb; c.block_write = k.bw; c.conv_layout = k.lay; c.seed = k.seed;
        FixtureOptions fo;
        fo.null_requests = k.nulls;
        CHECK(emu::inputs_digest(make_fixture(c, fo)) == k.digest);
    }
}
