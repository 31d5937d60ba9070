// The run as a Chrome / Perfetto trace (the JSON trace-event format; open it in ui.perfetto.dev or
// chrome://tracing; docs/emulator.md, "Traces"): a process a launch, a thread (track) a CTA list, a
// slice an instruction with its spins and waits for its own weight loads nested inside, a flow from
// each mailbox store to every poll that accepted it. On a failing run the instructions still open
// are slices up to the stop, and every CTA carries an instant event saying where it stopped.
// Timestamps are the machine's ticks, shown as microseconds.
#pragma once
#include <string>

#include "core/plan.hpp"
#include "emulator/machine.hpp"

namespace monokda::emu {

// The run needs its spans (MachineOptions::record_spans, EmulateOptions::timeline).
std::string trace_json(const Plan& plan, const MachineResult& r, const std::string& title);

}  // namespace monokda::emu
