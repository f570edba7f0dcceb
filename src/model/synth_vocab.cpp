// Builds the synthetic Gemma 4 vocabulary: fixed special ids, bytes, pieces and merges.
#include "model/synth_vocab.h"

#include <fmt/format.h>

#include <string_view>
#include <unordered_set>

namespace gs::synth {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, the escaped space (spec §8.3)
constexpr int64_t kFirstByteId = 238;               // <0x00> in the Gemma 4 vocabulary
constexpr int64_t kLastFixedId = kFirstByteId + 255;

struct FixedToken {
  int64_t id;
  std::string_view text;
  TokenKind kind;
};

// Spec §8.2 (ids) and §8.1 (types: the tool, channel and string markers are USER_DEFINED).
constexpr FixedToken kFixed[] = {
    {0, "<pad>", TokenKind::kControl},
    {1, "<eos>", TokenKind::kControl},
    {2, "<bos>", TokenKind::kControl},
    {3, "<unk>", TokenKind::kControl},
    {4, "<mask>", TokenKind::kControl},
    {5, "[multimodal]", TokenKind::kNormal},
    {46, "<|tool>", TokenKind::kControl},
    {47, "<tool|>", TokenKind::kControl},
    {48, "<|tool_call>", TokenKind::kUserDefined},
    {49, "<tool_call|>", TokenKind::kUserDefined},
    {50, "<|tool_response>", TokenKind::kUserDefined},
    {51, "<tool_response|>", TokenKind::kUserDefined},
    {52, "<|\"|>", TokenKind::kUserDefined},
    {98, "<|think|>", TokenKind::kControl},
    {100, "<|channel>", TokenKind::kUserDefined},
    {101, "<channel|>", TokenKind::kUserDefined},
    {105, "<|turn>", TokenKind::kControl},
    {106, "<turn|>", TokenKind::kControl},
    {107, "\n", TokenKind::kNormal},
    {108, "\n\n", TokenKind::kNormal},
    {109, "\n\n\n", TokenKind::kNormal},
    {138, "\xE2\x96\x81\xE2\x96\x81", TokenKind::kNormal},
    {139, "\xE2\x96\x81\xE2\x96\x81\xE2\x96\x81", TokenKind::kNormal},
    {140, "\xE2\x96\x81\xE2\x96\x81\xE2\x96\x81\xE2\x96\x81", TokenKind::kNormal},
    // Only when the vocabulary is that large (the 262144-token presets).
    {236743, "\xE2\x96\x81", TokenKind::kNormal},
    {255968, "\t", TokenKind::kNormal},
    {255999, "<|image>", TokenKind::kControl},
    {256000, "<|audio>", TokenKind::kControl},
    {258880, "<|image|>", TokenKind::kControl},
    {258881, "<|audio|>", TokenKind::kControl},
    {258882, "<image|>", TokenKind::kControl},
    {258883, "<audio|>", TokenKind::kControl},
    {258884, "<|video|>", TokenKind::kControl},
};

// Ordinary English words for the word pieces (this project's own short list).
constexpr std::string_view kWords[] = {
    "the", "and", "to", "of", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are",
    "with", "as", "I", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by",
    "not", "but", "what", "all", "were", "we", "when", "your", "can", "said", "there", "use", "an",
    "each", "which", "she", "do", "how", "their", "if", "will", "up", "other", "about", "out", "many",
    "then", "them", "these", "so", "some", "her", "would", "make", "like", "him", "into", "time",
    "has", "look", "two", "more", "write", "go", "see", "number", "no", "way", "could", "people",
    "my", "than", "first", "water", "been", "call", "who", "its", "now", "find", "long", "down",
    "day", "did", "get", "come", "made", "may", "part", "Hello", "world", "model", "user", "system",
    "tool", "thought", "answer", "question", "weather", "city", "call", "response", "value", "name",
    "true", "false", "null", "string", "number", "object", "array", "function", "Paris", "France",
    "Tokyo", "capital", "good", "morning", "night", "love", "king", "queen", "lord", "sweet",
};

class Builder {
 public:
  explicit Builder(int64_t n_vocab) : n_(n_vocab) {
    v_.tokens.assign(static_cast<size_t>(n_vocab), std::string());
    v_.types.assign(static_cast<size_t>(n_vocab), static_cast<int32_t>(TokenKind::kNormal));
    v_.scores.assign(static_cast<size_t>(n_vocab), 0.0f);
    used_.assign(static_cast<size_t>(n_vocab), false);
  }

