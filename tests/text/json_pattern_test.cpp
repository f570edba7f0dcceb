// pattern, format, minProperties and maxProperties in the structured-output grammar
// (decision 0027): every string the matcher accepts is checked by a small backtracking
// matcher written here (no code shared with regex_dfa.cpp), exhaustively over a small
// alphabet and by random walks over the matcher's own bytes; no prefix is a dead end; the
// refusals name their keyword; blowups are refused within the budget.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>

#include "text/json_grammar.h"
#include "text/regex_dfa.h"
#include "json_matcher_test_util.h"

namespace gs::text {
namespace {

using json = nlohmann::json;
using Grammar = std::shared_ptr<const JsonGrammar>;
using test_util::bytes_taken;

// ---------------------------------------------------------------------------------------
// An independent checker: a recursive-descent parser of the same ECMA-262 subset into a
// tree, matched by the sets of end positions each node can reach (backtracking in breadth).

struct Re {
  enum Kind { kClass, kSeq, kAlt, kRep, kBol, kEol } kind = kSeq;
  std::function<bool(char32_t)> in;  // kClass
  std::vector<Re> kids;
  int min = 0, max = 0;  // kRep; max -1: no bound
};

Re make(Re::Kind k) {
  Re r;
  r.kind = k;
  return r;
}

bool is_word(char32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_space(char32_t c) {
  return (c >= 9 && c <= 13) || c == ' ' || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

class ReParser {
 public:
  explicit ReParser(std::u32string p) : p_(std::move(p)) {}
  Re parse() { return alt(); }

 private:
  Re alt() {
    Re a = make(Re::kAlt);
    a.kids.push_back(seq());
    while (i_ < p_.size() && p_[i_] == '|') {
      ++i_;
      a.kids.push_back(seq());
    }
    return a;
  }
  Re seq() {
    Re s = make(Re::kSeq);
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      Re atom = this->atom();
      if (i_ < p_.size() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '?' || brace())) {
        Re r = make(Re::kRep);
        if (p_[i_] == '*') r.min = 0, r.max = -1, ++i_;
        else if (p_[i_] == '+') r.min = 1, r.max = -1, ++i_;
        else if (p_[i_] == '?') r.min = 0, r.max = 1, ++i_;
        else read_brace(&r.min, &r.max);
        if (i_ < p_.size() && p_[i_] == '?') ++i_;
        r.kids.push_back(std::move(atom));
        s.kids.push_back(std::move(r));
      } else {
        s.kids.push_back(std::move(atom));
      }
    }
    return s;
  }
  bool brace() const {
    if (p_[i_] != '{') return false;
    size_t j = i_ + 1;
    if (j >= p_.size() || p_[j] < '0' || p_[j] > '9') return false;
    while (j < p_.size() && ((p_[j] >= '0' && p_[j] <= '9') || p_[j] == ',')) ++j;
    return j < p_.size() && p_[j] == '}';
  }
  void read_brace(int* min, int* max) {
    ++i_;
    auto num = [&] {
      int v = 0;
      while (p_[i_] >= '0' && p_[i_] <= '9') v = v * 10 + static_cast<int>(p_[i_++] - '0');
      return v;
    };
    *min = num();
    *max = *min;
    if (p_[i_] == ',') {
      ++i_;
      *max = p_[i_] == '}' ? -1 : num();
    }
    ++i_;  // '}'
  }
  static Re cls(std::function<bool(char32_t)> f) {
    Re r = make(Re::kClass);
    r.in = std::move(f);
    return r;
  }
  static Re single(char32_t c) { return cls([c](char32_t x) { return x == c; }); }
  // An escape after '\': a class test.
  std::function<bool(char32_t)> escape(bool in_class) {
    const char32_t c = p_[i_++];
    switch (c) {
      case 'd': return [](char32_t x) { return x >= '0' && x <= '9'; };
      case 'D': return [](char32_t x) { return !(x >= '0' && x <= '9'); };
      case 'w': return is_word;
      case 'W': return [](char32_t x) { return !is_word(x); };
      case 's': return is_space;
      case 'S': return [](char32_t x) { return !is_space(x); };
      case 'n': return [](char32_t x) { return x == '\n'; };
      case 't': return [](char32_t x) { return x == '\t'; };
      case 'r': return [](char32_t x) { return x == '\r'; };
      case 'b': return [](char32_t x) { return x == 8; };
      case 'u': {
        char32_t v = 0;
        if (p_[i_] == '{') {
          ++i_;
          while (p_[i_] != '}') v = v * 16 + hex(p_[i_++]);
          ++i_;
        } else {
          for (int k = 0; k < 4; ++k) v = v * 16 + hex(p_[i_++]);
        }
        return [v](char32_t x) { return x == v; };
      }
      default:
        (void)in_class;
        return [c](char32_t x) { return x == c; };
    }
  }
  static char32_t hex(char32_t c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }
  // One class member's code point, or nothing for an escape class.
  Re atom() {
    const char32_t c = p_[i_++];
    if (c == '^') return make(Re::kBol);
    if (c == '$') return make(Re::kEol);
    if (c == '.') return cls([](char32_t x) { return x != '\n' && x != '\r' && x != 0x2028 && x != 0x2029; });
    if (c == '\\') return cls(escape(false));
    if (c == '(') {
      if (p_[i_] == '?') i_ += 2;  // (?:
      Re inner = alt();
      ++i_;  // ')'
      return inner;
    }
    if (c == '[') {
      bool neg = false;
      if (p_[i_] == '^') neg = true, ++i_;
      std::vector<std::function<bool(char32_t)>> parts;
      while (p_[i_] != ']') {
        char32_t lo = p_[i_++];
        std::function<bool(char32_t)> f;
        if (lo == '\\') {
          const size_t at = i_;
          f = escape(true);
          const char32_t e = p_[at];
          if (e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S') {
            parts.push_back(f);
            continue;
          }
          lo = 0;
          for (char32_t x = 0; x < 0x110000; ++x) {  // the one code point the escape names
            if (f(x)) {
              lo = x;
              break;
            }
          }
        }
        if (p_[i_] == '-' && p_[i_ + 1] != ']') {
          ++i_;
          char32_t hi = p_[i_++];
          if (hi == '\\') {
            auto g = escape(true);
            for (char32_t x = 0; x < 0x110000; ++x) {
              if (g(x)) {
                hi = x;
                break;
              }
            }
          }
          parts.push_back([lo, hi](char32_t x) { return x >= lo && x <= hi; });
        } else {
          parts.push_back([lo](char32_t x) { return x == lo; });
        }
      }
      ++i_;
      return cls([parts, neg](char32_t x) {
        bool any = false;
        for (const auto& f : parts) any = any || f(x);
        return any != neg;
      });
    }
    return single(c);
  }
  std::u32string p_;
  size_t i_ = 0;
};

std::set<size_t> ends(const Re& r, const std::u32string& t, size_t pos) {
  switch (r.kind) {
    case Re::kClass:
      if (pos < t.size() && r.in(t[pos])) return {pos + 1};
      return {};
    case Re::kBol:
      return pos == 0 ? std::set<size_t>{pos} : std::set<size_t>{};
    case Re::kEol:
      return pos == t.size() ? std::set<size_t>{pos} : std::set<size_t>{};
    case Re::kSeq: {
      std::set<size_t> cur = {pos};
      for (const Re& k : r.kids) {
        std::set<size_t> next;
        for (size_t p : cur) {
          for (size_t e : ends(k, t, p)) next.insert(e);
        }
        cur = std::move(next);
      }
      return cur;
    }
    case Re::kAlt: {
      std::set<size_t> out;
      for (const Re& k : r.kids) {
        for (size_t e : ends(k, t, pos)) out.insert(e);
      }
      return out;
    }
    case Re::kRep: {
      std::set<size_t> cur = {pos}, out;
      for (int i = 0;; ++i) {
        if (i >= r.min) {
          const size_t before = out.size();
          out.insert(cur.begin(), cur.end());
          if (i > r.min && out.size() == before) break;  // nothing new: nothing new later
        }
        if (cur.empty() || (r.max >= 0 && i == r.max)) break;
        std::set<size_t> next;
        for (size_t p : cur) {
          for (size_t e : ends(r.kids[0], t, p)) next.insert(e);
        }
        cur = std::move(next);
      }
      return out;
    }
  }
  return {};
}

std::u32string u32(const std::string& utf8) {
  std::u32string out;
  EXPECT_TRUE(decode_utf8(utf8, &out)) << utf8;
  return out;
}

std::string utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// The string contains a match (JSON Schema: not anchored).
bool reference_match(const std::string& pattern, const std::u32string& text) {
  const Re re = ReParser(u32(pattern)).parse();
  for (size_t i = 0; i <= text.size(); ++i) {
    if (!ends(re, text, i).empty()) return true;
  }
  return false;
}

Grammar grammar(const json& s, JsonSyntax syntax = JsonSyntax::kJson) {
  auto g = JsonGrammar::from_schema(s, "schema", syntax);
  EXPECT_TRUE(g.ok()) << s.dump() << ": " << g.status().to_string();
  return g.ok() ? *g : JsonGrammar::any_object();
}

bool accepts(const Grammar& g, std::string_view text) {
  JsonMatcher m(g);
  return m.feed(text) && m.can_end();
}

// A refusal, its message beginning with `path` and holding `words`.
void expect_refused(const json& s, const std::string& path, const std::string& words) {
  auto g = JsonGrammar::from_schema(s);
  ASSERT_FALSE(g.ok()) << s.dump();
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.status().message().rfind(path, 0), 0u) << s.dump() << " -> " << g.status().message();
  EXPECT_NE(g.status().message().find(words), std::string::npos) << s.dump() << " -> " << g.status().message();
}

struct Case {
  const char* pattern;
  int64_t min_length = 0;
  int64_t max_length = -1;
};

const Case kCases[] = {
    {"^[a-c]+$"},        {"ab"},           {"^a.c"},           {"b$"},           {"^(ab|ba)*$"},
    {"^\\d{2,4}$"},      {"a{2}"},         {"^(a|b)?c*$"},     {"^[^a]b"},       {"(a|aa)*b"},
    {"^\\w+@\\w+$"},     {"^$"},           {"^(?:a|b)+$"},     {"[\\d-]{3}"},    {"\u00e9+"},
    {"^\\u00e9?a"},      {"^\\s*$"},       {"a|^b|c$"},        {"^[a-z]*[0-9]$"}, {"^[ab]*$", 3, 5},
    {"^(aa)*$", 2, 4},   {"a", 0, 3},      {"^.{2,3}$", 1, 2}, {"^\\D\\W?\\S", 2}, {"(?:^|-)a(?:-|$)"},
    {"^[\\n\\t ]+$", 0, 4},
};

// Every string over a small alphabet up to 4 characters: the matcher takes it, quoted, iff
// the checker matches it within the lengths.
TEST(JsonPattern, SmallAlphabetExhaustive) {
  const std::u32string alphabet = U"abc01-@ \u00e9\n";
  for (const Case& c : kCases) {
    json s = {{"type", "string"}, {"pattern", c.pattern}};
    if (c.min_length > 0) s["minLength"] = c.min_length;
    if (c.max_length >= 0) s["maxLength"] = c.max_length;
    const Grammar g = grammar(s);
    std::vector<std::u32string> all = {U""};
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].size() < 4) {
        for (char32_t a : alphabet) all.push_back(all[i] + a);
      }
    }
    int matched = 0;
    for (const std::u32string& t : all) {
      const auto n = static_cast<int64_t>(t.size());
      const bool want = reference_match(c.pattern, t) && n >= c.min_length && (c.max_length < 0 || n <= c.max_length);
      const std::string text = json(utf8(t)).dump();
      ASSERT_EQ(accepts(g, text), want) << c.pattern << " on " << text;
      matched += want;
    }
    EXPECT_GT(matched, 0) << c.pattern;
  }
}

