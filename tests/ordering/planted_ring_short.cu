// A planted bug for the PTX ordering check: kda_pre whose cp.async ring waits one stage short (the
// exact gemv body's wait for kStages − 1 pending groups becomes kStages; waits for 0 stay). The
// check must report RING_WAIT and nothing else (tests/ordering/test_kernel_ordering.cpp). PTX only.
#include "kernels/vendor/gpu.hpp"

namespace monokda::gpu {
template <int Pending> __device__ __forceinline__ void planted_short_wait() { async_wait<Pending == 0 ? 0 : Pending + 1>(); }
}  // namespace monokda::gpu
#define async_wait planted_short_wait
#include "kernels/kda_pre.cu"
