// Tokenizer unit tests: BPE semantics on small vocabularies, byte fallback, special tokens,
// decoding, GGUF errors, the shipped cut-down vocabulary, and growth on huge lines.
#include <gtest/gtest.h>
#include <malloc.h>

#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "common/test_paths.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "test_files.h"

namespace gs::text {
namespace {

using test_files::read_file;

const Tokenizer& full() { return test_files::gemma4_vocab(); }
const Tokenizer& shakes() { return test_files::shakes_vocab(); }

// A small vocabulary: specials, 256 byte tokens, letters, and merges.
Tokenizer::Vocab small_vocab() {
  Tokenizer::Vocab v;
  const auto add = [&](const std::string& s, TokenType t) {
    v.tokens.push_back(s);
    v.types.push_back(t);
    return static_cast<int32_t>(v.tokens.size() - 1);
  };
  add("<pad>", TokenType::kControl);
  v.eos_id = add("<eos>", TokenType::kControl);
  v.bos_id = add("<bos>", TokenType::kControl);
  v.unk_id = add("<unk>", TokenType::kControl);
  add("<|turn>", TokenType::kControl);
  add("<turn|>", TokenType::kControl);
  add("<|channel>", TokenType::kUserDefined);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, TokenType::kByte);
  }
  for (const char* s : {"a", "b", "c", "\xE2\x96\x81", "\n", "ab", "abc", "bc", "aa", "\xE2\x96\x81" "a", "\n\n", "é"}) {
    add(s, TokenType::kNormal);
  }
  // Rank order: a a < a b < ab c < b c < ▁ a < \n \n
  v.merges = {"a a", "a b", "ab c", "b c", "\xE2\x96\x81 a", "\n \n"};
  return v;
}

std::shared_ptr<const Tokenizer> make(Tokenizer::Vocab v) {
  auto t = Tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? *t : nullptr;
}

std::vector<std::string> texts(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (const int32_t id : ids) out.emplace_back(t.token_text(id));
  return out;
}

using Strings = std::vector<std::string>;

TEST(Tokenizer, MergesByRankLeftmostOnTies) {
  const auto t = make(small_vocab());
  EXPECT_EQ(texts(*t, t->encode("abc", false, false)), (Strings{"abc"}));
  // "aaa": a+a is the lowest rank; leftmost first gives "aa" "a".
  EXPECT_EQ(texts(*t, t->encode("aaa", false, false)), (Strings{"aa", "a"}));
  EXPECT_EQ(texts(*t, t->encode("aaaa", false, false)), (Strings{"aa", "aa"}));
  // "abab c" -> ab ab ▁ c ... spaces become U+2581 and merge with a following 'a'.
  EXPECT_EQ(texts(*t, t->encode("ab a", false, false)), (Strings{"ab", "\xE2\x96\x81" "a"}));
  // "bc" exists, but "abc" merges a+b first (rank 1 < rank 3), then ab+c.
  EXPECT_EQ(texts(*t, t->encode("abcbc", false, false)), (Strings{"abc", "bc"}));
}

TEST(Tokenizer, NewlineRunsAreTheirOwnPieces) {
  const auto t = make(small_vocab());
  EXPECT_EQ(texts(*t, t->encode("a\n\nb", false, false)), (Strings{"a", "\n\n", "b"}));
  EXPECT_EQ(texts(*t, t->encode("\n\n\n", false, false)), (Strings{"\n\n", "\n"}));
}

TEST(Tokenizer, ByteFallbackForUnknownCharacters) {
  const auto t = make(small_vocab());
  // 'z' and '€' are not in the vocabulary: their UTF-8 bytes become <0xHH> tokens.
  EXPECT_EQ(texts(*t, t->encode("az€", false, false)), (Strings{"a", "<0x7A>", "<0xE2>", "<0x82>", "<0xAC>"}));
  auto back = t->decode(t->encode("az€é", false, false));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "az€é");
  // Invalid UTF-8 input survives byte for byte in the ids.
  const std::string bad = "a\xFF\xC3";
  const auto ids = t->encode(bad, false, false);
  EXPECT_EQ(texts(*t, ids), (Strings{"a", "<0xFF>", "<0xC3>"}));
  std::string want(1, 'a');
  want.append(kReplacementChar).append(kReplacementChar);
  EXPECT_EQ(*t->decode(ids), want);
}

TEST(Tokenizer, SpecialTokensAndBos) {
  const auto t = make(small_vocab());
  const int32_t turn = *t->find_token("<|turn>");
  const int32_t channel = *t->find_token("<|channel>");
  // CONTROL text is matched only with parse_special; USER_DEFINED always.
  EXPECT_EQ(t->encode("<|turn>a", false, true), (std::vector<int32_t>{turn, *t->find_token("a")}));
  EXPECT_NE(t->encode("<|turn>a", false, false).front(), turn);
  EXPECT_EQ(t->encode("<|channel>", false, false), (std::vector<int32_t>{channel}));
  EXPECT_EQ(t->encode("a", true, false).front(), t->bos_id());
  EXPECT_EQ(t->encode("", true, false), (std::vector<int32_t>{t->bos_id()}));
  EXPECT_TRUE(t->encode("", false, false).empty());
}

