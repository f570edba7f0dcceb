// Runs k_matvec_stream.cu's bulk-copy decode matvec in the CPU emulator against a
// double-precision reference, for every format it serves, 1..16 activation rows (both column
// tile counts, activations in shared memory or not) and shapes whose row groups are cut
// between CTAs (a small SM count makes few row groups enough). Usage: matvec_emu
// [eager|lazy|random] [filter] (tools/cuda_emu/README.md; scripts/cuda_emu_matvec.sh builds
// and runs it; random: eager copies, the fibers in a random order). Weights go through the
// CUDA backend's own repacking (cuda_weight_repack.cpp) and the activations through the same
// f16 scaling as its conversion kernels. Each weight's image ends at an inaccessible page, so
// a read past its last byte faults. A case of several rows also runs its first and last rows
// alone and expects the same bits (a verify pass reproduces decode); GS_EMU_ALL_ROWS=1 runs every
// row of it alone, and GS_EMU_ROWS (e.g. "1,3,8") replaces the row counts (and adds 3 rows to
// the launches of several weights, which otherwise take 1, 5 and 16). GS_EMU_PROBE=1 runs only
// the shape of CudaMatmul.FewRowGroupsLongRows (21504 x 272 on 132 SMs: one CTA per row group,
// 11 stages, 9 and 16 rows from global memory; ~10 minutes a format).
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_weight_repack.h"
#include "backend/cuda/k_matvec_stream.h"
#include "core/fp16.h"
#include "core/quant.h"
#include "emu.h"

using namespace gs;
using namespace gs::cuda;

