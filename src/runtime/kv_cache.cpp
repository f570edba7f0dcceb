// KvCache: page pool and rings, page tables on host and backend, append/truncate.
#include "runtime/kv_cache.h"

#include <algorithm>
#include <limits>
#include <new>

namespace gs {

namespace {

// The pools KvCache::create allocates for options `o` (n_ctx resolved, all positive).
struct PoolPlan {
  int max_pages = 0;         // pages per sequence
  int64_t n_pages_full = 0;  // full-layer pool
  int64_t ring_pages = 0;    // sliding-layer ring per sequence
  int64_t full_slots = 0, swa_slots = 0;
};

// Bytes of one slot of layer l's K (or V) pool of `type`: n_head_kv head rows (0 when the
// type cannot hold the layer's head_dim).
size_t slot_bytes(const Gemma4LayerConfig& l, GgmlType type) {
  return static_cast<size_t>(l.n_head_kv) * kv_head_bytes(type, l.head_dim);
}

PoolPlan plan_pools(const Gemma4Config& c, const KvCacheOptions& o, int32_t n_ctx) {
  PoolPlan p;
  const int64_t ps = o.page_size;
  p.max_pages = static_cast<int>((n_ctx + ps - 1) / ps);
  p.n_pages_full = o.n_pages_full > 0 ? o.n_pages_full : static_cast<int64_t>(o.n_seq_max) * p.max_pages;
  if (!c.has_full()) p.n_pages_full = 0;
  // Ring of R positions: a batch of n tokens from p0 overwrites positions up to
  // p0 + n - 1 - R. Its first query needs p0 - W + 1 onwards, and after a rollback to
  // P >= p0 + 1 the drafter needs P - W onwards (P - W - 1 with transformers' inclusive
  // window): all hold when R >= W + n.
  if (c.has_sliding()) {
    const int64_t need = static_cast<int64_t>(c.sliding_window) + o.max_ubatch;
    p.ring_pages = std::min<int64_t>((need + ps - 1) / ps, p.max_pages);
  }
  p.swa_slots = static_cast<int64_t>(o.n_seq_max) * p.ring_pages * ps;
  p.full_slots = p.n_pages_full * ps;
  return p;
}

}  // namespace

Result<GgmlType> parse_kv_cache_type(std::string_view name) {
  if (name == "f16") return GgmlType::F16;
  if (name == "f32") return GgmlType::F32;
  if (name == "q8_0") return GgmlType::Q8_0;
  return make_status(StatusCode::kInvalidArgument, "KV cache type '{}' is not one of f16, f32, q8_0", name);
}

double KvCache::pool_bytes(const Gemma4Config& c, const KvCacheOptions& o) {
  const int32_t n_ctx = o.n_ctx > 0 ? o.n_ctx : c.n_ctx_train;
  if (o.n_seq_max <= 0 || o.max_ubatch <= 0 || o.page_size <= 0 || n_ctx <= 0) return 0;
  const PoolPlan p = plan_pools(c, o, n_ctx);
  double b = 0;
  for (const Gemma4LayerConfig& l : c.layers) {
    b += 2.0 * static_cast<double>(l.sliding ? p.swa_slots : p.full_slots) * static_cast<double>(slot_bytes(l, o.type));
  }
  return b;
}

Result<std::unique_ptr<KvCache>> KvCache::create(const Gemma4Config& c, Backend& backend, const KvCacheOptions& o) {
  if (c.is_assistant()) return make_status(StatusCode::kInvalidArgument, "a KV cache belongs to a target model");
  if (o.type != GgmlType::F16 && o.type != GgmlType::F32 && o.type != GgmlType::Q8_0) {
    return make_status(StatusCode::kInvalidArgument, "KV cache type {} is not supported (f16, f32, q8_0)", ggml_type_name(o.type));
  }
  if (!backend.supports_kv_type(o.type)) {
    return make_status(StatusCode::kInvalidArgument, "the {} backend does not support a {} KV cache yet (use f16)",
                       backend.description(), ggml_type_name(o.type));
  }
  for (const Gemma4LayerConfig& l : c.layers) {
    if (slot_bytes(l, o.type) == 0) {
      return make_status(StatusCode::kInvalidArgument, "a {} KV cache needs head_dim % 32 == 0 (a layer has head_dim {})",
                         ggml_type_name(o.type), l.head_dim);
    }
  }
  const int32_t n_ctx = o.n_ctx > 0 ? o.n_ctx : c.n_ctx_train;
  if (o.n_seq_max <= 0 || o.max_ubatch <= 0 || o.page_size <= 0 || n_ctx <= 0) {
    return make_status(StatusCode::kInvalidArgument, "KV cache options must be positive (n_seq_max {}, max_ubatch {}, page_size {}, n_ctx {})",
                       o.n_seq_max, o.max_ubatch, o.page_size, n_ctx);
  }
  std::unique_ptr<KvCache> kv(new KvCache());
  kv->backend_ = &backend;
  kv->sliding_window_ = c.sliding_window;
  for (const Gemma4LayerConfig& l : c.layers) kv->layer_sliding_.push_back(l.sliding);
  kv->max_ubatch_ = o.max_ubatch;
  kv->page_size_ = o.page_size;
  const int64_t ps = o.page_size;
  const PoolPlan plan = plan_pools(c, o, n_ctx);
  kv->max_pages_ = plan.max_pages;
  kv->n_pages_full_ = plan.n_pages_full;
  const int64_t ring_pages = plan.ring_pages;
  const int64_t swa_slots = plan.swa_slots;
  const int64_t full_slots = plan.full_slots;

  if (kv->n_pages_full_ > std::numeric_limits<int32_t>::max()) {
    return make_status(StatusCode::kInvalidArgument, "a KV cache of {} pages is more than int32 page ids address (lower n_ctx or n_seq_max)",
                       kv->n_pages_full_);
  }
  KvCacheBinding& b = kv->binding_;
  b.n_rows = o.n_seq_max;
  b.n_ctx = n_ctx;
  b.swa_ring = static_cast<int32_t>(ring_pages * ps);
  for (int il = 0; il < c.n_layer; ++il) {
    const Gemma4LayerConfig& l = c.layers[il];
    const int64_t n_slots = l.sliding ? swa_slots : full_slots;
    const size_t bytes = static_cast<size_t>(n_slots) * slot_bytes(l, o.type);
    DeviceBuffer k, v;
    GS_ASSIGN_OR_RETURN(k, DeviceBuffer::make(backend, bytes));
    GS_ASSIGN_OR_RETURN(v, DeviceBuffer::make(backend, bytes));
    // Not zeroed: attention reads only positions that were written, and untouched host
    // pages of a large CPU cache then cost no memory until used.
    b.layers.push_back(KvLayerView{k.data(), v.data(), o.type, l.n_head_kv, l.head_dim, n_slots});
    kv->bytes_ += 2 * bytes;
    kv->pools_.push_back(std::move(k));
    kv->pools_.push_back(std::move(v));
  }
  // The host page tables and the free list are written in full, so they come after the
  // pools: a --ctx-size x --parallel too large for memory fails there, at once and cleanly,
  // instead of filling gigabytes of tables first (the process was killed for memory).
  try {
    kv->seqs_.resize(static_cast<size_t>(o.n_seq_max));
    kv->full_table_host_.assign(static_cast<size_t>(o.n_seq_max) * kv->max_pages_, -1);
    kv->swa_table_host_.assign(static_cast<size_t>(o.n_seq_max) * kv->max_pages_, -1);
    kv->free_pages_.reserve(static_cast<size_t>(kv->n_pages_full_));
  } catch (const std::bad_alloc&) {
    return make_status(StatusCode::kResourceExhausted, "cannot allocate the KV page tables of {} sequences x {} pages",
                       o.n_seq_max, kv->max_pages_);
  }
  for (int s = 0; s < o.n_seq_max; ++s) {
    for (int64_t p = 0; p < ring_pages; ++p) {
      kv->swa_table_host_[static_cast<size_t>(s) * kv->max_pages_ + p] = static_cast<int32_t>(s * ring_pages + p);
    }
  }
  for (int64_t p = kv->n_pages_full_ - 1; p >= 0; --p) kv->free_pages_.push_back(static_cast<int32_t>(p));
  const size_t table_bytes = kv->full_table_host_.size() * sizeof(int32_t);
  GS_ASSIGN_OR_RETURN(kv->full_table_, DeviceBuffer::make(backend, table_bytes));
  GS_ASSIGN_OR_RETURN(kv->swa_table_, DeviceBuffer::make(backend, table_bytes));
  b.full_pages = PageTableView{kv->full_table_.as<int32_t>(), kv->max_pages_, o.page_size, 0};
  b.swa_pages = PageTableView{kv->swa_table_.as<int32_t>(), kv->max_pages_, o.page_size, static_cast<int>(ring_pages)};
  b.full_pages_host = PageTableView{kv->full_table_host_.data(), kv->max_pages_, o.page_size, 0};
  b.swa_pages_host = PageTableView{kv->swa_table_host_.data(), kv->max_pages_, o.page_size, static_cast<int>(ring_pages)};
  GS_RETURN_IF_ERROR(backend.upload(kv->swa_table_.data(), kv->swa_table_host_.data(), table_bytes));
  GS_RETURN_IF_ERROR(kv->sync());
  return kv;
}

Status KvCache::check_seq(int seq) const {
  if (seq < 0 || seq >= static_cast<int>(seqs_.size()) || !seqs_[seq].active) {
    return make_status(StatusCode::kInvalidArgument, "unknown KV sequence {}", seq);
  }
  return {};
}

Result<int> KvCache::add_sequence() {
  for (size_t s = 0; s < seqs_.size(); ++s) {
    if (!seqs_[s].active) {
      seqs_[s] = Seq{};
      seqs_[s].active = true;
      return static_cast<int>(s);
    }
  }
  return make_status(StatusCode::kResourceExhausted, "all {} KV sequences are in use", seqs_.size());
}

Status KvCache::remove_sequence(int seq) {
  GS_RETURN_IF_ERROR(check_seq(seq));
  GS_RETURN_IF_ERROR(truncate(seq, 0));
  seqs_[seq].active = false;
  return {};
}

int32_t KvCache::length(int seq) const { return check_seq(seq).ok() ? seqs_[seq].length : 0; }

int32_t KvCache::swa_oldest(int seq) const {
  if (!check_seq(seq).ok()) return 0;
  const Seq& s = seqs_[seq];
  return std::max({0, s.written_end - binding_.swa_ring, s.swa_lo});
}

size_t KvCache::position_bytes(int il) const {
  if (il < 0 || il >= static_cast<int>(binding_.layers.size())) return 0;
  const KvLayerView& l = binding_.layers[static_cast<size_t>(il)];
  return static_cast<size_t>(l.n_head_kv) * kv_head_bytes(l.type, l.head_dim);
}

template <typename F>
Status KvCache::for_position_runs(int seq, int il, int32_t p0, int32_t n, F&& f) const {
  GS_RETURN_IF_ERROR(check_seq(seq));
  if (il < 0 || il >= static_cast<int>(binding_.layers.size())) {
    return make_status(StatusCode::kInvalidArgument, "no KV layer {}", il);
  }
  const bool sliding = layer_sliding_[static_cast<size_t>(il)];
  const int32_t lo = sliding ? swa_oldest(seq) : 0;
  if (n < 0 || p0 < lo || static_cast<int64_t>(p0) + n > seqs_[seq].length) {
    return make_status(StatusCode::kOutOfRange, "positions [{}, {}) of layer {} are not stored (it holds [{}, {}))", p0,
                       static_cast<int64_t>(p0) + n, il, lo, seqs_[seq].length);
  }
  const PageTableView& pt = sliding ? binding_.swa_pages_host : binding_.full_pages_host;
  const KvLayerView& l = binding_.layers[static_cast<size_t>(il)];
  const size_t row = position_bytes(il);
  size_t host_off = 0;
  int32_t p = p0;
  const int32_t end = p0 + n;
  while (p < end) {
    const int32_t run = std::min(end - p, page_size_ - p % page_size_);
    const int64_t slot = kv_slot(pt, seq, p);
    if (slot < 0) return make_status(StatusCode::kInternal, "position {} of KV sequence {} has no page", p, seq);
    const size_t pool_off = static_cast<size_t>(slot) * row;
    const size_t bytes = static_cast<size_t>(run) * row;
    GS_RETURN_IF_ERROR(f(static_cast<uint8_t*>(l.k) + pool_off, static_cast<uint8_t*>(l.v) + pool_off, host_off, bytes));
    host_off += bytes;
    p += run;
  }
  return {};
}

Status KvCache::read_positions(int seq, int il, int32_t p0, int32_t n, void* k_host, void* v_host) const {
  return for_position_runs(seq, il, p0, n, [&](const uint8_t* k, const uint8_t* v, size_t off, size_t bytes) -> Status {
    GS_RETURN_IF_ERROR(backend_->download(static_cast<uint8_t*>(k_host) + off, k, bytes));
    return backend_->download(static_cast<uint8_t*>(v_host) + off, v, bytes);
  });
}

Status KvCache::write_positions(int seq, int il, int32_t p0, int32_t n, const void* k_host, const void* v_host) {
  return for_position_runs(seq, il, p0, n, [&](uint8_t* k, uint8_t* v, size_t off, size_t bytes) -> Status {
    GS_RETURN_IF_ERROR(backend_->upload(k, static_cast<const uint8_t*>(k_host) + off, bytes));
    return backend_->upload(v, static_cast<const uint8_t*>(v_host) + off, bytes);
  });
}

Status KvCache::take_full_pages(int seq, int32_t length) {
  if (n_pages_full_ == 0) return {};
  Seq& s = seqs_[seq];
  const int32_t need = (length + page_size_ - 1) / page_size_;
  if (need - s.n_pages > static_cast<int32_t>(free_pages_.size())) {
    return make_status(StatusCode::kResourceExhausted, "KV page pool exhausted ({} pages, {} free, {} needed)",
                       n_pages_full_, free_pages_.size(), need - s.n_pages);
  }
  for (; s.n_pages < need; ++s.n_pages) {
    full_table_host_[static_cast<size_t>(seq) * max_pages_ + s.n_pages] = free_pages_.back();
    free_pages_.pop_back();
    dirty_ = true;
  }
  return {};
}

Status KvCache::restore_shape(int seq, int32_t length, int32_t swa_lo) {
  GS_RETURN_IF_ERROR(check_seq(seq));
  Seq& s = seqs_[seq];
  if (s.length != 0) return make_status(StatusCode::kInvalidArgument, "KV sequence {} is not empty", seq);
  const bool has_ring = binding_.swa_ring > 0;
  if (!has_ring) swa_lo = 0;  // no sliding layer
  if (length < 0 || swa_lo < 0 || swa_lo > length || (has_ring && swa_lo < length - binding_.swa_ring)) {
    return make_status(StatusCode::kInvalidArgument,
                       "cannot restore {} positions with sliding positions from {} (the ring holds {})", length, swa_lo,
                       binding_.swa_ring);
  }
  if (length > binding_.n_ctx) {
    return make_status(StatusCode::kOutOfRange, "{} positions exceed the context of {}", length, binding_.n_ctx);
  }
  GS_RETURN_IF_ERROR(take_full_pages(seq, length));
  s.length = length;
  s.written_end = length;
  s.swa_lo = swa_lo;
  return {};
}

Result<int32_t> KvCache::append(int seq, int32_t n) {
  GS_RETURN_IF_ERROR(check_seq(seq));
  Seq& s = seqs_[seq];
  if (n <= 0 || n > max_ubatch_) {
    return make_status(StatusCode::kInvalidArgument, "cannot add {} positions in one pass (max_ubatch {})", n, max_ubatch_);
  }
  if (static_cast<int64_t>(s.length) + n > binding_.n_ctx) {
    return make_status(StatusCode::kOutOfRange, "sequence of {} positions + {} exceeds the context of {}", s.length, n,
                       binding_.n_ctx);
  }
  const int32_t first = s.length;
  GS_RETURN_IF_ERROR(take_full_pages(seq, first + n));
  s.length = first + n;
  s.written_end = std::max(s.written_end, s.length);
  return first;
}

Status KvCache::append_zeros(int seq, int32_t n) {
  GS_RETURN_IF_ERROR(check_seq(seq));
  for (const DeviceBuffer& pool : pools_) GS_RETURN_IF_ERROR(backend_->memset_zero(pool.data(), pool.bytes()));
  while (n > 0) {
    const int32_t chunk = std::min(n, static_cast<int32_t>(max_ubatch_));
    GS_RETURN_IF_ERROR(append(seq, chunk).status());
    n -= chunk;
  }
  return {};
}

Status KvCache::truncate(int seq, int32_t n_keep) {
  GS_RETURN_IF_ERROR(check_seq(seq));
  Seq& s = seqs_[seq];
  if (n_keep < 0) return make_status(StatusCode::kInvalidArgument, "negative truncation point {}", n_keep);
  if (n_keep >= s.length) return {};
  // The next query needs n_keep - W + 1 onwards, a drafter n_keep - W (or n_keep - W - 1).
  if (n_keep > 0 && sliding_window_ > 0 && std::max(0, n_keep - sliding_window_ - 1) < swa_oldest(seq)) {
    return make_status(StatusCode::kFailedPrecondition,
                       "cannot roll back to position {}: the sliding-window ring only holds positions from {}", n_keep,
                       swa_oldest(seq));
  }
  s.length = n_keep;
  if (n_keep == 0) {
    s.written_end = 0;  // nothing of the sequence is needed any more
    s.swa_lo = 0;
  }
  if (n_pages_full_ > 0) {
    const int32_t keep_pages = (n_keep + page_size_ - 1) / page_size_;
    for (; s.n_pages > keep_pages; --s.n_pages) {
      int32_t& entry = full_table_host_[static_cast<size_t>(seq) * max_pages_ + s.n_pages - 1];
      free_pages_.push_back(entry);
      entry = -1;
      dirty_ = true;
    }
  }
  return {};
}

Status KvCache::sync() {
  if (!dirty_) return {};
  GS_RETURN_IF_ERROR(backend_->upload(full_table_.data(), full_table_host_.data(), full_table_host_.size() * sizeof(int32_t)));
  dirty_ = false;
  return {};
}

}  // namespace gs
