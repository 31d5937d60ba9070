// Kernel v2's hand-off to its tail across clusters, as the in_proj probe's tailhop mode runs it
// (docs/kernel-v2.md "The tail"): a head's rows come from every cluster, so the owners publish each
// proj row they round as tagged words in global memory (the bf16 value and the step's 16-bit tag,
// one word, single-copy atomic), stored relaxed with no fence and no flag, and the cluster that is to
// run head h's tasks polls the words it needs until each carries the step's tag. Rank t of head h's
// cluster takes what its 16-row task needs: f_a and beta (the gate), q and k of the head, v's rows
// 16t .. 16t + 15 (warp 2), and g's same rows (warp 3). A 16-bit tag is enough because every step
// writes every word: a word holds this step's tag or the step before's, never an older one, and the
// launcher's tags skip 0, which the words hold before the first step.
#pragma once
#include "kernels/vendor/gpu.hpp"

#include "bench/probes/probe_wait.hpp"
#include "bench/probes/v2_inproj_host.hpp"
#include "bench/probes/v2_tail_plan.hpp"  // the placement below, held to the plan's

#include <cstdint>

namespace monokda::probe::v2 {

using namespace monokda::gpu;

constexpr int kTailHeads = kProductionShape.H, kHeadRows = kProductionShape.K, kTaskRows = 16;
constexpr int kRowQ = 0, kRowK = kProductionShape.E(), kRowV = 2 * kProductionShape.E(), kRowG = 3 * kProductionShape.E();
constexpr int kRowFa = 4 * kProductionShape.E(), kRowBeta = kRowFa + kProductionShape.F;
static_assert(kRowBeta % 4 == 0 && kHeadRows % 4 == 0, "a group's rows start on a 16-byte piece");

// The two polling warps' named barrier (tail 5): 0 the CTA's, 1 the consumers', 2-5 the tile pairs', 6 the seam's.
__device__ __forceinline__ void tail_bar() { asm volatile("bar.sync 7, 64;" ::: "memory"); }

__device__ __forceinline__ uint32_t tagged_word(uint32_t bf16_bits, uint32_t tag) { return bf16_bits | tag << 16; }

// An owner's 8 rounded rows of column `col` (bf16 pairs, low half first), published as 8 tagged words.
__device__ __forceinline__ void publish_tagged(uint32_t* tagged, int col, int row0, const uint32_t (&packed)[4], uint32_t tag) {
    uint32_t* at = tagged + size_t(col) * N + row0;
    uint32_t w[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) w[r] = tagged_word(r % 2 ? packed[r / 2] >> 16 : packed[r / 2] & 0xffffu, tag);
    st_relaxed128(at, make_uint4(w[0], w[1], w[2], w[3]));
    st_relaxed128(at + 4, make_uint4(w[4], w[5], w[6], w[7]));
}

// Up to five row ranges of proj (each 4-row aligned), for every column s < S.
struct TagRows {
    int row0[5], rows[5], n;
    __device__ int pieces() const {
        int p = 0;
        for (int r = 0; r < n; ++r) p += rows[r] / 4;
        return p;
    }
    __device__ int row(int p) const {  // piece p of a column: its first row
        for (int r = 0; r < n; ++r) {
            if (p < rows[r] / 4) return row0[r] + 4 * p;
            p -= rows[r] / 4;
        }
        return -1;
    }
};

// What await_tagged does with a piece once it is in: nothing (got(column, piece, words) otherwise).
struct NoGot {
    __device__ void operator()(int, int, uint4) const {}
};

// `lanes` threads (a warp, or a team of warps, t its thread) wait until every word of the ranges
// carries `tag`: each thread holds up to Batch 16-byte pieces, loads all of them that are not yet
// in, and again until all are (one load round a poll, not one a piece), sleeping sleep_ns between
// rounds; each piece is handed to `got` as it comes in. Bounded: probe::spin traps after 200 ms. The
// caller syncs the team after.
template <int Batch, typename Got = NoGot>
__device__ __forceinline__ void await_tagged(const uint32_t* tagged, const TagRows& t, int S, uint32_t tag, int th, int lanes,
                                             uint32_t sleep_ns, const Got& got = Got{}) {
    const int pieces = t.pieces(), total = pieces * S;
    auto in = [&](uint4 v) { return (v.x >> 16) == tag && (v.y >> 16) == tag && (v.z >> 16) == tag && (v.w >> 16) == tag; };
    for (int first = 0; first < total; first += lanes * Batch) {
        const uint32_t* at[Batch];
        uint32_t pending = 0;
#pragma unroll
        for (int j = 0; j < Batch; ++j) {
            const int i = first + j * lanes + th;
            at[j] = tagged + size_t(i / pieces) * N + t.row(i % pieces);
            if (i < total) pending |= 1u << j;
        }
        probe::spin([&] {
            uint4 v[Batch];  // every load of the round issued before the first is looked at
#pragma unroll
            for (int j = 0; j < Batch; ++j)
                if (pending >> j & 1u) v[j] = ld_relaxed128(at[j]);
#pragma unroll
            for (int j = 0; j < Batch; ++j)
                if ((pending >> j & 1u) && in(v[j])) {
                    pending &= ~(1u << j);
                    const int i = first + j * lanes + th;
                    got(i / pieces, i % pieces, v[j]);
                }
            if (pending && sleep_ns) __nanosleep(sleep_ns);  // fewer rounds beside the stream
            return pending == 0;
        });
    }
}

// The shared poll (tail 6): rank t polls only its share of head h's q and k and of f_a (rows 16t ..
// 16t + 15 of each: kSharePieces pieces a column, the first of its poll's ranges) and forwards it,
// as bf16, to the 7 other ranks, whose buffer holds [rank][column][kShareRows]: q's 16, k's, f_a's.
constexpr int kShareRows = 3 * kTaskRows, kSharePieces = kShareRows / 4, kShareMaxS = 16;
static_assert(kRanks * kTaskRows == kHeadRows && kRanks * kTaskRows == kProductionShape.F, "the 8 shares tile a head and f_a");
// A head's assembled rows, for the check: q's 128, k's, f_a's, a column.
constexpr int kAssembledRows = kRanks * kShareRows;
__host__ __device__ constexpr bool shared_poll(int tail) { return tail == 6 || tail == 7; }  // 7: in one batch (S <= 16)
constexpr int kShareBatch = 10;  // tail 7's pieces a lane: S = 16's 19 a column in one batch
static_assert(kShareBatch * 32 >= (kSharePieces + 3 + 4) * kShareMaxS, "tail 7 polls its pieces in one batch");
__host__ __device__ constexpr int share_offset(int end) { return (end + 15) / 16 * 16; }  // after the layout's end
__host__ __device__ constexpr int share_bytes(int S) { return kRanks * kShareRows * S * 2; }

}  // namespace monokda::probe::v2
