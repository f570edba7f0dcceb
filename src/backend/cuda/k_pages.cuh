// The page-table arithmetic of the paged KV pools, shared by the kernels (k_common.cuh
// includes it) and by tools/cuda_emu, whose stand-in headers define the qualifiers away.
#pragma once

#include <cstdint>

#include "backend/cuda/cuda_kernels.h"

namespace gs::cuda {

// Slot of position `pos` of page-table row `seq` (backend.h PageTableView); -1 when the
// table points outside the pool.
__device__ __forceinline__ int64_t kv_slot(const PagesView& pg, int seq, int pos, int64_t n_slots) {
  const int wrap = pg.wrap_pages > 0 ? pg.wrap_pages : pg.max_pages;
  const int pi = (pos / pg.page_size) % wrap;
  const int64_t page = pg.pages[static_cast<int64_t>(seq) * pg.max_pages + pi];
  const int64_t slot = page * pg.page_size + pos % pg.page_size;
  return (page < 0 || slot >= n_slots) ? -1 : slot;
}

}  // namespace gs::cuda
