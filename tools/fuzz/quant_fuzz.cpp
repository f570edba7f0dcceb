// libFuzzer target: quantizers and dequantizers on arbitrary floats (NaN, inf, subnormals,
// huge values) and arbitrary block bytes: memory safety and no undefined behaviour.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/quant.h"

namespace {

constexpr gs::GgmlType kTypes[] = {
    gs::GgmlType::F32,  gs::GgmlType::F16,  gs::GgmlType::BF16, gs::GgmlType::Q4_0,   gs::GgmlType::Q4_1,
    gs::GgmlType::Q5_0, gs::GgmlType::Q5_1, gs::GgmlType::Q8_0, gs::GgmlType::Q2_K,   gs::GgmlType::Q3_K,
    gs::GgmlType::Q4_K, gs::GgmlType::Q5_K, gs::GgmlType::Q6_K, gs::GgmlType::IQ4_NL, gs::GgmlType::IQ4_XS,
    gs::GgmlType::MXFP4, gs::GgmlType::Q8_K};

volatile float g_sink;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const gs::GgmlType type = kTypes[data[0] % (sizeof(kTypes) / sizeof(kTypes[0]))];
  const bool fast = data[1] & 1;
  data += 2;
  size -= 2;
  const auto& traits = gs::ggml_type_traits(type);
  // Whole blocks of floats from the input (at least one block, zero-padded).
  const int64_t n_blocks = std::max<int64_t>(1, static_cast<int64_t>(size / 4) / traits.block_elems);
  const int64_t n = std::min<int64_t>(n_blocks, 8) * traits.block_elems;
  std::vector<float> x(static_cast<size_t>(n), 0.0f);
  std::memcpy(x.data(), data, std::min(size, x.size() * 4));
  std::vector<uint8_t> blocks(*gs::ggml_row_size(type, n));
  std::vector<float> y(static_cast<size_t>(n));
  const auto quant = fast ? gs::quantize_row_fast_fn(type) : gs::quantize_row_fn(type);
  if (quant) {
    quant(x.data(), blocks.data(), n);
    gs::dequantize_row_fn(type)(blocks.data(), y.data(), n);
    g_sink = y.back();
  }
  // The input bytes read directly as blocks.
  std::memset(blocks.data(), 0, blocks.size());
  std::memcpy(blocks.data(), data, std::min(size, blocks.size()));
  gs::dequantize_row_fn(type)(blocks.data(), y.data(), n);
  g_sink = y.front();
  return 0;
}
