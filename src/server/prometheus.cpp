// Renders engine and HTTP counters as Prometheus text.
#include "server/prometheus.h"

#include <fmt/format.h>

#include <string>

namespace gs::server {

namespace {

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += fmt::format("# HELP gemmaserve_{} {}\n# TYPE gemmaserve_{} {}\n", name, help, name, type);
  }
  template <typename T>
  void sample(const char* name, T value, const std::string& labels = "") {
    out_ += fmt::format("gemmaserve_{}{} {}\n", name, labels.empty() ? "" : "{" + labels + "}", value);
  }
  void sample_double(const char* name, double value) { out_ += fmt::format("gemmaserve_{} {:.6g}\n", name, value); }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace

std::string render_prometheus(const EngineInfo& info, const EngineMetrics& m, const HttpCounters& http,
                              const HostGauges& host, bool ready) {
  Writer w;
  w.family("ready", "gauge", "1 when the model is loaded and requests are served");
  w.sample("ready", ready ? 1 : 0);

  w.family("requests_total", "counter", "Generation requests accepted by the engine");
  w.sample("requests_total", m.requests_total);
  w.family("requests_cancelled_total", "counter", "Requests cancelled (client gone, stop string, shutdown)");
  w.sample("requests_cancelled_total", m.requests_cancelled_total);
  w.family("requests_rejected_total", "counter", "Requests refused at admission (queue full, prompt too long, ...)");
  w.sample("requests_rejected_total", m.requests_rejected_total);
  w.family("requests_failed_total", "counter", "Requests ended by an engine error");
  w.sample("requests_failed_total", m.requests_failed_total);

  w.family("prompt_tokens_total", "counter", "Prompt tokens of accepted requests");
  w.sample("prompt_tokens_total", m.prompt_tokens_total);
  w.family("generated_tokens_total", "counter", "Tokens generated");
  w.sample("generated_tokens_total", m.generated_tokens_total);
  w.family("prefill_tokens_total", "counter", "Prompt tokens run through the model");
  w.sample("prefill_tokens_total", m.prefill_tokens_total);
  w.family("decode_tokens_total", "counter", "Decode and verify rows run through the model");
  w.sample("decode_tokens_total", m.decode_tokens_total);
  w.family("prefill_seconds_total", "counter", "Model time spent on prompt rows");
  w.sample_double("prefill_seconds_total", m.prefill_seconds_total);
  w.family("decode_seconds_total", "counter", "Model time spent on decode and verify rows");
  w.sample_double("decode_seconds_total", m.decode_seconds_total);
  w.family("prefill_tokens_per_second", "gauge", "Prompt rows per second of model time since start");
  w.sample_double("prefill_tokens_per_second",
                  m.prefill_seconds_total > 0 ? static_cast<double>(m.prefill_tokens_total) / m.prefill_seconds_total : 0.0);
  w.family("decode_tokens_per_second", "gauge", "Generated tokens per second of decode model time since start");
  w.sample_double("decode_tokens_per_second",
                  m.decode_seconds_total > 0 ? static_cast<double>(m.generated_tokens_total) / m.decode_seconds_total : 0.0);

  w.family("queue_length", "gauge", "Requests waiting for a slot");
  w.sample("queue_length", m.queue_length);
  w.family("busy_slots", "gauge", "Slots running a request");
  w.sample("busy_slots", m.busy_slots);
  w.family("slots", "gauge", "Slots (sequences run at once)");
  w.sample("slots", m.n_slots);
  w.family("kv_cache_used_cells", "gauge", "KV cache positions in use");
  w.sample("kv_cache_used_cells", m.kv_cells_used);
  w.family("kv_cache_cells", "gauge", "KV cache positions available");
  w.sample("kv_cache_cells", m.kv_cells_total);
  w.family("kv_cache_usage_ratio", "gauge", "Share of the KV cache in use (0..1)");
  w.sample_double("kv_cache_usage_ratio",
                  m.kv_cells_total > 0 ? static_cast<double>(m.kv_cells_used) / static_cast<double>(m.kv_cells_total) : 0.0);
  w.family("context_tokens", "gauge", "Context size per sequence");
  w.sample("context_tokens", info.n_ctx);
  // The only prompt cache is the slots' KV cache (prefix reuse), allocated once at start: no
  // host-side cache grows with requests (decision 0036).
  w.family("kv_cache_bytes", "gauge", "KV cache memory, fixed at start (holds the slots' reusable prompt prefixes)");
  w.sample("kv_cache_bytes", info.kv_bytes);
  w.family("weight_bytes", "gauge", "Model and drafter weights in backend memory");
  w.sample("weight_bytes", info.weight_bytes);

  w.family("process_resident_memory_bytes", "gauge", "Resident memory of the process (VmRSS)");
  w.sample("process_resident_memory_bytes", host.memory.resident_bytes);
  w.family("process_resident_anon_bytes", "gauge", "Resident anonymous memory: heap, stacks (RssAnon)");
  w.sample("process_resident_anon_bytes", host.memory.resident_anon_bytes);
  w.family("process_swap_bytes", "gauge", "Anonymous memory swapped out (VmSwap)");
  w.sample("process_swap_bytes", host.memory.swap_bytes);
  w.family("process_threads", "gauge", "Threads of the process");
  w.sample("process_threads", host.memory.threads);
  if (host.memory.have_malloc_counters) {
    w.family("malloc_in_use_bytes", "gauge", "Heap memory allocated and not freed (glibc mallinfo2)");
    w.sample("malloc_in_use_bytes", host.memory.malloc_in_use_bytes);
    w.family("malloc_free_bytes", "gauge", "Heap memory freed but held by malloc (glibc mallinfo2)");
    w.sample("malloc_free_bytes", host.memory.malloc_free_bytes);
  }
  w.family("heap_trims_total", "counter", "Times free heap memory was given back to the system when idle");
  w.sample("heap_trims_total", host.heap_trims);

  w.family("draft_tokens_total", "counter", "Tokens proposed by the MTP drafter");
  w.sample("draft_tokens_total", m.drafted_total);
  w.family("draft_accepted_tokens_total", "counter", "Drafted tokens accepted by the target");
  w.sample("draft_accepted_tokens_total", m.accepted_total);
  w.family("draft_acceptance_ratio", "gauge", "Accepted over drafted tokens since start");
  w.sample_double("draft_acceptance_ratio",
                  m.drafted_total > 0 ? static_cast<double>(m.accepted_total) / static_cast<double>(m.drafted_total) : 0.0);
  w.family("draft_position_tokens_total", "counter", "Drafted tokens by position in the round (1 = first draft)");
  for (size_t i = 0; i < m.drafted_by_position.size(); ++i) {
    w.sample("draft_position_tokens_total", m.drafted_by_position[i], fmt::format("position=\"{}\"", i + 1));
  }
  w.family("draft_position_accepted_tokens_total", "counter", "Accepted drafted tokens by position in the round");
  for (size_t i = 0; i < m.accepted_by_position.size(); ++i) {
    w.sample("draft_position_accepted_tokens_total", m.accepted_by_position[i], fmt::format("position=\"{}\"", i + 1));
  }

  w.family("http_responses_total", "counter", "HTTP responses by status code");
  for (const auto& [status, n] : http.responses_by_status) {
    w.sample("http_responses_total", n, fmt::format("code=\"{}\"", status));
  }
  w.family("streams_total", "counter", "Streaming (SSE) responses started");
  w.sample("streams_total", http.streams_started);
  w.family("client_disconnects_total", "counter", "Clients that left before their response ended");
  w.sample("client_disconnects_total", http.client_disconnects);
  w.family("reasoning_tokens_total", "counter", "Generated tokens spent inside reasoning blocks");
  w.sample("reasoning_tokens_total", http.reasoning_tokens);
  w.family("empty_reasoning_blocks_total", "counter", "Reasoning blocks with nothing inside (a looping model shows here)");
  w.sample("empty_reasoning_blocks_total", http.empty_reasoning_blocks);
  w.family("tool_calls_total", "counter", "Tool calls returned");
  w.sample("tool_calls_total", http.tool_calls);
  // The cache of compiled JSON Schema grammars (decision 0066; output schemas too since decision
  // 0072): under its general names, and under the names it had when it held only tool argument
  // grammars (the same numbers, for the dashboards that read them).
  const text::JsonGrammarCacheStats& g = http.grammar_cache;
  struct CacheFamily {
    const char* suffix;
    const char* type;
    const char* help;
    int64_t value;
  };
  const CacheFamily cache_families[] = {
      {"hits_total", "counter", "JSON Schema grammars (tool arguments, output schemas) taken from the cache of earlier "
                                "requests' compiles", static_cast<int64_t>(g.hits)},
      {"misses_total", "counter", "JSON Schema grammars compiled (not cached, or past the request's pattern budget)",
       static_cast<int64_t>(g.misses)},
      {"evictions_total", "counter", "Compiled JSON Schema grammars dropped from the cache for room",
       static_cast<int64_t>(g.evictions)},
      {"entries", "gauge", "Compiled JSON Schema grammars (and schemas refused) in the cache", g.entries},
      {"bytes", "gauge", "Estimated memory of the compiled JSON Schema grammars in the cache", g.bytes},
  };
  for (const CacheFamily& f : cache_families) {
    const std::string name = fmt::format("grammar_cache_{}", f.suffix);
    w.family(name.c_str(), f.type, f.help);
    w.sample(name.c_str(), f.value);
  }
  for (const CacheFamily& f : cache_families) {
    const std::string name = fmt::format("tool_grammar_cache_{}", f.suffix);
    const std::string help = fmt::format("The old name of gemmaserve_grammar_cache_{} (output schemas included)", f.suffix);
    w.family(name.c_str(), f.type, help.c_str());
    w.sample(name.c_str(), f.value);
  }
  return w.take();
}

}  // namespace gs::server
