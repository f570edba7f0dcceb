// ToolArgsConverter: a character-level state machine from Gemma 4 argument syntax to JSON.
#include "text/tool_args.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <system_error>

#include "text/chat_format.h"
#include "text/markup_match.h"
#include "text/utf8.h"

namespace gs::text {
namespace {

// Markup that ends a call wherever it appears (markup::kCallTerminators).
constexpr const auto& kHardTerminators = markup::kCallTerminators;
// Markup that also ends a call outside strings.
constexpr std::array<std::string_view, 2> kSoftTerminators = {markup::kChannelOpen, markup::kChannelClose};

// kFull when a terminator starts `s`; kPartial when `s` may be the start of one (or of the
// quote token, when `with_quote`).
MarkupMatch match_terminator(std::string_view s, bool outside_string, bool with_quote) {
  MarkupMatch best = MarkupMatch::kNone;
  const auto consider = [&](std::string_view m) {
    const MarkupMatch r = match_markup(s, m);
    if (r == MarkupMatch::kFull) best = MarkupMatch::kFull;
    if (r == MarkupMatch::kPartial && best == MarkupMatch::kNone) best = MarkupMatch::kPartial;
  };
  for (const auto m : kHardTerminators) consider(m);
  if (outside_string) {
    for (const auto m : kSoftTerminators) consider(m);
  }
  if (with_quote && best != MarkupMatch::kFull && match_markup(s, markup::kQuote) == MarkupMatch::kPartial) {
    best = MarkupMatch::kPartial;
  }
  return best;
}

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim_ws(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// RFC 8259 number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view s) {
  size_t i = 0;
  const auto digit = [&](size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  if (i < s.size() && s[i] == '-') ++i;
  if (!digit(i)) return false;
  if (s[i] == '0') {
    ++i;
  } else {
    while (digit(i)) ++i;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digit(i)) return false;
    while (digit(i)) ++i;
  }
  return i == s.size();
}

// True when a JSON number (is_json_number) lies beyond a double's range, as 1e400 does. JSON
// readers hold numbers as doubles: nlohmann refuses such a number (so this server's own request
// parser refused a call it had answered, replayed in the history, and the Messages API's
// tool_use input lost every argument), JavaScript and Python read it as an infinity. One too
// small for a double (1e-400) is read as 0 by all of them and is not beyond the range here.
bool beyond_double_range(std::string_view s) {
  double v = 0;
  if (std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc::result_out_of_range) return false;
  // Out of range is an overflow or an underflow: the power of ten of the leading nonzero digit
  // tells them apart (from_chars fails only far from 10^0, above 1.7e308 or below 4.9e-324).
  size_t i = s[0] == '-' ? 1 : 0;
  int64_t int_digits = 0;
  int64_t lead = -1;  // index of the first nonzero mantissa digit, integer and fraction digits in turn
  int64_t k = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++k, ++int_digits) {
    if (lead < 0 && s[i] != '0') lead = k;
  }
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++k) {
      if (lead < 0 && s[i] != '0') lead = k;
    }
  }
  if (lead < 0) return false;  // zero
  int64_t exp10 = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    const bool negative = i < s.size() && s[i] == '-';
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    for (; i < s.size(); ++i) exp10 = std::min<int64_t>(exp10 * 10 + (s[i] - '0'), int64_t{1} << 40);
    if (negative) exp10 = -exp10;
  }
  return int_digits - 1 - lead + exp10 > 0;
}

