// Helpers for the output-parser tests: feeding in chunks, merged comparison, markup checks.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "text/chat_format.h"
#include "text/output_parser.h"
#include "parser_event_text.h"

namespace gs::text::test_util {

inline constexpr uint64_t kSeed = 1234;

inline ParserOptions opts(bool tools = true, bool reasoning = true, std::vector<std::string> stop = {}) {
  ParserOptions o;
  o.parse_tool_calls = tools;
  o.parse_reasoning = reasoning;
  o.stop = std::move(stop);
  o.tool_call_id_seed = kSeed;
  return o;
}

// Feeds `text` split at the given cut points (sorted offsets), returns all events.
inline std::vector<ParserEvent> feed_split(std::string_view text, const std::vector<size_t>& cuts,
                                           const ParserOptions& o) {
  OutputParser p(o);
  std::vector<ParserEvent> all;
  size_t prev = 0;
  for (const size_t c : cuts) {
    auto ev = p.feed(text.substr(prev, c - prev));
    all.insert(all.end(), ev.begin(), ev.end());
    prev = c;
  }
  auto ev = p.feed(text.substr(prev));
  all.insert(all.end(), ev.begin(), ev.end());
  ev = p.finish();
  all.insert(all.end(), ev.begin(), ev.end());
  return all;
}

inline std::vector<ParserEvent> feed_chunks(std::string_view text, size_t chunk, const ParserOptions& o) {
  std::vector<size_t> cuts;
  for (size_t c = chunk; c < text.size(); c += chunk) cuts.push_back(c);
  return feed_split(text, cuts, o);
}

inline std::vector<ParserEvent> feed_random(std::string_view text, uint32_t seed, const ParserOptions& o) {
  std::mt19937 rng(seed);
  std::vector<size_t> cuts;
  size_t pos = 0;
  while (true) {
    pos += 1 + rng() % 9;
    if (pos >= text.size()) break;
    cuts.push_back(pos);
  }
  return feed_split(text, cuts, o);
}

inline ParsedMessage assemble(const std::vector<ParserEvent>& events) {
  MessageAccumulator acc;
  acc.add(events);
  return acc.message();
}


// The canonical events under ParserOptions::reasoning_in_content, where a block's text comes
// as content and reasoning pieces in turn (how they interleave follows the chunking): each
// run of content and reasoning events as one content event, then one reasoning event.
inline std::vector<ParserEvent> merge_text_runs(const std::vector<ParserEvent>& events) {
  std::vector<ParserEvent> out;
  ParserEvent content, reasoning;
  content.kind = ParserEventKind::kContent;
  reasoning.kind = ParserEventKind::kReasoning;
  const auto flush = [&] {
    if (!content.text.empty()) out.push_back(content);
    if (!reasoning.text.empty()) out.push_back(reasoning);
    content.text.clear();
    reasoning.text.clear();
  };
  for (const auto& e : events) {
    if (e.kind == ParserEventKind::kContent) {
      content.text += e.text;
    } else if (e.kind == ParserEventKind::kReasoning) {
      reasoning.text += e.text;
    } else {
      flush();
      out.push_back(e);
    }
  }
  flush();
  return merge_events(out);
}

inline bool same_events(const std::vector<ParserEvent>& a, const std::vector<ParserEvent>& b) {
  return describe(merge_events(a)) == describe(merge_events(b));
}

inline constexpr std::string_view kAllMarkup[] = {
    markup::kTurnOpen,         markup::kTurnClose,         markup::kChannelOpen,   markup::kChannelClose,
    markup::kToolCallOpen,     markup::kToolCallClose,     markup::kToolResponseOpen,
    markup::kToolResponseClose, markup::kQuote,            markup::kThink,         markup::kToolOpen,
    markup::kToolClose,
};

inline bool has_markup(std::string_view s) {
  for (const auto m : kAllMarkup) {
    if (s.find(m) != std::string_view::npos) return true;
  }
  return false;
}

// Every call's arguments form one JSON object.
inline void expect_valid_calls(const ParsedMessage& m, const std::string& context) {
  for (const auto& call : m.tool_calls) {
    const auto j = nlohmann::json::parse(call.arguments_json, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << context << ": invalid JSON " << call.arguments_json;
    EXPECT_TRUE(j.is_object()) << context << ": not an object " << call.arguments_json;
  }
}

// Parses `text` whole, cut at every byte offset, and byte by byte; all must agree. Checks
// that content holds no markup and every call's arguments are one JSON object.
inline ParsedMessage parse_every_split(const std::string& text, const ParserOptions& o = opts()) {
  const auto whole = feed_split(text, {}, o);
  const std::string want = describe(merge_events(whole));
  for (size_t cut = 1; cut < text.size(); ++cut) {
    EXPECT_EQ(describe(merge_events(feed_split(text, {cut}, o))), want) << "cut at " << cut << ": " << text;
  }
  EXPECT_EQ(describe(merge_events(feed_chunks(text, 1, o))), want) << "1-byte chunks: " << text;
  const ParsedMessage m = assemble(whole);
  EXPECT_FALSE(has_markup(m.content)) << text;
  expect_valid_calls(m, text);
  return m;
}

}  // namespace gs::text::test_util
