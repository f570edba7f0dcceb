// Builds a ready Engine from files: the target GGUF (and optionally its MTP drafter) on a
// backend, the tokenizer from the target's metadata, and the scheduler over them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/ggml_type.h"
#include "backend/registry/registry.h"
#include "core/status.h"
#include "engine/engine.h"
#include "gguf/gguf_reader.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace gs {

struct EngineOptions {
  std::string model_path;
  std::string drafter_path;     // "": no drafter
  int32_t draft_max = 4;        // drafts per round with a drafter
  int32_t n_ctx = 0;            // positions per sequence; 0: min(the model's, 8192)
  int32_t n_slots = 4;          // sequences at once
  int32_t n_threads = 0;        // CPU threads; 0: all cores
  int32_t max_batch_tokens = 512;
  int32_t queue_size = 64;
  DeviceChoice device = DeviceChoice::kAuto;
  GgmlType kv_type = GgmlType::F16;    // KV cache storage: F16, F32 or Q8_0
  float draft_p_min = 0.0f;            // stop a draft round below this drafter probability
  bool draft_window_plus_one = false;
  bool draft_adaptive = true;          // per-round draft count from measured costs (runtime/draft_policy.h)  // drafter sees W+1 sliding keys (transformers) instead of W
  std::string dump_dir;                // "": off; else every named intermediate of every pass (slow)
};

// Sampling the model's file recommends (general.sampling.*), when it says so.
struct RecommendedSampling {
  bool has_temperature = false;
  float temperature = 1.0f;
  bool has_top_p = false;
  float top_p = 1.0f;
  bool has_top_k = false;
  int32_t top_k = 0;
};

// Reads general.sampling.temp / top_p / top_k (spec §1.3: informational, f32 / i32). A value
// outside the API's range (temperature [0, 2], top_p [0, 1], top_k >= 0), NaN or of the
// wrong type is not taken (a warning names the key).
RecommendedSampling read_recommended_sampling(const gguf::GgufFile& file);

// Most bytes of general.name (or the file's stem) that the model id keeps: a longer one is cut.
inline constexpr size_t kMaxModelNameBytes = 128;

struct LoadedEngine {
  std::shared_ptr<Engine> engine;
  std::shared_ptr<const text::Tokenizer> tokenizer;
  std::string model_name;       // general.name, else the file's stem; escaped and cut (kMaxModelNameBytes)
  RecommendedSampling sampling;
  // The Gemma 4 template its tokenizer.chat_template is (text::detect_chat_template): chat
  // prompts are rendered in that variant. kGemma4, not recognised, without one.
  text::ChatTemplateMatch chat_template;
  std::string chat_template_source;  // the file's tokenizer.chat_template, "" when it has none
};

// Errors: those of loading the files (kNotFound, kDataLoss, kInvalidArgument naming the
// key or tensor), a drafter that does not fit the target (kInvalidArgument naming both
// files). DeviceChoice::kCuda where this build or machine has no CUDA device logs a warning
// and runs on the CPU.
Result<LoadedEngine> create_engine(const EngineOptions& options);

}  // namespace gs
