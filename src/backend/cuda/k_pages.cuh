// The page-table arithmetic of the paged KV pools, shared by the kernels (k_common.cuh
// includes it) and by tools/cuda_emu, whose stand-in headers define the qualifiers away.
#pragma once

#include <cstdint>

#include "backend/cuda/cuda_kernels.h"

namespace gs::cuda {

// A page-table lookup in two steps, so that a kernel can issue the load a while before it needs
// the slot: kv_slot_fetch reads the entry of position `pos` of page-table row `seq`
// (backend.h PageTableView) and computes nothing from it; kv_slot_of turns that into the slot.
// A warp runs its instructions in order, so an instruction that uses a loaded value stalls it
// until the load returns (a page-table entry: an L2 round trip, hundreds of cycles); with the
// use placed after other work, that work hides the latency. `in` false: no load, slot -1.
struct KvSlotFetch {
  int32_t page;   // the table's entry (-1: none); not read until kv_slot_of
  int32_t in_page;  // pos % page_size
};
__device__ __forceinline__ KvSlotFetch kv_slot_fetch(const PagesView& pg, int seq, int pos, bool in = true) {
  const int wrap = pg.wrap_pages > 0 ? pg.wrap_pages : pg.max_pages;
  const int pi = (pos / pg.page_size) % wrap;
  KvSlotFetch f{-1, pos % pg.page_size};
  if (in) f.page = pg.pages[static_cast<int64_t>(seq) * pg.max_pages + pi];
  return f;
}
// Slot of a fetched entry; -1 when there was none or the table points outside the pool.
__device__ __forceinline__ int64_t kv_slot_of(const KvSlotFetch& f, int page_size, int64_t n_slots) {
  const int64_t slot = static_cast<int64_t>(f.page) * page_size + f.in_page;
  return (f.page < 0 || slot >= n_slots) ? -1 : slot;
}

// Slot of position `pos` of page-table row `seq` in one step; -1 when the table points outside
// the pool.
__device__ __forceinline__ int64_t kv_slot(const PagesView& pg, int seq, int pos, int64_t n_slots) {
  return kv_slot_of(kv_slot_fetch(pg, seq, pos), pg.page_size, n_slots);
}

}  // namespace gs::cuda