// Random walks over the bytes the matcher takes: some byte always fits (no dead end), and
// every string it lets close matches by the checker, escapes decoded.
TEST(JsonPattern, RandomWalksMatchAndNeverDeadEnd) {
  std::mt19937 rng(1234);
  for (const Case& c : kCases) {
    json s = {{"type", "string"}, {"pattern", c.pattern}};
    if (c.min_length > 0) s["minLength"] = c.min_length;
    if (c.max_length >= 0) s["maxLength"] = c.max_length;
    const Grammar g = grammar(s);
    int closed = 0;
    for (int walk = 0; walk < 300; ++walk) {
      JsonMatcher m(g);
      std::string text;
      while (!m.done() && text.size() < 48) {
        const std::vector<unsigned char> ok = bytes_taken(m);
        ASSERT_FALSE(ok.empty()) << c.pattern << ": dead end after " << text;
        unsigned char pick = ok[rng() % ok.size()];
        const bool quote = std::find(ok.begin(), ok.end(), '"') != ok.end() && text.size() > 1;
        std::vector<unsigned char> own;  // bytes of the pattern itself: walks that match
        for (unsigned char b : ok) {
          if (b != '"' && std::string_view(c.pattern).find(static_cast<char>(b)) != std::string_view::npos) own.push_back(b);
        }
        if (quote && rng() % 4 == 0) {
          pick = '"';
        } else if (!own.empty() && rng() % 2 == 0) {
          pick = own[rng() % own.size()];
        } else if (rng() % 3 != 0) {
          std::vector<unsigned char> ascii;
          for (unsigned char b : ok) {
            if (b >= 0x20 && b < 0x7F && b != '"') ascii.push_back(b);
          }
          if (!ascii.empty()) pick = ascii[rng() % ascii.size()];
        }
        ASSERT_TRUE(m.feed(pick));
        text += static_cast<char>(pick);
      }
      if (!m.done()) continue;
      ++closed;
      const std::u32string value = u32(json::parse(text).get<std::string>());
      const auto n = static_cast<int64_t>(value.size());
      EXPECT_TRUE(reference_match(c.pattern, value)) << c.pattern << " took " << text;
      EXPECT_GE(n, c.min_length) << text;
      if (c.max_length >= 0) {
        EXPECT_LE(n, c.max_length) << text;
      }
    }
    EXPECT_GT(closed, 0) << c.pattern;
  }
}

