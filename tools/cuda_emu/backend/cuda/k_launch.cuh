// Emulator stand-in for src/backend/cuda/k_launch.cuh: launch_k runs the grid block by block
// on emu.h's fibers (synchronously; the stream is ignored). Dynamic shared memory is filled
// with 0xff (f16 and f32 NaN) before each block, so a read of unwritten shared memory shows.
#pragma once

#include <cstring>

#include "emu.h"

#define GS_PDL_ENTRY() \
  do {                 \
  } while (0)

namespace gs::cuda {
namespace {

template <typename... KArgs, typename... Args>
inline void launch_k(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t,
                     Args&&... args) {
  if (smem_bytes > sizeof(smem)) std::abort();
  ::emu::st().grid_dim = ::emu::Dim{grid.x, grid.y, grid.z};
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::memset(smem, 0xff, sizeof(smem));
        ::emu::run_block(::emu::Dim{x, y, z}, static_cast<int>(block.x), [&] { kernel(args...); });
      }
}

}  // namespace
}  // namespace gs::cuda
