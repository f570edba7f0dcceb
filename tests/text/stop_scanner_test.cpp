// StopScanner (text/stop_scanner.h): the same results as the rescanning hold-back it replaced
// (earliest end, the longest on a tie, the longest held prefix), over many stop sets, texts and
// chunkings, in the output parser and alone; linear work on stop strings built to make the old
// scan quadratic; and vLLM's min_tokens rule for a stop string that straddles the boundary.
#include "text/stop_scanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cpu_time.h"
#include "parser_test_util.h"
#include "text/output_parser.h"

namespace gs::text {
namespace {

// The hold-back that OutputParser and server::StopMatcher ran before the scanner, restated: on
// each piece, the held text and the piece are searched whole for every stop string, then the
// longest tail that is a proper prefix of one is held (work: held length times stop length, for
// every piece).
class RescanReference {
 public:
  explicit RescanReference(std::vector<std::string> stops) {
    for (auto& s : stops) {
      if (!s.empty()) stops_.push_back(std::move(s));
    }
  }
  // Released text; *stop set when a stop string matched (then nothing more is released).
  std::string feed(std::string_view text, std::optional<std::string>* stop) {
    if (done_) return {};
    std::string t = hold_ + std::string(text);
    hold_.clear();
    size_t best_end = std::string::npos;
    size_t best_len = 0;
    for (const auto& s : stops_) {
      const size_t p = t.find(s);
      if (p == std::string::npos) continue;
      const size_t end = p + s.size();
      if (end < best_end || (end == best_end && s.size() > best_len)) {
        best_end = end;
        best_len = s.size();
      }
    }
    if (best_end != std::string::npos) {
      done_ = true;
      *stop = t.substr(best_end - best_len, best_len);
      return t.substr(0, best_end - best_len);
    }
    size_t keep = 0;
    for (const auto& s : stops_) {
      for (size_t k = std::min(s.size() - 1, t.size()); k > keep; --k) {
        if (t.compare(t.size() - k, k, s, 0, k) == 0) {
          keep = k;
          break;
        }
      }
    }
    hold_ = t.substr(t.size() - keep);
    return t.substr(0, t.size() - keep);
  }
  std::string finish() { return done_ ? std::string() : std::exchange(hold_, {}); }
  size_t held() const { return hold_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string hold_;
  bool done_ = false;
};

std::string random_text(std::mt19937_64& rng, std::string_view alphabet, size_t max_len) {
  std::string s(rng() % (max_len + 1), ' ');
  for (char& c : s) c = alphabet[rng() % alphabet.size()];
  return s;
}

// Cut points of `text` into pieces of 1..max_piece bytes.
std::vector<size_t> random_cuts(std::mt19937_64& rng, size_t size, size_t max_piece) {
  std::vector<size_t> cuts;
  for (size_t at = 1 + rng() % max_piece; at < size; at += 1 + rng() % max_piece) cuts.push_back(at);
  return cuts;
}

TEST(StopScanner, SameResultsAsTheRescanItReplaced) {
  std::mt19937_64 rng(20261206);
  int matched = 0;
  for (int round = 0; round < 20000; ++round) {
    // A small alphabet makes overlapping, nested and repeated stop strings common.
    const std::string_view alphabet = round % 3 == 0 ? "ab" : "abc.";
    std::vector<std::string> stops(rng() % 5);
    for (auto& s : stops) s = random_text(rng, alphabet, 6);
    const std::string text = random_text(rng, alphabet, 40);
    const std::vector<size_t> cuts = random_cuts(rng, text.size(), 1 + rng() % 7);
    StopScanner scanner(stops);
    RescanReference reference(stops);
    std::string got, want;
    std::optional<std::string> want_stop;
    std::optional<size_t> got_stop;
    size_t prev = 0;
    for (size_t k = 0; k <= cuts.size(); ++k) {
      const size_t end = k < cuts.size() ? cuts[k] : text.size();
      const std::string_view piece = std::string_view(text).substr(prev, end - prev);
      prev = end;
      want += reference.feed(piece, &want_stop);
      const std::optional<size_t> hit = scanner.feed(piece, /*armed=*/true, &got);
      if (hit && !got_stop) got_stop = hit;
      // The same text is held back after every piece, not only at the end.
      ASSERT_EQ(got, want) << "round " << round << " text '" << text << "'";
      if (!want_stop) {
        ASSERT_EQ(scanner.held_bytes(), reference.held());
      }
    }
    want += reference.finish();
    got += scanner.flush();
    ASSERT_EQ(got, want) << "round " << round << " text '" << text << "'";
    ASSERT_EQ(got_stop.has_value(), want_stop.has_value()) << "round " << round << " text '" << text << "'";
    if (got_stop) {
      EXPECT_EQ(scanner.stops()[*got_stop], *want_stop);
      ++matched;
    }
  }
  EXPECT_GT(matched, 2000);  // the cases do exercise matches, not only hold-back
}

// The output parser's content and stop string over the same cases (plain text, which it passes
// through as content): as the reference gives them.
TEST(StopScanner, TheOutputParserGivesTheSameContentAsBefore) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 5000; ++round) {
    std::vector<std::string> stops(1 + rng() % 4);
    for (auto& s : stops) s = random_text(rng, "ab.", 5);
    const std::string text = "x" + random_text(rng, "ab. ", 40);
    RescanReference reference(stops);
    std::optional<std::string> want_stop;
    std::string want = reference.feed(text, &want_stop);
    want += reference.finish();
    ParserOptions o = test_util::opts(false, false, stops);
    const std::vector<size_t> cuts = random_cuts(rng, text.size(), 1 + rng() % 5);
    const ParsedMessage m = [&] {
      MessageAccumulator acc;
      acc.add(test_util::feed_split(text, cuts, o));
      return acc.message();
    }();
    // The parser drops the content's trailing whitespace at the end.
    std::string want_content = want;
    if (!want_stop) {
      while (!want_content.empty() && want_content.back() == ' ') want_content.pop_back();
    }
    std::string got_content = m.content;
    if (!m.stop) {
      while (!got_content.empty() && got_content.back() == ' ') got_content.pop_back();
    }
    ASSERT_EQ(got_content, want_content) << "round " << round << " text '" << text << "'";
    ASSERT_EQ(m.stop, want_stop) << "round " << round << " text '" << text << "'";
  }
}

// 16 stop strings of `len` bytes that share all but their last byte, over 200000 bytes of the
// shared letter fed a byte at a time (as tokens arrive): every piece leaves a whole prefix held.
// The rescan searched the held text again for every stop string on every piece (16 x len bytes
// a piece: the reference above takes 2.3 s of CPU at len 32768 and 0.04 s at len 64 on the
// 2-core build machine); the scanner does the same work whatever the length. The fastest of
// three runs, in this thread's CPU time.
TEST(StopScanner, PathologicalStopStringsTakeLinearTime) {
  const auto run = [](size_t len) {
    std::vector<std::string> stops;
    for (int i = 0; i < 16; ++i) stops.push_back(std::string(len - 1, 'a') + static_cast<char>('b' + i));
    return test::fastest_cpu_seconds([&] {
      OutputParser p(test_util::opts(false, false, stops));
      size_t content = 0;
      for (int i = 0; i < 200000; ++i) {
        for (const auto& e : p.feed("a")) content += e.text.size();
      }
      for (const auto& e : p.finish()) content += e.text.size();
      EXPECT_EQ(content, 200000u);
    });
  };
  const double t_short = run(64);
  const double t_long = run(32768);
  EXPECT_LT(t_long, std::max(4.0 * t_short, 0.25)) << "stop strings of 64 bytes " << t_short
                                                   << " s, of 32768 bytes " << t_long << " s";
}

// vLLM's min_tokens: a stop string counts where it ends in the text after the boundary, wherever
// it began; the text that may begin one is held before the boundary too, so the one that
// straddles it is cut whole (before, the text up to the boundary was released unheld and the
// stop string that completed after it was not seen). One that ends before the boundary is not
// matched.
TEST(StopScanner, AStopStringThatStraddlesTheArmingIsMatchedWhole) {
  StopScanner s({"STOP"});
  std::string out;
  EXPECT_FALSE(s.feed("Hello ST", /*armed=*/false, &out));
  EXPECT_EQ(out, "Hello ");
  EXPECT_EQ(s.feed("OP and more", /*armed=*/true, &out), std::optional<size_t>(0));
  EXPECT_EQ(out, "Hello ");

  StopScanner before({"STOP"});
  out.clear();
  EXPECT_FALSE(before.feed("a STOP b ST", false, &out));
  EXPECT_FALSE(before.feed("x", true, &out));
  out += before.flush();
  EXPECT_EQ(out, "a STOP b STx");

  // The same in the parser (chat content): unarmed, then arm_stop_strings().
  ParserOptions unarmed = test_util::opts(false, false, {"there. STOP"});
  unarmed.stop_armed = false;
  OutputParser q(unarmed);
  MessageAccumulator acc;
  acc.add(q.feed("Hello the"));
  q.arm_stop_strings();
  acc.add(q.feed("re. STOP and more"));
  acc.add(q.finish());
  EXPECT_EQ(acc.message().content, "Hello ");
  EXPECT_EQ(acc.message().stop, std::optional<std::string>("there. STOP"));
}

}  // namespace
}  // namespace gs::text
