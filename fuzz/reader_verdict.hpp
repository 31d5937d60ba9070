// What a libFuzzer target's body says of one input (fuzz/fixture_reader_check.hpp,
// fuzz/plan_v2_reader_check.hpp), for the unit tests that run inputs through it.
#pragma once
#include <string>

namespace monokda::fuzz {

struct ReaderVerdict {
    enum Kind { ACCEPTED, REJECTED } kind = REJECTED;
    std::string stage;    // the reader's stage that refused it ("safetensors", "step", "plan"), "" when accepted
    std::string message;  // the BadInput text when rejected
};

}  // namespace monokda::fuzz
