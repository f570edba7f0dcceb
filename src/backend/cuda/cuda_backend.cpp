// The CUDA backend: device memory, weight upload into the kernels' block layouts, op dispatch
// (tensor-core matvec for few rows, cuBLAS on dequantized f16 weights for many), attention,
// sticky error reporting, and run_step() captured as CUDA graphs.
#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_weight_repack.h"
#include "backend/cuda/k_fused.h"
#include "backend/cuda/k_matvec_stream.h"
#include "backend/cuda/sm90a/attention_wg.h"
#include "core/fp16.h"
#include "core/quant.h"

namespace gs {
namespace {

using cuda::MatF;
using cuda::WeightLayout;
using cuda::WFormat;

constexpr int kMaxMatvecRows = 16;                      // rows served by the tensor-core matvec
constexpr size_t kWeightScratchCap = 512ull << 20;      // f16 slab for the GEMM path
constexpr size_t kAttnPartialBytes = 64ull << 20;       // split-KV partial results
constexpr size_t kCublasWorkspaceBytes = 32ull << 20;
constexpr size_t kStagingBytes = 64ull << 20;           // host staging for weight repacking

MatF mf(const Mat& m) { return {m.data, m.rows, m.cols, m.stride}; }

// Which f16 tensor-core attention kernel serves a call: GS_CUDA_ATTN=old (the 16-row kernel
// everywhere), new (the 64-row prefill kernel everywhere), unset or anything else: by size.
enum class AttnKernel { kAuto, kOld, kNew };
AttnKernel attn_kernel_choice() {
  const char* e = std::getenv("GS_CUDA_ATTN");
  if (e && std::strcmp(e, "old") == 0) return AttnKernel::kOld;
  if (e && std::strcmp(e, "new") == 0) return AttnKernel::kNew;
  return AttnKernel::kAuto;
}
// Query tokens from which a call takes the prefill kernel (its CTAs hold 64 query rows of one
// KV head: at GQA 2 that is 32 tokens; decode and MTP verify batches stay below this).
constexpr int kFaMinTokens = 64;
// KV length bound (AttentionArgs::max_kv_len) from which the batches of one sequence (decode
// and MTP verify) take the 64-row kernel (decision 0020). A verify batch of up to 8 tokens at
// GQA 8 is one 64-row CTA per KV head, so it reads the KV range once, where the 16-row kernel
// read it once per 2 tokens; and decode takes the same kernel with the same KV splits (the
// split count follows the CTA count, which is the same for 1..8 tokens), so verify rows
// reproduce decode rows exactly and greedy output with the drafter equals greedy without.
// Measured on the H200 at depth 131072: verify 5 17.5 ms against 22.7, verify 8 19.2 against
// 38.8, decode 14.64 against 14.31 ms.
constexpr int kFaMinKvOneSeq = 4096;

// A switch read from the environment on every call (so tests and benchmarks can flip it):
// unset or empty gives `dflt`, "0" false, anything else true.
bool env_flag(const char* name, bool dflt) {
  const char* e = std::getenv(name);
  if (!e || !*e) return dflt;
  return std::string(e) != "0";
}

// The decode-size f16 operand kernels with several CTAs per row (k_row_f16.cu); GS_CUDA_ROWCOOP=0
// takes the one-CTA-per-row ones (read on every call, so tests and benchmarks can switch).
bool row_coop() { return env_flag("GS_CUDA_ROWCOOP", true); }

std::optional<WFormat> native_format(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return WFormat::kF32;
    case GgmlType::F16: return WFormat::kF16;
    case GgmlType::BF16: return WFormat::kBF16;
    case GgmlType::Q8_0: return WFormat::kQ8_0;
    case GgmlType::Q4_0: return WFormat::kQ4_0;
    case GgmlType::Q4_K: return WFormat::kQ4_K;
    case GgmlType::Q5_K: return WFormat::kQ5_K;
    case GgmlType::Q6_K: return WFormat::kQ6_K;
    default: return std::nullopt;
  }
}

// Backend-private part of a Weight (Weight::impl).
struct CudaWeight {
  WeightLayout layout;
};

bool mat_ok(const Mat& m) { return m.rows >= 0 && m.cols >= 0 && m.stride >= m.cols && (m.rows == 0 || m.data); }
// y = x W^T is well shaped: x [rows, n_in], y [rows, n_out].
bool matmul_shapes_ok(const Weight& w, const Mat& x, const Mat& y) {
  return mat_ok(x) && mat_ok(y) && x.cols == w.n_in && y.cols == w.n_out && x.rows == y.rows;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, const CudaBackendOptions& opt) : device_(device), opt_(opt) {}

  ~CudaBackend() override {
    cudaSetDevice(device_);
    if (stream_) cudaStreamSynchronize(stream_);
    destroy_graphs();
    if (cublas_) cublasDestroy(cublas_);
    for (auto& [p, bytes] : allocs_) cudaFree(p);
    for (void* p : internal_) cudaFree(p);
    if (stream_) cudaStreamDestroy(stream_);
    if (staging_) cudaFreeHost(staging_);
    for (void* p : pinned_) cudaFreeHost(p);  // HostBuffers that outlived the backend (they must not be used)
  }

