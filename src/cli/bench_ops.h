// `gemmaserve bench --ops`: the backend's ops alone at the Gemma-4-31B shapes, each next to
// the limit it is measured against (copy bandwidth for memory-bound ops, a large f16 GEMM
// for prefill matmuls), measured in the same run.
#pragma once

#include <vector>

#include "backend/backend.h"
#include "bench_util.h"

namespace gs::cli {

struct OpsBenchOptions {
  bool quick = false;  // fewer shapes and repetitions (CPU backends)
  std::vector<int> depths = {4096, 32768, 131072};
};

Status run_ops_bench(Backend& b, const OpsBenchOptions& opt, std::vector<BenchRow>& rows);

}  // namespace gs::cli
