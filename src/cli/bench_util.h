// Helpers shared by the bench modes: wall-clock timing of (captured) backend steps, fast
// random fill, and the table / JSON output.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"

namespace gs::cli {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds per run of `body` (a fixed op sequence) as a replayed step: two warm-up runs (the
// first captures), then `reps` timed runs, median of `rounds` rounds. The step is marked
// recurring, so a backend captures it whatever its ops' sizes (the ops' time, not their launches).
double time_step(Backend& b, uint64_t key, int reps, const std::function<void()>& body, int rounds = 3);

// splitmix64 stream: fast, seeded, good enough for benchmark data.
struct FastRng {
  uint64_t s;
  explicit FastRng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float normalish() {  // sum of uniforms: mean 0, sd ~1
    const uint64_t r = next();
    float acc = 0;
    for (int i = 0; i < 4; ++i) acc += static_cast<float>((r >> (16 * i)) & 0xffff) / 65535.0f;
    return (acc - 2.0f) * 1.732f;
  }
};

void fill_random_bytes(std::vector<uint8_t>& v, uint64_t seed);
// Random rows of a weight type with small finite block scales (any type gemmaserve can
// dequantize); n_in must be a multiple of the block size.
std::vector<uint8_t> random_weight_bytes(GgmlType type, int64_t n_in, int64_t n_out, uint64_t seed);
std::vector<float> random_floats(size_t n, float scale, uint64_t seed);

// One result line: printed as a markdown table row and kept for --json.
struct BenchRow {
  std::string group;  // "matmul", "attention", "pp", "tg", ...
  std::string name;
  std::string shape;
  double seconds = 0;  // per call / per step
  double gbs = 0;      // bytes moved per second (0: not reported)
  double tflops = 0;   // FLOP per second / 1e12 (0: not reported)
  double pct = 0;      // percent of the limit it is measured against (0: none)
  std::string limit;   // what the percentage refers to
  nlohmann::json extra = nlohmann::json::object();
};

void print_rows(const std::vector<BenchRow>& rows, std::FILE* out);
nlohmann::json rows_json(const std::vector<BenchRow>& rows);

}  // namespace gs::cli
