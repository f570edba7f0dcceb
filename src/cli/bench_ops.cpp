// The op microbenchmarks: copy bandwidth, matmul per weight type and row count (decode /
// verify: weight bytes per second), prefill GEMM (FLOP/s), attention for decode at depths
// and for prefill (on CUDA with each tensor-core kernel), and the per-op cost of small ops
// replayed in a graph.
#include "bench_ops.h"

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <string>

#include "bench_ramp.h"
#include "core/ggml_type.h"

namespace gs::cli {
namespace {

std::string shape_str(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }

// Sets (value non-null) an environment variable for a scope and restores it after: kernel
// choices that the CUDA backend reads on each call (GS_CUDA_ATTN).
class EnvSetting {
 public:
  EnvSetting(const char* name, const char* value) : name_(name) {
    if (!value) return;
    if (const char* e = std::getenv(name)) old_ = e;
    had_ = std::getenv(name) != nullptr;
    setenv(name, value, 1);
    set_ = true;
  }
  ~EnvSetting() {
    if (!set_) return;
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  EnvSetting(const EnvSetting&) = delete;
  EnvSetting& operator=(const EnvSetting&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false, set_ = false;
};

struct Ctx {
  Backend& b;
  const OpsBenchOptions& opt;
  std::vector<BenchRow>& rows;
  double copy_bw = 0;      // bytes/s read + written
  double gemm_flops = 0;   // FLOP/s of the reference f16 GEMM
  uint64_t key = 1000;
  // Host weight bytes must outlive the backend's use of them (the CPU backend reads them in
  // place): kept until the benchmark ends.
  std::vector<std::vector<uint8_t>> keep{};
};

// Copies of a weight (or a set of weights) of `bytes` to cycle through so that one pass over
// them is several times the 50 MB L2 (one when quick).
int pass_copies(const Ctx& c, size_t bytes) {
  return c.opt.quick ? 1 : static_cast<int>(std::clamp<size_t>((300ull << 20) / bytes, 1, 8));
}

Result<DeviceBuffer> filled(Backend& b, const std::vector<float>& host) {
  GS_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::make(b, host.size() * 4));
  GS_RETURN_IF_ERROR(b.upload(d.data(), host.data(), host.size() * 4));
  return d;
}

Status bench_copy(Ctx& c) {
  const int64_t rows = c.opt.quick ? 64 : 1024, cols = 262144;  // 1 GiB f32 (64 MiB quick)
  GS_ASSIGN_OR_RETURN(DeviceBuffer src, filled(c.b, random_floats(static_cast<size_t>(rows * cols), 1.0f, 7)));
  GS_ASSIGN_OR_RETURN(DeviceBuffer dst, DeviceBuffer::make(c.b, static_cast<size_t>(rows * cols) * 4));
  const Mat s = Mat::of(src.as<float>(), rows, cols), d = Mat::of(dst.as<float>(), rows, cols);
  const double t = time_step(c.b, c.key++, c.opt.quick ? 2 : 10, [&] { c.b.copy(s, d); });
  GS_RETURN_IF_ERROR(c.b.synchronize());
  const double bytes = 2.0 * rows * cols * 4;
  c.copy_bw = bytes / t;
  BenchRow r{"memory", "copy (read + write)", shape_str(rows, cols) + " f32", t, c.copy_bw, 0, 100.0, "this copy"};
  c.rows.push_back(r);
  return {};
}

Status bench_matvec(Ctx& c) {
  struct Shape {
    const char* name;
    int64_t n_in, n_out;
  };
  const std::vector<Shape> shapes = {{"ffn_gate/up", 5376, 21504}, {"ffn_down", 21504, 5376}, {"attn_k", 5376, 4096}};
  std::vector<GgmlType> types = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q8_0,
                                 GgmlType::Q4_0, GgmlType::F16,  GgmlType::BF16};
  if (c.opt.quick) types = {GgmlType::Q4_K, GgmlType::Q8_0};
  std::vector<int64_t> row_counts = c.opt.quick ? std::vector<int64_t>{1, 5} : std::vector<int64_t>{1, 2, 5, 8, 16};
  if (c.opt.only == "matmul") {
    types = {GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q8_0};
    row_counts = {1, 2, 5, 8};
  }
  for (GgmlType type : types) {
    for (const Shape& sh : shapes) {
      if (c.opt.quick && sh.n_out != 4096) continue;  // quick (CPU): the small projection only
      const size_t wbytes = ggml_row_size(type, sh.n_in).value() * static_cast<size_t>(sh.n_out);
      const int copies = pass_copies(c, wbytes);
      std::vector<Weight> ws;
      for (int i = 0; i < copies; ++i) {
        c.keep.push_back(random_weight_bytes(type, sh.n_in, sh.n_out, 100 + i));
        GS_ASSIGN_OR_RETURN(Weight w, c.b.upload_weight(c.keep.back().data(), type, sh.n_in, sh.n_out));
        ws.push_back(w);
      }
      for (int64_t n : row_counts) {
        GS_ASSIGN_OR_RETURN(DeviceBuffer xb, filled(c.b, random_floats(static_cast<size_t>(n * sh.n_in), 1.0f, 3)));
        GS_ASSIGN_OR_RETURN(DeviceBuffer yb, DeviceBuffer::make(c.b, static_cast<size_t>(n * sh.n_out) * 4));
        const Mat x = Mat::of(xb.as<float>(), n, sh.n_in), y = Mat::of(yb.as<float>(), n, sh.n_out);
        const double t = time_step(c.b, c.key++, c.opt.quick ? 1 : 20, [&] {
                           for (const Weight& w : ws) c.b.matmul(w, x, y);
                         }) / copies;
        GS_RETURN_IF_ERROR(c.b.synchronize());
        BenchRow r{"matmul", std::string(ggml_type_name(type)) + " " + sh.name + " rows " + std::to_string(n),
                   shape_str(sh.n_in, sh.n_out), t, wbytes / t, 2.0 * n * sh.n_in * sh.n_out / t / 1e12,
                   100.0 * (wbytes / t) / c.copy_bw, "copy bandwidth"};
        c.rows.push_back(r);
      }
    }
  }
  return {};
}

// The q/k/v projections of a 31B layer (Q4_K, 5376 -> 8192, 4096, 4096) as one
// matmul_multi and as three matmuls, per set of the three weights (several sets, so that a
// pass is several times the L2).
Status bench_matvec_multi(Ctx& c) {
  const int64_t n_in = c.opt.quick ? 512 : 5376;
  const std::vector<int64_t> n_outs = c.opt.quick ? std::vector<int64_t>{256, 128, 128}
                                                  : std::vector<int64_t>{8192, 4096, 4096};
  const GgmlType type = GgmlType::Q4_K;
  size_t set_bytes = 0;
  for (int64_t o : n_outs) set_bytes += ggml_row_size(type, n_in).value() * static_cast<size_t>(o);
  const int sets = pass_copies(c, set_bytes);
  std::vector<std::vector<Weight>> ws(static_cast<size_t>(sets));
  for (int k = 0; k < sets; ++k) {
    for (size_t i = 0; i < n_outs.size(); ++i) {
      c.keep.push_back(random_weight_bytes(type, n_in, n_outs[i], 200 + 3 * k + static_cast<int>(i)));
      GS_ASSIGN_OR_RETURN(Weight w, c.b.upload_weight(c.keep.back().data(), type, n_in, n_outs[i]));
      ws[static_cast<size_t>(k)].push_back(w);
    }
  }
  for (int64_t n : c.opt.quick ? std::vector<int64_t>{1} : std::vector<int64_t>{1, 5}) {
    GS_ASSIGN_OR_RETURN(DeviceBuffer xb, filled(c.b, random_floats(static_cast<size_t>(n * n_in), 1.0f, 3)));
    std::vector<DeviceBuffer> yb;
    std::vector<Mat> ys;
    for (int64_t o : n_outs) {
      GS_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::make(c.b, static_cast<size_t>(n * o) * 4));
      ys.push_back(Mat::of(b.as<float>(), n, o));
      yb.push_back(std::move(b));
    }
    const Mat x = Mat::of(xb.as<float>(), n, n_in);
    for (bool multi : {true, false}) {
      const double t = time_step(c.b, c.key++, c.opt.quick ? 1 : 20, [&] {
                         for (const auto& set : ws) {
                           if (multi) {
                             const Weight* wp[3] = {&set[0], &set[1], &set[2]};
                             c.b.matmul_multi(wp, ys.data(), 3, x);
                           } else {
                             for (size_t i = 0; i < set.size(); ++i) c.b.matmul(set[i], x, ys[i]);
                           }
                         }
                       }) / sets;
      GS_RETURN_IF_ERROR(c.b.synchronize());
      BenchRow r{"matmul",
                 std::string(ggml_type_name(type)) + " q/k/v " + (multi ? "multi" : "separate") + " rows " +
                     std::to_string(n),
                 shape_str(n_in, n_outs[0] + n_outs[1] + n_outs[2]), t, set_bytes / t,
                 2.0 * n * n_in * (n_outs[0] + n_outs[1] + n_outs[2]) / t / 1e12,
                 100.0 * (set_bytes / t) / c.copy_bw, "copy bandwidth"};
      c.rows.push_back(r);
    }
  }
  return {};
}

Status bench_gemm(Ctx& c) {
  // The f16 reference: a weight already in f16, 4096 rows (the cuBLAS ceiling in this run).
  const std::vector<int64_t> row_counts = c.opt.quick ? std::vector<int64_t>{32} : std::vector<int64_t>{512, 4096};
  for (GgmlType type : {GgmlType::F16, GgmlType::Q4_K, GgmlType::Q6_K}) {
    if (c.opt.quick && type != GgmlType::Q4_K) continue;
    const int64_t n_in = c.opt.quick ? 1024 : 5376, n_out = c.opt.quick ? 1024 : 21504;
    c.keep.push_back(random_weight_bytes(type, n_in, n_out, 11));
    GS_ASSIGN_OR_RETURN(Weight w, c.b.upload_weight(c.keep.back().data(), type, n_in, n_out));
    for (int64_t n : row_counts) {
      GS_ASSIGN_OR_RETURN(DeviceBuffer xb, filled(c.b, random_floats(static_cast<size_t>(n * n_in), 1.0f, 5)));
      GS_ASSIGN_OR_RETURN(DeviceBuffer yb, DeviceBuffer::make(c.b, static_cast<size_t>(n * n_out) * 4));
      const Mat x = Mat::of(xb.as<float>(), n, n_in), y = Mat::of(yb.as<float>(), n, n_out);
      c.b.matmul(w, x, y);  // sizes the working buffers outside the captured step
      GS_RETURN_IF_ERROR(c.b.synchronize());
      const double t = time_step(c.b, c.key++, c.opt.quick ? 1 : 5, [&] { c.b.matmul(w, x, y); });
      GS_RETURN_IF_ERROR(c.b.synchronize());
      const double flops = 2.0 * n * n_in * n_out / t;
      if (type == GgmlType::F16 && n == row_counts.back()) c.gemm_flops = flops;
      BenchRow r{"gemm", std::string(ggml_type_name(type)) + " rows " + std::to_string(n), shape_str(n_in, n_out), t,
                 0, flops / 1e12, c.gemm_flops > 0 ? 100.0 * flops / c.gemm_flops : 0, "f16 GEMM 4096 rows"};
      c.rows.push_back(r);
    }
  }
  return {};
}

// KV pools and page table for one sequence of `len` positions, random contents.
struct KvSetup {
  DeviceBuffer k, v, pages, seq, lo, hi, q, out;
  KvLayerView view;
  PageTableView pt;
};

Status make_kv(Ctx& c, KvSetup& s, int n_kv, int D, int64_t len, int n_tok, int n_head, int window) {
  const int page = 256;
  const int64_t n_pages = (len + page - 1) / page + 1;
  const int64_t n_slots = n_pages * page;
  const size_t bytes = static_cast<size_t>(n_slots) * n_kv * D * 2;
  std::vector<uint8_t> rnd(std::min<size_t>(bytes, 64ull << 20));
  // f16 values in [-2, 2): random mantissa, exponent bits limited.
  FastRng r(9);
  for (size_t i = 0; i + 1 < rnd.size(); i += 2) {
    const uint16_t h = static_cast<uint16_t>((r.next() & 0x83ffu) | 0x3800u);
    std::memcpy(rnd.data() + i, &h, 2);
  }
  GS_ASSIGN_OR_RETURN(s.k, DeviceBuffer::make(c.b, bytes));
  GS_ASSIGN_OR_RETURN(s.v, DeviceBuffer::make(c.b, bytes));
  for (DeviceBuffer* d : {&s.k, &s.v})
    for (size_t off = 0; off < bytes; off += rnd.size())
      GS_RETURN_IF_ERROR(c.b.upload(static_cast<uint8_t*>(d->data()) + off, rnd.data(), std::min(rnd.size(), bytes - off)));
  std::vector<int32_t> pages(static_cast<size_t>(n_pages));
  std::iota(pages.begin(), pages.end(), 0);
  std::vector<int32_t> seq(static_cast<size_t>(n_tok), 0), lo(static_cast<size_t>(n_tok)), hi(static_cast<size_t>(n_tok));
  for (int t = 0; t < n_tok; ++t) {
    const int64_t p = len - n_tok + t;
    hi[static_cast<size_t>(t)] = static_cast<int32_t>(p);
    lo[static_cast<size_t>(t)] = static_cast<int32_t>(window > 0 ? std::max<int64_t>(0, p - window + 1) : 0);
  }
  auto up = [&](DeviceBuffer& d, const std::vector<int32_t>& v) -> Status {
    GS_ASSIGN_OR_RETURN(d, DeviceBuffer::make(c.b, v.size() * 4));
    return c.b.upload(d.data(), v.data(), v.size() * 4);
  };
  GS_RETURN_IF_ERROR(up(s.pages, pages));
  GS_RETURN_IF_ERROR(up(s.seq, seq));
  GS_RETURN_IF_ERROR(up(s.lo, lo));
  GS_RETURN_IF_ERROR(up(s.hi, hi));
  GS_ASSIGN_OR_RETURN(s.q, filled(c.b, random_floats(static_cast<size_t>(n_tok) * n_head * D, 1.0f, 13)));
  GS_ASSIGN_OR_RETURN(s.out, DeviceBuffer::make(c.b, static_cast<size_t>(n_tok) * n_head * D * 4));
  s.view = KvLayerView{s.k.data(), s.v.data(), GgmlType::F16, n_kv, D, n_slots};
  s.pt = PageTableView{s.pages.as<int32_t>(), static_cast<int>(n_pages), page, 0};
  return {};
}

// Attention (scale 1) of the n_tok queries of n_head heads of D in `s` over its cache.
AttentionArgs kv_attention_args(const KvSetup& s, int n_tok, int n_head, int D, int max_kv_len) {
  AttentionArgs aa;
  aa.q = Mat::of(s.q.as<float>(), n_tok, static_cast<int64_t>(n_head) * D);
  aa.out = Mat::of(s.out.as<float>(), n_tok, static_cast<int64_t>(n_head) * D);
  aa.n_head = n_head;
  aa.head_dim = D;
  aa.kv = s.view;
  aa.pages = s.pt;
  aa.tok_seq = s.seq.as<int32_t>();
  aa.kv_lo = s.lo.as<int32_t>();
  aa.kv_hi = s.hi.as<int32_t>();
  aa.max_kv_len = max_kv_len;
  aa.n_seqs = 1;  // one sequence, as a decode step or verify pass of one stream (the kernel choice follows it)
  return aa;
}

Status bench_attention(Ctx& c) {
  struct A {
    const char* name;
    int n_head, n_kv, D, window;
  };
  const A full{"full (D 512, GQA 8)", 32, 4, 512, 0}, swa{"sliding (D 256, W 1024)", 32, 16, 256, 1024};
  std::vector<int> depths = c.opt.depths;
  if (c.opt.quick) depths = {1024};
  for (const A& a : {full, swa}) {
    for (int depth : depths) {
      if (a.window > 0 && depth != depths.front()) continue;  // the window bounds it
      for (int n_tok : {1, 5}) {
        const int64_t len = depth + n_tok;
        KvSetup s;
        GS_RETURN_IF_ERROR(make_kv(c, s, a.n_kv, a.D, len, n_tok, a.n_head, a.window));
        const AttentionArgs aa =
            kv_attention_args(s, n_tok, a.n_head, a.D, static_cast<int>(a.window > 0 ? a.window : len));
        const double t = time_step(c.b, c.key++, c.opt.quick ? 1 : 20, [&] { c.b.attention(aa); });
        GS_RETURN_IF_ERROR(c.b.synchronize());
        const int64_t keys = a.window > 0 ? std::min<int64_t>(len, a.window + n_tok - 1) : len;
        const double bytes = static_cast<double>(keys) * a.n_kv * a.D * 2 * 2;
        BenchRow r{"attention", std::string(a.name) + " tokens " + std::to_string(n_tok),
                   "depth " + std::to_string(depth), t, bytes / t, 0, 100.0 * (bytes / t) / c.copy_bw,
                   "copy bandwidth"};
        c.rows.push_back(r);
      }
    }
  }
  // Prefill: 4096 (256 quick) tokens from an empty context, and a 512-token chunk at depth
  // 8192 (chunked prefill of a long prompt); useful FLOP/s (4 * heads * D per query-key pair).
  // On CUDA each row is measured with each tensor-core kernel (GS_CUDA_ATTN=old: the 16-row
  // decode kernel, new: the 64-row prefill kernel; the default takes the new one here).
  const bool cuda = c.b.kind() == BackendKind::kCuda;
  const std::vector<const char*> kernels = cuda ? std::vector<const char*>{"old", "new"} : std::vector<const char*>{nullptr};
  struct Pf {
    int n_tok, depth;
  };
  const std::vector<Pf> pfs = c.opt.quick ? std::vector<Pf>{{256, 0}} : std::vector<Pf>{{4096, 0}, {512, 8192}};
  for (const Pf& pf : pfs) {
    for (const A& a : {full, swa}) {
      const int n_tok = pf.n_tok;
      const int64_t len = static_cast<int64_t>(pf.depth) + n_tok;
      KvSetup s;
      GS_RETURN_IF_ERROR(make_kv(c, s, a.n_kv, a.D, len, n_tok, a.n_head, a.window));
      const AttentionArgs aa =
          kv_attention_args(s, n_tok, a.n_head, a.D, static_cast<int>(a.window > 0 ? a.window : len));
      double keys = 0;
      for (int64_t p = len - n_tok; p < len; ++p) keys += a.window > 0 ? std::min<int64_t>(p + 1, a.window) : p + 1;
      for (const char* kernel : kernels) {
        EnvSetting env("GS_CUDA_ATTN", kernel);
        const double t = time_step(c.b, c.key++, c.opt.quick ? 1 : 3, [&] { c.b.attention(aa); });
        GS_RETURN_IF_ERROR(c.b.synchronize());
        const double flops = 4.0 * a.n_head * a.D * keys / t;
        std::string name = std::string(a.name) + " prefill";
        if (kernel) name += std::string(" [GS_CUDA_ATTN=") + kernel + "]";
        std::string shape = std::to_string(n_tok) + " tokens";
        if (pf.depth > 0) shape += " at depth " + std::to_string(pf.depth);
        BenchRow r{"attention", name, shape, t, 0, flops / 1e12, c.gemm_flops > 0 ? 100.0 * flops / c.gemm_flops : 0,
                   "f16 GEMM 4096 rows"};
        c.rows.push_back(r);
      }
    }
  }
  return {};
}

Status bench_small_ops(Ctx& c) {
  const int reps = c.opt.quick ? 10 : 200;
  for (int64_t n : {int64_t{1}, int64_t{4096}}) {
    if (c.opt.quick && n > 1) continue;
    const int64_t e = 5376, q = 8192;
    GS_ASSIGN_OR_RETURN(DeviceBuffer xb, filled(c.b, random_floats(static_cast<size_t>(n * q), 1.0f, 17)));
    GS_ASSIGN_OR_RETURN(DeviceBuffer yb, filled(c.b, random_floats(static_cast<size_t>(n * q), 1.0f, 19)));
    GS_ASSIGN_OR_RETURN(DeviceBuffer zb, filled(c.b, random_floats(static_cast<size_t>(n * e), 1.0f, 29)));
    GS_ASSIGN_OR_RETURN(DeviceBuffer gb, filled(c.b, random_floats(static_cast<size_t>(e), 1.0f, 23)));
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), 100);
    GS_ASSIGN_OR_RETURN(DeviceBuffer pb, DeviceBuffer::make(c.b, pos.size() * 4));
    GS_RETURN_IF_ERROR(c.b.upload(pb.data(), pos.data(), pos.size() * 4));
    const Mat x = Mat::of(xb.as<float>(), n, e), y = Mat::of(yb.as<float>(), n, e), z = Mat::of(zb.as<float>(), n, e);
    const Mat xq = Mat::of(xb.as<float>(), n, q);
    RopeArgs ra;
    ra.head_dim = 256;
    ra.n_dims = 256;
    // The attention inputs of a 31B layer: sliding (Q 32 x 256, K and V 16 x 256) and full
    // (Q 32 x 512, K = V 4 x 512, proportional RoPE), f16 pools with a slot per row.
    const int64_t kvw = 4096;
    GS_ASSIGN_OR_RETURN(DeviceBuffer qf, filled(c.b, random_floats(static_cast<size_t>(n * 2 * q), 1.0f, 31)));
    GS_ASSIGN_OR_RETURN(DeviceBuffer kb, filled(c.b, random_floats(static_cast<size_t>(n * kvw), 1.0f, 37)));
    GS_ASSIGN_OR_RETURN(DeviceBuffer vb, filled(c.b, random_floats(static_cast<size_t>(n * kvw), 1.0f, 41)));
    GS_ASSIGN_OR_RETURN(DeviceBuffer kpool, DeviceBuffer::make(c.b, static_cast<size_t>(n * kvw) * 2));
    GS_ASSIGN_OR_RETURN(DeviceBuffer vpool, DeviceBuffer::make(c.b, static_cast<size_t>(n * kvw) * 2));
    std::vector<int32_t> slots(static_cast<size_t>(n));
    std::iota(slots.begin(), slots.end(), 0);
    GS_ASSIGN_OR_RETURN(DeviceBuffer sb, DeviceBuffer::make(c.b, slots.size() * 4));
    GS_RETURN_IF_ERROR(c.b.upload(sb.data(), slots.data(), slots.size() * 4));
    std::vector<float> ff(256, 1e30f);
    std::fill(ff.begin(), ff.begin() + 64, 1.0f);
    GS_ASSIGN_OR_RETURN(DeviceBuffer fb, filled(c.b, ff));
    QkvNormRopeArgs swa;
    swa.q = xq;
    swa.k = Mat::of(kb.as<float>(), n, kvw);
    swa.v = Mat::of(vb.as<float>(), n, kvw);
    swa.q_weight = swa.k_weight = gb.as<float>();
    swa.pos = pb.as<int32_t>();
    swa.slots = sb.as<int32_t>();
    swa.rope = ra;
    swa.kv = KvLayerView{kpool.data(), vpool.data(), GgmlType::F16, 16, 256, n};
    QkvNormRopeArgs full = swa;
    full.q = Mat::of(qf.as<float>(), n, 2 * q);
    full.k = Mat::of(kb.as<float>(), n, 2048);
    full.v = Mat::of(vb.as<float>(), n, 2048);
    full.v_from_k = true;
    full.rope.head_dim = full.rope.n_dims = 512;
    full.rope.theta = 1e6f;
    full.rope.freq_factors = fb.as<float>();
    full.kv = KvLayerView{kpool.data(), vpool.data(), GgmlType::F16, 4, 512, n};
    const double swa_bytes = n * (2.0 * q * 4 + 4.0 * kvw * 4 + 2.0 * kvw * 2);
    const double full_bytes = n * (4.0 * q * 4 + 3.0 * 2048 * 4 + 2.0 * 2048 * 2);
    struct Op {
      const char* name;
      std::function<void()> fn;
      double bytes;
      std::string shape = {};  // default: rows x n_embd
    };
    const double rb = static_cast<double>(n) * e * 4;
    // The fused ops next to the sequences they replace (Backend's default run on this backend).
    const std::vector<Op> ops = {
        {"rms_norm", [&] { c.b.rms_norm(x, gb.as<float>(), e, 1e-6f, y); }, 2 * rb},
        {"rms_norm per head", [&] { c.b.rms_norm(xq, gb.as<float>(), 256, 1e-6f, xq); }, 2.0 * n * q * 4},
        {"rope q", [&] { c.b.rope(xq, pb.as<int32_t>(), ra); }, 2.0 * n * q * 4},
        {"add", [&] { c.b.add(x, y, y); }, 3 * rb},
        {"gelu_mul", [&] { c.b.gelu_mul(x, y, y); }, 3 * rb},
        {"scale", [&] { c.b.scale(y, 1.0001f); }, 2 * rb},
        {"add_rms_norm fused", [&] { c.b.add_rms_norm(x, y, gb.as<float>(), 0.5f, gb.as<float>(), 1e-6f, z); },
         4 * rb},
        {"add_rms_norm as 4 ops",
         [&] { c.b.Backend::add_rms_norm(x, y, gb.as<float>(), 0.5f, gb.as<float>(), 1e-6f, z); }, 4 * rb},
        {"qkv_norm_rope_store sliding fused", [&] { c.b.qkv_norm_rope_store(swa); }, swa_bytes,
         shape_str(n, q) + " + 2x" + shape_str(n, kvw)},
        {"qkv_norm_rope_store sliding as 6 ops", [&] { c.b.Backend::qkv_norm_rope_store(swa); }, swa_bytes,
         shape_str(n, q) + " + 2x" + shape_str(n, kvw)},
        {"qkv_norm_rope_store full K=V fused", [&] { c.b.qkv_norm_rope_store(full); }, full_bytes,
         shape_str(n, 2 * q) + " + " + shape_str(n, 2048)},
        {"qkv_norm_rope_store full K=V as 7 ops", [&] { c.b.Backend::qkv_norm_rope_store(full); }, full_bytes,
         shape_str(n, 2 * q) + " + " + shape_str(n, 2048)},
    };
    for (const Op& op : ops) {
      const double t = time_step(c.b, c.key++, 3, [&] {
                         for (int i = 0; i < reps; ++i) op.fn();
                       }) / reps;
      GS_RETURN_IF_ERROR(c.b.synchronize());
      BenchRow r{"small op", std::string(op.name) + " rows " + std::to_string(n),
                 op.shape.empty() ? shape_str(n, e) : op.shape, t, op.bytes / t, 0,
                 100.0 * (op.bytes / t) / c.copy_bw, "copy bandwidth"};
      c.rows.push_back(r);
    }
  }
  return {};
}

}  // namespace

