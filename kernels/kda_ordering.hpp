// The memory-ordering contract of kda_pre's hand-offs (SPEC §4, core/plan.hpp's two mailbox
// kinds) in one place: what every poll, flag store and copy-ring wait of the kernel must compile to.
// Plain C++ with no vendor header: the kernel takes its copy ring's depth from here, and the PTX
// ordering check (kernels/ordering/, docs/kernel.md "Memory ordering") takes its rules from here.
#pragma once

namespace monokda::ordering {

// The exact gemv body's ring of weight slices through cp.async (kernels/kda_gemv.hpp): slices in
// flight, one commit group each. Before slice j is read, every group but the newest kStages − 1 must
// have landed (cp.async.wait_group kStages − 1); a wait for kStages would leave slice j in flight.
constexpr int kGemvRingStagesNvidia = 16;
constexpr int kGemvRingStagesAmd = 8;  // 64 KB of LDS (not PTX: outside the check)
// The pending-group counts a cp.async.wait_group of the sm_90a kernel may name: the ring's steady
// state, and 0 (everything landed: the end of a pass, a kda task's one group).
constexpr int kCpAsyncWaits[] = {0, kGemvRingStagesNvidia - 1};

// How each memory a hand-off goes through must be accessed (PTX semantics and scope; "volatile" is
// relaxed at system scope). The memories are KdaArgs fields; the tensors a flag guards are the plan's
// HandOff list (x, proj, qkv, g1).
struct MemoryRule {
    const char* memory;
    const char* reads;   // space-separated: the semantics a read may have
    const char* writes;  // the same for a store or atomic
    int bits;            // 0: any width; else the one access width (a tagged pair: value and tag together)
    const char* why;
};
constexpr MemoryRule kMemoryRules[] = {
    // a flag guards data the whole CTA wrote: every thread writes, the CTA barrier, one release
    // store; the reader's acquire load, then the barrier, then every thread reads
    {"flags", "acquire.gpu acquire.sys", "release.gpu release.sys acq_rel.gpu acq_rel.sys", 0,
     "a flag orders the data it guards: acquire to read it, release (after the CTA barrier) to set it"},
    // value and tag in one 64-bit word: a single-copy-atomic access is the whole hand-off
    {"tagged", "relaxed.gpu relaxed.sys acquire.gpu acquire.sys volatile",
     "relaxed.gpu relaxed.sys release.gpu release.sys volatile", 64,
     "a tagged pair is its own hand-off: one 64-bit access at device scope, never a weak or split one"},
};

// A relaxed read of a flag that its caller re-reads with acquire before reading what it guards (a
// cheap wait for the flag to turn): the vendor layer's ld_flag_peek marks its PTX with this comment,
// and the check accepts a relaxed flag read only so marked, inside a loop that re-reads the flags
// with acquire on its next turn.
#define MONOKDA_PEEK_MARKER "monokda:peek"
constexpr const char* kPeekMarker = MONOKDA_PEEK_MARKER;

}  // namespace monokda::ordering
