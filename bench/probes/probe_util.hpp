// What the device probes (bench/probes/*_probe.cu) share. Each links the CUDA runtime alone, so that it runs
// on a GPU machine without the project's libraries: header-only for that reason.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace monokda::probe {

// A failed CUDA call ends the probe, naming the probe and the call.
inline void check(const char* probe, cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s: %s\n", probe, what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// The median as the probes report it: the upper of the two middle values for an even count; 0 for
// none.
template <class T>
T median(std::vector<T> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? T{} : v[v.size() / 2];
}

}  // namespace monokda::probe