TEST(Tokenizer, UnusedPiecesAreAtomicAndShown) {
  Tokenizer::Vocab v;
  v.tokens = {"<unk>", "<", ">", "u", "<unused7>"};
  v.types = {TokenType::kControl, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal, TokenType::kUnused};
  v.unk_id = 0;
  const auto t = make(v);
  EXPECT_EQ(t->encode("u<unused7>u", false, false), (std::vector<int32_t>{3, 4, 3}));
  EXPECT_EQ(*t->decode(std::vector<int32_t>{4}), "<unused7>");
}

TEST(Tokenizer, MergeResultsMissingFromTheVocabularyStillMerge) {
  // "xy" is not a token, but x+y then xy+z = "xyz" is.
  Tokenizer::Vocab v;
  v.tokens = {"<unk>", "x", "y", "z", "xyz"};
  v.types = {TokenType::kControl, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal};
  v.unk_id = 0;
  v.merges = {"x y", "xy z"};
  const auto t = make(v);
  EXPECT_EQ(texts(*t, t->encode("xyz", false, false)), (Strings{"xyz"}));
  // "xy" alone stays unmergeable into a token: no byte tokens exist, so <unk> per byte.
  EXPECT_EQ(t->encode("xy", false, false), (std::vector<int32_t>{0, 0}));
}

// A byte without a <0xHH> token falls back to <unk>; without <unk> either it is lost, and
// the tokenizer counts such bytes so that the loader can warn (engine_factory.cpp).
TEST(Tokenizer, BytesWithoutAnyFallbackAreCounted) {
  EXPECT_EQ(make(small_vocab())->bytes_without_fallback(), 0);
  EXPECT_EQ(shakes().bytes_without_fallback(), 0);
  Tokenizer::Vocab v;
  v.tokens = {"<unk>", "x", "<0x41>"};
  v.types = {TokenType::kControl, TokenType::kNormal, TokenType::kByte};
  v.unk_id = 0;
  EXPECT_EQ(make(v)->bytes_without_fallback(), 0);  // <unk> keeps every byte's place
  v.unk_id = -1;
  v.types[0] = TokenType::kNormal;
  const auto t = make(v);
  EXPECT_EQ(t->bytes_without_fallback(), 255);
  EXPECT_EQ(texts(*t, t->encode("xAy", false, false)), (Strings{"x", "<0x41>"}));  // "y" is lost
}

TEST(Tokenizer, DecodeOptionsAndPieces) {
  const Tokenizer& t = full();
  const auto ids = t.encode("<bos><|turn>user\nHi <|channel>", false, true);
  EXPECT_EQ(*t.decode(ids), "user\nHi <|channel>");  // control tokens hidden, user-defined kept
  EXPECT_EQ(*t.decode(ids, DecodeOptions{.render_special = true}), "<bos><|turn>user\nHi <|channel>");
  EXPECT_EQ(t.token_to_piece(*t.find_token("\xE2\x96\x81Hello")), " Hello");
  EXPECT_EQ(t.token_to_piece(*t.find_token("<0x41>")), "A");
  EXPECT_EQ(t.token_to_piece(-1), "");
  EXPECT_EQ(t.token_to_piece(t.n_vocab()), "");
  const int32_t bad[] = {5, t.n_vocab()};
  EXPECT_EQ(t.decode(bad).status().code(), StatusCode::kOutOfRange);
}

// render_markup: the CONTROL tokens that are Gemma markup as text (for the output parser),
// other CONTROL tokens still hidden; the incremental decoder follows the same options.
TEST(Tokenizer, RenderMarkupShowsOnlyMarkupControlTokens) {
  for (const Tokenizer* t : {&full(), &shakes()}) {
    const auto ids = t->encode("<bos><|turn>model\nHi<|think|><|tool><tool|><|channel><turn|>", false, true);
    const DecodeOptions o{.render_markup = true};
    EXPECT_EQ(*t->decode(ids, o), "<|turn>model\nHi<|think|><|tool><tool|><|channel><turn|>");
    IncrementalDecoder dec(*t, o);
    std::string streamed;
    for (const int32_t id : ids) streamed += dec.push(id);
    EXPECT_EQ(streamed, *t->decode(ids, o));
    EXPECT_EQ(*t->decode(ids), "model\nHi<|channel>");
  }
}

