// The floor's byte count, term by term, against numbers worked out by hand from SPEC §1/§2.
#include <doctest/doctest.h>

#include "bench/step_floor.hpp"

using namespace monokda;
using namespace monokda::bench;

TEST_CASE("floor bytes of the production step R=2 L=4 nb=4") {
    Config c = Config::preset("k3");
    c.R = 2;
    c.L = 4;
    c.nb = 4;
    const FloorBytes f = step_floor_bytes(c);
    CHECK(f.in_proj_w == 90144768);   // 6288 · 7168 · 2
    CHECK(f.f_b_w == 393216);         // 1536 · 128 · 2
    CHECK(f.small_weights == 123184); // 3·7168·2 + 4608·4·4 + 12·4 + 1536·4 + 128·2
    CHECK(f.sources == 688128);       // 8 rows · (prefix, delta, 4 bank rows) · 7168 · 2
    CHECK(f.ssm_read == 1572864);     // 2 requests · 12·128·128·4
    CHECK(f.ssm_write == 6291456);    // 8 tokens · 12·128·128·4
    CHECK(f.conv_read == 55296);      // 2 · 3 entries · 4608 · 2
    CHECK(f.conv_write == 110592);    // 2 · 6 entries · 4608 · 2
    CHECK(f.outputs == 139264);       // prefix_out 8·7168·2 + core_out 8·1536·2
    CHECK(f.indices == 40);
    CHECK(f.total() == 99518808);
    int64_t sum = 0;
    for (const auto& [name, b] : f.terms()) sum += b;
    CHECK(sum == f.total());
}

TEST_CASE("floor bytes grow with the states and the block row: R=8 L=8 nb=4 block-write") {
    Config c = Config::preset("k3");
    c.R = 8;
    c.L = 8;
    c.nb = 4;
    c.block_write = true;
    const FloorBytes f = step_floor_bytes(c);
    CHECK(f.ssm_write == 64 * 786432);
    CHECK(f.outputs == 64 * 7168 * 2 * 2 + 64 * 1536 * 2);  // prefix_out, block row, core_out
    CHECK(f.total() == 155779664);
}

TEST_CASE("unfused stage bytes count every hand-off on both sides") {
    Config c = Config::preset("k3");
    c.R = 1;
    c.L = 1;
    c.nb = 1;
    const StageBytes b = unfused_stage_bytes(c);
    CHECK(b.stage[0] == 3 * 7168 * 2 + 3 * 7168 * 2 + 2 * 7168 * 2);  // prefix, delta, 1 bank row; gains; prefix_out, x
    CHECK(b.stage[1] == 90144768 + 7168 * 2 + 6288 * 2);               // weight, x, proj
    CHECK(b.stage[5] == 3 * 1536 * 2 + 128 * 2);                       // o, g2, core_out, o_norm_w
}
