// Stop strings over text that arrives in pieces: finds the first place where one of them ends,
// and holds back the text that may still begin one, so that no part of a stop string is ever
// released. Work is linear in the text: each stop string keeps the length of its longest prefix
// that ends the text so far, advanced byte by byte through its failure function (Knuth, Morris
// and Pratt), O(1) amortized per byte and stop string; the held text is never scanned again.
// Shared by the output parser (chat content) and the raw completions route (server/stop_matcher.h).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gs::text {

// A set of stop strings and what matching them needs (each one's failure function), built
// once and shared: the choices of a request, its plan and their parsers hold one set, where
// each held a copy of the strings and its own tables (16 choices of a 7 MB stop string took
// 1 GB; decision 0051). Copying a StopStrings copies a pointer.
class StopStrings {
 public:
  StopStrings() = default;
  // Empty strings are dropped. Memory: the strings, and 4 bytes per byte of them beside.
  StopStrings(std::vector<std::string> stops);  // NOLINT: a list of strings is a set of them
  StopStrings(std::initializer_list<std::string> stops) : StopStrings(std::vector<std::string>(stops)) {}

  bool empty() const { return !table_ || table_->strings.empty(); }
  const std::vector<std::string>& strings() const;
  // border(i)[k]: the length of the longest proper prefix of strings()[i] that is also a
  // suffix of its first k + 1 bytes.
  const std::vector<uint32_t>& border(size_t i) const { return table_->borders[i]; }

 private:
  struct Table {
    std::vector<std::string> strings;
    std::vector<std::vector<uint32_t>> borders;
  };
  std::shared_ptr<const Table> table_;
};

class StopScanner {
 public:
  // A scanner of its own keeps only its matching state (a few bytes a stop string) beside the
  // shared set.
  explicit StopScanner(StopStrings stops = {});

  bool empty() const { return stops_.empty(); }

  // Feeds `text` and appends to *released what can no longer be part of a stop string. When
  // `armed`, the first stop string that ends in `text` (the earliest end; the longest one on a
  // tie) ends the scan: *released gets the text before it (held text included) and its index
  // in stops() is returned. Unarmed, no stop string is matched, but text that may begin one is
  // held all the same: one that ends in a later armed piece is found whole, wherever it began
  // (vLLM's min_tokens: stop strings are checked only once that many tokens are out).
  // After a match, further input is ignored.
  std::optional<size_t> feed(std::string_view text, bool armed, std::string* released);
  // Releases the held text and forgets every partial match (the end of the output, or markup
  // that a stop string cannot span).
  std::string flush();

  const std::vector<std::string>& stops() const { return stops_.strings(); }
  bool matched() const { return matched_; }
  size_t held_bytes() const { return held_len_; }

 private:
  // The first `n` bytes of the held text followed by `text`.
  void append_pending(size_t n, std::string_view text, std::string* out) const;

  StopStrings stops_;
  std::vector<uint32_t> state_;  // per stop string: its longest prefix that ends the text
  // The held text: the first held_len_ bytes of stops()[held_stop_] (the longest state).
  size_t held_len_ = 0;
  size_t held_stop_ = 0;
  bool matched_ = false;
};

}  // namespace gs::text
