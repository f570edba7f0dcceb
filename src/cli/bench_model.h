// `gemmaserve bench -m FILE`: llama-bench's tests on a Gemma 4 file through the model
// forward and KV cache: pp N (prompt of N tokens from depth d), tg N (N single-token steps
// from depth d), verify-k (one pass of k tokens from depth d, the MTP verification cost),
// each next to its limit (bytes moved per step at the measured copy bandwidth; FLOP at the
// measured GEMM rate). With a drafter (mtp), tg N also runs as speculative generation: the
// tokens per second of greedy MTP rounds of draft_max drafts, with what was drafted and
// accepted.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "bench_util.h"

namespace gs::cli {

struct ModelBenchOptions {
  std::string model;
  std::vector<int> prompt;  // pp N
  std::vector<int> gen;     // tg N
  std::vector<int> depth;
  std::vector<int> verify;  // k
  int reps = 3;
  int ubatch = 4096;
  // The depth's positions get zero K and V without a forward pass (KvCache::append_zeros)
  // instead of being prefilled: decode and verify at a 1M context can then be timed without
  // the prefill of 1M tokens (pp at depth then attends to zeros, at the same cost).
  bool fill_zeros = false;
  std::string mtp;    // an MTP drafter (gemma4-assistant) GGUF, or empty
  int draft_max = 4;  // drafts per speculative round (fixed, not adaptive)
  GgmlType kv_type = GgmlType::F16;  // KV cache storage (F16, F32 or Q8_0)
};

Status run_model_bench(Backend& b, const ModelBenchOptions& opt, std::vector<BenchRow>& rows);

}  // namespace gs::cli