  void place(int64_t id, std::string_view text, TokenKind kind) {
    v_.tokens[static_cast<size_t>(id)] = std::string(text);
    v_.types[static_cast<size_t>(id)] = static_cast<int32_t>(kind);
    if (!used_[static_cast<size_t>(id)]) ++n_used_;
    used_[static_cast<size_t>(id)] = true;
    present_.insert(std::string(text));
  }

  bool has(std::string_view text) const { return present_.count(std::string(text)) != 0; }
  int64_t free_slots() const { return n_ - placed_count(); }

  // Puts `text` at the next free id; false when the vocabulary is full.
  bool add(std::string_view text) {
    if (has(text)) return true;
    while (next_ < n_ && used_[static_cast<size_t>(next_)]) ++next_;
    if (next_ >= n_) return false;
    place(next_, text, TokenKind::kNormal);
    return true;
  }

  void merge(std::string_view left, std::string_view right) {
    const std::string m = fmt::format("{} {}", left, right);
    if (merges_.insert(m).second) v_.merges.push_back(m);
  }

  // Adds `word` (split into UTF-8 code points) with the chain of merges that builds it
  // left to right, if every new prefix fits.
  void add_word(std::string_view word) {
    std::vector<std::string> cps;
    for (size_t i = 0; i < word.size();) {
      size_t len = 1;
      const auto c = static_cast<unsigned char>(word[i]);
      if (c >= 0xF0) len = 4; else if (c >= 0xE0) len = 3; else if (c >= 0xC0) len = 2;
      cps.emplace_back(word.substr(i, len));
      i += len;
    }
    int64_t needed = 0;
    std::string prefix = cps[0];
    for (size_t i = 1; i < cps.size(); ++i) {
      prefix += cps[i];
      if (!has(prefix)) ++needed;
    }
    if (needed > free_slots()) return;
    prefix = cps[0];
    for (size_t i = 1; i < cps.size(); ++i) {
      merge(prefix, cps[i]);
      prefix += cps[i];
      add(prefix);
    }
  }

  void fill_unused(int64_t first_unused_index) {
    int64_t k = first_unused_index;
    for (int64_t id = 0; id < n_; ++id) {
      if (used_[static_cast<size_t>(id)]) continue;
      place(id, fmt::format("<unused{}>", k++), TokenKind::kNormal);
    }
  }

  SynthVocab take() { return std::move(v_); }

 private:
  int64_t placed_count() const { return n_used_; }

  int64_t n_;
  int64_t next_ = 0;
  int64_t n_used_ = 0;
  SynthVocab v_;
  std::vector<bool> used_;
  std::unordered_set<std::string> present_;
  std::unordered_set<std::string> merges_;
};

}  // namespace

int64_t min_vocab_size() { return kLastFixedId + 1; }

SynthVocab build_vocab(int64_t n_vocab) {
  Builder b(n_vocab);
  for (const auto& f : kFixed) {
    if (f.id < n_vocab) b.place(f.id, f.text, f.kind);
  }
  // Gemma's unused slots between the specials keep their names: <unusedN> at id N + 6.
  for (int64_t id = 6; id <= 104; ++id) {
    const std::string text = fmt::format("<unused{}>", id - 6);
    if (!b.has(text) && id < n_vocab) {
      bool taken = false;
      for (const auto& f : kFixed) taken = taken || f.id == id;
      if (!taken) b.place(id, text, TokenKind::kNormal);
    }
  }
  for (int c = 0; c < 256; ++c) b.place(kFirstByteId + c, fmt::format("<0x{:02X}>", c), TokenKind::kByte);
  // Whitespace runs and their merges.
  b.add(kSpace);
  b.add("\t");
  b.merge("\n", "\n");
  b.merge("\n\n", "\n");
  const std::string s1(kSpace), s2 = s1 + s1, s3 = s2 + s1;
  b.merge(s1, s1);
  b.merge(s2, s1);
  b.merge(s3, s1);
  // Every printable ASCII character is a piece.
  for (char c = '!'; c <= '~'; ++c) b.add(std::string_view(&c, 1));
  // Word pieces, each with and without the leading escaped space, while slots remain.
  for (std::string_view w : kWords) {
    b.add_word(s1 + std::string(w));
    b.add_word(w);
  }
  // Two-letter pieces, then fillers, for large vocabularies.
  for (char a = 'a'; a <= 'z'; ++a) {
    for (char c = 'a'; c <= 'z'; ++c) {
      const char pair[2] = {a, c};
      b.add_word(std::string_view(pair, 2));
    }
  }
  b.fill_unused(99);
  return b.take();
}

}  // namespace gs::synth
