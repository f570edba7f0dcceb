// Proofs that oneOf alternatives share no value, from the keywords that bound a value's
// kind, its literal values, its number range, its string length and its object's keys.
#include "text/schema_overlap.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "text/json_grammar.h"

namespace gs::text {

namespace {

using json = nlohmann::json;

constexpr uint8_t kAllKinds = JsonGrammar::kAnyKind;
// Schema levels followed ($ref, allOf, properties) before a schema is read as "any value".
constexpr int kMaxDepth = 16;
// Schemas read and pairs compared for one oneOf; past it nothing more is proven.
constexpr int64_t kBudget = kOneOfProofBudget;

// What a schema says of its values, as far as the proofs read it. Every field only narrows
// (a missing keyword leaves it at "any"), so reading fewer keywords than the schema has
// gives a superset of its values: a proof on it holds for the schema.
struct Facts {
  uint8_t kinds = kAllKinds;  // JsonGrammar::Kind bits
  bool integer = false;       // numbers are integers ("type": "integer")
  bool has_values = false;    // const / enum: one of `values`
  std::vector<json> values;
  long double num_lo = -std::numeric_limits<long double>::infinity();
  long double num_hi = std::numeric_limits<long double>::infinity();
  bool lo_exclusive = false;
  bool hi_exclusive = false;
  int64_t min_length = 0;
  int64_t max_length = -1;  // -1: unbounded
  std::set<std::string> required;
  std::vector<std::pair<std::string, const json*>> properties;  // a key may have several: all hold
  std::vector<std::set<std::string>> closed;  // the declared keys of each additionalProperties: false
};

uint8_t kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return JsonGrammar::kObject;
    case json::value_t::array: return JsonGrammar::kArray;
    case json::value_t::string: return JsonGrammar::kString;
    case json::value_t::boolean: return v.get<bool>() ? JsonGrammar::kTrue : JsonGrammar::kFalse;
    case json::value_t::null: return JsonGrammar::kNull;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return JsonGrammar::kNumber;
    case json::value_t::binary:
    case json::value_t::discarded: return 0;
  }
  return 0;
}

long double number_of(const json& v) {
  if (v.is_number_unsigned()) return static_cast<long double>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<long double>(v.get<int64_t>());
  return static_cast<long double>(v.get<double>());
}

