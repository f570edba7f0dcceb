// Shared helpers of the CUDA parity tests: the two backends, buffers holding the same data in
// both, random ggml blocks of every type, and error measures.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "core/fp16.h"
#include "core/ggml_type.h"
#include "core/quant.h"

namespace gs::test {

// The CPU oracle, the CUDA backend with its fast kernels and with its plain ones.
struct Backends {
  std::unique_ptr<Backend> cpu;
  std::unique_ptr<Backend> fast;
  std::unique_ptr<Backend> simple;

  static Backends& get() {
    static Backends b = [] {
      Backends r;
      r.cpu = create_cpu_backend(0);
      if (const char* e = std::getenv("GS_CUDA_TEST_ON_CPU"); e && std::string(e) == "1") {
        // Dry run of the harness without a GPU: every side is the CPU oracle.
        r.fast = create_cpu_backend(0);
        r.simple = create_cpu_backend(0);
        return r;
      }
      CudaBackendOptions o;
      auto f = create_cuda_backend(0, o);
      if (f.ok()) r.fast = std::move(f).value();
      o.simple_kernels = true;
      auto s = create_cuda_backend(0, o);
      if (s.ok()) r.simple = std::move(s).value();
      return r;
    }();
    return b;
  }
  bool ready() const { return cpu && fast && simple; }
};

#define GS_REQUIRE_BACKENDS()                                                                   \
  do {                                                                                          \
    ASSERT_TRUE(::gs::test::Backends::get().cpu) << "the CPU backend is not available";         \
    ASSERT_TRUE(::gs::test::Backends::get().fast) << "no CUDA device (these tests need a GPU)"; \
    ASSERT_TRUE(::gs::test::Backends::get().simple);                                            \
  } while (0)

// A buffer in one backend, owned.
struct Buf {
  Backend* be = nullptr;
  DeviceBuffer mem;
  size_t bytes = 0;

  Buf() = default;
  Buf(Backend& b, size_t n_bytes) : be(&b), bytes(n_bytes) {
    auto r = DeviceBuffer::make(b, n_bytes);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok()) mem = std::move(r).value();
  }
  void* data() const { return mem.data(); }
  float* f() const { return static_cast<float*>(mem.data()); }
  int32_t* i() const { return static_cast<int32_t*>(mem.data()); }
  void put(const void* src, size_t n) {
    Status s = be->upload(mem.data(), src, n);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    put(v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> get(size_t n) const {
    std::vector<T> v(n);
    Status s = be->download(v.data(), mem.data(), n * sizeof(T));
    EXPECT_TRUE(s.ok()) << s.to_string();
    return v;
  }
};

inline std::mt19937& rng() {
  static std::mt19937 r(1234567);
  return r;
}

inline std::vector<float> randn(size_t n, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng()) * scale;
  return v;
}

inline std::vector<int32_t> to_i32(const std::vector<int>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

inline void set_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// Random rows of `type`: random bytes for the quantized payload (every bit pattern shows up)
// with block scales set to small finite values, so the dequantized weights are O(0.1..1).
inline std::vector<uint8_t> random_weight(GgmlType type, int64_t n_in, int64_t n_out) {
  const size_t rb = ggml_row_size(type, n_in).value();
  std::vector<uint8_t> buf(rb * static_cast<size_t>(n_out));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> ds(0.5e-3f, 4e-3f);
  if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) {
    const auto v = randn(static_cast<size_t>(n_in * n_out), 0.1f);
    for (size_t i = 0; i < v.size(); ++i) {
      if (type == GgmlType::F32) std::memcpy(buf.data() + 4 * i, &v[i], 4);
      if (type == GgmlType::F16) {
        const uint16_t h = f32_to_fp16(v[i]);
        std::memcpy(buf.data() + 2 * i, &h, 2);
      }
      if (type == GgmlType::BF16) {
        const uint16_t h = f32_to_bf16(v[i]);
        std::memcpy(buf.data() + 2 * i, &h, 2);
      }
    }
    return buf;
  }
  for (auto& b : buf) b = static_cast<uint8_t>(byte(rng()));
  const auto& tr = ggml_type_traits(type);
  const size_t bb = tr.block_bytes;
  for (size_t off = 0; off + bb <= buf.size(); off += bb) {
    uint8_t* blk = buf.data() + off;
    switch (type) {
      case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: case GgmlType::IQ4_NL: case GgmlType::IQ4_XS:
        set_f16(blk, ds(rng()) * 10.0f);
        break;
      case GgmlType::Q4_1: case GgmlType::Q5_1:
        set_f16(blk, ds(rng()) * 10.0f);
        set_f16(blk + 2, -ds(rng()) * 40.0f);
        break;
      case GgmlType::Q2_K:
        set_f16(blk + 80, ds(rng()));
        set_f16(blk + 82, ds(rng()));
        break;
      case GgmlType::Q3_K: set_f16(blk + 108, ds(rng())); break;
      case GgmlType::Q4_K: case GgmlType::Q5_K:
        set_f16(blk, ds(rng()));
        set_f16(blk + 2, ds(rng()));
        break;
      case GgmlType::Q6_K: set_f16(blk + 208, ds(rng()) * 0.5f); break;
      case GgmlType::MXFP4: blk[0] = static_cast<uint8_t>(118 + byte(rng()) % 6); break;
      default: break;
    }
  }
  return buf;
}

// Types the CUDA backend stores in their own block format; any other type it converts to f16
// at upload (so even its f32 paths see f16-rounded weights).
inline bool cuda_native_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32: case GgmlType::F16: case GgmlType::BF16: case GgmlType::Q8_0: case GgmlType::Q4_0:
    case GgmlType::Q4_K: case GgmlType::Q5_K: case GgmlType::Q6_K:
      return true;
    default:
      return false;
  }
}

