// Tokenizer: building the tables from a vocabulary and merges, decoding, lookups (reading them
// from GGUF metadata is tokenizer_gguf.cpp).
#include "text/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "text/chat_format.h"
#include "text/tokenizer_impl.h"
#include "gguf/gguf_summary.h"
#include "gguf/tokenizer_keys.h"
#include "text/utf8.h"

namespace gs::text {

// ---------------------------------------------------------------------------------------
// PairMergeMap

void PairMergeMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(cap, Entry{});
  mask_ = cap - 1;
  size_ = 0;
  for (const Entry& e : old) {
    if (e.key != kEmpty) {
      insert(static_cast<int32_t>(e.key >> 32), static_cast<int32_t>(e.key & 0xffffffffu), e.rank,
             e.result);
    }
  }
}

void PairMergeMap::grow() { reserve(std::max<size_t>(16, slots_.size())); }

void PairMergeMap::insert(int32_t left, int32_t right, uint32_t rank, int32_t result) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = make_key(left, right);
  size_t i = hash(key) & mask_;
  while (true) {
    Entry& e = slots_[i];
    if (e.key == key) return;  // an earlier (lower-rank) merge of the same pair wins
    if (e.key == kEmpty) {
      e = Entry{key, rank, result};
      ++size_;
      return;
    }
    i = (i + 1) & mask_;
  }
}

// ---------------------------------------------------------------------------------------
// StringIdMap

void StringIdMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (const Slot& e : old) {
    if (e.id == kNoToken) continue;
    size_t i = e.hash & mask_;
    while (slots_[i].id != kNoToken) i = (i + 1) & mask_;
    slots_[i] = e;
  }
}

void StringIdMap::insert(std::string_view s, int32_t id) {
  if ((size_ + 1) * 2 > slots_.size()) reserve(std::max<size_t>(16, size_ + 1));
  const uint64_t h = hash(s);
  size_t i = h & mask_;
  while (true) {
    Slot& e = slots_[i];
    if (e.id == kNoToken) {
      e = Slot{h, s.data(), static_cast<uint32_t>(s.size()), id};
      ++size_;
      return;
    }
    if (e.hash == h && e.len == s.size() && std::memcmp(e.data, s.data(), s.size()) == 0) return;
    i = (i + 1) & mask_;
  }
}

// ---------------------------------------------------------------------------------------
// SpecialTrie

void SpecialTrie::add(std::string_view text, int32_t id, bool always) {
  if (text.empty()) return;
  int32_t node = 0;
  for (const char c : text) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
    auto it = children_.find(key);
    if (it == children_.end()) {
      nodes_.push_back(Node{});
      it = children_.emplace(key, static_cast<int32_t>(nodes_.size() - 1)).first;
    }
    node = it->second;
  }
  // Two entries with the same text: the first (lowest id) wins, as a vocabulary lookup does.
  if (nodes_[static_cast<size_t>(node)].id == kNoToken) {
    nodes_[static_cast<size_t>(node)] = Node{id, always};
  }
  first_byte_[static_cast<uint8_t>(text[0])] = true;
}

size_t SpecialTrie::match(std::string_view s, bool parse_special, int32_t* id) const {
  int32_t node = 0;
  size_t best = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(s[i]);
    const auto it = children_.find(key);
    if (it == children_.end()) break;
    node = it->second;
    const Node& n = nodes_[static_cast<size_t>(node)];
    if (n.id != kNoToken && (n.always || parse_special)) {
      best = i + 1;
      *id = n.id;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------
// Loading

namespace {

// "<0xHH>" -> HH, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = text[static_cast<size_t>(i)];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

std::string unescape_spaces(std::string_view text) {
  static constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

// Code point of `s` when it is exactly one valid UTF-8 character.
bool single_codepoint(std::string_view s, uint32_t* cp) {
  const int n = utf8_valid_prefix_length(s);
  if (n == 0 || static_cast<size_t>(n) != s.size()) return false;
  const auto b = [&](int i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[static_cast<size_t>(i)])); };
  switch (n) {
    case 1: *cp = b(0); break;
    case 2: *cp = ((b(0) & 0x1F) << 6) | (b(1) & 0x3F); break;
    case 3: *cp = ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F); break;
    default: *cp = ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F); break;
  }
  return true;
}

