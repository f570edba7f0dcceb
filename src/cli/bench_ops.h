// `gemmaserve bench --ops`: the backend's ops alone at the Gemma-4-31B shapes, each next to
// the limit it is measured against (copy bandwidth for memory-bound ops, a large f16 GEMM
// for prefill matmuls), measured in the same run.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "bench_util.h"

namespace gs::cli {

struct OpsBenchOptions {
  bool quick = false;  // fewer shapes and repetitions (CPU backends)
  std::vector<int> depths = {4096, 32768, 131072};
  // "matmul": the decode matmuls alone (Q4_K, Q6_K, Q8_0; rows 1, 5, 8); "attention": the
  // attention rows alone (decode at the depths, prefill; after the copy and GEMM ceilings);
  // "small": the small ops alone; "ramp": the Q4_K matvec's fixed cost a launch against its
  // bytes (bench_ramp.h; not in the full run).
  std::string only;
};

Status run_ops_bench(Backend& b, const OpsBenchOptions& opt, std::vector<BenchRow>& rows);

// The two ceilings, measured through the backend: bytes/s of a large copy (read + write) and
// FLOP/s of a 4096 x 5376 x 21504 matmul with an f16 weight. Each adds its row to `rows`.
Result<double> measure_copy_bandwidth(Backend& b, bool quick, std::vector<BenchRow>& rows);
Result<double> measure_gemm_flops(Backend& b, bool quick, std::vector<BenchRow>& rows);

}  // namespace gs::cli
