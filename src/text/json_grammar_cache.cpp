// The compiled-grammar cache (decision 0066): keys, size estimates, lookups charged to budgets.
#include "text/json_grammar_cache.h"

#include <cstring>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace gs::text {

namespace {

using nlohmann::json;

// Each value as a tag byte, then what it holds; strings and containers with their lengths, so
// that no two values give one string (the writing is prefix-free).
void append_value(const json& v, std::string* out) {
  const auto append_size = [out](size_t n) {
    out->append(std::to_string(n));
    out->push_back(':');
  };
  const auto append_text = [&](const std::string& s) {
    append_size(s.size());
    out->append(s);
  };
  switch (v.type()) {
    case json::value_t::null:
      out->push_back('n');
      return;
    case json::value_t::boolean:
      out->push_back(v.get<bool>() ? 't' : 'f');
      return;
    case json::value_t::number_integer:
      out->push_back('i');
      out->append(std::to_string(v.get<int64_t>()));
      out->push_back(';');
      return;
    case json::value_t::number_unsigned:
      out->push_back('u');
      out->append(std::to_string(v.get<uint64_t>()));
      out->push_back(';');
      return;
    case json::value_t::number_float: {
      // The double's bits: exact, and -0.0 apart from 0.0.
      const double d = v.get<double>();
      uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      out->push_back('d');
      out->append(std::to_string(bits));
      out->push_back(';');
      return;
    }
    case json::value_t::string:
      out->push_back('s');
      append_text(v.get_ref<const std::string&>());
      return;
    case json::value_t::array:
      out->push_back('[');
      append_size(v.size());
      for (const json& item : v) append_value(item, out);
      return;
    case json::value_t::object:
      out->push_back('{');
      append_size(v.size());
      for (const auto& [k, item] : v.items()) {
        append_text(k);
        append_value(item, out);
      }
      return;
    case json::value_t::binary: {
      const auto& b = v.get_binary();
      out->push_back('b');
      append_size(b.size());
      out->append(reinterpret_cast<const char*>(b.data()), b.size());
      out->push_back(b.has_subtype() ? 'y' : 'x');
      if (b.has_subtype()) out->append(std::to_string(b.subtype()) + ";");
      return;
    }
    case json::value_t::discarded:
      out->push_back('z');
      return;
  }
}

int64_t string_bytes(const std::string& s) {
  // The object itself, and its heap buffer beyond the small-string room.
  return static_cast<int64_t>(sizeof(std::string) + (s.capacity() > 15 ? s.capacity() + 1 : 0));
}

int64_t strings_bytes(const std::vector<std::string>& v) {
  int64_t b = 0;
  for (const std::string& s : v) b += string_bytes(s);
  return b;
}

template <typename T>
int64_t vector_bytes(const std::vector<T>& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(T));
}

// A map entry, a list node and the allocator's headers, roughly.
constexpr int64_t kEntryOverhead = 160;

}  // namespace

std::string json_grammar_cache_key(const json& schema, const std::string& path, JsonSyntax syntax) {
  std::string key;
  switch (syntax) {
    case JsonSyntax::kJson:
      key.push_back('J');
      break;
    case JsonSyntax::kGemmaCall:
      key.push_back('G');
      break;
  }
  key.append(std::to_string(path.size()));
  key.push_back(':');
  key.append(path);
  append_value(schema, &key);
  return key;
}

int64_t json_grammar_bytes(const JsonGrammar& grammar) {
  int64_t b = static_cast<int64_t>(sizeof(JsonGrammar));
  std::unordered_set<const RegexDfa*> automata;
  for (int32_t i = 0; i < grammar.size(); ++i) {
    const JsonGrammar::Node& n = grammar.node(i);
    b += static_cast<int64_t>(sizeof(JsonGrammar::Node));
    b += strings_bytes(n.keys) + vector_bytes(n.keys) - static_cast<int64_t>(n.keys.size() * sizeof(std::string));
    b += vector_bytes(n.key_nodes) + vector_bytes(n.key_hashes) + vector_bytes(n.object_alts) +
         vector_bytes(n.object_dispatch) + vector_bytes(n.deferred);
    for (const auto* v : {&n.string_enum, &n.number_enum, &n.literals}) {
      b += strings_bytes(*v) + vector_bytes(*v) - static_cast<int64_t>(v->size() * sizeof(std::string));
    }
    for (const auto* p : {n.pattern.get(), n.pattern_form.get()}) {
      if (p != nullptr && automata.insert(p).second) {
        b += static_cast<int64_t>(sizeof(RegexDfa)) + p->bytes() + 2 * 16;  // the shared_ptr's control block
        // Each state's edge list: its room beyond its edges, and the allocator's header.
        for (int32_t st = 0; st < p->size(); ++st) {
          b += static_cast<int64_t>((p->edges(st).capacity() - p->edges(st).size()) * sizeof(RegexDfa::Edge)) + 16;
        }
      }
    }
  }
  return b;
}

