// Encoding: special-token split, space escaping, newline pre-split, BPE by merge rank.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "text/tokenizer.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace gs::text {
namespace {

thread_local uint64_t t_encode_work = 0;

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, what a space becomes

// One BPE symbol: a span of the run, linked to its neighbours. len == 0 marks a symbol
// merged into its left neighbour.
struct Symbol {
  int32_t id;
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;
};

// Decodes one code point at s[i]; returns its byte length (1 for an invalid byte, which then
// stands alone as a symbol of one byte).
inline uint32_t next_codepoint(std::string_view s, size_t i, uint32_t* cp) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  const int n = utf8_valid_prefix_length(s.substr(i, 4));
  if (n == 0) {
    *cp = 0xFFFFFFFFu;  // no such code point: never in the vocabulary
    return 1;
  }
  const auto b = [&](int k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i + static_cast<size_t>(k)])); };
  switch (n) {
    case 2: *cp = ((b0 & 0x1Fu) << 6) | (b(1) & 0x3F); break;
    case 3: *cp = ((b0 & 0x0Fu) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F); break;
    default: *cp = ((b0 & 0x07u) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F); break;
  }
  return static_cast<uint32_t>(n);
}

}  // namespace

uint64_t Tokenizer::last_encode_work() { return t_encode_work; }

void Tokenizer::Impl::emit_byte_fallback(std::string_view bytes, std::vector<int32_t>* out) const {
  for (const char c : bytes) {
    const int32_t id = byte_tokens[static_cast<uint8_t>(c)];
    if (id != kNoToken) {
      out->push_back(id);
    } else if (unk_id != kNoToken) {
      out->push_back(unk_id);
    }
  }
}

namespace {

// Memo of segment -> ids. Text repeats words constantly, and a segment (usually a word with
// its leading U+2581) always encodes the same way.
struct TransparentHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct SegmentCache {
  static constexpr size_t kMaxEntries = size_t{1} << 14;  // about 2 MB at most
  static constexpr size_t kMaxSegmentBytes = 48;
  uint64_t owner = 0;  // Impl::instance_id the entries belong to
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, TransparentHash, std::equal_to<>> index;
  std::vector<int32_t> ids;
  // The encode call's scratch (bpe's symbols and queue, a fragment's escaped text), leased
  // with the memo so that it too is kept per pooled memo, not per thread: a worker thread
  // kept its own for good, up to kScratchKeepBytes each (bug-case 64).
  std::vector<Symbol> symbols;
  std::vector<uint64_t> heap;
  std::string escaped;
};

// The memos are pooled, not per thread: an encode call leases one for its duration and gives
// it back. Each of the server's worker threads (dozens) once kept its own memo, and requests
// landing on thread after thread grew the process by ~5 kB a request towards dozens of 2 MB
// memos (bug-case 64). Memory now stays within the calls running at once plus kMaxPooled.
class SegmentCachePool {
 public:
  static constexpr size_t kMaxPooled = 4;
  std::unique_ptr<SegmentCache> take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return std::make_unique<SegmentCache>();
    std::unique_ptr<SegmentCache> c = std::move(free_.back());
    free_.pop_back();
    return c;
  }
  void give_back(std::unique_ptr<SegmentCache> c) {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMaxPooled) free_.push_back(std::move(c));
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    free_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<SegmentCache>> free_;
};
SegmentCachePool& cache_pool() {
  static SegmentCachePool* pool = new SegmentCachePool();  // never destroyed: used until exit
  return *pool;
}

// The memo the encode call running on this thread leased (null outside one: no memo).
thread_local SegmentCache* t_cache = nullptr;

// Leases a memo for one encode call (a nested call keeps the outer one's).
class CacheLease {
 public:
  CacheLease() {
    if (t_cache != nullptr) return;
    held_ = cache_pool().take();
    t_cache = held_.get();
  }
  ~CacheLease() {
    if (!held_) return;
    t_cache = nullptr;
    cache_pool().give_back(std::move(held_));
  }
  CacheLease(const CacheLease&) = delete;
  CacheLease& operator=(const CacheLease&) = delete;

 private:
  std::unique_ptr<SegmentCache> held_;
};

// The scratch buffers keep their storage between calls, up to this many bytes each; past it
// they give it back after the call (an 8 MB run of spaces grew them to ~250 MB on each of the
// server's worker threads, for good). With the scratch in the pooled memos, the pool keeps at
// most kMaxPooled x 3 x this.
constexpr size_t kScratchKeepBytes = size_t{1} << 20;
template <class V>
void trim_scratch(V& v) {
  if (v.capacity() * sizeof(typename V::value_type) > kScratchKeepBytes) V().swap(v);
}

}  // namespace

