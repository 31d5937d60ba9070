// A planted bug for the PTX ordering check: kda_pre with every 32-bit flag poll of the mailbox layer
// (wait_flags, wait_proj) reading its flag relaxed instead of acquire. The check must report
// FLAG_READ_RELAXED and nothing else (tests/ordering/test_kernel_ordering.cpp). Compiled to PTX only.
#include "kernels/vendor/gpu.hpp"

namespace monokda::gpu {
__device__ __forceinline__ uint32_t planted_relaxed_flag(const uint32_t* p) { return ld_relaxed32(p); }
}  // namespace monokda::gpu
#define ld_acquire planted_relaxed_flag
#include "kernels/kda_pre.cu"
