// Bench helpers: step timing, random data, table and JSON output.
#include "bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "core/ggml_type.h"

namespace gs::cli {

double time_step(Backend& b, uint64_t key, int reps, const std::function<void()>& body, int rounds) {
  for (int i = 0; i < 2; ++i) b.run_step(key, true, body);
  (void)b.synchronize();
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    const double t0 = now_s();
    for (int i = 0; i < reps; ++i) b.run_step(key, true, body);
    (void)b.synchronize();
    t.push_back((now_s() - t0) / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void fill_random_bytes(std::vector<uint8_t>& v, uint64_t seed) {
  FastRng r(seed);
  size_t i = 0;
  for (; i + 8 <= v.size(); i += 8) {
    const uint64_t x = r.next();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < v.size(); ++i) v[i] = static_cast<uint8_t>(r.next());
}

std::vector<float> random_floats(size_t n, float scale, uint64_t seed) {
  FastRng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = r.normalish() * scale;
  return v;
}

namespace {
void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_fp16(v);
  std::memcpy(p, &h, 2);
}
}  // namespace

std::vector<uint8_t> random_weight_bytes(GgmlType type, int64_t n_in, int64_t n_out, uint64_t seed) {
  const size_t rb = ggml_row_size(type, n_in).value();
  std::vector<uint8_t> buf(rb * static_cast<size_t>(n_out));
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
    FastRng r(seed);
    const size_t n = static_cast<size_t>(n_in * n_out);
    for (size_t i = 0; i < n; ++i) {
      const float v = r.normalish() * 0.05f;
      if (type == GgmlType::F32) std::memcpy(buf.data() + 4 * i, &v, 4);
      if (type == GgmlType::F16) put_f16(buf.data() + 2 * i, v);
      if (type == GgmlType::BF16) {
        const uint16_t h = f32_to_bf16(v);
        std::memcpy(buf.data() + 2 * i, &h, 2);
      }
    }
    return buf;
  }
  fill_random_bytes(buf, seed);
  const size_t bb = ggml_type_traits(type).block_bytes;
  for (size_t off = 0; off + bb <= buf.size(); off += bb) {
    uint8_t* blk = buf.data() + off;
    switch (type) {
      case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS:
        put_f16(blk, 0.01f);
        break;
      case GgmlType::Q4_1: case GgmlType::Q5_1:
        put_f16(blk, 0.01f);
        put_f16(blk + 2, -0.05f);
        break;
      case GgmlType::Q2_K: put_f16(blk + 80, 0.002f); put_f16(blk + 82, 0.002f); break;
      case GgmlType::Q3_K: put_f16(blk + 108, 0.002f); break;
      case GgmlType::Q4_K: case GgmlType::Q5_K: put_f16(blk, 0.002f); put_f16(blk + 2, 0.002f); break;
      case GgmlType::Q6_K: put_f16(blk + 208, 0.001f); break;
      default: break;
    }
  }
  return buf;
}

void print_rows(const std::vector<BenchRow>& rows, std::FILE* out) {
  std::fprintf(out, "| %-10s | %-28s | %-30s | %12s | %9s | %8s | %7s | %-22s |\n", "group", "test", "shape", "time",
               "GB/s", "TFLOP/s", "% limit", "limit");
  std::fprintf(out, "|%s|%s|%s|%s|%s|%s|%s|%s|\n", "------------", "------------------------------",
               "--------------------------------", "--------------", "-----------", "----------", "---------",
               "------------------------");
  for (const BenchRow& r : rows) {
    char t[32];
    if (r.seconds >= 1e-3) std::snprintf(t, sizeof t, "%.3f ms", r.seconds * 1e3);
    else std::snprintf(t, sizeof t, "%.2f us", r.seconds * 1e6);
    char g[32] = "", f[32] = "", p[32] = "";
    if (r.gbs > 0) std::snprintf(g, sizeof g, "%.0f", r.gbs / 1e9);
    if (r.tflops > 0) std::snprintf(f, sizeof f, "%.1f", r.tflops);
    if (r.pct > 0) std::snprintf(p, sizeof p, "%.1f", r.pct);
    std::fprintf(out, "| %-10s | %-28s | %-30s | %12s | %9s | %8s | %7s | %-22s |\n", r.group.c_str(), r.name.c_str(),
                 r.shape.c_str(), t, g, f, p, r.limit.c_str());
  }
  std::fflush(out);
}

nlohmann::json rows_json(const std::vector<BenchRow>& rows) {
  nlohmann::json a = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    nlohmann::json j = {{"group", r.group}, {"test", r.name},  {"shape", r.shape}, {"seconds", r.seconds},
                        {"gb_per_s", r.gbs / 1e9}, {"tflops", r.tflops}, {"pct_of_limit", r.pct}, {"limit", r.limit}};
    for (auto it = r.extra.begin(); it != r.extra.end(); ++it) j[it.key()] = it.value();
    a.push_back(j);
  }
  return a;
}

}  // namespace gs::cli
