// The engine's public face: typed generation requests in, token events out. This is the
// boundary between the server (HTTP, JSON, text) and the scheduler that owns the model.
// Token ids cross it (plus the text of an output constraint, which the engine maps to tokens):
// the server tokenizes, renders chat, detokenizes and parses.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace gs {

namespace text {
class JsonGrammar;
}

struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;        // 1 = off
  int32_t top_k = 0;         // 0 = off
  float min_p = 0.0f;        // 0 = off
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  float repetition_penalty = 1.0f;  // 1 = off (llama.cpp's repeat_penalty)
  bool has_seed = false;
  uint64_t seed = 0;
  // OpenAI's logit_bias: (token id, bias) pairs, ids distinct and in the vocabulary; the bias
  // is added to the token's logit before anything else (-inf: never sampled).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // vLLM's min_tokens: the end-of-generation tokens are not sampled before this many tokens
  // (0: off). The engine fills held_end_tokens (the model's and the request's extra ones).
  int32_t min_tokens = 0;
  std::vector<int32_t> held_end_tokens;
};

// One function of a call forced among several (tool_choice "required"): once the output
// spells `opener` (the name and the arguments' "{", one of the allowed completions), the
// arguments must be `grammar`'s value (Gemma call syntax; decision 0027), which the call's
// closer (`GenerationRequest::call_end_tokens`) or an end of generation then ends.
struct CallArguments {
  std::string opener;
  std::shared_ptr<const text::JsonGrammar> grammar;
};

// The answer to a forced call (tool_choice "required" or a named function) holds calls only
// (decision 0016, "After the forced call"): once the first call's closer (`close_token`) is out,
// only an end of generation may come, or, with `more_calls` (parallel_tool_calls), the opener
// `open_token` of another call, whose text must then spell one of `openers` ("call:NAME{", or
// "call:NAME{key:" for a function whose schema the grammar cannot hold) and, after the openers
// in `arguments`, follow their grammar to the closer.
struct ForcedCalls {
  bool on = false;
  int32_t open_token = -1;
  int32_t close_token = -1;
  bool more_calls = false;
  std::vector<std::string> openers;
  std::vector<CallArguments> arguments;
};