// ||a - b|| / ||b|| and max |a - b| / max |b| (NaN or size mismatch gives +inf).
struct ErrStats {
  double rel_l2 = 0;
  double rel_max = 0;
};
inline ErrStats compare(const std::vector<float>& got, const std::vector<float>& ref) {
  ErrStats e;
  if (got.size() != ref.size()) return {INFINITY, INFINITY};
  double num = 0, den = 0, mx = 0, mref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    if (!std::isfinite(got[i]) && std::isfinite(ref[i])) return {INFINITY, INFINITY};
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
    mx = std::max(mx, std::fabs(d));
    mref = std::max(mref, std::fabs(static_cast<double>(ref[i])));
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  e.rel_max = mref > 0 ? mx / mref : mx;
  return e;
}

// Rows x cols with `stride` >= cols, the gaps poisoned with NaN: reading them shows up.
struct HostMat {
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<float> v;
  HostMat(int64_t r, int64_t c, int64_t s, float scale = 1.0f) : rows(r), cols(c), stride(s) {
    v.assign(static_cast<size_t>(std::max<int64_t>(1, r * s)), NAN);
    const auto x = randn(static_cast<size_t>(r * c), scale);
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) v[static_cast<size_t>(i * s + j)] = x[static_cast<size_t>(i * c + j)];
  }
  std::vector<float> dense(const std::vector<float>& raw) const {
    std::vector<float> d(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) d[static_cast<size_t>(i * cols + j)] = raw[static_cast<size_t>(i * stride + j)];
    return d;
  }
};

// The same HostMat in one backend.
struct DevMat {
  Buf buf;
  Mat m;
  DevMat(Backend& b, const HostMat& h) : buf(b, h.v.size() * 4) {
    buf.put(h.v);
    m = Mat{buf.f(), h.rows, h.cols, h.stride};
  }
  DevMat(Backend& b, int64_t rows, int64_t cols, int64_t stride) : buf(b, static_cast<size_t>(std::max<int64_t>(1, rows * stride)) * 4) {
    std::vector<float> poison(static_cast<size_t>(std::max<int64_t>(1, rows * stride)), NAN);
    buf.put(poison);
    m = Mat{buf.f(), rows, cols, stride};
  }
  std::vector<float> dense() {
    std::vector<float> raw = buf.get<float>(static_cast<size_t>(std::max<int64_t>(1, m.rows * m.stride)));
    std::vector<float> d(static_cast<size_t>(m.rows * m.cols));
    for (int64_t i = 0; i < m.rows; ++i)
      for (int64_t j = 0; j < m.cols; ++j) d[static_cast<size_t>(i * m.cols + j)] = raw[static_cast<size_t>(i * m.stride + j)];
    return d;
  }
};

}  // namespace gs::test
