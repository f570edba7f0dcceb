// KvCacheBinding: what a forward pass needs of a KV cache (runtime/kv_cache.h owns one):
// each target layer's pools and the page tables of both layer kinds.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace gs {

struct KvCacheBinding {
  std::vector<KvLayerView> layers;  // [n_layer] of the target, pools in backend memory
  PageTableView full_pages;         // full-attention layers, backend memory
  PageTableView swa_pages;          // sliding layers (a ring: wrap_pages > 0), backend memory
  PageTableView full_pages_host;    // the same tables in host memory (slots are computed on the host)
  PageTableView swa_pages_host;
  int n_rows = 0;                   // page-table rows (sequences)
  int32_t n_ctx = 0;                // positions per sequence
  int32_t swa_ring = 0;             // positions a sliding ring holds
};

// Slot of position `pos` of page-table row `row` (the formula of backend.h), or -1 when
// that page is not allocated.
inline int64_t kv_slot(const PageTableView& pt, int row, int64_t pos) {
  const int64_t wrap = pt.wrap_pages > 0 ? pt.wrap_pages : pt.max_pages;
  const int64_t page_index = pos / pt.page_size;
  if (pt.wrap_pages == 0 && page_index >= pt.max_pages) return -1;
  const int32_t page = pt.pages[static_cast<int64_t>(row) * pt.max_pages + page_index % wrap];
  if (page < 0) return -1;
  return static_cast<int64_t>(page) * pt.page_size + pos % pt.page_size;
}

}  // namespace gs