TEST(Tokenizer, SpecialIdsAreFoundByText) {
  for (const Tokenizer* t : {&full(), &shakes()}) {
    ASSERT_TRUE(t->find_token("<|turn>").has_value());
    ASSERT_TRUE(t->find_token("<turn|>").has_value());
    ASSERT_TRUE(t->find_token("<|tool_response>").has_value());
    EXPECT_EQ(t->bos_id(), *t->find_token("<bos>"));
    EXPECT_EQ(t->eos_id(), *t->find_token("<eos>"));
    EXPECT_TRUE(t->add_bos());
    EXPECT_TRUE(t->is_eog(t->eos_id()));
    EXPECT_TRUE(t->is_eog(*t->find_token("<turn|>")));
    EXPECT_TRUE(t->is_eog(*t->find_token("<|tool_response>")));
    EXPECT_FALSE(t->is_eog(*t->find_token("<|turn>")));
    EXPECT_EQ(t->eog_ids().size(), 3u);
    EXPECT_EQ(t->token_type(*t->find_token("<|channel>")), TokenType::kUserDefined);
    EXPECT_EQ(t->token_type(*t->find_token("<|turn>")), TokenType::kControl);
  }
  // The cut-down vocabulary renumbers: the same text has different ids.
  EXPECT_NE(*full().find_token("<|turn>"), *shakes().find_token("<|turn>"));
}

// The official converter types <|channel>, <channel|>, <|tool_call>, <tool_call|>,
// <|tool_response>, <tool_response|> and <|"|> USER_DEFINED so that they are always text
// (spec §8.1: the chat parser needs them). A GGUF from a converter that keeps Hugging Face's
// "special" flag has them CONTROL: the tokenizer applies the same rule, or they would decode
// to "" and reasoning and tool calls would vanish from the parser's view (and from the
// pieces the output constraints build on).
TEST(Tokenizer, GemmaChatMarkersAreUserDefinedWhateverTheFileTypes) {
  Tokenizer::Vocab v = small_vocab();
  const std::vector<std::string> markers = {"<|channel>",       "<channel|>",       "<|tool_call>", "<tool_call|>",
                                            "<|tool_response>", "<tool_response|>", "<|\"|>"};
  for (const std::string& m : markers) {
    if (m == "<|channel>") continue;  // small_vocab has it (USER_DEFINED): retyped below
    v.tokens.push_back(m);
    v.types.push_back(TokenType::kControl);
  }
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == "<|channel>") v.types[i] = TokenType::kControl;
  }
  auto t = make(std::move(v));
  std::string all;
  for (const std::string& m : markers) {
    all += m;
    EXPECT_EQ(t->token_type(*t->find_token(m)), TokenType::kUserDefined) << m;
    EXPECT_EQ(t->token_to_piece(*t->find_token(m)), m);
  }
  // Matched in text without parse_special, as USER_DEFINED tokens are; shown by decode.
  const auto ids = t->encode(all + "a", false, false);
  ASSERT_EQ(ids.size(), markers.size() + 1);
  EXPECT_EQ(*t->decode(ids), all + "a");
  // The other CONTROL tokens keep their type.
  EXPECT_EQ(t->token_type(*t->find_token("<|turn>")), TokenType::kControl);
  EXPECT_EQ(t->token_type(*t->find_token("<turn|>")), TokenType::kControl);
}

// The end-of-generation set is {<eos>, <turn|>, <|tool_response>} by text (spec §8.2,
// Decision 4), also when a converter writes eos_token_id as another token (HF's
// generation_config lists 1, 106 and 50; a converter may take 106 as "the" eos).
TEST(Tokenizer, EosTextEndsGenerationWhateverEosTokenIdSays) {
  Tokenizer::Vocab v = small_vocab();
  const int32_t eos_text = v.eos_id;
  v.eos_id = 5;  // <turn|>
  ASSERT_EQ(v.tokens[5], "<turn|>");
  auto t = make(std::move(v));
  EXPECT_EQ(t->eos_id(), 5);
  EXPECT_TRUE(t->is_eog(5));
  EXPECT_TRUE(t->is_eog(eos_text));
  EXPECT_FALSE(t->is_eog(*t->find_token("<|turn>")));
}

TEST(Tokenizer, ShippedModelVocabularyGivesTheFullVocabularysPieces) {
  const std::string text = read_file(test::shared_path("test-assets/corpora/tinyshakespeare.txt"));
  const std::string part = text.substr(0, 200000);
  const auto a = full().encode(part, false, false);
  const auto b = shakes().encode(part, false, false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(full().token_text(a[i]), shakes().token_text(b[i])) << "at " << i;
  }
  EXPECT_EQ(*shakes().decode(b), part);
  // Chat markup works on it too.
  const auto ids = shakes().encode("<|turn>user\nHello<turn|>\n<|turn>model\n", true, true);
  EXPECT_EQ(ids[0], shakes().bos_id());
  EXPECT_EQ(ids[1], *shakes().find_token("<|turn>"));
  EXPECT_EQ(*shakes().decode(ids, DecodeOptions{.render_special = true}),
            "<bos><|turn>user\nHello<turn|>\n<|turn>model\n");
}