// A run splits wherever two adjacent code points cannot be joined by any merge.
void Tokenizer::Impl::encode_run(std::string_view run, std::vector<int32_t>* out) const {
  size_t seg_start = 0;
  uint32_t prev = 0;
  for (size_t i = 0; i < run.size();) {
    uint32_t cp = 0;
    const uint32_t len = next_codepoint(run, i, &cp);
    if (cp == 0xFFFFFFFFu) cp = 0x110000u + static_cast<uint8_t>(run[i]);
    if (i > 0 && !can_join(prev, cp)) {
      encode_segment(run.substr(seg_start, i - seg_start), out);
      seg_start = i;
    }
    prev = cp;
    i += len;
  }
  encode_segment(run.substr(seg_start), out);
}

void Tokenizer::clear_thread_cache() { cache_pool().clear(); }

void Tokenizer::Impl::encode_segment(std::string_view segment, std::vector<int32_t>* out) const {
  if (segment.empty()) return;
  if (segment.size() > SegmentCache::kMaxSegmentBytes) {
    bpe(segment, out);
    return;
  }
  if (t_cache == nullptr) {
    bpe(segment, out);
    return;
  }
  SegmentCache& cache = *t_cache;
  if (cache.owner != instance_id || cache.index.size() >= SegmentCache::kMaxEntries) {
    cache.index.clear();
    cache.ids.clear();
    cache.owner = instance_id;
  }
  if (const auto it = cache.index.find(segment); it != cache.index.end()) {
    out->insert(out->end(), cache.ids.begin() + it->second.first,
                cache.ids.begin() + it->second.first + it->second.second);
    ++t_encode_work;
    return;
  }
  const size_t before = out->size();
  bpe(segment, out);
  const auto offset = static_cast<uint32_t>(cache.ids.size());
  cache.ids.insert(cache.ids.end(), out->begin() + static_cast<std::ptrdiff_t>(before), out->end());
  cache.index.emplace(std::string(segment), std::make_pair(offset, static_cast<uint32_t>(out->size() - before)));
}

// BPE over the code points of one segment: repeatedly merge the adjacent pair with
// the lowest merge rank (leftmost on ties). The queue holds (rank << 32 | left index);
// entries made stale by earlier merges are recognised on pop by re-looking up the pair.
void Tokenizer::Impl::bpe(std::string_view run, std::vector<int32_t>* out) const {
  if (run.empty()) return;
  const int32_t nv = n_vocab();
  std::vector<Symbol> own_symbols;  // outside an encode call's lease: nothing is kept
  std::vector<Symbol>& symbols = t_cache != nullptr ? t_cache->symbols : own_symbols;
  symbols.clear();
  for (size_t i = 0; i < run.size();) {
    uint32_t cp = 0;
    const uint32_t len = next_codepoint(run, i, &cp);
    const int32_t sym = cp == 0xFFFFFFFFu ? kNoToken : symbol_of_codepoint(cp);
    const auto idx = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{sym, idx - 1, idx + 1, static_cast<uint32_t>(i), len});
    i += len;
  }
  symbols.back().next = -1;
  const auto n_sym = symbols.size();

  // Min-heap on a reused vector (a std::priority_queue would give its storage up each call).
  std::vector<uint64_t> own_heap;
  std::vector<uint64_t>& heap = t_cache != nullptr ? t_cache->heap : own_heap;
  heap.clear();
  const auto heap_push = [&](uint64_t v) {
    heap.push_back(v);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  };
  uint64_t work = n_sym;
  const auto push_pair = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const PairMergeMap::Entry* e =
        merges.find(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id);
    if (e == nullptr) return;
    heap_push((static_cast<uint64_t>(e->rank) << 32) | static_cast<uint32_t>(left));
    ++work;
  };
  for (size_t i = 0; i + 1 < n_sym; ++i) {
    const PairMergeMap::Entry* e = merges.find(symbols[i].id, symbols[i + 1].id);
    if (e != nullptr) heap.push_back((static_cast<uint64_t>(e->rank) << 32) | static_cast<uint32_t>(i));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>{});
  work += heap.size();

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const uint64_t top = heap.back();
    heap.pop_back();
    ++work;
    const auto rank = static_cast<uint32_t>(top >> 32);
    const auto left = static_cast<int32_t>(top & 0xffffffffu);
    Symbol& l = symbols[static_cast<size_t>(left)];
    if (l.len == 0 || l.next < 0) continue;
    Symbol& r = symbols[static_cast<size_t>(l.next)];
    const PairMergeMap::Entry* e = merges.find(l.id, r.id);
    if (e == nullptr || e->rank != rank) continue;  // stale: a neighbour changed since the push
    l.id = e->result;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (l.next >= 0) symbols[static_cast<size_t>(l.next)].prev = left;
    push_pair(l.prev);
    push_pair(left);
  }
  t_encode_work += work;

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    if (s.id >= 0 && s.id < nv) {
      out->push_back(s.id);
    } else {
      emit_byte_fallback(run.substr(s.start, s.len), out);
    }
  }
  trim_scratch(symbols);
  trim_scratch(heap);
}