TEST(JsonPattern, EscapesAreDecodedBeforeMatching) {
  const Grammar a = grammar({{"type", "string"}, {"pattern", "^a\\n$"}});
  EXPECT_TRUE(accepts(a, R"("a\n")"));
  EXPECT_TRUE(accepts(a, R"("\u0061\u000a")"));
  EXPECT_FALSE(accepts(a, R"("a\t")"));
  const Grammar smile = grammar({{"type", "string"}, {"pattern", "^\\uD83D\\uDE00{2}$"}});
  EXPECT_TRUE(accepts(smile, "\"\xF0\x9F\x98\x80\xF0\x9F\x98\x80\""));
  EXPECT_TRUE(accepts(smile, R"("\ud83d\ude00\uD83D\uDE00")"));
  EXPECT_FALSE(accepts(smile, R"("\ud83d\ude01\ud83d\ude00")"));
  // A high surrogate whose pair can lead nowhere is refused at its last digit.
  JsonMatcher m(smile);
  EXPECT_TRUE(m.feed(R"("\uD83)"));
  EXPECT_FALSE(m.feed(R"(C)"));
  EXPECT_TRUE(m.feed(R"(D)"));
  // Inside a patterned string no piece is free (the constraint tests each).
  JsonMatcher p(a);
  ASSERT_TRUE(p.feed("\""));
  EXPECT_EQ(p.free_string_room(), -1);
}

TEST(JsonPattern, UnsupportedFeaturesAreRefusedNamingThem) {
  const std::pair<const char*, const char*> kBad[] = {
      {"(a)\\1", "backreferences"},
      {"a(?=b)", "lookahead"},
      {"(?<!a)b", "lookbehind"},
      {"\\bword", "word boundaries"},
      {"(?<year>\\d{4})", "named groups"},
      {"\\p{L}", "unicode property escapes"},
      {"\\k<x>", "named backreferences"},
      {"(ab", "not closed"},
      {"ab)", "unmatched ')'"},
      {"*a", "nothing to repeat"},
      {"a{3,2}", "n above m"},
      {"[b-a]", "out of order"},
      {"[", "not closed"},
      {"\\q", "unknown escape"},
      {"\\uD800", "lone surrogate"},
      {"a\\", "ends with"},
      {"[^\\s\\S]", "no string matches"},
  };
  for (const auto& [pattern, words] : kBad) {
    expect_refused({{"type", "object"}, {"properties", {{"a", {{"type", "string"}, {"pattern", pattern}}}}}},
                   "schema.properties.a.pattern: ", words);
  }
  expect_refused({{"type", "string"}, {"pattern", 5}}, "schema.pattern must be a string", "");
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "(";
  expect_refused({{"type", "string"}, {"pattern", deep}}, "schema.pattern: ", "nest deeper");
  // Lengths no matching string has: refused naming the pattern (or the format).
  expect_refused({{"type", "string"}, {"pattern", "^(aa)*$"}, {"minLength", 3}, {"maxLength", 3}}, "schema.pattern: ",
                 "no string of minLength 3 to maxLength 3");
  expect_refused({{"type", "string"}, {"pattern", "^a{2}$"}, {"minLength", 3}}, "schema.pattern: ", "minLength");
  expect_refused({{"type", "string"}, {"format", "date"}, {"maxLength", 9}}, "schema.format: ", "maxLength 9");
  expect_refused({{"type", "string"}, {"format", "date"}, {"pattern", "^x"}}, "schema.format: ", "both");
}

// Each blowup is refused quickly (the budget), and none takes the server's memory.
TEST(JsonPattern, BlowupsAreBounded) {
  const char* const kHuge[] = {
      "a{100000}",
      "(a{1000}){1000}",
      "((a|aa)*){1000}x{3000}",
      "(a|b)*a(a|b){24}",           // 2^24 states as a DFA
      "(?:[a-z]{0,2000}){0,2000}",
      "a{999999999999}",
      "(.*a){40}(.*b){40}(.*c){40}",
  };
  // Bounded by the work budget, not timed here (no timed tests: a slow machine must not
  // fail them); the budget's cost is measured in decision 0027.
  for (const char* p : kHuge) {
    // A compile that succeeds stayed within the budget; one that ran out stopped soon after
    // (an overshoot of at most 1/20 of the budget).
    const RegexBudget full;
    RegexBudget budget;
    const bool compiled = RegexDfa::compile(p, &budget).ok();
    if (compiled) {
      EXPECT_GE(budget.work, 0) << p;
    }
    EXPECT_GT(budget.work, -full.work / 20) << p;
    EXPECT_GT(budget.bytes, -full.bytes / 20) << p;
    auto g = JsonGrammar::from_schema({{"type", "string"}, {"pattern", p}});
    if (!g.ok()) {
      EXPECT_EQ(g.status().message().rfind("schema.pattern: ", 0), 0u) << g.status().message();
    }
  }
  for (const char* p : {"a{100000}", "a{999999999999}", "(a|b)*a(a|b){24}", "(a{1000}){1000}"}) {
    auto g = JsonGrammar::from_schema({{"type", "string"}, {"pattern", p}});
    ASSERT_FALSE(g.ok()) << p;
    EXPECT_NE(g.status().message().find("states"), std::string::npos) << g.status().message();
  }
  // Not refused but small: the classic exponential case for backtracking engines.
  EXPECT_TRUE(JsonGrammar::from_schema({{"type", "string"}, {"pattern", "^((a|aa)*){20}b$"}}).ok());
  // A long maxLength beside a large automaton: the length table is bounded.
  auto big = JsonGrammar::from_schema({{"type", "string"}, {"pattern", "^[a-z]{0,3000}$"}, {"maxLength", 100000000}});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("maxLength"), std::string::npos) << big.status().message();
  // Many patterns in one schema share one budget.
  json props = json::object();
  for (int i = 0; i < 128; ++i) {
    props["p" + std::to_string(i)] = {{"type", "string"}, {"pattern", "^(a|b)*a(a|b){10}" + std::to_string(i) + "$"}};
  }
  auto many = JsonGrammar::from_schema({{"type", "object"}, {"properties", props}});
  if (!many.ok()) {
    EXPECT_NE(many.status().message().find(".pattern: "), std::string::npos) << many.status().message();
  }
}

