// `monokda emulate --kernel v2`: kernel v2's in_proj plan run in the emulator (cli/cmd_emulate_v2.cpp),
// reached from cmd_emulate once its options are parsed.
#pragma once
#include "cli/options.hpp"
#include "core/config.hpp"

namespace monokda::cli {

// The run (or --sweep) that vm asks for; BadInput for an option kernel v2's emulation does not take.
int emulate_v2(const po::variables_map& vm);

// The preset whose model dims a plan's config has (its built-in fixture; cmd_emulate.cpp); BadInput
// when none does and no FIXTURE file is given (needed).
std::string matching_preset(const Config& c, bool needed);

}  // namespace monokda::cli
