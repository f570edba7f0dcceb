// anyOf / oneOf held exactly or refused (decision 0027 points 2 and 11): random walks over the
// matcher of each accepted union never finish a value that the schema (checked by a small
// validator written here, sharing no code with the compiler) refuses; unions that cannot be
// held are refused naming the keyword.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <random>
#include <regex>
#include <string>

#include "text/json_grammar.h"
#include "text/json_matcher_test_util.h"

namespace gs::text {
namespace {

using json = nlohmann::json;

int64_t code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_type(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number() && std::floor(v.get<double>()) == v.get<double>();
  return false;
}

// JSON Schema validation of the keywords these tests use.
bool valid(const json& v, const json& s, const json& root) {
  if (s.is_boolean()) return s.get<bool>();
  if (s.contains("$ref")) {
    const std::string r = s["$ref"];
    if (!valid(v, root.at(json::json_pointer(r.substr(1))), root)) return false;
  }
  if (s.contains("type")) {
    bool any = false;
    if (s["type"].is_string()) {
      any = is_type(v, s["type"]);
    } else {
      for (const json& t : s["type"]) any = any || is_type(v, t);
    }
    if (!any) return false;
  }
  if (s.contains("const") && !(v == s["const"])) return false;
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) return false;
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return false;
    if (s.contains("multipleOf")) {
      const double q = x / s["multipleOf"].get<double>();
      if (std::fabs(q - std::round(q)) > 1e-9) return false;
    }
  }
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (s.contains("minLength") && code_points(t) < s["minLength"].get<int64_t>()) return false;
    if (s.contains("maxLength") && code_points(t) > s["maxLength"].get<int64_t>()) return false;
    if (s.contains("pattern") && !std::regex_search(t, std::regex(s["pattern"].get<std::string>()))) return false;
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    if (s.contains("items")) {
      for (const json& item : v)
        if (!valid(item, s["items"], root)) return false;
    }
  }
  if (v.is_object()) {
    if (s.contains("required")) {
      for (const json& k : s["required"])
        if (!v.contains(k.get<std::string>())) return false;
    }
    for (const auto& [k, x] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(k)) {
        if (!valid(x, s["properties"][k], root)) return false;
      } else if (s.contains("additionalProperties") && !valid(x, s["additionalProperties"], root)) {
        return false;
      }
    }
  }
  if (s.contains("allOf")) {
    for (const json& m : s["allOf"])
      if (!valid(v, m, root)) return false;
  }
  if (s.contains("anyOf")) {
    bool any = false;
    for (const json& m : s["anyOf"]) any = any || valid(v, m, root);
    if (!any) return false;
  }
  if (s.contains("oneOf")) {
    int n = 0;
    for (const json& m : s["oneOf"]) n += valid(v, m, root);
    if (n != 1) return false;
  }
  return true;
}

// A random value the matcher writes: random bytes among those it takes, leaning to the
// closing ones after a while; empty when it does not finish within the steps.
std::string random_walk(const std::shared_ptr<const JsonGrammar>& g, std::mt19937& rng) {
  JsonMatcher m(g);
  std::string text;
  for (int step = 0; step < 400; ++step) {
    if (m.done() || (m.can_end() && (step > 30 || rng() % 4 == 0))) return text;
    std::vector<unsigned char> next = test_util::bytes_taken(m);
    if (next.empty()) return m.can_end() ? text : std::string();
    if (step > 30) {
      std::vector<unsigned char> closing;
      for (unsigned char c : next)
        if (c == '"' || c == '}' || c == ']' || c == ',' || c == ':' || (c >= '0' && c <= '9')) closing.push_back(c);
      if (!closing.empty() && rng() % 4 != 0) next = closing;
    } else {
      // Printable ASCII mostly, so that the walk writes keys and values rather than bytes.
      std::vector<unsigned char> ascii;
      for (unsigned char c : next)
        if (c >= 0x20 && c < 0x7F) ascii.push_back(c);
      if (!ascii.empty() && rng() % 8 != 0) next = ascii;
    }
    const unsigned char c = next[rng() % next.size()];
    EXPECT_TRUE(m.feed(c));
    text.push_back(static_cast<char>(c));
  }
  return m.can_end() ? text : std::string();
}

