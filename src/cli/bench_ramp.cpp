// The matvec ramp sweep: see bench_ramp.h.
#include "bench_ramp.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/ggml_type.h"

namespace gs::cli {
namespace {

struct Point {
  double bytes, seconds;
};

// Least squares t = a + bytes * s over the points; returns {a, 1 / s} (seconds, bytes/s).
std::pair<double, double> fit_line(const std::vector<Point>& p) {
  double mx = 0, my = 0;
  for (const Point& q : p) {
    mx += q.bytes;
    my += q.seconds;
  }
  mx /= static_cast<double>(p.size());
  my /= static_cast<double>(p.size());
  double sxy = 0, sxx = 0;
  for (const Point& q : p) {
    sxy += (q.bytes - mx) * (q.seconds - my);
    sxx += (q.bytes - mx) * (q.bytes - mx);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  return {my - slope * mx, slope > 0 ? 1.0 / slope : 0};
}

}  // namespace

Status bench_matvec_ramp(Backend& b, double copy_bw, bool quick, std::vector<BenchRow>& rows) {
  const GgmlType type = GgmlType::Q4_K;
  const int64_t n_in = quick ? 512 : 5376;
  // The 31B step's Q4_K matvecs span ~10-130 MB (k/v to gate+up in one launch).
  const std::vector<int64_t> n_outs = quick ? std::vector<int64_t>{256, 512, 1024}
                                            : std::vector<int64_t>{2048, 4096, 6144, 8192, 12288, 16384,
                                                                   21504, 32768, 43008};
  // Each size cycles through copies worth ~4x the 50 MB L2, so no pass reads from L2.
  const size_t pass_bytes = quick ? (1u << 20) : (200u << 20);
  std::vector<std::vector<uint8_t>> keep;  // the CPU backend reads host weights in place
  std::vector<Point> chain_pts, dep_pts;
  uint64_t key = 5000;
  GS_ASSIGN_OR_RETURN(DeviceBuffer xb, DeviceBuffer::make(b, static_cast<size_t>(n_in) * 4));
  const std::vector<float> xh = random_floats(static_cast<size_t>(n_in), 1.0f, 3);
  GS_RETURN_IF_ERROR(b.upload(xb.data(), xh.data(), xh.size() * 4));
  const Mat x = Mat::of(xb.as<float>(), 1, n_in);
  for (int64_t n_out : n_outs) {
    const size_t wbytes = ggml_row_size(type, n_in).value() * static_cast<size_t>(n_out);
    const int copies = static_cast<int>(std::clamp<size_t>((pass_bytes + wbytes - 1) / wbytes, 2, 256));
    std::vector<Weight> ws;
    for (int i = 0; i < copies; ++i) {
      keep.push_back(random_weight_bytes(type, n_in, n_out, 300 + static_cast<uint64_t>(i)));
      GS_ASSIGN_OR_RETURN(Weight w, b.upload_weight(keep.back().data(), type, n_in, n_out));
      ws.push_back(w);
    }
    GS_ASSIGN_OR_RETURN(DeviceBuffer yb, DeviceBuffer::make(b, static_cast<size_t>(n_out) * 4));
    const Mat y = Mat::of(yb.as<float>(), 1, n_out);
    for (bool dependent : {false, true}) {
      const double t = time_step(b, key++, quick ? 1 : 20, [&] {
                         for (const Weight& w : ws) {
                           b.matmul(w, x, y);
                           if (dependent) b.scale(x, 1.0f);  // x * 1 = x: the data stay the same
                         }
                       }) / copies;
      GS_RETURN_IF_ERROR(b.synchronize());
      (dependent ? dep_pts : chain_pts).push_back({static_cast<double>(wbytes), t});
      rows.push_back(BenchRow{"ramp", std::string(ggml_type_name(type)) + (dependent ? " dependent" : " chain"),
                              std::to_string(n_in) + "x" + std::to_string(n_out), t, wbytes / t, 0,
                              100.0 * (wbytes / t) / copy_bw, "copy bandwidth"});
    }
  }
  for (bool dependent : {false, true}) {
    const auto [fixed, rate] = fit_line(dependent ? dep_pts : chain_pts);
    rows.push_back(BenchRow{"ramp", std::string(ggml_type_name(type)) + (dependent ? " dependent" : " chain") + " fit",
                            std::to_string(n_outs.size()) + " sizes", fixed, rate, 0, 100.0 * rate / copy_bw,
                            "time: fixed a matvec; rate: marginal"});
  }
  return {};
}

}  // namespace gs::cli