// A fragment between special tokens: spaces -> U+2581, then runs of '\n' and of other bytes.
void Tokenizer::Impl::encode_raw_fragment(std::string_view fragment, std::vector<int32_t>* out) const {
  if (fragment.empty()) return;
  std::string own_escaped;
  std::string& escaped = t_cache != nullptr ? t_cache->escaped : own_escaped;
  std::string_view text = fragment;
  if (fragment.find(' ') != std::string_view::npos) {
    escaped.clear();
    escaped.reserve(fragment.size() + fragment.size() / 2);
    for (const char c : fragment) {
      if (c == ' ') {
        escaped.append(kSpaceMark);
      } else {
        escaped.push_back(c);
      }
    }
    text = escaped;
  }
  size_t i = 0;
  while (i < text.size()) {
    const bool newline = text[i] == '\n';
    size_t j = i;
    if (newline) {
      while (j < text.size() && text[j] == '\n') ++j;
    } else {
      const void* p = std::memchr(text.data() + i, '\n', text.size() - i);
      j = p == nullptr ? text.size() : static_cast<size_t>(static_cast<const char*>(p) - text.data());
    }
    const std::string_view run = text.substr(i, j - i);
    if (newline) {
      if (const int32_t id = token_ids.find(run); id != kNoToken) {
        out->push_back(id);
      } else {
        encode_run(run, out);
      }
    } else {
      encode_run(run, out);
    }
    i = j;
  }
  trim_scratch(escaped);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  encode_into(text, add_special, parse_special, &out);
  return out;
}

void Tokenizer::encode_into(std::string_view text, bool add_special, bool parse_special,
                            std::vector<int32_t>* out) const {
  const Impl& t = *impl_;
  t_encode_work = 0;
  const CacheLease lease;
  if (add_special && t.add_bos && t.bos_id != kNoToken) out->push_back(t.bos_id);
  t.encode_text(text, parse_special, nullptr, out);
  if (add_special && t.add_eos && t.eos_id != kNoToken) out->push_back(t.eos_id);
}

std::vector<int32_t> Tokenizer::encode_prompt(std::string_view text, std::span<const TextSpan> markup,
                                              bool add_special) const {
  const Impl& t = *impl_;
  t_encode_work = 0;
  const CacheLease lease;
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && t.add_bos && t.bos_id != kNoToken) out.push_back(t.bos_id);
  t.encode_text(text, /*parse_special=*/false, &markup, &out);
  if (add_special && t.add_eos && t.eos_id != kNoToken) out.push_back(t.eos_id);
  return out;
}

// Special-token split: leftmost-longest match of an allowed special text. (For Gemma 4,
// whose special texts are all "<...>" with no inner '<' or '>', this equals llama.cpp's
// longest-token-first partition.)
void Tokenizer::Impl::encode_text(std::string_view text, bool parse_special, std::span<const TextSpan>* markup,
                                  std::vector<int32_t>* out) const {
  size_t fragment_start = 0;
  size_t next_span = 0;
  if (!specials.empty()) {
    for (size_t i = 0; i < text.size(); ++i) {
      if (!specials.may_start(static_cast<uint8_t>(text[i]))) continue;
      int32_t id = kNoToken;
      size_t len = 0;
      if (markup != nullptr) {
        // A control token only exactly where the renderer wrote one.
        while (next_span < markup->size() && (*markup)[next_span].offset < i) ++next_span;
        const bool at_markup = next_span < markup->size() && (*markup)[next_span].offset == i;
        len = specials.match(text.substr(i), /*parse_special=*/at_markup, &id);
        if (at_markup && len != (*markup)[next_span].length) {
          len = specials.match(text.substr(i), /*parse_special=*/false, &id);
        }
      } else {
        len = specials.match(text.substr(i), parse_special, &id);
      }
      if (len == 0) continue;
      encode_raw_fragment(text.substr(fragment_start, i - fragment_start), out);
      out->push_back(id);
      i += len - 1;
      fragment_start = i + 1;
    }
  }
  encode_raw_fragment(text.substr(fragment_start), out);
}

}  // namespace gs::text
