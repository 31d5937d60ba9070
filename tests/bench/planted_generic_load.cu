// A planted bug for bench/probes/check_probe_ptx.sh: a kernel that reads its arguments through a view
// passed as a pointer that may be null, so the view sits in local memory and the reads are generic
// loads, as kernel v2's reducer once did. The check must fail on it. Never linked into anything.
#include <cstdint>

struct Args {
    const float* in;
    float* out;
    int n;
};
struct View {
    const Args& a;
    int base;
};

__device__ __forceinline__ void body(const View* v, int i) {
    if (v && i < v->a.n) v->a.out[i] = v->a.in[v->base + i];
}

__global__ void planted(const __grid_constant__ Args a, int on) {
    const View v{a, int(threadIdx.x)};
    body(on ? &v : nullptr, int(blockIdx.x));
}
