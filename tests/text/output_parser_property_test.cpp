// Property tests of the output parser: any chunking of an output gives the same merged
// events as one chunk; content and reasoning never hold markup; every call's arguments are
// one JSON object. Over fixed outputs and over randomly generated (often malformed) ones.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "parser_test_util.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "test_files.h"

namespace gs::text {
namespace {

using test_util::describe;
using test_util::feed_chunks;
using test_util::feed_random;

const std::vector<std::string>& fixed_outputs() {
  static const std::vector<std::string> outputs = {
      "Hello, world!",
      "<|channel>thought\nThe user wants 6*7.\nIt is 42.\n<channel|>The answer is 42.<turn|>",
      "<|turn>model\n<|channel>thought\nhmm<channel|>Hi there.",
      "<|tool_call>call:save_note{text: \"The user's name is Ada.\"}<tool_call|>",
      "<|tool_call>call:set_volume{level:42,muted:false,device:null,gain:-3.5,big:1e3}<tool_call|>",
      "<|tool_call>call:load{refs:[\"ds_1\",'ds_2'],opts:{\"mode\": \"fast\"}}<tool_call|>",
      "<|tool_call>:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
      "<|channel>thought\nLet me look at the file.<channel|>call:bash{command:<|\"|>cat /srv/app/main.c<|\"|>}",
      "<|tool_call>call:run_terminal_command:\nBEGIN_ARG:\nls\nEND_ARG\n<|channel>thought\n<channel|><|channel>"
      "thought\n<channel|>",
      "<|tool_call>call:get_station{id:<|\"|>ST-1142<|\"|>}<tool_call|><|tool_call>call:get_weather{city:"
      "<|\"|>Lyon<|\"|>}<tool_call|><|tool_response>",
      "---\n<|channel>thought\nok<channel|>{\"name\":\"Ann\"}",
      "<|channel>thought\nI think, therefore",
      "Let me check.\n<|tool_call>call:f{s:<|\"|>a\\b\"c\nd<|\"|>,n:[1,{k:[]}]}<tool_call|>\n\nDone <|\"|>x",
      "ok 🌍🎉 日本語 <|chan",
      "<|tool_call>call:f{a:\"x\\\"y\\u00e9\\ud83d\\ude00\"}<tool_call|>",
      "A<turn|>B<|tool_response>C<tool_response|>D<|think|>E<|tool>F<tool|>G<tool_call|>H<channel|>I",
      "  \n\ncall:f{x:1}  \n <tool_call|>  call:g{y:2}",
      "<|tool_call>call:f{a:1 b:2,c:ls -la /tmp,d:<|\"|>unterminated",
      "text with STOP inside and ST at the end ST",
      "line1\n\nline2 <|channel>thought\nhidden\n\n<channel|>after\n\nend",
      "<|tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}<tool_call|>",
      "<|tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, {\\\"b\\\": \\\"}x\\\"}]}\", \"id\": 3}<tool_call|>Done",
  };
  return outputs;
}

std::vector<ParserOptions> option_variants() {
  std::vector<ParserOptions> v;
  v.push_back(test_util::opts());
  v.push_back(test_util::opts(/*tools=*/false));
  v.push_back(test_util::opts(true, /*reasoning=*/false));
  v.push_back(test_util::opts(true, true, {"STOP", "\n\n", "<b>"}));
  ParserOptions in_reasoning = test_util::opts();
  in_reasoning.starts_in_reasoning = true;
  v.push_back(in_reasoning);
  return v;
}

// `text` with every markup token removed (one left-to-right pass).
std::string without_markup(std::string_view text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    bool removed = false;
    for (const auto m : test_util::kAllMarkup) {
      if (text.compare(i, m.size(), m) == 0) {
        i += m.size();
        removed = true;
        break;
      }
    }
    if (!removed) out.push_back(text[i++]);
  }
  return out;
}

void check_invariants(const std::string& text, const ParserOptions& o, int n_random_splits) {
  const auto whole = feed_chunks(text, text.size() + 1, o);
  const std::string want = describe(merge_events(whole));
  for (const size_t chunk : {1, 2, 3, 7, 50}) {
    ASSERT_EQ(describe(merge_events(feed_chunks(text, chunk, o))), want) << "chunk " << chunk << " of: " << text;
  }
  for (int seed = 0; seed < n_random_splits; ++seed) {
    ASSERT_EQ(describe(merge_events(feed_random(text, static_cast<uint32_t>(seed), o))), want)
        << "random split " << seed << " of: " << text;
  }
  const ParsedMessage m = test_util::assemble(whole);
  // No content or reasoning delta (merged) holds markup, unless the input's own text forms
  // markup once its markup tokens are removed ("<chan" + "<|think|>" + "nel|>"): that is text
  // the input wrote, not markup let through.
  const bool text_forms_markup = test_util::has_markup(without_markup(text));
  for (const auto& e : merge_events(whole)) {
    if (e.kind == ParserEventKind::kContent || e.kind == ParserEventKind::kReasoning) {
      EXPECT_TRUE(!test_util::has_markup(e.text) || text_forms_markup) << text << " -> " << describe({e});
    }
  }
  test_util::expect_valid_calls(m, text);
  if (!o.parse_tool_calls) {
    EXPECT_TRUE(m.tool_calls.empty());
  }
  // Tool call events are well nested: begin, args*, end, with increasing indices.
  int expected_index = 0;
  bool open = false;
  for (const auto& e : whole) {
    if (e.kind == ParserEventKind::kToolCallBegin) {
      EXPECT_FALSE(open);
      EXPECT_EQ(e.tool_index, expected_index++);
      open = true;
    } else if (e.kind == ParserEventKind::kToolCallArgs) {
      EXPECT_TRUE(open);
    } else if (e.kind == ParserEventKind::kToolCallEnd) {
      EXPECT_TRUE(open);
      open = false;
    }
  }
  EXPECT_FALSE(open);
}

TEST(OutputParserProperty, FixedOutputsAnyChunking) {
  for (const auto& o : option_variants()) {
    for (const auto& text : fixed_outputs()) check_invariants(text, o, 60);
  }
}

// Random outputs built from well-formed and malformed pieces of Gemma 4 output.
std::string random_output(std::mt19937& rng) {
  const auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  static const std::vector<std::string> words = {
      "Hello", " world", "\n", "\n\n", "  ", "call", "call:", "c", "<", ">", "|", "{", "}", "[", "]", ":", ",",
      "\"", "'", "\\", "---", "#", "STOP", "ST", "日本", "😀", "<b>", "thought", "=", "1e3", "-2", "true", "None",
      "<|", "|>", "<|\"", "tool", "_call", "<channel", "x",
  };
  static const std::vector<std::string> marks = {
      "<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|turn>", "<turn|>", "<|tool_response>",
      "<tool_response|>", "<|\"|>", "<|think|>", "<|tool>", "<tool|>", "<|turn>model\n", "<|channel>thought\n",
  };
  static const std::vector<std::string> values = {
      "<|\"|>text<|\"|>", "<|\"|>multi\nline \"q\"<|\"|>", "42", "-3.5", "1e3", "true", "false", "null", "True",
      "\"json\"", "'py'", "bare words", "[1,<|\"|>a<|\"|>,[]]", "{k:<|\"|>v<|\"|>,n:{}}", "", "+7", "[", "{",
  };
  const auto args = [&] {
    std::string a(1, '{');
    const int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      if (i > 0) a += (rng() % 8 == 0) ? " " : ",";
      std::string key(1, 'k');
      key.append(std::to_string(i));
      if (rng() % 6 == 0) {
        a.append(1, '"').append(key).append(1, '"');
      } else {
        a.append(key);
      }
      a += (rng() % 10 == 0) ? "=" : ":";
      a += pick(values);
    }
    if (rng() % 6 != 0) a += "}";
    return a;
  };
  std::string out;
  const int n_pieces = 1 + static_cast<int>(rng() % 10);
  for (int p = 0; p < n_pieces; ++p) {
    switch (rng() % 8) {
      case 0:
      case 1: {
        const int n = 1 + static_cast<int>(rng() % 6);
        for (int i = 0; i < n; ++i) out += pick(words);
        break;
      }
      case 2:
        out += pick(marks);
        break;
      case 3:
        out += "<|channel>thought\n" + pick(words) + pick(words) + (rng() % 4 ? "<channel|>" : "");
        break;
      case 4:
        out.append(rng() % 5 ? "<|tool_call>call:" : (rng() % 2 ? "call:" : "<|tool_call>:"));
        out.append(rng() % 7 ? "fn_name" : "bad name");
        out.append(args());
        out.append(rng() % 3 ? "<tool_call|>" : "");
        break;
      case 5: {
        const std::string m = pick(marks);
        out += m.substr(0, 1 + rng() % m.size());  // a cut marker
        break;
      }
      case 6: {  // the JSON form, its arguments an object or a JSON string holding one
        out.append("<|tool_call>{\"name\": \"fn_name\", \"arguments\": ");
        const std::string a = args();
        if (rng() % 3 == 0) {
          out.push_back('"');
          for (const char c : a) {
            if (c == '"' || c == '\\') out.push_back('\\');
            out.push_back(c);
          }
          if (rng() % 4 != 0) out.push_back('"');
        } else {
          out.append(a);
        }
        out.append(rng() % 4 ? "}" : "");
        out.append(rng() % 3 ? "<tool_call|>" : "");
        break;
      }
      default:
        out += std::string(rng() % 3, ' ') + pick(values);
        break;
    }
  }
  return out;
}

