// NVIDIA, host side: a 2D tensor map over a row-major bf16 matrix, as the copy engine (TMA) reads
// it into shared memory with the 128-byte swizzle. The encoder is the driver's, fetched once through
// the runtime, so nothing links the driver library. Used by the kernel's launcher (kda_pre.cu) and
// by the weight-stream probe (bench/probes/weight_stream_probe.cu).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace monokda::gpu {

// Encodes `map` over a [rows, cols] bf16 matrix at `base` (row stride cols), boxes of box_rows ×
// box_cols (box_cols · 2 ≤ 128 bytes for the swizzle). Returns "" or what failed.
inline std::string encode_bf16_tensor_map(CUtensorMap& map, const void* base, uint64_t rows, uint64_t cols,
                                          uint32_t box_rows, uint32_t box_cols) {
    using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    static const Encode encode = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        const bool ok = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
                            cudaSuccess &&
                        q == cudaDriverEntryPointSuccess;
        return ok ? reinterpret_cast<Encode>(f) : Encode(nullptr);
    }();
    if (!encode) return "the driver offers no cuTensorMapEncodeTiled (needs CUDA 12 or later)";
    const cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols * 2};
    const cuuint32_t box[2] = {box_cols, box_rows}, elem[2] = {1, 1};
    const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box,
                              elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? "" : "cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ")";
}

}  // namespace monokda::gpu