// Schemas compiled for one request (the arguments of its tools) draw on one budget when they
// are given one: what a first schema's patterns spend is gone for the next, whose pattern is
// then refused (JSON) or ignored (the call form); without one, each has a budget of its own.
// A maxLength near 2^63 beside a pattern: its length table's size overflowed (a credit to the
// budget, then a std::length_error out of a vector, which aborted this test and made a 500 of a
// request). Now it is past the budget: refused in JSON, the pattern ignored in a tool call.
TEST(JsonPattern, AHugeMaxLengthIsPastTheBudget) {
  for (const char* max : {"9223372036854775807", "9223372036854775806", "4611686018427387904", "4294967296", "1e300"}) {
    const json schema = json::parse(std::string(R"({"type":"string","pattern":"^a+$","maxLength":)") + max + "}");
    RegexBudget budget;
    auto refused = JsonGrammar::from_schema(schema, "schema", JsonSyntax::kJson, &budget);
    ASSERT_FALSE(refused.ok()) << max;
    EXPECT_NE(refused.status().message().find("too large"), std::string::npos) << refused.status().message();
    EXPECT_LT(budget.bytes, 0) << max;
    const json tool = {{"type", "object"}, {"properties", {{"k", schema}}}};
    auto call = JsonGrammar::from_schema(tool, "parameters", JsonSyntax::kGemmaCall);
    ASSERT_TRUE(call.ok()) << max << ": " << call.status().to_string();
    EXPECT_EQ((*call)->node((*call)->node(0).key_nodes[0]).pattern_form, nullptr) << max;
  }
}

