// KvCache: the target's KV cache per layer kind. Full-attention layers keep every position
// in pages from one shared pool (a page table row per sequence); sliding layers keep a ring
// per sequence of at least sliding_window + max_ubatch positions (a page table that
// wraps). Many sequences; truncation from a position (rollback of rejected drafts).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "core/ggml_type.h"
#include "core/status.h"
#include "model/gemma4_config.h"
#include "model/kv_binding.h"

namespace gs {

struct KvCacheOptions {
  int n_seq_max = 1;             // sequences (page-table rows)
  int32_t n_ctx = 0;             // positions per sequence; 0: the model's context_length
  int max_ubatch = 512;          // most positions one sequence adds in one forward pass
  int page_size = 256;           // positions per page (both layer kinds)
  GgmlType type = GgmlType::F16; // storage of K and V: F16, F32 or Q8_0 (KvLayerView)
  int64_t n_pages_full = 0;      // full-layer pool; 0: enough for n_seq_max full contexts
};

// The KV cache type a command line names: "f16", "f32" or "q8_0" (ggml's names).
// Errors: kInvalidArgument naming the accepted values.
Result<GgmlType> parse_kv_cache_type(std::string_view name);

class KvCache {
 public:
  // Errors: kInvalidArgument for bad options or an unsupported type, kResourceExhausted
  // when the backend cannot hold the pools.
  static Result<std::unique_ptr<KvCache>> create(const Gemma4Config& target, Backend& backend,
                                                 const KvCacheOptions& options);
  // Bytes of the K and V pools create() allocates for these options (0 for invalid ones).
  static double pool_bytes(const Gemma4Config& target, const KvCacheOptions& options);

  // A free page-table row for a new, empty sequence. Errors: kResourceExhausted.
  Result<int> add_sequence();
  // Frees the sequence's pages and its row. Errors: kInvalidArgument for an unknown seq.
  Status remove_sequence(int seq);
  bool has_sequence(int seq) const { return check_seq(seq).ok(); }
  // Positions [0, length) are stored.
  int32_t length(int seq) const;

  // Reserves positions [length, length + n) of `seq` for one forward pass and returns the
  // first. Errors (nothing changes): kInvalidArgument for n > max_ubatch or an unknown seq
  // (a larger batch could overwrite ring slots that its own first query still needs),
  // kOutOfRange past n_ctx, kResourceExhausted when the page pool is empty.
  Result<int32_t> append(int seq, int32_t n);

  // Benchmarks only: appends n positions (any count) to `seq` without a forward pass, their
  // K and V zero in every layer, so that a pass at a long context can be timed without the
  // prefill that would fill it (attention reads each position the same way whatever it
  // holds). Zeroes every pool whole, other sequences' K and V included. Errors: those of
  // append (kOutOfRange past n_ctx, kResourceExhausted when the pool runs out); positions
  // appended before an error stay.
  Status append_zeros(int seq, int32_t n);

  // Keeps positions [0, n_keep) and drops the rest, in both layer kinds (rollback).
  // Errors: kFailedPrecondition when the sliding ring no longer holds the window before
  // n_keep (positions older than the ring were overwritten; re-process instead).
  Status truncate(int seq, int32_t n_keep);

  // Oldest position whose sliding-layer K/V is still in the ring (and was written: a
  // restored sequence holds sliding positions from its restore point on, restore_shape).
  int32_t swa_oldest(int seq) const;

  // Bytes of one position of layer `il`'s K (or V) pool: n_head_kv head rows of the cache's
  // type (KvLayerView). 0 for a layer index out of range.
  size_t position_bytes(int il) const;

  // Copies layer `il`'s K and V of positions [p0, p0 + n) of `seq` to host memory (k_host and
  // v_host, n * position_bytes(il) bytes each, positions in order), by Backend::download.
  // The positions must be stored: [0, length) on a full layer, [swa_oldest, length) on a
  // sliding one. Errors: kInvalidArgument (unknown seq or layer), kOutOfRange (a position not
  // stored), the backend's.
  Status read_positions(int seq, int il, int32_t p0, int32_t n, void* k_host, void* v_host) const;
  // The reverse (Backend::upload): host K and V rows into positions [p0, p0 + n) of layer
  // `il` of `seq`, with read_positions' layout and conditions.
  Status write_positions(int seq, int il, int32_t p0, int32_t n, const void* k_host, const void* v_host);
  // Makes an empty sequence (length 0) hold positions [0, length) without a forward pass,
  // their K and V not yet written (write_positions fills them): full layers get their pages;
  // sliding layers hold positions [swa_lo, length) (swa_lo >= length - swa_ring), so
  // swa_oldest is swa_lo from here until the sequence is truncated to 0. Restores a saved
  // sequence (engine/slot_file.h). Errors (nothing changes): kInvalidArgument (unknown or
  // non-empty seq, swa_lo out of [max(0, length - swa_ring), length]), kOutOfRange past
  // n_ctx, kResourceExhausted when the page pool lacks the pages.
  Status restore_shape(int seq, int32_t length, int32_t swa_lo);

  // Uploads the page tables if they changed. Call before a forward pass uses binding().
  Status sync();
  const KvCacheBinding& binding() const { return binding_; }

  int32_t n_ctx() const { return binding_.n_ctx; }
  int n_seq_max() const { return binding_.n_rows; }
  int max_ubatch() const { return max_ubatch_; }
  int32_t swa_ring() const { return binding_.swa_ring; }
  int64_t pages_total() const { return n_pages_full_; }
  int64_t pages_free() const { return static_cast<int64_t>(free_pages_.size()); }
  size_t bytes() const { return bytes_; }

 private:
  KvCache() = default;
  struct Seq {
    bool active = false;
    int32_t length = 0;
    int32_t written_end = 0;  // highest position ever written + 1 (ring overwrite tracking)
    int32_t n_pages = 0;      // full-layer pages held
    int32_t swa_lo = 0;       // no sliding position below this was written (restore_shape)
  };
  Status check_seq(int seq) const;
  // Gives `seq` the full-layer pages that positions [0, length) need (none without a
  // full-layer pool). Errors (nothing changes): kResourceExhausted when the pool lacks them.
  Status take_full_pages(int seq, int32_t length);
  // Runs f(k, v, host_offset, bytes) over positions [p0, p0 + n) of layer il of seq, a run of
  // consecutive positions within one page at a time, after checking that they are stored: k and
  // v point at the run's first position in the layer's K and V pools, host_offset is the
  // bytes of the runs before it (positions in order, position_bytes(il) each).
  template <typename F>
  Status for_position_runs(int seq, int il, int32_t p0, int32_t n, F&& f) const;

  int32_t sliding_window_ = 0;
  std::vector<bool> layer_sliding_;  // [n_layer]
  int max_ubatch_ = 0;
  int page_size_ = 0;
  int max_pages_ = 0;
  int64_t n_pages_full_ = 0;
  std::vector<Seq> seqs_;
  std::vector<int32_t> free_pages_;
  std::vector<int32_t> full_table_host_;
  std::vector<int32_t> swa_table_host_;
  bool dirty_ = true;
  Backend* backend_ = nullptr;
  std::vector<DeviceBuffer> pools_;
  DeviceBuffer full_table_;
  DeviceBuffer swa_table_;
  KvCacheBinding binding_;
  size_t bytes_ = 0;
};

}  // namespace gs
