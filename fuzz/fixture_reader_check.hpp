// The body of the libFuzzer target over the fixture reader, callable from ordinary code too, so the
// unit tests run the committed seed corpus through exactly what the fuzzer runs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_verdict.hpp"

namespace monokda::fuzz {

// Parses bytes as a safetensors file, then as a step fixture (Config::from_metadata,
// StepInputs::from_file). Whatever parses must survive a write/read round trip unchanged, and a
// tiny accepted fixture is run through the reference. Only BadInput may come out of the reader:
// anything else (another exception, a round-trip mismatch) aborts, which the fuzzer reports as a crash.
ReaderVerdict check_fixture_bytes(const uint8_t* data, size_t size);

}  // namespace monokda::fuzz
