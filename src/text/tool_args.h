// Incremental conversion of Gemma 4 tool-call arguments ({key:<|"|>text<|"|>,n:1,...}) into
// JSON text, tolerant of the variants models emit (bug-cases 1, 3, 4).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "text/markup_match.h"

namespace gs::text {

// Fed the text after the opening '{' of call:NAME{...}; writes the JSON of the arguments
// object as it becomes certain (string values stream character by character). Input that
// ends (`final`) inside a marker (`<|"` of a string delimiter, `<tool_ca`) drops the
// marker's bytes: a cut never puts them in a key or value.
//
// Accepted, besides the Gemma form: keys bare, in <|"|>, "..." or '...'; values as <|"|>
// strings, JSON strings ("..." with escapes), Python strings ('...'), JSON numbers (and a
// leading '+'), true/false/null, True/False/None, bare words (taken as strings), nested
// objects and arrays; missing commas, trailing commas, missing values (null), '=' for ':'.
// Brackets opened inside a bare value balance within it ("echo ${HOME}", "g(1, 2)").
// The output is always a prefix of one valid JSON object; close() completes it.
class ToolArgsConverter {
 public:
  enum class Step {
    kConsumed,    // consumed > 0 bytes; call again with the rest
    kNeedMore,    // cannot decide without more input (a possible marker or escape is cut)
    kDone,        // the top-level object closed (the '}' was consumed)
    kTerminated,  // a markup token that ends the call starts here (not consumed)
  };

  ToolArgsConverter();
  // Processes a prefix of `s`. `final`: no more input will come (partial markers are text).
  // Sets *consumed to the bytes used; appends JSON to *json.
  Step step(std::string_view s, bool final, size_t* consumed, std::string* json);
  // Completes the JSON (open string, pending key or value, open containers). After kDone
  // it writes the top-level object's '}', which step() holds back so that reopen() can
  // still take it back.
  void close(std::string* json);
  // After kDone: the '}' was a miscount (more members follow it); the top-level object goes
  // on, the next member expected. Counts as a repair.
  void reopen();
  // A tolerance rule was needed (non-Gemma quoting, bare words, repairs).
  bool repaired() const { return repaired_; }

 private:
  enum class State {
    kExpectKey, kKeyBare, kKeyQuoted, kExpectColon, kExpectValue, kString, kBare, kAfterValue, kDone,
  };
  enum class Quote { kGemma, kDouble, kSingle };
  struct Frame {
    bool is_object;
    bool first;
  };

  // `s` (the rest of the input) is a strict prefix of a marker: more is needed, or, when
  // `final`, the output was cut inside it and its bytes are dropped.
  Step partial_marker(std::string_view s, bool final, size_t* consumed);
  Step on_string_char(std::string_view s, bool final, size_t* consumed, std::string* json, bool key);
  void emit_key(std::string* json);
  void begin_element(std::string* json);  // the comma before an array element or object member
  void finish_bare(std::string* json);
  void close_top(std::string* json);

  std::vector<Frame> stack_;
  State state_ = State::kExpectKey;
  Quote quote_ = Quote::kGemma;
  std::string buf_;  // key text or bare value being read
  std::string bare_closers_;  // brackets opened inside the bare value: the closers expected
  bool top_close_held_ = false;  // kDone: the top-level '}' is not yet written
  bool repaired_ = false;
};

// Decodes the backslash escape that starts `s` (s[0] == '\\') as JSON and Python read it:
// \n \t \r \b \f \uXXXX (with surrogate pairs) \" \' \\ \/; any other is the backslash
// and the character. kNeedMore when `s` may be cut inside the escape (and !final).
enum class EscapeStep { kDecoded, kNeedMore };
EscapeStep decode_escape(std::string_view s, bool final, size_t* consumed, std::string* out);

// kFull when markup that ends a tool call wherever it appears (<tool_call|>, a new
// <|tool_call>, a tool response or turn marker) starts `s`; kPartial when `s` may be cut
// inside one.
MarkupMatch match_call_terminator(std::string_view s);

// JSON string-body escaping of raw bytes (quotes, backslash, control characters).
void append_json_escaped(std::string_view s, std::string* out);

}  // namespace gs::text
