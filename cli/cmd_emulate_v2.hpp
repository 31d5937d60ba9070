// `monokda emulate --kernel v2`: kernel v2's in_proj plan run in the emulator (cli/cmd_emulate_v2.cpp),
// reached from cmd_emulate once its options are parsed.
#pragma once
#include "cli/options.hpp"

namespace monokda::cli {

// The run (or --sweep) that vm asks for; BadInput for an option kernel v2's emulation does not take.
int emulate_v2(const po::variables_map& vm);

}  // namespace monokda::cli
