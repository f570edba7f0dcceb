// The largest dimensions the Gemma 4 loader accepts (load_gemma4_config refuses a file past
// them, naming the key). The synthetic writer checks its shapes against the same numbers, so
// that `gemmaserve synth` never writes a file the engine refuses (decision 0052).
#pragma once

#include <cstdint>
#include <limits>

namespace gs::limits {

inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxEmbd = int64_t{1} << 20;
inline constexpr int64_t kMaxHeads = 1024;
inline constexpr int64_t kMaxHeadDim = int64_t{1} << 14;
inline constexpr int64_t kMaxFf = int64_t{1} << 22;
inline constexpr int64_t kMaxContext = std::numeric_limits<int32_t>::max();

}  // namespace gs::limits
