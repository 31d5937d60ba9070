// The v2 probes' waits: a spin that gives up. A probe that waits wrongly traps after 200 ms (the host
// reports the launch failure) instead of holding the GPU until the call's limit.
#pragma once
#include "kernels/vendor/gpu.hpp"

namespace monokda::probe {

template <class Ready>
__device__ __forceinline__ void spin(Ready ready) {
    if (ready()) return;
    const unsigned long long t0 = monokda::gpu::now_ns();
    for (unsigned n = 1; !ready(); ++n)
        if ((n & 1023u) == 0 && monokda::gpu::now_ns() - t0 > 200000000ull) __trap();
}

}  // namespace monokda::probe
