// OutputParser: a resumable state machine over the generated text. Every decision depends
// only on the text seen so far; when it would need text not yet seen (a possible markup
// token or stop string cut by the chunk boundary) the text is held, so any chunking gives
// the same merged events.
#include "text/output_parser.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <random>

#include "text/chat_format.h"
#include "text/markup_match.h"
#include "text/stop_scanner.h"
#include "text/tool_args.h"

namespace gs::text {

static_assert(kReasoningOpenMarkup.substr(0, markup::kChannelOpen.size()) == markup::kChannelOpen &&
              kReasoningOpenMarkup.substr(markup::kChannelOpen.size(), markup::kThoughtLabel.size()) ==
                  markup::kThoughtLabel &&
              kReasoningOpenMarkup.size() == markup::kChannelOpen.size() + markup::kThoughtLabel.size() + 1);

namespace {

// Markup recognised while reading content or reasoning.
enum class Mark {
  kChannelOpen, kChannelClose, kToolCallOpen, kToolCallClose, kTurnOpen, kTurnClose,
  kToolResponseOpen, kToolResponseClose, kThink, kToolOpen, kToolClose, kQuote,
};
struct MarkText {
  Mark mark;
  std::string_view text;
};
constexpr std::array<MarkText, 12> kMarks = {{
    {Mark::kChannelOpen, markup::kChannelOpen},
    {Mark::kChannelClose, markup::kChannelClose},
    {Mark::kToolCallOpen, markup::kToolCallOpen},
    {Mark::kToolCallClose, markup::kToolCallClose},
    {Mark::kTurnOpen, markup::kTurnOpen},
    {Mark::kTurnClose, markup::kTurnClose},
    {Mark::kToolResponseOpen, markup::kToolResponseOpen},
    {Mark::kToolResponseClose, markup::kToolResponseClose},
    {Mark::kThink, markup::kThink},
    {Mark::kToolOpen, markup::kToolOpen},
    {Mark::kToolClose, markup::kToolClose},
    {Mark::kQuote, markup::kQuote},
}};

size_t mark_length(Mark mark) {
  for (const auto& m : kMarks) {
    if (m.mark == mark) return m.text.size();
  }
  return 0;
}

// The markup at the start of `s`: kFull with *mark set, kPartial when `s` is cut inside one.
MarkupMatch match_mark(std::string_view s, Mark* mark) {
  MarkupMatch best = MarkupMatch::kNone;
  for (const auto& m : kMarks) {
    const MarkupMatch r = match_markup(s, m.text);
    if (r == MarkupMatch::kFull) {
      *mark = m.mark;
      return MarkupMatch::kFull;
    }
    if (r == MarkupMatch::kPartial) best = MarkupMatch::kPartial;
  }
  return best;
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
// Characters that may precede the first reasoning block without being content (bug-case 18).
bool is_preamble_char(char c) {
  return is_ws(c) || c == '-' || c == '=' || c == '_' || c == '*' || c == '#' || c == '~';
}
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

constexpr size_t kMaxHeaderBytes = 256;
constexpr size_t kMaxPreambleBytes = 256;
constexpr size_t kMaxKeyLookahead = 64;  // a bare key after a miscounted '}' (member_follows)
constexpr std::string_view kCallKeyword = "call";
// The roles a turn header may name that are the model's own turn.
constexpr std::array<std::string_view, 2> kModelRoleWords = {"model", "assistant"};
constexpr size_t kMaxRoleBytes = 16;
bool is_role_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

enum class Mode {
  kContent, kTurnHeader, kChannelLabel, kReasoning, kToolHeader, kToolArgs,
  kJsonArgsString,  // a JSON-form call's "arguments" given as a JSON string holding the object
  kJsonEnvelope,    // a JSON-form call's object after its arguments (normally just its '}')
  kAfterToolCall, kStopped,
};

// Result of scanning a tool-call header "call:NAME{".
struct Header {
  enum class Kind { kOk, kPartial, kFail } kind = Kind::kFail;
  size_t length = 0;  // kOk: bytes through '{'; kFail: bytes that were scanned (become content)
  std::string name;
  bool repaired = false;
  // The JSON form {"name": "NAME", "arguments": ...}: the arguments are an object (kOk
  // ends after its '{') or a JSON string holding one (kOk ends after its opening quote).
  bool json_form = false;
  char args_string_quote = 0;  // the string's quote character; 0: the arguments are an object
};

// The JSON form of a call, which models trained on other tool formats write inside the
// Gemma markup: '{' "name" ':' "NAME" ',' ("arguments" | "parameters") ':' then '{' or a
// string. Keys and the name may use " or '; whitespace may come between any two parts.
// Any other object (other keys, another order) is not a call. `s` starts at the '{'.
Header scan_json_header(std::string_view s, bool final) {
  Header h;
  h.json_form = true;
  h.repaired = true;
  size_t i = 1;
  const auto partial_or_fail = [&](size_t at) {
    h.kind = (!final && at < kMaxHeaderBytes) ? Header::Kind::kPartial : Header::Kind::kFail;
    h.length = at;
    return h;
  };
  const auto fail = [&](size_t at) {
    h.kind = Header::Kind::kFail;
    h.length = at;
    return h;
  };
  const auto skip_ws = [&] {
    while (i < s.size() && is_ws(s[i])) ++i;
  };
  // A quoted word of name characters; false (i at the mismatch) when it is not one, or when
  // `s` ends inside it (*cut set).
  const auto quoted = [&](std::string* out, bool* cut) {
    *cut = false;
    if (s[i] != '"' && s[i] != '\'') return false;
    const char q = s[i];
    size_t j = i + 1;
    while (j < s.size() && j < kMaxHeaderBytes && (is_name_char(s[j]) || s[j] == ':')) ++j;
    if (j == s.size() || j >= kMaxHeaderBytes) {
      *cut = true;
      i = j;
      return false;
    }
    if (s[j] != q) return false;
    out->assign(s.substr(i + 1, j - i - 1));
    i = j + 1;
    return true;
  };
  const auto punct = [&](char c) {  // skips whitespace, then expects `c`
    skip_ws();
    if (i == s.size()) return 0;
    if (s[i] != c) return -1;
    ++i;
    skip_ws();
    return i == s.size() ? 0 : 1;
  };
  bool cut = false;
  std::string key;
  int r = 0;
  skip_ws();
  if (i == s.size()) return partial_or_fail(i);
  if (!quoted(&key, &cut)) return cut ? partial_or_fail(i) : fail(i);
  if (key != "name") return fail(i);
  if ((r = punct(':')) <= 0) return r == 0 ? partial_or_fail(i) : fail(i);
  if (!quoted(&h.name, &cut)) return cut ? partial_or_fail(i) : fail(i);
  if (h.name.empty()) return fail(i);
  if ((r = punct(',')) <= 0) return r == 0 ? partial_or_fail(i) : fail(i);
  if (!quoted(&key, &cut)) return cut ? partial_or_fail(i) : fail(i);
  if (key != "arguments" && key != "parameters") return fail(i);
  if ((r = punct(':')) <= 0) return r == 0 ? partial_or_fail(i) : fail(i);
  if (s[i] == '"' || s[i] == '\'') {
    h.args_string_quote = s[i];
  } else if (s[i] != '{') {
    return fail(i);
  }
  h.kind = Header::Kind::kOk;
  h.length = i + 1;
  return h;
}

Header scan_header(std::string_view s, bool explicit_opener, bool final) {
  Header h;
  size_t i = 0;
  const auto partial_or_fail = [&](size_t at) {
    h.kind = (!final && at < kMaxHeaderBytes) ? Header::Kind::kPartial : Header::Kind::kFail;
    h.length = at;
    return h;
  };
  // Whitespace (newlines too) is allowed around every part of the header: models write
  // "call: name {" and "call:name\n{" for "call:name{", and the call is meant all the same.
  const auto skip_ws = [&] {
    const size_t from = i;
    while (i < s.size() && is_ws(s[i])) ++i;
    return i > from;
  };
  skip_ws();
  if (i == s.size()) return partial_or_fail(i);
  if (explicit_opener && s[i] == '[') {  // a list of JSON-form calls: [{...}, {...}]
    ++i;
    skip_ws();
    if (i == s.size()) return partial_or_fail(i);
    if (s[i] != '{') {
      h.kind = Header::Kind::kFail;
      h.length = i;
      return h;
    }
  }
  if (explicit_opener && s[i] == '{') {
    Header j = scan_json_header(s.substr(i), final);
    j.length += i;
    return j;
  }
  const MarkupMatch kw = match_markup(s.substr(i), kCallKeyword);
  if (kw == MarkupMatch::kPartial) return partial_or_fail(i);
  if (kw == MarkupMatch::kFull) {
    const size_t keyword_at = i;
    i += kCallKeyword.size();
    const bool gap = skip_ws();
    if (i == s.size()) return partial_or_fail(i);
    if (s[i] == ':') {
      ++i;
      if (gap) h.repaired = true;
    } else if (!gap && is_name_char(s[i])) {
      i = keyword_at;  // "<|tool_call>callback{": the word begins the name, `call:` is missing
      h.repaired = true;
    } else {
      h.repaired = true;  // "call name{"
    }
  } else {
    h.repaired = true;  // bug-case 6: "<|tool_call>:name{" or "<|tool_call>name{"
    if (s[i] == ':') ++i;
  }
  if (skip_ws()) h.repaired = true;
  if (i == s.size()) return partial_or_fail(i);
  const size_t name_start = i;
  while (true) {
    while (i < s.size() && is_name_char(s[i]) && i - name_start < kMaxHeaderBytes) ++i;
    if (i == s.size()) return partial_or_fail(i);
    // A namespace ("default_api:get_weather"): a colon between two name parts, nothing
    // around it (bug-case 8's "run_terminal_command:\nBEGIN_ARG:" is no name).
    if (s[i] != ':' || i == name_start || i - name_start >= kMaxHeaderBytes) break;
    if (i + 1 == s.size()) return partial_or_fail(i + 1);
    if (!is_name_char(s[i + 1])) break;
    ++i;
  }
  h.name = std::string(s.substr(name_start, i - name_start));
  if (skip_ws()) h.repaired = true;
  if (i == s.size()) return partial_or_fail(i);
  if (h.name.empty() || s[i] != '{') {
    h.kind = Header::Kind::kFail;
    h.length = i;
    return h;
  }
  h.kind = Header::Kind::kOk;
  h.length = i + 1;
  if (!explicit_opener) h.repaired = true;  // bug-case 7: call without <|tool_call>
  return h;
}

}  // namespace

// Where a piece of text came from in the input (decision 0055): byte k of it from the input
// byte at offset at(k) (offsets count every byte fed since the start). Text the parser writes
// itself (a separator, a quote for <|"|>, the canonical block markup) is placed at the input
// it was reading then.
struct Origin {
  const uint64_t* each = nullptr;  // one offset a byte (text held from earlier input), or
  uint64_t first = 0;              // from `first` on, one a byte (`run`), or all at `first`
  bool run = false;
  uint64_t at(size_t k) const { return each ? each[k] : run ? first + k : first; }
  Origin skip(size_t k) const {
    if (each) return Origin{each + k, 0, false};
    return run ? Origin{nullptr, first + k, true} : *this;
  }
};

// Text held for later with the input offset of each byte, and the lowest of those offsets
// (undecided_from asks it for every token; a whitespace run held for a long time made a scan
// of src quadratic).
struct Sourced {
  std::string text;
  std::vector<uint64_t> src;
  uint64_t low = std::numeric_limits<uint64_t>::max();  // of src; valid while src is not empty
  void append(std::string_view t, Origin o) {
    if (src.empty()) low = std::numeric_limits<uint64_t>::max();
    text.append(t);
    for (size_t k = 0; k < t.size(); ++k) {
      src.push_back(o.at(k));
      low = std::min(low, src.back());
    }
  }
  // Bytes [from, to) of this text.
  Sourced sub(size_t from, size_t to) const {
    Sourced out;
    out.text = text.substr(from, to - from);
    out.src.assign(src.begin() + static_cast<std::ptrdiff_t>(from), src.begin() + static_cast<std::ptrdiff_t>(to));
    if (!out.src.empty()) out.low = *std::min_element(out.src.begin(), out.src.end());
    return out;
  }
  uint64_t lowest() const { return src.empty() ? std::numeric_limits<uint64_t>::max() : low; }
  void clear() {
    text.clear();
    src.clear();
    low = std::numeric_limits<uint64_t>::max();
  }
  bool empty() const { return text.empty(); }
  Origin origin() const { return Origin{src.data(), 0, false}; }
};

struct OutputParser::State {
  ParserOptions options;
  ParserStats stats;
  std::vector<ParserEvent> out;
  std::string buf;  // input not yet consumed
  uint64_t base = 0;  // the input offset of buf[0]
  uint64_t cur = 0;   // the input offset of the text the current step reads
  Mode mode = Mode::kContent;
  uint64_t id_seed = 0;
  bool stop_matched = false;
  bool turn_ended = false;
  bool finished = false;