// Bug-case 55: mixed Latin, accents, emoji; decode(encode(x)) == x.
TEST(Tokenizer, Case55MultilingualRoundTrip) {
  const Tokenizer& t = full();
  const std::vector<std::string> lines = {
      "Hello world! Café déjà vu — 123 😊",
      "Über café naïve façade résumé coöperate",
      "日本語のテキストと中文文本，한국어 텍스트",
      "Русский текст и ελληνικά και עברית ו-العربية",
      "emoji 👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 ❤️ 1️⃣",
      "math ∑_{i=0}^{n} x² ≤ ∞ ± √2 ≈ 1.414",
      "tabs\tand  double  spaces   and\r\nwindows newlines",
      "    indented code {\n        return 0;\n    }\n",
      "",
      " ",
      "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
      "ｆｕｌｌｗｉｄｔｈ and ﬁ ligature and combining é (e + U+0301)",
      "<b>html</b> <s> </s> <unused0> <table> [multimodal] are atomic pieces",
  };
  for (const auto& line : lines) {
    const auto ids = t.encode(line, false, false);
    auto back = t.decode(ids);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, line);
  }
  // HF added tokens are whole pieces.
  EXPECT_EQ(t.encode("<unused0>", false, false), (std::vector<int32_t>{*t.find_token("<unused0>")}));
  EXPECT_EQ(t.encode("</s>", false, false), (std::vector<int32_t>{*t.find_token("</s>")}));
}

TEST(Tokenizer, RandomUtf8RoundTrips) {
  const Tokenizer& t = full();
  std::mt19937 rng(5);
  for (int k = 0; k < 200; ++k) {
    std::string s;
    const int n = static_cast<int>(rng() % 80);
    for (int i = 0; i < n; ++i) {
      uint32_t cp = 0;
      switch (rng() % 4) {
        case 0: cp = 0x20 + rng() % 0x5F; break;
        case 1: cp = "\n\t  "[rng() % 4]; break;
        case 2: cp = 0xA0 + rng() % 0x2000; break;
        default: cp = 0x10000 + rng() % 0x2000; break;
      }
      if (cp == 0x2581) cp = 'x';  // U+2581 decodes as a space by design
      append_utf8(cp, &s);
    }
    const auto ids = t.encode(s, false, false);
    EXPECT_EQ(*t.decode(ids), s);
  }
}

// The pre-split only splits at newlines, so one line can be megabytes long. BPE must stay
// O(n log n): the work counter (merges, queue pushes and pops) may grow by about 4x from 1 MB
// to 4 MB, never by 16x. Both a text line and a line where every adjacent pair can merge.
TEST(Tokenizer, HugeLinesGrowLinearly) {
  const Tokenizer& t = full();
  const std::string corpus = read_file(test::shared_path("test-assets/corpora/tinyshakespeare.txt"));
  const auto text_line = [&](size_t n) {
    std::string s;
    while (s.size() < n) s += corpus.substr(0, std::min(corpus.size(), n - s.size()));
    for (char& c : s) {
      if (c == '\n') c = ' ';
    }
    return s;
  };
  const auto dense_line = [](size_t n) {
    std::string s;
    const char* pattern = "abracadabra";
    for (size_t i = 0; s.size() < n; ++i) s.push_back(pattern[i % 11]);
    return s;
  };
  for (const auto& make_line : {std::function<std::string(size_t)>(text_line), std::function<std::string(size_t)>(dense_line)}) {
    Tokenizer::clear_thread_cache();
    const auto a = t.encode(make_line(1 << 20), false, false);
    const uint64_t w1 = Tokenizer::last_encode_work();
    Tokenizer::clear_thread_cache();
    const auto b = t.encode(make_line(4 << 20), false, false);
    const uint64_t w4 = Tokenizer::last_encode_work();
    EXPECT_GT(w1, 0u);
    EXPECT_LT(static_cast<double>(w4), 6.0 * static_cast<double>(w1)) << "work 1 MB " << w1 << ", 4 MB " << w4;
    EXPECT_GT(b.size(), a.size() * 3);
  }
  // And a 10 MB line without newlines encodes (and decodes back).
  const std::string ten = text_line(10 << 20);
  const auto ids = t.encode(ten, false, false);
  EXPECT_GT(ids.size(), 1000000u);
  EXPECT_EQ(*t.decode(ids), ten);
}