namespace {

std::mt19937 rng(1234);

// `bytes` of zeroed memory whose end touches a PROT_NONE page (bytes a multiple of 256, so the
// start stays 256-byte aligned); unmapped on destruction.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    span_ = (bytes + page - 1) / page * page + page;
    void* m = mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      std::abort();
    }
    map_ = static_cast<uint8_t*>(m);
    mprotect(map_ + span_ - page, page, PROT_NONE);
    data_ = map_ + span_ - page - bytes;
  }
  ~GuardedBuffer() { munmap(map_, span_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  uint8_t* data() const { return data_; }

 private:
  uint8_t* map_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t span_ = 0;
};

WFormat format_of(GgmlType t) {
  switch (t) {
    case GgmlType::Q4_K: return WFormat::kQ4_K;
    case GgmlType::Q5_K: return WFormat::kQ5_K;
    case GgmlType::Q6_K: return WFormat::kQ6_K;
    case GgmlType::Q8_0: return WFormat::kQ8_0;
    default: return WFormat::kQ4_0;
  }
}

// The f16 operand of x as the conversion kernels write it (k_common.cuh act_pow2_scale):
// each row scaled by a power of two that brings max |x| to [2^10, 2^11), groups of 4 stored
// as (0, 2, 1, 3), zero padded to n_in_pad.
void to_operand(const std::vector<float>& x, int64_t n, int64_t n_in, int64_t n_in_pad, std::vector<uint16_t>& xh,
                std::vector<float>& xscale) {
  xh.assign(static_cast<size_t>(n * n_in_pad), 0);
  xscale.assign(static_cast<size_t>(n), 1.0f);
  for (int64_t r = 0; r < n; ++r) {
    float amax = 0.f;
    for (int64_t i = 0; i < n_in; ++i) amax = std::fmax(amax, std::fabs(x[static_cast<size_t>(r * n_in + i)]));
    int ex = 0;
    std::frexp(amax, &ex);
    if (amax == 0.0f) ex = 0;
    if (ex < -100) ex = -100;
    const float factor = std::ldexp(1.0f, 11 - ex);
    xscale[static_cast<size_t>(r)] = std::ldexp(1.0f, ex - 11);
    for (int64_t g4 = 0; g4 < n_in_pad / 4; ++g4) {
      float v[4];
      for (int j = 0; j < 4; ++j) {
        const int64_t c = g4 * 4 + j;
        v[j] = c < n_in ? x[static_cast<size_t>(r * n_in + c)] * factor : 0.f;
      }
      uint16_t* o = &xh[static_cast<size_t>(r * n_in_pad + g4 * 4)];
      o[0] = f32_to_fp16(v[0]);
      o[1] = f32_to_fp16(v[2]);
      o[2] = f32_to_fp16(v[1]);
      o[3] = f32_to_fp16(v[3]);
    }
  }
}

// One case: the weights (one per entry of n_outs, of one format and n_in) on the same
// activations in one launch (launch_matvec_stream for one weight, launch_matvec_stream_multi
// for several), every output against its double-precision reference. Returns false (and
// prints why) when an output is off or unwritten or a cross-CTA flag is left raised.
bool run_case(GgmlType type, int64_t n_in, const std::vector<int64_t>& n_outs, int64_t n, int n_sm, bool lazy,
              bool all_rows) {
  const size_t rb = ggml_row_size(type, n_in).value();
  std::normal_distribution<float> nd(0.f, 1.f);
  const int parts = static_cast<int>(n_outs.size());
  std::vector<std::vector<uint8_t>> wq(parts);
  std::vector<std::unique_ptr<GuardedBuffer>> dev(parts);
  std::vector<WeightLayout> L(parts);
  std::vector<float> wf(static_cast<size_t>(n_in)), tmp;
  for (int p = 0; p < parts; ++p) {
    wq[p].resize(rb * static_cast<size_t>(n_outs[p]));
    for (int64_t o = 0; o < n_outs[p]; ++o) {
      for (float& v : wf) v = nd(rng) * 0.05f;
      quantize_row_fn(type)(wf.data(), wq[p].data() + rb * static_cast<size_t>(o), n_in);
    }
    L[p] = make_weight_layout(format_of(type), n_in, n_outs[p]);
    dev[p] = std::make_unique<GuardedBuffer>(L[p].total_bytes);
    for (int64_t o = 0; o < n_outs[p]; ++o)
      repack_row(type, L[p], wq[p].data() + rb * static_cast<size_t>(o), o, dev[p]->data(),
                 reinterpret_cast<uint16_t*>(dev[p]->data() + L[p].meta_offset), tmp);
  }
  std::vector<float> x(static_cast<size_t>(n * n_in));
  for (float& v : x) v = nd(rng);
  std::vector<uint16_t> xh;
  std::vector<float> xscale;
  to_operand(x, n, n_in, L[0].n_in_pad, xh, xscale);
  std::vector<std::vector<float>> y(parts);
  std::vector<MatF> ym(parts);
  std::vector<const void*> wp(parts);
  std::vector<const WeightLayout*> lp(parts);
  for (int p = 0; p < parts; ++p) {
    const int64_t ys = n_outs[p] + 3 + p;  // strided outputs
    y[p].assign(static_cast<size_t>(n * ys), std::nanf(""));
    ym[p] = MatF{y[p].data(), n, n_outs[p], ys};
    wp[p] = dev[p]->data();
    lp[p] = &L[p];
  }
  const int max_ctas = kMatvecCtasPerSm * n_sm;
  std::vector<uint8_t> sync_mem(matvec_sync_bytes(max_ctas) + 256, 0);
  const MatvecSync sync = matvec_sync_at(sync_mem.data(), max_ctas);
  ::emu::st().lazy = lazy;
  ::emu::st().reverse_blocks = true;
  const std::string name(ggml_type_name(type));
  // One weight through launch_matvec_stream, several through launch_matvec_stream_multi.
  auto launch = [&](std::vector<MatF>& out, int64_t row0 = 0) {
    const uint16_t* xr = xh.data() + row0 * L[0].n_in_pad;
    const float* sr = xscale.data() + row0;
    return parts == 1 ? launch_matvec_stream(nullptr, wp[0], L[0], xr, sr, out[0], n_sm, sync)
                      : launch_matvec_stream_multi(nullptr, wp.data(), lp.data(), out.data(), parts, xr, sr, n_sm, sync);
  };
  if (!launch(ym)) {
    std::printf("  %s n_in %ld parts %d rows %ld: not served by the kernel\n", name.c_str(), static_cast<long>(n_in),
                parts, static_cast<long>(n));
    return false;
  }
  for (int c = 0; c < max_ctas; ++c) {
    if (sync.flags[c] != 0) {
      std::printf("  flag %d left raised\n", c);
      return false;
    }
  }
  // Reference and bound as the parity tests: |y - ref| <= 2e-3 * sum |w x|.
  std::vector<float> wrow(static_cast<size_t>(n_in));
  int bad = 0;
  double worst = 0;
  for (int p = 0; p < parts; ++p) {
    for (int64_t o = 0; o < n_outs[p]; ++o) {
      dequantize_row_fn(type)(wq[p].data() + rb * static_cast<size_t>(o), wrow.data(), n_in);
      for (int64_t r = 0; r < n; ++r) {
        double ref = 0, cond = 0;
        for (int64_t i = 0; i < n_in; ++i) {
          const double v = static_cast<double>(wrow[static_cast<size_t>(i)]) * x[static_cast<size_t>(r * n_in + i)];
          ref += v;
          cond += std::fabs(v);
        }
        const double got = y[p][static_cast<size_t>(r * ym[p].stride + o)];
        const double err = std::fabs(got - ref) / (cond + 1e-30);
        worst = std::fmax(worst, std::isfinite(got) ? err : 1e30);
        if (!(err <= 2e-3) && bad++ < 3)
          std::printf("  part %d y[%ld][%ld] = %g, reference %g (sum |w x| %g)\n", p, static_cast<long>(r),
                      static_cast<long>(o), got, ref, cond);
      }
    }
  }
  // A verify pass must reproduce decode: the first and the last row (all_rows: every row) alone
  // give the same bits as those rows of the batch.
  std::vector<int64_t> alone{0, n - 1};
  if (all_rows) {
    alone.clear();
    for (int64_t r = 0; r < n; ++r) alone.push_back(r);
  }
  for (int64_t r : alone) {
    if (n == 1) continue;
    std::vector<std::vector<float>> y1(parts);
    std::vector<MatF> ym1(parts);
    for (int p = 0; p < parts; ++p) {
      y1[p].assign(static_cast<size_t>(n_outs[p]), std::nanf(""));
      ym1[p] = MatF{y1[p].data(), 1, n_outs[p], n_outs[p]};
    }
    launch(ym1, r);
    for (int p = 0; p < parts; ++p)
      for (int64_t o = 0; o < n_outs[p]; ++o) {
        const float batch = y[p][static_cast<size_t>(r * ym[p].stride + o)];
        if (std::memcmp(&y1[p][static_cast<size_t>(o)], &batch, 4) != 0 && bad++ < 3)
          std::printf("  part %d y[%ld][%ld] = %.9g in the batch, %.9g alone\n", p, static_cast<long>(r),
                      static_cast<long>(o), batch, y1[p][static_cast<size_t>(o)]);
      }
  }
  std::printf("  %-5s n_in %5ld n_out %4ld parts %d rows %2ld SMs %d: %s (worst %.2e of sum |w x|)\n", name.c_str(),
              static_cast<long>(n_in), static_cast<long>(n_outs[0]), parts, static_cast<long>(n), n_sm,
              bad ? "FAIL" : "ok", worst);
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "eager";
  const bool lazy = mode == "lazy";
  ::emu::st().random_order = mode == "random";
  const std::string filter = argc > 2 ? argv[2] : "";
  int failed = 0, ran = 0;
  const GgmlType types[] = {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_0, GgmlType::Q4_0};
  struct Shape {
    int64_t n_in, n_out;
    int n_sm;
  };
  // 2560 = 10 tiles (two stages, the second of 2 tiles); 83 rows = 6 row groups, the last of 3;
  // 1 or 2 SMs give 2-4 CTAs, so row groups are cut between CTAs; 256 x 16: one CTA; 5376 x
  // 15: one partial row group, and 5 rows of 5376 activations (53.8 KB) in shared memory;
  // 512 x 390 on one SM: 12 stages of 2 tiles a CTA (many short stages in one ring).
  // GS_EMU_PROBE: only CudaMatmul.FewRowGroupsLongRows's shape, at its rows from global memory.
  const bool probing = std::getenv("GS_EMU_PROBE") != nullptr;
  const std::vector<Shape> shapes =
      probing ? std::vector<Shape>{{21504, 272, 132}}
              : std::vector<Shape>{{256, 16, 1}, {2560, 83, 2}, {4352, 41, 1}, {768, 130, 3}, {5376, 15, 2}, {512, 390, 1}};
  std::vector<int64_t> row_counts = probing ? std::vector<int64_t>{9, 16} : std::vector<int64_t>{1, 2, 5, 9, 16};
  std::vector<int64_t> multi_rows{1, 5, 16};
  if (const char* e = std::getenv("GS_EMU_ROWS"); e && *e) {
    multi_rows = {1, 3, 5, 16};
    row_counts.clear();
    for (const char* p = e; *p;) {
      char* end = nullptr;
      const long v = std::strtol(p, &end, 10);
      if (end == p) break;
      if (v >= 1 && v <= 16) row_counts.push_back(v);
      p = *end ? end + 1 : end;
    }
  }
  const bool all_rows = std::getenv("GS_EMU_ALL_ROWS") != nullptr && std::string(std::getenv("GS_EMU_ALL_ROWS")) == "1";
  for (GgmlType type : types) {
    if (!filter.empty() && std::string(ggml_type_name(type)).find(filter) == std::string::npos) continue;
    for (const Shape& sh : shapes) {
      for (int64_t n : row_counts) {
        ++ran;
        if (!run_case(type, sh.n_in, {sh.n_out}, n, sh.n_sm, lazy, all_rows)) ++failed;
      }
    }
  }
  // One launch for several weights: parts whose row groups are cut between CTAs, a part of
  // one partial row group, three parts, parts of fewer than 16 rows.
  for (GgmlType type : types) {
    if (probing || (!filter.empty() && std::string(ggml_type_name(type)).find(filter) == std::string::npos)) continue;
    for (int64_t n : multi_rows) {
      ran += 3;
      if (!run_case(type, 2560, {83, 41}, n, 2, lazy, all_rows)) ++failed;
      if (!run_case(type, 768, {130, 9, 64}, n, 3, lazy, all_rows)) ++failed;
      if (!run_case(type, 768, {17, 1, 15}, n, 2, lazy, all_rows)) ++failed;
    }
  }
  std::printf("matvec_emu (%s): %d of %d cases passed\n",
              lazy ? "lazy bulk copies" : mode == "random" ? "eager bulk copies, fibers in random order" : "eager bulk copies",
              ran - failed, ran);
  return failed ? 1 : 0;
}