  // Content.
  bool content_started = false;  // visible content has begun
  bool segment_start = true;     // at the start of output or right after a reasoning block / call
  Sourced hold;                  // whitespace (and preamble junk) held at a segment start
  StopScanner stop;              // holds the content tail that may still become a stop string
  std::deque<uint64_t> stop_src;  // the input offsets of the bytes `stop` holds
  Sourced reasoning_prefix;      // preamble moved into the next reasoning block
  bool content_ends_ws = false;  // the last content emitted ends in whitespace
  bool turn_separator = false;   // a model header was dropped after content (decision 0024)
  // Reasoning.
  bool reasoning_has_text = false;
  bool reasoning_at_start = false;  // leading whitespace of the block is still skipped
  Sourced reasoning_ws;  // trailing whitespace held inside a reasoning block
  uint64_t channel_open_at = 0;  // the input offset of the last <|channel> read in content
  // The blank line before a later block's first text: reasoning_content's separation of the
  // blocks, not the block's own text (which reasoning_in_content writes without it).
  std::string reasoning_separator;
  bool label_continues_block = false;
  // Tool calls.
  bool header_explicit = false;
  bool json_call = false;  // the call being read is in the JSON form
  int n_calls = 0;
  ToolArgsConverter args;
  bool header_repaired = false;
  bool call_counted_repaired = false;  // the last call is in stats.tool_calls_repaired
  bool call_pending = false;  // the arguments' '}' came; its end event waits for what follows
  bool call_closed = false;   // kAfterToolCall right after the call's <tool_call|>
  // A JSON-form call whose arguments are a JSON string: the string's quote, its decoded text
  // not yet given to the converter, whether the object's '{' is still to come, and whether
  // the converter has seen the object's end (what follows in the string is dropped).
  char json_quote = 0;
  std::string json_decoded;
  bool json_before_object = false;
  bool json_args_done = false;