TEST(JsonPattern, SchemasCompiledTogetherShareOneBudget) {
  const json schema = {{"type", "string"}, {"pattern", "^(a|b)*a(a|b){8}$"}};
  const json tool = {{"type", "object"}, {"properties", {{"k", schema}}}, {"required", {"k"}}};
  RegexBudget probe;
  ASSERT_TRUE(JsonGrammar::from_schema(tool, "parameters", JsonSyntax::kGemmaCall, &probe).ok());
  const int64_t cost = RegexBudget{}.work - probe.work;
  ASSERT_GT(cost, 1000);  // a pattern of some hundreds of states
  // Room for one such pattern and a half.
  RegexBudget shared{.work = cost + cost / 2};
  auto holds_pattern = [](const Grammar& g) {
    const JsonGrammar::Node& root = g->node(0);
    return root.key_nodes.size() == 1 && g->node(root.key_nodes[0]).pattern_form != nullptr;
  };
  auto first = JsonGrammar::from_schema(tool, "parameters", JsonSyntax::kGemmaCall, &shared);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(holds_pattern(*first));
  EXPECT_LT(shared.work, cost);
  auto second = JsonGrammar::from_schema(tool, "parameters", JsonSyntax::kGemmaCall, &shared);
  ASSERT_TRUE(second.ok()) << second.status().to_string();  // the call's form still holds
  EXPECT_FALSE(holds_pattern(*second));
  auto json_form = JsonGrammar::from_schema(schema, "schema", JsonSyntax::kJson, &shared);
  ASSERT_FALSE(json_form.ok());
  EXPECT_EQ(json_form.status().message().rfind("schema.pattern: ", 0), 0u) << json_form.status().message();
  // Each without a shared budget: its own, as before.
  for (int i = 0; i < 3; ++i) {
    auto own = JsonGrammar::from_schema(tool, "parameters", JsonSyntax::kGemmaCall);
    ASSERT_TRUE(own.ok());
    EXPECT_TRUE(holds_pattern(*own));
  }
}

