// Cross-CTA hand-offs of kda_pre (SPEC §4): mailbox entries in device memory, tagged with the
// launch's epoch so nothing is reset between launches. Two kinds (core/plan.hpp, is_tagged):
//   tagged pairs: value and tag in one 64-bit word; the consumer polls the data itself.
//   flags: one 32-bit epoch word, released after the data it guards (x, proj, qkv) is written.
// Every poll is bounded: past the launch's timeout it records the error word and gives up, and
// every other poll gives up as soon as it sees the error word, so a broken launch ends.
#pragma once
#include "core/plan.hpp"
#include "kernels/kda_args.hpp"
#include "kernels/kda_stress.hpp"
#include "kernels/vendor/gpu.hpp"

namespace monokda::gpu {

// The threads that run one instruction stream and their barrier: the whole CTA (bar 0), or on
// NVIDIA one of the halves that run a CTA's kda tasks side by side (named barrier 1 + half).
struct Team {
    int tid, n, bar;
    __device__ __forceinline__ void sync() const {
#if MONOKDA_NVIDIA
        if (bar != 0) return team_bar(bar, n);
#endif
        __syncthreads();
    }
    __device__ __forceinline__ bool sync_or(bool p) const {
#if MONOKDA_NVIDIA
        if (bar != 0) return team_bar_or(bar, n, p);
#endif
        return __syncthreads_or(p);
    }
};
__device__ __forceinline__ Team cta_team() { return {int(threadIdx.x), kThreads, 0}; }

// The "box" an error record names when a gemv pass gave up waiting for its own weight copy (entry:
// the step), not for a mailbox.
constexpr uint32_t kBoxWeightCopy = uint32_t(kMailboxCount);
constexpr uint32_t kBoxXCopy = kBoxWeightCopy + 1;  // the same for its copy of x (entry: the step)

// Per-CTA control block (static shared memory).
struct Ctl {
    uint32_t tag;                          // this launch's epoch
    uint32_t tagged_off[kMailboxCount];    // first word of each tagged box in KdaArgs::tagged
    uint32_t flag_off[kMailboxCount];      // first word of each flagged box in KdaArgs::flags
    uint32_t words[kMailboxCount];         // words per entry
    int32_t instr;                         // instruction being executed (for the error record)
    int32_t prefetched;                    // gemv group whose first weight slices are in flight, or -1
    int32_t x_seen;                        // XRDY entries 0..x_seen-1 seen ready by this CTA's gemv pass
    uint32_t proj_seen[(k3::kGroups + 31) / 32];  // PROJ groups this CTA has seen released (bitmask)
};

__device__ __forceinline__ void record_error(const KdaArgs& a, const Ctl& c, uint32_t code, uint32_t box,
                                             uint32_t entry, uint32_t d0, uint32_t d1) {
    if (atomicCAS(&a.error->code, 0u, code) == 0u) {
        a.error->cta = blockIdx.x;
        a.error->instr = uint32_t(c.instr);
        a.error->box = box;
        a.error->entry = entry;
        a.error->detail0 = d0;
        a.error->detail1 = d1;
        a.error->epoch = c.tag;
        __threadfence();
    }
}

// Spins on one mailbox word until ready(word) or the launch gives up.
template <class Load, class Ready>
__device__ bool spin(const KdaArgs& a, const Ctl& c, Load load, Ready ready, uint32_t box, uint32_t entry) {
    const uint64_t t0 = now_ns();
    for (uint32_t it = 1;; ++it) {
        // 100 ns between reads however long the wait: a back-off lets the read that sees a word
        // land well after the word did, on the path of every hand-off, and the extra flag reads
        // while the weight streams cost nothing measurable (docs/decisions/0012-poll-pause.md)
        pause(100u);
        if (ready(load())) return true;
        if ((it & 15) == 0) {
            if (ld_relaxed32(&a.error->code) != 0) return false;
            if (now_ns() - t0 > a.poll_timeout_ns) {
                record_error(a, c, kErrTimeout, box, entry, 0, 0);
                return false;
            }
        }
    }
}

// Tagged box `box`, n words at word offsets word_of(0..n-1) from the box's start (entry
// word_of(w) / words-per-entry): waits until each carries this launch's tag and copies the values
// to out (shared). Team-uniform result.
template <class WordOf>
__device__ bool wait_tagged_at(const KdaArgs& a, const Ctl& c, Mailbox box, int n, WordOf word_of, float* out,
                               Team t = cta_team()) {
    const int wpe = int(c.words[int(box)]);
    const uint64_t* words = a.tagged + c.tagged_off[int(box)];
    bool ok = true;
    for (int w = t.tid; w < n && ok; w += t.n) {
        const uint64_t* p = words + word_of(w);
        uint64_t v = ld_relaxed(p);
        if (uint32_t(v >> 32) != c.tag)
            ok = spin(a, c, [&] { return v = ld_relaxed(p); }, [&](uint64_t x) { return uint32_t(x >> 32) == c.tag; },
                      uint32_t(box), uint32_t(word_of(w) / wpe));
        out[w] = f32_from_bits(uint32_t(v));
    }
    return !t.sync_or(!ok);
}

// Tagged box `box`, entries first.. (each c.words[box] words), n words in all.
__device__ __forceinline__ bool wait_tagged(const KdaArgs& a, const Ctl& c, Mailbox box, int first_entry, int n,
                                            float* out, Team t = cta_team()) {
    const int first_word = first_entry * int(c.words[int(box)]);
    return wait_tagged_at(a, c, box, n, [&](int w) { return first_word + w; }, out, t);
}

// One thread stores word `word` of tagged entry `entry`.
__device__ __forceinline__ void put_tagged(const KdaArgs& a, const Ctl& c, Mailbox box, int entry, int word,
                                           float value) {
    uint64_t* p = a.tagged + c.tagged_off[int(box)] + size_t(entry) * c.words[int(box)] + word;
    stress_before_store(a, c.tag, uint32_t(box), uint32_t(entry) * 64u + uint32_t(word));
    st_relaxed(p, (uint64_t(c.tag) << 32) | f32_bits(value));
}

// Waits for n flags of `box`, flag i at entry entry_of(i); thread i polls flag i. After it, every
// thread may read what the flags guard. Team-uniform result.
template <class EntryOf>
__device__ bool wait_flags(const KdaArgs& a, const Ctl& c, Mailbox box, int n, EntryOf entry_of, Team t = cta_team()) {
    bool ok = true;
    for (int i = t.tid; i < n && ok; i += t.n) {
        const int e = entry_of(i);
        const uint32_t* f = a.flags + c.flag_off[int(box)] + e;
        if (flag_poll_load(a, f) != c.tag)
            ok = spin(a, c, [&] { return flag_poll_load(a, f); }, [&](uint32_t x) { return x == c.tag; }, uint32_t(box),
                      uint32_t(e));
        fence_after_cta_acquire();
    }
    return !t.sync_or(!ok);
}

// PROJ groups group_of(0..n-1). A flag, once released, stays so for the launch: groups this CTA
// has seen released are not polled again, and after a wait one sweep (a thread a flag, acquire)
// records every group released by then, so later kda tasks on this CTA skip most polls.
template <class GroupOf>
__device__ bool wait_proj(const KdaArgs& a, Ctl& c, int n, GroupOf group_of, Team t = cta_team()) {
    bool all = true;
    for (int i = 0; i < n; ++i) {
        const int g = group_of(i);
        all = all && ((c.proj_seen[g >> 5] >> (g & 31)) & 1u);
    }
    if (all) return true;  // the same answer in every thread: the bitmask changes only below, between barriers
    if (!wait_flags(a, c, Mailbox::PROJ, n, group_of, t)) return false;
    for (int g = t.tid; g < k3::kGroups; g += t.n)
        if (ld_acquire(a.flags + c.flag_off[int(Mailbox::PROJ)] + g) == c.tag)
            atomicOr(&c.proj_seen[g >> 5], 1u << (g & 31));
    fence_after_cta_acquire();
    t.sync();
    return true;
}

// Every thread calls it after writing its share of what the flag guards.
__device__ __forceinline__ void publish_flag(const KdaArgs& a, const Ctl& c, Mailbox box, int entry,
                                             Team t = cta_team()) {
    fence_before_cta_release();
    t.sync();
    if (t.tid == 0) {
        stress_before_store(a, c.tag, uint32_t(box), uint32_t(entry));
        st_release(a.flags + c.flag_off[int(box)] + entry, c.tag);
    }
}

}  // namespace monokda::gpu