// Structured output (decision 0027): when `grammar` is set, the generated content must be one
// value it accepts (in its syntax: JSON, or a Gemma tool call's arguments). Until the value
// is whole, the engine masks every token that would leave the grammar (drafts are picked and
// verified under the same masks); then only end of generation (or `end_tokens`) may come.
struct JsonOutput {
  std::shared_ptr<const text::JsonGrammar> grammar;  // null: no constraint
  int32_t think_open = -1;              // as the first token, opens a free thought span ...
  int32_t think_close = -1;             // ... up to this token
  std::vector<int32_t> escape_tokens;   // as the first token, ends the constraint (a tool call's opener)
  // With escape_tokens (tools offered, tool_choice auto): what the answer is once the opener is
  // out, as after a forced call's: the call's text spells one of `calls.openers` and follows
  // its arguments' grammar to the closer, after which only an end of generation may come, or
  // with `calls.more_calls` another call (`on` false: the opener leaves the answer free).
  ForcedCalls calls;
  std::string prefix;                   // text of the value already in the prompt (a forced call's "{", an assistant prefill's text)
  std::vector<int32_t> end_tokens;      // besides the model's own (a call's closer)
  // Tokens that would end the answer inside the thought besides the end-of-generation ones
  // (the turn opener: the output parser reads it as the end of the thought and, unless the
  // model's own header follows, of the answer). While the value is owed, the engine writes
  // `think_close` in place of any of them, or of an end of generation, sampled inside the
  // thought (Scheduler; decision 0027 §4).
  std::vector<int32_t> thought_breakers;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included when the model wants it
  // -1: until end of generation or the context is full. 0: the prompt only (llama-server's
  // n_predict 0): it is prefilled into a slot, whose cache keeps it for a later request with
  // the same prefix, and the request ends with FinishReason::kLength and no token.
  int32_t max_tokens = -1;
  SamplingParams sampling;
  int32_t n_logprobs = -1;      // -1: no logprobs; 0..20: the chosen token's plus that many top
  bool speculative = true;      // use the MTP drafter when one is loaded
  int32_t draft_max = -1;       // -1: the server's default
  // Start from the prefix a free slot kept from its previous request when it equals the start
  // of `prompt` (the default). False (llama-server's cache_prompt: false) computes the whole
  // prompt: a kept prefix may have been computed in a batch with other sequences, whose matmul
  // sums can differ in their last bits from a lone run's, so a greedy answer can differ.
  bool reuse_prefix = true;
  // Extra end-of-generation token ids beyond the model's own (vLLM's stop_token_ids); they
  // end the request under ignore_eog too, as in vLLM.
  std::vector<int32_t> extra_eog;
  // Generate past the model's end-of-generation tokens (benchmarks, `run --ignore-eos`).
  bool ignore_eog = false;
  // Reasoning budget: at most this many tokens inside a thought span (after the token
  // `reasoning_open`, before `reasoning_close`); when it is spent the engine emits
  // `reasoning_close` in place of the next sampled token and the model goes on from there.
  // -1: no budget (or no span tokens known).
  int32_t reasoning_budget = -1;
  int32_t reasoning_open = -1;
  int32_t reasoning_close = -1;
  // The prompt ends inside a thought span (a continued reasoning prefill): the budget counts
  // from the first generated token, and a structured-output value (json, with think_close)
  // is owed after that thought closes.
  bool starts_in_thought = false;
  // Output constraint: when non-empty, the generated text must start with one of these
  // strings (e.g. "get_weather{" after a forced tool-call opener): until one is complete,
  // only tokens that keep the text on one of them may be sampled, and the sequence drafts
  // nothing. Text, not ids: the engine maps it to tokens (engine/completion_constraint.h).
  std::vector<std::string> allowed_completions;
  // With allowed_completions: the openers among them whose arguments follow a grammar, and
  // the tokens that end those arguments (the call's closer). Empty: the constraint ends once
  // a completion is spelled.
  std::vector<CallArguments> call_arguments;
  std::vector<int32_t> call_end_tokens;
  // Structured output (response_format, a forced call's arguments; decision 0027). Takes
  // precedence over allowed_completions.
  JsonOutput json;
  // A forced call's answer: the calls, then an end (wraps the constraints above).
  ForcedCalls forced_calls;
  // tool_choice auto without structured output (decision 0065): the text is the model's, unmasked,
  // until it emits `lazy_calls.open_token`; from there the answer is calls only, as after a
  // structured-output value's opener (JsonOutput::calls): the call's text spells one of
  // `openers` and follows its arguments' grammar to the closer, then an end or, with
  // `more_calls`, another call. Only without json.grammar, allowed_completions and forced_calls.
  ForcedCalls lazy_calls;
  // The response this request is one choice of (OpenAI's `n`): the choices of one response
  // share a nonzero `response_id` and give their number in `response_choices`; 0 and 1 for a
  // request on its own. A drain keeps a waiting choice whose response has already started
  // (some choice of it is not waiting: it holds a slot or has ended), so that the response
  // gets the drain time a running one-choice response gets (decision 0010).
  uint64_t response_id = 0;
  int32_t response_choices = 1;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct GeneratedToken {
  int32_t id = 0;
  float logprob = 0.0f;             // under the request's sampling distribution's source logits
  std::vector<TokenLogprob> top;    // n_logprobs alternatives, most likely first
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason reason);

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // prompt tokens reused from the cache
  int32_t completion_tokens = 0;
  int32_t drafted_tokens = 0;
  int32_t accepted_tokens = 0;
  double prefill_ms = 0;
  double decode_ms = 0;
  double queue_ms = 0;
};

struct StreamEvent {
  enum class Kind { kTokens, kDone, kError };
  Kind kind = Kind::kTokens;
  std::vector<GeneratedToken> tokens;  // kTokens: one or more (a speculative round may add several)
  FinishReason finish = FinishReason::kStop;  // kDone
  Usage usage;                                // kDone
  Status error;                               // kError (the stream ends after it)
};

// One submitted request, consumed by exactly one thread.
class RequestStream {
 public:
  virtual ~RequestStream() = default;
  // Waits up to `timeout` for the next event; false on timeout. After kDone or kError no
  // more events come.
  virtual bool next(StreamEvent* event, std::chrono::milliseconds timeout) = 0;
  // Asks the engine to stop this request; it finishes with kCancelled within one step.
  // Safe to call from any thread, any number of times.
  virtual void cancel() = 0;
  // Waits up to `timeout` until a slot holds the request (admitted()) or an event is there to
  // read (an end before admission: a drain's kUnavailable, a failure to start, a
  // cancellation); true then, false on timeout. Consumes nothing. A streamed response waits
  // on this before it commits to its status (decision 0010).
  virtual bool wait_started(std::chrono::milliseconds timeout) = 0;
  // A slot took the request (it left the queue and its sequence started).
  virtual bool admitted() const = 0;
};