  // ---- emission ---------------------------------------------------------------------
  // The origin of a view: into the input being read (buf), else text the parser writes itself.
  Origin origin_of(std::string_view text) const {
    const char* b = buf.data();
    if (text.data() >= b && text.data() < b + buf.size()) {
      return Origin{nullptr, base + static_cast<uint64_t>(text.data() - b), true};
    }
    return written();
  }
  Origin written() const { return Origin{nullptr, cur, false}; }

  // Content text and where each byte came from (ParserEvent::sources).
  void push_content(std::string_view text, Origin o) {
    if (text.empty()) return;
    if (out.empty() || out.back().kind != ParserEventKind::kContent) {
      ParserEvent e;
      e.kind = ParserEventKind::kContent;
      out.push_back(std::move(e));
    }
    ParserEvent& e = out.back();
    e.text.append(text);
    for (size_t k = 0; k < text.size(); ++k) e.sources.push_back(o.at(k));
  }

  // Content released by the stop-string filter: the oldest bytes it held, whose origins
  // stop_src holds in the same order.
  void push_released(std::string_view text) {
    if (text.empty()) return;
    content_ends_ws = is_ws(text.back());
    std::vector<uint64_t> src(stop_src.begin(), stop_src.begin() + static_cast<std::ptrdiff_t>(text.size()));
    stop_src.erase(stop_src.begin(), stop_src.begin() + static_cast<std::ptrdiff_t>(text.size()));
    push_content(text, Origin{src.data(), 0, false});
  }

  // Reasoning text, joined to a reasoning event right before it.
  void push_reasoning(std::string_view text) {
    if (text.empty()) return;
    if (!out.empty() && out.back().kind == ParserEventKind::kReasoning) {
      out.back().text.append(text);
      return;
    }
    ParserEvent e;
    e.kind = ParserEventKind::kReasoning;
    e.text = std::string(text);
    out.push_back(std::move(e));
  }

  // A reasoning block's markup or text written into the content (reasoning_in_content): not
  // visible content for the rules that read it (stop strings, the whitespace before it), so
  // that the answer around the blocks is the one without the option.
  bool reasoning_in_content() const { return options.parse_reasoning && options.reasoning_in_content; }
  void push_block_text(std::string_view text, Origin o) { push_content(text, o); }

  // Content after the leading-whitespace rule, through the stop-string filter: a stop string
  // ends the output at the first position where one ends (the longest on a tie); text that may
  // still begin one is held, armed or not (ParserOptions::stop_armed), so that one found after
  // arming is never shown in part.
  void emit_visible(std::string_view text, Origin o) {
    if (text.empty() || mode == Mode::kStopped) return;
    for (size_t k = 0; k < text.size(); ++k) stop_src.push_back(o.at(k));
    std::string released;
    const std::optional<size_t> hit = stop.feed(text, options.stop_armed, &released);
    push_released(released);
    if (!hit) {
      while (stop_src.size() > stop.held_bytes()) stop_src.pop_front();  // (they agree)
      return;
    }
    stop_src.clear();  // the stop string and what it held are not content
    ParserEvent e;
    e.kind = ParserEventKind::kStop;
    e.text = stop.stops()[*hit];
    out.push_back(std::move(e));
    mode = Mode::kStopped;
    stop_matched = true;
  }

  void flush_stop_hold() {
    push_released(stop.flush());
    stop_src.clear();
  }