// The memo of encoded words does not grow with the number of threads that encode (bug-case 64):
// each of the server's dozens of worker threads kept its own memo of up to ~2 MB, and requests
// landing on thread after thread grew the process by ~5 kB a request. Here 32 threads each
// encode 12000 words of their own and stay alive; what stays allocated is a few memos and the
// threads' scratch (~14 MB; ~47 MB with a memo per thread).
TEST(Tokenizer, SegmentMemoDoesNotGrowWithThreads) {
  const Tokenizer& t = full();
  Tokenizer::clear_thread_cache();
  constexpr int kThreads = 32;
  const size_t before = mallinfo2().uordblks;
  std::mutex mu;
  std::condition_variable cv;
  int encoded = 0;
  bool release = false;
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      std::mt19937 rng(static_cast<uint32_t>(k) + 1);
      std::string text;
      for (int w = 0; w < 12000; ++w) {
        text += ' ';
        for (int c = 0; c < 7; ++c) text += static_cast<char>('a' + rng() % 26);
      }
      (void)t.encode(text, false, false);
      std::unique_lock<std::mutex> lock(mu);
      ++encoded;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    });
  }
  size_t held = 0;
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return encoded == kThreads; });
    held = mallinfo2().uordblks;
    release = true;
  }
  cv.notify_all();
  for (auto& th : threads) th.join();
  Tokenizer::clear_thread_cache();
  std::printf("held by %d idle threads after encoding: %zu bytes\n", kThreads, held - before);
  EXPECT_LT(held, before + (size_t{24} << 20)) << "bytes held by " << kThreads
                                              << " idle threads after encoding: " << (held - before);
}

// The per-thread scratch of one huge run does not stay allocated after the call (a run of
// 8 MB of spaces kept ~250 MB on each server worker thread).
TEST(Tokenizer, HugeRunLeavesNoScratchBehind) {
  const Tokenizer& t = full();
  std::thread worker([&] {
    Tokenizer::clear_thread_cache();
    (void)t.encode("warm up the thread's small buffers", false, false);
    const size_t before = mallinfo2().uordblks;
    const auto ids = t.encode(std::string(size_t{2} << 20, ' '), false, false);
    const size_t after = mallinfo2().uordblks;
    EXPECT_GT(ids.size(), 0u);
    EXPECT_LT(after, before + (size_t{16} << 20)) << "bytes still allocated after the call: " << (after - before);
  });
  worker.join();
}

// A GGUF with the given tokenizer keys, written to a temporary file and opened.
Result<std::shared_ptr<const Tokenizer>> from_keys(const std::function<void(gguf::GgufWriter&)>& fill) {
  const auto dir = test::temp_dir("tok");
  const std::string path = (dir / "t.gguf").string();
  gguf::GgufWriter w;
  w.set_string("general.architecture", "gemma4");
  fill(w);
  GS_RETURN_IF_ERROR(w.begin(path));
  GS_RETURN_IF_ERROR(w.finish());
  auto file = gguf::GgufFile::open(path);
  if (!file.ok()) return file.status();
  return Tokenizer::from_gguf(**file);
}

TEST(Tokenizer, GgufErrorsAreClear) {
  const std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "a", "b", "ab"};
  auto missing_model = from_keys([&](gguf::GgufWriter& w) { w.set_string_array("tokenizer.ggml.tokens", tokens); });
  EXPECT_EQ(missing_model.status().code(), StatusCode::kNotFound);
  auto other_model = from_keys([&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
  });
  EXPECT_EQ(other_model.status().code(), StatusCode::kUnimplemented);
  auto no_merges = from_keys([&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
  });
  EXPECT_EQ(no_merges.status().code(), StatusCode::kNotFound);
  auto bad_merge = from_keys([&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_string_array("tokenizer.ggml.merges", {"ab"});
  });
  EXPECT_EQ(bad_merge.status().code(), StatusCode::kInvalidArgument);
  auto bad_types = from_keys([&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_i32_array("tokenizer.ggml.token_type", {3, 3});
  });
  EXPECT_EQ(bad_types.status().code(), StatusCode::kInvalidArgument);
  auto bad_bos = from_keys([&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
    w.set_u32("tokenizer.ggml.bos_token_id", 99);
  });
  EXPECT_EQ(bad_bos.status().code(), StatusCode::kInvalidArgument);
  // Without id keys, <bos>/<eos> are found by text; without types, all pieces are normal.
  auto ok = from_keys([&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_string_array("tokenizer.ggml.merges", {"a b"});
  });
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ((*ok)->bos_id(), 2);
  EXPECT_EQ((*ok)->eos_id(), 1);
  EXPECT_EQ((*ok)->encode("ab", true, false), (std::vector<int32_t>{2, 5}));
}

