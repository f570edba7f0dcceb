// The /metrics text passes `promtool check metrics` (Debian's prometheus package).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "server/prometheus.h"

namespace gs::server {
namespace {

std::string run_promtool(const std::string& text, int* status) {
  const std::string path = ::testing::TempDir() + "/gemmaserve-metrics.txt";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  const std::string cmd = "promtool check metrics < " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *status = -1;
    return "";
  }
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  *status = pclose(p);
  return out;
}

TEST(Prometheus, PromtoolAcceptsTheMetricsPage) {
  ASSERT_EQ(std::system("command -v promtool > /dev/null"), 0)
      << "promtool is missing: scripts/setup.sh installs Debian's prometheus package";
  EngineInfo info;
  info.n_ctx = 4096;
  EngineMetrics m;
  m.requests_total = 10;
  m.prefill_tokens_total = 1000;
  m.prefill_seconds_total = 0.5;
  m.generated_tokens_total = 300;
  m.decode_seconds_total = 3;
  m.drafted_by_position = {10, 8, 6, 4};
  m.accepted_by_position = {7, 4, 2, 1};
  m.drafted_total = 28;
  m.accepted_total = 14;
  m.kv_cells_total = 16384;
  m.kv_cells_used = 100;
  HttpCounters http;
  http.responses_by_status = {{200, 9}, {400, 2}, {401, 1}};
  HostGauges host;
  host.memory.resident_bytes = 200u << 20;
  host.memory.resident_anon_bytes = 150u << 20;
  host.memory.threads = 90;
  host.memory.have_malloc_counters = true;
  host.memory.malloc_in_use_bytes = 50u << 20;
  host.heap_trims = 3;
  info.kv_bytes = 16u << 20;
  const std::string text = render_prometheus(info, m, http, host, true);
  int status = 0;
  const std::string out = run_promtool(text, &status);
  EXPECT_EQ(status, 0) << out << "\n" << text;
  EXPECT_NE(text.find("gemmaserve_draft_position_accepted_tokens_total{position=\"2\"} 4"), std::string::npos);
  EXPECT_NE(text.find("gemmaserve_prefill_tokens_per_second 2000"), std::string::npos);
  EXPECT_NE(text.find("gemmaserve_http_responses_total{code=\"401\"} 1"), std::string::npos);
  EXPECT_NE(text.find("gemmaserve_kv_cache_bytes 16777216"), std::string::npos);
  EXPECT_NE(text.find("gemmaserve_process_resident_anon_bytes 157286400"), std::string::npos);
  EXPECT_NE(text.find("gemmaserve_malloc_in_use_bytes 52428800"), std::string::npos);
  EXPECT_NE(text.find("gemmaserve_heap_trims_total 3"), std::string::npos);
  // An empty engine (still loading) renders too.
  const std::string empty = render_prometheus(EngineInfo{}, EngineMetrics{}, HttpCounters{}, HostGauges{}, false);
  run_promtool(empty, &status);
  EXPECT_EQ(status, 0) << empty;
}

}  // namespace
}  // namespace gs::server