  // Plain content text (no markup inside).
  void content_text(std::string_view text) { content_text(text, origin_of(text)); }
  void content_text(std::string_view text, Origin o) {
    size_t i = 0;
    if (!content_started || segment_start) {
      // Hold what may still be separation between segments (or junk before a first thought).
      while (i < text.size() && (content_started ? is_ws(text[i]) : is_preamble_char(text[i]))) ++i;
      hold.append(text.substr(0, i), o);
      if (i == text.size()) {
        if (!content_started && hold.text.size() > kMaxPreambleBytes) start_content();
        return;
      }
      start_content();
    }
    emit_visible(text.substr(i), o.skip(i));
  }

  // Visible content begins: the held text is released (minus leading whitespace at the
  // very start of the output).
  void start_content() {
    const Sourced h = std::move(hold);
    hold.clear();
    size_t skip = 0;
    if (!content_started) {
      while (skip < h.text.size() && is_ws(h.text[skip])) ++skip;
    }
    std::string_view released = std::string_view(h.text).substr(skip);
    Origin o = h.origin().skip(skip);
    // The text on either side of a dropped "<|turn>model\n" is two paragraphs, unless
    // whitespace already separates them.
    if (turn_separator && content_started && released.empty() && !content_ends_ws) {
      released = "\n\n";
      o = written();
    }
    turn_separator = false;
    content_started = true;
    segment_start = false;
    emit_visible(released, o);
  }

  // Markup interrupts content: a partial stop match cannot continue across it; held
  // whitespace at a segment start is separation and is dropped (junk before the first
  // content is kept for the next reasoning block or the end).
  void interrupt_content() {
    flush_stop_hold();
    turn_separator = false;
    if (content_started) hold.clear();
  }

  void reasoning_text(std::string_view text) { reasoning_text(text, origin_of(text)); }
  void reasoning_text(std::string_view text, Origin o) {
    if (!options.parse_reasoning) {
      content_text(text, o);
      return;
    }
    if (reasoning_at_start) {
      size_t i = 0;
      while (i < text.size() && is_ws(text[i])) ++i;  // the label's newline and leading blanks
      text.remove_prefix(i);
      o = o.skip(i);
      if (text.empty()) return;
      reasoning_at_start = false;
    }
    size_t body_end = text.size();
    while (body_end > 0 && is_ws(text[body_end - 1])) --body_end;
    if (body_end == 0) {
      reasoning_ws.append(text, o);
      return;
    }
    Sourced piece = std::move(reasoning_ws);
    piece.append(text.substr(0, body_end), o);
    reasoning_ws.clear();
    reasoning_ws.append(text.substr(body_end), o.skip(body_end));
    reasoning_has_text = true;
    if (reasoning_in_content()) push_block_text(piece.text, piece.origin());
    push_reasoning(reasoning_separator + piece.text);
    reasoning_separator.clear();
  }

  // `opened_in_output`: the output wrote the block's <|channel> (not the prompt).
  void begin_reasoning(bool opened_in_output) {
    mode = Mode::kReasoning;
    reasoning_has_text = false;
    reasoning_at_start = true;
    reasoning_ws.clear();
    reasoning_separator.clear();
    // A later block's text is a new paragraph of reasoning_content.
    if (stats.reasoning_blocks > stats.empty_reasoning_blocks) reasoning_separator.assign(2, '\n');
    ++stats.reasoning_blocks;
    if (opened_in_output && reasoning_in_content()) {
      push_block_text(kReasoningOpenMarkup, Origin{nullptr, channel_open_at, false});
    }
    if (!reasoning_prefix.empty()) {
      const Sourced p = std::move(reasoning_prefix);
      reasoning_prefix.clear();
      reasoning_text(p.text, p.origin());
      reasoning_ws.clear();
      reasoning_ws.append("\n", written());  // separates the preamble from the thought, if one follows
      reasoning_at_start = true;
    }
  }

  // `closed_in_output`: the output wrote the block's <channel|> (not a call, a turn or the end
  // of the output ending it).
  void end_reasoning(bool closed_in_output) {
    if (!reasoning_has_text) ++stats.empty_reasoning_blocks;
    reasoning_ws.clear();
    reasoning_separator.clear();
    if (closed_in_output && reasoning_in_content()) push_block_text(markup::kChannelClose, written());
    mode = Mode::kContent;
    segment_start = true;
  }

  void begin_call(const std::string& name) {
    const int index = n_calls++;
    ParserEvent e;
    e.kind = ParserEventKind::kToolCallBegin;
    e.tool_index = index;
    e.tool_name = name;
    static constexpr char kAlphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    e.tool_id = "call_";
    // 24 base-62 digits, 10 from each fresh 64-bit draw (62^10 < 2^64: every digit is random;
    // taking 12 from one draw left its last ones near zero, the same in every id).
    uint64_t state = id_seed ^ (static_cast<uint64_t>(index) * 0x9e3779b97f4a7c15ULL);
    uint64_t x = 0;
    for (int k = 0; k < 24; ++k) {
      if (k % 10 == 0) x = splitmix64(state += 0x632be59bd9b4e019ULL);
      e.tool_id.push_back(kAlphabet[x % 62]);
      x /= 62;
    }
    out.push_back(std::move(e));
    ++stats.tool_calls;
    args = ToolArgsConverter();
    mode = Mode::kToolArgs;
    args_json("{");
  }

  void args_json(std::string_view json) {
    if (json.empty()) return;
    if (!out.empty() && out.back().kind == ParserEventKind::kToolCallArgs) {
      out.back().text.append(json);
      return;
    }
    ParserEvent e;
    e.kind = ParserEventKind::kToolCallArgs;
    e.tool_index = n_calls - 1;
    e.text = std::string(json);
    out.push_back(std::move(e));
  }

  void end_call() {
    call_counted_repaired = args.repaired() || header_repaired;
    if (call_counted_repaired) ++stats.tool_calls_repaired;
    ParserEvent e;
    e.kind = ParserEventKind::kToolCallEnd;
    e.tool_index = n_calls - 1;
    out.push_back(std::move(e));
    mode = Mode::kAfterToolCall;
  }