// A malformed tokenizer key is named, with the file, in the error (they read "tokenizer: 5
// token types for 6 tokens" and "end-of-generation id -1 is outside the vocabulary" for an
// eot_token_id of 4294967295: neither the file, nor the key, nor the value as stored).
TEST(Tokenizer, GgufErrorsNameTheFileTheKeyAndTheValue) {
  const std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "a", "b", "ab"};
  const auto base = [&](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
  };
  const auto expect_named = [](const Result<std::shared_ptr<const Tokenizer>>& r,
                               std::initializer_list<std::string_view> parts) {
    ASSERT_FALSE(r.ok());
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find("/t.gguf: "), std::string::npos) << msg;
    EXPECT_EQ(msg.find("t.gguf", msg.find("t.gguf") + 1), std::string::npos) << "the file twice: " << msg;
    for (const std::string_view p : parts) EXPECT_NE(msg.find(p), std::string::npos) << p << " in: " << msg;
  };
  expect_named(from_keys([&](gguf::GgufWriter& w) {
                 base(w);
                 w.set_string_array("tokenizer.ggml.merges", {"a b"});
                 w.set_i32_array("tokenizer.ggml.token_type", {3, 3, 3, 1, 1});
               }),
               {"tokenizer.ggml.token_type", "tokenizer.ggml.tokens", "5", "6"});
  expect_named(from_keys([&](gguf::GgufWriter& w) {
                 base(w);
                 w.set_string_array("tokenizer.ggml.merges", {"a b", "ab"});
               }),
               {"'tokenizer.ggml.merges'[1]", "\"ab\""});
  expect_named(from_keys([&](gguf::GgufWriter& w) {
                 base(w);
                 w.set_string_array("tokenizer.ggml.merges", {"a b"});
                 w.set_u32("tokenizer.ggml.eot_token_id", 0xFFFFFFFFu);
               }),
               {"tokenizer.ggml.eot_token_id", "4294967295", "6 tokens"});
  expect_named(from_keys([&](gguf::GgufWriter& w) {
                 base(w);
                 w.set_string_array("tokenizer.ggml.merges", {"a b"});
                 w.set_u32("tokenizer.ggml.eot_token_id", 6);
               }),
               {"tokenizer.ggml.eot_token_id", "= 6"});
  expect_named(from_keys([&](gguf::GgufWriter& w) {
                 base(w);
                 w.set_string_array("tokenizer.ggml.merges", {"a b"});
                 w.set_u32("tokenizer.ggml.bos_token_id", 99);
               }),
               {"tokenizer.ggml.bos_token_id", "99"});
  // The reader's own errors already start with the path: not twice.
  expect_named(from_keys([&](gguf::GgufWriter& w) {
                 base(w);
                 w.set_string_array("tokenizer.ggml.merges", {"a b"});
                 w.set_f32("tokenizer.ggml.bos_token_id", 2.0f);
               }),
               {"tokenizer.ggml.bos_token_id"});
}

// Every special-token id key the loader reads, outside the vocabulary (decision 0058): those the
// engine uses (BOS begins every prompt, EOS and EOT end the output, UNK stands for text no token
// spells) are refused naming the key, the value and the vocabulary's size; padding_token_id and
// mask_token_id, which nothing uses, load with one warning naming the file, the key and the
// value, and are read as absent (the padding id is then the token spelled <pad>). The mask id
// loaded without a word (it was not read at all), and a padding id out of range was refused.
TEST(Tokenizer, SpecialIdsOutsideTheVocabularyAreRefusedOrWarnedByKey) {
  const std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "a", "b", "ab"};
  const auto with = [&](std::string_view key, uint32_t id) {
    return [&tokens, key, id](gguf::GgufWriter& w) {
      w.set_string("tokenizer.ggml.model", "gemma4");
      w.set_string_array("tokenizer.ggml.tokens", tokens);
      w.set_string_array("tokenizer.ggml.merges", {"a b"});
      w.set_u32(key, id);
    };
  };
  // Captures the log lines of one load.
  const auto load_logged = [](const std::function<void(gguf::GgufWriter&)>& fill, std::vector<std::string>* lines) {
    const auto previous = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64);
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("special_ids_test", sink));
    auto r = from_keys(fill);
    spdlog::set_default_logger(previous);
    *lines = sink->last_formatted();
    return r;
  };
  for (const std::string key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.eot_token_id"}) {
    for (const uint32_t id : {6u, 99u, 0xFFFFFFFFu}) {
      SCOPED_TRACE(fmt::format("{} = {}", key, id));
      std::vector<std::string> lines;
      auto r = load_logged(with(key, id), &lines);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find(fmt::format("'{}' = {} is outside the vocabulary of 6 tokens", key, id)),
                std::string::npos)
          << r.status().message();
    }
  }
  for (const std::string key : {"tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id"}) {
    for (const uint32_t id : {6u, 99u, 0xFFFFFFFFu}) {
      SCOPED_TRACE(fmt::format("{} = {}", key, id));
      std::vector<std::string> lines;
      auto r = load_logged(with(key, id), &lines);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      size_t warnings = 0;
      for (const std::string& line : lines) {
        if (line.find("'" + key + "'") == std::string::npos) continue;
        ++warnings;
        EXPECT_NE(line.find("/t.gguf: "), std::string::npos) << line;
        EXPECT_NE(line.find(fmt::format("= {} is outside the vocabulary of 6 tokens", id)), std::string::npos) << line;
        EXPECT_NE(line.find("ignored"), std::string::npos) << line;
      }
      EXPECT_EQ(warnings, 1u);
      EXPECT_EQ((*r)->pad_id(), 0);  // the token spelled <pad>
      EXPECT_EQ((*r)->bos_id(), 2);
      EXPECT_EQ((*r)->eos_id(), 1);
    }
  }
  // In range, none is warned about, and the ids are the file's.
  for (const std::string key : {"tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id"}) {
    std::vector<std::string> lines;
    auto r = load_logged(with(key, 5), &lines);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    for (const std::string& line : lines) EXPECT_EQ(line.find(key), std::string::npos) << line;
    EXPECT_EQ((*r)->pad_id(), key == "tokenizer.ggml.padding_token_id" ? 5 : 0);
  }
  // Of another type: the used ids are refused, the unused ones warned about.
  std::vector<std::string> lines;
  auto r = load_logged(
      [&](gguf::GgufWriter& w) {
        with("tokenizer.ggml.eos_token_id", 1)(w);
        w.set_f32("tokenizer.ggml.mask_token_id", 4.0f);
      },
      &lines);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  size_t warnings = 0;
  for (const std::string& line : lines) warnings += line.find("'tokenizer.ggml.mask_token_id'") != std::string::npos;
  EXPECT_EQ(warnings, 1u);
}

