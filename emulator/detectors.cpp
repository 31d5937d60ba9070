// The verdicts' names and the detector list: what each detector catches, the verdict it gives, and
// what only it catches (tests/emulator/test_detectors.cpp runs each with its detector on and off).
#include "emulator/detectors.hpp"

#include <stdexcept>

#include "core/error.hpp"

namespace monokda::emu {

const char* to_string(Verdict v) {
    switch (v) {
        case Verdict::PASS: return "PASS";
        case Verdict::DEADLOCK: return "DEADLOCK";
        case Verdict::LIVELOCK: return "LIVELOCK";
        case Verdict::STALE_READ: return "STALE_READ";
        case Verdict::VISIBILITY_FAULT: return "VISIBILITY_FAULT";
        case Verdict::WRITE_CONFLICT: return "WRITE_CONFLICT";
        case Verdict::WRONG_SPLIT: return "WRONG_SPLIT";
        case Verdict::POLL_BEHIND_LOADS: return "POLL_BEHIND_LOADS";
        case Verdict::WRONG_RESULT: return "WRONG_RESULT";
        case Verdict::OUT_OF_ENVELOPE: return "OUT_OF_ENVELOPE";
        case Verdict::REUSE_BEFORE_FREE: return "REUSE_BEFORE_FREE";
    }
    return "?";
}

const std::vector<DetectorInfo>& detector_list() {
    using D = Detector;
    using V = Verdict;
    static const std::vector<DetectorInfo> list = {
        {D::delayed_visibility, "delayed_visibility", V::STALE_READ,
         "stores land after a delay the schedule draws (off: at once); a tagged word read before its store landed",
         Fault::gate_polls_last_partial, ""},
        {D::happens_before, "happens_before", V::VISIBILITY_FAULT,
         "a hand-off read not ordered after its store by a release/acquire chain (a missing fence)",
         Fault::flag_before_data, ""},
        {D::stale_epoch, "stale_epoch", V::STALE_READ,
         "a value accepted by a poll, or read, that was stored in an earlier step or never",
         Fault::epoch_by_value, ""},
        {D::write_conflict, "write_conflict", V::WRITE_CONFLICT,
         "two CTAs store one word, of a mailbox or of hand-off data, in one step", Fault::g1_share_long, ""},
        {D::split_order, "split_order", V::WRONG_SPLIT,
         "a split reduction combines other partials than the plan's split, or in another order",
         Fault::partial_counted_twice, ""},
        {D::poll_behind_loads, "poll_behind_loads", V::POLL_BEHIND_LOADS,
         "AMD: a poll while another task's weight loads are outstanding (until used, landed or not)",
         Fault::kda_loads_at_start, ""},
        {D::deadlock, "deadlock", V::DEADLOCK,
         "a hang: kernel v1, a wait-for chain that is circular or ends at a CTA that never gets a place; kernel v2, "
         "no role can step and nothing is in flight",
         Fault::too_few_resident, ""},
        {D::lost_handoff, "lost_handoff", V::LIVELOCK,
         "a hang whose wait-for chain ends at a producer that never stored the entry, or stored another epoch",
         Fault::missing_xrdy, ""},
        {D::watchdog, "watchdog", V::LIVELOCK,
         "the step budget: no wait or instruction completes in watchdog_steps scheduler steps",
         Fault::none, "a budget below what the clean plan needs (watchdog_steps 5 under PCT)"},
        {D::result, "result", V::WRONG_RESULT, "the outputs against the reference in the plan's order, bit for bit",
         Fault::decay_fast_exp, ""},
        {D::envelope, "envelope", V::OUT_OF_ENVELOPE, "the outputs against the reduction-order envelope", Fault::none,
         "an envelope narrower than the plan's own order (outputs equal to the reference reach it only "
         "through the plan's order: any other fault that leaves it changes bits, which result names first)"},
        {D::ring_slot_free, "ring_slot_free", V::REUSE_BEFORE_FREE,
         "kernel v2: a bulk copy into a ring slot not ordered after every consumer's free of the chunk it held",
         Fault::ring_refill_early, ""},
        {D::recv_slot_free, "recv_slot_free", V::REUSE_BEFORE_FREE,
         "kernel v2: a partial sent into a receive slot not ordered after its owner summed the slot's last use",
         Fault::recv_slot_reused, ""},
        {D::partials_landed, "partials_landed", V::VISIBILITY_FAULT,
         "kernel v2: an owner sums a partial its receive barrier's phase did not count (not landed, or landed unordered)",
         Fault::publish_before_last_partial, ""},
        {D::barrier_init, "barrier_init", V::VISIBILITY_FAULT,
         "kernel v2: an mbarrier used (a peer's st.async or arrive, a wait) not ordered after its initialisation",
         Fault::missing_cluster_barrier, ""},
        {D::seam_landed, "seam_landed", V::VISIBILITY_FAULT,
         "kernel v2: a seam stage (GATE, MIX, X) reads a hand-off the phase of its barrier it waited for did not count "
         "(not landed, or landed after the phase completed)",
         Fault::seam_part_short, ""},
        {D::x_ready, "x_ready", V::VISIBILITY_FAULT,
         "kernel v2: a consumer multiplies x not ordered after its CTA's seam stored it (no wait on the x barrier)",
         Fault::x_before_seam, ""},
        {D::words_fresh, "words_fresh", V::STALE_READ,
         "kernel v2's tail: a task reads a tagged word it did not poll until the word carried the step's tag (it may hold "
         "the step before's)",
         Fault::tail_word_unwaited, ""},
        {D::tail_landed, "tail_landed", V::VISIBILITY_FAULT,
         "kernel v2's tail: a task reads a share, a decay or a partial Σō² the phase of its barrier did not count (not "
         "landed, or landed after), or not ordered before the read (no wait)",
         Fault::tail_onrm_unwaited, ""},
    };
    return list;
}

const DetectorInfo& info(Detector d) {
    for (const DetectorInfo& i : detector_list())
        if (i.detector == d) return i;
    throw std::logic_error("emulator: no detector " + std::to_string(int(d)));
}

const char* to_string(Detector d) { return d == Detector::none ? "none" : info(d).name; }

std::string DetectorSet::off_str() const {
    std::string s;
    for (const DetectorInfo& i : detector_list())
        if (!has(i.detector)) s += (s.empty() ? "" : "+") + std::string(i.name);
    return s.empty() ? "none" : s;
}

DetectorSet DetectorSet::parse_off(const std::string& s) {
    DetectorSet set;
    if (s == "none") return set;
    for (size_t a = 0;;) {
        const size_t b = s.find('+', a);
        const std::string name = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
        const DetectorInfo* found = nullptr;
        for (const DetectorInfo& i : detector_list())
            if (name == i.name) found = &i;
        if (!found) {
            std::string known;
            for (const DetectorInfo& i : detector_list()) known += (known.empty() ? "" : ", ") + std::string(i.name);
            bad_input("unknown detector '" + name + "' (known: " + known + "; --list-detectors describes them)");
        }
        if (!set.has(found->detector)) bad_input("detector '" + name + "' is named twice");
        set = set.without(found->detector);
        if (b == std::string::npos) break;
        a = b + 1;
    }
    return set;
}

}  // namespace monokda::emu
