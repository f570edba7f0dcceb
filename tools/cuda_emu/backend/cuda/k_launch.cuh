// Emulator stand-in for src/backend/cuda/k_launch.cuh: launch_k runs the grid block by block
// on emu.h's fibers (synchronously; the stream is ignored). Dynamic shared memory is filled
// with 0xff (f16 and f32 NaN) before each block, so a read of unwritten shared memory shows.
#pragma once

#include <cstring>

#include "emu.h"

#define GS_PDL_ENTRY() \
  do {                 \
  } while (0)
#define GS_PDL_TRIGGER() GS_PDL_ENTRY()
#define GS_PDL_WAIT() GS_PDL_ENTRY()

namespace gs::cuda {
namespace {

template <typename... KArgs, typename... Args>
inline void launch_k(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t,
                     Args&&... args) {
  if (smem_bytes > sizeof(smem)) std::abort();
  ::emu::st().grid_dim = ::emu::Dim{grid.x, grid.y, grid.z};
  // Blocks one after another (from the last with reverse_blocks: a block that waits for a
  // later one's flag then finds it set).
  const bool rev = ::emu::st().reverse_blocks;
  for (unsigned zi = 0; zi < grid.z; ++zi)
    for (unsigned yi = 0; yi < grid.y; ++yi)
      for (unsigned xi = 0; xi < grid.x; ++xi) {
        const unsigned x = rev ? grid.x - 1 - xi : xi, y = rev ? grid.y - 1 - yi : yi, z = rev ? grid.z - 1 - zi : zi;
        std::memset(smem, 0xff, sizeof(smem));
        std::memset(ring_raw, 0xff, sizeof(ring_raw));
        ::emu::run_block(::emu::Dim{x, y, z}, static_cast<int>(block.x), [&] { kernel(args...); });
      }
}

}  // namespace
}  // namespace gs::cuda
