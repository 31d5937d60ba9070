// The emulator's verdicts and the detectors behind them: every check that can end a run, by name,
// with the verdict it gives and the planted fault that it alone catches (docs/emulator.md,
// "Detectors"). A run switches detectors off one by one (MachineOptions::detectors,
// `monokda emulate --detectors-off`), so a test can show that a fault is caught by the detector
// meant for it and by no other: with that detector off the fault passes, or ends as another verdict.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "emulator/faults.hpp"

namespace monokda::emu {

// The closed set of outcomes, printed in capitals.
enum class Verdict {
    PASS,
    DEADLOCK,           // circular wait: through mailboxes, or through residency (a needed CTA never gets a place);
                        // kernel v2: no role can step and nothing is in flight
    LIVELOCK,           // CTAs spin forever on a hand-off nothing will deliver (lost store, wrong epoch tag)
    STALE_READ,         // a CTA consumed a value stored in an earlier step (or never stored)
    VISIBILITY_FAULT,   // a CTA read data not ordered after its store by a release/acquire chain
    WRITE_CONFLICT,     // two CTAs stored the same word in one step
    WRONG_SPLIT,        // a reduction combined other partials than the plan's split, or in another order
    POLL_BEHIND_LOADS,  // AMD in-order loads: a poll waits behind another task's weight loads
    WRONG_RESULT,       // outputs differ from the reference in the plan's reduction order
    OUT_OF_ENVELOPE,    // outputs outside the reduction-order envelope
    REUSE_BEFORE_FREE,  // kernel v2: a ring slot or receive slot written again before its readers freed it
};
const char* to_string(Verdict v);

enum class Detector : uint8_t {
    delayed_visibility,  // the memory model's store delays: a tagged word read before its store has landed
    happens_before,      // a hand-off read not ordered after its store (a missing release or acquire)
    stale_epoch,         // a value accepted or read that was stored in an earlier step, or never
    write_conflict,      // two CTAs store one word (mailbox or hand-off data) in one step
    split_order,         // a split reduction combines other partials than the plan's
    poll_behind_loads,   // AMD: a poll while another task's weight loads are outstanding
    deadlock,            // a hang whose wait-for chain is circular or ends at a CTA without a place
    lost_handoff,        // a hang whose chain ends at a producer that never stored, or stored another epoch
    watchdog,            // the step budget: no wait or instruction completes in watchdog_steps steps
    result,              // the outputs against the reference in the plan's order, bit for bit
    envelope,            // the outputs against the reduction-order envelope
    // kernel v2 (emulator/v2/)
    ring_slot_free,      // a copy into a ring slot not ordered after every consumer's free of its last chunk
    recv_slot_free,      // a partial sent into a receive slot not ordered after its owner's sum of the slot's last use
    partials_landed,     // an owner's sum of a partial not ordered after its st.async (not counted in the phase it waited)
    barrier_init,        // an mbarrier touched (peer st.async or arrive, a wait) not ordered after its initialisation
    seam_landed,         // a seam stage reads a hand-off its barrier's phase did not count (not landed, or landed after)
    x_ready,             // a consumer's take of x not ordered after its CTA's seam stored x
    words_fresh,         // a tail task reads a tagged word it did not poll until it carried the step's tag
    tail_landed,         // a tail task reads a share or partial Σō² its barrier's phase did not count, or unordered
    none,                // (MachineResult::detector of a run that passed)
};

struct DetectorInfo {
    Detector detector;
    const char* name;
    Verdict verdict;
    const char* what;
    Fault sole;          // the planted fault that only this detector catches (none: planted otherwise)
    const char* planted; // how the test plants what only it catches, where that is not a fault
};
const std::vector<DetectorInfo>& detector_list();  // every detector but none, in enum order
const DetectorInfo& info(Detector d);
const char* to_string(Detector d);

// A set of detectors; every one is on unless switched off.
class DetectorSet {
public:
    bool has(Detector d) const { return !(off_ >> unsigned(d) & 1u); }
    DetectorSet without(Detector d) const { DetectorSet s = *this; s.off_ |= 1u << unsigned(d); return s; }
    bool all() const { return off_ == 0; }
    // the detectors off, "write_conflict+result" ('+': a replay token's fields are comma-separated), or "none"
    std::string off_str() const;
    static DetectorSet parse_off(const std::string& s);  // the inverse; BadInput naming the known ones
    bool operator==(const DetectorSet& o) const { return off_ == o.off_; }

private:
    uint32_t off_ = 0;
};

}  // namespace monokda::emu