JsonGrammarCache::JsonGrammarCache(int64_t max_entries, int64_t max_bytes)
    : max_entries_(max_entries < 1 ? 1 : max_entries), max_bytes_(max_bytes < 1 ? 1 : max_bytes) {}

Result<std::shared_ptr<const JsonGrammar>> JsonGrammarCache::from_schema(const json& schema, const std::string& path,
                                                                         JsonSyntax syntax, RegexBudget* budget) {
  RegexBudget own;
  RegexBudget* b = budget != nullptr ? budget : &own;
  std::string key = json_grammar_cache_key(schema, path, syntax);
  const auto outcome = [](const Entry& e) -> Result<std::shared_ptr<const JsonGrammar>> {
    if (e.grammar) return e.grammar;
    return e.error;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (const auto it = index_.find(key); it != index_.end()) {
      const Entry& e = *it->second;
      // The budget left must cover the whole spend, else the cold compile below would stop
      // where this budget runs out (and ignore a pattern, or fail): that compile decides.
      if (b->work - e.spent.work >= 0 && b->bytes - e.spent.bytes >= 0) {
        b->work -= e.spent.work;
        b->bytes -= e.spent.bytes;
        lru_.splice(lru_.begin(), lru_, it->second);
        ++stats_.hits;
        return outcome(e);
      }
    }
    ++stats_.misses;
  }
  const RegexBudget before = *b;
  Result<std::shared_ptr<const JsonGrammar>> compiled = JsonGrammar::from_schema(schema, path, syntax, b);
  // Below zero somewhere: a check may have failed, so the outcome may be this budget's only.
  if (b->work < 0 || b->bytes < 0) return compiled;

  Entry e;
  e.key = std::move(key);
  e.spent.work = before.work - b->work;
  e.spent.bytes = before.bytes - b->bytes;
  if (compiled.ok()) {
    e.grammar = *compiled;
  } else {
    e.error = compiled.status();
  }
  e.bytes = kEntryOverhead + static_cast<int64_t>(e.key.capacity()) +
            (e.grammar ? json_grammar_bytes(*e.grammar) : string_bytes(e.error.message()));
  if (e.bytes > max_bytes_) return compiled;

  std::lock_guard<std::mutex> lock(mu_);
  if (const auto it = index_.find(e.key); it != index_.end()) {
    // Another thread kept the same compile meanwhile: its spend is this one's, and sharing its
    // grammar object keeps one copy.
    lru_.splice(lru_.begin(), lru_, it->second);
    return outcome(*it->second);
  }
  lru_.push_front(std::move(e));
  index_.emplace(std::string_view(lru_.front().key), lru_.begin());
  stats_.bytes += lru_.front().bytes;
  ++stats_.entries;
  while (stats_.entries > max_entries_ || stats_.bytes > max_bytes_) {
    const Entry& last = lru_.back();
    index_.erase(std::string_view(last.key));
    stats_.bytes -= last.bytes;
    --stats_.entries;
    ++stats_.evictions;
    lru_.pop_back();
  }
  return compiled;
}

JsonGrammarCacheStats JsonGrammarCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

Result<std::shared_ptr<const JsonGrammar>> compile_schema(JsonGrammarCache* cache, const json& schema,
                                                          const std::string& path, JsonSyntax syntax,
                                                          RegexBudget* budget) {
  if (cache != nullptr) return cache->from_schema(schema, path, syntax, budget);
  return JsonGrammar::from_schema(schema, path, syntax, budget);
}

}  // namespace gs::text