// First and last code point of a non-empty string (an invalid byte stands for itself as
// 0x110000 + byte, which no real code point equals).
uint32_t first_codepoint(std::string_view s) {
  uint32_t cp = 0;
  const int n = utf8_valid_prefix_length(s.substr(0, 4));
  if (n > 0 && single_codepoint(s.substr(0, static_cast<size_t>(n)), &cp)) return cp;
  return 0x110000u + static_cast<uint8_t>(s[0]);
}

uint32_t last_codepoint(std::string_view s) {
  for (size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    uint32_t cp = 0;
    if (single_codepoint(s.substr(s.size() - back), &cp)) return cp;
  }
  return 0x110000u + static_cast<uint8_t>(s.back());
}

std::atomic<uint64_t> g_next_instance_id{1};

// A token whose text is what it writes and decodes to (NORMAL, UNDEFINED, USER_DEFINED, BYTE)
// and is empty: BPE symbols are code points (spec §8.3), so no text encodes to it, and the
// model that samples it writes nothing. Such a vocabulary is malformed (a converter that lost
// the texts), refused naming the entry. CONTROL, UNKNOWN and UNUSED tokens are names, never
// text: an empty one loads (no text matches it, as before).
Status check_no_empty_pieces(const std::vector<std::string>& tokens, const std::vector<TokenType>& types,
                             bool typed_by_file) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].empty()) continue;
    const char* type = nullptr;
    switch (types[i]) {
      case TokenType::kUndefined: type = "UNDEFINED (0)"; break;
      case TokenType::kNormal: type = "NORMAL (1)"; break;
      case TokenType::kUserDefined: type = "USER_DEFINED (4)"; break;
      case TokenType::kByte: type = "BYTE (6)"; break;
      case TokenType::kUnknown:
      case TokenType::kControl:
      case TokenType::kUnused:
        break;
    }
    if (type == nullptr) continue;
    return make_status(StatusCode::kInvalidArgument,
                       "tokenizer: metadata '{}'[{}] is an empty text, typed {} {}: a token of this type is the "
                       "text it writes, and no text is empty",
                       names::kTokTokens, i, type,
                       typed_by_file ? fmt::format("in '{}'", names::kTokTypes)
                                     : fmt::format("(the file has no '{}')", names::kTokTypes));
  }
  return Status::ok_status();
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_vocab(Vocab vocab) {
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;
  const size_t n = vocab.tokens.size();
  if (n == 0) return Status(StatusCode::kInvalidArgument, "tokenizer: the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX / 2)) {
    return make_status(StatusCode::kInvalidArgument, "tokenizer: {} tokens is too many", n);
  }
  if (!vocab.types.empty() && vocab.types.size() != n) {
    return make_status(StatusCode::kInvalidArgument, "tokenizer: metadata '{}' has {} entries but '{}' has {} tokens",
                       names::kTokTypes, vocab.types.size(), names::kTokTokens, n);
  }
  t.tokens = std::move(vocab.tokens);
  t.types = std::move(vocab.types);
  if (t.types.empty()) {
    t.types.resize(n, TokenType::kNormal);
    for (size_t i = 0; i < n; ++i) {
      if (parse_byte_token(t.tokens[i]) >= 0) t.types[i] = TokenType::kByte;
    }
  }
  GS_RETURN_IF_ERROR(check_no_empty_pieces(t.tokens, t.types, !vocab.types.empty()));
  // The chat markers the official converter forces to USER_DEFINED so that they are always
  // text (spec §8.1): a file that types them CONTROL (Hugging Face's "special" flag kept)
  // gets the same rule here, else they would decode to "" before the output parser.
  for (size_t i = 0; i < n; ++i) {
    if (t.types[i] != TokenType::kControl) continue;
    for (const std::string_view m : {markup::kChannelOpen, markup::kChannelClose, markup::kToolCallOpen,
                                     markup::kToolCallClose, markup::kToolResponseOpen, markup::kToolResponseClose,
                                     markup::kQuote}) {
      if (t.tokens[i] == m) t.types[i] = TokenType::kUserDefined;
    }
  }
  for (const int32_t* id : {&vocab.bos_id, &vocab.eos_id, &vocab.unk_id, &vocab.pad_id}) {
    if (*id != kNoToken && (*id < 0 || static_cast<size_t>(*id) >= n)) {
      return make_status(StatusCode::kInvalidArgument,
                         "tokenizer: special token id {} is outside the vocabulary of {} tokens", *id, n);
    }
  }
  t.bos_id = vocab.bos_id;
  t.eos_id = vocab.eos_id;
  t.unk_id = vocab.unk_id;
  t.pad_id = vocab.pad_id;
  t.add_bos = vocab.add_bos;
  t.add_eos = vocab.add_eos;

  // Text -> id; the first id wins for duplicated texts.
  t.token_ids.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) t.token_ids.insert(t.tokens[i], static_cast<int32_t>(i));

  // Decoded pieces, byte tokens, special-token trie.
  t.byte_tokens.fill(kNoToken);
  t.pieces.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = t.tokens[i];
    const auto id = static_cast<int32_t>(i);
    switch (t.types[i]) {
      case TokenType::kNormal:
      case TokenType::kUndefined:
      case TokenType::kUnused:  // HF shows unused pieces (<unused0>) as their text
        t.pieces[i] = unescape_spaces(text);
        break;
      case TokenType::kByte: {
        const int b = parse_byte_token(text);
        if (b >= 0) {
          t.pieces[i] = std::string(1, static_cast<char>(b));
          if (t.byte_tokens[static_cast<size_t>(b)] == kNoToken) t.byte_tokens[static_cast<size_t>(b)] = id;
        } else {
          t.pieces[i] = text;
        }
        break;
      }
      case TokenType::kUserDefined:
        t.pieces[i] = text;
        t.specials.add(text, id, /*always=*/true);
        break;
      case TokenType::kControl:
      case TokenType::kUnknown:
        t.specials.add(text, id, /*always=*/false);
        break;
    }
  }

  // Symbols and merges.
  const auto symbol_id = [&](std::string_view s) -> int32_t {
    if (const int32_t id = t.token_ids.find(s); id != kNoToken) return id;
    if (const int32_t id = t.extra_symbol_ids.find(s); id != kNoToken) return id;
    t.extra_symbols.emplace_back(s);
    const auto id = static_cast<int32_t>(n + t.extra_symbols.size() - 1);
    t.extra_symbol_ids.insert(t.extra_symbols.back(), id);
    return id;
  };
  t.merges.reserve(vocab.merges.size());
  t.ascii_joinable.assign(128 * 2, 0);
  std::vector<bool> merge_result(n, false);  // vocabulary tokens some merge produces
  std::string joined;
  for (size_t r = 0; r < vocab.merges.size(); ++r) {
    const std::string& m = vocab.merges[r];
    const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos || sp + 1 >= m.size()) {
      return make_status(StatusCode::kInvalidArgument,
                         "tokenizer: metadata '{}'[{}] = \"{}\" is not two pieces separated by a space",
                         names::kTokMerges, r, gguf::escape_text(m, 64));
    }
    const std::string_view left(m.data(), sp);
    const std::string_view right(m.data() + sp + 1, m.size() - sp - 1);
    joined.assign(left);
    joined.append(right);
    const int32_t l = symbol_id(left);
    const int32_t rt = symbol_id(right);
    const int32_t res = symbol_id(joined);
    t.merges.insert(l, rt, static_cast<uint32_t>(r), res);
    t.add_joinable(last_codepoint(left), first_codepoint(right));
    if (static_cast<size_t>(res) < n) merge_result[static_cast<size_t>(res)] = true;
  }
  t.n_merges = vocab.merges.size();

  // Atomic pieces: a NORMAL piece of several code points that no merge produces cannot come
  // out of BPE, so it is an added token of the source tokenizer (<unused0>, <s>, <table>,
  // [multimodal] in Gemma 4). Hugging Face matches added tokens in text as whole pieces;
  // so do we, always, like USER_DEFINED tokens (bug-case 55: ids equal to HF's).
  for (size_t i = 0; i < n; ++i) {
    const TokenType ty = t.types[i];
    if ((ty == TokenType::kNormal || ty == TokenType::kUndefined || ty == TokenType::kUnused) && !merge_result[i]) {
      uint32_t cp = 0;
      if (!t.tokens[i].empty() && !single_codepoint(t.tokens[i], &cp)) {
        t.specials.add(t.tokens[i], static_cast<int32_t>(i), /*always=*/true);
      }
    }
  }

  // Single code points -> symbols (vocabulary entries first, then merge-only strings).
  t.ascii_symbol.fill(kNoToken);
  const auto add_codepoint = [&](std::string_view s, int32_t id) {
    uint32_t cp = 0;
    if (!single_codepoint(s, &cp)) return;
    if (cp < 128) {
      if (t.ascii_symbol[cp] == kNoToken) t.ascii_symbol[cp] = id;
    } else {
      t.codepoint_symbol.emplace(cp, id);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    // Only pieces that BPE can produce from text: not byte or special tokens.
    if (t.types[i] == TokenType::kNormal || t.types[i] == TokenType::kUndefined) {
      add_codepoint(t.tokens[i], static_cast<int32_t>(i));
    }
  }
  for (size_t i = 0; i < t.extra_symbols.size(); ++i) {
    add_codepoint(t.extra_symbols[i], static_cast<int32_t>(n + i));
  }

  // End of generation, found by text (spec §8.2): <eos> too, whatever eos_token_id names
  // (a converter may write <turn|>, one of HF's three eos ids, there).
  if (t.eos_id != kNoToken) t.eog_ids.push_back(t.eos_id);
  for (const std::string_view text : {"<eos>", "<turn|>", "<|tool_response>", "<end_of_turn>"}) {
    if (const int32_t id = t.token_ids.find(text); id != kNoToken) t.eog_ids.push_back(id);
  }
  for (const int32_t id : vocab.extra_eog) {
    if (id < 0 || static_cast<size_t>(id) >= n) {
      return make_status(StatusCode::kInvalidArgument,
                         "tokenizer: end-of-generation id {} is outside the vocabulary of {} tokens", id, n);
    }
    t.eog_ids.push_back(id);
  }
  std::sort(t.eog_ids.begin(), t.eog_ids.end());
  t.eog_ids.erase(std::unique(t.eog_ids.begin(), t.eog_ids.end()), t.eog_ids.end());

  impl->instance_id = g_next_instance_id.fetch_add(1);
  return std::shared_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

// ---------------------------------------------------------------------------------------
// Lookups and decoding

int32_t Tokenizer::n_vocab() const { return impl_->n_vocab(); }
size_t Tokenizer::n_merges() const { return impl_->n_merges; }
int32_t Tokenizer::bos_id() const { return impl_->bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->eos_id; }
int32_t Tokenizer::unk_id() const { return impl_->unk_id; }
int Tokenizer::bytes_without_fallback() const {
  if (impl_->unk_id != kNoToken) return 0;
  return static_cast<int>(std::count(impl_->byte_tokens.begin(), impl_->byte_tokens.end(), kNoToken));
}
int32_t Tokenizer::pad_id() const { return impl_->pad_id; }
bool Tokenizer::add_bos() const { return impl_->add_bos; }
bool Tokenizer::add_eos() const { return impl_->add_eos; }
const std::vector<int32_t>& Tokenizer::eog_ids() const { return impl_->eog_ids; }

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(impl_->eog_ids.begin(), impl_->eog_ids.end(), id);
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = impl_->token_ids.find(text);
  if (id == kNoToken) return std::nullopt;
  return id;
}

