// Incremental parser of Gemma 4 model output: splits the generated text, as it arrives,
// into visible content, reasoning (<|channel>thought ... <channel|>) and tool calls
// (<|tool_call>call:NAME{...}<tool_call|>, arguments converted to JSON; also the JSON form
// <|tool_call>{"name": NAME, "arguments": {...}}<tool_call|>, decision 0024), and holds back
// stop strings until they can no longer match.
//
// Guarantees (tested over arbitrary chunkings, see tests/text/output_parser_*):
// - any split of the same text into chunks gives the same merged events (with
//   reasoning_in_content, whose block text comes as content and reasoning pieces in turn:
//   the same content and the same reasoning text between any two other events);
// - content never contains channel, turn or tool-call markup: "<|turn>model\n" is dropped,
//   any other "<|turn>" ends the output (kEndOfTurn); the one exception is the reasoning
//   blocks' markup that ParserOptions::reasoning_in_content asks for;
// - nothing is lost: text that cannot be parsed as a tool call comes out as content;
// - tool-call arguments always form one valid JSON object per call once it has ended.
// Never throws; any input is accepted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/stop_scanner.h"

namespace gs::text {

struct ParserOptions {
  // Reasoning blocks become kReasoning events. When false their text (markup and the
  // "thought" label removed) is emitted as content instead.
  bool parse_reasoning = true;
  // With parse_reasoning, each reasoning block is also written into the content, at its place
  // (llama-server's reasoning_format none and deepseek-legacy; decision 0034):
  // kReasoningOpenMarkup where the output opens the block, then the text its kReasoning events
  // carry (without the blank line that separates a later block's text there), then
  // markup::kChannelClose where the output closes it. A block the prompt opened
  // (starts_in_reasoning, continues_reasoning) has no opener; one that the output's end, a tool
  // call or a new turn cuts off has no closer. The kReasoning events are emitted all the same;
  // stop strings are still matched in the answer only.
  bool reasoning_in_content = false;
  // Tool calls become kToolCall* events. When false (no tools, tool_choice "none") the
  // text of a call comes out as content, with its markup removed (bug-case 13).
  bool parse_tool_calls = true;
  // Stop strings (OpenAI `stop`), matched in the visible content only. Empty strings are
  // ignored. Shared, not copied, by the parsers of one request's choices.
  StopStrings stop;
  // False: no stop string is matched until OutputParser::arm_stop_strings() (vLLM's
  // min_tokens checks none in its first tokens); text that may begin one is still held, and
  // one that ends after arming is matched whole even if it began before (decision 0007).
  bool stop_armed = true;
  // The output starts inside a reasoning block (the prompt already opened one).
  bool starts_in_reasoning = false;
  // The output continues visible content that the prompt began (an assistant prefill):
  // its leading whitespace is part of the text, not dropped.
  bool continues_content = false;
  // The output continues a thought that the prompt began and left open (a prefill of an
  // assistant message's reasoning): it starts in reasoning, whose leading whitespace is part
  // of the text.
  bool continues_reasoning = false;
  // With continues_reasoning: the prompt's thought ends right after its opener (a prefill's
  // text ending in "<|channel>"), so the output may begin with the block's "thought" label,
  // which is markup, not reasoning text; the block has no text yet.
  bool reasoning_label_pending = false;
  // The output begins with a tool call whose opener the prompt wrote (tool_choice required or
  // named: the caller feeds that opener as the output's first text). When the output ends
  // before the header of this first call is complete (max_tokens cut its name), the header's
  // text is dropped, not given to content: its `call:` is the prompt's, not the model's
  // answer, and a cut name calls no declared tool (decision 0016).
  bool forced_call = false;
  // Every call's text after its <|tool_call> opener is held by the output's constraint to the
  // opener of a declared function ("call:NAME{": tool_choice auto's lazy call grammar, a call
  // instead of a structured value, the calls after a forced one). When the output ends before
  // such a header is complete (max_tokens cut "call:get_w"), the header's text is dropped, as
  // forced_call's is: it is a cut call, not text of the model's answer (decision 0067). Without
  // it, a cut header is the model's own text and comes out as content.
  bool calls_held = false;
  // The declared tools' names. A namespaced call name ("default_api:get_weather") is the
  // declared tool its last part names (decision 0024); empty: names are taken as written.
  std::vector<std::string> tool_names;
  // Seed for tool-call ids ("call_" + 24 base-62 characters, a function of the seed and the
  // call's index). 0: random per parser.
  uint64_t tool_call_id_seed = 0;
};

// How ParserOptions::reasoning_in_content writes a block's opener into the content: the
// canonical spelling of what Gemma 4 writes ("<|channel>thought\n").
inline constexpr std::string_view kReasoningOpenMarkup = "<|channel>thought\n";

enum class ParserEventKind {
  kContent,        // text: a delta of visible content
  kReasoning,      // text: a delta of reasoning_content
  kToolCallBegin,  // tool_index, tool_id, tool_name
  kToolCallArgs,   // tool_index, text: a delta of the arguments' JSON text
  kToolCallEnd,    // tool_index: the arguments are complete
  kStop,           // text: the stop string that matched; nothing follows
  kEndOfTurn,      // the model opened another turn (<|turn>user ...): its own turn is over;
                   // nothing follows (the caller should stop generating)
};

struct ParserEvent {
  ParserEventKind kind = ParserEventKind::kContent;
  std::string text;
  // kContent: for each byte of `text`, the offset in the input (all text fed, from 0) of the
  // byte it is, or for text the parser writes itself (the blank line where a repeated turn
  // header was dropped, a quote for <|"|>, reasoning_in_content's block markup), of the input
  // it was reading then. The logprobs of a chat answer are those of the tokens these offsets
  // fall in (decision 0055).
  std::vector<uint64_t> sources;
  int tool_index = -1;
  std::string tool_id;
  std::string tool_name;
};

// Counters for logs and metrics (bug-case 8 asks for repeated empty thought blocks to be
// detectable).
struct ParserStats {
  int empty_reasoning_blocks = 0;  // <|channel>thought<channel|> with nothing inside
  int reasoning_blocks = 0;
  int tool_calls = 0;
  int tool_calls_repaired = 0;     // calls that needed a tolerance rule (quotes, missing `call`, ...)
  int tool_calls_unparsed = 0;     // call openers whose text came out as content
  int64_t markup_dropped = 0;      // stray markup tokens removed from content
};

class OutputParser {
 public:
  explicit OutputParser(ParserOptions options = {});
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  // Feeds generated text (any split, even inside a UTF-8 character or a markup token).
  // Returns the events this text completes; text that may still turn out to be markup or a
  // stop string is held until later input or finish() decides.
  std::vector<ParserEvent> feed(std::string_view text);
  // Ends the output: held text is decided, an open tool call is closed (its JSON completed).
  std::vector<ParserEvent> finish();

