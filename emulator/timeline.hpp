// The run drawn as an SVG: one lane per CTA, a box per instruction coloured by its stage, grey
// spans where the CTA spins on a mailbox, violet where it waits for its own weight loads.
#pragma once
#include <string>

#include "core/plan.hpp"
#include "emulator/machine.hpp"

namespace monokda::emu {

std::string timeline_svg(const Plan& plan, const MachineResult& r, const std::string& title);
void write_timeline(const std::string& path, const Plan& plan, const MachineResult& r, const std::string& title);

}  // namespace monokda::emu
