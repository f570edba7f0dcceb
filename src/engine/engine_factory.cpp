// Files -> tokenizer, runtime runner and scheduler.
#include "engine/engine_factory.h"

#include <filesystem>

#include "engine/runtime_slot_runner.h"
#include "engine/scheduler.h"
#include "gguf/gguf_reader.h"
#include "model/gguf_names.h"

namespace gs {

namespace {

RecommendedSampling read_recommended_sampling(const gguf::GgufFile& file) {
  RecommendedSampling s;
  if (auto t = file.get_f32(names::kSamplingTemp); t.ok()) {
    s.has_temperature = true;
    s.temperature = *t;
  }
  if (auto p = file.get_f32(names::kSamplingTopP); p.ok()) {
    s.has_top_p = true;
    s.top_p = *p;
  }
  if (auto k = file.get_i32(names::kSamplingTopK); k.ok()) {
    s.has_top_k = true;
    s.top_k = *k;
  }
  return s;
}

}  // namespace

Result<LoadedEngine> create_engine(const EngineOptions& options) {
  if (options.n_slots < 1) return make_status(StatusCode::kInvalidArgument, "--parallel must be >= 1, got {}", options.n_slots);
  if (options.queue_size < 0) return make_status(StatusCode::kInvalidArgument, "--queue-size must be >= 0");
  if (options.n_ctx < 0) return make_status(StatusCode::kInvalidArgument, "--ctx-size must be >= 0");
  GS_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> file, gguf::GgufFile::open(options.model_path));
  LoadedEngine out;
  GS_ASSIGN_OR_RETURN(out.tokenizer, text::Tokenizer::from_gguf(*file));
  if (auto name = file->get_string(names::kName); name.ok() && !name->empty()) {
    out.model_name = std::string(*name);
  } else {
    out.model_name = std::filesystem::path(options.model_path).stem().string();
  }
  out.sampling = read_recommended_sampling(*file);
  GS_ASSIGN_OR_RETURN(std::unique_ptr<SlotRunner> runner, create_runtime_slot_runner(options, file, *out.tokenizer));
  SchedulerOptions sched;
  sched.queue_size = options.queue_size;
  out.engine = std::make_shared<Scheduler>(std::move(runner), sched);
  return out;
}

}  // namespace gs
