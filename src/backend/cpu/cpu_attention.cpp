// CPU KV-cache writes and attention: each (query row, head) pair scores the keys of its own
// sequence in [kv_lo, kv_hi] (slots found through the page table), softmax with max
// subtraction, then the weighted sum of the values; in double, rounded once to f32.
// Threads over (row, head) pairs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "core/check.h"
#include "core/fp16.h"

namespace gs::cpu {

namespace {

// Writes one head row (n floats) to a KV pool of type F32, F16 or Q8_0 (KvLayerView).
void store_head(const float* src, void* dst, GgmlType type, int64_t n) {
  if (type == GgmlType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
  } else if (type == GgmlType::F16) {
    auto* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_fp16(src[i]);
  } else {
    kv_quantize_q8_0(src, n, dst);
  }
}

// Reads one head row (n elements) as f32: returns the row itself for F32, else `tmp` filled.
const float* load_head(const void* src, GgmlType type, int64_t n, float* tmp) {
  if (type == GgmlType::F32) return static_cast<const float*>(src);
  if (type == GgmlType::Q8_0) {
    kv_dequantize_q8_0(src, n, tmp);
    return tmp;
  }
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) tmp[i] = fp16_to_f32(s[i]);
  return tmp;
}

size_t head_bytes(const KvLayerView& kv) {
  const size_t b = kv_head_bytes(kv.type, kv.head_dim);
  GS_CHECK_MSG(b > 0, "CPU KV cache supports f32, f16 and q8_0 (head_dim % 32 == 0)");
  return b;
}

}  // namespace

void kv_store(ThreadPool& pool, Mat k, Mat v, const KvLayerView& kv, const int32_t* slots) {
  const int64_t hd = kv.head_dim;
  const int64_t width = kv.n_head_kv * hd;
  GS_CHECK(k.cols == width && v.cols == width && k.rows == v.rows);
  const size_t hb = head_bytes(kv);
  const size_t slot_bytes = kv.n_head_kv * hb;
  pool.parallel_for(k.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t t = r0; t < r1; ++t) {
      const int64_t slot = slots[t];
      GS_CHECK(slot >= 0 && slot < kv.n_slots);
      for (int j = 0; j < kv.n_head_kv; ++j) {
        store_head(k.row(t) + j * hd, static_cast<uint8_t*>(kv.k) + slot * slot_bytes + j * hb, kv.type, hd);
        store_head(v.row(t) + j * hd, static_cast<uint8_t*>(kv.v) + slot * slot_bytes + j * hb, kv.type, hd);
      }
    }
  }, min_chunk_for(2 * width));
}

void attention(ThreadPool& pool, const AttentionArgs& a) {
  const KvLayerView& kv = a.kv;
  GS_CHECK(a.n_head > 0 && kv.n_head_kv > 0 && a.n_head % kv.n_head_kv == 0 && a.head_dim == kv.head_dim);
  GS_CHECK(a.q.cols == static_cast<int64_t>(a.n_head) * a.head_dim && a.out.cols == a.q.cols &&
           a.out.rows == a.q.rows);
  const int64_t hd = a.head_dim;
  const int group = a.n_head / kv.n_head_kv;
  const size_t hb = head_bytes(kv);
  const size_t slot_bytes = kv.n_head_kv * hb;
  const auto* kbase = static_cast<const uint8_t*>(kv.k);
  const auto* vbase = static_cast<const uint8_t*>(kv.v);
  pool.parallel_for(a.q.rows * a.n_head, [&](int64_t i0, int64_t i1, int) {
    thread_local std::vector<double> scores;
    thread_local std::vector<float> tmp;
    thread_local std::vector<double> acc;
    tmp.resize(static_cast<size_t>(hd));
    acc.resize(static_cast<size_t>(hd));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / a.n_head;
      const int h = static_cast<int>(i % a.n_head);
      const int j = h / group;
      float* out = a.out.row(t) + h * hd;
      const int64_t lo = a.kv_lo[t];
      const int64_t hi = a.kv_hi[t];
      if (hi < lo) {
        std::fill(out, out + hd, 0.0f);
        continue;
      }
      GS_CHECK(lo >= 0);
      const float* q = a.q.row(t) + h * hd;
      const int32_t row = a.tok_seq[t];
      const int64_t n = hi - lo + 1;
      scores.resize(static_cast<size_t>(n));
      double max_s = -std::numeric_limits<double>::infinity();
      for (int64_t p = lo; p <= hi; ++p) {
        const int64_t slot = page_slot(a.pages, row, p);
        GS_CHECK(slot >= 0 && slot < kv.n_slots);
        const float* kr = load_head(kbase + slot * slot_bytes + j * hb, kv.type, hd, tmp.data());
        const double s = a.scale * dot_f64(q, kr, hd);
        scores[p - lo] = s;
        max_s = std::max(max_s, s);
      }
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        scores[k] = std::exp(scores[k] - max_s);
        sum += scores[k];
      }
      const double inv = 1.0 / sum;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t p = lo; p <= hi; ++p) {
        const int64_t slot = page_slot(a.pages, row, p);
        const float* vr = load_head(vbase + slot * slot_bytes + j * hb, kv.type, hd, tmp.data());
        const double w = scores[p - lo] * inv;
        for (int64_t d = 0; d < hd; ++d) acc[d] += w * vr[d];
      }
      for (int64_t d = 0; d < hd; ++d) out[d] = static_cast<float>(acc[d]);
    }
  }, min_chunk_for(2 * hd * std::max<int64_t>(1, a.q.rows > 0 ? a.kv_hi[0] - a.kv_lo[0] + 1 : 1)));
}

void kv_copy_slots(ThreadPool& pool, const KvLayerView& kv, const int32_t* src_slots, const int32_t* dst_slots,
                   int n) {
  const size_t row_bytes = kv.n_head_kv * head_bytes(kv);
  // Sequential: copies may chain (a destination that is a later source).
  for (int i = 0; i < n; ++i) {
    GS_CHECK(src_slots[i] >= 0 && src_slots[i] < kv.n_slots && dst_slots[i] >= 0 && dst_slots[i] < kv.n_slots);
    std::memmove(static_cast<uint8_t*>(kv.k) + dst_slots[i] * row_bytes,
                 static_cast<const uint8_t*>(kv.k) + src_slots[i] * row_bytes, row_bytes);
    std::memmove(static_cast<uint8_t*>(kv.v) + dst_slots[i] * row_bytes,
                 static_cast<const uint8_t*>(kv.v) + src_slots[i] * row_bytes, row_bytes);
  }
  (void)pool;
}

}  // namespace gs::cpu
