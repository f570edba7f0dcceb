// libFuzzer target: any byte string fed to the GGUF reader gives a Status or a file whose
// every accessor (metadata values, typed getters, tensor data, dequantized rows) is safe.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/quant.h"
#include "gguf/gguf_reader.h"

namespace {

volatile float g_sink;  // keeps the optimiser from dropping the reads

void exercise(const gs::gguf::GgufFile& f) {
  for (const auto& kv : f.metadata()) {
    (void)f.get_value(kv, 16);
    (void)f.get_u64(kv.key);
    (void)f.get_i32(kv.key);
    (void)f.get_f32(kv.key);
    (void)f.get_bool(kv.key);
    (void)f.get_string(kv.key);
    (void)f.get_string_array(kv.key);
    (void)f.get_int_array(kv.key);
    (void)f.get_f32_array(kv.key);
    (void)f.get_bool_array(kv.key);
  }
  std::vector<float> row;
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) == nullptr) __builtin_trap();
    if (t.size_bytes == 0) continue;
    g_sink = static_cast<float>(t.data[0] + t.data[t.size_bytes - 1]);
    // Dequantize the first row (bounded) of any dequantizable type: random scale bits
    // must not make the decoders read or write out of bounds.
    const auto deq = gs::dequantize_row_fn(t.type);
    if (deq == nullptr || t.ne[0] > 4096) continue;
    row.resize(static_cast<size_t>(t.ne[0]));
    deq(t.data, row.data(), t.ne[0]);
    g_sink = row.empty() ? 0.0f : row.back();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = gs::gguf::GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
  if (file.ok()) exercise(**file);
  return 0;
}