  Status init() {
    if (cudaSetDevice(device_) != cudaSuccess)
      return make_status(StatusCode::kUnavailable, "cannot select CUDA device {}", device_);
    if (cudaGetDeviceProperties(&prop_, device_) != cudaSuccess)
      return make_status(StatusCode::kUnavailable, "cannot query CUDA device {}", device_);
    if (prop_.major < 8)
      return make_status(StatusCode::kUnavailable, "CUDA device {} ({}) has compute capability {}.{}; 8.0 or newer needed",
                         device_, prop_.name, prop_.major, prop_.minor);
    n_sm_ = prop_.multiProcessorCount;
    GS_RETURN_IF_ERROR(check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream"));
    GS_RETURN_IF_ERROR(check(cuda::attention_prepare(), "attention kernel attributes"));
    GS_RETURN_IF_ERROR(check(cuda::matvec_prepare(), "matvec kernel attributes"));
    // The sm_90a prefill kernel runs on compute capability 9.0 alone; elsewhere prefill keeps
    // the mma.sync kernel.
    wg_ok_ = prop_.major == 9 && prop_.minor == 0 && cuda::attention_wg_prepare() == cudaSuccess;
    cudaGetLastError();  // a failed prepare leaves no error behind
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS)
      return make_status(StatusCode::kUnavailable, "cuBLAS initialisation failed on device {}", device_);
    cublasSetStream(cublas_, stream_);
    GS_ASSIGN_OR_RETURN(void* ws, internal_alloc(kCublasWorkspaceBytes));
    cublasSetWorkspace(cublas_, ws, kCublasWorkspaceBytes);
    cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_DEVICE);
    GS_ASSIGN_OR_RETURN(void* small, internal_alloc(4096));
    amax_ = static_cast<unsigned*>(small);
    alpha_ = reinterpret_cast<float*>(static_cast<char*>(small) + 256);
    zero_ = reinterpret_cast<float*>(static_cast<char*>(small) + 512);
    one_ = reinterpret_cast<float*>(static_cast<char*>(small) + 768);
    xscale_ = reinterpret_cast<float*>(static_cast<char*>(small) + 1024);  // kMaxMatvecRows floats
    GS_RETURN_IF_ERROR(check(cudaMemset(small, 0, 4096), "memset"));
    const float one = 1.0f;
    GS_RETURN_IF_ERROR(check(cudaMemcpy(one_, &one, sizeof one, cudaMemcpyHostToDevice), "constant"));
    // The legacy stream's memset and copy are not ordered with stream_ (non-blocking), and a
    // copy from pageable memory may return before its DMA has landed.
    GS_RETURN_IF_ERROR(check(cudaDeviceSynchronize(), "constant"));
    // f32 GEMMs stay f32 (no TF32): the f32 path is the exact one.
    cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH);
    GS_ASSIGN_OR_RETURN(void* part, internal_alloc(kAttnPartialBytes));
    partial_ = static_cast<float*>(part);
    GS_RETURN_IF_ERROR(ensure_xh(static_cast<size_t>(kMaxMatvecRows) * 65536 * 2));
    const int mv_ctas = cuda::kMatvecCtasPerSm * n_sm_;
    GS_ASSIGN_OR_RETURN(void* mvs, internal_alloc(cuda::matvec_sync_bytes(mv_ctas)));
    GS_RETURN_IF_ERROR(check(cudaMemset(mvs, 0, cuda::matvec_sync_bytes(mv_ctas)), "memset"));
    mv_sync_ = cuda::matvec_sync_at(mvs, mv_ctas);
    GS_ASSIGN_OR_RETURN(void* rs, internal_alloc(cuda::kRowSyncBytes));
    GS_RETURN_IF_ERROR(check(cudaMemset(rs, 0, cuda::kRowSyncBytes), "memset"));
    row_sync_ = cuda::row_sync_at(rs);
    row_sync_.max_ctas = cuda::row_f16_resident_ctas(n_sm_);
    // The memsets above ran on the legacy stream, which does not order with the non-blocking
    // stream_ the kernels run on: they must be done before the first kernel reads the zeros.
    return check(cudaDeviceSynchronize(), "init");
  }

  BackendKind kind() const override { return BackendKind::kCuda; }
  std::string description() const override {
    return fmt::format("cuda: {} ({} SMs, {:.0f} GiB){}", prop_.name, prop_.multiProcessorCount,
                       static_cast<double>(prop_.totalGlobalMem) / (1ull << 30),
                       opt_.simple_kernels ? " [simple kernels]" : "");
  }

  // ---- memory -------------------------------------------------------------------------------
  Result<void*> alloc(size_t bytes) override {
    if (capturing_) return make_status(StatusCode::kFailedPrecondition, "alloc inside run_step");
    cudaSetDevice(device_);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
      cudaGetLastError();
      return make_status(StatusCode::kResourceExhausted, "CUDA device {} is out of memory ({} bytes asked, {} in use)",
                         device_, bytes, bytes_in_use_);
    }
    allocs_[p] = bytes;
    bytes_in_use_ += bytes;
    return p;
  }

  void free(void* p) override {
    if (!p) return;
    cudaSetDevice(device_);
    auto it = allocs_.find(p);
    if (it == allocs_.end()) return;
    cudaStreamSynchronize(stream_);
    destroy_graphs();  // a captured step may point at it
    bytes_in_use_ -= it->second;
    allocs_.erase(it);
    cudaFree(p);
  }

  Status upload(void* dst, const void* src_host, size_t bytes) override {
    if (capturing_)
      return make_status(StatusCode::kFailedPrecondition, "upload inside run_step (upload step inputs before it)");
    cudaSetDevice(device_);
    written_raw(dst, bytes);
    GS_RETURN_IF_ERROR(check(cudaMemcpyAsync(dst, src_host, bytes, cudaMemcpyHostToDevice, stream_), "upload"));
    return sticky();
  }

  Result<void*> alloc_host(size_t bytes) override {
    cudaSetDevice(device_);
    void* p = nullptr;
    if (cudaMallocHost(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
      cudaGetLastError();
      return Backend::alloc_host(bytes);  // no page-locked memory left: the slower copies still work
    }
    pinned_.insert(p);
    return p;
  }

  void free_host(void* p) override {
    if (!p) return;
    if (pinned_.erase(p) == 0) return Backend::free_host(p);
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);  // a copy into it may still be queued
    cudaFreeHost(p);
  }

  Status download(void* dst_host, const void* src, size_t bytes) override {
    if (capturing_) return make_status(StatusCode::kFailedPrecondition, "download inside run_step");
    cudaSetDevice(device_);
    GS_RETURN_IF_ERROR(check(cudaMemcpyAsync(dst_host, src, bytes, cudaMemcpyDeviceToHost, stream_), "download"));
    GS_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream_), "download"));
    return sticky();
  }

  Status memset_zero(void* dst, size_t bytes) override {
    cudaSetDevice(device_);
    written_raw(dst, bytes);
    GS_RETURN_IF_ERROR(check(cudaMemsetAsync(dst, 0, bytes, stream_), "memset"));
    return sticky();
  }

  Status synchronize() override {
    if (capturing_) return make_status(StatusCode::kFailedPrecondition, "synchronize inside run_step");
    cudaSetDevice(device_);
    GS_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream_), "synchronize"));
    return sticky();
  }

  size_t bytes_in_use() const override { return bytes_in_use_ + internal_bytes_; }

  Result<Weight> upload_weight(const void* host, GgmlType type, int64_t n_in, int64_t n_out) override {
    if (capturing_) return make_status(StatusCode::kFailedPrecondition, "upload_weight inside run_step");
    cudaSetDevice(device_);
    if (n_in <= 0 || n_out <= 0)
      return make_status(StatusCode::kInvalidArgument, "weight shape [{}, {}] is empty", n_in, n_out);
    GS_ASSIGN_OR_RETURN(const size_t row_bytes, ggml_row_size(type, n_in));
    std::optional<WFormat> fmt_opt = native_format(type);
    if (!fmt_opt) {
      if (!dequantize_row_fn(type))
        return make_status(StatusCode::kUnimplemented, "the CUDA backend cannot multiply {} weights",
                           ggml_type_name(type));
      fmt_opt = WFormat::kF16;  // converted once at upload
    }
    auto cw = std::make_unique<CudaWeight>();
    cw->layout = cuda::make_weight_layout(*fmt_opt, n_in, n_out);
    const WeightLayout& L = cw->layout;
    GS_ASSIGN_OR_RETURN(void* dev, alloc(L.total_bytes));
    auto* base = static_cast<uint8_t*>(dev);
    const auto* src = static_cast<const uint8_t*>(host);
    const bool direct = L.meta_per_row == 0 && !L.tile_major && L.n_in == L.n_in_pad && native_format(type).has_value() &&
                        static_cast<int64_t>(row_bytes) == L.main_row_bytes;
    Status st;
    if (direct) {
      st = weight_copy(base, src, row_bytes * static_cast<size_t>(n_out));
    } else {
      st = repack_upload(type, L, src, row_bytes, base);
    }
    if (!st.ok()) {
      free(dev);
      return st;
    }
    const size_t f16_bytes = static_cast<size_t>(n_out) * static_cast<size_t>(L.n_in_pad) * 2;
    wscratch_need_ = std::max(wscratch_need_, std::min(kWeightScratchCap, f16_bytes));
    Weight w;
    w.data = dev;
    w.type = type;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = row_bytes;
    w.impl = cw.get();
    weights_.push_back(std::move(cw));
    return w;
  }

  // ---- ops ------------------------------------------------------------------------------------
  void embed(const Weight& table, const int32_t* ids, float scale, Mat out) override {
    const CudaWeight* cw = weight_of(table, "embed");
    if (!cw || !enter()) return;
    if (!mat_ok(out) || out.cols != table.n_in) return fail_shape("embed: out is [{}, {}], table rows have {}", out.rows, out.cols, table.n_in);
    written(out);
    cuda::launch_embed(stream_, table.data, cw->layout, ids, scale, mf(out));
    launched("embed");
  }

  void matmul(const Weight& w, Mat x, Mat y) override {
    const CudaWeight* cw = weight_of(w, "matmul");
    if (!cw) return;
    cudaSetDevice(device_);
    if (!matmul_shapes_ok(w, x, y))
      return fail_shape("matmul: x [{}, {}], y [{}, {}], weight n_in {} n_out {}", x.rows, x.cols, y.rows, y.cols,
                        w.n_in, w.n_out);
    if (x.rows == 0) return;
    const WeightLayout& L = cw->layout;
    if (opt_.simple_kernels) {
      written(y);
      cuda::launch_matvec_simple(stream_, w.data, L, mf(x), mf(y));
      launched("matmul");
      return;
    }
    if (L.format == WFormat::kF32) {  // f32 matrices (tiny models): exact f32 arithmetic
      written(y);
      if (x.rows <= kMaxMatvecRows) {
        cuda::launch_matvec_simple(stream_, w.data, L, mf(x), mf(y));
      } else {
        const cublasStatus_t st = cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(L.n_out),
                                              static_cast<int>(x.rows), static_cast<int>(L.n_in), one_,
                                              static_cast<const float*>(w.data), static_cast<int>(L.n_in_pad), x.data,
                                              static_cast<int>(x.stride), zero_, y.data, static_cast<int>(y.stride));
        if (st != CUBLAS_STATUS_SUCCESS)
          fail(make_status(StatusCode::kInternal, "cuBLAS SGEMM failed (status {})", static_cast<int>(st)));
      }
      launched("matmul");
      return;
    }
    if (x.rows <= kMaxMatvecRows) {
      if (!matvec_operand(x, L.n_in_pad)) return;
      cuda::launch_matvec_mma(stream_, w.data, L, xh_, xscale_, mf(y), n_sm_, mv_sync_);
      written(y);
      launched("matmul");
      return;
    }
    gemm(w, L, x, y);
  }

  // The weights of one format and n_in in one bulk-copy matvec launch (decode and verify
  // sizes); the others, and any the kernel does not serve, one matmul each.
  void matmul_multi(const Weight* const* ws, const Mat* ys, int n, Mat x) override {
    // GS_CUDA_MULTI=0: one launch per weight (A/B runs)
    static const bool multi_off = !env_flag("GS_CUDA_MULTI", true);
    if (n < 2 || n > kMaxMatmulMulti || multi_off) return Backend::matmul_multi(ws, ys, n, x);
    bool done[kMaxMatmulMulti] = {};
    if (!opt_.simple_kernels && x.rows >= 1 && x.rows <= kMaxMatvecRows) {
      for (int i = 0; i < n; ++i) {
        if (done[i]) continue;
        const void* w[kMaxMatmulMulti];
        const WeightLayout* L[kMaxMatmulMulti];
        cuda::MatF y[kMaxMatmulMulti];
        int idx[kMaxMatmulMulti], m = 0;
        for (int j = i; j < n; ++j) {
          const auto* cw = static_cast<const CudaWeight*>(ws[j]->impl);
          if (done[j] || !cw || !ws[j]->data || !matmul_shapes_ok(*ws[j], x, ys[j]) || overlaps(ys[j], x)) continue;
          const WeightLayout& Lj = cw->layout;
          if (m > 0 && (Lj.format != L[0]->format || Lj.n_in_pad != L[0]->n_in_pad)) continue;
          w[m] = ws[j]->data, L[m] = &Lj, y[m] = mf(ys[j]), idx[m++] = j;
        }
        if (m < 2) continue;
        cudaSetDevice(device_);
        if (!matvec_operand(x, L[0]->n_in_pad)) return;
        if (!cuda::launch_matvec_stream_multi(stream_, w, L, y, m, xh_, xscale_, n_sm_, mv_sync_)) continue;
        for (int k = 0; k < m; ++k) {
          written(ys[idx[k]]);
          done[idx[k]] = true;
        }
        launched("matmul_multi");
      }
    }
    for (int i = 0; i < n; ++i)
      if (!done[i]) matmul(*ws[i], x, ys[i]);
  }

  void rms_norm(Mat x, const float* weight, int64_t group, float eps, Mat out) override {
    if (!enter()) return;
    if (!mat_ok(x) || !mat_ok(out) || group <= 0 || x.cols % group != 0 || out.rows != x.rows || out.cols != x.cols)
      return fail_shape("rms_norm: x [{}, {}], out [{}, {}], group {}", x.rows, x.cols, out.rows, out.cols, group);
    written(out);
    // A whole-row norm of a few rows usually feeds a matmul: write its f16 operand too.
    if (!opt_.simple_kernels && group == x.cols && x.rows <= kMaxMatvecRows) {
      const int64_t pad = cuda::round_up(x.cols, cuda::kTileElems);
      if (static_cast<size_t>(x.rows * pad) * 2 <= xh_bytes_ &&
          cuda::launch_rms_norm_rows(stream_, mf(x), weight, eps, mf(out), xh_, xscale_, pad)) {
        conv_ = {true, out.data, out.rows, out.cols, out.stride, pad};
        launched("rms_norm");
        return;
      }
    }
    cuda::launch_rms_norm(stream_, mf(x), weight, group, eps, mf(out));
    launched("rms_norm");
  }

  void rope(Mat x, const int32_t* pos, const RopeArgs& a) override {
    if (!enter()) return;
    if (!mat_ok(x) || a.head_dim <= 0 || x.cols % a.head_dim != 0 || a.n_dims <= 0 || a.n_dims > a.head_dim ||
        a.n_dims % 2 != 0)
      return fail_shape("rope: x [{}, {}], head_dim {}, n_dims {}", x.rows, x.cols, a.head_dim, a.n_dims);
    if (a.n_dims > 2 * cuda::kRopeMaxPairs)
      return fail_shape("rope: n_dims {} exceeds the CUDA kernel's {}", a.n_dims, 2 * cuda::kRopeMaxPairs);
    cuda::RopeParams p{a.head_dim, a.n_dims, a.theta, a.freq_factors, a.freq_scale,
                       a.ext_factor, a.attn_factor, a.corr_lo, a.corr_hi};
    written(x);
    cuda::launch_rope(stream_, mf(x), pos, p);
    launched("rope");
  }

  void gelu_mul(Mat gate, Mat up, Mat out) override {
    if (!enter()) return;
    if (!same_shape(gate, out) || !same_shape(up, out))
      return fail_shape("gelu_mul: gate [{}, {}], up [{}, {}], out [{}, {}]", gate.rows, gate.cols, up.rows, up.cols,
                        out.rows, out.cols);
    written(out);
    if (!opt_.simple_kernels && out.rows <= kMaxMatvecRows) {  // feeds the down projection
      const int64_t pad = cuda::round_up(out.cols, cuda::kTileElems);
      if (static_cast<size_t>(out.rows * pad) * 2 <= xh_bytes_ &&
          ((row_coop() && cuda::launch_gelu_mul_rows_coop(stream_, mf(gate), mf(up), mf(out), xh_, xscale_, pad,
                                                          row_sync_)) ||
           cuda::launch_gelu_mul_rows(stream_, mf(gate), mf(up), mf(out), xh_, xscale_, pad))) {
        conv_ = {true, out.data, out.rows, out.cols, out.stride, pad};
        launched("gelu_mul");
        return;
      }
    }
    cuda::launch_gelu_mul(stream_, mf(gate), mf(up), mf(out));
    launched("gelu_mul");
  }

  void add(Mat a, Mat b, Mat out) override {
    if (!enter()) return;
    if (!same_shape(a, out) || !same_shape(b, out))
      return fail_shape("add: a [{}, {}], b [{}, {}], out [{}, {}]", a.rows, a.cols, b.rows, b.cols, out.rows, out.cols);
    written(out);
    cuda::launch_add(stream_, mf(a), mf(b), mf(out));
    launched("add");
  }

  void scale(Mat x, float s) override {
    if (!enter()) return;
    if (!mat_ok(x)) return fail_shape("scale: x [{}, {}] stride {}", x.rows, x.cols, x.stride);
    written(x);
    cuda::launch_scale(stream_, mf(x), s);
    launched("scale");
  }

  void argmax_rows(Mat x, int32_t* ids, float* p_top) override {
    if (!enter()) return;
    if (!mat_ok(x) || x.cols <= 0 || x.cols > (int64_t{1} << 31) - 1 || (x.rows > 0 && !ids))
      return fail_shape("argmax_rows: x [{}, {}]", x.rows, x.cols);
    written_raw(ids, static_cast<size_t>(x.rows) * sizeof(int32_t));
    if (p_top) written_raw(p_top, static_cast<size_t>(x.rows) * sizeof(float));
    cuda::launch_argmax_rows(stream_, mf(x), ids, p_top);
    launched("argmax_rows");
  }

  void softcap(Mat x, float cap) override {
    if (!enter()) return;
    if (!mat_ok(x) || !(cap > 0.0f)) return fail_shape("softcap: x [{}, {}], cap {}", x.rows, x.cols, cap);
    written(x);
    cuda::launch_softcap(stream_, mf(x), cap);
    launched("softcap");
  }

  void gather_rows(Mat src, const int32_t* rows, Mat dst) override {
    if (!enter()) return;
    if (!mat_ok(src) || !mat_ok(dst) || src.cols != dst.cols)
      return fail_shape("gather_rows: src [{}, {}], dst [{}, {}]", src.rows, src.cols, dst.rows, dst.cols);
    written(dst);
    cuda::launch_gather_rows(stream_, mf(src), rows, mf(dst));
    launched("gather_rows");
  }

  void copy(Mat src, Mat dst) override {
    if (!enter()) return;
    if (!same_shape(src, dst))
      return fail_shape("copy: src [{}, {}], dst [{}, {}]", src.rows, src.cols, dst.rows, dst.cols);
    written(dst);
    cuda::launch_copy(stream_, mf(src), mf(dst));
    launched("copy");
  }

  bool supports_kv_type(GgmlType type) const override {
    return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::Q8_0;
  }
  void kv_store(Mat k, Mat v, const KvLayerView& kv, const int32_t* slots) override {
    if (!enter()) return;
    const int64_t width = static_cast<int64_t>(kv.n_head_kv) * kv.head_dim;
    if (!kv_ok(kv) || !mat_ok(k) || !mat_ok(v) || k.rows != v.rows || k.cols != width || v.cols != width)
      return fail_shape("kv_store: k [{}, {}], v [{}, {}], pool rows of {} x {}", k.rows, k.cols, v.rows, v.cols,
                        kv.n_head_kv, kv.head_dim);
    cuda::launch_kv_store(stream_, mf(k), mf(v), kv_view(kv), slots);
    launched("kv_store");
  }

  void attention(const AttentionArgs& a) override {
    if (!enter()) return;
    const int64_t width = static_cast<int64_t>(a.n_head) * a.head_dim;
    if (!kv_ok(a.kv) || a.n_head <= 0 || a.head_dim != a.kv.head_dim || a.n_head % a.kv.n_head_kv != 0 ||
        !mat_ok(a.q) || !mat_ok(a.out) || a.q.cols != width || a.out.cols != width || a.q.rows != a.out.rows ||
        a.head_dim > 1024 || a.pages.page_size <= 0 || a.pages.max_pages <= 0)
      return fail_shape("attention: q [{}, {}], out [{}, {}], n_head {}, head_dim {}, pool {} x {}, page_size {}",
                        a.q.rows, a.q.cols, a.out.rows, a.out.cols, a.n_head, a.head_dim, a.kv.n_head_kv,
                        a.kv.head_dim, a.pages.page_size);
    if (a.q.rows == 0) return;
    written(a.out);
    cuda::AttnParams p;
    p.q = mf(a.q);
    p.out = mf(a.out);
    p.n_tokens = static_cast<int>(a.q.rows);
    p.n_head = a.n_head;
    p.head_dim = a.head_dim;
    p.scale = a.scale;
    p.kv = kv_view(a.kv);
    p.pages = {a.pages.pages, a.pages.max_pages, a.pages.page_size, a.pages.wrap_pages};
    p.tok_seq = a.tok_seq;
    p.kv_lo = a.kv_lo;
    p.kv_hi = a.kv_hi;
    if (!opt_.simple_kernels && cuda::attention_mma_supported(p)) {
      // The 64-row prefill kernel where a batch has enough query rows to fill its CTAs or is
      // of one sequence over a long KV range, the 16-row one (batches of several sequences,
      // short contexts) otherwise; GS_CUDA_ATTN=old / new forces
      // one of them (read on every call, so tests and benchmarks can switch it).
      const AttnKernel choice = attn_kernel_choice();
      const bool long_one_seq = a.n_seqs == 1 && a.max_kv_len >= kFaMinKvOneSeq;
      const bool fa = choice == AttnKernel::kNew ||
                      (choice == AttnKernel::kAuto && (p.n_tokens >= kFaMinTokens || long_one_seq));
      // Split the KV range until the grid is about one wave (one CTA per SM at head_dim 512,
      // two below), keeping at least GS_ATTN_SPLIT_POS positions (default 64, 2 tiles) per
      // split. On the H200 (31B, same call) 64 against 128 took a decode step at depth 32768
      // from 9.71-9.80 to 9.60-9.61 ms (the sliding layers' window of 1024 in 16 splits, not
      // 8), verify 5 there 11.50-11.62 to 11.41-11.45 ms; 32 was slower than both.
      static const int split_pos = [] {
        const char* e = std::getenv("GS_ATTN_SPLIT_POS");
        const int v = e && *e ? std::atoi(e) : 64;
        return std::clamp(v, 32, 4096);
      }();
      const int ctas = std::max(1, fa ? cuda::attention_fa_cta_count(p) : cuda::attention_mma_cta_count(p));
      const int fa_per_sm = cuda::attention_q8_dsplit_on(p) ? cuda::attention_q8_dsplit_ctas_per_sm()
                                                            : cuda::attention_fa_ctas_per_sm(a.head_dim);
      const int target = (fa ? fa_per_sm : (a.head_dim >= 512 ? 1 : 2)) * n_sm_;
      int n_splits = ctas < target ? (target + ctas - 1) / ctas : 1;
      const int by_len = std::max(1, (std::max(a.max_kv_len, 1) + split_pos - 1) / split_pos);
      n_splits = std::min(n_splits, by_len);
      const size_t per_split = static_cast<size_t>(p.n_tokens) * p.n_head * (p.head_dim + 2) * sizeof(float);
      n_splits = static_cast<int>(std::min<size_t>(static_cast<size_t>(n_splits), kAttnPartialBytes / per_split));
      n_splits = std::max(1, std::min(n_splits, 4096));
      // The output's f16 operand written by the combine with a fixed factor where the caller
      // bounds |out| (AttnOperand): one dependent launch fewer in each layer's decode chain
      // (docs/perf-notes.md, fifteenth session). GS_ATTN_OPERAND=0 turns it off.
      const int64_t pad = cuda::round_up(width, cuda::kTileElems);
      const bool with_op = env_flag("GS_ATTN_OPERAND", true) && a.out_abs_bound > 0.0f &&
                           std::isfinite(a.out_abs_bound) && p.n_tokens <= kMaxMatvecRows &&
                           static_cast<size_t>(p.n_tokens * pad) * 2 <= xh_bytes_;
      if (with_op) p.op = cuda::attn_operand_for_bound(a.out_abs_bound, xh_, xscale_, pad);
      // The 16-row kernel's step-input loads before its PDL wait (AttnParams::early;
      // GS_ATTN_EARLY=0 turns it off).
      p.early = env_flag("GS_ATTN_EARLY", true);
      // Prefill chunks at head_dim 512 on the wgmma kernel (sm90a/attention_wg.h, decision
      // 0033; its swizzled form, measured 18-29% faster than the 64-row kernel at depth 32768 and
      // 131072 on an H100, even at depth 0); GS_CUDA_ATTN_WG=0 turns it off. Decode and verify
      // batches (fewer than kFaMinTokens tokens) stay on the mma.sync kernels, whose rows equal
      // each other bit for bit.
      const bool wg = fa && wg_ok_ && p.n_tokens >= kFaMinTokens && cuda::attention_wg_supported(p) &&
                      env_flag("GS_CUDA_ATTN_WG", true);
      if (wg) {
        cuda::launch_attention_wg(stream_, p, n_splits, partial_);
        cuda::launch_attention_combine(stream_, p, n_splits, partial_);
      } else if (fa) {
        cuda::launch_attention_fa(stream_, p, n_splits, partial_);
      } else {
        cuda::launch_attention_mma(stream_, p, n_splits, partial_);
      }
      if (with_op) conv_ = {true, a.out.data, a.out.rows, a.out.cols, a.out.stride, pad};
    } else {
      cuda::launch_attention_simple(stream_, p);
    }
    launched("attention");
  }

  void kv_copy_slots(const KvLayerView& kv, const int32_t* src_slots, const int32_t* dst_slots, int n) override {
    if (!enter()) return;
    if (!kv_ok(kv) || n < 0) return fail_shape("kv_copy_slots: n {}", n);
    cuda::launch_kv_copy_slots(stream_, kv_view(kv), src_slots, dst_slots, n);
    launched("kv_copy_slots");
  }

  // ---- fused ops: one kernel each where it applies, else the op sequence (Backend's) ----------
  void add_rms_norm(Mat x, Mat o, const float* o_weight, float s, const float* out_weight, float eps,
                    Mat out) override {
    if (!enter()) return;
    if (!same_shape(o, x) || !same_shape(out, x) || x.cols <= 0)
      return fail_shape("add_rms_norm: x [{}, {}], o [{}, {}], out [{}, {}]", x.rows, x.cols, o.rows, o.cols, out.rows,
                        out.cols);
    if (x.rows == 0) return;
    if (!opt_.simple_kernels && !overlaps(x, o) && !overlaps(x, out)) {
      const int64_t pad = cuda::round_up(x.cols, cuda::kTileElems);
      const bool with_xh = x.rows <= kMaxMatvecRows && static_cast<size_t>(x.rows * pad) * 2 <= xh_bytes_;
      // rms_norm takes its one-pass row kernel for such rows only (the per-warp kernel for
      // more rows of <= 1024): the fused kernel stands in for the same kernels, bit for bit.
      if (with_xh || x.cols > 1024) {
        written(x);
        written(o);
        written(out);
        if (cuda::launch_add_rms_norm_rows(stream_, mf(x), mf(o), o_weight, s, out_weight, eps, mf(out),
                                           with_xh ? xh_ : nullptr, xscale_, pad)) {
          if (with_xh) conv_ = {true, out.data, out.rows, out.cols, out.stride, pad};
          launched("add_rms_norm");
          return;
        }
      }
    }
    Backend::add_rms_norm(x, o, o_weight, s, out_weight, eps, out);
  }

  void qkv_norm_rope_store(const QkvNormRopeArgs& a) override {
    if (!enter()) return;
    if (!opt_.simple_kernels && qkv_fusable(a)) {
      written(a.q);
      if (a.k.cols > 0) {
        written(a.k);
        written(a.v);
      }
      const RopeArgs& r = a.rope;
      cuda::QkvParams p{mf(a.q), mf(a.k), mf(a.v), a.v_from_k, a.q_weight, a.k_weight, a.eps, a.pos,
                        cuda::RopeParams{r.head_dim, r.n_dims, r.theta, r.freq_factors, r.freq_scale, r.ext_factor,
                                         r.attn_factor, r.corr_lo, r.corr_hi},
                        a.k.cols > 0 ? kv_view(a.kv) : cuda::KvView{}, a.slots};
      if (cuda::launch_qkv_norm_rope_store(stream_, p)) {
        launched("qkv_norm_rope_store");
        return;
      }
    }
    Backend::qkv_norm_rope_store(a);  // its ops check the shapes and report errors
  }

  void run_step(uint64_t key, bool recurring, const std::function<void()>& record) override {
    cudaSetDevice(device_);
    if (!opt_.graphs || capturing_ || !recurring) {
      record();
      return;
    }
    conv_.valid = false;
    auto it = graphs_.find(key);
    if (it != graphs_.end()) {
      it->second.used = ++graph_tick_;
      if (cudaGraphLaunch(it->second.exec, stream_) != cudaSuccess) set_cuda_error("graph launch");
      return;
    }
    if (!error_.ok()) return;
    // A step that needs bigger working buffers than exist is captured twice: the first
    // capture only records the sizes (grow() cannot allocate while capturing), then the
    // buffers grow and the step is captured again.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        record();  // capture unavailable: run eagerly
        return;
      }
      capturing_ = true;
      grow_wanted_.clear();
      record();
      capturing_ = false;
      conv_.valid = false;
      cudaGraph_t graph = nullptr;
      const cudaError_t end = cudaStreamEndCapture(stream_, &graph);
      if (!grow_wanted_.empty()) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        const auto wanted = grow_wanted_;
        grow_wanted_.clear();
        for (const auto& [buf, need] : wanted) {
          if (!grow(buf.first, buf.second, need).ok()) return;
        }
        xh_ = static_cast<uint16_t*>(xh_mem_);
        wscratch_ = static_cast<uint16_t*>(wscratch_mem_);
        continue;
      }
      if (end != cudaSuccess || !error_.ok()) {
        if (graph) cudaGraphDestroy(graph);
        if (end != cudaSuccess) set_cuda_error("graph capture", end);
        return;
      }
      cudaGraphExec_t exec = nullptr;
      const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      if (inst != cudaSuccess) {
        set_cuda_error("graph instantiate", inst);
        return;
      }
      evict_graphs(std::max(1, opt_.max_graphs) - 1);
      graphs_[key] = StepGraph{exec, ++graph_tick_};
      if (cudaGraphLaunch(exec, stream_) != cudaSuccess) set_cuda_error("graph launch");
      return;
    }
    fail(make_status(StatusCode::kInternal, "run_step: the step kept needing bigger working buffers"));
  }

  void invalidate_steps() override { destroy_graphs(); }

 private:
  struct ConvCache {
    bool valid = false;
    const float* data = nullptr;
    int64_t rows = 0, cols = 0, stride = 0, n_in_pad = 0;
  };

  static bool same_shape(const Mat& a, const Mat& b) {
    return mat_ok(a) && mat_ok(b) && a.rows == b.rows && a.cols == b.cols;
  }
  static bool overlaps(const Mat& a, const Mat& b) {
    if (a.rows == 0 || b.rows == 0) return false;
    const auto* a0 = reinterpret_cast<const char*>(a.data);
    const auto* a1 = reinterpret_cast<const char*>(a.data + (a.rows - 1) * a.stride + a.cols);
    const auto* b0 = reinterpret_cast<const char*>(b.data);
    const auto* b1 = reinterpret_cast<const char*>(b.data + (b.rows - 1) * b.stride + b.cols);
    return a0 < b1 && b0 < a1;
  }
  static bool kv_ok(const KvLayerView& kv) {
    return kv.k && kv.v && kv.n_head_kv > 0 && kv.head_dim > 0 &&
           (kv.type == GgmlType::F16 || kv.type == GgmlType::F32 || kv.type == GgmlType::Q8_0) &&
           kv_head_bytes(kv.type, kv.head_dim) > 0;
  }
  static cuda::KvView kv_view(const KvLayerView& kv) {
    return {kv.k, kv.v, kv.type == GgmlType::F16, kv.n_head_kv, kv.head_dim, kv.n_slots, kv.type == GgmlType::Q8_0};
  }
  // Shapes the fused attention-input kernel takes: those the separate ops accept (rms_norm,
  // rope, copy, kv_store), heads of at most cuda::kQkvMaxHeadDim, q, k, v apart.
  static bool qkv_fusable(const QkvNormRopeArgs& a) {
    const RopeArgs& r = a.rope;
    const int64_t d = r.head_dim;
    if (d <= 0 || d > cuda::kQkvMaxHeadDim || r.n_dims <= 0 || r.n_dims % 2 != 0 || r.n_dims > d ||
        r.n_dims > 2 * cuda::kRopeMaxPairs || !a.pos || !mat_ok(a.q) || a.q.cols % d != 0)
      return false;
    if (a.k.cols == 0) return true;
    return mat_ok(a.k) && same_shape(a.k, a.v) && a.k.rows == a.q.rows && kv_ok(a.kv) && a.kv.head_dim == d &&
           a.k.cols == static_cast<int64_t>(a.kv.n_head_kv) * d && a.slots && !overlaps(a.q, a.k) &&
           !overlaps(a.q, a.v) && !overlaps(a.k, a.v);
  }

  bool enter() {
    cudaSetDevice(device_);
    return true;
  }
  // The cached f16 copy of a matmul input stays valid until something writes over its source.
  void written(const Mat& m) {
    if (conv_.valid && overlaps(Mat{const_cast<float*>(conv_.data), conv_.rows, conv_.cols, conv_.stride}, m))
      conv_.valid = false;
  }
  void written_raw(const void* p, size_t bytes) {
    if (!conv_.valid || bytes == 0) return;
    const auto* b0 = static_cast<const char*>(p);
    written(Mat{reinterpret_cast<float*>(const_cast<char*>(b0)), 1, static_cast<int64_t>((bytes + 3) / 4),
                static_cast<int64_t>((bytes + 3) / 4)});
  }

  const CudaWeight* weight_of(const Weight& w, const char* op) {
    const auto* cw = static_cast<const CudaWeight*>(w.impl);
    if (!cw || !w.data) {
      fail(make_status(StatusCode::kInvalidArgument, "{}: the weight was not uploaded by this CUDA backend", op));
      return nullptr;
    }
    return cw;
  }

  template <typename... Args>
  void fail_shape(fmt::format_string<Args...> f, Args&&... args) {
    fail(make_status(StatusCode::kInvalidArgument, f, std::forward<Args>(args)...));
  }
  void fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }
  void set_cuda_error(const char* what, cudaError_t e = cudaSuccess) {
    if (e == cudaSuccess) e = cudaGetLastError();
    fail(make_status(StatusCode::kInternal, "CUDA error in {}: {}", what, cudaGetErrorString(e)));
  }
  void launched(const char* op) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) fail(make_status(StatusCode::kInternal, "CUDA error launching {}: {}", op, cudaGetErrorString(e)));
  }
  Status check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return {};
    cudaGetLastError();
    return make_status(StatusCode::kInternal, "CUDA error in {}: {}", what, cudaGetErrorString(e));
  }
  // Returns (and clears) the first error recorded by an op since the last report.
  Status sticky() {
    Status s = std::move(error_);
    error_ = Status();
    return s;
  }

  Result<void*> internal_alloc(size_t bytes) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      return make_status(StatusCode::kResourceExhausted, "CUDA device {}: cannot allocate {} bytes of working memory",
                         device_, bytes);
    }
    internal_.push_back(p);
    internal_bytes_ += bytes;
    return p;
  }
  void internal_free(void* p, size_t bytes) {
    if (!p) return;
    cudaStreamSynchronize(stream_);
    cudaFree(p);
    internal_.erase(std::remove(internal_.begin(), internal_.end(), p), internal_.end());
    internal_bytes_ -= bytes;
  }

  // Grows a working buffer; outside run_step only, since it frees the old one.
  Status grow(void** buf, size_t* have, size_t need) {
    if (*have >= need) return {};
    if (capturing_) {  // run_step grows it after this capture and captures again
      auto& w = grow_wanted_[{buf, have}];
      w = std::max(w, need);
      return make_status(StatusCode::kFailedPrecondition, "working buffer grows after capture");
    }
    destroy_graphs();
    internal_free(*buf, *have);
    *buf = nullptr;
    *have = 0;
    Result<void*> r = internal_alloc(need);
    if (!r.ok()) {
      fail(r.status());
      return r.status();
    }
    *buf = r.value();
    *have = need;
    return {};
  }
  // The f16 operand of x (rows <= kMaxMatvecRows) for weights of n_in_pad in xh_: converted
  // unless xh_ already holds it. False when the buffer cannot grow (the failure is recorded).
  bool matvec_operand(Mat x, int64_t n_in_pad) {
    if (conv_.valid && conv_.data == x.data && conv_.rows == x.rows && conv_.cols == x.cols &&
        conv_.stride == x.stride && conv_.n_in_pad == n_in_pad)
      return true;
    if (!ensure_xh(static_cast<size_t>(x.rows * n_in_pad) * 2).ok()) return false;
    if (!row_coop() || !cuda::launch_act_to_f16_rows_coop(stream_, mf(x), n_in_pad, xh_, xscale_, row_sync_))
      cuda::launch_act_to_f16_rows(stream_, mf(x), n_in_pad, xh_, xscale_, true);
    conv_ = {true, x.data, x.rows, x.cols, x.stride, n_in_pad};
    return true;
  }
  Status ensure_xh(size_t bytes) {
    Status s = grow(&xh_mem_, &xh_bytes_, bytes);
    xh_ = static_cast<uint16_t*>(xh_mem_);
    return s;
  }

  // A weight's bytes onto the device, landed when it returns and ordered before every later
  // kernel of stream_. (cudaMemcpy runs on the legacy stream, which a non-blocking stream_ does
  // not wait for, and from pageable memory it may return before its DMA has landed: a matmul
  // right after an upload could read part of the old memory; docs/perf-notes.md, twenty-third
  // session.)
  Status weight_copy(void* dst, const void* src, size_t bytes) {
    GS_RETURN_IF_ERROR(check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "weight upload"));
    return check(cudaStreamSynchronize(stream_), "weight upload");
  }

  Status repack_upload(GgmlType type, const WeightLayout& L, const uint8_t* src, size_t src_row_bytes,
                       uint8_t* base) {
    if (!staging_) {
      if (cudaMallocHost(&staging_, kStagingBytes) != cudaSuccess) {
        cudaGetLastError();
        return make_status(StatusCode::kResourceExhausted, "cannot allocate {} bytes of pinned host memory",
                           kStagingBytes);
      }
    }
    const size_t per_row = static_cast<size_t>(L.main_row_bytes + L.meta_per_row * 2);
    // Tile-major layouts take whole row groups a chunk (the last one padded with zero rows).
    const int64_t unit = L.tile_major ? cuda::kRowGroupRows : 1;
    if (static_cast<size_t>(unit) * per_row > kStagingBytes)
      return make_status(StatusCode::kInvalidArgument, "weight rows of {} bytes exceed the upload staging", per_row);
    const int64_t chunk = std::max<int64_t>(1, static_cast<int64_t>(kStagingBytes / per_row) / unit) * unit;
    std::vector<float> tmp;
    auto* stage = static_cast<uint8_t*>(staging_);
    for (int64_t r0 = 0; r0 < L.n_out; r0 += chunk) {
      const int64_t nr = std::min(chunk, L.n_out - r0);
      const int64_t nr_img = cuda::round_up(nr, unit);  // rows of the device image this chunk fills
      uint8_t* main = stage;
      auto* meta = reinterpret_cast<uint16_t*>(stage + nr_img * L.main_row_bytes);
      if (L.tile_major) std::memset(main, 0, static_cast<size_t>(nr_img * L.main_row_bytes));
      for (int64_t r = 0; r < nr; ++r)
        cuda::repack_row(type, L, src + static_cast<size_t>(r0 + r) * src_row_bytes, r, main, meta, tmp);
      GS_RETURN_IF_ERROR(weight_copy(base + r0 * L.main_row_bytes, main, static_cast<size_t>(nr_img * L.main_row_bytes)));
      if (L.meta_per_row) {
        GS_RETURN_IF_ERROR(weight_copy(base + L.meta_offset + r0 * L.meta_per_row * 2, meta,
                                       static_cast<size_t>(nr * L.meta_per_row * 2)));
      }
    }
    return {};
  }

  // Many rows: f16 weights (dequantized slab by slab unless already f16) times f16 activations
  // on cuBLAS, f32 output; one power-of-two scale for the whole activation keeps f16 in range.
  void gemm(const Weight& w, const WeightLayout& L, Mat x, Mat y) {
    const int64_t n = x.rows, K = L.n_in_pad;
    const bool direct = L.format == WFormat::kF16;
    const Status gx = ensure_xh(static_cast<size_t>(n * K) * 2);
    Status gw;
    if (!direct) {
      gw = grow(&wscratch_mem_, &wscratch_bytes_, std::max(wscratch_need_, static_cast<size_t>(16 * K * 2)));
      wscratch_ = static_cast<uint16_t*>(wscratch_mem_);
    }
    if (!gx.ok() || !gw.ok()) return;
    conv_.valid = false;
    cudaMemsetAsync(amax_, 0, sizeof(unsigned), stream_);
    cuda::launch_act_absmax(stream_, mf(x), amax_);
    cuda::launch_act_to_f16_global(stream_, mf(x), K, amax_, xh_, alpha_);
    const int64_t slab = direct ? L.n_out : std::max<int64_t>(16, static_cast<int64_t>(wscratch_bytes_ / (K * 2)));
    for (int64_t r0 = 0; r0 < L.n_out; r0 += slab) {
      const int64_t nr = std::min(slab, L.n_out - r0);
      const void* a = nullptr;
      if (direct) {
        a = static_cast<const uint8_t*>(w.data) + r0 * L.main_row_bytes;
      } else {
        cuda::launch_dequant_f16(stream_, w.data, L, r0, nr, wscratch_);
        a = wscratch_;
      }
      const cublasStatus_t st =
          cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nr), static_cast<int>(n), static_cast<int>(K),
                       alpha_, a, CUDA_R_16F, static_cast<int>(K), xh_, CUDA_R_16F, static_cast<int>(K), zero_,
                       y.data + r0, CUDA_R_32F, static_cast<int>(y.stride), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      if (st != CUBLAS_STATUS_SUCCESS) {
        fail(make_status(StatusCode::kInternal, "cuBLAS GEMM failed (status {}) for [{} x {}] x [{} x {}]",
                         static_cast<int>(st), n, K, nr, K));
        return;
      }
    }
    launched("matmul (gemm)");
  }

  void destroy_graphs() {
    for (auto& [k, g] : graphs_) cudaGraphExecDestroy(g.exec);
    graphs_.clear();
  }
  // Destroys the least recently replayed graphs until at most `keep` are left (an in-flight
  // launch of a destroyed graph still completes: CUDA frees it when it is done).
  void evict_graphs(size_t keep) {
    while (graphs_.size() > keep) {
      auto oldest = graphs_.begin();
      for (auto g = graphs_.begin(); g != graphs_.end(); ++g)
        if (g->second.used < oldest->second.used) oldest = g;
      cudaGraphExecDestroy(oldest->second.exec);
      graphs_.erase(oldest);
    }
  }

  int device_;
  CudaBackendOptions opt_;
  cudaDeviceProp prop_{};
  int n_sm_ = 1;
  bool wg_ok_ = false;  // the sm_90a wgmma prefill attention kernel can run here
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unordered_map<void*, size_t> allocs_;
  size_t bytes_in_use_ = 0;
  std::vector<void*> internal_;
  size_t internal_bytes_ = 0;
  std::vector<std::unique_ptr<CudaWeight>> weights_;
  void* staging_ = nullptr;
  void* xh_mem_ = nullptr;
  uint16_t* xh_ = nullptr;
  size_t xh_bytes_ = 0;
  void* wscratch_mem_ = nullptr;
  uint16_t* wscratch_ = nullptr;
  size_t wscratch_bytes_ = 0;
  size_t wscratch_need_ = 0;
  unsigned* amax_ = nullptr;
  float* alpha_ = nullptr;
  float* zero_ = nullptr;
  float* one_ = nullptr;
  float* xscale_ = nullptr;
  std::unordered_set<void*> pinned_;  // alloc_host's page-locked blocks
  float* partial_ = nullptr;
  cuda::MatvecSync mv_sync_;
  cuda::RowSync row_sync_;  // the several-CTAs-per-row operand kernels' (k_row_f16.cu)
  ConvCache conv_;
  Status error_;
  bool capturing_ = false;
  struct StepGraph {
    cudaGraphExec_t exec = nullptr;
    uint64_t used = 0;  // graph_tick_ of its last launch
  };
  std::unordered_map<uint64_t, StepGraph> graphs_;
  uint64_t graph_tick_ = 0;
  std::map<std::pair<void**, size_t*>, size_t> grow_wanted_;  // sizes asked for during a capture
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id, const CudaBackendOptions& options) {
  if (!env_flag("GS_CUDA_PDL", true)) cuda::set_pdl(false);
  const int n = cuda_device_count();
  if (n == 0) return make_status(StatusCode::kUnavailable, "no CUDA device is available");
  if (device_id < 0 || device_id >= n)
    return make_status(StatusCode::kUnavailable, "CUDA device {} does not exist ({} visible)", device_id, n);
  auto b = std::make_unique<CudaBackend>(device_id, options);
  GS_RETURN_IF_ERROR(b->init());
  return std::unique_ptr<Backend>(std::move(b));
}

Result<std::unique_ptr<Backend>> create_cuda_backend(int device_id) {
  CudaBackendOptions o;
  if (const char* e = std::getenv("GS_CUDA_SIMPLE"); e && std::string(e) == "1") o.simple_kernels = true;
  if (!env_flag("GS_CUDA_GRAPHS", true)) o.graphs = false;
  return create_cuda_backend(device_id, o);
}

}  // namespace gs