TEST(JsonPattern, FormatsAreEnforced) {
  const std::pair<const char*, std::vector<std::pair<const char*, bool>>> kFormats[] = {
      {"date",
       {{"2024-02-29", true}, {"2023-02-29", false}, {"2000-02-29", true}, {"1900-02-29", false}, {"2024-04-31", false},
        {"2024-12-31", true}, {"2024-13-01", false}, {"24-01-01", false}, {"2024-1-01", false}}},
      {"time", {{"23:59:59Z", true}, {"00:00:00.123456+05:30", true}, {"24:00:00Z", false}, {"12:00:00", false},
                {"12:60:00Z", false}, {"12:00:00z", true}}},
      {"date-time",
       {{"2024-01-02T03:04:05Z", true}, {"2024-01-02t03:04:05.5-01:00", true}, {"2024-01-02 03:04:05Z", false},
        {"2024-01-02T03:04Z", false}}},
      {"uuid", {{"123e4567-e89b-12d3-a456-426614174000", true}, {"123E4567-E89B-12D3-A456-426614174000", true},
                {"123e4567e89b12d3a456426614174000", false}, {"123e4567-e89b-12d3-a456-42661417400g", false}}},
      {"ipv4", {{"192.168.0.1", true}, {"255.255.255.255", true}, {"256.1.1.1", false}, {"01.2.3.4", false},
                {"1.2.3", false}, {"0.0.0.0", true}}},
      {"email", {{"a.b+c@example.com", true}, {"x@y.io", true}, {"a@b", false}, {"a..b@c.de", false},
                 {"@c.de", false}, {"a@-b.de", false}}},
  };
  std::mt19937 rng(7);
  for (const auto& [format, examples] : kFormats) {
    const Grammar g = grammar({{"type", "string"}, {"format", format}});
    for (const auto& [text, ok] : examples) {
      EXPECT_EQ(accepts(g, json(text).dump()), ok) << format << " " << text;
    }
    // Random walks: no dead end, and every finished value is one of the format (checked by
    // the independent checker on the same expression, and by parsing the date parts here).
    for (int walk = 0; walk < 200; ++walk) {
      JsonMatcher m(g);
      std::string text;
      while (!m.done()) {
        const std::vector<unsigned char> ok = bytes_taken(m);
        ASSERT_FALSE(ok.empty()) << format << ": dead end after " << text;
        unsigned char pick = ok[rng() % ok.size()];
        if (text.size() > 40 && rng() % 2 == 0) {  // toward an end: a quote, else what leads to one
          for (unsigned char want : {'"', '@', '.', 'a'}) {
            if (std::find(ok.begin(), ok.end(), want) != ok.end()) {
              pick = want;
              break;
            }
          }
        }
        ASSERT_TRUE(m.feed(pick));
        text += static_cast<char>(pick);
        ASSERT_LT(text.size(), 400u) << format;
      }
      const std::string value = json::parse(text).get<std::string>();
      if (std::string_view(format) == "date" || std::string_view(format) == "date-time") {
        const int y = std::stoi(value.substr(0, 4)), mo = std::stoi(value.substr(5, 2)), d = std::stoi(value.substr(8, 2));
        const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        const int days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        EXPECT_TRUE(mo >= 1 && mo <= 12 && d >= 1 && d <= days[mo - 1]) << value;
      }
      if (std::string_view(format) == "ipv4") {
        int parts = 0;
        size_t at = 0;
        while (at <= value.size()) {
          const size_t dot = std::min(value.find('.', at), value.size());
          const std::string part = value.substr(at, dot - at);
          EXPECT_TRUE(!part.empty() && part.size() <= 3 && (part == "0" || part[0] != '0') && std::stoi(part) <= 255) << value;
          ++parts;
          at = dot + 1;
        }
        EXPECT_EQ(parts, 4) << value;
      }
    }
  }
  // An unknown format stays ignored; a format on a number binds nothing.
  EXPECT_TRUE(accepts(grammar({{"type", "string"}, {"format", "hostname"}}), R"("anything at all")"));
  EXPECT_TRUE(accepts(grammar({{"type", "integer"}, {"format", "int64"}}), "12"));
  EXPECT_TRUE(accepts(grammar({{"type", {"string", "null"}}, {"format", "date"}}), "null"));
  // Format beside a pattern: both.
  const Grammar both = grammar({{"type", "string"}, {"format", "date"}, {"pattern", "^2024-"}});
  EXPECT_TRUE(accepts(both, R"("2024-05-06")"));
  EXPECT_FALSE(accepts(both, R"("2025-05-06")"));
}

TEST(JsonPattern, CombinesWithEnumsAllOfAndUnions) {
  // An enum keeps the values the pattern matches.
  const Grammar e = grammar({{"enum", {"apple", "banana", "cherry"}}, {"pattern", "an"}});
  EXPECT_TRUE(accepts(e, R"("banana")"));
  EXPECT_FALSE(accepts(e, R"("apple")"));
  expect_refused({{"enum", {"apple"}}, {"pattern", "^b"}}, "schema", "pattern");
  // allOf: both patterns.
  const Grammar all = grammar({{"allOf", {{{"type", "string"}, {"pattern", "^a"}}, {{"pattern", "b$"}, {"maxLength", 4}}}}});
  EXPECT_TRUE(accepts(all, R"("axb")"));
  EXPECT_FALSE(accepts(all, R"("ax")"));
  EXPECT_FALSE(accepts(all, R"("axxxb")"));
  expect_refused({{"allOf", {{{"type", "string"}, {"pattern", "^a$"}}, {{"type", "string"}, {"pattern", "^b$"}}}}},
                 "schema.allOf", "both patterns");
  // A pattern without a type limits strings only.
  const Grammar loose = grammar({{"type", {"string", "integer"}}, {"pattern", "^x"}});
  EXPECT_TRUE(accepts(loose, "5"));
  EXPECT_FALSE(accepts(loose, R"("y")"));
  // Beside a reference.
  const Grammar ref = grammar({{"$defs", {{"s", {{"type", "string"}}}}}, {"$ref", "#/$defs/s"}, {"pattern", "^[0-9]+$"}});
  EXPECT_TRUE(accepts(ref, R"("42")"));
  EXPECT_FALSE(accepts(ref, R"("4a")"));
  // anyOf of two patterned strings: the union of their automata (decision 0027 point 2;
  // before, a free string).
  const Grammar any = grammar({{"anyOf", {{{"type", "string"}, {"pattern", "^a"}}, {{"type", "string"}, {"pattern", "^b"}}}}});
  EXPECT_TRUE(accepts(any, R"("ax")"));
  EXPECT_TRUE(accepts(any, R"("b")"));
  EXPECT_FALSE(accepts(any, R"("c")"));
  EXPECT_FALSE(accepts(any, R"("")"));
  // An anyOf of a patterned string and null keeps the pattern.
  const Grammar opt = grammar({{"anyOf", {{{"type", "string"}, {"pattern", "^a"}}, {{"type", "null"}}}}});
  EXPECT_TRUE(accepts(opt, "null"));
  EXPECT_FALSE(accepts(opt, R"("c")"));
}

