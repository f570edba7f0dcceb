// Internal state of the Tokenizer: vocabulary tables, the merge-rank hash map, the
// special-token trie. Shared by tokenizer.cpp (loading, decoding) and tokenizer_encode.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/tokenizer.h"

namespace gs::text {

// Open-addressing hash map from a pair of symbol ids to (merge rank, merged symbol id).
class PairMergeMap {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    int32_t result = kNoToken;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  void reserve(size_t n);
  // Keeps the first (lowest-rank) insertion of a pair.
  void insert(int32_t left, int32_t right, uint32_t rank, int32_t result);
  const Entry* find(int32_t left, int32_t right) const {
    if (left < 0 || right < 0 || slots_.empty()) return nullptr;
    const uint64_t key = make_key(left, right);
    size_t i = hash(key) & mask_;
    while (true) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }
  size_t size() const { return size_; }

 private:
  static uint64_t make_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  static uint64_t hash(uint64_t x) {  // splitmix64 finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
  }
  void grow();

  std::vector<Entry> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Open-addressing map from strings (views that must outlive it) to ids. Slots keep the hash,
// so a probe touches the string only on a hash match: loading 262k tokens and 515k merges
// needs about 1.5 million lookups.
class StringIdMap {
 public:
  void reserve(size_t n);
  // Keeps the first id inserted for a string.
  void insert(std::string_view s, int32_t id);
  int32_t find(std::string_view s) const {  // kNoToken when absent
    if (slots_.empty()) return kNoToken;
    const uint64_t h = hash(s);
    size_t i = h & mask_;
    while (true) {
      const Slot& e = slots_[i];
      if (e.id == kNoToken) return kNoToken;
      if (e.hash == h && e.len == s.size() && std::memcmp(e.data, s.data(), s.size()) == 0) return e.id;
      i = (i + 1) & mask_;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;
    uint32_t len = 0;
    int32_t id = kNoToken;
  };
  static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Byte trie over the special-token texts; each terminal node records its token.
class SpecialTrie {
 public:
  void add(std::string_view text, int32_t id, bool always);
  // Longest special token at the start of `s` that is allowed (always-matched tokens, or any
  // with parse_special). Returns its length and sets *id, or 0 when none matches.
  size_t match(std::string_view s, bool parse_special, int32_t* id) const;
  bool may_start(uint8_t byte) const { return first_byte_[byte]; }
  bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    int32_t id = kNoToken;
    bool always = false;
  };
  std::vector<Node> nodes_{Node{}};
  std::unordered_map<uint64_t, int32_t> children_;  // (node << 8 | byte) -> node
  std::array<bool, 256> first_byte_{};
};

struct Tokenizer::Impl {
  // Vocabulary.
  std::vector<std::string> tokens;
  std::vector<TokenType> types;
  std::vector<std::string> pieces;  // decoded bytes of each token (specials: "")
  StringIdMap token_ids;  // views into `tokens`

  // Symbols of the BPE: ids < n_vocab are vocabulary tokens; larger ids name strings that
  // occur in merges but not in the vocabulary (kept so that such merges still apply).
  std::deque<std::string> extra_symbols;
  StringIdMap extra_symbol_ids;  // views into `extra_symbols`
  std::array<int32_t, 128> ascii_symbol{};               // code point < 128 -> symbol id
  std::unordered_map<uint32_t, int32_t> codepoint_symbol;  // other code points -> symbol id
  PairMergeMap merges;
  size_t n_merges = 0;
  // Code-point pairs that some merge joins (last of its left piece, first of its right).
  // Between two code points that no merge joins, no token can span, so BPE of a long run
  // splits there into independent segments with identical results (and small heaps).
  std::vector<uint64_t> ascii_joinable;  // 128 x 128 bits
  std::unordered_set<uint64_t> joinable;  // pairs with a code point >= 128
  uint64_t instance_id = 0;               // keys the per-thread segment cache

  SpecialTrie specials;
  std::array<int32_t, 256> byte_tokens{};  // <0xHH> ids (kNoToken when absent)

  int32_t bos_id = kNoToken;
  int32_t eos_id = kNoToken;
  int32_t unk_id = kNoToken;
  int32_t pad_id = kNoToken;
  bool add_bos = true;
  bool add_eos = false;
  std::vector<int32_t> eog_ids;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
  int32_t symbol_of_codepoint(uint32_t cp) const {
    if (cp < 128) return ascii_symbol[cp];
    const auto it = codepoint_symbol.find(cp);
    return it == codepoint_symbol.end() ? kNoToken : it->second;
  }

  bool can_join(uint32_t a, uint32_t b) const {
    if (a < 128 && b < 128) return (ascii_joinable[a * 2 + (b >> 6)] >> (b & 63)) & 1;
    return joinable.count((static_cast<uint64_t>(a) << 32) | b) != 0;
  }
  void add_joinable(uint32_t a, uint32_t b) {
    if (a < 128 && b < 128) {
      ascii_joinable[a * 2 + (b >> 6)] |= uint64_t{1} << (b & 63);
    } else {
      joinable.insert((static_cast<uint64_t>(a) << 32) | b);
    }
  }

  // Encoding (tokenizer_encode.cpp).
  // Special split + fragments. `markup` (may be null): spans where control tokens may match;
  // without it, control tokens match iff parse_special.
  void encode_text(std::string_view text, bool parse_special, std::span<const TextSpan>* markup,
                   std::vector<int32_t>* out) const;
  void encode_raw_fragment(std::string_view fragment, std::vector<int32_t>* out) const;
  void encode_run(std::string_view run, std::vector<int32_t>* out) const;
  void encode_segment(std::string_view segment, std::vector<int32_t>* out) const;
  void bpe(std::string_view segment, std::vector<int32_t>* out) const;
  void emit_byte_fallback(std::string_view bytes, std::vector<int32_t>* out) const;
};

}  // namespace gs::text