  // True while inside a reasoning block (for reasoning budgets: the engine may then force
  // markup::kChannelClose).
  bool in_reasoning() const;
  // Stop strings that end in the visible content released from now on are matched
  // (ParserOptions::stop_armed).
  void arm_stop_strings();
  // True once a stop string matched; later input is ignored.
  bool stopped() const;
  // The input offset from which content may still come (ParserEvent::sources): every later
  // content byte comes from, or is placed at, that offset or after. The earliest of the input
  // not yet consumed, whitespace held at a segment start or inside a thought, content held
  // because it may begin a stop string, and a block opener whose label is still to come. The
  // logprobs hold a token back until its text is decided (decisions 0053, 0055). After a stop,
  // the end of a turn or finish(): UINT64_MAX.
  uint64_t undecided_from() const;
  // True once the model opened a turn that is not its own (kEndOfTurn); later input is
  // ignored.
  bool turn_ended() const;
  const ParserStats& stats() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// The assembled message: what a non-streaming response returns.
struct ParsedToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;  // a JSON object's text
};

struct ParsedMessage {
  std::string content;
  std::string reasoning_content;
  std::vector<ParsedToolCall> tool_calls;
  std::optional<std::string> stop;  // the stop string that matched
};

// Merges events into a message (deltas concatenated in order).
class MessageAccumulator {
 public:
  void add(const ParserEvent& event);
  void add(const std::vector<ParserEvent>& events);
  const ParsedMessage& message() const { return message_; }

 private:
  ParsedMessage message_;
};

// One-shot: parse a complete output.
ParsedMessage parse_output(std::string_view text, const ParserOptions& options = {});

// Merges adjacent deltas of the same kind (and the same tool call), giving the canonical
// event list that any chunking of the same output must reproduce.
std::vector<ParserEvent> merge_events(const std::vector<ParserEvent>& events);

}  // namespace gs::text