// Tool-call arguments (kGemmaCall): the same automaton; a patterned string holds no '<',
// which always begins the closing delimiter.
TEST(JsonPattern, ToolCallStrings) {
  const json s = {{"type", "object"},
                  {"properties", {{"day", {{"type", "string"}, {"format", "date"}}}, {"code", {{"type", "string"}, {"pattern", "^[A-Z]{2}\\d$"}}}}},
                  {"required", {"day", "code"}}};
  const Grammar g = grammar(s, JsonSyntax::kGemmaCall);
  EXPECT_TRUE(accepts(g, "{day:<|\"|>2024-01-02<|\"|>,code:<|\"|>AB1<|\"|>}"));
  EXPECT_FALSE(accepts(g, "{day:<|\"|>2024-02-30<|\"|>,code:<|\"|>AB1<|\"|>}"));
  JsonMatcher m(g);
  ASSERT_TRUE(m.feed("{code:<|\"|>AB"));
  EXPECT_FALSE(m.feed(static_cast<unsigned char>('<')));  // cannot close yet; no '<' as text
  EXPECT_TRUE(m.feed("1<|\"|>"));
  // A pattern that needs a '<', or that the compiler refuses, is ignored in a tool call (as
  // every pattern was before), so that the rest of the arguments still follow the schema;
  // in response_format it is a 400.
  for (const char* p : {"^<a>$", "^(?!x)", "\\bword", "a{100000}"}) {
    const json obj = {{"type", "object"},
                      {"properties", {{"a", {{"type", "string"}, {"pattern", p}}}, {"n", {{"type", "integer"}}}}},
                      {"additionalProperties", false}};
    auto call = JsonGrammar::from_schema(obj, "schema", JsonSyntax::kGemmaCall);
    ASSERT_TRUE(call.ok()) << p << ": " << call.status().to_string();
    EXPECT_TRUE(accepts(*call, "{a:<|\"|>free text<|\"|>,n:1}")) << p;
    EXPECT_FALSE(accepts(*call, "{a:<|\"|>free text<|\"|>,n:<|\"|>x<|\"|>}")) << p;
    if (std::string_view(p) != "^<a>$") {
      EXPECT_FALSE(JsonGrammar::from_schema(obj).ok()) << p;
    }
  }
  // Random walks over a call's arguments: no dead end, and the values match.
  std::mt19937 rng(3);
  for (int walk = 0; walk < 200; ++walk) {
    JsonMatcher w(g);
    std::string text;
    while (!w.done()) {
      const std::vector<unsigned char> ok = bytes_taken(w);
      ASSERT_FALSE(ok.empty()) << "dead end after " << text;
      const unsigned char pick = ok[rng() % ok.size()];
      ASSERT_TRUE(w.feed(pick));
      text += static_cast<char>(pick);
      ASSERT_LT(text.size(), 300u);
    }
    const size_t c = text.find("code:<|\"|>");
    ASSERT_NE(c, std::string::npos) << text;
    const std::string code = text.substr(c + 10, text.find("<|\"|>", c + 10) - c - 10);
    EXPECT_TRUE(reference_match("^[A-Z]{2}\\d$", u32(code))) << text;
  }
}

