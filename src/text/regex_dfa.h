// A JSON Schema `pattern` (a subset of ECMA-262 regular expressions) compiled into a
// deterministic automaton over Unicode code points, for the structured-output matcher
// (decision 0027): which strings match, and which prefixes can still become a match.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace gs::text {

// Most states of one automaton (the deterministic one, after pruning, and the NFA it is built
// from holds at most kRegexMaxNfaStates). A pattern past either is refused: `a{100000}`.
inline constexpr int32_t kRegexMaxDfaStates = 4000;
inline constexpr int32_t kRegexMaxNfaStates = 20000;
// Deepest nesting of groups and classes in a pattern (the parser recurses once a level).
inline constexpr int kRegexMaxNesting = 64;

// What compiling may spend, shared by every pattern of one schema (the compiler passes one
// budget to all of them), so that no request costs unbounded time or memory: `work` counts
// the elementary steps of the subset construction, products and length tables; `bytes` the
// memory of the automata and tables kept.
struct RegexBudget {
  int64_t work = 20'000'000;
  int64_t bytes = 32 << 20;
};

// A closed range of code points.
struct CodeRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

// A deterministic automaton over code points (U+0000..U+10FFFF without the surrogates, the
// characters of a JSON string's value once its escapes are decoded). Every state it keeps is
// reached from the start and reaches an accepting state, so no prefix it takes is a dead
// end; bounded() adds a length range and keeps that true for it.
class RegexDfa {
 public:
  struct Edge {
    uint32_t lo = 0;  // code points lo..hi lead to state `to`
    uint32_t hi = 0;
    int32_t to = 0;
  };

  // The strings that CONTAIN a match of `pattern` (JSON Schema 2020-12 validation section
  // 6.3.3: a pattern is not anchored; `^` and `$` anchor it). `pattern` is UTF-8. The subset
  // of ECMA-262 (section 22.2, read without flags, on code points as with the `u` flag):
  // literal characters; escapes \d \D \w \W \s \S, \f \n \r \t \v, \0, \cX, \xHH, \uHHHH
  // (a surrogate pair as one character), \u{H...}, and `\` before any other non-alphanumeric
  // character; `.` (any character but a line terminator, 22.2.2.7.1); classes `[...]` and
  // `[^...]` with ranges; groups `(...)` and `(?:...)` (no captures are kept); `|`;
  // quantifiers * + ? {n} {n,} {n,m}, greedy or lazy (the same set of strings); `^` and `$`
  // (no multiline). As Annex B.1.2 allows, a `{` that begins no quantifier, `}` and `]`
  // are literal. Errors (kInvalidArgument, the message naming the feature, without a path):
  // backreferences, lookahead and lookbehind, \b and \B, named groups, \p{...}, malformed
  // syntax, a lone surrogate, nesting past kRegexMaxNesting, an automaton past the state
  // limits or the budget, and a pattern that no string matches.
  static Result<RegexDfa> compile(std::string_view pattern, RegexBudget* budget);

  // The strings both a and b take (their product, pruned); an automaton of no state (size()
  // 0) when there is none. Errors: past the limits or the budget (kInvalidArgument).
  static Result<RegexDfa> intersect(const RegexDfa& a, const RegexDfa& b, RegexBudget* budget);

  // The strings a or b takes (their product, a side that has died left out, pruned). Errors:
  // past the limits or the budget (kInvalidArgument).
  static Result<RegexDfa> unite(const RegexDfa& a, const RegexDfa& b, RegexBudget* budget);

  // The strings this takes that do not contain code point `cp`. Errors: none left.
  Result<RegexDfa> without_code_point(uint32_t cp) const;

  // The same strings, of min_length..max_length code points only (max_length -1: no bound),
  // with viable() answering for that range. Errors: no string of those lengths matches, or
  // the table that tells it (states x (max_length + 1) bits) exceeds the budget.
  Result<RegexDfa> bounded(int64_t min_length, int64_t max_length, RegexBudget* budget) const;

  int32_t start() const { return 0; }
  int32_t size() const { return static_cast<int32_t>(edges_.size()); }
  const std::vector<Edge>& edges(int32_t state) const { return edges_[static_cast<size_t>(state)]; }
  // The state after `cp` from `state`, or -1 when no match can follow.
  int32_t step(int32_t state, uint32_t cp) const;
  // The code points read so far match (the lengths are the caller's to check).
  bool accepts(int32_t state) const { return accept_[static_cast<size_t>(state)] != 0; }
  // A string that is in `state` after `length` code points can still be finished into a
  // match within the lengths of bounded() (any length when not bounded).
  bool viable(int32_t state, int64_t length) const;
  // Some code point within `ranges` leads from `state` to a state viable at `length` (the
  // length once that code point is counted).
  bool may_take(int32_t state, int64_t length, const CodeRange* ranges, int n_ranges) const;
  // The whole of `text` (code points) matches, within the lengths.
  bool matches(std::u32string_view text) const;
  // Bytes this automaton holds (for budgets).
  int64_t bytes() const;

 private:
  // Keeps the states reached from `start` that reach an accepting one, renumbered from 0.
  // False when the start reaches none.
  bool prune(int32_t start);

  std::vector<std::vector<Edge>> edges_;
  std::vector<uint8_t> accept_;
  // bounded(): the lengths, and for an unbounded max_length per state whether completions of
  // every length follow (a cycle is reachable) and else the longest; for a bounded one a
  // bit per state and length: viable.
  int64_t min_length_ = 0;
  int64_t max_length_ = -1;
  std::vector<uint8_t> endless_;
  std::vector<int64_t> longest_;
  std::vector<uint64_t> fit_;
  int64_t fit_words_ = 0;
};

// The code points of UTF-8 text (invalid sequences: nothing).
bool decode_utf8(std::string_view text, std::u32string* out);

}  // namespace gs::text