  // ---- the state machine ----------------------------------------------------------------
  // Consumes a prefix of `s` in the current mode; returns bytes consumed, or 0 when it
  // needs more input (only when !final). A mode change without consuming returns 0 too but
  // sets *progress.
  size_t step(std::string_view s, bool final, bool* progress) {
    switch (mode) {
      case Mode::kStopped:
        return s.size();
      case Mode::kContent:
        return step_content(s, final, progress);
      case Mode::kTurnHeader:
        return step_turn_header(s, final, progress);
      case Mode::kChannelLabel:
        return step_channel_label(s, final, progress);
      case Mode::kReasoning:
        return step_reasoning(s, final);
      case Mode::kToolHeader:
        return step_tool_header(s, final, progress);
      case Mode::kToolArgs:
        return step_tool_args(s, final, progress);
      case Mode::kJsonArgsString:
        return step_json_args_string(s, final, progress);
      case Mode::kJsonEnvelope:
        return step_json_envelope(s, final, progress);
      case Mode::kAfterToolCall:
        return step_after_call(s, final, progress);
    }
    return 0;
  }

  size_t step_content(std::string_view s, bool final, bool* progress) {
    const char c = s[0];
    if (c == '<') {
      Mark mark = Mark::kQuote;
      const MarkupMatch m = match_mark(s, &mark);
      if (m == MarkupMatch::kPartial && !final) return 0;
      if (m == MarkupMatch::kFull) return on_content_mark(mark, progress);
      content_text(s.substr(0, 1));
      return 1;
    }
    if (segment_start && options.parse_tool_calls && c == 'c' &&
        (!content_started ? hold.text.find_first_not_of(" \t\r\n") == std::string::npos : true)) {
      // Bug-case 7: "call:NAME{" right after a reasoning block (or at the start) without
      // the <|tool_call> opener.
      const MarkupMatch m = match_markup(s, "call:");
      if (m == MarkupMatch::kPartial && !final) return 0;
      if (m == MarkupMatch::kFull) {
        interrupt_content();
        if (!content_started) hold.clear();
        header_explicit = false;
        mode = Mode::kToolHeader;
        *progress = true;
        return 0;
      }
    }
    // A run of plain text up to the next '<' (or a single 'c' at a segment start, so that
    // the check above sees every candidate).
    size_t n = 1;
    while (n < s.size() && s[n] != '<') {
      if (segment_start && s[n] == 'c') break;
      ++n;
    }
    content_text(s.substr(0, n));
    return n;
  }

  size_t on_content_mark(Mark mark, bool* progress) {
    const size_t len = mark_length(mark);
    switch (mark) {
      case Mark::kChannelOpen:
        interrupt_content();
        channel_open_at = cur;
        if (!content_started && hold.text.find_first_not_of(" \t\r\n") != std::string::npos) {
          // Bug-case 18: junk before the first thought is reasoning, not content.
          if (options.parse_reasoning) {
            size_t from = 0, to = hold.text.size();
            while (from < to && is_ws(hold.text[from])) ++from;
            while (to > from && is_ws(hold.text[to - 1])) --to;
            reasoning_prefix = hold.sub(from, to);
            hold.clear();
          } else {
            start_content();
          }
        } else if (!content_started) {
          hold.clear();
        }
        label_continues_block = false;
        mode = Mode::kChannelLabel;
        return len;
      case Mark::kChannelClose:
        // A close without an open (the opener was in the prompt, or lost): a boundary.
        interrupt_content();
        ++stats.markup_dropped;
        segment_start = true;
        return len;
      case Mark::kToolCallOpen:
        if (!options.parse_tool_calls) {
          ++stats.markup_dropped;  // bug-case 13: the call's text stays, its markup goes
          return len;
        }
        interrupt_content();
        if (!content_started && hold.text.find_first_not_of(" \t\r\n") == std::string::npos) hold.clear();
        header_explicit = true;
        mode = Mode::kToolHeader;
        return len;
      case Mark::kTurnOpen:
        interrupt_content();
        ++stats.markup_dropped;
        mode = Mode::kTurnHeader;
        return len;
      case Mark::kQuote:
        content_text("\"");
        return len;
      case Mark::kToolCallClose:
      case Mark::kTurnClose:
      case Mark::kToolResponseOpen:
      case Mark::kToolResponseClose:
      case Mark::kThink:
      case Mark::kToolOpen:
      case Mark::kToolClose:
        interrupt_content();
        ++stats.markup_dropped;
        *progress = true;
        return len;
    }
    return len;
  }

  // After <|turn>: the model's own header ("model\n", where the prompt left it out or the
  // model repeats it) is dropped and the output goes on. Any other role, or no role, is a
  // turn that is not the model's (it has begun to write the user's next message): the
  // model's turn is over, and what follows is not part of its answer.
  size_t step_turn_header(std::string_view s, bool final, bool* progress) {
    size_t i = 0;
    while (i < s.size() && i < kMaxRoleBytes && is_role_char(s[i])) ++i;
    if (i == s.size() && i < kMaxRoleBytes && !final) return 0;
    const std::string_view word = s.substr(0, i);
    if (std::find(kModelRoleWords.begin(), kModelRoleWords.end(), word) != kModelRoleWords.end()) {
      if (i < s.size() && s[i] == '\n') ++i;
      mode = Mode::kContent;
      segment_start = true;
      turn_separator = content_started;
      return i;
    }
    conclude();
    if (mode != Mode::kStopped) {  // releasing held text may itself have matched a stop string
      ParserEvent e;
      e.kind = ParserEventKind::kEndOfTurn;
      out.push_back(std::move(e));
      mode = Mode::kStopped;
      turn_ended = true;
    }
    *progress = true;
    return 0;
  }

  size_t step_channel_label(std::string_view s, bool final, bool* progress) {
    MarkupMatch m = match_markup(s, markup::kThoughtLabel);
    if (m == MarkupMatch::kPartial && !final) return 0;
    if (m == MarkupMatch::kFull) {
      // The label is a word of its own: "thoughtful" is reasoning text, not the label.
      const size_t n = markup::kThoughtLabel.size();
      if (s.size() == n && !final) return 0;
      if (s.size() > n) {
        const char c = s[n];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') m = MarkupMatch::kNone;
      }
    }
    if (!label_continues_block) begin_reasoning(/*opened_in_output=*/true);
    mode = Mode::kReasoning;
    if (m == MarkupMatch::kFull) return markup::kThoughtLabel.size();
    *progress = true;
    return 0;
  }

