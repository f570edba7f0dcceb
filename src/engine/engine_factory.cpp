// Files -> tokenizer, runtime runner and scheduler.
#include "engine/engine_factory.h"

#include <filesystem>
#include <optional>
#include <vector>

#include "core/log.h"
#include "engine/runtime_slot_runner.h"
#include "engine/scheduler.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_split.h"
#include "gguf/gguf_summary.h"
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
  // A key of the wrong type: the reader's message names the file and the key already.
  const auto skip_unreadable = [&](const Status& st) {
    GS_LOG_WARN("{}; the recommended value is not used", st.message());
  };
  // A float key within [lo, hi] into *value (and *has).
  const auto read_f32_in = [&](std::string_view key, float lo, float hi, bool* has, float* value) {
    if (!file.has(key)) return;
    auto v = file.get_f32(key);
    if (!v.ok()) {
      skip_unreadable(v.status());
    } else if (!(*v >= lo && *v <= hi)) {
      skip(key, fmt::format("= {} is outside [{}, {}]", *v, lo, hi));
    } else {
      *has = true;
      *value = *v;
    }
  };
  read_f32_in(names::kSamplingTemp, 0.0f, 2.0f, &s.has_temperature, &s.temperature);
  read_f32_in(names::kSamplingTopP, 0.0f, 1.0f, &s.has_top_p, &s.top_p);
  if (file.has(names::kSamplingTopK)) {
    auto k = file.get_i32(names::kSamplingTopK);
    if (!k.ok()) {
      skip_unreadable(k.status());
    } else if (*k < 0) {
      skip(names::kSamplingTopK, fmt::format("= {} is negative", *k));
    } else {
      s.has_top_k = true;
      s.top_k = *k;
    }
  }
  return s;
}

namespace {

// Every chat prompt is written with Gemma 4's markers ("<|turn>", "<turn|>", "<|channel>", ...),
// each one token of the vocabulary. A vocabulary without one (or where the encoder cannot write
// it as that one token, a marker typed BYTE) has the marker spelled out of ordinary pieces in
// every chat prompt, which the model never saw, and without "<turn|>" no turn ends. The file
// still serves raw completions, tokenization and bench (the golden tiny model and the reference
// synth_gguf.py vocabulary have no markers), so this is a warning naming the field and the
// first marker missing, once at load (decision 0045).
void warn_chat_markers(const text::Tokenizer& tok, const std::string& path) {
  for (const std::string_view m : text::markup::kChatMarkers) {
    const std::optional<int32_t> id = tok.find_token(m);
    if (!id) {
      GS_LOG_WARN("{}: metadata '{}' has no token '{}', one of Gemma 4's chat markers: chat prompts will spell it "
                  "out of ordinary pieces, which the model was not trained on",
                  path, names::kTokTokens, m);
      return;
    }
    const std::vector<int32_t> ids = tok.encode(m, /*add_special=*/false, /*parse_special=*/true);
    if (ids.size() != 1 || ids[0] != *id) {
      GS_LOG_WARN("{}: metadata '{}'[{}] = '{}', one of Gemma 4's chat markers, has type {} in '{}', which the "
                  "tokenizer never writes as that one token (expected CONTROL or USER_DEFINED): chat prompts will "
                  "spell it out of ordinary pieces",
                  path, names::kTokTokens, *id, m, static_cast<int>(tok.token_type(*id)), names::kTokTypes);
      return;
    }
  }
}

}  // namespace

Result<LoadedEngine> create_engine(const EngineOptions& options) {
  if (options.n_slots < 1) return make_status(StatusCode::kInvalidArgument, "--parallel must be >= 1, got {}", options.n_slots);
  if (options.queue_size < 0) return make_status(StatusCode::kInvalidArgument, "--queue-size must be >= 0");
  if (options.n_ctx < 0) return make_status(StatusCode::kInvalidArgument, "--ctx-size must be >= 0");
  GS_ASSIGN_OR_RETURN(std::shared_ptr<gguf::GgufFile> file, gguf::GgufFile::open_model(options.model_path));
  LoadedEngine out;
  GS_ASSIGN_OR_RETURN(out.tokenizer, text::Tokenizer::from_gguf(*file));
  warn_chat_markers(*out.tokenizer, file->path());
  if (const int lost = out.tokenizer->bytes_without_fallback(); lost > 0) {
    GS_LOG_WARN("{}: the vocabulary has no <0xHH> token for {} of the 256 byte values and no unknown token: "
                "characters that its merges cannot spell are dropped from prompts",
                file->path(), lost);
  }
  std::string name;
  // A key of another type than string is warned about (the reader's message names the file, the
  // key and the type found), not passed over in silence (decision 0056).
  auto n = file->has(names::kName) ? file->get_string(names::kName) : Result<std::string_view>(std::string_view());
  if (!n.ok()) GS_LOG_WARN("{}; the model is named by its file", n.status().message());
  if (n.ok() && !n->empty()) {
    name = std::string(*n);
  } else {
    // A split model is named by its prefix, not by the shard given (m-00001-of-00002.gguf).
    const auto split = gguf::parse_split_name(options.model_path);
    name = std::filesystem::path(split ? split->prefix : options.model_path).stem().string();
  }
  // As clients and the log see it (the model id, the serve banner): control bytes and invalid
  // UTF-8 escaped, cut (decision 0048).
  out.model_name = gguf::escape_text(name, kMaxModelNameBytes);
  out.sampling = read_recommended_sampling(*file);
  if (file->has(names::kChatTemplate)) {
    if (auto src = file->get_string(names::kChatTemplate); src.ok()) {
      out.chat_template = text::detect_chat_template(*src);
      out.chat_template_source = *src;
      if (!out.chat_template.recognised) {
        GS_LOG_WARN("{}: '{}' is not a Gemma 4 template this server reproduces: chat prompts use the Gemma 4 "
                    "31B template's format",
                    file->path(), names::kChatTemplate);
      }
    } else {
      GS_LOG_WARN("{}; chat prompts use the Gemma 4 31B template's format", src.status().message());
    }
  }
  GS_ASSIGN_OR_RETURN(std::unique_ptr<SlotRunner> runner, create_runtime_slot_runner(options, file, *out.tokenizer));
  SchedulerOptions sched;
  sched.queue_size = options.queue_size;
  out.engine = std::make_shared<Scheduler>(std::move(runner), sched);
  return out;
}

}  // namespace gs
