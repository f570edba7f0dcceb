// libFuzzer target: the text layer on the real Gemma 4 vocabulary. Encode/decode round trips,
// the incremental detokenizer against a whole decode, and the output parser over any chunking.
//
// Input: byte 0 flags, byte 1 the number of chunk-size bytes taken from the end, then the
// body. Flag bit 7 picks the body's meaning: text to encode (0) or token ids (1; 2 bytes per
// id: high bit set = the byte token <0xHH> of the second byte, else a 15-bit id, with ids
// 0x7FF0 and up mapped past the vocabulary).
// The vocabulary is read once from $GS_FUZZ_VOCAB (scripts/fuzz.sh sets it), else from
// $GS_SHARED_DIR or ../shared, test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf.
// A broken property prints what differed and aborts, so libFuzzer saves the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_reader.h"
#include "text/chat_format.h"
#include "text/detokenizer.h"
#include "text/output_parser.h"
#include "text/text_span.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

#include "parser_event_text.h"  // tests/text: the parser tests' event formatter

namespace {

using gs::text::DecodeOptions;
using gs::text::IncrementalDecoder;
using gs::text::OutputParser;
using gs::text::ParserEvent;
using gs::text::ParserEventKind;
using gs::text::ParserOptions;
using gs::text::TextSpan;
using gs::text::Tokenizer;
namespace markup = gs::text::markup;

constexpr std::string_view kVocabRel = "test-assets/gemma-tokenizer/ggml-vocab-gemma-4-reconstructed.gguf";

std::shared_ptr<const Tokenizer> g_tokenizer;
std::vector<int32_t> g_byte_ids;                 // <0x00>..<0xFF>
std::vector<std::string> g_control_texts;        // texts of CONTROL/UNKNOWN tokens that start with '<'

constexpr std::string_view kAllMarkup[] = {
    markup::kTurnOpen,          markup::kTurnClose, markup::kChannelOpen, markup::kChannelClose,
    markup::kToolCallOpen,      markup::kToolCallClose, markup::kToolResponseOpen,
    markup::kToolResponseClose, markup::kQuote,     markup::kThink,       markup::kToolOpen,
    markup::kToolClose,
};

[[noreturn]] void fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "text_fuzz: %s\n%.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

void check(bool ok, const char* what, std::string_view detail = {}) {
  if (!ok) fail(what, detail);
}

std::string hex(std::string_view s) {
  std::string out;
  char buf[4];
  for (const char c : s) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<uint8_t>(c));
    out += buf;
  }
  return out;
}

