// The CPU Backend: host memory, weights used in place, ops dispatched to the kernels in
// cpu_*.cpp on a fixed thread pool.
#include "backend/cpu/cpu_backend.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "backend/cpu/cpu_ops.h"
#include "core/quant.h"
#include "core/thread_pool.h"

namespace gs {

namespace {

constexpr size_t kAlignment = 64;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int n_threads) : pool_(n_threads) {}
  ~CpuBackend() override {
    for (auto& [p, bytes] : allocations_) std::free(p);
  }

  BackendKind kind() const override { return BackendKind::kCpu; }
  std::string description() const override {
    return fmt::format("cpu ({} thread{})", pool_.n_threads(), pool_.n_threads() == 1 ? "" : "s");
  }

  Result<void*> alloc(size_t bytes) override {
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
    if (!p) return make_status(StatusCode::kResourceExhausted, "cpu backend: cannot allocate {} bytes", bytes);
    std::lock_guard<std::mutex> lock(mu_);
    allocations_[p] = rounded;
    bytes_in_use_ += rounded;
    return p;
  }
  void free(void* p) override {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocations_.find(p);
    if (it == allocations_.end()) return;
    bytes_in_use_ -= it->second;
    allocations_.erase(it);
    std::free(p);
  }
  Status upload(void* dst, const void* src_host, size_t bytes) override {
    std::memcpy(dst, src_host, bytes);
    return {};
  }
  Status download(void* dst_host, const void* src, size_t bytes) override {
    std::memcpy(dst_host, src, bytes);
    return {};
  }
  Status memset_zero(void* dst, size_t bytes) override {
    std::memset(dst, 0, bytes);
    return {};
  }
  Status synchronize() override { return {}; }
  size_t bytes_in_use() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_in_use_ + weight_bytes_;
  }

  Result<Weight> upload_weight(const void* host, GgmlType type, int64_t n_in, int64_t n_out) override {
    if (dequantize_row_fn(type) == nullptr) {
      return make_status(StatusCode::kUnimplemented, "cpu backend cannot multiply weights of type {}",
                         ggml_type_name(type));
    }
    if (n_in <= 0 || n_out <= 0) {
      return make_status(StatusCode::kInvalidArgument, "weight shape [{}, {}] is empty", n_in, n_out);
    }
    Weight w;
    GS_ASSIGN_OR_RETURN(w.row_bytes, ggml_row_size(type, n_in));
    w.data = host;
    w.type = type;
    w.n_in = n_in;
    w.n_out = n_out;
    std::lock_guard<std::mutex> lock(mu_);
    weight_bytes_ += w.row_bytes * static_cast<size_t>(n_out);
    return w;
  }

  void embed(const Weight& table, const int32_t* ids, float s, Mat out) override {
    cpu::embed(pool_, table, ids, s, out);
  }
  void matmul(const Weight& w, Mat x, Mat y) override { cpu::matmul(pool_, w, x, y); }
  void rms_norm(Mat x, const float* weight, int64_t group, float eps, Mat out) override {
    cpu::rms_norm(pool_, x, weight, group, eps, out);
  }
  void rope(Mat x, const int32_t* pos, const RopeArgs& args) override { cpu::rope(pool_, x, pos, args); }
  void gelu_mul(Mat gate, Mat up, Mat out) override { cpu::gelu_mul(pool_, gate, up, out); }
  void add(Mat a, Mat b, Mat out) override { cpu::add(pool_, a, b, out); }
  void scale(Mat x, float s) override { cpu::scale(pool_, x, s); }
  void softcap(Mat x, float cap) override { cpu::softcap(pool_, x, cap); }
  void argmax_rows(Mat x, int32_t* ids, float* p_top) override { cpu::argmax_rows(pool_, x, ids, p_top); }
  void gather_rows(Mat src, const int32_t* rows, Mat dst) override { cpu::gather_rows(pool_, src, rows, dst); }
  void copy(Mat src, Mat dst) override { cpu::copy(pool_, src, dst); }
  bool supports_kv_type(GgmlType type) const override {
    return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::Q8_0;
  }
  void kv_store(Mat k, Mat v, const KvLayerView& kv, const int32_t* slots) override {
    cpu::kv_store(pool_, k, v, kv, slots);
  }
  void attention(const AttentionArgs& args) override { cpu::attention(pool_, args); }
  void kv_copy_slots(const KvLayerView& kv, const int32_t* src_slots, const int32_t* dst_slots, int n) override {
    cpu::kv_copy_slots(pool_, kv, src_slots, dst_slots, n);
  }

 private:
  ThreadPool pool_;
  mutable std::mutex mu_;
  std::unordered_map<void*, size_t> allocations_;
  size_t bytes_in_use_ = 0;
  size_t weight_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Backend> create_cpu_backend(int n_threads) { return std::make_unique<CpuBackend>(n_threads); }

}  // namespace gs
