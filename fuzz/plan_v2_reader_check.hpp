// The body of the libFuzzer target over kernel v2's plan file reader (PlanV2::from_json), callable
// from ordinary code too, so the unit tests run their inputs through exactly what the fuzzer runs.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fuzz/reader_verdict.hpp"

namespace monokda::fuzz {

// Reads bytes as `monokda plan check` reads a file: its format (plan_file_format, which must be
// v2's where the plan reads), then PlanV2::from_json, then the plan's checks (problems()). A plan
// that reads must write back and read again as the same file (to_json), and a sound one must give a
// flat table whose header the device's reader takes (serialize, read_v2_header). Only BadInput may
// come out of the reading: anything else (another exception, a BadInput once the plan was read, a
// round-trip difference) aborts, which the fuzzer reports as a crash.
ReaderVerdict check_plan_v2_bytes(const uint8_t* data, size_t size);

}  // namespace monokda::fuzz
