// llama-server's native response shapes (decision 0061): POST /completion's answer and its
// server-sent chunks, GET /props and GET /slots, built from a Generation's output and the
// server's settings.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "text/tokenizer.h"

namespace gs::server {

// Generation settings under llama-server's names: a /completion answer's
// `generation_settings`, and the `params` of /props' default_generation_settings.
struct LlamaSettings {
  SamplingParams sampling;
  int32_t n_predict = 0;  // the completion-token limit that applies (never -1 here: every request has one)
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool stream = false;
  int32_t n_probs = 0;
  bool cache_prompt = true;
  int32_t draft_max = 0;  // drafts a round (speculative.n_max); 0: no drafting
};

// {n_predict, max_tokens, seed (-1: none given), temperature, top_k, top_p, min_p, the
// penalties (repeat_penalty, repeat_last_n 64, presence_penalty, frequency_penalty), the
// samplers this server lacks at their off values (typical_p 1, mirostat 0, dynatemp_range 0,
// xtc_probability 0, dry_multiplier 0, top_n_sigma -1, min_keep 0), stop, ignore_eos, stream,
// n_probs, cache_prompt, logit_bias as [{"bias", "token"}] (bias null: never sampled), samplers (this
// server's chain, in order), speculative.n_max, post_sampling_probs false, lora []}.
nlohmann::json llama_settings_json(const LlamaSettings& s);

// Why a /completion ended, as llama-server's stop_type: "word" (a stop string; `stopping_word`
// is it), "limit" (n_predict or the context), "eos" (an end-of-generation token).
const char* llama_stop_type(const GenerationResult& r);

// llama-server's timings: timings_json's fields (prompt_n: prompt tokens computed, the cached
// prefix left out; predicted_n; milliseconds and rates) plus cache_n (the cached prefix),
// prompt_per_token_ms and predicted_per_token_ms.
nlohmann::json llama_timings_json(const Usage& u);

// `completion_probabilities` entries of `tokens`: {id, token, logprob, bytes, top_logprobs:
// [{id, token, logprob, bytes}]}, the alternatives most likely first; a token a stop string
// cut (ShownToken::shown_bytes) spells its kept bytes.
nlohmann::json llama_probabilities_json(const text::Tokenizer& tok, const std::vector<ShownToken>& tokens);

// What a /completion answer repeats of its request.
struct LlamaCompletionEcho {
  std::string model;
  std::string prompt;       // the prompt as read (its tokens decoded, BOS included)
  int32_t n_prompt_tokens = 0;
  int32_t n_probs = 0;      // 0: no completion_probabilities
  bool return_tokens = false;
  nlohmann::json generation_settings;  // llama_settings_json
};

// The whole answer: {index 0, content, tokens (the generated ids with return_tokens, else []),
// id_slot -1, stop true, model, tokens_predicted, tokens_evaluated, tokens_cached,
// generation_settings, prompt, has_new_line, truncated false (a prompt is never cut here),
// stop_type, stopping_word, timings, completion_probabilities (with n_probs)}. `tokens` are the
// generated tokens the output spells (PollResult::tokens of every poll).
nlohmann::json llama_completion_json(const text::Tokenizer& tok, const LlamaCompletionEcho& echo,
                                     const GenerationResult& r, const std::vector<ShownToken>& tokens);

// A stream's events, llama-server's way: a chunk {index, content, tokens, stop false, id_slot,
// tokens_predicted, tokens_evaluated[, completion_probabilities]} for each piece of text, then
// the whole answer (llama_completion_json) with content "" and tokens [] and without
// probabilities (the chunks carried them) as the last chunk. No [DONE] line (llama-server sends
// it on its OpenAI routes only). Each method returns the SSE text to write ("" when nothing is due).
class LlamaCompletionStream {
 public:
  LlamaCompletionStream(const text::Tokenizer& tok, LlamaCompletionEcho echo) : tok_(tok), echo_(std::move(echo)) {}

  // Before a poll's deltas: its released tokens and consumed-token count.
  void poll(const PollResult& p);
  std::string delta(const OutputDelta& d);
  std::string finish(const GenerationResult& r);
  // An error after the stream began: data: {"error": {...}}.
  static std::string fail(const ApiError& e);

 private:
  std::string chunk(const std::string& content);

  const text::Tokenizer& tok_;
  LlamaCompletionEcho echo_;
  std::vector<ShownToken> pending_;  // released, not yet sent
  int32_t n_predicted_ = 0;
};

// GET /props: {default_generation_settings: {n_ctx, speculative, is_processing false, params},
// total_slots, model_path, chat_template (the model file's tokenizer.chat_template, "" when it
// has none), bos_token, eos_token (their text, "" where the vocabulary has none), modalities
// {vision false, audio false}, build_info}.
struct LlamaProps {
  LlamaSettings defaults;
  int32_t n_ctx = 0;
  int32_t n_slots = 0;
  bool has_drafter = false;
  std::string model_path;
  std::string chat_template;
  std::string bos_token;
  std::string eos_token;
  std::string build_info;
};
nlohmann::json llama_props_json(const LlamaProps& p);

// GET /slots: one entry a slot, in order: {id, id_task -1 (no task ids here), n_ctx,
// speculative, is_processing, next_token: [{has_next_token, n_decoded}]}; no prompt or request
// field of whoever holds the slot.
nlohmann::json llama_slots_json(const std::vector<SlotState>& slots, int32_t n_ctx, bool has_drafter);

}  // namespace gs::server
