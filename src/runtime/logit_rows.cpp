// Passes over one row of logits for the sampler (logit_rows.h): the per-token host work of
// decoding over the whole vocabulary.
#include "runtime/logit_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace gs {

namespace {

// The passes below use GCC/Clang vector types (4 floats) in 4 independent accumulators: a row
// is the whole vocabulary (262,144 floats for Gemma 4, fresh from a device copy), and this is
// the host's per-token work in greedy decoding. The compiler does not vectorize the scalar
// form, whose NaN rules forbid reordering a max; here each lane keeps its own max. NaN never
// wins a `>`, so it is skipped; v - v is 0 exactly for finite v (NaN for infinities and NaN).
using F32x4 = float __attribute__((vector_size(16)));
using I32x4 = int32_t __attribute__((vector_size(16)));
constexpr size_t kBlock = 16;  // floats a step: 4 accumulators of 4 lanes

inline F32x4 load4(const float* p) {
  F32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline F32x4 select4(I32x4 take_a, F32x4 a, F32x4 b) {
  return reinterpret_cast<F32x4>((take_a & reinterpret_cast<I32x4>(a)) | (~take_a & reinterpret_cast<I32x4>(b)));
}

// exp(y) 4 lanes at a time for y <= 0, as 2^n e^r (n = round(y log2 e), |r| <= ln 2 / 2, e^r by
// its Taylor polynomial of degree 6): relative error ~1.2e-7, about one float ulp; 0 below
// 2^-126 (against the row's largest term, 1). libm's expf, one logit at a time, cost ~1 ms a
// 262k row.
inline F32x4 exp4_nonpositive(F32x4 y) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860676533018708e-6f;
  const F32x4 lo = {-104.0f, -104.0f, -104.0f, -104.0f};
  y = select4(y < lo, lo, y);  // also -inf
  const F32x4 t = y * kLog2e - 0.5f;  // y <= 0: truncation toward 0 rounds y log2 e to nearest
  const I32x4 ni = __builtin_convertvector(t, I32x4);
  const F32x4 nf = __builtin_convertvector(ni, F32x4);
  const F32x4 r = y - nf * kLn2Hi - nf * kLn2Lo;
  F32x4 p = r * (1.0f / 720.0f) + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I32x4 bits = (ni + 127) << 23;
  const I32x4 normal = ni >= -126;
  return reinterpret_cast<F32x4>(bits & normal) * p;  // 0 where 2^n is not a normal float
}

// The lowest index whose value equals m (m not NaN), n when there is none; blocks are tested
// whole first.
size_t first_equal(const float* x, size_t n, float m) {
  const F32x4 m4 = {m, m, m, m};
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    const I32x4 hit = (load4(x + i) == m4) | (load4(x + i + 4) == m4) | (load4(x + i + 8) == m4) | (load4(x + i + 12) == m4);
    if ((hit[0] | hit[1] | hit[2] | hit[3]) != 0) break;
  }
  for (; i < n; ++i)
    if (x[i] == m) return i;
  return n;
}

}  // namespace

RowStats row_stats(const float* x, size_t n) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const F32x4 inf4 = {kInf, kInf, kInf, kInf};
  F32x4 mx[4] = {-inf4, -inf4, -inf4, -inf4};
  I32x4 fin = {0, 0, 0, 0}, pinf = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int a = 0; a < 4; ++a) {
      const F32x4 v = load4(x + i + 4 * a);
      mx[a] = select4(v > mx[a], v, mx[a]);
      fin |= (v - v) == F32x4{0.0f, 0.0f, 0.0f, 0.0f};
      pinf |= v == inf4;
    }
  }
  RowStats s;
  for (; i < n; ++i) {
    const float v = x[i];
    s.max = v > s.max ? v : s.max;
    s.finite |= (v - v) == 0.0f;
    s.pos_inf |= v == kInf;
  }
  for (int a = 0; a < 4; ++a)
    for (int l = 0; l < 4; ++l) s.max = mx[a][l] > s.max ? mx[a][l] : s.max;
  for (int l = 0; l < 4; ++l) {
    s.finite |= fin[l] != 0;
    s.pos_inf |= pinf[l] != 0;
  }
  return s;
}

// e[i] = exp((x[i] - mx) * inv_t) for x[i] <= mx (NaN already -inf), inv_t > 0; returns their
// sum in double (the softmax normalizer over a whole row). e may be null.
double exp_row(const float* x, size_t n, float mx, float inv_t, float* e) {
  const F32x4 m4 = {mx, mx, mx, mx}, it4 = {inv_t, inv_t, inv_t, inv_t};
  using F64x4 = double __attribute__((vector_size(32)));
  F64x4 acc = {0.0, 0.0, 0.0, 0.0};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const F32x4 v = exp4_nonpositive((load4(x + i) - m4) * it4);
    if (e) std::memcpy(e + i, &v, sizeof v);
    acc += __builtin_convertvector(v, F64x4);
  }
  double z = acc[0] + acc[1] + acc[2] + acc[3];
  for (; i < n; ++i) {
    const float v = std::exp((x[i] - mx) * inv_t);
    if (e) e[i] = v;
    z += static_cast<double>(v);
  }
  return z;
}

