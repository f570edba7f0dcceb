// The /metrics page in the Prometheus text exposition format (version 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "core/host_memory.h"
#include "engine/engine.h"
#include "text/json_grammar_cache.h"

namespace gs::server {

// Counted by the HTTP layer.
struct HttpCounters {
  std::map<int, uint64_t> responses_by_status;  // HTTP status -> responses sent
  uint64_t streams_started = 0;
  uint64_t client_disconnects = 0;              // clients that left before the end
  uint64_t reasoning_tokens = 0;                // completion tokens spent inside reasoning
  uint64_t empty_reasoning_blocks = 0;          // <|channel>thought<channel|> with nothing inside
  uint64_t tool_calls = 0;
  // The cache of compiled JSON Schema grammars: tool arguments (decision 0066) and output
  // schemas (decision 0072); all zero without one.
  text::JsonGrammarCacheStats grammar_cache;
};

// The process's host memory (core/host_memory.h) and the idle heap trims (server/heap_trimmer.h).
struct HostGauges {
  HostMemory memory;
  uint64_t heap_trims = 0;
  // Responses sent (the trimmer's activity count) when the last trim ran; not exported, it
  // lets a caller see that a trim followed its requests.
  uint64_t heap_trimmed_at_responses = 0;
};

// Every family has HELP and TYPE lines; counters end in _total; names start "gemmaserve_".
std::string render_prometheus(const EngineInfo& info, const EngineMetrics& m, const HttpCounters& http,
                              const HostGauges& host, bool ready);

}  // namespace gs::server