Result<double> measure_copy_bandwidth(Backend& b, bool quick, std::vector<BenchRow>& rows) {
  OpsBenchOptions o;
  o.quick = quick;
  Ctx c{b, o, rows};
  GS_RETURN_IF_ERROR(bench_copy(c));
  return c.copy_bw;
}

Result<double> measure_gemm_flops(Backend& b, bool quick, std::vector<BenchRow>& rows) {
  const int64_t n = quick ? 8 : 4096, n_in = quick ? 1024 : 5376, n_out = quick ? 1024 : 21504;
  // Outlives the weight's use below (the CPU backend reads host bytes in place).
  const auto host = random_weight_bytes(GgmlType::F16, n_in, n_out, 11);
  GS_ASSIGN_OR_RETURN(Weight w, b.upload_weight(host.data(), GgmlType::F16, n_in, n_out));
  GS_ASSIGN_OR_RETURN(DeviceBuffer xb, filled(b, random_floats(static_cast<size_t>(n * n_in), 1.0f, 5)));
  GS_ASSIGN_OR_RETURN(DeviceBuffer yb, DeviceBuffer::make(b, static_cast<size_t>(n * n_out) * 4));
  const Mat x = Mat::of(xb.as<float>(), n, n_in), y = Mat::of(yb.as<float>(), n, n_out);
  b.matmul(w, x, y);
  GS_RETURN_IF_ERROR(b.synchronize());
  const double t = time_step(b, 999, quick ? 1 : 5, [&] { b.matmul(w, x, y); });
  GS_RETURN_IF_ERROR(b.synchronize());
  const double flops = 2.0 * n * n_in * n_out / t;
  rows.push_back(BenchRow{"gemm", "f16 weight rows " + std::to_string(n), shape_str(n_in, n_out), t, 0, flops / 1e12,
                          100.0, "this GEMM"});
  return flops;
}

Status run_ops_bench(Backend& b, const OpsBenchOptions& opt, std::vector<BenchRow>& rows) {
  Ctx c{b, opt, rows};
  GS_RETURN_IF_ERROR(bench_copy(c));
  if (opt.only == "matmul") {
    GS_RETURN_IF_ERROR(bench_matvec(c));
    return bench_matvec_multi(c);
  }
  if (opt.only == "attention") {
    // The prefill rows are reported against the f16 GEMM rate: measure it first.
    GS_ASSIGN_OR_RETURN(c.gemm_flops, measure_gemm_flops(b, opt.quick, rows));
    return bench_attention(c);
  }
  if (opt.only == "small") return bench_small_ops(c);
  if (opt.only == "ramp") return bench_matvec_ramp(b, c.copy_bw, opt.quick, rows);
  GS_RETURN_IF_ERROR(bench_gemm(c));
  GS_RETURN_IF_ERROR(bench_matvec(c));
  GS_RETURN_IF_ERROR(bench_matvec_multi(c));
  GS_RETURN_IF_ERROR(bench_attention(c));
  GS_RETURN_IF_ERROR(bench_small_ops(c));
  return {};
}

}  // namespace gs::cli
