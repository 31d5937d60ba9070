// libFuzzer entry point over kernel v2's plan file reader (built with -fsanitize=fuzzer,address,undefined
// when MONOKDA_LIBFUZZER=ON).
#include "fuzz/plan_v2_reader_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    monokda::fuzz::check_plan_v2_bytes(data, size);
    return 0;
}