// A vocabulary of empty texts (or with an empty NORMAL piece) loaded: no text encodes to such a
// token (BPE symbols are code points, spec §8.3) and the model that samples it writes nothing.
// An empty token whose type makes its text what it writes is refused, naming the entry; an empty
// CONTROL, UNKNOWN or UNUSED name still loads.
TEST(Tokenizer, EmptyPiecesAreRefusedNamingTheEntry) {
  for (const TokenType type : {TokenType::kNormal, TokenType::kUndefined, TokenType::kUserDefined, TokenType::kByte}) {
    Tokenizer::Vocab v = small_vocab();
    const size_t at = v.tokens.size() - 2;
    v.tokens[at].clear();
    v.types[at] = type;
    auto r = Tokenizer::from_vocab(std::move(v));
    ASSERT_FALSE(r.ok()) << static_cast<int>(type);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string& msg = r.status().message();
    EXPECT_NE(msg.find(fmt::format("'tokenizer.ggml.tokens'[{}] is an empty text", at)), std::string::npos) << msg;
    EXPECT_NE(msg.find("tokenizer.ggml.token_type"), std::string::npos) << msg;
  }
  for (const TokenType type : {TokenType::kControl, TokenType::kUnknown, TokenType::kUnused}) {
    Tokenizer::Vocab v = small_vocab();
    v.tokens[0].clear();
    v.types[0] = type;
    auto r = Tokenizer::from_vocab(std::move(v));
    EXPECT_TRUE(r.ok()) << static_cast<int>(type) << ": " << r.status().to_string();
  }
  // Every text empty, no token types (all NORMAL): named with the file.
  auto r = from_keys([](gguf::GgufWriter& w) {
    w.set_string("tokenizer.ggml.model", "gemma4");
    w.set_string_array("tokenizer.ggml.tokens", std::vector<std::string>(8));
    w.set_string_array("tokenizer.ggml.merges", {});
  });
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_NE(msg.find("/t.gguf: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("'tokenizer.ggml.tokens'[0] is an empty text, typed NORMAL (1) (the file has no "
                     "'tokenizer.ggml.token_type')"),
            std::string::npos)
      << msg;
  // The shipped vocabularies have none.
  EXPECT_GT(shakes().n_vocab(), 0);
  EXPECT_GT(full().n_vocab(), 0);
}

// Text from the file is shown escaped in these errors: a NUL cut the message where printf met
// it, and control bytes reached the terminal as they were.
TEST(Tokenizer, GgufTextValuesInErrorsAreEscaped) {
  const std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "a", "b", "ab"};
  const auto expect_clean = [](const Result<std::shared_ptr<const Tokenizer>>& r, std::string_view tail) {
    ASSERT_FALSE(r.ok());
    const std::string& msg = r.status().message();
    EXPECT_EQ(msg.find('\0'), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
    EXPECT_NE(msg.find("\\x00"), std::string::npos) << msg;
    EXPECT_NE(msg.find(tail), std::string::npos) << msg;
  };
  expect_clean(from_keys([&](gguf::GgufWriter& w) {
                 w.set_string("tokenizer.ggml.model", std::string("gemma4\0\x1b[2J", 10));
                 w.set_string_array("tokenizer.ggml.tokens", tokens);
               }),
               "is not supported (only \"gemma4\")");
  expect_clean(from_keys([&](gguf::GgufWriter& w) {
                 w.set_string("tokenizer.ggml.model", "gemma4");
                 w.set_string_array("tokenizer.ggml.tokens", tokens);
                 w.set_string_array("tokenizer.ggml.merges", {"a b", std::string("a\0\x1b[2Jb", 7)});
               }),
               "is not two pieces separated by a space");
}

// ---- incremental decoding (bug-cases 27 and 58) -------------------------------------------

// Bug-case 27: a character split over byte tokens is held until complete (no U+FFFD).
TEST(IncrementalDecoder, Case27NeverEmitsHalfACharacter) {
  const Tokenizer& t = full();
  const std::string text = "ok 🌍🎉 日本語";
  // Force byte tokens: every byte of the emoji as <0xHH>.
  std::vector<int32_t> ids = t.encode("ok ", false, false);
  for (const char c : std::string("🌍🎉")) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", static_cast<uint8_t>(c));
    ids.push_back(*t.find_token(buf));
  }
  const auto rest = t.encode(" 日本語", false, false);
  ids.insert(ids.end(), rest.begin(), rest.end());
  IncrementalDecoder dec(t);
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string piece = dec.push(id);
    EXPECT_TRUE(is_valid_utf8(piece)) << "piece for id " << id;
    EXPECT_EQ(piece.find(kReplacementChar), std::string::npos);
    streamed += piece;
  }
  streamed += dec.finish();
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(streamed, *t.decode(ids));
}

