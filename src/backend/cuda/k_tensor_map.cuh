// Host side of TMA: cuTensorMapEncodeTiled, taken from the driver through the runtime
// (cudaGetDriverEntryPointByVersion), so that the project does not link libcuda itself.
// Used by the bulk-copy matvec (k_matvec_stream.cu) and the wgmma attention's TMA form
// (sm90a/k_attention_wg.cu). On the CPU emulator (tools/cuda_emu) the entry point is its own.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "backend/cuda/k_common.cuh"

namespace gs::cuda {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled from the driver (CUDA 12.0 ABI); null when the driver lacks it.
inline EncodeTiledFn encode_tiled() {
  static const EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<EncodeTiledFn>(nullptr);
    }
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

}  // namespace gs::cuda