// 2020-12: a number with a zero fractional part is an integer (1.0 too).
bool integral(const json& v) {
  if (v.is_number_integer()) return true;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

void narrow_lo(Facts* f, long double v, bool exclusive) {
  if (v > f->num_lo || (v == f->num_lo && exclusive)) {
    f->num_lo = v;
    f->lo_exclusive = exclusive;
  }
}

void narrow_hi(Facts* f, long double v, bool exclusive) {
  if (v < f->num_hi || (v == f->num_hi && exclusive)) {
    f->num_hi = v;
    f->hi_exclusive = exclusive;
  }
}

void keep_value_kinds(Facts* f) {
  if (!f->has_values) return;
  uint8_t k = 0;
  for (const json& v : f->values) k |= kind_of(v);
  f->kinds &= k;
}

// a and b both hold.
void conjoin(Facts* a, Facts b) {
  a->kinds &= b.kinds;
  a->integer = a->integer || b.integer;
  if (b.has_values) {
    if (!a->has_values) {
      a->values = std::move(b.values);
    } else {
      std::erase_if(a->values, [&](const json& v) { return std::find(b.values.begin(), b.values.end(), v) == b.values.end(); });
    }
    a->has_values = true;
  }
  narrow_lo(a, b.num_lo, b.lo_exclusive);
  narrow_hi(a, b.num_hi, b.hi_exclusive);
  a->min_length = std::max(a->min_length, b.min_length);
  if (b.max_length >= 0) a->max_length = a->max_length < 0 ? b.max_length : std::min(a->max_length, b.max_length);
  a->required.insert(b.required.begin(), b.required.end());
  a->properties.insert(a->properties.end(), b.properties.begin(), b.properties.end());
  a->closed.insert(a->closed.end(), b.closed.begin(), b.closed.end());
  keep_value_kinds(a);
}

class Prover {
 public:
  explicit Prover(const SchemaRefResolver& resolve) : resolve_(resolve) {}

  bool spent() const { return budget_ <= 0; }
  // Counts `n` units of work; false once the budget is spent.
  bool charge(size_t n) {
    budget_ -= static_cast<int64_t>(std::min<size_t>(n, kBudget));
    return budget_ > 0;
  }

  // a and b both hold (conjoin), counted.
  void conjoin_counted(Facts* a, Facts b) {
    const size_t n = a->values.size() * std::max<size_t>(b.values.size(), 1) + b.properties.size() + b.required.size() +
                     b.closed.size();
    if (!charge(n)) return;  // spent: a stays larger, which proves less
    conjoin(a, std::move(b));
  }

  Facts read(const json& s, int depth) {
    Facts f;
    if (s.is_boolean()) {
      if (!s.get<bool>()) f.kinds = 0;
      return f;
    }
    if (!s.is_object() || depth > kMaxDepth || --budget_ <= 0) return f;
    if (const auto t = s.find("type"); t != s.end()) read_type(*t, &f);
    if (const auto e = s.find("enum"); e != s.end() && e->is_array()) {
      if (!charge(e->size())) return f;
      f.has_values = true;
      f.values = e->get<std::vector<json>>();
    }
    if (const auto c = s.find("const"); c != s.end()) {
      const bool listed = !f.has_values || std::find(f.values.begin(), f.values.end(), *c) != f.values.end();
      f.values = listed ? std::vector<json>{*c} : std::vector<json>{};
      f.has_values = true;
    }
    read_bounds(s, &f);
    if (const auto v = s.find("minLength"); v != s.end() && v->is_number_unsigned()) {
      f.min_length = static_cast<int64_t>(std::min<uint64_t>(v->get<uint64_t>(), INT64_MAX));
    }
    if (const auto v = s.find("maxLength"); v != s.end() && v->is_number_unsigned()) {
      f.max_length = static_cast<int64_t>(std::min<uint64_t>(v->get<uint64_t>(), INT64_MAX));
    }
    if (const auto props = s.find("properties"); props != s.end() && !charge(props->size())) return Facts{};
    if (const auto req = s.find("required"); req != s.end() && !charge(req->size())) return Facts{};
    read_object(s, &f);
    keep_value_kinds(&f);
    if (const auto r = s.find("$ref"); r != s.end() && resolve_) {
      if (const json* target = resolve_(*r)) conjoin_counted(&f, read(*target, depth + 1));
    }
    if (const auto all = s.find("allOf"); all != s.end() && all->is_array()) {
      for (const json& member : *all) conjoin_counted(&f, read(member, depth + 1));
    }
    for (const char* k : {"anyOf", "oneOf"}) {
      const auto alts = s.find(k);
      if (alts == s.end() || !alts->is_array() || alts->empty()) continue;
      uint8_t kinds = 0;
      for (const json& alt : *alts) kinds |= read(alt, depth + 1).kinds;
      f.kinds &= kinds;
    }
    return f;
  }

  // Whether no value satisfies both a and b (see the header for the proofs).
  bool apart(const Facts& a, const Facts& b, int depth) {
    if (--budget_ <= 0) return false;
    const uint8_t common = a.kinds & b.kinds;
    for (uint8_t k = 1; k != 0 && k <= JsonGrammar::kNull; k = static_cast<uint8_t>(k << 1)) {
      if ((common & k) == 0) continue;
      if (!charge(a.values.size() * std::max<size_t>(b.values.size(), 1) +
                  b.values.size() * std::max<size_t>(a.values.size(), 1) + a.required.size() * b.closed.size() +
                  b.required.size() * a.closed.size())) {
        return false;
      }
      if (values_excluded(a, b, k) || values_excluded(b, a, k)) continue;
      if (k == JsonGrammar::kNumber && ranges_apart(a, b)) continue;
      if (k == JsonGrammar::kString && lengths_apart(a, b)) continue;
      if (k == JsonGrammar::kObject && objects_apart(a, b, depth)) continue;
      return false;
    }
    return true;
  }

 private:
  static void read_type(const json& t, Facts* f) {
    std::vector<json> names;
    if (t.is_string()) {
      names.push_back(t);
    } else if (t.is_array()) {
      names = t.get<std::vector<json>>();
    } else {
      return;  // malformed: the compiler refuses it
    }
    uint8_t kinds = 0;
    bool number = false, integer = false;
    for (const json& n : names) {
      const std::string name = n.is_string() ? n.get<std::string>() : std::string();
      if (name == "object") kinds |= JsonGrammar::kObject;
      else if (name == "array") kinds |= JsonGrammar::kArray;
      else if (name == "string") kinds |= JsonGrammar::kString;
      else if (name == "number") number = true;
      else if (name == "integer") integer = true;
      else if (name == "boolean") kinds |= JsonGrammar::kTrue | JsonGrammar::kFalse;
      else if (name == "null") kinds |= JsonGrammar::kNull;
      else return;  // malformed: the compiler refuses it
    }
    if (number || integer) kinds |= JsonGrammar::kNumber;
    f->kinds &= kinds;
    f->integer = integer && !number;
  }

  static void read_bounds(const json& s, Facts* f) {
    auto flag = [&](const char* k) {
      const auto it = s.find(k);
      return it != s.end() && it->is_boolean() && it->get<bool>();
    };
    if (const auto v = s.find("minimum"); v != s.end() && v->is_number()) narrow_lo(f, number_of(*v), flag("exclusiveMinimum"));
    if (const auto v = s.find("maximum"); v != s.end() && v->is_number()) narrow_hi(f, number_of(*v), flag("exclusiveMaximum"));
    if (const auto v = s.find("exclusiveMinimum"); v != s.end() && v->is_number()) narrow_lo(f, number_of(*v), true);
    if (const auto v = s.find("exclusiveMaximum"); v != s.end() && v->is_number()) narrow_hi(f, number_of(*v), true);
  }

  static void read_object(const json& s, Facts* f) {
    if (const auto r = s.find("required"); r != s.end() && r->is_array()) {
      for (const json& k : *r)
        if (k.is_string()) f->required.insert(k.get<std::string>());
    }
    const auto props = s.find("properties");
    std::set<std::string> declared;
    if (props != s.end() && props->is_object()) {
      for (const auto& item : props->items()) {
        f->properties.emplace_back(item.key(), &item.value());
        declared.insert(item.key());
      }
    }
    if (const auto extra = s.find("additionalProperties"); extra != s.end() && extra->is_boolean() && !extra->get<bool>()) {
      f->closed.push_back(std::move(declared));
    }
  }

  // Every value of kind k that `with` lists is one that `other` excludes.
  static bool values_excluded(const Facts& with, const Facts& other, uint8_t k) {
    if (!with.has_values) return false;
    return std::all_of(with.values.begin(), with.values.end(),
                       [&](const json& v) { return kind_of(v) != k || excluded(v, other); });
  }

  // `f` allows no value equal to v (read from the keywords Facts holds).
  static bool excluded(const json& v, const Facts& f) {
    const uint8_t k = kind_of(v);
    if ((f.kinds & k) == 0) return true;
    if (f.has_values && std::find(f.values.begin(), f.values.end(), v) == f.values.end()) return true;
    if (k == JsonGrammar::kNumber) {
      if (f.integer && !integral(v)) return true;
      const long double x = number_of(v);
      if (x < f.num_lo || (x == f.num_lo && f.lo_exclusive)) return true;
      if (x > f.num_hi || (x == f.num_hi && f.hi_exclusive)) return true;
    }
    if (k == JsonGrammar::kString) {
      const int64_t n = utf8_chars(v.get_ref<const std::string&>());
      if (n < f.min_length || (f.max_length >= 0 && n > f.max_length)) return true;
    }
    return false;
  }

  static bool below(const Facts& a, const Facts& b) {  // a's numbers all lie below b's
    return a.num_hi < b.num_lo || (a.num_hi == b.num_lo && (a.hi_exclusive || b.lo_exclusive));
  }
  static bool ranges_apart(const Facts& a, const Facts& b) { return below(a, b) || below(b, a); }

  static bool lengths_apart(const Facts& a, const Facts& b) {
    return (a.max_length >= 0 && a.max_length < b.min_length) || (b.max_length >= 0 && b.max_length < a.min_length);
  }

  // A key that `a` requires and a closed `b` does not declare.
  static bool required_key_forbidden(const Facts& a, const Facts& b) {
    for (const std::string& key : a.required)
      for (const std::set<std::string>& declared : b.closed)
        if (declared.count(key) == 0) return true;
    return false;
  }

  bool objects_apart(const Facts& a, const Facts& b, int depth) {
    if (required_key_forbidden(a, b) || required_key_forbidden(b, a)) return true;
    if (depth >= kMaxDepth) return false;
    for (const std::string& key : a.required) {
      if (b.required.count(key) == 0) continue;
      if (!charge(a.properties.size() + b.properties.size())) return false;
      for (const auto& [ka, sa] : a.properties) {
        if (ka != key) continue;
        const Facts fa = read(*sa, depth + 1);
        for (const auto& [kb, sb] : b.properties) {
          if (kb != key) continue;
          if (spent()) return false;
          if (apart(fa, read(*sb, depth + 1), depth + 1)) return true;
        }
      }
    }
    return false;
  }

  const SchemaRefResolver& resolve_;
  int64_t budget_ = kBudget;
};

}  // namespace

