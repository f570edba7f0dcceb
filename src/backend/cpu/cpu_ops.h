// The CPU backend's op kernels as free functions over a thread pool (one file per op family).
#pragma once

#include <algorithm>
#include <cstdint>

#include "backend/backend.h"
#include "core/thread_pool.h"

namespace gs::cpu {

// Dot product of f32 vectors accumulated in double (each product is exact in double), so
// the result is the correctly rounded sum up to a few units in 1e-16: the oracle computes
// every op as exactly as it can and rounds once, which keeps it as close as possible to any
// other careful implementation (the Gemma 4 goldens amplify one-ulp differences ~1e5-fold).
// The order is fixed: a row's result never depends on how many rows are in the batch.
double dot_f64(const float* a, const float* b, int64_t n);  // cpu_dot.cpp
// out[j] = w[j * ldw .. + n) . x[0 .. n) for j < n_w, in double.
void dot_rows_f64(const double* w, int64_t ldw, int n_w, const double* x, int64_t n, double* out);

// Waking the pool's workers costs microseconds, so an op splits its items into chunks of
// at least this much work (multiply-adds or elements); a small op runs on the caller alone.
inline constexpr int64_t kMinChunkWork = int64_t{1} << 15;
inline int64_t min_chunk_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinChunkWork / std::max<int64_t>(1, work_per_item));
}

// Slot of position `pos` of page-table row `row` (backend.h, PageTableView).
inline int64_t page_slot(const PageTableView& pt, int32_t row, int64_t pos) {
  const int64_t wrap = pt.wrap_pages > 0 ? pt.wrap_pages : pt.max_pages;
  const int64_t page = pt.pages[static_cast<int64_t>(row) * pt.max_pages + (pos / pt.page_size) % wrap];
  return page * pt.page_size + pos % pt.page_size;
}

// cpu_matmul.cpp
void matmul(ThreadPool& pool, const Weight& w, Mat x, Mat y);
void embed(ThreadPool& pool, const Weight& table, const int32_t* ids, float scale, Mat out);

// cpu_elementwise.cpp
void rms_norm(ThreadPool& pool, Mat x, const float* weight, int64_t group, float eps, Mat out);
void rope(ThreadPool& pool, Mat x, const int32_t* pos, const RopeArgs& args);
void gelu_mul(ThreadPool& pool, Mat gate, Mat up, Mat out);
void add(ThreadPool& pool, Mat a, Mat b, Mat out);
void scale(ThreadPool& pool, Mat x, float s);
void softcap(ThreadPool& pool, Mat x, float cap);
void argmax_rows(ThreadPool& pool, Mat x, int32_t* ids, float* p_top);
void gather_rows(ThreadPool& pool, Mat src, const int32_t* rows, Mat dst);
void copy(ThreadPool& pool, Mat src, Mat dst);

// cpu_attention.cpp
void kv_store(ThreadPool& pool, Mat k, Mat v, const KvLayerView& kv, const int32_t* slots);
void attention(ThreadPool& pool, const AttentionArgs& args);
void kv_copy_slots(ThreadPool& pool, const KvLayerView& kv, const int32_t* src_slots, const int32_t* dst_slots,
                   int n);

}  // namespace gs::cpu
