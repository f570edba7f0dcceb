// A test backend that hands every op of the backend contract (its pure virtual functions) to
// another backend: the base of the test backends that change or watch a few of them
// (fused_forward_test's call counter, runner_setup_test's allocation limit). The optional
// ops (fused ops, run_step, alloc_host, ...) keep Backend's defaults unless a subclass
// overrides them, so that their default implementations call back through this backend.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "backend/backend.h"

namespace gs::test {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> in) : in_(std::move(in)) {}

  BackendKind kind() const override { return in_->kind(); }
  std::string description() const override { return in_->description(); }
  Result<void*> alloc(size_t bytes) override { return in_->alloc(bytes); }
  void free(void* p) override { in_->free(p); }
  Status upload(void* dst, const void* src, size_t bytes) override { return in_->upload(dst, src, bytes); }
  Status download(void* dst, const void* src, size_t bytes) override { return in_->download(dst, src, bytes); }
  Status memset_zero(void* dst, size_t bytes) override { return in_->memset_zero(dst, bytes); }
  Status synchronize() override { return in_->synchronize(); }
  size_t bytes_in_use() const override { return in_->bytes_in_use(); }
  Result<Weight> upload_weight(const void* host, GgmlType type, int64_t n_in, int64_t n_out) override {
    return in_->upload_weight(host, type, n_in, n_out);
  }
  void embed(const Weight& t, const int32_t* ids, float s, Mat out) override { in_->embed(t, ids, s, out); }
  void matmul(const Weight& w, Mat x, Mat y) override { in_->matmul(w, x, y); }
  void rms_norm(Mat x, const float* w, int64_t group, float eps, Mat out) override {
    in_->rms_norm(x, w, group, eps, out);
  }
  void rope(Mat x, const int32_t* pos, const RopeArgs& a) override { in_->rope(x, pos, a); }
  void gelu_mul(Mat g, Mat u, Mat out) override { in_->gelu_mul(g, u, out); }
  void add(Mat a, Mat b, Mat out) override { in_->add(a, b, out); }
  void scale(Mat x, float s) override { in_->scale(x, s); }
  void softcap(Mat x, float cap) override { in_->softcap(x, cap); }
  void argmax_rows(Mat x, int32_t* ids, float* p_top) override { in_->argmax_rows(x, ids, p_top); }
  void gather_rows(Mat src, const int32_t* rows, Mat dst) override { in_->gather_rows(src, rows, dst); }
  void copy(Mat src, Mat dst) override { in_->copy(src, dst); }
  void kv_store(Mat k, Mat v, const KvLayerView& kv, const int32_t* slots) override { in_->kv_store(k, v, kv, slots); }
  void attention(const AttentionArgs& a) override { in_->attention(a); }
  void kv_copy_slots(const KvLayerView& kv, const int32_t* s, const int32_t* d, int n) override {
    in_->kv_copy_slots(kv, s, d, n);
  }

 protected:
  Backend& inner() { return *in_; }

 private:
  std::unique_ptr<Backend> in_;
};

}  // namespace gs::test