const char* kAccepted[] = {
    // The tester's three, as oneOf and as anyOf.
    R"({"oneOf":[{"type":"object","properties":{"kind":{"const":"a"},"v":{"type":"integer"}},"required":["kind","v"],"additionalProperties":false},
                 {"type":"object","properties":{"kind":{"const":"b"},"w":{"type":"string"}},"required":["kind","w"],"additionalProperties":false}]})",
    R"({"anyOf":[{"type":"object","properties":{"kind":{"const":"a"},"v":{"type":"integer"}},"required":["kind","v"],"additionalProperties":false},
                 {"type":"object","properties":{"kind":{"const":"b"},"w":{"type":"string"}},"required":["kind","w"],"additionalProperties":false}]})",
    R"({"oneOf":[{"type":"integer","minimum":0,"maximum":2},{"type":"integer","minimum":7,"maximum":9}]})",
    R"({"anyOf":[{"type":"integer","minimum":0,"maximum":2},{"type":"integer","minimum":7,"maximum":9}]})",
    R"({"oneOf":[{"enum":["abcd"]},{"type":"string","maxLength":3}]})",
    R"({"anyOf":[{"enum":["abcd"]},{"type":"string","maxLength":3}]})",
    // pydantic Optional fields, enums, nested objects.
    R"({"type":"object","properties":{"name":{"anyOf":[{"type":"string"},{"type":"null"}]},
        "age":{"anyOf":[{"type":"integer","minimum":0},{"type":"null"}]},
        "tags":{"anyOf":[{"type":"array","items":{"type":"string","maxLength":4}},{"type":"null"}]},
        "color":{"anyOf":[{"enum":["red","green"]},{"type":"null"}]}},"required":["name","age","tags","color"],
        "additionalProperties":false})",
    R"({"$defs":{"P":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"],"additionalProperties":false}},
        "anyOf":[{"$ref":"#/$defs/P"},{"type":"null"}]})",
    // Unions of one kind that one alternative holds, that meet, or that list.
    R"({"anyOf":[{"type":"integer"},{"type":"number"}]})",
    R"({"anyOf":[{"type":"integer","minimum":0,"maximum":5},{"type":"integer","minimum":6,"maximum":10}]})",
    R"({"anyOf":[{"type":"number","minimum":0,"maximum":1},{"type":"number","minimum":0.5,"maximum":2}]})",
    R"({"anyOf":[{"enum":[1,2,3]},{"type":"integer","minimum":10,"maximum":12}]})",
    R"({"anyOf":[{"const":1.5},{"type":"number","minimum":0,"maximum":3}]})",
    R"({"anyOf":[{"type":"string","pattern":"^a"},{"type":"string","pattern":"^b","maxLength":3}]})",
    R"({"anyOf":[{"type":"string","minLength":5,"maxLength":6},{"type":"string","maxLength":1},{"const":"xyz"}]})",
    R"({"$defs":{"i":{"type":"integer","minimum":0,"maximum":50}},
        "anyOf":[{"type":"array","items":{"$ref":"#/$defs/i"},"maxItems":1},{"type":"array","items":{"$ref":"#/$defs/i"},"minItems":2,"maxItems":3}]})",
    R"({"anyOf":[{"type":"object"},{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}]})",
    // Tagged unions: three ways, nested, with the keywords beside, with null, through $ref.
    R"({"oneOf":[{"type":"object","properties":{"t":{"const":"x"},"a":{"type":"integer","minimum":0,"maximum":3}},"required":["t","a"],"additionalProperties":false},
                 {"type":"object","properties":{"t":{"enum":["y","z"]},"b":{"type":"boolean"}},"required":["t"],"additionalProperties":false},
                 {"type":"object","properties":{"n":{"type":"integer"},"t":{"const":"w"}},"required":["n","t"],"additionalProperties":false}]})",
    R"({"type":"object","required":["t"],"anyOf":[{"properties":{"t":{"const":"p"},"q":{"type":"string","maxLength":2}},"additionalProperties":false},
                                                 {"properties":{"t":{"const":"r"}},"additionalProperties":false},{"type":"null"}]})",
    R"({"anyOf":[{"type":"null"},{"oneOf":[{"type":"object","properties":{"k":{"const":"a"}},"required":["k"],"additionalProperties":false},
                                           {"type":"object","properties":{"k":{"const":"b"},"c":{"type":"array","items":{"$ref":"#"},"maxItems":2}},"required":["k"],"additionalProperties":false}]}]})",
};