std::string ids_text(const std::vector<int32_t>& ids) {
  std::string s;
  for (const int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// What decode(encode(text)) must give for valid UTF-8: U+2581 decodes as a space by design.
std::string expected_round_trip(std::string_view text) {
  std::string out;
  constexpr std::string_view kSpaceMark = "\xE2\x96\x81";
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

bool has_markup(std::string_view s) {
  for (const auto m : kAllMarkup) {
    if (s.find(m) != std::string_view::npos) return true;
  }
  return false;
}

// `text` with what the parser drops removed: every markup token, the role line after
// <|turn> and the label after <|channel>; a stray <|"|> becomes the '"' the parser writes for
// it. Text that still forms markup afterwards ("<|c" + "<|turn>user\n" + "hannel>", or
// "<|" + <|"|> + "|>") is the input's own text, not markup let through.
std::string without_markup(std::string_view text) {
  std::string out;
  size_t i = 0;
  const auto skip = [&](std::string_view word) {
    if (text.compare(i, word.size(), word) == 0) {
      i += word.size();
      return true;
    }
    return false;
  };
  while (i < text.size()) {
    bool removed = false;
    for (const auto m : kAllMarkup) {
      if (skip(m)) {
        if (m == markup::kQuote) {
          out.push_back('"');
        } else if (m == markup::kTurnOpen) {
          for (const auto role : {"model\n", "user\n", "system\n", "tool\n", "assistant\n"}) {
            if (skip(role)) break;
          }
        } else if (m == markup::kChannelOpen) {
          skip(markup::kThoughtLabel);
        }
        removed = true;
        break;
      }
    }
    if (!removed) out.push_back(text[i++]);
  }
  return out;
}

using gs::text::test_util::describe;

void append(std::vector<ParserEvent>* all, std::vector<ParserEvent> events) {
  for (auto& e : events) all->push_back(std::move(e));
}

// Tokenizer: cold and memoized encodes agree; decode(encode(x)) == x for valid UTF-8 (BOS
// invisible unless rendered); encode_prompt without markup equals encode without
// parse_special, and with any markup spans still decodes (rendered) to the text.
void check_encode(std::string_view text, uint8_t flags) {
  const Tokenizer& t = *g_tokenizer;
  const bool add_special = flags & 1;
  const bool parse_special = flags & 2;
  Tokenizer::clear_thread_cache();
  const auto ids = t.encode(text, add_special, parse_special);
  check(t.encode(text, add_special, parse_special) == ids, "memoized encode differs from cold encode", hex(text));
  auto plain = t.decode(ids);
  check(plain.ok(), "decode of encode failed", hex(text));
  check(gs::text::is_valid_utf8(*plain), "decode is not valid UTF-8", hex(text));
  auto rendered = t.decode(ids, DecodeOptions{.render_special = true});
  check(rendered.ok(), "rendered decode of encode failed", hex(text));
  check(gs::text::is_valid_utf8(*rendered), "rendered decode is not valid UTF-8", hex(text));
  if (add_special && t.add_bos()) {
    check(!ids.empty() && ids.front() == t.bos_id(), "add_special without BOS first", hex(text));
  }
  if (gs::text::is_valid_utf8(text)) {
    const std::string want = expected_round_trip(text);
    const std::string bos = add_special && t.add_bos() ? std::string(t.token_text(t.bos_id())) : "";
    check(*rendered == bos + want, "rendered decode(encode(x)) != x",
          hex(text) + " -> " + hex(*rendered) + " ids " + ids_text(ids));
    if (!parse_special) {
      check(*plain == want, "decode(encode(x)) != x", hex(text) + " -> " + hex(*plain) + " ids " + ids_text(ids));
    }
  } else {
    check(*plain == gs::text::sanitize_utf8(expected_round_trip(text)) || parse_special,
          "decode(encode(x)) != sanitize(x) for invalid UTF-8", hex(text) + " -> " + hex(*plain));
  }

  // encode_prompt: no markup means no CONTROL token.
  check(t.encode_prompt(text, {}, add_special) == t.encode(text, add_special, false),
        "encode_prompt without markup != encode without parse_special", hex(text));
  // Markup at some CONTROL texts (chosen by the text's own bytes), plus one bogus span.
  std::vector<TextSpan> spans;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '<') continue;
    for (const auto& c : g_control_texts) {
      if (text.compare(i, c.size(), c) == 0 && ((i + c.size()) & 1) == 0) {
        spans.push_back({i, c.size()});
        break;
      }
    }
    if ((flags & 4) && spans.empty()) spans.push_back({i, 3});  // a span that is no token
  }
  const auto prompt_ids = t.encode_prompt(text, spans, add_special);
  auto prompt_back = t.decode(prompt_ids, DecodeOptions{.render_special = true});
  check(prompt_back.ok(), "decode of encode_prompt failed", hex(text));
  if (gs::text::is_valid_utf8(text)) {
    const std::string bos = add_special && t.add_bos() ? std::string(t.token_text(t.bos_id())) : "";
    check(*prompt_back == bos + expected_round_trip(text), "decode(encode_prompt(x)) != x",
          hex(text) + " -> " + hex(*prompt_back));
  }
}

// Incremental detokenizer: every piece is whole UTF-8, and the pieces plus (for a dropped
// incomplete tail) one U+FFFD equal the whole decode of the valid ids. Returns the pieces.
std::vector<std::string> check_detokenizer(const std::vector<int32_t>& ids, bool render_special) {
  const Tokenizer& t = *g_tokenizer;
  IncrementalDecoder dec(t, DecodeOptions{.render_special = render_special});
  std::vector<std::string> pieces;
  std::string streamed;
  std::vector<int32_t> valid;
  for (const int32_t id : ids) {
    if (t.is_valid(id)) valid.push_back(id);
    std::string piece = dec.push(id);
    check(gs::text::is_valid_utf8(piece), "detokenizer emitted invalid UTF-8", hex(piece) + " ids " + ids_text(ids));
    check(dec.pending_bytes() <= 3, "detokenizer holds more than 3 bytes", ids_text(ids));
    streamed += piece;
    pieces.push_back(std::move(piece));
  }
  const bool tail = dec.pending_bytes() > 0;
  check(dec.finish().empty(), "detokenizer finish() returned text", ids_text(ids));
  check(dec.pending_bytes() == 0, "detokenizer finish() kept bytes", ids_text(ids));
  auto whole = t.decode(valid, DecodeOptions{.render_special = render_special});
  check(whole.ok(), "decode of valid ids failed", ids_text(valid));
  if (tail) streamed += gs::text::kReplacementChar;
  check(streamed == *whole, "incremental detokenizer != whole decode",
        hex(streamed) + " vs " + hex(*whole) + " ids " + ids_text(ids));
  if (valid.size() != ids.size()) {
    check(!t.decode(ids).ok(), "decode accepted an id outside the vocabulary", ids_text(ids));
  }
  return pieces;
}

std::vector<ParserEvent> feed_cuts(std::string_view text, const std::vector<size_t>& sizes, const ParserOptions& o,
                                   bool check_utf8) {
  OutputParser p(o);
  std::vector<ParserEvent> all;
  size_t pos = 0;
  size_t k = 0;
  while (pos < text.size()) {
    const size_t n = sizes.empty() ? text.size() : sizes[k++ % sizes.size()];
    append(&all, p.feed(text.substr(pos, n)));
    pos += n;
  }
  append(&all, p.finish());
  if (check_utf8) {
    for (const auto& e : all) {
      check(gs::text::is_valid_utf8(e.text) && gs::text::is_valid_utf8(e.tool_name),
            "parser event split a UTF-8 character on whole-character input", describe({e}) + " of " + hex(text));
    }
  }
  return all;
}

// Output parser: the same merged events for the whole text, for byte chunks of the given sizes
// and for the detokenizer's pieces (what the server feeds); no markup in content or
// reasoning; every call's arguments one JSON object; calls well nested; nothing after a stop.
void check_parser(const std::string& text, const std::vector<std::string>& pieces, const std::vector<size_t>& sizes,
                  uint8_t flags, uint8_t stop_pick) {
  ParserOptions o;
  o.parse_reasoning = flags & 8;
  o.parse_tool_calls = flags & 16;
  o.starts_in_reasoning = flags & 32;
  o.tool_call_id_seed = 1234;
  if (flags & 64) {
    static const std::string_view kStops[] = {"\n\n", "<|", "|>", "call", "STOP", "}", "é", "😀"};
    std::vector<std::string> stops{std::string(kStops[stop_pick % 8])};
    if (!text.empty()) {
      // A piece of the text itself, so that stops do match; clients' stops are valid UTF-8.
      const size_t at = (stop_pick * 7u) % text.size();
      std::string piece = text.substr(at, 1 + stop_pick % 6);
      if (gs::text::is_valid_utf8(piece)) stops.push_back(std::move(piece));
    }
    o.stop = std::move(stops);
  }
  const auto whole = feed_cuts(text, {}, o, false);
  const std::string want = describe(gs::text::merge_events(whole));
  const auto chunked = feed_cuts(text, sizes, o, false);
  check(describe(gs::text::merge_events(chunked)) == want, "parser: byte chunks differ from whole",
        describe(gs::text::merge_events(chunked)) + "\nvs\n" + want + "\nof " + hex(text));
  {
    OutputParser p(o);
    std::vector<ParserEvent> all;
    for (const auto& piece : pieces) append(&all, p.feed(piece));
    append(&all, p.finish());
    check(describe(gs::text::merge_events(all)) == want, "parser: detokenizer pieces differ from whole",
          describe(gs::text::merge_events(all)) + "\nvs\n" + want + "\nof " + hex(text));
  }
  if (gs::text::is_valid_utf8(text)) {
    // Whole-character input (the server's case) gives whole-character deltas (JSON-safe).
    std::vector<size_t> char_sizes;
    for (size_t i = 0; i < text.size();) {
      const size_t n = static_cast<size_t>(gs::text::utf8_valid_prefix_length(text.substr(i)));
      char_sizes.push_back(n);
      i += n;
    }
    feed_cuts(text, char_sizes, o, true);
  }

  const bool text_forms_markup = has_markup(without_markup(text));
  gs::text::MessageAccumulator acc;
  acc.add(whole);
  int expected_index = 0;
  bool open = false;
  bool stopped = false;
  for (const auto& e : whole) {
    check(!stopped, "parser: event after a stop", describe(whole));
    switch (e.kind) {
      case ParserEventKind::kContent:
      case ParserEventKind::kReasoning:
        break;
      case ParserEventKind::kToolCallBegin:
        check(!open && e.tool_index == expected_index++, "parser: tool call begin out of order", describe(whole));
        check(o.parse_tool_calls, "parser: tool call with parse_tool_calls off", describe(whole));
        open = true;
        break;
      case ParserEventKind::kToolCallArgs:
        check(open, "parser: arguments outside a call", describe(whole));
        break;
      case ParserEventKind::kToolCallEnd:
        check(open, "parser: end outside a call", describe(whole));
        open = false;
        break;
      case ParserEventKind::kStop:
      case ParserEventKind::kEndOfTurn:
        check(!open, "parser: output ended inside a call", describe(whole));
        stopped = true;
        break;
    }
  }
  check(!open, "parser: tool call left open after finish()", describe(whole));
  for (const auto& e : gs::text::merge_events(whole)) {
    if (e.kind == ParserEventKind::kContent || e.kind == ParserEventKind::kReasoning) {
      check(!has_markup(e.text) || text_forms_markup, "parser: markup in content or reasoning",
            describe({e}) + " of " + hex(text));
    }
  }
  for (const auto& call : acc.message().tool_calls) {
    const auto j = nlohmann::json::parse(call.arguments_json, nullptr, false);
    check(!j.is_discarded() && j.is_object(), "parser: arguments are not one JSON object",
          call.arguments_json + " of " + hex(text));
  }
}

std::string vocab_path() {
  if (const char* p = std::getenv("GS_FUZZ_VOCAB"); p && *p) return p;
  std::string shared = "../shared";
  if (const char* s = std::getenv("GS_SHARED_DIR"); s && *s) shared = s;
  return shared + "/" + std::string(kVocabRel);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  const std::string path = vocab_path();
  auto file = gs::gguf::GgufFile::open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "text_fuzz: cannot open %s (set GS_FUZZ_VOCAB): %s\n", path.c_str(),
                 file.status().to_string().c_str());
    std::exit(1);
  }
  auto tok = Tokenizer::from_gguf(**file);
  if (!tok.ok()) {
    std::fprintf(stderr, "text_fuzz: %s\n", tok.status().to_string().c_str());
    std::exit(1);
  }
  g_tokenizer = *tok;
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const auto id = g_tokenizer->find_token(name);
    g_byte_ids.push_back(id ? *id : 0);
  }
  for (int32_t id = 0; id < g_tokenizer->n_vocab(); ++id) {
    const auto type = g_tokenizer->token_type(id);
    const auto text = g_tokenizer->token_text(id);
    if ((type == gs::text::TokenType::kControl || type == gs::text::TokenType::kUnknown) && !text.empty() &&
        text[0] == '<') {
      g_control_texts.emplace_back(text);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  const size_t n_sizes = std::min<size_t>(data[1] % 16, size - 2);
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2 - n_sizes);
  std::vector<size_t> sizes;
  for (size_t k = 0; k < n_sizes; ++k) sizes.push_back(1 + data[size - 1 - k] % 17);
  const uint8_t stop_pick = data[1] >> 4;
  const bool render_special = flags & 4;
  const Tokenizer& t = *g_tokenizer;

  std::vector<int32_t> ids;
  if (flags & 128) {
    for (size_t i = 0; i + 1 < body.size(); i += 2) {
      const auto hi = static_cast<uint8_t>(body[i]);
      const auto lo = static_cast<uint8_t>(body[i + 1]);
      const int32_t v = ((hi & 0x7F) << 8) | lo;
      if (hi & 0x80) {
        ids.push_back(g_byte_ids[lo]);
      } else if (v >= 0x7FF0) {
        ids.push_back(t.n_vocab() + (v - 0x7FF0) - 8);  // around the end of the vocabulary
      } else {
        ids.push_back(v);
      }
    }
  } else {
    check_encode(body, flags);
    ids = t.encode(body, flags & 1, flags & 2);
  }
  const auto pieces = check_detokenizer(ids, render_special);
  std::string text;
  for (const auto& p : pieces) text += p;
  check_parser(text, pieces, sizes, flags, stop_pick);
  return 0;
}
