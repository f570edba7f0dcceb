// Passes over one row of logits (the whole vocabulary: 262,144 floats for Gemma 4, fresh from
// a device copy each token), for the sampler chain (sampler.h): the largest value and the
// row's validity, greedy's pick, the softmax normalizer, the k best candidates, and a draw's
// walk past them. The hot passes use GCC/Clang vector types (4 floats, 4 independent
// accumulators): the compiler does not vectorize their scalar forms, whose NaN rules forbid
// reordering a max.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace gs {

struct TokenProb {
  int32_t id = 0;
  float p = 0.0f;
};

// The sampler's distribution order: higher value first, then the lower id.
bool before(const TokenProb& a, const TokenProb& b);

// What one pass over a row finds: its largest value with NaN skipped (-inf when there is
// none), whether any value is finite, whether any is +inf.
struct RowStats {
  float max = -std::numeric_limits<float>::infinity();
  bool finite = false;
  bool pos_inf = false;
};
RowStats row_stats(const float* x, size_t n);

// Greedy's pick from a row and its row_stats: the first column holding the largest value;
// token 0 for a row of NaN and -inf only.
int32_t first_max(std::span<const float> x, const RowStats& s);

// e[i] = exp((x[i] - mx) * inv_t) for x[i] <= mx (NaN already -inf), inv_t > 0; returns their
// sum in double (the softmax normalizer over a whole row). e may be null. The exponential is
// 2^n times a degree-6 polynomial (relative error ~1.2e-7); terms below 2^-126 count as 0.
double exp_row(const float* x, size_t n, float mx, float inv_t, float* e);

// The k best of x in the distribution order into out (sorted), in one pass with a heap of k;
// 16-element blocks with nothing above the worst kept value are passed by one vector compare.
// x must hold no NaN.
void select_top(const std::vector<float>& x, size_t k, std::vector<TokenProb>* out);

// Scratch of draw_in_tail (kept by the sampler between calls).
struct TailScratch {
  std::vector<float> e;
  std::vector<uint16_t> bucket;
  std::vector<double> sum;
  std::vector<TokenProb> members;
};

// The draw's walk past a sorted prefix when the draw ranges over the whole row x (NaN already
// -inf; no top-k, top-p or min-p cut): `last` is the prefix's last candidate, cum the
// prefix's summed terms exp((x - mx) inv_t), target the draw's point (u times the
// normalizer). The tail (every element after `last` in distribution order) is bucketed by
// value (4096 equal widths from last's value down to where a term is no longer a normal
// float); whole buckets are passed by their sums, and only the bucket where the sum passes
// target is sorted and walked element by element, as the prefix was. Returns the token the
// fully sorted walk draws (a draw within ~1e-7 of a bucket's edge may go to its neighbour);
// last.id when nothing in the tail counts. A flat row's draw used to sort most of the row.
int32_t draw_in_tail(const std::vector<float>& x, const TokenProb& last, float mx, float inv_t, double cum,
                     double target, TailScratch* t);

}  // namespace gs