  size_t step_reasoning(std::string_view s, bool final) {
    if (s[0] == '<') {
      Mark mark = Mark::kQuote;
      const MarkupMatch m = match_mark(s, &mark);
      if (m == MarkupMatch::kPartial && !final) return 0;
      if (m == MarkupMatch::kFull) {
        const size_t len = mark_length(mark);
        switch (mark) {
          case Mark::kChannelClose:
            end_reasoning(/*closed_in_output=*/true);
            return len;
          case Mark::kChannelOpen:  // a nested opener: drop it and its label
            label_continues_block = true;
            mode = Mode::kChannelLabel;
            return len;
          case Mark::kToolCallOpen:
            if (options.parse_tool_calls) {  // a call before the thought was closed
              end_reasoning(/*closed_in_output=*/false);
              header_explicit = true;
              mode = Mode::kToolHeader;
            } else {
              ++stats.markup_dropped;
            }
            return len;
          case Mark::kQuote:
            reasoning_text("\"");
            return len;
          case Mark::kTurnOpen:  // a turn boundary closes the thought, then as in content
            end_reasoning(/*closed_in_output=*/false);
            ++stats.markup_dropped;
            mode = Mode::kTurnHeader;
            return len;
          case Mark::kToolCallClose:
          case Mark::kTurnClose:
          case Mark::kToolResponseOpen:
          case Mark::kToolResponseClose:
          case Mark::kThink:
          case Mark::kToolOpen:
          case Mark::kToolClose:
            ++stats.markup_dropped;
            return len;
        }
      }
      reasoning_text(s.substr(0, 1));
      return 1;
    }
    size_t n = 1;
    while (n < s.size() && s[n] != '<') ++n;
    reasoning_text(s.substr(0, n));
    return n;
  }

  // A namespaced name ("default_api:get_weather", "functions.api:get_weather") is the
  // declared tool that the part after one of its colons names, the longest such part first.
  // Declared names never hold a colon (OpenAI names are [a-zA-Z0-9_-]); without a declared
  // match, or without a list, the name stays as the model wrote it.
  std::string declared_name(const std::string& name) const {
    const auto& names = options.tool_names;
    const auto declared = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
    if (names.empty() || declared(name)) return name;
    for (size_t p = name.find(':'); p != std::string::npos; p = name.find(':', p + 1)) {
      if (declared(std::string_view(name).substr(p + 1))) return name.substr(p + 1);
    }
    return name;
  }

  size_t step_tool_header(std::string_view s, bool final, bool* progress) {
    const Header h = scan_header(s, header_explicit, final);
    switch (h.kind) {
      case Header::Kind::kPartial:
        return 0;
      case Header::Kind::kOk: {
        header_repaired = h.repaired;
        json_call = h.json_form;
        const std::string name = declared_name(h.name);
        if (name != h.name) header_repaired = true;
        begin_call(name);
        if (h.args_string_quote != 0) {
          mode = Mode::kJsonArgsString;
          json_quote = h.args_string_quote;
          json_decoded.clear();
          json_before_object = true;
          json_args_done = false;
        }
        return h.length;
      }
      case Header::Kind::kFail:
        break;
    }
    // Not a call after all (bug-case 8): what was scanned is content; no markup is kept.
    ++stats.tool_calls_unparsed;
    mode = Mode::kContent;
    segment_start = false;
    const bool forced_first = options.forced_call && n_calls == 0;
    if (final && (forced_first || (options.calls_held && header_explicit)) &&
        scan_header(s, header_explicit, /*final=*/false).kind == Header::Kind::kPartial) {
      // A call that the prompt forced or opened, or that the output's constraint held to a
      // declared function's opener, cut by the output's end before its header was complete
      // ("<|tool_call>ca", "<|tool_call>call:get_w"): no call, and no content. Its text is no
      // answer of the model's (decision 0067; before, a cut inside the `call` keyword, which a
      // prefill ending in the opener leaves to the model, came out as content).
      *progress = true;
      return s.size();
    }
    if (final && forced_first) {
      // The prompt's forced opener, cut before its name was complete: no call, and no content.
      if (h.length == 0) *progress = true;
      return h.length;
    }
    if (h.length > 0) {
      start_content();
      emit_visible(s.substr(0, h.length), origin_of(s));
      return h.length;
    }
    *progress = true;
    return 0;
  }

  size_t step_tool_args(std::string_view s, bool final, bool* progress) {
    size_t consumed = 0;
    std::string json;
    const ToolArgsConverter::Step st = args.step(s, final, &consumed, &json);
    args_json(json);
    switch (st) {
      case ToolArgsConverter::Step::kConsumed:
        *progress = true;
        return consumed;
      case ToolArgsConverter::Step::kNeedMore:
        return 0;
      case ToolArgsConverter::Step::kDone:
        if (json_call) {
          std::string tail;
          args.close(&tail);
          args_json(tail);
          end_call();
          mode = Mode::kJsonEnvelope;
        } else {
          call_pending = true;  // step_after_call decides whether the '}' was the last
          mode = Mode::kAfterToolCall;
        }
        return consumed;
      case ToolArgsConverter::Step::kTerminated: {
        std::string tail;
        args.close(&tail);
        args_json(tail);
        end_call();
        *progress = true;
        return consumed;
      }
    }
    return consumed;
  }

  // The decoded text of a JSON-string argument goes to the converter (after the object's
  // opening '{'); `final` once the string has ended.
  void pump_json_args(bool final) {
    size_t pos = 0;
    if (json_before_object) {
      while (pos < json_decoded.size() && is_ws(json_decoded[pos])) ++pos;
      if (pos == json_decoded.size() && !final) {
        json_decoded.clear();
        return;
      }
      if (pos < json_decoded.size() && json_decoded[pos] == '{') ++pos;
      json_before_object = false;
    }
    while (!json_args_done && pos < json_decoded.size()) {
      size_t consumed = 0;
      std::string json;
      const ToolArgsConverter::Step st = args.step(std::string_view(json_decoded).substr(pos), final, &consumed, &json);
      args_json(json);
      pos += consumed;
      if (st == ToolArgsConverter::Step::kNeedMore) break;
      if (st == ToolArgsConverter::Step::kDone || st == ToolArgsConverter::Step::kTerminated) json_args_done = true;
    }
    json_decoded.erase(0, json_args_done ? json_decoded.size() : pos);
  }