TEST(OutputParserProperty, RandomOutputsAnyChunking) {
  const auto variants = option_variants();
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    const std::string text = random_output(rng);
    check_invariants(text, variants[seed % variants.size()], 8);
    if (::testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
  }
}

// The real pipeline: the output's token ids, decoded one token at a time, fed to the parser
// per token, give the same events as the whole text.
TEST(OutputParserProperty, TokenByTokenThroughTheDetokenizer) {
  const Tokenizer& tok = test_files::gemma4_vocab();
  for (const auto& text : fixed_outputs()) {
    const auto ids = tok.encode(text, false, /*parse_special=*/true);
    IncrementalDecoder dec(tok, DecodeOptions{.render_special = true});
    OutputParser p(test_util::opts());
    std::vector<ParserEvent> streamed;
    std::string decoded;
    for (const int32_t id : ids) {
      const std::string piece = dec.push(id);
      decoded += piece;
      auto ev = p.feed(piece);
      streamed.insert(streamed.end(), ev.begin(), ev.end());
    }
    auto ev = p.feed(dec.finish());
    streamed.insert(streamed.end(), ev.begin(), ev.end());
    ev = p.finish();
    streamed.insert(streamed.end(), ev.begin(), ev.end());
    const std::string clean = sanitize_utf8(text);
    EXPECT_EQ(decoded, clean);
    EXPECT_EQ(describe(merge_events(streamed)), describe(merge_events(feed_chunks(clean, clean.size() + 1, test_util::opts()))))
        << text;
  }
}