// An object's property count: exhaustively over short objects of three optional keys and
// extra keys, with random walks; and the refusals.
TEST(JsonProperties, MinAndMaxPropertiesAreHeld) {
  for (int min = 0; min <= 3; ++min) {
    for (int max = min; max <= 4; ++max) {
      for (bool closed : {false, true}) {
        for (bool req : {false, true}) {
          if (closed && min > 3) continue;
          if (req && max < 1) continue;
          json s = {{"type", "object"},
                    {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}, {"c", {{"type", "integer"}}}}},
                    {"minProperties", min},
                    {"maxProperties", max}};
          if (closed) s["additionalProperties"] = false;
          if (req) s["required"] = {"c"};
          if (closed && min > 3) continue;
          const Grammar g = grammar(s);
          std::mt19937 rng(static_cast<unsigned>(min * 100 + max * 10 + closed * 2 + req));
          for (int walk = 0; walk < 150; ++walk) {
            JsonMatcher m(g);
            std::string text;
            while (!m.done()) {
              const std::vector<unsigned char> ok = bytes_taken(m);
              ASSERT_FALSE(ok.empty()) << s.dump() << ": dead end after " << text;
              // Short keys and numbers, so that objects end: prefer structure and a..d.
              std::vector<unsigned char> pref;
              for (unsigned char b : ok) {
                if (std::string_view("{}\":,abcd1").find(static_cast<char>(b)) != std::string_view::npos) pref.push_back(b);
              }
              const auto& from = !pref.empty() && rng() % 8 != 0 ? pref : ok;
              const unsigned char pick = from[rng() % from.size()];
              ASSERT_TRUE(m.feed(pick));
              text += static_cast<char>(pick);
              if (text.size() > 300) break;
            }
            if (!m.done()) continue;
            // nlohmann keeps the last of duplicate keys: the count is the properties'.
            const json v = json::parse(text);
            EXPECT_GE(static_cast<int>(v.size()), min) << s.dump() << " " << text;
            EXPECT_LE(static_cast<int>(v.size()), max) << s.dump() << " " << text;
            if (req) {
              EXPECT_TRUE(v.contains("c")) << text;
            }
            if (closed) {
              for (const auto& [k, x] : v.items()) EXPECT_TRUE(k == "a" || k == "b" || k == "c") << text;
            }
          }
        }
      }
    }
  }
  const Grammar two = grammar({{"type", "object"}, {"minProperties", 2}, {"maxProperties", 2}});
  EXPECT_FALSE(accepts(two, R"({"x":1})"));
  EXPECT_FALSE(accepts(two, R"({"x":1,"x":2})"));  // one property written twice
  EXPECT_FALSE(accepts(two, R"({"x":1,"\u0078":2})"));
  EXPECT_TRUE(accepts(two, R"({"x":1,"y":2})"));
  EXPECT_FALSE(accepts(two, R"({"x":1,"y":2,"z":3})"));
  // A declared key in another spelling is that key: its schema, and written once.
  const Grammar declared = grammar({{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}}}, {"minProperties", 2},
                                   {"additionalProperties", true}});
  EXPECT_FALSE(accepts(declared, R"({"a":1,"\u0061":2})"));
  EXPECT_FALSE(accepts(declared, R"({"\u0061":"x","b":2})"));
  EXPECT_TRUE(accepts(declared, R"({"\u0061":1,"b":2})"));
  // Tool calls count bare keys.
  const Grammar call = grammar({{"type", "object"}, {"minProperties", 1}, {"maxProperties", 1}}, JsonSyntax::kGemmaCall);
  EXPECT_TRUE(accepts(call, "{a:1}"));
  EXPECT_FALSE(accepts(call, "{}"));
  EXPECT_FALSE(accepts(call, "{a:1,b:2}"));
  // Refusals name the keyword.
  expect_refused({{"type", "object"}, {"minProperties", 3}, {"maxProperties", 2}}, "schema.minProperties: ",
                 "above maxProperties");
  expect_refused({{"type", "object"}, {"properties", {{"a", json::object()}, {"b", json::object()}}}, {"required", {"a", "b"}}, {"maxProperties", 1}},
                 "schema.maxProperties: ", "2 required");
  expect_refused({{"type", "object"}, {"properties", {{"a", json::object()}}}, {"additionalProperties", false}, {"minProperties", 2}},
                 "schema.minProperties: ", "above the 1 properties");
  expect_refused({{"type", "object"}, {"minProperties", -1}}, "schema.minProperties", "non-negative");
  // allOf intersects counts.
  const Grammar both = grammar({{"allOf", {{{"type", "object"}, {"minProperties", 1}}, {{"maxProperties", 1}}}}});
  EXPECT_TRUE(accepts(both, R"({"a":1})"));
  EXPECT_FALSE(accepts(both, R"({})"));
  expect_refused({{"allOf", {{{"type", "object"}, {"minProperties", 2}}, {{"type", "object"}, {"maxProperties", 1}}}}},
                 "schema.allOf", "above maxProperties");
  // A minProperties whose only key leads back into the schema: no value ends within the depth.
  expect_refused({{"type", "object"}, {"properties", {{"n", {{"$ref", "#"}}}}}, {"additionalProperties", false},
                  {"minProperties", 1}},
                 "schema: ", "levels of nesting");
  const Grammar deep = grammar({{"type", "object"}, {"properties", {{"n", {{"$ref", "#"}}}, {"v", {{"type", "null"}}}}},
                                {"additionalProperties", false}, {"minProperties", 1}});
  EXPECT_TRUE(accepts(deep, R"({"n":{"v":null}})"));
  EXPECT_FALSE(accepts(deep, R"({"n":{}})"));
}

}  // namespace
}  // namespace gs::text