// Bug-case 58: a token limit inside a character: the partial bytes are dropped, no error.
TEST(IncrementalDecoder, Case58TruncatedCharacterIsDroppedAtTheEnd) {
  const Tokenizer& t = full();
  IncrementalDecoder dec(t);
  std::string out = dec.push(t.encode("ab", false, false));
  out += dec.push(*t.find_token("<0xF0>"));
  out += dec.push(*t.find_token("<0x9F>"));
  EXPECT_EQ(dec.pending_bytes(), 2u);
  out += dec.finish();
  EXPECT_EQ(out, "ab");
  EXPECT_EQ(dec.pending_bytes(), 0u);
}

TEST(IncrementalDecoder, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer& t = full();
  IncrementalDecoder dec(t);
  std::string out = dec.push(*t.find_token("<0xFF>"));
  out += dec.push(*t.find_token("<0xC3>"));
  out += dec.push(*t.find_token("<0x41>"));  // 'A' breaks the 2-byte sequence
  out += dec.finish();
  EXPECT_EQ(out, std::string(kReplacementChar) + std::string(kReplacementChar) + "A");
  EXPECT_TRUE(is_valid_utf8(out));
}

TEST(IncrementalDecoder, RendersUserDefinedTokensForTheParser) {
  const Tokenizer& t = full();
  IncrementalDecoder dec(t);
  const auto ids = t.encode("<|channel>thought\nx<channel|><|tool_call>", false, false);
  EXPECT_EQ(dec.push(ids) + dec.finish(), "<|channel>thought\nx<channel|><|tool_call>");
  IncrementalDecoder special(t, DecodeOptions{.render_special = true});
  EXPECT_EQ(special.push(*t.find_token("<turn|>")), "<turn|>");
  EXPECT_EQ(dec.push(*t.find_token("<turn|>")), "");
}

TEST(IncrementalDecoder, WholeCorpusStreamsLikeOneDecode) {
  const Tokenizer& t = full();
  const std::string text = read_file(test::shared_path("test-assets/corpora/tinyshakespeare.txt")).substr(0, 50000);
  const auto ids = t.encode(text, false, false);
  IncrementalDecoder dec(t);
  std::string out;
  for (const int32_t id : ids) out += dec.push(id);
  out += dec.finish();
  EXPECT_EQ(out, text);
}

// ---- UTF-8 helpers --------------------------------------------------------------------------

TEST(Utf8, Validation) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("é日😀"));
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE6\x97"));          // truncated
  EXPECT_EQ(sanitize_utf8("a\xE6\x97" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(sanitize_utf8("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Utf8, AssemblerHoldsIncompleteSequences) {
  Utf8Assembler a;
  const std::string emoji = "😀";
  EXPECT_EQ(a.push(emoji.substr(0, 1)), "");
  EXPECT_EQ(a.push(emoji.substr(1, 2)), "");
  EXPECT_EQ(a.pending_bytes(), 3u);
  EXPECT_EQ(a.push(emoji.substr(3) + "x"), emoji + "x");
  EXPECT_EQ(a.push("\xE6"), "");
  EXPECT_EQ(a.finish(), "");
  EXPECT_EQ(a.pending_bytes(), 0u);
}

}  // namespace
}  // namespace gs::text