// The content with reasoning_in_content (decision 0034) split into the answer around the
// blocks and the blocks' texts: a block runs from kReasoningOpenMarkup (or from the start,
// when the prompt opened it) to <channel|> or the end. False when that reading does not
// hold: a block cut off by a call or a turn has no closer, so the answer after it would be
// read as the block's.
bool split_blocks(std::string_view content, bool starts_in_block, std::string* answer,
                  std::vector<std::string>* blocks) {
  const std::string_view close = markup::kChannelClose;
  size_t i = 0;
  bool in_block = starts_in_block;
  while (i <= content.size()) {
    if (in_block) {
      const size_t end = content.find(close, i);
      blocks->emplace_back(content.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i));
      if (end == std::string_view::npos) return true;
      i = end + close.size();
      in_block = false;
      continue;
    }
    const size_t open = content.find(kReasoningOpenMarkup, i);
    const size_t stray = content.find(close, i);
    if (stray < open) return false;
    answer->append(content.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i));
    if (open == std::string_view::npos) return true;
    i = open + kReasoningOpenMarkup.size();
    in_block = true;
  }
  return true;
}

// reasoning_in_content changes nothing but the content: any chunking agrees (on the text of
// each kind between other events: a block's pieces come as content and reasoning in turn),
// every other event is the same as without it, and where every block ends at its closer or at the end
// (no call or turn inside one), the content is the answer without the option with the
// blocks put back, whose texts (the empty ones left out) joined by a blank line are
// reasoning_content.
void check_reasoning_in_content(const std::string& text, ParserOptions o, int n_random_splits) {
  if (!o.parse_reasoning) return;
  const ParserOptions base = o;
  o.reasoning_in_content = true;
  const auto whole = feed_chunks(text, text.size() + 1, o);
  const std::string want = describe(test_util::merge_text_runs(whole));
  for (const size_t chunk : {1, 3, 7}) {
    ASSERT_EQ(describe(test_util::merge_text_runs(feed_chunks(text, chunk, o))), want)
        << "chunk " << chunk << " of: " << text;
  }
  for (int seed = 0; seed < n_random_splits; ++seed) {
    ASSERT_EQ(describe(test_util::merge_text_runs(feed_random(text, static_cast<uint32_t>(seed), o))), want)
        << "random split " << seed << " of: " << text;
  }
  const auto plain = feed_chunks(text, text.size() + 1, base);
  const auto not_content = [](const std::vector<ParserEvent>& events) {
    std::vector<ParserEvent> out;
    for (const auto& e : merge_events(events)) {
      if (e.kind != ParserEventKind::kContent) out.push_back(e);
    }
    return describe(merge_events(out));
  };
  ASSERT_EQ(not_content(whole), not_content(plain)) << text;
  const ParsedMessage with = test_util::assemble(whole);
  const ParsedMessage without = test_util::assemble(plain);
  const bool cut_blocks = text.find(markup::kToolCallOpen) != std::string::npos ||
                          text.find(markup::kTurnOpen) != std::string::npos ||
                          test_util::has_markup(without_markup(text));
  if (cut_blocks) return;
  std::string answer;
  std::vector<std::string> blocks;
  ASSERT_TRUE(split_blocks(with.content, o.starts_in_reasoning || o.continues_reasoning, &answer, &blocks))
      << text << " -> " << with.content;
  EXPECT_EQ(answer, without.content) << text << " -> " << with.content;
  std::string joined;
  for (const auto& b : blocks) {
    if (b.empty()) continue;
    if (!joined.empty()) joined += "\n\n";
    joined += b;
  }
  EXPECT_EQ(joined, without.reasoning_content) << text << " -> " << with.content;
}

TEST(OutputParserProperty, ReasoningInContentChangesOnlyTheContent) {
  const auto variants = option_variants();
  for (const auto& o : variants) {
    for (const auto& text : fixed_outputs()) check_reasoning_in_content(text, o, 20);
  }
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    const std::string text = random_output(rng);
    check_reasoning_in_content(text, variants[seed % variants.size()], 4);
    if (::testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
  }
}

TEST(OutputParserProperty, RandomBytesNeverCrash) {
  std::mt19937 rng(77);
  for (int k = 0; k < 300; ++k) {
    std::string text(rng() % 200, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    const auto o = test_util::opts(true, true, {"\x01\x02"});
    const auto whole = feed_chunks(text, text.size() + 1, o);
    EXPECT_EQ(describe(merge_events(feed_chunks(text, 1, o))), describe(merge_events(whole)));
    test_util::expect_valid_calls(test_util::assemble(whole), "random bytes");
  }
}

}  // namespace
}  // namespace gs::text
