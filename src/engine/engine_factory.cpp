// Files -> tokenizer, runtime runner and scheduler.
#include "engine/engine_factory.h"

#include <filesystem>

#include "core/log.h"
#include "engine/runtime_slot_runner.h"
#include "engine/scheduler.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_split.h"
#include "model/gguf_names.h"

namespace gs {

RecommendedSampling read_recommended_sampling(const gguf::GgufFile& file) {
  // Each value becomes the default of requests that leave it out, so only one a request
  // could give (the API's ranges) is taken; another, or a key of the wrong type, is left
  // out with a warning naming the key.
  RecommendedSampling s;
  const auto skip = [&](std::string_view key, const std::string& why) {
    GS_LOG_WARN("{}: metadata '{}' {}; the recommended value is not used", file.path(), key, why);
  };
  if (file.has(names::kSamplingTemp)) {
    auto t = file.get_f32(names::kSamplingTemp);
    if (!t.ok()) {
      skip(names::kSamplingTemp, t.status().message());
    } else if (!(*t >= 0.0f && *t <= 2.0f)) {
      skip(names::kSamplingTemp, fmt::format("= {} is outside [0, 2]", *t));
    } else {
      s.has_temperature = true;
      s.temperature = *t;
    }
  }
  if (file.has(names::kSamplingTopP)) {
    auto p = file.get_f32(names::kSamplingTopP);
    if (!p.ok()) {
      skip(names::kSamplingTopP, p.status().message());
    } else if (!(*p >= 0.0f && *p <= 1.0f)) {
      skip(names::kSamplingTopP, fmt::format("= {} is outside [0, 1]", *p));
    } else {
      s.has_top_p = true;
      s.top_p = *p;
    }
  }
  if (file.has(names::kSamplingTopK)) {
    auto k = file.get_i32(names::kSamplingTopK);
    if (!k.ok()) {
      skip(names::kSamplingTopK, k.status().message());
    } else if (*k < 0) {
      skip(names::kSamplingTopK, fmt::format("= {} is negative", *k));
    } else {
      s.has_top_k = true;
      s.top_k = *k;
    }
  }
  return s;
}

Result<LoadedEngine> create_engine(const EngineOptions& options) {
  if (options.n_slots < 1) return make_status(StatusCode::kInvalidArgument, "--parallel must be >= 1, got {}", options.n_slots);
  if (options.queue_size < 0) return make_status(StatusCode::kInvalidArgument, "--queue-size must be >= 0");
  if (options.n_ctx < 0) return make_status(StatusCode::kInvalidArgument, "--ctx-size must be >= 0");
  GS_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> file, gguf::GgufFile::open_model(options.model_path));
  LoadedEngine out;
  GS_ASSIGN_OR_RETURN(out.tokenizer, text::Tokenizer::from_gguf(*file));
  if (auto name = file->get_string(names::kName); name.ok() && !name->empty()) {
    out.model_name = std::string(*name);
  } else {
    // A split model is named by its prefix, not by the shard given (m-00001-of-00002.gguf).
    const auto split = gguf::parse_split_name(options.model_path);
    out.model_name = std::filesystem::path(split ? split->prefix : options.model_path).stem().string();
  }
  out.sampling = read_recommended_sampling(*file);
  GS_ASSIGN_OR_RETURN(std::unique_ptr<SlotRunner> runner, create_runtime_slot_runner(options, file, *out.tokenizer));
  SchedulerOptions sched;
  sched.queue_size = options.queue_size;
  out.engine = std::make_shared<Scheduler>(std::move(runner), sched);
  return out;
}

}  // namespace gs
