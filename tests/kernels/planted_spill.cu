// A planted bug for kernels/check_kernel_builds.sh: a kernel named like ours that cannot keep its
// values in registers (160 live floats under a 1024-thread, 2-block bound), so every target spills
// and the check must fail. Never linked into anything.
#include "kernels/vendor/gpu.hpp"

__global__ void __launch_bounds__(1024, 2) kda_pre_kernel(float* out, const float* in) {
    float v[160];
#pragma unroll
    for (int i = 0; i < 160; ++i) v[i] = in[threadIdx.x + i * 1024];
    float s = 0;
#pragma unroll
    for (int i = 0; i < 160; ++i) s += v[i] * v[(i * 37 + 11) % 160];
    out[threadIdx.x] = s;
}