// Greedy's pick from one row scan: the first column of the largest value; token 0 for a row
// of NaN and -inf only.
int32_t first_max(std::span<const float> x, const RowStats& s) {
  if (!(s.max > -std::numeric_limits<float>::infinity())) return 0;
  return static_cast<int32_t>(first_equal(x.data(), x.size(), s.max));
}

// distribution()'s order: higher logit first, then the lower id.
bool before(const TokenProb& a, const TokenProb& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); }

// The k best of `x` in that order, into `out` (sorted), in one pass with a heap of k: after the
// first few thousand elements a new one rarely enters, so this is about one compare each.
void select_top(const std::vector<float>& x, size_t k, std::vector<TokenProb>* out) {
  out->clear();
  k = std::min(k, x.size());
  if (k == 0) return;
  const size_t n = x.size();
  size_t i = 0;
  for (; i < k; ++i) {
    out->push_back({static_cast<int32_t>(i), x[i]});
    std::push_heap(out->begin(), out->end(), before);  // front: the worst kept
  }
  // A later element enters only above the worst kept value: the ids grow, so a tie never
  // goes before it. Blocks with nothing above it (nearly all, after the first few thousand
  // elements) are passed over by a vector compare.
  auto offer = [&](size_t j) {
    if (x[j] > out->front().p) {
      std::pop_heap(out->begin(), out->end(), before);
      out->back() = {static_cast<int32_t>(j), x[j]};
      std::push_heap(out->begin(), out->end(), before);
    }
  };
  for (; i < n && i % kBlock != 0; ++i) offer(i);
  for (; i + kBlock <= n; i += kBlock) {
    const float f = out->front().p;
    const F32x4 thr = {f, f, f, f};
    const I32x4 hit = (load4(x.data() + i) > thr) | (load4(x.data() + i + 4) > thr) | (load4(x.data() + i + 8) > thr) |
                      (load4(x.data() + i + 12) > thr);
    if ((hit[0] | hit[1] | hit[2] | hit[3]) == 0) continue;
    for (size_t j = i; j < i + kBlock; ++j) offer(j);
  }
  for (; i < n; ++i) offer(i);
  std::sort_heap(out->begin(), out->end(), before);
}

// The draw's walk past the sorted prefix when it ranges over the whole row (no top-k, top-p or
// min-p cut), without sorting the tail: the tail (every element after `last`, the prefix's
// last, in distribution order) is bucketed by logit (kBuckets equal widths from last's logit
// down to where exp((x - mx) inv_t) is no longer a normal float); whole buckets are passed by
// their sums, and only the bucket where the cumulative sum passes `target` is sorted and walked
// element by element as the prefix was. Returns the token the full sorted walk would draw
// (bucket sums use exp4_nonpositive's values: a draw within ~1e-7 of a bucket's edge may go to
// its neighbour); `prev` is the prefix's last token, returned when nothing in the tail counts.
// A flat row's draw used to sort most of its 262k logits (~15-20 ms).
int32_t draw_in_tail(const std::vector<float>& x, const TokenProb& last, float mx, float inv_t, double cum,
                     double target, TailScratch* t) {
  constexpr int kBuckets = 4096;
  constexpr uint16_t kOut = 0xFFFF;  // in the prefix, or a term that is not a normal float
  const size_t n = x.size();
  const float hi = last.p, lo = mx - 87.0f / inv_t;
  if (!(hi > lo)) return last.id;
  t->e.resize(n);
  exp_row(x.data(), n, mx, inv_t, t->e.data());
  t->bucket.resize(n);
  t->sum.assign(kBuckets, 0.0);
  const float scale = static_cast<float>(kBuckets) / (hi - lo);
  int last_bucket = -1;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const bool in_tail = v < hi || (v == hi && static_cast<int32_t>(i) > last.id);
    if (!in_tail || !(v >= lo) || !(t->e[i] > 0.0f)) {
      t->bucket[i] = kOut;
      continue;
    }
    const int b = std::min(kBuckets - 1, static_cast<int>((hi - v) * scale));
    t->bucket[i] = static_cast<uint16_t>(b);
    t->sum[static_cast<size_t>(b)] += static_cast<double>(t->e[i]);
    last_bucket = std::max(last_bucket, b);
  }
  auto sorted_members = [&](int b) {
    t->members.clear();
    for (size_t i = 0; i < n; ++i)
      if (t->bucket[i] == b) t->members.push_back({static_cast<int32_t>(i), x[i]});
    std::sort(t->members.begin(), t->members.end(), before);
  };
  int32_t prev = last.id;
  for (int b = 0; b <= last_bucket; ++b) {
    if (t->sum[static_cast<size_t>(b)] == 0.0) continue;
    if (cum + t->sum[static_cast<size_t>(b)] <= target) {
      cum += t->sum[static_cast<size_t>(b)];
      continue;
    }
    sorted_members(b);
    for (const TokenProb& c : t->members) {
      const auto e = static_cast<double>(std::exp((c.p - mx) * inv_t));
      if (e <= 0) return prev;
      cum += e;
      if (target < cum) return c.id;
      prev = c.id;
    }
  }
  if (last_bucket < 0) return prev;
  sorted_members(last_bucket);  // the sums fell short of target by rounding: the last term drawn
  return t->members.empty() ? prev : t->members.back().id;
}

}  // namespace gs
