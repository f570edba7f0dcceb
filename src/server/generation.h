// One request's path from engine tokens to OpenAI output: incremental detokenizing, the
// Gemma 4 output parser (chat) or stop strings (raw completions), finish reasons, usage.
// Used the same way by streaming and non-streaming responses: poll, forward deltas, and
// read the assembled result at the end.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/stop_matcher.h"
#include "text/detokenizer.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

namespace gs::server {

struct GenerationPlan {
  GenerationRequest request;   // prompt tokens, limits, sampling
  bool chat = true;            // parse reasoning and tool calls; false: raw text
  text::ParserOptions parser;  // chat
  // Text the prompt already ends with that the parser must see as the start of the output
  // (a forced tool-call opener for tool_choice required / named).
  std::string output_prefix;
  // Chat: the parser's reasoning events become reasoning_content. False (reasoning_format
  // none, decision 0034): they are dropped, the blocks being in the content
  // (parser.reasoning_in_content); reasoning_tokens still counts the thinking.
  bool reasoning_content = true;
  bool single_tool_call = false;     // parallel_tool_calls: false
  // The Responses API's max_tool_calls: the output ends once this many calls are complete
  // (finish_reason "tool_calls"), as single_tool_call does after the first; -1: no limit.
  int32_t max_tool_calls = -1;
  // A forced call (tool_choice "required" or named): the answer is calls only. The engine
  // allows only an end or another call after a call's closer; text that still comes after a
  // complete call (where the call's form alone was forced, its arguments free) ends the output.
  bool calls_only = false;
  text::StopStrings stop;            // raw completions (shared by the choices)
  // The generated tokens are released with the text they spell (PollResult::tokens) even
  // without logprobs (request.n_logprobs -1; their logprob fields are then 0): llama-server's
  // `tokens` of /completion (decision 0061).
  bool release_tokens = false;
};

// One piece of output for the client, in order. Adjacent pieces of the same kind merge.
struct OutputDelta {
  enum class Kind { kContent, kReasoning, kToolCallBegin, kToolCallArgs };
  Kind kind = Kind::kContent;
  std::string text;        // content, reasoning or arguments text
  int tool_index = -1;
  std::string tool_id;     // kToolCallBegin
  std::string tool_name;   // kToolCallBegin
};

// A generated token as the logprobs show it: the token, and how much of its text is part of
// the output, so that the entries spell exactly the returned text (its logprob and
// alternatives stay the whole token's). Raw completions: a stop string that begins inside a
// token's text cuts the token there, and its entry spells only the first `shown_bytes` bytes
// of its piece (decision 0053). Chat: the entry spells the content that came from the token's
// text (`text`, where that is not its whole piece: the parser dropped some of it, a stop string
// cut it, or the parser wrote text there), and tokens none of whose text is content (the
// thinking split off as reasoning_content, tool calls, markup) are left out (decision 0055).
struct ShownToken {
  GeneratedToken token;
  int32_t shown_bytes = -1;         // -1: the whole piece
  std::optional<std::string> text;  // chat: the content this token stands for, where not its piece
};

struct PollResult {
  std::vector<OutputDelta> deltas;
  // The tokens whose text this poll released (for logprobs), in order; always empty when the
  // request asks no logprobs (GenerationRequest::n_logprobs < 0: no token is held, and chat
  // content is not attributed to tokens, decision 0058) unless the plan says release_tokens.
  // Raw completions: with
  // stop strings a token is held until no stop string can claim its text, and those a stop
  // string ends on or after are never released; without stop strings, every token consumed.
  // Chat: a token is held until the parser has decided what content its text becomes, and
  // only those that became content are released (ShownToken::text).
  std::vector<ShownToken> tokens;
  int32_t n_tokens = 0;                // tokens consumed by this poll (continuous usage)
  bool finished = false;
  bool got_event = false;              // the engine sent something (tokens or the end)
};

struct GenerationResult {
  std::string content;                 // chat content or completion text
  std::string reasoning_content;
  std::vector<text::ParsedToolCall> tool_calls;
  std::string finish_reason;           // "stop", "length", "tool_calls"
  std::string stop_sequence;           // the stop string that ended the output, "" when none did
  Usage usage;
  int32_t reasoning_tokens = 0;
  int empty_reasoning_blocks = 0;
  std::optional<Status> error;         // the engine failed the request
  bool cancelled = false;              // ended by cancel() before any finish
};

class Generation {
 public:
  Generation(std::shared_ptr<const text::Tokenizer> tokenizer, GenerationPlan plan);
  ~Generation();

