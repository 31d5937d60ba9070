// The replay token: every choice of an emulator run except a fixture file's path, as one string that
// names its fields (docs/emulator.md, "Replay token"):
//   v5,config=small,R=2,L=4,nb=4,fixture-seed=1,blocks=0,gemv-bands=auto,kda-teams=1,
//      schedule=random,seed=1,resident=0,steps=1,amd=0,inject=none
// v5 is the format; every other field is NAME=VALUE with NAME a `monokda emulate` option and VALUE
// what that option takes. A run from a fixture file says fixture=file (the file is given again on
// the command line) instead of the five built-in fixture fields; a run of a plan file says plan=DIGEST
// (plan_digest: the file is given again with --plan, and must be that plan) instead of the built-in
// plan's blocks and gemv-bands. A field a token omits takes its
// option's default, so a field added later (with a default that keeps today's behaviour) leaves
// older tokens meaning what they meant. Formats v1-v4 (positional, slash-separated) are refused with
// a message that spells out their fields.
#pragma once
#include <string>

#include "emulator/emulate.hpp"

namespace monokda::emu {

std::string make_token(const EmulateOptions& o);
// o with its run choices replaced by the token's (o's fixture file is kept); BadInput naming the
// field for a malformed token, an unknown or repeated field, or an old format.
EmulateOptions apply_token(EmulateOptions o, const std::string& token);

}  // namespace monokda::emu