TEST(JsonUnion, RandomWalksNeverLeaveAnAcceptedUnion) {
  std::mt19937 rng(20270);
  for (const char* text : kAccepted) {
    const json s = json::parse(text);
    auto g = JsonGrammar::from_schema(s);
    ASSERT_TRUE(g.ok()) << text << ": " << g.status().to_string();
    int finished = 0;
    for (int walk = 0; walk < 300; ++walk) {
      const std::string out = random_walk(*g, rng);
      if (out.empty()) continue;
      ++finished;
      const json v = json::parse(out, nullptr, false);
      ASSERT_FALSE(v.is_discarded()) << text << " wrote " << out;
      EXPECT_TRUE(valid(v, s, s)) << text << " wrote " << out;
    }
    EXPECT_GT(finished, 100) << text;
  }
}

bool accepts(const std::shared_ptr<const JsonGrammar>& g, std::string_view text) {
  JsonMatcher m(g);
  return m.feed(text) && m.can_end();
}

TEST(JsonUnion, TheTestersUnionsAreExact) {
  for (const char* key : {"oneOf", "anyOf"}) {
    json tagged = json::parse(kAccepted[0]);
    if (std::string(key) == "anyOf") tagged = json::parse(kAccepted[1]);
    auto g = *JsonGrammar::from_schema(tagged);
    EXPECT_TRUE(accepts(g, R"({"kind":"a","v":3})"));
    EXPECT_TRUE(accepts(g, R"({"kind":"b","w":"x"})"));
    for (const char* bad : {"{}", R"({"kind":"a","w":"x"})", R"({"kind":"b","v":1})", R"({"v":1,"kind":"a"})",
                            R"({"kind":"a"})", R"({"kind":"c","v":1})"}) {
      EXPECT_FALSE(accepts(g, bad)) << key << " " << bad;
    }
  }
  auto ranges = *JsonGrammar::from_schema(json::parse(kAccepted[2]));
  for (int v = -2; v <= 12; ++v) EXPECT_EQ(accepts(ranges, std::to_string(v)), (v >= 0 && v <= 2) || (v >= 7 && v <= 9)) << v;
  auto strings = *JsonGrammar::from_schema(json::parse(kAccepted[4]));
  for (const char* ok : {R"("")", R"("abc")", R"("abcd")"}) EXPECT_TRUE(accepts(strings, ok)) << ok;
  for (const char* bad : {R"("abce")", R"("abcde")", R"("wxyz")"}) EXPECT_FALSE(accepts(strings, bad)) << bad;
}

TEST(JsonUnion, UnionsThatCannotBeHeldAreRefusedNamingTheKeyword) {
  const std::pair<const char*, const char*> kRefused[] = {
      // Objects with no discriminator.
      {R"({"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                    {"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]})", "schema.anyOf: "},
      // A discriminator that is not required everywhere, or whose values are shared or numbers.
      {R"({"anyOf":[{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]},
                    {"type":"object","properties":{"k":{"const":"b"}}}]})", "schema.anyOf: "},
      {R"({"anyOf":[{"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"]},
                    {"type":"object","properties":{"k":{"const":"b"},"x":{}},"required":["k","x"]}]})", "schema.anyOf: "},
      {R"({"oneOf":[{"type":"object","properties":{"k":{"const":1}},"required":["k"]},
                    {"type":"object","properties":{"k":{"const":2}},"required":["k"]}]})", "schema.oneOf: "},
      // Wide disjoint integer ranges, and an integer range beside fractions.
      {R"({"anyOf":[{"type":"integer","maximum":0},{"type":"integer","minimum":1000}]})", "schema.anyOf: "},
      {R"({"oneOf":[{"type":"integer","minimum":0,"maximum":100},{"type":"integer","minimum":200,"maximum":300}]})", "schema.oneOf: "},
      {R"({"anyOf":[{"type":"number","maximum":0},{"type":"number","minimum":1}]})", "schema.anyOf: "},
      {R"({"anyOf":[{"type":"integer","multipleOf":2},{"type":"integer","multipleOf":3}]})", "schema.anyOf: "},
      // Arrays with different items.
      {R"({"anyOf":[{"type":"array","items":{"type":"string"}},{"type":"array","items":{"type":"integer"}}]})", "schema.anyOf: "},
      // Strings whose lengths are too large to build into the union's automaton.
      {R"({"anyOf":[{"type":"string","minLength":1000},{"const":"a"}]})", "schema.anyOf: "},
      // Nested in a property.
      {R"({"type":"object","properties":{"p":{"anyOf":[{"type":"object","properties":{"a":{}},"required":["a"]},
                                                       {"type":"object","properties":{"b":{}},"required":["b"]}]}}})",
       "schema.properties.p.anyOf: "},
  };
  for (const auto& [text, prefix] : kRefused) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(g.status().message().rfind(prefix, 0), 0u) << text << " -> " << g.status().message();
    EXPECT_NE(g.status().message().find("exactly"), std::string::npos) << g.status().message();
  }
  // In a tool call's arguments the same unions are still merged loosely (point 7's fallback
  // would drop the whole call's grammar otherwise).
  auto call = JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{"p":{"anyOf":[
      {"type":"integer","maximum":0},{"type":"integer","minimum":1000}]}}})"), "schema", JsonSyntax::kGemmaCall);
  EXPECT_TRUE(call.ok()) << call.status().to_string();
}