// A key by value for a scalar (numbers by their value: 1 and 1.0 are one), empty for an
// object or array.
std::string value_key(const json& v) {
  if (v.is_number()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "n%.21Lg", number_of(v));
    return buf;
  }
  if (v.is_object() || v.is_array()) return {};
  return v.dump();
}

std::optional<OneOfOverlap> first_overlapping_alternatives(const json& alternatives, const json& beside,
                                                           const SchemaRefResolver& resolve) {
  // Malformed (the compiler refuses it), or one alternative: nothing to tell apart.
  if (!alternatives.is_array() || alternatives.size() < 2) return std::nullopt;
  // Every alternative a const or an enum of scalars, beside annotations only: apart when no
  // value is listed by two, checked by value at once (the keywords beside the oneOf narrow
  // every alternative alike, which keeps them apart).
  {
    static const std::set<std::string> kKept = {"const",    "enum",     "title",   "description",
                                                "$comment", "examples", "default"};
    std::map<std::string, size_t> owner;
    bool values_only = true;
    std::optional<OneOfOverlap> shared;
    for (size_t i = 0; i < alternatives.size() && values_only; ++i) {
      const json& alt = alternatives[i];
      if (!alt.is_object() || alt.contains("const") == alt.contains("enum")) {
        values_only = false;
        break;
      }
      for (const auto& item : alt.items()) {
        if (kKept.count(item.key()) == 0) values_only = false;
      }
      const json values = alt.contains("const") ? json::array({alt["const"]}) : alt["enum"];
      if (!values.is_array()) values_only = false;
      for (size_t k = 0; values_only && k < values.size(); ++k) {
        const std::string key = value_key(values[k]);
        if (key.empty()) {
          values_only = false;
          break;
        }
        const auto [it, fresh] = owner.emplace(key, i);
        if (!fresh && it->second != i && !shared) shared = OneOfOverlap{it->second, i, false};
      }
    }
    if (values_only) return shared;
  }
  Prover prover(resolve);
  const Facts common = prover.read(beside, 0);
  std::vector<Facts> alts;
  alts.reserve(alternatives.size());
  for (size_t i = 0; i < alternatives.size(); ++i) {
    Facts f = prover.read(alternatives[i], 1);
    prover.conjoin_counted(&f, common);
    if (prover.spent()) return OneOfOverlap{i == 0 ? 0 : i - 1, i == 0 ? 1 : i, true};
    alts.push_back(std::move(f));
  }
  for (size_t i = 0; i < alts.size(); ++i) {
    for (size_t j = i + 1; j < alts.size(); ++j) {
      if (prover.spent()) return OneOfOverlap{i, j, true};
      if (!prover.apart(alts[i], alts[j], 1)) return OneOfOverlap{i, j, prover.spent()};
    }
  }
  return std::nullopt;
}

}  // namespace gs::text
