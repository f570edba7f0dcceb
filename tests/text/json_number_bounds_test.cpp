// Number bounds and multipleOf in the structured-output grammar (decision 0027, point 1): random
// bounds checked by brute force over the matcher itself (every text it accepts, or random
// walks through what it accepts where that set is too large), against bounds computed here
// independently, in exact decimal arithmetic.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "text/json_grammar.h"

namespace gs::text {
namespace {

using json = nlohmann::json;
using Grammar = std::shared_ptr<const JsonGrammar>;

std::string text_of(JsonInt v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  auto m = static_cast<JsonUInt>(neg ? -v : v);
  std::string s;
  for (; m != 0; m /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
  return neg ? "-" + s : s;
}

JsonInt pow10(int k) {
  JsonInt p = 1;
  for (int i = 0; i < k; ++i) p *= 10;
  return p;
}

// The decimal `text` (-?digits(.digits)?, no exponent) in units of 10^-scale; nothing when it
// has more fraction digits than that or is not such a decimal.
std::optional<JsonInt> units_of(const std::string& text, int scale) {
  size_t i = 0;
  const bool neg = !text.empty() && text[0] == '-';
  if (neg) ++i;
  JsonInt v = 0;
  int frac = -1;
  for (; i < text.size(); ++i) {
    if (text[i] == '.' && frac < 0) {
      frac = 0;
      continue;
    }
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
    if (frac >= 0) ++frac;
  }
  frac = std::max(frac, 0);
  if (frac > scale) return std::nullopt;
  v *= pow10(scale - frac);
  return neg ? -v : v;
}

// A JSON number's text (an exponent allowed: a bound as nlohmann writes a double) in units of
// 10^-scale, exactly; nothing when it is not whole in those units.
std::optional<JsonInt> units_of_json(const std::string& text, int scale) {
  const size_t e = text.find_first_of("eE");
  if (e == std::string::npos) return units_of(text, scale);
  const int exp10 = std::stoi(text.substr(e + 1));
  if (scale + exp10 < 0) return std::nullopt;
  return units_of(text.substr(0, e), scale + exp10);  // the mantissa times 10^(scale + exp10)
}

Result<Grammar> compile(const json& s) { return JsonGrammar::from_schema(s); }

bool accepts(const Grammar& g, std::string_view text) {
  JsonMatcher m(g);
  return m.feed(text) && m.can_end();
}

// Every text of at most `max_len` bytes of `alphabet` that the matcher takes whole as a value,
// found by walking what it accepts byte by byte; a prefix it takes that neither ends nor goes
// on is a dead end, reported in *dead_ends.
void accepted_texts(const JsonMatcher& m, const std::string& prefix, const std::string& alphabet, size_t max_len,
                    std::set<std::string>* out, std::vector<std::string>* dead_ends) {
  if (m.can_end()) out->insert(prefix);
  bool more = false;
  for (char c : alphabet) {
    JsonMatcher next = m;
    if (!next.feed(static_cast<unsigned char>(c))) continue;
    more = true;
    if (prefix.size() + 1 <= max_len) accepted_texts(next, prefix + c, alphabet, max_len, out, dead_ends);
  }
  if (!more && !m.can_end()) dead_ends->push_back(prefix);
}

// A random text the matcher accepts whole: each step a byte it takes or, where the value may
// end, the end. Empty when it reached a prefix with neither (a dead end).
std::string random_walk(const Grammar& g, const std::string& alphabet, std::mt19937_64& rng) {
  JsonMatcher m(g);
  std::string text;
  for (;;) {
    std::vector<char> next;
    for (char c : alphabet) {
      JsonMatcher copy = m;
      if (copy.feed(static_cast<unsigned char>(c))) next.push_back(c);
    }
    if (m.can_end() && (next.empty() || rng() % 4 == 0)) return text;
    if (next.empty()) return {};
    const char c = next[rng() % next.size()];
    m.feed(static_cast<unsigned char>(c));
    text += c;
  }
}

// A bound drawn for a test: its JSON text and its exact value in units of 10^-scale.
struct Bound {
  std::string text;
  JsonInt units = 0;
};

// Integer bounds: the schema and the integers it allows, lo..hi, from random bounds of every
// sort (small, negative, near the int64 and uint64 limits, up to 10^30, fractional, one-sided,
// exclusive, draft 4's boolean exclusives).
struct IntegerCase {
  json schema;
  std::optional<JsonInt> lo, hi;  // nothing: no bound on that side
};

JsonInt random_magnitude(std::mt19937_64& rng) {
  switch (rng() % 6) {
    case 0:
      return static_cast<JsonInt>(rng() % 50);
    case 1:
      return static_cast<JsonInt>(rng() % 5000);
    case 2:  // near INT64_MAX / INT64_MIN's magnitude
      return static_cast<JsonInt>(INT64_MAX) - static_cast<JsonInt>(rng() % 40) + 1;
    case 3:  // near UINT64_MAX
      return static_cast<JsonInt>(UINT64_MAX) - static_cast<JsonInt>(rng() % 40);
    case 4:  // near 10^18, where the default digits end
      return pow10(18) - 20 + static_cast<JsonInt>(rng() % 40);
    default:  // up to 10^30
      return pow10(static_cast<int>(19 + rng() % 12)) + static_cast<JsonInt>(rng() % 1000);
  }
}

TEST(JsonNumberBounds, RandomIntegerBoundsAreExact) {
  std::mt19937_64 rng(20261205);
  const std::string alphabet = "-0123456789.e";
  int exhaustive = 0, walked = 0, refused = 0;
  for (int iter = 0; iter < 1000; ++iter) {
    // Two bounds near each other (or far apart), either side possibly absent.
    const bool neg = rng() % 2 == 0;
    JsonInt a = random_magnitude(rng) * (neg ? -1 : 1);
    const int spread = static_cast<int>(rng() % 10);
    JsonInt b = spread < 3   ? random_magnitude(rng) * (rng() % 2 ? -1 : 1)
                : spread < 5 ? a + static_cast<JsonInt>(rng() % 3)
                             : a + static_cast<JsonInt>(rng() % 300);
    if (a > b) std::swap(a, b);
    // Bounds a JSON number holds exactly: int64, uint64, or a double (its shortest text).
    const auto as_json = [](JsonInt v) -> std::pair<json, bool> {
      if (v >= INT64_MIN && v <= INT64_MAX) return {json(static_cast<int64_t>(v)), true};
      if (v >= 0 && v <= static_cast<JsonInt>(UINT64_MAX)) return {json(static_cast<uint64_t>(v)), true};
      return {json(static_cast<double>(v)), false};  // read back as its shortest decimal
    };
    IntegerCase c;
    c.schema = {{"type", "integer"}};
    const int form = static_cast<int>(rng() % 6);
    const bool has_lo = rng() % 5 != 0, has_hi = rng() % 5 != 0;
    const auto place = [&](JsonInt v, bool lower) {
      auto [j, exact] = as_json(v);
      // A double's bound is the decimal nlohmann writes for it (its shortest), as written.
      const JsonInt value = exact ? v : *units_of_json(j.dump(), 0);
      std::optional<JsonInt>& bound = lower ? c.lo : c.hi;
      switch (exact || form != 5 ? form : 0) {
        case 0:  // minimum / maximum
          c.schema[lower ? "minimum" : "maximum"] = j;
          bound = value;
          break;
        case 1:  // exclusive
          c.schema[lower ? "exclusiveMinimum" : "exclusiveMaximum"] = j;
          bound = lower ? value + 1 : value - 1;
          break;
        case 2:  // draft 4's boolean exclusive
          c.schema[lower ? "minimum" : "maximum"] = j;
          c.schema[lower ? "exclusiveMinimum" : "exclusiveMaximum"] = true;
          bound = lower ? value + 1 : value - 1;
          break;
        case 3:  // a fraction: value + 0.5 (small values only, where a double holds it)
          if (v > -1000000 && v < 1000000) {
            c.schema[lower ? "minimum" : "maximum"] = static_cast<double>(v) + 0.5;
            bound = lower ? value + 1 : value;
          } else {
            c.schema[lower ? "minimum" : "maximum"] = j;
            bound = value;
          }
          break;
        case 4:  // an exclusive fraction: value - 0.25
          if (v > -1000000 && v < 1000000) {
            c.schema[lower ? "exclusiveMinimum" : "exclusiveMaximum"] = static_cast<double>(v) - 0.25;
            bound = lower ? value : value - 1;
          } else {
            c.schema[lower ? "exclusiveMinimum" : "exclusiveMaximum"] = j;
            bound = lower ? value + 1 : value - 1;
          }
          break;
        default:  // both keywords, the tighter wins
          c.schema[lower ? "minimum" : "maximum"] = j;
          c.schema[lower ? "exclusiveMinimum" : "exclusiveMaximum"] = as_json(lower ? v - 3 : v + 3).first;
          bound = value;
          break;
      }
    };
    if (has_lo) place(a, true);
    if (has_hi) place(b, false);
    // The digits an integer may have: 18, or those of its bounds.
    int digits = 18;
    for (const auto& v : {c.lo, c.hi}) {
      if (v) digits = std::max(digits, static_cast<int>(text_of(*v < 0 ? -*v : *v).size()));
    }
    const JsonInt cap = pow10(digits) - 1;
    const JsonInt lo = c.lo ? std::max(*c.lo, -cap) : -cap;
    const JsonInt hi = c.hi ? std::min(*c.hi, cap) : cap;
    const std::string what = c.schema.dump();
    auto g = compile(c.schema);
    if (lo > hi) {
      // No integer: refused with a message that says so.
      ASSERT_FALSE(g.ok()) << what;
      EXPECT_NE(g.status().message().find("no integer lies within"), std::string::npos) << g.status().message();
      ++refused;
      continue;
    }
    ASSERT_TRUE(g.ok()) << what << ": " << g.status().to_string();
    // Values at and around each bound, and at the ends of the digits.
    for (const JsonInt base : {lo, hi, JsonInt(0), cap, -cap}) {
      for (JsonInt d = -3; d <= 3; ++d) {
        const JsonInt v = base + d;
        const bool in = v >= lo && v <= hi;
        EXPECT_EQ(accepts(*g, text_of(v)), in) << what << " " << text_of(v);
      }
    }
    if (hi - lo <= 300) {
      // Every text the matcher accepts (up to the digits of the bounds, a '-', one more byte)
      // is one of lo..hi as an integer is written, each of them is among them, and no prefix
      // it takes is a dead end.
      std::set<std::string> texts;
      std::vector<std::string> dead;
      accepted_texts(JsonMatcher(*g), "", alphabet, static_cast<size_t>(digits + 2), &texts, &dead);
      std::set<std::string> want;
      for (JsonInt v = lo; v <= hi; ++v) want.insert(text_of(v));
      EXPECT_EQ(texts, want) << what;
      EXPECT_TRUE(dead.empty()) << what << " dead end at '" << dead.front() << "'";
      ++exhaustive;
    }
    // Random walks through what it accepts: each ends on an integer within the bounds.
    for (int w = 0; w < 30; ++w) {
      const std::string t = random_walk(*g, alphabet, rng);
      ASSERT_FALSE(t.empty()) << what << ": a dead end";
      const std::optional<JsonInt> v = units_of(t, 0);
      ASSERT_TRUE(v.has_value()) << what << " " << t;
      EXPECT_TRUE(*v >= lo && *v <= hi) << what << " " << t;
      EXPECT_EQ(t, text_of(*v)) << "not as an integer is written: " << t;
      ++walked;
    }
  }
  EXPECT_GT(exhaustive, 200);
  EXPECT_GT(refused, 20);
  EXPECT_GT(walked, 10000);
}

TEST(JsonNumberBounds, IntegersAtTheInt64AndUint64Limits) {
  const auto g = [](const char* text) {
    auto r = JsonGrammar::from_schema(json::parse(text));
    EXPECT_TRUE(r.ok()) << text << " " << r.status().to_string();
    return r.ok() ? *r : JsonGrammar::any_object();
  };
  auto top = g(R"({"type":"integer","minimum":9223372036854775800,"maximum":9223372036854775807})");
  EXPECT_TRUE(accepts(top, "9223372036854775807"));
  EXPECT_TRUE(accepts(top, "9223372036854775800"));
  EXPECT_FALSE(accepts(top, "9223372036854775808"));
  EXPECT_FALSE(accepts(top, "9223372036854775799"));
  auto bottom = g(R"({"type":"integer","minimum":-9223372036854775808,"maximum":-9223372036854775801})");
  EXPECT_TRUE(accepts(bottom, "-9223372036854775808"));
  EXPECT_FALSE(accepts(bottom, "-9223372036854775809"));
  EXPECT_FALSE(accepts(bottom, "-9223372036854775800"));
  auto u64 = g(R"({"type":"integer","exclusiveMinimum":18446744073709551610})");
  EXPECT_FALSE(accepts(u64, "18446744073709551610"));
  EXPECT_TRUE(accepts(u64, "18446744073709551611"));
  EXPECT_TRUE(accepts(u64, "99999999999999999999"));  // the bound's 20 digits
  EXPECT_FALSE(accepts(u64, "100000000000000000000"));
  // Bounds of 10^38 or more: on the loose side they bound nothing the matcher writes; on the
  // tight side, refused.
  auto loose = g(R"({"type":"integer","minimum":-1e300,"maximum":5})");
  EXPECT_TRUE(accepts(loose, "-999999999999999999"));
  EXPECT_TRUE(accepts(loose, "5"));
  EXPECT_FALSE(accepts(loose, "6"));
  for (const char* text : {R"({"type":"integer","minimum":1e38})", R"({"type":"number","maximum":-1e40})"}) {
    auto r = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("10^38"), std::string::npos) << r.status().message();
  }
  // An infinite bound (nlohmann refuses 1e400 in a text, but a json value may hold one):
  // no bound on the loose side, refused on the tight one, as any beyond 10^38.
  const double inf = std::numeric_limits<double>::infinity();
  auto loose_inf = JsonGrammar::from_schema(json{{"type", "number"}, {"maximum", inf}, {"minimum", -2}});
  ASSERT_TRUE(loose_inf.ok());
  EXPECT_TRUE(accepts(*loose_inf, "12345.5"));
  EXPECT_FALSE(accepts(*loose_inf, "-2.5"));
  EXPECT_FALSE(JsonGrammar::from_schema(json{{"type", "integer"}, {"minimum", inf}}).ok());
  EXPECT_FALSE(JsonGrammar::from_schema(json{{"type", "number"}, {"multipleOf", inf}}).ok());
  // A double's bound is the decimal written: 1e30 is 10^30.
  auto big = g(R"({"type":"integer","minimum":1e30,"maximum":1e30})");
  EXPECT_TRUE(accepts(big, "1" + std::string(30, '0')));
  EXPECT_FALSE(accepts(big, "1" + std::string(29, '0') + "1"));
}

// Numbers that may have a fraction: random decimal bounds (and multipleOf), every text of up to
// two fraction digits compared with the values in range, and random walks (up to 20 fraction
// digits) ending within them.
TEST(JsonNumberBounds, RandomNumberBoundsAreExact) {
  std::mt19937_64 rng(7);
  const std::string alphabet = "-0123456789.eE+";
  constexpr int kScale = 20;  // what the matcher writes at most, when bounds are small
  int exhaustive = 0, refused = 0;
  for (int iter = 0; iter < 400; ++iter) {
    // Bounds with 0..3 fraction digits in [-30, 30] (exhaustive) or [-10^6, 10^6] (walks).
    const bool small = iter % 2 == 0;
    const auto draw = [&]() {
      const int frac = static_cast<int>(rng() % 4);
      const JsonInt range = (small ? 30 : 1000000) * pow10(frac);
      const JsonInt v = static_cast<JsonInt>(rng() % static_cast<uint64_t>(2 * range + 1)) - range;
      // As text: the JSON the schema carries, and its value in units.
      std::string t = text_of(v < 0 ? -v : v);
      if (frac > 0) {
        while (static_cast<int>(t.size()) <= frac) t.insert(t.begin(), '0');
        t.insert(t.end() - frac, '.');
      }
      if (v < 0) t.insert(t.begin(), '-');
      return Bound{t, *units_of(t, kScale)};
    };
    Bound a = draw(), b = iter % 8 == 1 ? a : draw();  // one bound twice: often no number between
    if (a.units > b.units) std::swap(a, b);
    json s = {{"type", rng() % 4 == 0 ? json({"number", "null"}) : json("number")}};
    const bool has_lo = rng() % 6 != 0, has_hi = rng() % 6 != 0 || !has_lo;
    const bool lo_ex = rng() % 2 == 0, hi_ex = rng() % 2 == 0;
    if (has_lo) s[lo_ex ? "exclusiveMinimum" : "minimum"] = json::parse(a.text);
    if (has_hi) s[hi_ex ? "exclusiveMaximum" : "maximum"] = json::parse(b.text);
    static const char* kSteps[] = {"0.25", "0.1", "0.01", "0.5", "3", "0.3"};
    std::optional<JsonInt> step;
    int max_frac = 2;  // the fraction digits compared: 2, or a multipleOf's (written with no more)
    if (rng() % 3 == 0) {
      const std::string m = kSteps[rng() % std::size(kSteps)];
      s["multipleOf"] = json::parse(m);
      step = *units_of(m, kScale);
      max_frac = m.find('.') == std::string::npos ? 0 : static_cast<int>(m.size() - m.find('.') - 1);
    }
    const auto allowed = [&](JsonInt u) {
      if (has_lo && (lo_ex ? u <= a.units : u < a.units)) return false;
      if (has_hi && (hi_ex ? u >= b.units : u > b.units)) return false;
      return !step || u % *step == 0;
    };
    const std::string what = s.dump();
    auto g = compile(s);
    // Whether any number (of at most 2 fraction digits here; the matcher takes up to 20) is
    // allowed: the bounds are of at most 3 digits, so one more digit finds one if any exists.
    bool any = false;
    const JsonInt from = has_lo ? a.units : b.units - 5 * pow10(kScale);
    const JsonInt to = has_hi ? b.units : a.units + 5 * pow10(kScale);
    for (JsonInt u = from, k = 0; u <= to && k <= 50000 && !any; u += pow10(kScale - 4), ++k) any = allowed(u);
    if (!any) {
      ASSERT_FALSE(g.ok() && !s["type"].is_array()) << what;
      ++refused;
      continue;
    }
    ASSERT_TRUE(g.ok()) << what << ": " << g.status().to_string();
    if (small && has_lo && has_hi) {
      // Every text of at most two fraction digits the matcher takes is a number in range, and
      // every such number, in each way it may be written, is taken; no dead ends.
      std::set<std::string> texts;
      std::vector<std::string> dead;
      std::function<void(const JsonMatcher&, const std::string&, int)> walk = [&](const JsonMatcher& m,
                                                                                  const std::string& p, int frac) {
        if (m.can_end()) texts.insert(p);
        bool more = false;
        for (char c : alphabet) {
          JsonMatcher next = m;
          if (!next.feed(static_cast<unsigned char>(c))) continue;
          more = true;
          const int f = c == '.' ? 0 : frac >= 0 ? frac + 1 : -1;
          if (f <= 2 && p.size() < 12) walk(next, p + c, f);
        }
        if (!more && !m.can_end()) dead.push_back(p);
      };
      walk(JsonMatcher(*g), "", -1);
      std::set<std::string> want;
      const JsonInt start = ((a.units - pow10(kScale)) / pow10(kScale - 2) - 1) * pow10(kScale - 2);
      for (JsonInt u = start; u <= b.units + pow10(kScale); u += pow10(kScale - 2)) {
        if (!allowed(u)) continue;
        const JsonInt mag = u < 0 ? -u : u;
        const std::string whole = text_of(mag / pow10(kScale));
        const auto cents = static_cast<int>(mag % pow10(kScale) / pow10(kScale - 2));
        std::vector<std::string> forms;
        if (cents == 0) forms = {whole, whole + ".0", whole + ".00"};
        else if (cents % 10 == 0) forms = {whole + "." + std::to_string(cents / 10), whole + "." + std::to_string(cents)};
        else forms = {whole + "." + (cents < 10 ? "0" : "") + std::to_string(cents)};
        std::erase_if(forms, [&](const std::string& f) {
          return f.find('.') != std::string::npos && static_cast<int>(f.size() - f.find('.') - 1) > max_frac;
        });
        for (const std::string& f : forms) {
          if (u <= 0) want.insert("-" + f);  // "-0" is a number (0)
          if (u >= 0) want.insert(f);
        }
      }
      EXPECT_EQ(texts, want) << what;
      EXPECT_TRUE(dead.empty()) << what;
      ++exhaustive;
    }
    for (int w = 0; w < 40; ++w) {
      const std::string t = random_walk(*g, alphabet, rng);
      ASSERT_FALSE(t.empty()) << what << ": a dead end";
      if (t == "null") continue;
      const std::optional<JsonInt> u = units_of(t, kScale);
      ASSERT_TRUE(u.has_value()) << what << " wrote " << t << " (an exponent, or past 20 fraction digits)";
      EXPECT_TRUE(allowed(*u)) << what << " " << t;
      EXPECT_TRUE(json::accept(t)) << t;
    }
  }
  EXPECT_GT(exhaustive, 50);
  EXPECT_GT(refused, 3);
}

TEST(JsonNumberBounds, MultipleOf) {
  const auto g = [](const char* text) {
    auto r = JsonGrammar::from_schema(json::parse(text));
    EXPECT_TRUE(r.ok()) << text << " " << r.status().to_string();
    return r.ok() ? *r : JsonGrammar::any_object();
  };
  // Integers, with and without bounds; every accepted text a multiple.
  auto five = g(R"({"type":"integer","multipleOf":5})");
  for (int v = -200; v <= 200; ++v) EXPECT_EQ(accepts(five, std::to_string(v)), v % 5 == 0) << v;
  auto seven = g(R"({"type":"integer","multipleOf":7,"minimum":-20,"exclusiveMaximum":50})");
  std::set<std::string> texts, want;
  std::vector<std::string> dead;
  accepted_texts(JsonMatcher(seven), "", "-0123456789", 4, &texts, &dead);
  for (int v = -14; v < 50; v += 7) want.insert(std::to_string(v));
  EXPECT_EQ(texts, want);
  EXPECT_TRUE(dead.empty());
  // An integer that is a multiple of 2.5 is one of 5.
  auto half = g(R"({"type":"integer","multipleOf":2.5,"maximum":20,"minimum":0})");
  EXPECT_TRUE(accepts(half, "15"));
  EXPECT_FALSE(accepts(half, "12"));
  // Numbers: written with the multipleOf's fraction digits at most.
  auto cents = g(R"({"type":"number","multipleOf":0.01})");
  EXPECT_TRUE(accepts(cents, "12.34"));
  EXPECT_TRUE(accepts(cents, "-0.5"));
  EXPECT_FALSE(accepts(cents, "12.345"));
  EXPECT_FALSE(accepts(cents, "1e2"));
  auto quarter = g(R"({"type":"number","multipleOf":0.25,"minimum":0,"maximum":1})");
  for (const char* ok : {"0", "0.25", "0.5", "0.75", "1", "1.00"}) EXPECT_TRUE(accepts(quarter, ok)) << ok;
  for (const char* bad : {"0.1", "1.25", "-0.25", "0.3"}) EXPECT_FALSE(accepts(quarter, bad)) << bad;
  // An enum keeps only its multiples.
  auto e = g(R"({"enum":[1,2,3,4,6],"multipleOf":2})");
  EXPECT_FALSE(accepts(e, "1"));
  EXPECT_TRUE(accepts(e, "4"));
  // allOf: one a multiple of the other takes the larger.
  auto all = g(R"({"allOf":[{"type":"integer","multipleOf":2},{"multipleOf":6}]})");
  EXPECT_TRUE(accepts(all, "12"));
  EXPECT_FALSE(accepts(all, "4"));
  // Refused: not above 0, not a number, no multiple within the bounds, two that do not nest.
  for (const char* text : {R"({"type":"integer","multipleOf":0})", R"({"type":"number","multipleOf":"2"})",
                           R"({"type":"number","multipleOf":1e-30})",
                           R"({"type":"integer","multipleOf":10,"minimum":1,"maximum":9})",
                           R"({"type":"number","multipleOf":0.5,"exclusiveMinimum":1,"exclusiveMaximum":1.5})",
                           R"({"allOf":[{"type":"integer","multipleOf":2},{"multipleOf":3}]})"}) {
    auto r = JsonGrammar::from_schema(json::parse(text));
    EXPECT_FALSE(r.ok()) << text;
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().rfind("schema", 0), 0u) << r.status().message();
    }
  }
}

}  // namespace
}  // namespace gs::text