bool is_scalar_literal(std::string_view t) {
  return is_json_number(t) || t == "true" || t == "false" || t == "null" || t == "True" || t == "False" ||
         t == "None" || (t.size() > 1 && t[0] == '+' && t[1] != '-' && is_json_number(t.substr(1)));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// \uXXXX at s[0..6) -> code unit, or -1.
int parse_u_escape(std::string_view s) {
  if (s.size() < 6 || s[0] != '\\' || s[1] != 'u') return -1;
  int v = 0;
  for (size_t k = 2; k < 6; ++k) {
    const int h = hex_value(s[k]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

}  // namespace

void append_json_escaped(std::string_view s, std::string* out) {
  for (const char c : s) {
    const auto u = static_cast<uint8_t>(c);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", u);
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
}

EscapeStep decode_escape(std::string_view s, bool final, size_t* consumed, std::string* out) {
  if (s.size() < 2) {
    if (!final) return EscapeStep::kNeedMore;
    out->push_back('\\');
    *consumed = 1;
    return EscapeStep::kDecoded;
  }
  const char e = s[1];
  size_t n = 2;
  switch (e) {
    case 'n': out->push_back('\n'); break;
    case 't': out->push_back('\t'); break;
    case 'r': out->push_back('\r'); break;
    case 'b': out->push_back('\b'); break;
    case 'f': out->push_back('\f'); break;
    case 'u': {
      if (s.size() < 6 && !final) return EscapeStep::kNeedMore;
      const int u = parse_u_escape(s);
      if (u < 0) {
        out->append("\\u");  // not an escape after all: the backslash and the letter
        break;
      }
      n = 6;
      uint32_t cp = static_cast<uint32_t>(u);
      if (u >= 0xD800 && u <= 0xDBFF) {
        if (s.size() < 12 && !final) return EscapeStep::kNeedMore;
        const int lo = parse_u_escape(s.substr(6));
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          cp = 0x10000 + ((static_cast<uint32_t>(u) - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
          n = 12;
        }
      }
      append_utf8(cp, out);  // a lone surrogate becomes U+FFFD
      break;
    }
    case '"':
    case '\\':
    case '/':
    case '\'':
      out->push_back(e);
      break;
    default:
      // Not an escape in JSON or Python ("\d" in a regex, "\U" in a Windows path): the
      // model meant the backslash itself.
      out->push_back('\\');
      out->push_back(e);
  }
  *consumed = n;
  return EscapeStep::kDecoded;
}

MarkupMatch match_call_terminator(std::string_view s) {
  MarkupMatch best = MarkupMatch::kNone;
  for (const auto m : kHardTerminators) {
    const MarkupMatch r = match_markup(s, m);
    if (r == MarkupMatch::kFull) return r;
    if (r == MarkupMatch::kPartial) best = r;
  }
  return best;
}

ToolArgsConverter::ToolArgsConverter() { stack_.push_back(Frame{true, true}); }

void ToolArgsConverter::begin_element(std::string* json) {
  Frame& top = stack_.back();
  if (!top.is_object) {
    if (!top.first) json->push_back(',');
    top.first = false;
  }
}

void ToolArgsConverter::emit_key(std::string* json) {
  Frame& top = stack_.back();
  if (!top.first) json->push_back(',');
  top.first = false;
  json->push_back('"');
  append_json_escaped(buf_, json);
  json->append("\":");
  buf_.clear();
}

void ToolArgsConverter::finish_bare(std::string* json) {
  const std::string_view t = trim_ws(buf_);
  if (t.empty()) {
    json->append("null");
    repaired_ = true;
  } else if (t == "true" || t == "false" || t == "null") {
    json->append(t);
  } else if (t == "True" || t == "False") {
    json->append(t == "True" ? "true" : "false");
    repaired_ = true;
  } else if (t == "None") {
    json->append("null");
    repaired_ = true;
  } else if (is_json_number(t) && !beyond_double_range(t)) {
    json->append(t);
  } else if (t.size() > 1 && t[0] == '+' && is_json_number(t.substr(1)) && t[1] != '-' &&
             !beyond_double_range(t.substr(1))) {
    json->append(t.substr(1));
    repaired_ = true;
  } else {
    json->push_back('"');
    append_json_escaped(t, json);
    json->push_back('"');
    repaired_ = true;
  }
  buf_.clear();
  bare_closers_.clear();
}

void ToolArgsConverter::close_top(std::string* json) {
  if (stack_.size() == 1) {
    top_close_held_ = true;  // written by close(), unless reopen() takes it back
  } else {
    json->push_back(stack_.back().is_object ? '}' : ']');
  }
  stack_.pop_back();
  state_ = stack_.empty() ? State::kDone : State::kAfterValue;
}

void ToolArgsConverter::reopen() {
  if (state_ != State::kDone || !top_close_held_) return;
  top_close_held_ = false;
  stack_.push_back(Frame{true, false});
  state_ = State::kExpectKey;
  repaired_ = true;
}

ToolArgsConverter::Step ToolArgsConverter::partial_marker(std::string_view s, bool final, size_t* consumed) {
  if (!final) return Step::kNeedMore;
  // The output was cut inside the marker (max_tokens, an end token): its bytes are no part
  // of a key or value; what was complete before it stays, and close() completes the rest.
  *consumed = s.size();
  repaired_ = true;
  return Step::kConsumed;
}

ToolArgsConverter::Step ToolArgsConverter::on_string_char(std::string_view s, bool final, size_t* consumed,
                                                          std::string* json, bool key) {
  const auto put = [&](std::string_view raw) {
    if (key) {
      buf_.append(raw);
    } else {
      append_json_escaped(raw, json);
    }
  };
  const auto close_string = [&](size_t n) {
    *consumed = n;
    if (key) {
      state_ = State::kExpectColon;
    } else {
      json->push_back('"');
      state_ = State::kAfterValue;
    }
    return Step::kConsumed;
  };
  const char close_char = quote_ == Quote::kDouble ? '"' : '\'';
  // A run of ordinary characters.
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '<' || (quote_ != Quote::kGemma && (c == close_char || c == '\\'))) break;
    ++i;
  }
  if (i > 0) {
    put(s.substr(0, i));
    *consumed = i;
    return Step::kConsumed;
  }
  const char c = s[0];
  if (c == '<') {
    if (match_markup(s, markup::kQuote) == MarkupMatch::kFull) {
      if (quote_ == Quote::kGemma) return close_string(markup::kQuote.size());
      put("\"");  // <|"|> inside a JSON/Python string: a quote character
      *consumed = markup::kQuote.size();
      return Step::kConsumed;
    }
    const MarkupMatch m = match_terminator(s, /*outside_string=*/false, /*with_quote=*/true);
    if (m == MarkupMatch::kFull) return Step::kTerminated;
    if (m == MarkupMatch::kPartial) return partial_marker(s, final, consumed);
    put("<");
    *consumed = 1;
    return Step::kConsumed;
  }
  if (c == close_char) return close_string(1);
  // Backslash escape in a "..." or '...' string.
  size_t n = 0;
  std::string decoded;
  if (decode_escape(s, final, &n, &decoded) == EscapeStep::kNeedMore) return Step::kNeedMore;
  put(decoded);
  *consumed = n;
  return Step::kConsumed;
}

ToolArgsConverter::Step ToolArgsConverter::step(std::string_view s, bool final, size_t* consumed,
                                                std::string* json) {
  *consumed = 0;
  if (state_ == State::kDone) return Step::kDone;
  if (s.empty()) return Step::kNeedMore;
  const auto skip_ws = [&]() -> bool {
    size_t i = 0;
    while (i < s.size() && is_ws(s[i])) ++i;
    *consumed = i;
    return i > 0;
  };
  const bool in_object = stack_.back().is_object;
  const char c = s[0];
  switch (state_) {
    case State::kDone:
      return Step::kDone;

    case State::kExpectKey: {
      if (skip_ws()) return Step::kConsumed;
      if (c == '}') {
        close_top(json);
        *consumed = 1;
        return state_ == State::kDone ? Step::kDone : Step::kConsumed;
      }
      if (c == ',' || c == ']') {  // stray separator
        repaired_ = true;
        *consumed = 1;
        return Step::kConsumed;
      }
      if (c == '<') {
        if (match_markup(s, markup::kQuote) == MarkupMatch::kFull) {
          state_ = State::kKeyQuoted;
          quote_ = Quote::kGemma;
          *consumed = markup::kQuote.size();
          return Step::kConsumed;
        }
        const MarkupMatch m = match_terminator(s, true, true);
        if (m == MarkupMatch::kFull) return Step::kTerminated;
        if (m == MarkupMatch::kPartial) return partial_marker(s, final, consumed);
      }
      if (c == '"' || c == '\'') {
        state_ = State::kKeyQuoted;
        quote_ = c == '"' ? Quote::kDouble : Quote::kSingle;
        repaired_ = true;
        *consumed = 1;
        return Step::kConsumed;
      }
      state_ = State::kKeyBare;
      buf_.assign(1, c);
      *consumed = 1;
      return Step::kConsumed;
    }

    case State::kKeyBare: {
      size_t i = 0;
      while (i < s.size() && s[i] != ':' && s[i] != '=' && s[i] != '}' && s[i] != ',' && s[i] != '<') ++i;
      if (i > 0) {
        buf_.append(s.substr(0, i));
        *consumed = i;
        return Step::kConsumed;
      }
      if (c == '<') {
        const MarkupMatch m = match_terminator(s, true, false);
        if (m == MarkupMatch::kPartial) return partial_marker(s, final, consumed);
        if (m != MarkupMatch::kFull) {
          buf_.push_back('<');
          *consumed = 1;
          return Step::kConsumed;
        }
      }
      buf_ = std::string(trim_ws(buf_));
      emit_key(json);
      if (c == ':' || c == '=') {
        if (c == '=') repaired_ = true;
        state_ = State::kExpectValue;
        *consumed = 1;
        return Step::kConsumed;
      }
      // '}', ',' or a terminator: a key without a value.
      json->append("null");
      repaired_ = true;
      state_ = State::kAfterValue;
      return c == '<' ? Step::kTerminated : Step::kConsumed;
    }

    case State::kKeyQuoted:
      return on_string_char(s, final, consumed, json, /*key=*/true);

    case State::kExpectColon:
      if (skip_ws()) return Step::kConsumed;
      emit_key(json);
      state_ = State::kExpectValue;
      if (c == ':' || c == '=') {
        if (c == '=') repaired_ = true;
        *consumed = 1;
      } else {
        repaired_ = true;
      }
      return Step::kConsumed;

    case State::kExpectValue: {
      if (skip_ws()) return Step::kConsumed;
      switch (c) {
        case '{':
          begin_element(json);
          json->push_back('{');
          stack_.push_back(Frame{true, true});
          state_ = State::kExpectKey;
          *consumed = 1;
          return Step::kConsumed;
        case '[':
          begin_element(json);
          json->push_back('[');
          stack_.push_back(Frame{false, true});
          state_ = State::kExpectValue;
          *consumed = 1;
          return Step::kConsumed;
        case ']':
          if (!in_object) {
            close_top(json);
            *consumed = 1;
          } else {
            json->append("null");
            repaired_ = true;
            state_ = State::kAfterValue;
          }
          return Step::kConsumed;
        case '}':
          repaired_ = true;
          if (in_object) {
            json->append("null");
            state_ = State::kAfterValue;
          } else {
            close_top(json);
          }
          return Step::kConsumed;
        case ',':
          repaired_ = true;
          if (in_object) {
            json->append("null");
            state_ = State::kAfterValue;
          } else {
            *consumed = 1;
          }
          return Step::kConsumed;
        case '"':
        case '\'':
          begin_element(json);
          json->push_back('"');
          state_ = State::kString;
          quote_ = c == '"' ? Quote::kDouble : Quote::kSingle;
          repaired_ = true;
          *consumed = 1;
          return Step::kConsumed;
        case '<': {
          if (match_markup(s, markup::kQuote) == MarkupMatch::kFull) {
            begin_element(json);
            json->push_back('"');
            state_ = State::kString;
            quote_ = Quote::kGemma;
            *consumed = markup::kQuote.size();
            return Step::kConsumed;
          }
          const MarkupMatch m = match_terminator(s, true, true);
          if (m == MarkupMatch::kFull) return Step::kTerminated;
          if (m == MarkupMatch::kPartial) return partial_marker(s, final, consumed);
          break;
        }
        default:
          break;
      }
      begin_element(json);
      state_ = State::kBare;
      buf_.clear();
      return Step::kConsumed;
    }

    case State::kString:
      return on_string_char(s, final, consumed, json, /*key=*/false);

    case State::kBare: {
      // Whitespace after a complete number or literal ends the value (a missing comma, as
      // in "a:1 b:2"); after anything else it belongs to a bare string ("ls -la /tmp").
      if (is_ws(c) && is_scalar_literal(trim_ws(buf_))) {
        finish_bare(json);
        state_ = State::kAfterValue;
        return Step::kConsumed;
      }
      // Brackets opened inside the value balance within it: their closers and the commas
      // between them are the value's ("echo ${HOME}", "g(1, 2)"). A closer of another kind
      // ends the value as before.
      size_t i = 0;
      while (i < s.size() && s[i] != '<' && !is_ws(s[i])) {
        const char d = s[i];
        if (d == '{' || d == '[' || d == '(') {
          bare_closers_.push_back(d == '{' ? '}' : d == '[' ? ']' : ')');
        } else if (!bare_closers_.empty() && d == bare_closers_.back()) {
          bare_closers_.pop_back();
        } else if (d == '}' || d == ']' || (d == ',' && bare_closers_.empty())) {
          break;
        }
        ++i;
      }
      if (i == 0 && is_ws(c)) i = 1;
      if (i > 0) {
        buf_.append(s.substr(0, i));
        *consumed = i;
        return Step::kConsumed;
      }
      if (c == '<') {
        if (match_markup(s, markup::kQuote) != MarkupMatch::kFull) {
          const MarkupMatch m = match_terminator(s, true, true);
          if (m == MarkupMatch::kPartial) return partial_marker(s, final, consumed);
          if (m == MarkupMatch::kNone) {
            buf_.push_back('<');
            *consumed = 1;
            return Step::kConsumed;
          }
        }
      }
      finish_bare(json);
      state_ = State::kAfterValue;
      return Step::kConsumed;
    }

    case State::kAfterValue: {
      if (skip_ws()) return Step::kConsumed;
      if (c == ',') {
        state_ = in_object ? State::kExpectKey : State::kExpectValue;
        *consumed = 1;
        return Step::kConsumed;
      }
      if (c == '}') {
        if (in_object) {
          close_top(json);
          *consumed = 1;
          return state_ == State::kDone ? Step::kDone : Step::kConsumed;
        }
        repaired_ = true;  // an array left open: close it, the '}' closes the object next
        close_top(json);
        return Step::kConsumed;
      }
      if (c == ']') {
        if (!in_object) {
          close_top(json);
        } else {
          repaired_ = true;  // stray ']'
        }
        *consumed = 1;
        return Step::kConsumed;
      }
      if (c == '<' && match_markup(s, markup::kQuote) != MarkupMatch::kFull) {
        const MarkupMatch m = match_terminator(s, true, true);
        if (m == MarkupMatch::kFull) return Step::kTerminated;
        if (m == MarkupMatch::kPartial) return partial_marker(s, final, consumed);
      }
      // Anything else: a missing comma; the next member or element starts here.
      repaired_ = true;
      state_ = in_object ? State::kExpectKey : State::kExpectValue;
      return Step::kConsumed;
    }
  }
  return Step::kNeedMore;
}

void ToolArgsConverter::close(std::string* json) {
  if (top_close_held_) {
    json->push_back('}');
    top_close_held_ = false;
  }
  switch (state_) {
    case State::kKeyBare:
      buf_ = std::string(trim_ws(buf_));
      if (!buf_.empty()) {
        emit_key(json);
        json->append("null");
      }
      break;
    case State::kKeyQuoted:
    case State::kExpectColon:
      emit_key(json);
      json->append("null");
      break;
    case State::kExpectValue:
      if (stack_.back().is_object) json->append("null");
      break;
    case State::kString:
      json->push_back('"');
      break;
    case State::kBare:
      finish_bare(json);
      break;
    case State::kExpectKey:
    case State::kAfterValue:
    case State::kDone:
      break;
  }
  if (state_ != State::kDone) repaired_ = true;
  while (!stack_.empty()) {
    json->push_back(stack_.back().is_object ? '}' : ']');
    stack_.pop_back();
  }
  state_ = State::kDone;
}

}  // namespace gs::text
