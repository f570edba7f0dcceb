// Compiled JSON Schema grammars kept across requests (decisions 0066 and 0072), so that a client
// that sends the same schemas again (an agent's tool list, its response_format) does not pay
// their compile each time, with every answer, and every request's pattern budget, as a cold
// compile gives them.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "text/json_grammar.h"
#include "text/regex_dfa.h"

namespace gs::text {

// What a cache has done since it was made, and what it holds now.
struct JsonGrammarCacheStats {
  uint64_t hits = 0;       // answered from an entry (its compile's spend charged to the budget)
  uint64_t misses = 0;     // compiled: no entry, or one whose spend the budget left could not cover
  uint64_t evictions = 0;  // entries dropped, least recently used first, to stay within the bounds
  int64_t entries = 0;
  int64_t bytes = 0;       // estimated bytes of the entries: keys, grammars (json_grammar_bytes), errors
};

// A bounded, thread-safe map from a compile's inputs (schema, path, syntax) to its outcome (a
// grammar or an error) and to what it spent of its pattern budget (RegexBudget), least recently
// used entries dropped first. Grammars are immutable (shared_ptr<const JsonGrammar>), so one
// entry serves many requests and threads at once.
//
// The same answers as a cold compile: JsonGrammar::from_schema is deterministic, and its only
// reads of the budget are checks that the budget has not gone below zero, after spends that
// only lower it. A compile that ended with no part of its budget below zero therefore passed
// every check, and a compile of the same inputs from any budget of at least what it spent takes
// the same path: the same grammar, the same error, the same spend. So an entry is made only from
// such a compile, and a lookup is a hit only when the caller's budget covers the entry's spend
// (which it is then charged); otherwise the caller's budget compiles, cold, and what happens is
// what happens without the cache. A compile that ran past its budget is not kept (a richer budget
// could have held it); one that failed within it (an unsupported keyword, a malformed schema,
// a state limit) is kept as the error it is, since every budget that covers it fails the same way.
class JsonGrammarCache {
 public:
  // At most `max_entries` entries (>= 1) and `max_bytes` estimated bytes (>= 1). An outcome
  // larger than max_bytes alone is not kept.
  JsonGrammarCache(int64_t max_entries, int64_t max_bytes);
  JsonGrammarCache(const JsonGrammarCache&) = delete;
  JsonGrammarCache& operator=(const JsonGrammarCache&) = delete;

  // Exactly JsonGrammar::from_schema(schema, path, syntax, budget) (same arguments, same
  // errors, a grammar of the same content, the same amount taken from *budget; null `budget`:
  // one of its own), from an entry when one covers it. A hit gives the entry's grammar object,
  // shared. Safe to call from many threads; no lock is held while compiling, so two threads
  // that miss on one schema at once both compile it (the entry then keeps the first).
  Result<std::shared_ptr<const JsonGrammar>> from_schema(const nlohmann::json& schema, const std::string& path,
                                                         JsonSyntax syntax, RegexBudget* budget);

  JsonGrammarCacheStats stats() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const JsonGrammar> grammar;  // null: `error`
    Status error;
    RegexBudget spent;  // what the compile took from its budget (work and bytes, each >= 0)
    int64_t bytes = 0;
  };
  using Lru = std::list<Entry>;  // most recently used first

  const int64_t max_entries_;
  const int64_t max_bytes_;
  mutable std::mutex mu_;
  Lru lru_;
  // Hashes the whole key (std::hash) and compares it whole: no two inputs share an entry.
  std::unordered_map<std::string_view, Lru::iterator> index_;
  JsonGrammarCacheStats stats_;
};

// The key of a compile's inputs: the schema written out so that two JSON values give one key
// only when they are the same value of the same types (1, 1u, 1.0, 0.0 and -0.0 apart; an
// object's members in nlohmann's key order), with the path and the syntax. Bytes, not text.
std::string json_grammar_cache_key(const nlohmann::json& schema, const std::string& path, JsonSyntax syntax);

// Estimated heap and object bytes a compiled grammar holds: its nodes with their vectors and
// strings, and each distinct automaton once (RegexDfa::bytes). What a cache counts.
int64_t json_grammar_bytes(const JsonGrammar& grammar);

// JsonGrammar::from_schema(schema, path, syntax, budget) through `cache` when there is one (its
// from_schema: the same outcome), cold when `cache` is null: the one place a caller that may
// run without a cache (serve --grammar-cache 0, tests) picks between the two.
Result<std::shared_ptr<const JsonGrammar>> compile_schema(JsonGrammarCache* cache, const nlohmann::json& schema,
                                                          const std::string& path, JsonSyntax syntax,
                                                          RegexBudget* budget);

}  // namespace gs::text