std::string_view Tokenizer::token_text(int32_t id) const {
  if (!is_valid(id)) return {};
  return impl_->tokens[static_cast<size_t>(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (!is_valid(id)) return TokenType::kUndefined;
  return impl_->types[static_cast<size_t>(id)];
}

std::string_view Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!is_valid(id)) return {};
  const auto i = static_cast<size_t>(id);
  if (render_special) {
    switch (impl_->types[i]) {
      case TokenType::kControl:
      case TokenType::kUnknown:
        return impl_->tokens[i];
      case TokenType::kUnused:
      case TokenType::kUndefined:
      case TokenType::kNormal:
      case TokenType::kUserDefined:
      case TokenType::kByte:
        break;
    }
  }
  return impl_->pieces[i];
}

std::string_view Tokenizer::token_to_piece(int32_t id, const DecodeOptions& options) const {
  if (options.render_markup && !options.render_special && token_type(id) == TokenType::kControl) {
    const std::string_view text = token_text(id);
    for (const std::string_view m : {markup::kTurnOpen, markup::kTurnClose, markup::kThink, markup::kToolOpen,
                                     markup::kToolClose}) {
      if (text == m) return text;
    }
  }
  return token_to_piece(id, options.render_special);
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  std::string raw;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (!is_valid(ids[k])) {
      return make_status(StatusCode::kOutOfRange, "decode: token {} (at index {}) is outside [0, {})", ids[k], k,
                         n_vocab());
    }
    raw.append(token_to_piece(ids[k], options));
  }
  if (is_valid_utf8(raw)) return raw;
  return sanitize_utf8(raw);
}

}  // namespace gs::text
