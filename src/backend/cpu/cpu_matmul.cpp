// CPU matmul and embedding lookup: weight rows of any block type are dequantized once per
// tile and dotted with every activation row (double accumulation, one rounding), threads
// over output rows.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "core/check.h"
#include "core/quant.h"

namespace gs::cpu {

namespace {
// Output rows dequantized together: the activations are then read once per tile.
constexpr int64_t kTileRows = 16;
}  // namespace

void matmul(ThreadPool& pool, const Weight& w, Mat x, Mat y) {
  GS_CHECK(x.cols == w.n_in && y.cols == w.n_out && x.rows == y.rows);
  if (x.rows == 0) return;
  const DequantizeRowFn deq = dequantize_row_fn(w.type);
  GS_CHECK(deq != nullptr);
  const int64_t n_in = w.n_in;
  // The activations in double, once (products of two doubles from floats are exact).
  thread_local std::vector<double> xd;
  xd.resize(static_cast<size_t>(x.rows * n_in));
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* src = x.row(r);
    for (int64_t i = 0; i < n_in; ++i) xd[r * n_in + i] = src[i];
  }
  const double* xdp = xd.data();
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t n_tiles = (w.n_out + kTileRows - 1) / kTileRows;
  pool.parallel_for(n_tiles, [&](int64_t t0, int64_t t1, int) {
    thread_local std::vector<float> rowf;
    thread_local std::vector<double> tile;
    rowf.resize(static_cast<size_t>(n_in));
    tile.resize(static_cast<size_t>(kTileRows * n_in));
    double out[kTileRows];
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o0 = t * kTileRows;
      const int n_o = static_cast<int>(std::min(kTileRows, w.n_out - o0));
      for (int j = 0; j < n_o; ++j) {
        const uint8_t* src = base + static_cast<size_t>(o0 + j) * w.row_bytes;
        const float* f = reinterpret_cast<const float*>(src);
        if (w.type != GgmlType::F32) {
          deq(src, rowf.data(), n_in);
          f = rowf.data();
        }
        double* dst = tile.data() + j * n_in;
        for (int64_t i = 0; i < n_in; ++i) dst[i] = f[i];
      }
      for (int64_t r = 0; r < x.rows; ++r) {
        dot_rows_f64(tile.data(), n_in, n_o, xdp + r * n_in, n_in, out);
        float* yr = y.row(r) + o0;
        for (int j = 0; j < n_o; ++j) yr[j] = static_cast<float>(out[j]);
      }
    }
  }, min_chunk_for(kTileRows * n_in * (x.rows + 1)));
}

void embed(ThreadPool& pool, const Weight& table, const int32_t* ids, float scale, Mat out) {
  GS_CHECK(out.cols == table.n_in);
  const DequantizeRowFn deq = dequantize_row_fn(table.type);
  GS_CHECK(deq != nullptr);
  const auto* base = static_cast<const uint8_t*>(table.data);
  pool.parallel_for(out.rows, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const int32_t id = ids[r];
      GS_CHECK_MSG(id >= 0 && id < table.n_out, "token id out of range in embed");
      float* dst = out.row(r);
      deq(base + static_cast<size_t>(id) * table.row_bytes, dst, table.n_in);
      for (int64_t c = 0; c < out.cols; ++c) dst[c] *= scale;
    }
  }, min_chunk_for(table.n_in));
}

}  // namespace gs::cpu