  void end_json_args_string() {
    pump_json_args(/*final=*/true);
    std::string tail;
    args.close(&tail);
    args_json(tail);
    end_call();
  }

  // Inside the JSON string that holds a JSON-form call's arguments: its escapes are decoded
  // and the text is converted as it arrives. Markup that ends a call ends the string too.
  size_t step_json_args_string(std::string_view s, bool final, bool* progress) {
    size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == json_quote) {
        end_json_args_string();
        mode = Mode::kJsonEnvelope;
        *progress = true;
        return i + 1;
      }
      if (c == '\\') {
        size_t n = 0;
        if (decode_escape(s.substr(i), final, &n, &json_decoded) == EscapeStep::kNeedMore) break;
        i += n;
        continue;
      }
      if (c == '<') {
        const MarkupMatch m = match_call_terminator(s.substr(i));
        if (m == MarkupMatch::kPartial && !final) break;
        if (m == MarkupMatch::kFull) {
          end_json_args_string();
          *progress = true;
          return i;
        }
      }
      json_decoded.push_back(c);
      ++i;
    }
    pump_json_args(/*final=*/false);
    if (i > 0) *progress = true;
    return i;
  }

  // A JSON-form call's object after its arguments: its closing '}' is dropped, and so are
  // further members ("id": ...) when the object closes within kMaxHeaderBytes; anything else
  // is left to what follows a call.
  size_t step_json_envelope(std::string_view s, bool final, bool* progress) {
    size_t i = 0;
    while (i < s.size() && is_ws(s[i])) ++i;
    if (i == s.size() && !final) return 0;
    mode = Mode::kAfterToolCall;
    *progress = true;
    if (i == s.size()) return i;
    if (s[i] == '}') return i + 1;
    if (s[i] != ',') return i;
    int depth = 1;
    char quote = 0;
    for (size_t j = i; j < s.size() && j < kMaxHeaderBytes; ++j) {
      const char c = s[j];
      if (quote != 0) {
        if (c == '\\') {
          ++j;
        } else if (c == quote) {
          quote = 0;
        }
        continue;
      }
      if (c == '<') {
        const MarkupMatch m = match_call_terminator(s.substr(j));
        if (m == MarkupMatch::kPartial && !final) break;
        if (m == MarkupMatch::kFull) return j;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return j + 1;
      }
    }
    if (!final && s.size() < kMaxHeaderBytes) {  // the object may still close
      mode = Mode::kJsonEnvelope;
      *progress = false;
      return 0;
    }
    return i;  // not the object's members: what follows a call
  }

  // Whether `s` begins (after whitespace) like an argument member: a quoted key or a bare
  // one followed by ':' or '='.
  enum class Lookahead { kYes, kNo, kNeedMore };
  static Lookahead member_follows(std::string_view s, bool final) {
    const Lookahead cut = final ? Lookahead::kNo : Lookahead::kNeedMore;
    size_t i = 0;
    while (i < s.size() && is_ws(s[i])) ++i;
    if (i == s.size()) return cut;
    if (s[i] == '"' || s[i] == '\'') return Lookahead::kYes;
    if (s[i] == '<') {
      const MarkupMatch m = match_markup(s.substr(i), markup::kQuote);
      return m == MarkupMatch::kFull ? Lookahead::kYes : m == MarkupMatch::kPartial ? cut : Lookahead::kNo;
    }
    const size_t key_start = i;
    while (i < s.size() && (is_name_char(s[i]) || s[i] == '$') && i - key_start < kMaxKeyLookahead) ++i;
    if (i == key_start) return Lookahead::kNo;
    while (i < s.size() && is_ws(s[i])) ++i;
    if (i == s.size()) return cut;
    return s[i] == ':' || s[i] == '=' ? Lookahead::kYes : Lookahead::kNo;
  }

  // The arguments closed; the call ends once what follows shows that '}' was its last.
  void end_pending_call() {
    if (!call_pending) return;
    call_pending = false;
    std::string tail;
    args.close(&tail);
    args_json(tail);
    end_call();
  }

  // Whether `s` begins (after whitespace) with another call: <|tool_call>, "call:", or with
  // `json` (inside a block of JSON-form calls) another object. *skip: the whitespace.
  static Lookahead call_follows(std::string_view s, bool final, bool json, size_t* skip) {
    const Lookahead cut = final ? Lookahead::kNo : Lookahead::kNeedMore;
    size_t i = 0;
    while (i < s.size() && is_ws(s[i])) ++i;
    *skip = i;
    if (i == s.size()) return cut;
    if (json && s[i] == '{') return Lookahead::kYes;
    for (const std::string_view opener : {markup::kToolCallOpen, std::string_view("call:")}) {
      const MarkupMatch m = match_markup(s.substr(i), opener);
      if (m == MarkupMatch::kFull) return Lookahead::kYes;
      if (m == MarkupMatch::kPartial) return cut;
    }
    return Lookahead::kNo;
  }

