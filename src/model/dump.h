// Named intermediates of a forward pass: every op output carries a stable name and a layer
// index so a test or the CLI can compare CPU, CUDA and golden states layer by layer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace gs {

// One intermediate, copied to host memory: rows x cols f32, row-major, contiguous.
struct DumpTensor {
  std::string_view name;  // e.g. "attn_norm", "q_rope", "attn_out", "l_out", "logits"
  int layer = -1;         // -1 for tensors outside the layers (embedding, output)
  int64_t rows = 0;
  int64_t cols = 0;
  const float* data = nullptr;
};

using DumpFn = std::function<void(const DumpTensor&)>;

// A DumpFn that writes each tensor to `dir`/<step>-<layer>-<name>.f32 (raw little-endian
// f32, rows x cols) and appends a line "file name layer rows cols" to `dir`/index.txt.
// `dir` is created if needed. Write errors are logged, not fatal (it is a debugging aid).
Result<DumpFn> make_dir_dump(const std::string& dir);

}  // namespace gs
