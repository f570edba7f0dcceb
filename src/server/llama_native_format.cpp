// Builders of llama-server's native JSON: /completion's answer and chunks, /props, /slots.
#include "server/llama_native_format.h"

#include <algorithm>
#include <cmath>

#include "server/openai_format.h"

namespace gs::server {

using nlohmann::json;

namespace {

std::string data_event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

}  // namespace

json llama_settings_json(const LlamaSettings& s) {
  const SamplingParams& p = s.sampling;
  // llama-server's output form (not its input form [[id, bias]]): {"bias", "token"} objects,
  // a banned token's -inf written as null.
  json bias = json::array();
  for (const auto& [id, b] : p.logit_bias) {
    bias.push_back(json{{"bias", std::isfinite(b) ? json(b) : json(nullptr)}, {"token", id}});
  }
  return json{{"n_predict", s.n_predict},
              {"max_tokens", s.n_predict},
              {"seed", p.has_seed ? json(p.seed) : json(-1)},
              {"temperature", p.temperature},
              {"top_k", p.top_k},
              {"top_p", p.top_p},
              {"min_p", p.min_p},
              {"repeat_penalty", p.repetition_penalty},
              {"repeat_last_n", 64},
              {"presence_penalty", p.presence_penalty},
              {"frequency_penalty", p.frequency_penalty},
              {"typical_p", 1.0},
              {"mirostat", 0},
              {"dynatemp_range", 0.0},
              {"xtc_probability", 0.0},
              {"dry_multiplier", 0.0},
              {"top_n_sigma", -1.0},
              {"min_keep", 0},
              {"stop", s.stop},
              {"ignore_eos", s.ignore_eos},
              {"stream", s.stream},
              {"n_probs", s.n_probs},
              {"cache_prompt", s.cache_prompt},
              {"logit_bias", std::move(bias)},
              {"grammar", ""},
              {"samplers", json::array({"penalties", "top_k", "top_p", "min_p", "temperature"})},
              {"speculative.n_max", s.draft_max},
              {"post_sampling_probs", false},
              {"lora", json::array()}};
}

const char* llama_stop_type(const GenerationResult& r) {
  if (!r.stop_sequence.empty()) return "word";
  if (r.finish_reason == "length") return "limit";
  return "eos";
}

json llama_timings_json(const Usage& u) {
  json t = timings_json(u);
  t["cache_n"] = u.cached_tokens;
  // llama-server always sends the four rates; where there is nothing to divide (a prompt all
  // from the cache, a one-token answer, whose token came from the prefill) they are 0 here.
  const int32_t prefilled = t["prompt_n"].get<int32_t>();
  t["prompt_per_token_ms"] = prefilled > 0 ? u.prefill_ms / prefilled : 0.0;
  t["predicted_per_token_ms"] = u.completion_tokens > 1 ? u.decode_ms / (u.completion_tokens - 1) : 0.0;
  if (!t.contains("prompt_per_second")) t["prompt_per_second"] = 0.0;
  if (!t.contains("predicted_per_second")) t["predicted_per_second"] = 0.0;
  return t;
}

json llama_probabilities_json(const text::Tokenizer& tok, const std::vector<ShownToken>& tokens) {
  // The chat logprobs entries are this shape but for the ids.
  json entries = std::move(chat_logprobs_json(tok, tokens)["content"]);
  for (size_t i = 0; i < tokens.size() && i < entries.size(); ++i) {
    const GeneratedToken& t = tokens[i].token;
    json& e = entries[i];
    e["id"] = t.id;
    json& top = e["top_logprobs"];
    for (size_t k = 0; k < t.top.size() && k < top.size(); ++k) top[k]["id"] = t.top[k].token;
  }
  return entries;
}

json llama_completion_json(const text::Tokenizer& tok, const LlamaCompletionEcho& echo, const GenerationResult& r,
                           const std::vector<ShownToken>& tokens) {
  json ids = json::array();
  if (echo.return_tokens) {
    for (const ShownToken& t : tokens) ids.push_back(t.token.id);
  }
  json j{{"index", 0},
         {"content", r.content},
         {"tokens", std::move(ids)},
         {"id_slot", -1},
         {"stop", true},
         {"model", echo.model},
         {"tokens_predicted", r.usage.completion_tokens},
         {"tokens_evaluated", echo.n_prompt_tokens},
         {"tokens_cached", r.usage.cached_tokens},
         {"generation_settings", echo.generation_settings},
         {"prompt", echo.prompt},
         {"has_new_line", r.content.find('\n') != std::string::npos},
         {"truncated", false},
         {"stop_type", llama_stop_type(r)},
         {"stopping_word", r.stop_sequence},
         {"timings", llama_timings_json(r.usage)}};
  if (echo.n_probs > 0) j["completion_probabilities"] = llama_probabilities_json(tok, tokens);
  return j;
}

void LlamaCompletionStream::poll(const PollResult& p) {
  pending_.insert(pending_.end(), p.tokens.begin(), p.tokens.end());
  n_predicted_ += p.n_tokens;
}

std::string LlamaCompletionStream::chunk(const std::string& content) {
  json ids = json::array();
  for (const ShownToken& t : pending_) ids.push_back(t.token.id);
  json j{{"index", 0},
         {"content", content},
         {"tokens", std::move(ids)},
         {"stop", false},
         {"id_slot", -1},
         {"tokens_predicted", n_predicted_},
         {"tokens_evaluated", echo_.n_prompt_tokens}};
  if (echo_.n_probs > 0) j["completion_probabilities"] = llama_probabilities_json(tok_, pending_);
  pending_.clear();
  return data_event(j);
}

std::string LlamaCompletionStream::delta(const OutputDelta& d) {
  // Raw completions give content deltas only.
  if (d.kind != OutputDelta::Kind::kContent || d.text.empty()) return {};
  return chunk(d.text);
}

std::string LlamaCompletionStream::finish(const GenerationResult& r) {
  // Tokens released after the last text (their text held, then dropped by a stop string's cut
  // or empty) go out in a chunk of their own, so that the chunks' tokens are all of them.
  std::string out = pending_.empty() ? std::string() : chunk("");
  GenerationResult last = r;
  last.content.clear();  // the chunks carried it
  LlamaCompletionEcho echo = echo_;
  echo.return_tokens = false;
  echo.n_probs = 0;
  json j = llama_completion_json(tok_, echo, last, {});
  // has_new_line is the whole output's.
  j["has_new_line"] = r.content.find('\n') != std::string::npos;
  return out + data_event(j);
}

std::string LlamaCompletionStream::fail(const ApiError& e) { return data_event(e.to_json()); }

json llama_props_json(const LlamaProps& p) {
  return json{{"default_generation_settings",
               {{"n_ctx", p.n_ctx},
                {"speculative", p.has_drafter},
                {"is_processing", false},
                {"params", llama_settings_json(p.defaults)}}},
              {"total_slots", p.n_slots},
              {"model_path", p.model_path},
              {"chat_template", p.chat_template},
              {"bos_token", p.bos_token},
              {"eos_token", p.eos_token},
              {"modalities", {{"vision", false}, {"audio", false}}},
              {"build_info", p.build_info}};
}

json llama_slots_json(const std::vector<SlotState>& slots, int32_t n_ctx, bool has_drafter) {
  json out = json::array();
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotState& s = slots[i];
    out.push_back({{"id", static_cast<int>(i)},
                   {"id_task", -1},
                   {"n_ctx", n_ctx},
                   {"speculative", has_drafter},
                   {"is_processing", s.processing},
                   // an array of one object, as llama-server has it (clients read next_token[0])
                   {"next_token", json::array({{{"has_next_token", s.processing}, {"n_decoded", s.n_decoded}}})}});
  }
  return out;
}

}  // namespace gs::server