struct EngineInfo {
  std::string model_name;
  std::string backend;  // "cpu (8 threads)", "cuda: NVIDIA H200"
  int32_t n_ctx = 0;    // tokens per sequence
  int32_t n_vocab = 0;
  int32_t n_slots = 0;
  bool has_drafter = false;
  int32_t draft_max = 0;
  std::vector<int32_t> eog_tokens;
  int32_t queue_size = 0;     // requests that may wait for a slot
  uint64_t weight_bytes = 0;  // model (+ drafter) weights in backend memory
  uint64_t kv_bytes = 0;      // KV cache in backend memory
};

// What one slot is doing (GET /slots): whether a sequence holds it, and how many tokens that
// sequence has sampled (0 when idle). Refreshed at each step and each end.
struct SlotState {
  bool processing = false;
  int32_t n_decoded = 0;  // an end-of-generation token included
};

// llama-server's slot actions (POST /slots/{id}?action=...; decision 0068): a free slot's
// processed prompt (its tokens and their KV cache) saved to a file, restored from one, or
// dropped.
enum class SlotActionKind { kSave, kRestore, kErase };

struct SlotAction {
  SlotActionKind kind = SlotActionKind::kErase;
  int32_t slot = 0;
  std::string path;  // kSave, kRestore: the slot file (the server checked its name)
};

struct SlotActionResult {
  int32_t n_tokens = 0;  // tokens saved, restored or erased
  uint64_t n_bytes = 0;  // bytes written (save) or read (restore)
  double ms = 0;         // time the action took on the engine thread
};

// Counters and gauges for /metrics (monotonic counters never decrease).
struct EngineMetrics {
  uint64_t requests_total = 0;
  uint64_t requests_cancelled_total = 0;
  uint64_t requests_rejected_total = 0;   // refused at submit (queue full, too long, ...)
  uint64_t requests_failed_total = 0;     // ended with an engine error
  uint64_t prompt_tokens_total = 0;
  uint64_t generated_tokens_total = 0;
  uint64_t prefill_tokens_total = 0;
  uint64_t decode_tokens_total = 0;
  double prefill_seconds_total = 0;
  double decode_seconds_total = 0;
  int32_t queue_length = 0;
  int32_t busy_slots = 0;
  int32_t n_slots = 0;
  int64_t kv_cells_used = 0;
  int64_t kv_cells_total = 0;
  uint64_t drafted_total = 0;
  uint64_t accepted_total = 0;
  std::vector<uint64_t> drafted_by_position;   // index i: drafts at position i+1 of a round
  std::vector<uint64_t> accepted_by_position;
  std::vector<SlotState> slots;  // one per slot, in slot order (n_slots entries)
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Queues a request. Errors: kInvalidArgument (empty prompt, bad token id), kOutOfRange
  // (prompt longer than the context: the message gives both numbers), kResourceExhausted
  // (queue full), kUnavailable (shutting down).
  virtual Result<std::unique_ptr<RequestStream>> submit(GenerationRequest request) = 0;
  // Queues several requests (a response's n choices) all or none, with submit's errors; the
  // queue-full one says how many places they need and how many are free; an empty list is
  // kInvalidArgument.
  virtual Result<std::vector<std::unique_ptr<RequestStream>>> submit_all(std::vector<GenerationRequest> requests) = 0;
  virtual EngineInfo info() const = 0;
  virtual EngineMetrics metrics() const = 0;
  // The start of a drain (SIGTERM): new submits are refused with kUnavailable, and every
  // request still waiting for a slot ends now with a kUnavailable error event, except a choice
  // of a response that has already started (GenerationRequest::response_id), which keeps its
  // place and is admitted as slots free. Running requests go on; shutdown() ends whatever is
  // left.
  virtual void drain() = 0;
  // Stops accepting requests, cancels the running ones and joins the loop thread.
  virtual void shutdown() = 0;
  // Runs a slot action on the engine thread between steps and waits for it (a save or restore
  // takes as long as its file's bytes take to write or read). Errors: kInvalidArgument (slot
  // out of range, a file that is not a slot file of this model and cache, or is corrupt or
  // truncated: the slot is left as it was), kNotFound (restore: no such file),
  // kFailedPrecondition (a request is running in the slot: nothing is done), kUnavailable
  // (shutting down), kIo (the file could not be written or read), kUnimplemented (an engine
  // without slot files).
  virtual Result<SlotActionResult> slot_action(const SlotAction& action) {
    (void)action;
    return Status(StatusCode::kUnimplemented, "this engine does not save or restore slots");
  }
};

}  // namespace gs