TEST(JsonUnion, LargeOneOfsOfConstsAreRefusedForTheirTrueReason) {
  for (int n : {100, 128, 150, 400}) {
    json s = {{"oneOf", json::array()}};
    for (int i = 0; i < n; ++i) s["oneOf"].push_back({{"const", "v" + std::to_string(i)}});
    auto g = JsonGrammar::from_schema(s);
    if (n <= 128) {
      ASSERT_TRUE(g.ok()) << n << ": " << g.status().to_string();
      EXPECT_TRUE(accepts(*g, R"("v7")"));
      EXPECT_FALSE(accepts(*g, R"("v")"));
      continue;
    }
    ASSERT_FALSE(g.ok()) << n;
    EXPECT_EQ(g.status().message(), "schema.oneOf: " + std::to_string(n) + " alternatives; at most 128 are supported");
  }
  // A value listed twice is named as the pair that shares it (by value: 1 and 1.0).
  auto shared = JsonGrammar::from_schema(json::parse(R"({"oneOf":[{"const":"a"},{"enum":[1,"b"]},{"const":1.0}]})"));
  ASSERT_FALSE(shared.ok());
  EXPECT_EQ(shared.status().message().rfind("schema.oneOf: alternatives 1 and 2 are not provably exclusive", 0), 0u)
      << shared.status().message();
  // Past the proof's work limit: said so, not that the pair overlaps.
  json deep = {{"oneOf", json::array()}};
  for (int i = 0; i < 120; ++i) {
    json alt = {{"type", "object"}, {"required", json::array()}, {"properties", json::object()}};
    for (int k = 0; k < 60; ++k) {
      alt["required"].push_back("k" + std::to_string(k));
      alt["properties"]["k" + std::to_string(k)] = {{"type", "integer"}, {"minimum", i}, {"maximum", i}};
    }
    deep["oneOf"].push_back(alt);
  }
  auto budget = JsonGrammar::from_schema(deep);
  ASSERT_FALSE(budget.ok());
  EXPECT_NE(budget.status().message().find("could not be proven exclusive within the work limit (200000"),
            std::string::npos)
      << budget.status().message();
}

TEST(JsonUnion, CountsMayBeWrittenAsIntegralNumbers) {
  auto g = JsonGrammar::from_schema(json::parse(
      R"({"type":"array","items":{"type":"string","minLength":1.0,"maxLength":2.0},"minItems":1.0,"maxItems":1.0})"));
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, R"(["ab"])"));
  EXPECT_FALSE(accepts(*g, R"(["ab","c"])"));
  EXPECT_FALSE(accepts(*g, R"(["abc"])"));
  auto props = JsonGrammar::from_schema(json::parse(R"({"type":"object","minProperties":1.0,"maxProperties":2.0})"));
  EXPECT_TRUE(props.ok()) << props.status().to_string();
  for (const char* bad : {R"({"maxItems":1.5})", R"({"maxItems":-1.0})", R"({"minLength":"1"})"}) {
    auto r = JsonGrammar::from_schema(json::parse(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("must be a non-negative integer"), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace gs::text