  size_t step_after_call(std::string_view s, bool final, bool* progress) {
    if (call_closed) {
      // Right after <tool_call|>: a ',' before the next call is a list separator.
      size_t skip = 0;
      const Lookahead r = s[0] == ',' ? call_follows(s.substr(1), final, false, &skip) : Lookahead::kNo;
      if (r == Lookahead::kNeedMore) return 0;
      call_closed = false;
      mode = Mode::kContent;
      segment_start = true;
      if (r == Lookahead::kYes) return 1 + skip;
      *progress = true;
      return 0;
    }
    size_t i = 0;
    // Closers after the complete arguments ("{city:<|"|>Paris<|"|>}}") are the call's own
    // miscounted brackets, never content: they are dropped, with the whitespace around them.
    while (i < s.size() && (is_ws(s[i]) || s[i] == '}' || s[i] == ']')) {
      if (s[i] != '}' && s[i] != ']') {
        ++i;
        continue;
      }
      if (call_pending) {
        header_repaired = true;  // counted when the call ends
      } else if (!call_counted_repaired) {
        ++stats.tool_calls_repaired;
        call_counted_repaired = true;
      }
      ++i;
    }
    if (i == s.size()) {
      if (!final) return 0;
      end_pending_call();
      mode = Mode::kContent;
      segment_start = true;
      return i;
    }
    // A ',' and another member after the arguments' close: that '}' was a miscount (a
    // nested object closed twice) and the call goes on. Only after <|tool_call>, where
    // <tool_call|> is still to come; a call without the opener may be followed by prose.
    if (call_pending && header_explicit && s[i] == ',') {
      const Lookahead r = member_follows(s.substr(i + 1), final);
      if (r == Lookahead::kNeedMore) return 0;
      if (r == Lookahead::kYes) {
        args.reopen();
        call_pending = false;
        mode = Mode::kToolArgs;
        return i + 1;
      }
    }
    end_pending_call();
    if (s[i] == ',') {  // a list separator before the next call
      size_t skip = 0;
      const Lookahead r = call_follows(s.substr(i + 1), final, json_call, &skip);
      if (r == Lookahead::kNeedMore) return 0;
      if (r == Lookahead::kYes) {
        const bool json_next = json_call && s[i + 1 + skip] == '{';
        mode = json_next ? Mode::kToolHeader : Mode::kContent;
        header_explicit = json_next;  // the block's <|tool_call> opens this one too
        segment_start = true;
        *progress = true;
        return i + 1 + skip;
      }
    }
    const MarkupMatch m = match_markup(s.substr(i), markup::kToolCallClose);
    if (m == MarkupMatch::kPartial && !final) return 0;
    if (m == MarkupMatch::kFull) {
      call_closed = true;
      return i + markup::kToolCallClose.size();
    }
    mode = Mode::kContent;
    segment_start = true;
    *progress = true;
    return i;
  }

  void run(bool final) {
    size_t pos = 0;
    while (pos < buf.size() && mode != Mode::kStopped) {
      bool progress = false;
      cur = base + pos;
      const size_t n = step(std::string_view(buf).substr(pos), final, &progress);
      pos += n;
      if (n == 0 && !progress) break;  // needs more input
    }
    cur = base + pos;
    if (mode == Mode::kStopped) {
      base += buf.size();
      buf.clear();
    } else {
      base += pos;
      buf.erase(0, pos);
    }
  }

  void finish() {
    run(/*final=*/true);
    conclude();
    finished = true;
  }

  // The output ends here: open blocks and calls are closed, held text is decided.
  void conclude() {
    switch (mode) {
      case Mode::kAfterToolCall:
        end_pending_call();
        break;
      case Mode::kContent:
      case Mode::kTurnHeader:
      case Mode::kToolHeader:
        break;
      case Mode::kChannelLabel:  // the output ended right after <|channel>
        if (!label_continues_block) begin_reasoning(/*opened_in_output=*/true);
        end_reasoning(/*closed_in_output=*/false);
        break;
      case Mode::kReasoning:
        end_reasoning(/*closed_in_output=*/false);
        break;
      case Mode::kToolArgs: {
        std::string tail;
        args.close(&tail);
        args_json(tail);
        end_call();
        break;
      }
      case Mode::kJsonArgsString:
        end_json_args_string();
        break;
      case Mode::kJsonEnvelope:
        break;
      case Mode::kStopped:
        return;
    }
    // Junk held before any content that no reasoning block claimed is content after all.
    if (!content_started && hold.text.find_first_not_of(" \t\r\n") != std::string::npos) start_content();
    hold.clear();
    if (!reasoning_prefix.empty()) {
      content_started = false;
      hold = std::move(reasoning_prefix);
      reasoning_prefix.clear();
      start_content();
    }
    flush_stop_hold();
  }
};

OutputParser::OutputParser(ParserOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
  state_->stop = StopScanner(state_->options.stop);
  state_->id_seed = state_->options.tool_call_id_seed;
  if (state_->id_seed == 0) {
    std::random_device rd;
    state_->id_seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  if (state_->options.continues_reasoning && state_->options.reasoning_label_pending) {
    state_->begin_reasoning(/*opened_in_output=*/false);
    state_->label_continues_block = true;  // the label, if the output writes it, is this block's
    state_->mode = Mode::kChannelLabel;
  } else if (state_->options.continues_reasoning) {
    state_->begin_reasoning(/*opened_in_output=*/false);
    state_->reasoning_at_start = false;  // no label or newline of its own to skip
    state_->reasoning_has_text = true;   // the block has the prompt's text
  } else if (state_->options.starts_in_reasoning) {
    state_->begin_reasoning(/*opened_in_output=*/false);
  } else if (state_->options.continues_content) {
    state_->content_started = true;
  }
}
OutputParser::~OutputParser() = default;
OutputParser::OutputParser(OutputParser&&) noexcept = default;
OutputParser& OutputParser::operator=(OutputParser&&) noexcept = default;

std::vector<ParserEvent> OutputParser::feed(std::string_view text) {
  State& st = *state_;
  if (st.mode != Mode::kStopped && !st.finished) {
    st.buf.append(text);
    st.run(/*final=*/false);
  }
  return std::exchange(st.out, {});
}

std::vector<ParserEvent> OutputParser::finish() {
  State& st = *state_;
  if (st.mode != Mode::kStopped && !st.finished) st.finish();
  return std::exchange(st.out, {});
}

bool OutputParser::in_reasoning() const {
  return state_->mode == Mode::kReasoning || state_->mode == Mode::kChannelLabel;
}
void OutputParser::arm_stop_strings() { state_->options.stop_armed = true; }
bool OutputParser::stopped() const { return state_->stop_matched; }
uint64_t OutputParser::undecided_from() const {
  const State& st = *state_;
  if (st.mode == Mode::kStopped || st.finished) return std::numeric_limits<uint64_t>::max();
  uint64_t at = st.base;  // the first byte not yet read
  for (const Sourced* held : {&st.hold, &st.reasoning_ws, &st.reasoning_prefix}) at = std::min(at, held->lowest());
  // (stop_src holds at most the bytes that may still begin a stop string: a few.)
  if (!st.stop_src.empty()) at = std::min(at, *std::min_element(st.stop_src.begin(), st.stop_src.end()));
  if (st.mode == Mode::kChannelLabel) at = std::min(at, st.channel_open_at);  // the block's opener is still to come
  return at;
}
bool OutputParser::turn_ended() const { return state_->turn_ended; }
const ParserStats& OutputParser::stats() const { return state_->stats; }

}  // namespace gs::text
