// Weight rows to f16 in a scratch buffer, the operand of the cuBLAS prefill GEMM.
#include "backend/cuda/k_common.cuh"
#include "backend/cuda/k_launch.cuh"

namespace gs::cuda {
namespace {

__global__ void dequant_f16_kernel(const uint8_t* __restrict__ w, WeightLayout L, int64_t row0, int64_t total8,
                                   uint16_t* __restrict__ dst) {
  GS_PDL_ENTRY();
  const int64_t per_row = L.n_in_pad / 8;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total8;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = idx / per_row, e = (idx % per_row) * 8;
    float v[8];
    load8(w, L, row0 + r, e, v);
    uint4 o;
    o.x = pack_f32x2(v[0], v[1]);
    o.y = pack_f32x2(v[2], v[3]);
    o.z = pack_f32x2(v[4], v[5]);
    o.w = pack_f32x2(v[6], v[7]);
    *reinterpret_cast<uint4*>(dst + r * L.n_in_pad + e) = o;
  }
}

}  // namespace

void launch_dequant_f16(cudaStream_t s, const void* w, const WeightLayout& L, int64_t row0, int64_t n_rows,
                        uint16_t* dst) {
  const int64_t total8 = n_rows * (L.n_in_pad / 8);
  if (total8 == 0) return;
  int64_t blocks = (total8 + 255) / 256;
  if (blocks > 132 * 64) blocks = 132 * 64;
  launch_k(dequant_f16_kernel, static_cast<unsigned>(blocks), 256, 0, s, static_cast<const uint8_t*>(w), L, row0, total8,
                                                                    dst);
}

}  // namespace gs::cuda