  // Submits to the engine. Errors as Engine::submit.
  Status start(Engine& engine);
  // The engine request start() submits; attach() takes the stream of one submitted another
  // way (Engine::submit_all, a response's choices together).
  const GenerationRequest& request() const { return plan_.request; }
  void attach(std::unique_ptr<RequestStream> stream) { stream_ = std::move(stream); }
  // Waits up to `wait` for engine events and turns them into deltas.
  PollResult poll(std::chrono::milliseconds wait);
  // Stops the request (client gone). Idempotent.
  void cancel();
  // Waits up to `wait` until a slot holds the request or it has an event to read (its end
  // before admission included); true then (and when finished or never started). Consumes
  // nothing: poll() reads the events after.
  bool wait_started(std::chrono::milliseconds wait);
  // A slot took the request.
  bool admitted() const { return stream_ && stream_->admitted(); }
  bool finished() const { return finished_; }
  // Valid once finished.
  const GenerationResult& result() const { return result_; }

 private:
  void consume_tokens(const std::vector<GeneratedToken>& tokens, PollResult* out);
  void consume_parser_events(const std::vector<text::ParserEvent>& events, PollResult* out);
  // Chat: gives each byte of a content event to the held token its input offset falls in.
  void attribute_content(const text::ParserEvent& event);
  void push_delta(OutputDelta delta, PollResult* out);
  void end(PollResult* out, FinishReason reason, const Usage& usage);
  // Moves the held tokens that are decided into out->tokens (see PollResult::tokens); `all`:
  // the output is over, every held token is decided (a stop string's cut applies).
  void release_tokens(PollResult* out, bool all);

  std::shared_ptr<const text::Tokenizer> tokenizer_;
  GenerationPlan plan_;
  text::IncrementalDecoder decoder_;
  std::unique_ptr<text::OutputParser> parser_;
  text::MessageAccumulator accumulator_;
  StopMatcher stop_matcher_;
  std::unique_ptr<RequestStream> stream_;
  GenerationResult result_;
  bool finished_ = false;
  bool stopped_early_ = false;   // a stop string or the single tool call ended the output
  bool tool_call_done_ = false;  // a tool call was completed: finish_reason is "tool_calls"
  int32_t n_calls_done_ = 0;     // tool calls completed
  bool prefix_fed_ = false;
  bool flushing_ = false;        // end(): the output is over, held text and open calls are decided
  int32_t n_tokens_seen_ = 0;
  // vLLM's min_tokens over stop strings: none is matched that ends in the text of the first
  // plan_.request.sampling.min_tokens tokens (the matcher and the parser hold text all the same).
  bool stop_armed_ = true;
  // Logprob tokens not yet released, with their spans in the decoded text (decision 0053).
  struct HeldToken {
    GeneratedToken token;
    size_t start = 0;       // decoded bytes before the token's text
    size_t end = 0;         // ... and after it
    size_t carry = 0;       // bytes of earlier pieces the decoder held when the token came
    size_t piece_size = 0;  // its piece's bytes under the decoder's options
    // Its own bytes' place in the decoded text, [start + carry, + piece_size) (exact for valid
    // UTF-8), and (chat) the content they became (decision 0055).
    size_t raw_end() const { return start + carry + piece_size; }
    std::string shown;
  };
  bool logprobs_ = false;      // the request asks logprobs or release_tokens: tokens are held and released
  bool hold_tokens_ = false;   // raw completions with stop strings: tokens wait to be decided
  std::deque<HeldToken> held_tokens_;
  size_t decoded_size_ = 0;    // decoded bytes so far
  size_t decided_ = 0;         // raw completions: decoded bytes no stop string can claim any more
  // Chat: the parser input before the first token (the forced call opener), content the parser
  // placed where no held token is (written to the next one), the last content byte's offset.
  uint64_t prefix_bytes_ = 0;
  std::string orphan_;
  uint64_t last_source_ = 0;
};

}  // namespace gs::server
