// Seeded random weights written straight as quantized blocks (no float quantization), for
// synthetic models: random quants with small finite scales whose elements have a chosen std.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/ggml_type.h"

namespace gs::synth {

// splitmix64 (Steele, Lea, Flood 2014): a small, fast, seedable generator.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_;
};

// A seed for item (a, b) of a stream: the same (seed, a, b) always gives the same numbers,
// whatever order or thread generates them.
uint64_t derive_seed(uint64_t seed, uint64_t a, uint64_t b);

// Fills `n_blocks` blocks of `type` (elements for F32/F16/BF16) at dst: random quants and
// scales drawn so that the dequantized elements have mean ~0 and std ~`std` (within a factor
// of about 1.5 across types). Supports every type with a dequantizer except Q8_K.
void fill_random_blocks(GgmlType type, uint8_t* dst, size_t n_blocks, float std, Rng& rng);

}  // namespace gs::synth
