// libFuzzer entry point (built with -fsanitize=fuzzer,address,undefined when MONOKDA_LIBFUZZER=ON).
#include "fuzz/fixture_reader_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    monokda::fuzz::check_fixture_bytes(data, size);
    return 0;
}
