// The structured-output grammar (decision 0027): the matcher against nlohmann::json's own
// parser on random and hand-written texts, and the schema keywords one by one.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <chrono>
#include <random>
#include <string>

#include "text/json_grammar.h"
#include "json_matcher_test_util.h"

namespace gs::text {
namespace {

using json = nlohmann::json;

std::shared_ptr<const JsonGrammar> schema(const char* text) {
  auto g = JsonGrammar::from_schema(json::parse(text));
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().to_string();
  return g.ok() ? *g : JsonGrammar::any_object();
}

// Fed whole and done (a whole value, nothing may follow).
bool accepts(const std::shared_ptr<const JsonGrammar>& g, std::string_view text) {
  JsonMatcher m(g);
  return m.feed(text) && m.can_end();
}

// How many bytes of `text` the matcher takes before refusing one (text.size(): all).
size_t taken(const std::shared_ptr<const JsonGrammar>& g, std::string_view text) {
  JsonMatcher m(g);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!m.feed(static_cast<unsigned char>(text[i]))) return i;
  }
  return text.size();
}

json random_value(std::mt19937& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 3 ? 5 : 7));
  switch (kind) {
    case 0:
      return nullptr;
    case 1:
      return rng() % 2 == 0;
    case 2:
      return static_cast<int64_t>(rng() % 200000) - 100000;
    case 3:
      return std::ldexp(static_cast<double>(static_cast<int32_t>(rng())), -static_cast<int>(rng() % 60));
    case 4: {
      static const char* kParts[] = {"a", "Z", " ", "\"", "\\", "\n", "\t", "/", "\x01", "\xc3\xa9", "\xe2\x82\xac",
                                     "\xf0\x9f\x98\x80", "{}", "[", ":", ","};
      std::string s;
      const int n = static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) s += kParts[rng() % std::size(kParts)];
      return s;
    }
    case 5: {
      json a = json::array();
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) {
        std::string key = "k";
        key += std::to_string(rng() % 10);
        o[key] = random_value(rng, depth + 1);
      }
      return o;
    }
  }
}

TEST(JsonGrammar, AnyValueAcceptsWhatNlohmannWrites) {
  auto any = schema("{}");
  auto object = JsonGrammar::any_object();
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    const json v = random_value(rng, 0);
    for (int indent : {-1, 2}) {
      const std::string text = v.dump(indent);
      EXPECT_TRUE(accepts(any, text)) << text;
      EXPECT_EQ(accepts(object, text), v.is_object()) << text;
    }
  }
}

TEST(JsonGrammar, WhatItAcceptsNlohmannParses) {
  // Random mutations of valid texts: whenever the matcher takes a whole text, it is JSON.
  auto any = schema("true");
  std::mt19937 rng(11);
  const std::string alphabet = "{}[]\",:\\ /0123456789.-+eEtrufalsn\x01\x80\xc3\xa9\xed\xa0u";
  int accepted = 0;
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = random_value(rng, 0).dump(rng() % 2 == 0 ? -1 : 1);
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          text[at] = c;
          break;
        case 1:
          text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          text.erase(at, 1);
          break;
      }
    }
    const bool ours = accepts(any, text);
    if (ours) {
      EXPECT_TRUE(json::accept(text)) << "accepted invalid JSON: " << json(text).dump();
      ++accepted;
    } else {
      ++rejected;
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 1000);
}

TEST(JsonGrammar, NumbersFollowRfc8259) {
  auto num = schema(R"({"type":"number"})");
  for (const char* ok : {"0", "-0", "12", "0.5", "-1.25e10", "1E+2", "3e-07"}) EXPECT_TRUE(accepts(num, ok)) << ok;
  for (const char* bad : {"01", "1.", ".5", "-", "1e", "+1", "1e+", "--1", "0x1"}) EXPECT_FALSE(accepts(num, bad)) << bad;
  auto integer = schema(R"({"type":"integer"})");
  EXPECT_TRUE(accepts(integer, "-42"));
  EXPECT_FALSE(accepts(integer, "1.0"));
  EXPECT_FALSE(accepts(integer, "1e3"));
  EXPECT_FALSE(accepts(integer, "-0"));
  EXPECT_TRUE(accepts(integer, std::string(kJsonMaxIntegerDigits, '9')));
  EXPECT_FALSE(accepts(integer, std::string(kJsonMaxIntegerDigits + 1, '9')));
  // A runaway number is cut off.
  EXPECT_TRUE(accepts(num, std::string(kJsonMaxDigits, '9')));
  EXPECT_FALSE(accepts(num, std::string(kJsonMaxDigits + 1, '9')));
}

// Whether some integer in lo..hi is written beginning with `prefix`.
bool some_integer_begins(std::string_view prefix, int64_t lo, int64_t hi) {
  for (int64_t v = lo; v <= hi; ++v) {
    if (std::to_string(v).rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// Integer bounds are kept as the digits are written: every whole value the matcher takes lies
// within them, every integer within them is taken, and no prefix it takes is a dead end
// (checked exhaustively over every text of up to 4 bytes of '-' and digits).
TEST(JsonGrammar, IntegerBoundsHoldAsTheDigitsAreWritten) {
  struct Case {
    const char* schema;
    int64_t lo, hi;
  };
  const Case kCases[] = {
      {R"({"type":"integer","minimum":1,"maximum":12})", 1, 12},
      {R"({"type":"integer","minimum":10,"maximum":20})", 10, 20},
      {R"({"type":"integer","minimum":-5,"maximum":3})", -5, 3},
      {R"({"type":"integer","minimum":-120,"maximum":-7})", -120, -7},
      {R"({"type":"integer","minimum":0,"maximum":0})", 0, 0},
      {R"({"type":"integer","minimum":95,"maximum":105})", 95, 105},
      {R"({"type":"integer","exclusiveMinimum":-1,"exclusiveMaximum":100})", 0, 99},
      {R"({"type":"integer","minimum":2.5,"maximum":7.9})", 3, 7},
      {R"({"type":"integer","exclusiveMinimum":2.5,"exclusiveMaximum":7.9})", 3, 7},
      {R"({"type":"integer","minimum":3,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":true})", 4, 8},  // draft 4
      {R"({"type":"integer","minimum":3,"exclusiveMinimum":false,"maximum":9})", 3, 9},
      {R"({"type":"integer","minimum":0,"maximum":50,"exclusiveMaximum":40})", 0, 39},  // the tighter
      {R"({"type":["integer","null"],"minimum":-1,"maximum":1})", -1, 1},
  };
  const std::string bytes = "-0123456789";
  for (const Case& c : kCases) {
    auto g = schema(c.schema);
    for (int64_t v = -1000; v <= 1000; ++v) {
      EXPECT_EQ(accepts(g, std::to_string(v)), v >= c.lo && v <= c.hi) << c.schema << " " << v;
    }
    // Every text of 1..4 of those bytes: taken whole exactly when some value in range begins
    // with it (no dead end, nothing out of range begun).
    std::vector<std::string> texts = {""};
    for (int len = 1; len <= 4; ++len) {
      std::vector<std::string> longer;
      for (const std::string& t : texts) {
        for (char b : bytes) longer.push_back(t + b);
      }
      for (const std::string& t : longer) {
        EXPECT_EQ(taken(g, t) == t.size(), some_integer_begins(t, c.lo, c.hi)) << c.schema << " " << t;
      }
      texts = std::move(longer);
    }
    // Within an object, a value ends at the byte after it only when it is in range.
    auto obj = schema((std::string(R"({"type":"object","properties":{"n":)") + c.schema + "}}").c_str());
    EXPECT_TRUE(accepts(obj, "{\"n\":" + std::to_string(c.hi) + "}")) << c.schema;
    EXPECT_TRUE(accepts(obj, "{\"n\":" + std::to_string(c.lo) + "}")) << c.schema;
    EXPECT_FALSE(accepts(obj, "{\"n\":" + std::to_string(c.hi + 1) + "}")) << c.schema;
    EXPECT_FALSE(accepts(obj, "{\"n\":" + std::to_string(c.lo - 1) + "}")) << c.schema;
  }
  // At the ends of the 18 digits an integer may have where its bounds need no more (bounds
  // of more digits widen them: json_number_bounds_test.cpp).
  auto top = schema(R"({"type":"integer","minimum":999999999999999990})");
  EXPECT_TRUE(accepts(top, "999999999999999999"));
  EXPECT_TRUE(accepts(top, "999999999999999990"));
  EXPECT_FALSE(accepts(top, "999999999999999989"));
  EXPECT_EQ(taken(top, "8"), 0u);
  auto bottom = schema(R"({"type":"integer","maximum":-999999999999999990})");
  EXPECT_TRUE(accepts(bottom, "-999999999999999999"));
  EXPECT_FALSE(accepts(bottom, "-99999999999999999"));
  auto wide = schema(R"({"type":"integer","minimum":-1e30,"maximum":18446744073709551615})");
  EXPECT_TRUE(accepts(wide, "-999999999999999999"));
  EXPECT_TRUE(accepts(wide, "999999999999999999"));
  // Where bounds meet other keywords: allOf and $ref siblings intersect, anyOf spans both
  // (loosely, as anyOf merges), an enum keeps its values within them.
  auto all = schema(R"({"allOf":[{"type":"integer","minimum":0},{"maximum":9}]})");
  EXPECT_TRUE(accepts(all, "9"));
  EXPECT_FALSE(accepts(all, "10"));
  EXPECT_FALSE(accepts(all, "-1"));
  auto ref = schema(R"({"$defs":{"small":{"type":"integer","maximum":5}},"$ref":"#/$defs/small","minimum":2})");
  EXPECT_TRUE(accepts(ref, "2"));
  EXPECT_FALSE(accepts(ref, "1"));
  EXPECT_FALSE(accepts(ref, "6"));
  auto any = schema(R"({"anyOf":[{"type":"integer","minimum":1,"maximum":3},{"type":"integer","minimum":7,"maximum":9}]})");
  EXPECT_TRUE(accepts(any, "1"));
  EXPECT_TRUE(accepts(any, "9"));
  EXPECT_FALSE(accepts(any, "0"));
  EXPECT_FALSE(accepts(any, "10"));
  auto e = schema(R"({"type":"integer","enum":[1,5,10,20],"minimum":3,"exclusiveMaximum":20})");
  EXPECT_FALSE(accepts(e, "1"));
  EXPECT_TRUE(accepts(e, "5"));
  EXPECT_TRUE(accepts(e, "10"));
  EXPECT_FALSE(accepts(e, "20"));
  auto all_enum = schema(R"({"allOf":[{"enum":[1,5,10]},{"type":"integer","maximum":5}]})");
  EXPECT_FALSE(accepts(all_enum, "10"));
  EXPECT_TRUE(accepts(all_enum, "5"));
  // The call form writes integers as JSON does.
  auto call = JsonGrammar::from_schema(
      json::parse(R"({"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":12}}})"), "schema",
      JsonSyntax::kGemmaCall);
  ASSERT_TRUE(call.ok());
  EXPECT_TRUE(accepts(*call, "{n:12}"));
  EXPECT_FALSE(accepts(*call, "{n:13}"));
  // The bounds of a "number" are held too (json_number_bounds_test.cpp): 0.5 is refused
  // under minimum 10 (it was taken before), 10.5 taken.
  EXPECT_FALSE(accepts(schema(R"({"type":"number","minimum":10})"), "0.5"));
  EXPECT_TRUE(accepts(schema(R"({"type":"number","minimum":10})"), "10.5"));
}

// Bounds that no number meets: such a schema is refused, or allows its other kinds only (it
// took any number once).
TEST(JsonGrammar, NumberBoundsThatNoNumberMeetsAreNotIgnored) {
  for (const char* text : {R"({"type":"number","minimum":5,"maximum":4})",
                           R"({"type":"number","exclusiveMinimum":2.5,"maximum":2.5})",
                           R"({"allOf":[{"type":"number","minimum":1.5},{"exclusiveMaximum":1.5}]})"}) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().message().rfind("schema", 0), 0u) << g.status().message();
  }
  auto other = schema(R"({"type":["number","null"],"minimum":5,"maximum":4})");
  EXPECT_TRUE(accepts(other, "null"));
  EXPECT_FALSE(accepts(other, "4.5"));
  auto untyped = schema(R"({"minimum":5,"exclusiveMaximum":5})");
  EXPECT_TRUE(accepts(untyped, R"("x")"));
  EXPECT_FALSE(accepts(untyped, "5"));
  auto point = schema(R"({"type":"number","minimum":2.5,"maximum":2.5})");  // one number: fine
  EXPECT_TRUE(accepts(point, "2.5"));
}

TEST(JsonGrammar, StringsAreValidUtf8WithValidEscapes) {
  auto str = schema(R"({"type":"string"})");
  for (const char* ok : {R"("")", R"("a\"b\\c\/d\n")", R"("\u00e9")", R"("\ud83d\ude00")", "\"\xc3\xa9\"",
                         "\"\xf0\x9f\x98\x80\"", "\"\x7f\""}) {
    EXPECT_TRUE(accepts(str, ok)) << ok;
  }
  for (const char* bad : {R"("\x")", R"("\u12g4")", R"("\ud83d")", R"("\ud83dx")", R"("\ude00")", "\"\n\"",
                          "\"\x80\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xc3\""}) {
    EXPECT_FALSE(accepts(str, bad)) << json(std::string(bad)).dump();
  }
  EXPECT_TRUE(json_string_safe("hello w\xc3\xb6rld"));
  EXPECT_FALSE(json_string_safe(""));
  EXPECT_FALSE(json_string_safe("a\"b"));
  EXPECT_FALSE(json_string_safe("a\\b"));
  EXPECT_FALSE(json_string_safe("a\nb"));
  EXPECT_FALSE(json_string_safe("\xc3"));
}

// A JSON string's raw text never spells Gemma markup: the output parser reads "<|channel>" or
// "<turn|>" in the content as markup and cuts it (an enum ["<|channel>"] gave content "\"",
// finish stop). A '<' that begins markup is written \u003c; an enum value or key is spelled so.
TEST(JsonGrammar, StringsDoNotSpellGemmaMarkup) {
  auto str = schema(R"({"type":"string"})");
  for (const char* ok : {R"("a < b || c > d")", R"("<b>x</b>")", R"("<a|b")", R"("x<")", R"("<turn>")",
                         R"("\u003c|channel>")", R"("<\u007c")", R"("\u003cturn|>")", R"("<_|")", R"("|>")"}) {
    EXPECT_TRUE(accepts(str, ok)) << ok;
  }
  for (const char* bad : {R"("<|channel>")", R"("x<|")", R"("<turn|>")", R"("a<tool_call|>")", R"("<|\"|>")",
                          R"("<<|")"}) {
    EXPECT_FALSE(accepts(str, bad)) << bad;
  }
  EXPECT_EQ(taken(str, R"("ab<|)"), 4u);
  EXPECT_EQ(taken(str, R"("<channel|>)"), 10u);
  // Keys and enum values that hold markup are spelled with the escape, and only so.
  auto e = schema(R"({"type":"object","properties":{"<|k":{"enum":["<|channel>","<turn|>x","a<b"]}},"required":["<|k"]})");
  EXPECT_TRUE(accepts(e, R"({"\u003c|k":"\u003c|channel>"})"));
  EXPECT_TRUE(accepts(e, R"({"\u003c|k":"\u003cturn|>x"})"));
  EXPECT_TRUE(accepts(e, R"({"\u003c|k":"a<b"})"));
  EXPECT_FALSE(accepts(e, R"({"<|k":"a<b"})"));
  EXPECT_FALSE(accepts(e, R"({"\u003c|k":"<|channel>"})"));
  // Pieces with a '<' are not string-safe: each goes through the matcher.
  EXPECT_FALSE(json_string_safe("a<b"));
  EXPECT_TRUE(json_string_safe("a|>b"));
  // Whatever the matcher takes, parsed, gives the value.
  EXPECT_EQ(json::parse(R"("\u003c|channel>")").get<std::string>(), "<|channel>");
}

TEST(JsonGrammar, StringLengthCountsCharacters) {
  auto s = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(accepts(s, R"("a")"));
  EXPECT_TRUE(accepts(s, R"("ab")"));
  EXPECT_TRUE(accepts(s, "\"\xc3\xa9\\n\xe2\x82\xac\""));  // three characters
  EXPECT_EQ(taken(s, R"("abcd")"), 4u);                  // the 'd' is refused
}

TEST(JsonGrammar, ObjectsWriteDeclaredKeysOnceAndTheRequiredOnes) {
  auto g = schema(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
      "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":2}},"required":["name"]})");
  EXPECT_TRUE(accepts(g, R"({"name":"x","age":3,"tags":["a","b"]})"));
  EXPECT_TRUE(accepts(g, "{\n  \"age\": 3,\n  \"name\": \"x\"\n}"));
  EXPECT_EQ(taken(g, R"({"age":3})"), 8u);          // '}' before the required "name"
  EXPECT_EQ(taken(g, R"({"x":1})"), 2u);            // an undeclared key
  EXPECT_EQ(taken(g, R"({"name":"a","name":"b"})"), 13u);  // a key twice
  EXPECT_EQ(taken(g, R"({"name":"a","age":3.5})"), 19u);
  EXPECT_EQ(taken(g, R"({"name":"a","tags":["a","c"]})"), 25u);
  EXPECT_EQ(taken(g, R"({"name":"a","tags":["a","b",)"), 27u);  // maxItems
  EXPECT_EQ(taken(g, R"({"name":"a","age":3,"tags":[],)"), 29u);  // no key is left
  EXPECT_FALSE(accepts(g, R"([])"));
}

TEST(JsonGrammar, AdditionalPropertiesAndFreeObjects) {
  auto extra = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  EXPECT_TRUE(accepts(extra, R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(accepts(extra, R"({"a":1,"b":2})"));
  EXPECT_FALSE(accepts(extra, R"({"a":1,"a":2})"));
  auto free = schema(R"({"type":"object"})");
  EXPECT_TRUE(accepts(free, R"({"anything":[1,{"b":null}]})"));
  auto closed = schema(R"({"type":"object","properties":{},"additionalProperties":false})");
  EXPECT_TRUE(accepts(closed, "{}"));
  EXPECT_EQ(taken(closed, R"({"a")"), 1u);
}

// A required key that properties do not declare, with additionalProperties absent, is written
// with any value (JSON Schema allows one there): it was a 400 saying "additionalProperties is
// false", which the schema never said (decision 0046). Declared false, it is still refused.
TEST(JsonGrammar, RequiredKeyOutsideThePropertiesTakesAnyValueUnlessClosed) {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"null"}},"required":["a","b"]})");
  EXPECT_TRUE(accepts(g, R"({"a":null,"b":[1,{"c":"x"}]})"));
  EXPECT_TRUE(accepts(g, R"({"b":2,"a":null})"));
  EXPECT_EQ(taken(g, R"({"a":null})"), 9u);       // '}' before the required "b"
  EXPECT_EQ(taken(g, R"({"a":null,"c":1})"), 11u);  // still no other undeclared key
  auto closed = JsonGrammar::from_schema(
      json::parse(R"({"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false})"));
  ASSERT_FALSE(closed.ok());
  EXPECT_NE(closed.status().message().find("additionalProperties is false"), std::string::npos)
      << closed.status().message();
}

TEST(JsonGrammar, EnumsConstsAndUnions) {
  auto e = schema(R"({"enum":["red","green",1,true,null]})");
  for (const char* ok : {R"("red")", R"("green")", "1", "true", "null"}) EXPECT_TRUE(accepts(e, ok)) << ok;
  for (const char* bad : {R"("blue")", R"("re")", "2", "false", "10"}) EXPECT_FALSE(accepts(e, bad)) << bad;
  auto c = schema(R"({"const":"a\"b"})");
  EXPECT_TRUE(accepts(c, R"("a\"b")"));
  auto opt = schema(R"({"anyOf":[{"type":"string"},{"type":"null"}]})");
  EXPECT_TRUE(accepts(opt, R"("x")"));
  EXPECT_TRUE(accepts(opt, "null"));
  EXPECT_FALSE(accepts(opt, "1"));
  auto types = schema(R"({"type":["integer","boolean"]})");
  EXPECT_TRUE(accepts(types, "false"));
  EXPECT_FALSE(accepts(types, "1.5"));
  auto all = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                 {"properties":{"b":{"type":"string"}}}]})");
  EXPECT_TRUE(accepts(all, R"({"b":"x","a":1})"));
  EXPECT_FALSE(accepts(all, R"({"b":"x"})"));
}

// anyOf of an enum's numbers and a bounded integer: the integer's bounds hold (its flag was
// dropped, and any number was taken). The values are listed where they are few, the range
// kept where it holds them; a fraction beside a range too wide to list is refused.
TEST(JsonGrammar, UnionsOfEnumsAndIntegersKeepTheBounds) {
  for (const char* text : {R"({"anyOf":[{"const":7},{"type":"integer","minimum":1,"maximum":3}]})",
                           R"({"anyOf":[{"type":"integer","minimum":1,"maximum":3},{"enum":[7]}]})",
                           R"({"anyOf":[{"enum":[7,2]},{"type":"integer","minimum":1,"maximum":3}]})"}) {
    auto g = schema(text);
    for (int v = -2; v <= 12; ++v) EXPECT_EQ(accepts(g, std::to_string(v)), (v >= 1 && v <= 3) || v == 7) << text << " " << v;
    for (const char* bad : {"1.5", "7.5", "-0", "2.5", R"("x")"}) EXPECT_FALSE(accepts(g, bad)) << text << " " << bad;
  }
  // A string const beside the integer (the break test's form) keeps them too.
  auto str = schema(R"({"anyOf":[{"const":"x"},{"type":"integer","minimum":1,"maximum":3}]})");
  EXPECT_TRUE(accepts(str, R"("x")"));
  EXPECT_TRUE(accepts(str, "3"));
  EXPECT_FALSE(accepts(str, "4"));
  EXPECT_FALSE(accepts(str, "2.5"));
  // Values inside the range: the range; a fraction beside a narrow one: listed with it.
  auto inside = schema(R"({"anyOf":[{"enum":[2,3]},{"type":"integer","minimum":0,"maximum":500}]})");
  EXPECT_TRUE(accepts(inside, "417"));
  EXPECT_FALSE(accepts(inside, "501"));
  EXPECT_FALSE(accepts(inside, "2.5"));
  auto frac = schema(R"({"anyOf":[{"const":2.5},{"type":"integer","minimum":1,"maximum":3}]})");
  for (const char* ok : {"1", "2", "3", "2.5"}) EXPECT_TRUE(accepts(frac, ok)) << ok;
  for (const char* bad : {"0", "4", "1.5", "2.55"}) EXPECT_FALSE(accepts(frac, bad)) << bad;
  // Within an object, where a value ends at the byte after it.
  auto obj = schema(R"({"type":"object","properties":{"n":{"anyOf":[{"const":10},{"type":"integer","minimum":1,"maximum":3}]}}})");
  EXPECT_TRUE(accepts(obj, R"({"n":10})"));
  EXPECT_TRUE(accepts(obj, R"({"n":1})"));
  EXPECT_FALSE(accepts(obj, R"({"n":4})"));
  EXPECT_FALSE(accepts(obj, R"({"n":100})"));
  // Not expressible: refused (a fraction beside a wide range; a union of more values than an
  // enum may list), not read as any number or any string.
  json numbers = json::parse(R"({"anyOf":[{"enum":[]},{"enum":[]}]})");
  json strings = numbers;
  for (int i = 0; i < 100; ++i) {
    for (int k = 0; k < 2; ++k) {
      numbers["anyOf"][k]["enum"].push_back(1000 * k + i);
      strings["anyOf"][k]["enum"].push_back(std::to_string(1000 * k + i));
    }
  }
  for (const std::string& text :
       {std::string(R"({"anyOf":[{"const":2.5},{"type":"integer","minimum":0}]})"), numbers.dump(), strings.dump()}) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().message().rfind("schema.anyOf", 0), 0u) << g.status().message();
  }
}

TEST(JsonGrammar, KeywordsBesideAReferenceOrAnEnumApply) {
  // $ref with siblings is allOf (2020-12).
  auto g = schema(R"({"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a","maxLength":2})");
  EXPECT_TRUE(accepts(g, R"("ab")"));
  EXPECT_FALSE(accepts(g, R"("abc")"));
  auto t = schema(R"({"$defs":{"a":{"type":["string","integer"]}},"$ref":"#/$defs/a","type":"integer"})");
  EXPECT_TRUE(accepts(t, "12"));
  EXPECT_FALSE(accepts(t, R"("x")"));
  // type and length filter an enum.
  auto e = schema(R"({"type":"integer","enum":[1.5,"a",2]})");
  EXPECT_TRUE(accepts(e, "2"));
  EXPECT_FALSE(accepts(e, R"("a")"));
  EXPECT_FALSE(accepts(e, "1.5"));
  auto len = schema(R"({"enum":["a","abcd"],"minLength":3})");
  EXPECT_TRUE(accepts(len, R"("abcd")"));
  EXPECT_FALSE(accepts(len, R"("a")"));
  // allOf: a key both declare takes both schemas; a closed side keeps out the other's keys.
  auto both = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]},
                                  {"properties":{"a":{"type":"integer"}}}]})");
  EXPECT_TRUE(accepts(both, R"({"a":3})"));
  EXPECT_FALSE(accepts(both, R"({"a":3.5})"));
  auto closed = schema(R"({"allOf":[{"properties":{"a":{},"b":{}},"additionalProperties":false},
                                    {"properties":{"b":{},"c":{}},"required":["b"]}]})");
  EXPECT_TRUE(accepts(closed, R"({"b":1})"));
  EXPECT_FALSE(accepts(closed, R"({"b":1,"c":2})"));
}

// anyOf of a string enum and a free string is a free string (loose, decision 0027), but with
// the lengths that span both, an enum's being its values' (it took strings of any length).
TEST(JsonGrammar, UnionsOfAStringEnumAndAFreeStringKeepTheLengths) {
  auto g = schema(R"({"anyOf":[{"enum":["abc","de"]},{"type":"string","minLength":2,"maxLength":4}]})");
  for (const char* ok : {R"("abc")", R"("de")", R"("wxyz")", R"("xy")"}) EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char* bad : {R"("")", R"("a")", R"("abcde")"}) EXPECT_FALSE(accepts(g, bad)) << bad;
  auto empty = schema(R"({"anyOf":[{"const":""},{"type":"string","maxLength":0}]})");
  EXPECT_TRUE(accepts(empty, R"("")"));
  EXPECT_FALSE(accepts(empty, R"("]")"));
  auto wide = schema(R"({"anyOf":[{"type":"string","minLength":3},{"const":"é"}]})");
  EXPECT_TRUE(accepts(wide, "\"\xc3\xa9\""));
  EXPECT_TRUE(accepts(wide, R"("abc")"));
  EXPECT_FALSE(accepts(wide, R"("")"));
}

// The keywords beside anyOf / oneOf / allOf hold for every value: each alternative is read
// with them (an alternative they leave empty drops out), allOf's members are intersected
// with them. Before, a schema with a union or allOf was read as the union or allOf alone.
TEST(JsonGrammar, KeywordsBesideAUnionApplyToEachAlternative) {
  auto bounded = schema(R"({"type":"integer","maximum":10,"anyOf":[{"minimum":0},{"minimum":100}]})");
  for (int v = -3; v <= 120; ++v) EXPECT_EQ(accepts(bounded, std::to_string(v)), v >= 0 && v <= 10) << v;
  EXPECT_FALSE(accepts(bounded, "1.5"));
  auto kinds = schema(R"({"maximum":5,"anyOf":[{"type":"integer"},{"type":"string"}]})");
  for (const char* ok : {"5", "-7", R"("a")"}) EXPECT_TRUE(accepts(kinds, ok)) << ok;
  for (const char* bad : {"6", "1.5", "null"}) EXPECT_FALSE(accepts(kinds, bad)) << bad;
  auto one = schema(R"({"type":"integer","minimum":0,"oneOf":[{"maximum":3},{"const":7}]})");
  for (int v = -2; v <= 9; ++v) EXPECT_EQ(accepts(one, std::to_string(v)), (v >= 0 && v <= 3) || v == 7) << v;
  // Object keywords beside a union of kinds bind the objects, not the null.
  auto obj = schema(R"({"properties":{"a":{"type":"integer"}},"required":["a"],"anyOf":[{"type":"object"},{"type":"null"}]})");
  for (const char* ok : {"null", R"({"a":1})"}) EXPECT_TRUE(accepts(obj, ok)) << ok;
  for (const char* bad : {"{}", R"({"a":"x"})", R"({"a":1,"b":2})"}) EXPECT_FALSE(accepts(obj, bad)) << bad;
  // An alternative that the keywords beside it leave without values drops out.
  auto drop = schema(R"({"properties":{"a":{"type":"string"}},"anyOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},{"type":"null"}]})");
  EXPECT_TRUE(accepts(drop, "null"));
  EXPECT_FALSE(accepts(drop, R"({"a":1})"));
  EXPECT_FALSE(accepts(drop, R"({"a":"x"})"));
  // An enum beside a union: the values some alternative allows.
  auto e = schema(R"({"enum":[1,2,"x",null],"anyOf":[{"type":"integer"},{"type":"string","maxLength":0}]})");
  for (const char* ok : {"1", "2"}) EXPECT_TRUE(accepts(e, ok)) << ok;
  for (const char* bad : {R"("x")", "null", "3"}) EXPECT_FALSE(accepts(e, bad)) << bad;
  // anyOf and oneOf together: both hold.
  auto both = schema(R"({"type":"integer","anyOf":[{"minimum":1}],"oneOf":[{"maximum":3}]})");
  for (int v = -2; v <= 6; ++v) EXPECT_EQ(accepts(both, std::to_string(v)), v >= 1 && v <= 3) << v;
  // allOf with keywords beside it.
  auto all = schema(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false,
                         "allOf":[{"required":["a"]}]})");
  EXPECT_TRUE(accepts(all, R"({"a":1})"));
  for (const char* bad : {"{}", R"({"a":"x"})", R"({"a":1,"b":2})"}) EXPECT_FALSE(accepts(all, bad)) << bad;
  // allOf intersects the schemas of additional properties and of items as it does declared
  // keys' (the second additionalProperties was dropped; items that allow nothing in common
  // leave the empty array).
  auto extra = schema(R"({"allOf":[{"type":"object","additionalProperties":{"type":"integer"}},
                                   {"additionalProperties":{"minimum":0}}]})");
  EXPECT_TRUE(accepts(extra, R"({"a":1})"));
  EXPECT_FALSE(accepts(extra, R"({"a":-1})"));
  EXPECT_FALSE(accepts(extra, R"({"a":"x"})"));
  auto items = schema(R"({"allOf":[{"type":"array","items":{"type":"string"}},{"items":{"type":"integer"}}]})");
  EXPECT_TRUE(accepts(items, "[]"));
  EXPECT_EQ(taken(items, R"(["a"])"), 1u);
  // Annotations beside a union change nothing: a union that refers back into itself still works.
  auto rec = schema(R"({"description":"a list","anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#"},"maxItems":2}]})");
  EXPECT_TRUE(accepts(rec, "[null,[null]]"));
  EXPECT_FALSE(accepts(rec, "[1]"));
  // So do keywords that bind nothing beside a reference back into the schema.
  auto fmt = schema(R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n","format":"x"}},
                                      "additionalProperties":false}},"$ref":"#/$defs/n"})");
  EXPECT_TRUE(accepts(fmt, R"({"next":{"next":{}}})"));
  EXPECT_FALSE(accepts(fmt, R"({"next":1})"));
  // Refused: no alternative is left; a recursion through the union beside other keywords.
  const std::pair<const char*, const char*> kBad[] = {
      {R"({"type":"string","anyOf":[{"type":"integer"},{"type":"null"}]})", "schema.anyOf"},
      {R"({"minimum":5,"oneOf":[{"type":"integer","maximum":4},{"const":3}]})", "schema.oneOf"},
      {R"({"$defs":{"u":{"type":"string","anyOf":[{"maxLength":3},{"$ref":"#/$defs/u"}]}},"$ref":"#/$defs/u"})",
       "schema.$ref.anyOf[1]"},
      // allOf of a key whose schema is still being compiled (it was read as any value).
      {R"({"$defs":{"n":{"allOf":[{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer"}}},
                                  {"properties":{"next":{"type":"object"}}}]}},"$ref":"#/$defs/n"})",
       "schema.$ref.allOf.properties.next"},
  };
  for (const auto& [text, path] : kBad) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().message().rfind(path, 0), 0u) << text << " -> " << g.status().message();
  }
}

// The keywords beside an enum or const keep the values they allow, with or without a type:
// each limits the values of its kind (a bound numbers, a length strings), fractions held
// exactly. Before, without a type they were ignored, and a length dropped every non-string.
TEST(JsonGrammar, KeywordsBesideAnEnumFilterItWithoutAType) {
  auto min = schema(R"({"enum":[1,5,10],"minimum":3})");
  EXPECT_FALSE(accepts(min, "1"));
  EXPECT_TRUE(accepts(min, "5"));
  EXPECT_TRUE(accepts(min, "10"));
  auto max = schema(R"({"enum":[1,5,10,"a",null],"maximum":3})");
  for (const char* ok : {"1", R"("a")", "null"}) EXPECT_TRUE(accepts(max, ok)) << ok;
  for (const char* bad : {"5", "10"}) EXPECT_FALSE(accepts(max, bad)) << bad;
  auto frac = schema(R"({"enum":[0.5,1,1.5,2.5],"exclusiveMinimum":0,"maximum":1.5})");
  for (const char* ok : {"0.5", "1", "1.5"}) EXPECT_TRUE(accepts(frac, ok)) << ok;
  EXPECT_FALSE(accepts(frac, "2.5"));
  auto excl = schema(R"({"enum":[0.5,1,1.5],"exclusiveMinimum":0.5})");
  EXPECT_FALSE(accepts(excl, "0.5"));
  EXPECT_TRUE(accepts(excl, "1"));
  auto draft4 = schema(R"({"enum":[3,4],"minimum":3,"exclusiveMinimum":true})");
  EXPECT_FALSE(accepts(draft4, "3"));
  EXPECT_TRUE(accepts(draft4, "4"));
  auto len = schema(R"({"enum":["ab","abcd",null,7],"maxLength":3})");
  for (const char* ok : {R"("ab")", "null", "7"}) EXPECT_TRUE(accepts(len, ok)) << ok;
  EXPECT_FALSE(accepts(len, R"("abcd")"));
  // const and enum together: the const, if the enum has it.
  auto both = schema(R"({"const":2,"enum":[1,2]})");
  EXPECT_TRUE(accepts(both, "2"));
  EXPECT_FALSE(accepts(both, "1"));
  // Through allOf: the bounds and lengths of one member filter the other's enum, and no
  // string of the enum is begun that the length would leave unfinished.
  auto all = schema(R"({"allOf":[{"enum":[0.5,2]},{"exclusiveMinimum":0,"maximum":1}]})");
  EXPECT_TRUE(accepts(all, "0.5"));
  EXPECT_FALSE(accepts(all, "2"));
  auto all_len = schema(R"({"allOf":[{"enum":["abc","a"]},{"maxLength":2}]})");
  EXPECT_TRUE(accepts(all_len, R"("a")"));
  EXPECT_EQ(taken(all_len, R"("ab")"), 2u);
  // Nothing left, or a malformed bound: refused.
  const std::pair<const char*, const char*> kBad[] = {
      {R"({"const":4,"maximum":3})", "schema"},
      {R"({"enum":["abcd",5],"maxLength":2,"minimum":6})", "schema"},
      {R"({"const":"a","enum":["b"]})", "schema"},
      {R"({"enum":[1,5],"minimum":"x"})", "schema.minimum"},
      {R"({"allOf":[{"enum":[1,2]},{"minimum":3}]})", "schema.allOf"},
  };
  for (const auto& [text, path] : kBad) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().message().rfind(path, 0), 0u) << text << " -> " << g.status().message();
  }
}

// A reference that names a schema holding a reference and other keywords: those keywords
// apply too (allOf, 2020-12), at every level of indirection (they were dropped below the
// first reference).
TEST(JsonGrammar, KeywordsBesideAReferenceApplyThroughOtherReferences) {
  auto g = schema(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b","maximum":5},
      "b":{"type":"integer","minimum":0}}})");
  for (int v = -3; v <= 9; ++v) EXPECT_EQ(accepts(g, std::to_string(v)), v >= 0 && v <= 5) << v;
  EXPECT_FALSE(accepts(g, "1.5"));
  // Two levels down, reached from a property, with keywords at each level.
  auto deep = schema(R"({"type":"object","properties":{"s":{"$ref":"#/$defs/a"}},"required":["s"],
      "$defs":{"a":{"$ref":"#/$defs/b","maxLength":3},"b":{"$ref":"#/$defs/c","minLength":2},
      "c":{"type":["string","null"]}}})");
  EXPECT_TRUE(accepts(deep, R"({"s":"ab"})"));
  EXPECT_TRUE(accepts(deep, R"({"s":"abc"})"));
  EXPECT_TRUE(accepts(deep, R"({"s":null})"));
  EXPECT_FALSE(accepts(deep, R"({"s":"a"})"));
  EXPECT_FALSE(accepts(deep, R"({"s":"abcd"})"));
  // Beside an inner reference, as beside the outer one, an enum is filtered.
  auto e = schema(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b","type":"string"},"b":{"enum":["x",1]}}})");
  EXPECT_TRUE(accepts(e, R"("x")"));
  EXPECT_FALSE(accepts(e, "1"));
  // Annotations beside an inner reference change nothing, and recursion through it still works.
  auto tree = schema(R"({"$ref":"#/$defs/node","$defs":{"node":{"$ref":"#/$defs/inner","description":"a node"},
      "inner":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}},"additionalProperties":false}}})");
  EXPECT_TRUE(accepts(tree, R"({"next":{"next":{}}})"));
  EXPECT_FALSE(accepts(tree, R"({"next":1})"));
  // A union that refers back into itself takes its alternatives in after the rest is compiled,
  // past the keywords beside the reference: refused, not read without them.
  auto rec = JsonGrammar::from_schema(json::parse(
      R"({"$defs":{"u":{"anyOf":[{"type":"string"},{"$ref":"#/$defs/u"}]}},"$ref":"#/$defs/u","maxLength":2})"));
  EXPECT_FALSE(rec.ok()) << (rec.ok() ? "accepted" : "");
  // A cycle through such a reference is refused, as one through references alone.
  for (const char* cycle : {R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b","maximum":5},"b":{"$ref":"#/$defs/a"}}})",
                            R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a","minimum":1}}})"}) {
    auto bad = JsonGrammar::from_schema(json::parse(cycle));
    ASSERT_FALSE(bad.ok()) << cycle;
    EXPECT_EQ(bad.status().message().rfind("schema.$ref", 0), 0u) << bad.status().message();
  }
}

TEST(JsonGrammar, ReferencesMayRecurse) {
  auto tree = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(accepts(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"));
  EXPECT_FALSE(accepts(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
  // Recursion through a union keeps the referenced schema (it was read as "any value").
  auto node = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"enum":[1,2,3]},
      "child":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/node"}]}},"required":["v","child"],
      "additionalProperties":false}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(accepts(node, R"({"v":1,"child":null})"));
  EXPECT_TRUE(accepts(node, R"({"v":2,"child":{"v":3,"child":null}})"));
  EXPECT_FALSE(accepts(node, R"({"v":2,"child":7648})"));
  EXPECT_FALSE(accepts(node, R"({"v":2,"child":{"v":9,"child":null}})"));
  auto nested = schema(R"({"type":"array","items":{"anyOf":[{"type":"boolean"},{"$ref":"#"}]},"maxItems":3})");
  EXPECT_TRUE(accepts(nested, "[[true],false,[]]"));
  EXPECT_FALSE(accepts(nested, "[[9]]"));
  auto self = schema(R"({"type":"object","properties":{"next":{"$ref":"#"}}})");
  EXPECT_TRUE(accepts(self, R"({"next":{"next":{}}})"));
  EXPECT_FALSE(accepts(self, R"({"next":1})"));
}

// Recursion with a way out is fine, and the matcher never lets a value begin that it could
// not finish within kJsonMaxDepth: at the bottom, only the way out remains.
TEST(JsonGrammar, RecursionEndsWithinTheDepth) {
  auto list = schema(R"({"anyOf":[{"type":"null"},{"type":"array","items":{"$ref":"#"},"minItems":1}]})");
  EXPECT_TRUE(accepts(list, "[[null]]"));
  auto opt = schema(R"({"type":"object","properties":{"a":{"$ref":"#"}},"additionalProperties":false})");
  JsonMatcher m(opt);
  for (int i = 0; i < kJsonMaxDepth - 1; ++i) ASSERT_TRUE(m.feed(std::string_view("{\"a\":"))) << i;
  ASSERT_TRUE(m.feed('{'));  // the 64th level
  {
    JsonMatcher k = m;
    EXPECT_FALSE(k.feed('"'));  // its only key's value would be a 65th
  }
  for (int i = 0; i < kJsonMaxDepth; ++i) ASSERT_TRUE(m.feed('}')) << i;
  EXPECT_TRUE(m.done());
  // A key whose value needs two more levels is not taken one level short of the limit; a
  // key whose value needs one still is.
  auto two = schema(R"({"type":"object","properties":{"next":{"$ref":"#"},
      "deep":{"type":"array","items":{"type":"array"},"minItems":1}},"additionalProperties":false})");
  JsonMatcher d(two);
  for (int i = 0; i < kJsonMaxDepth - 3; ++i) ASSERT_TRUE(d.feed(std::string_view("{\"next\":"))) << i;
  ASSERT_TRUE(d.feed(std::string_view("{\"deep\":[[]]}"))) << "levels 62 to 64";
  JsonMatcher e(two);
  for (int i = 0; i < kJsonMaxDepth - 2; ++i) ASSERT_TRUE(e.feed(std::string_view("{\"next\":"))) << i;
  ASSERT_TRUE(e.feed('{'));  // depth 63: room for one more level
  {
    JsonMatcher k = e;
    EXPECT_FALSE(k.feed(std::string_view("\"deep\"")));
  }
  EXPECT_TRUE(e.feed(std::string_view("\"next\":{}")));
}

TEST(JsonGrammar, ArraysHonourMinAndMaxItems) {
  auto g = schema(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2})");
  EXPECT_FALSE(accepts(g, "[]"));
  EXPECT_TRUE(accepts(g, "[1]"));
  EXPECT_TRUE(accepts(g, "[1, 2]"));
  EXPECT_EQ(taken(g, "[1,2,"), 4u);
  auto none = schema(R"({"type":"array","maxItems":0})");
  EXPECT_TRUE(accepts(none, "[]"));
  EXPECT_EQ(taken(none, "[1"), 1u);
}

TEST(JsonGrammar, WhitespaceAndNestingAreBounded) {
  auto any = schema("{}");
  const auto indented = [](int n) {
    std::string t = "{\n";
    t.append(static_cast<size_t>(n), ' ');
    t += '}';
    return t;
  };
  EXPECT_TRUE(accepts(any, indented(kJsonMaxIndent)));
  EXPECT_FALSE(accepts(any, indented(kJsonMaxIndent + 1)));
  // One space, or a newline and indentation; nothing else runs on.
  EXPECT_TRUE(accepts(any, "{ \"a\" : [ 1,\n\t\t2 ] }"));
  EXPECT_FALSE(accepts(any, "{  }"));
  EXPECT_FALSE(accepts(any, "{\n\n}"));
  EXPECT_FALSE(accepts(any, "{\t}"));
  EXPECT_FALSE(accepts(any, "{\r\n}"));
  EXPECT_TRUE(accepts(any, std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']')));
  EXPECT_FALSE(accepts(any, std::string(kJsonMaxDepth + 1, '[') + std::string(kJsonMaxDepth + 1, ']')));
  // Nothing before or after the value, not even whitespace.
  EXPECT_EQ(taken(any, "{} "), 2u);
  EXPECT_EQ(taken(any, " {}"), 0u);
  EXPECT_EQ(taken(any, "\n{}"), 0u);
  JsonMatcher m(any);
  EXPECT_TRUE(m.feed(std::string_view("{}")));
  EXPECT_TRUE(m.done());
}

TEST(JsonGrammar, FreeStringStateIsReported) {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"enum":["x"]}}})");
  JsonMatcher m(g);
  EXPECT_FALSE(m.in_free_string());
  ASSERT_TRUE(m.feed(std::string_view(R"({"a":"hel)")));
  EXPECT_TRUE(m.in_free_string());
  ASSERT_TRUE(m.feed(std::string_view(R"(\)")));
  EXPECT_FALSE(m.in_free_string());  // inside an escape
  ASSERT_TRUE(m.feed(std::string_view(R"(n","b":")")));
  EXPECT_FALSE(m.in_free_string());  // an enum's string
}

TEST(JsonGrammar, TheGemmaToolCallForm) {
  // Arguments of a Gemma 4 tool call: bare keys, <|"|> strings as they are, no whitespace.
  auto g = JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{"city":{"type":"string"},
      "days":{"type":"integer"},"unit":{"enum":["C","F"]},"tags":{"type":"array","items":{"type":"string"}},
      "opts":{"type":"object","properties":{"x":{"type":"boolean"}}}},"required":["city"]})"),
                                    "schema", JsonSyntax::kGemmaCall);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  const auto& call = *g;
  EXPECT_EQ(call->syntax(), JsonSyntax::kGemmaCall);
  EXPECT_TRUE(accepts(call, R"({city:<|"|>Paris<|"|>,days:3,unit:<|"|>C<|"|>,tags:[<|"|>a<|"|>],opts:{x:true}})"));
  // Text as it is: quotes, backslashes, newlines and a '<' that is not the delimiter.
  EXPECT_TRUE(accepts(call, "{city:<|\"|>a \"b\" \\ c\nd <e <|\"x<|\"|>}"));
  EXPECT_FALSE(accepts(call, R"({"city":<|"|>Paris<|"|>})"));   // quoted key
  EXPECT_FALSE(accepts(call, R"({city: <|"|>Paris<|"|>})"));    // whitespace
  EXPECT_FALSE(accepts(call, R"({city:"Paris"})"));             // JSON string
  EXPECT_FALSE(accepts(call, R"({town:<|"|>Paris<|"|>})"));     // undeclared key
  EXPECT_FALSE(accepts(call, R"({days:3})"));                   // required key missing
  EXPECT_FALSE(accepts(call, R"({city:<|"|>P<|"|>,unit:<|"|>K<|"|>})"));
  EXPECT_FALSE(accepts(call, R"({city:<|"|>P<|"|>,days:<|"|>3<|"|>})"));
  // No byte leads where nothing can follow: an enum's string takes the closing delimiter's
  // first byte only where a value is whole.
  EXPECT_EQ(taken(call, R"({city:<|"|>P<|"|>,unit:<|"|><|"|>)"), 28u);  // the second "<" is refused
  // A free bare key is not a free string: a blank or a ':' ends or breaks it.
  auto free_call = JsonGrammar::from_schema(json::parse(R"({"type":"object"})"), "schema", JsonSyntax::kGemmaCall);
  ASSERT_TRUE(free_call.ok());
  JsonMatcher k(*free_call);
  ASSERT_TRUE(k.feed(std::string_view("{ab")));
  EXPECT_EQ(k.free_string_room(), -1);
  EXPECT_TRUE(accepts(*free_call, R"({ab:1,c:<|"|>x y<|"|>})"));
  EXPECT_FALSE(accepts(*free_call, R"({a b:1})"));
  // Keys the bare form cannot spell make the schema unusable for calls.
  EXPECT_FALSE(JsonGrammar::from_schema(json::parse(R"({"properties":{"a b":{}}})"), "schema", JsonSyntax::kGemmaCall).ok());
  // The string-safe pieces of this form: no '<'.
  EXPECT_TRUE(gemma_string_safe("a \"b\"\n"));
  EXPECT_FALSE(gemma_string_safe("a<b"));
}

// An enum value with a '<' in a call's arguments: the '<' might begin the closing delimiter,
// and was taken only where the value could close or the string was free, so "<", "<=" and
// "a<b" could not be written; the constraint found no token, sampling went unconstrained and
// the arguments left the enum ({"op":"structed suspe..."} for an enum of comparison operators).
TEST(JsonGrammar, EnumValuesWithALessThanSignInTheGemmaCallForm) {
  auto g = JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{
      "op":{"enum":["<","<=","==",">"]},"expr":{"enum":["a<b","a<|b","x"]}},"required":["op"]})"),
                                    "schema", JsonSyntax::kGemmaCall);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  for (const char* op : {"<", "<=", "==", ">"}) {
    EXPECT_TRUE(accepts(*g, std::string(R"({op:<|"|>)") + op + R"(<|"|>})")) << op;
  }
  EXPECT_TRUE(accepts(*g, R"({op:<|"|><<|"|>,expr:<|"|>a<b<|"|>})"));
  EXPECT_TRUE(accepts(*g, R"({op:<|"|><<|"|>,expr:<|"|>a<|b<|"|>})"));
  EXPECT_TRUE(accepts(*g, R"({op:<|"|><<|"|>,expr:<|"|>x<|"|>})"));
  // Still only the enum's values: a '<' where none goes on with it, or a value left short.
  EXPECT_FALSE(accepts(*g, R"({op:<|"|><<<|"|>})"));
  EXPECT_FALSE(accepts(*g, R"({op:<|"|><=<|"|>,expr:<|"|>a<<|"|>})"));
  EXPECT_FALSE(accepts(*g, R"({op:<|"|><|<|"|>})"));
  EXPECT_EQ(taken(*g, R"({op:<|"|>=<)"), 10u);  // "=" goes on only with "="
  // A '<' after a partial delimiter's bytes turned to text is checked as the first one is.
  EXPECT_EQ(taken(*g, R"({op:<|"|><<|"|>,expr:<|"|>a<<)"), 28u);
  // A value holding the delimiter itself, or markup that ends a call wherever it appears (the
  // parser ends the call there: {"op":""} and content "\"}"), cannot be written in this form:
  // it is left out of the enum.
  auto quote = JsonGrammar::from_schema(
      json::parse(R"({"properties":{"q":{"enum":["x","<|\"|>","a<|\"|>b","<tool_call|>","a<turn|>","<|tool_response>"]}}})"),
      "schema", JsonSyntax::kGemmaCall);
  ASSERT_TRUE(quote.ok()) << quote.status().to_string();
  EXPECT_TRUE(accepts(*quote, R"({q:<|"|>x<|"|>})"));
  EXPECT_EQ(taken(*quote, R"({q:<|"|><)"), 8u);
  EXPECT_EQ(taken(*quote, R"({q:<|"|>a)"), 8u);
  // And a free string whose length bounds leave room for the '<' alone ("a<" of exactly 2).
  auto two = JsonGrammar::from_schema(json::parse(R"({"properties":{"s":{"type":"string","minLength":2,"maxLength":2}}})"),
                                      "schema", JsonSyntax::kGemmaCall);
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  EXPECT_TRUE(accepts(*two, R"({s:<|"|>a<<|"|>})"));
  EXPECT_TRUE(accepts(*two, R"({s:<|"|><<<|"|>})"));
  EXPECT_FALSE(accepts(*two, R"({s:<|"|>ab<<|"|>})"));
  EXPECT_FALSE(accepts(*two, R"({s:<|"|><<|"|>})"));
}

TEST(JsonGrammar, BadSchemasNameTheKeyword) {
  const std::pair<const char*, const char*> kBad[] = {
      {R"({"type":"objekt"})", "schema.type"},
      {R"({"type":"object","properties":{"a":{"type":1}}})", "schema.properties.a.type"},
      {R"({"properties":{"a":{}},"required":["b"],"additionalProperties":false})", "schema.required"},
      {R"({"enum":[{"a":1}]})", "schema.enum"},
      {R"({"enum":[]})", "schema.enum"},
      {R"({"type":"array","minItems":3,"maxItems":2})", "schema"},
      {R"({"type":"array","prefixItems":[{}]})", "schema.prefixItems"},
      {R"({"$ref":"#/$defs/missing"})", "schema.$ref"},
      {R"({"$ref":"http://example.com/s.json"})", "schema.$ref"},
      {R"({"anyOf":[]})", "schema.anyOf"},
      {R"(false)", "schema"},
      {R"(7)", "schema"},
      {R"({"type":"string","maxLength":-1})", "schema.maxLength"},
      // Integer bounds: malformed, no integer between them, or beyond 10^38 on the tight side.
      {R"({"type":"integer","minimum":"5"})", "schema.minimum"},
      {R"({"type":"integer","exclusiveMaximum":null})", "schema.exclusiveMaximum"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "schema"},
      {R"({"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5})", "schema"},
      {R"({"type":"integer","minimum":1.2,"maximum":1.8})", "schema"},
      {R"({"type":"integer","minimum":1e40})", "schema.minimum"},
      {R"({"allOf":[{"type":"integer","minimum":5},{"maximum":4}]})", "schema.allOf"},
      {R"({"type":"integer","enum":[1,2],"minimum":3})", "schema"},
      // Keywords that decide validity but that the matcher cannot hold are refused.
      {R"({"type":"integer","if":{"type":"integer"},"then":{"const":7}})", "schema.if"},
      {R"({"enum":[true,false],"not":{"const":true}})", "schema.not"},
      {R"({"type":"array","contains":{"type":"null"}})", "schema.contains"},
      {R"({"type":"object","patternProperties":{"^a":{}}})", "schema.patternProperties"},
      {R"({"type":"object","properties":{"a":{"dependentRequired":{}}}})", "schema.properties.a.dependentRequired"},
      // Enums filtered by their type and length: nothing left is an error.
      {R"({"type":"string","enum":[1,2]})", "schema"},
      {R"({"type":"string","const":5})", "schema"},
      // allOf: closed objects whose required keys exclude each other.
      {R"({"allOf":[{"properties":{"a":{}},"required":["a"],"additionalProperties":false},
                    {"properties":{"b":{}},"required":["b"],"additionalProperties":false}]})", "schema.allOf"},
      {R"({"allOf":[{"type":"integer"},{"type":"string"}]})", "schema.allOf"},
      // No value of finite depth: a required part leads back into the schema with no way to
      // stop (before, the matcher ran out of depth and the output went on unconstrained).
      {R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"],"additionalProperties":false})", "schema"},
      {R"({"type":"array","items":{"$ref":"#"},"minItems":1})", "schema"},
      {R"({"type":"array","items":{"anyOf":[{"$ref":"#"}]},"minItems":1})", "schema"},
      {R"({"anyOf":[{"$ref":"#"}]})", "schema"},
      {R"({"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"})", "schema.$ref"},
      {R"({"$defs":{"x":{"type":"array","items":{"$ref":"#/$defs/y"},"minItems":2},
                    "y":{"type":"object","properties":{"z":{"$ref":"#/$defs/x"}},"required":["z"]}},
          "$ref":"#/$defs/x"})", "schema"},
  };
  for (const auto& [text, path] : kBad) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(g.status().message().rfind(path, 0), 0u) << text << " -> " << g.status().message();
  }
  // Deeply nested schemas are refused, not recursed into without bound.
  std::string deep = "{}";
  for (int i = 0; i < 200; ++i) deep = R"({"items":)" + deep + "}";
  EXPECT_FALSE(JsonGrammar::from_schema(json::parse(deep)).ok());
}

// uniqueItems: true decides validity but the matcher keeps no record of the items: refused
// (it was ignored: `[false,false,false]` came out for boolean items with minItems 3), unless
// at most one item may be written. false, and the keyword on a schema of no arrays, ask for
// nothing. In a tool call it is read loosely (the grammar would drop to the first-key fallback).
TEST(JsonGrammar, UniqueItemsIsRefusedUnlessAtMostOneItem) {
  for (const char* text : {R"({"type":"array","items":{"type":"boolean"},"minItems":3,"uniqueItems":true})",
                           R"({"type":"array","uniqueItems":true})",
                           R"({"type":"array","uniqueItems":true,"maxItems":2})",
                           R"({"uniqueItems":true})",
                           R"({"type":["array","null"],"uniqueItems":true})",
                           R"({"$defs":{"a":{"type":"array"}},"$ref":"#/$defs/a","uniqueItems":true})",
                           R"({"anyOf":[{"type":"null"},{"type":"array","uniqueItems":true}]})",
                           R"({"allOf":[{"type":"array","maxItems":1},{"uniqueItems":true}]})"}) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(g.status().message().find("uniqueItems: this keyword is not supported"), std::string::npos)
        << text << " -> " << g.status().message();
  }
  auto nested = JsonGrammar::from_schema(
      json::parse(R"({"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}})"));
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message().rfind("schema.properties.tags.uniqueItems:", 0), 0u) << nested.status().message();
  auto bad_type = JsonGrammar::from_schema(json::parse(R"({"type":"array","uniqueItems":"yes"})"));
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.status().message().rfind("schema.uniqueItems must be a boolean", 0), 0u)
      << bad_type.status().message();
  // Held by itself: at most one item; false; no arrays.
  auto one = schema(R"({"type":"array","items":{"type":"boolean"},"uniqueItems":true,"maxItems":1})");
  EXPECT_TRUE(accepts(one, "[true]"));
  EXPECT_FALSE(accepts(one, "[true,false]"));
  auto none = schema(R"({"type":"array","uniqueItems":true,"maxItems":0})");
  EXPECT_TRUE(accepts(none, "[]"));
  auto off = schema(R"({"type":"array","items":{"type":"boolean"},"minItems":3,"uniqueItems":false})");
  EXPECT_TRUE(accepts(off, "[false,false,false]"));
  auto str = schema(R"({"type":"string","uniqueItems":true})");
  EXPECT_TRUE(accepts(str, R"("a")"));
  // A tool call's arguments: read loosely, as before.
  auto call = JsonGrammar::from_schema(
      json::parse(R"({"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}})"), "parameters",
      JsonSyntax::kGemmaCall);
  EXPECT_TRUE(call.ok()) << call.status().to_string();
}

// oneOf is held as anyOf (at least one alternative), so it is refused unless no value can
// match two alternatives, which schema_overlap.h proves from types, const / enum values,
// number ranges, string lengths and required keys (it was read as anyOf: a value that
// matched two alternatives, invalid under oneOf, could come out).
TEST(JsonGrammar, OneOfIsRefusedUnlessItsAlternativesExcludeEachOther) {
  const char* kOverlapping[] = {
      R"({"oneOf":[{"enum":[7,2]},{"type":"integer","minimum":1,"maximum":3}]})",
      R"({"oneOf":[{"type":"number"},{"type":"integer"}]})",
      R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]})",
      R"({"oneOf":[{"type":"string","minLength":2},{"type":"string","maxLength":2}]})",
      R"({"oneOf":[{"type":"integer","minimum":0},{"type":"integer","maximum":0}]})",
      R"({"oneOf":[{"properties":{"a":{}}},{"type":"string"}]})",  // the first allows strings too
      R"({"oneOf":[{"type":"object","properties":{"a":{"type":"string"}}},
                   {"type":"object","properties":{"b":{"type":"string"}}}]})",
      R"({"type":"object","oneOf":[{"properties":{"kind":{"const":"a"}}},{"properties":{"kind":{"const":"b"}}}]})",
      R"({"oneOf":[{"type":"boolean"},{"const":true}]})",
      R"({"oneOf":[{"type":"null"},{"type":"string"},{"enum":["x",null]}]})",
      R"({"oneOf":[{"type":"array","maxItems":1},{"type":"array","minItems":2},{"type":"array"}]})",
      R"({"$defs":{"s":{"type":"string"}},"oneOf":[{"$ref":"#/$defs/s"},{"enum":["a",1]}]})",
      R"({"oneOf":[{"type":"integer","multipleOf":2},{"type":"integer","multipleOf":3}]})",
  };
  for (const char* text : kOverlapping) {
    auto g = JsonGrammar::from_schema(json::parse(text));
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(g.status().message().rfind("schema.oneOf: alternatives ", 0), 0u) << text << " -> " << g.status().message();
    EXPECT_NE(g.status().message().find("not provably exclusive"), std::string::npos) << g.status().message();
  }
  // The pair at fault is named; nested oneOfs by their path.
  auto named = JsonGrammar::from_schema(
      json::parse(R"({"type":"object","properties":{"v":{"oneOf":[{"type":"null"},{"type":"string"},{"type":"string"}]}}})"));
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().message().rfind("schema.properties.v.oneOf: alternatives 1 and 2 ", 0), 0u)
      << named.status().message();

  // Proven apart: held exactly as anyOf holds them.
  auto types = schema(R"({"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]})");
  for (const char* ok : {R"("a")", "3", "null"}) EXPECT_TRUE(accepts(types, ok)) << ok;
  for (const char* bad : {"true", "1.5", "[]"}) EXPECT_FALSE(accepts(types, bad)) << bad;
  auto values = schema(R"({"oneOf":[{"const":"a"},{"enum":["b","c"]},{"const":1},{"type":"boolean"}]})");
  for (const char* ok : {R"("a")", R"("c")", "1", "false"}) EXPECT_TRUE(accepts(values, ok)) << ok;
  for (const char* bad : {R"("d")", "2", "null"}) EXPECT_FALSE(accepts(values, bad)) << bad;
  auto ranges = schema(R"({"type":"integer","oneOf":[{"maximum":0},{"exclusiveMinimum":0,"maximum":9},{"minimum":10}]})");
  for (int v = -3; v <= 12; ++v) EXPECT_TRUE(accepts(ranges, std::to_string(v))) << v;
  auto beside = schema(R"({"type":"integer","minimum":0,"oneOf":[{"maximum":3},{"const":7}]})");
  for (int v = -2; v <= 9; ++v) EXPECT_EQ(accepts(beside, std::to_string(v)), (v >= 0 && v <= 3) || v == 7) << v;
  auto lengths = schema(R"({"oneOf":[{"type":"string","maxLength":2},{"type":"string","minLength":3},{"type":"null"}]})");
  EXPECT_TRUE(accepts(lengths, R"("abcd")"));
  auto integer_vs_fraction = schema(R"({"oneOf":[{"type":"integer","minimum":0,"maximum":3},{"enum":[1.5,"x"]}]})");
  EXPECT_TRUE(accepts(integer_vs_fraction, "1.5"));
  EXPECT_TRUE(accepts(integer_vs_fraction, "2"));
  // A tagged union: both require "kind", whose values differ; or through $ref and allOf.
  auto tagged = schema(R"({"oneOf":[
      {"type":"object","properties":{"kind":{"const":"circle"},"r":{"type":"number"}},"required":["kind","r"]},
      {"type":"object","properties":{"kind":{"const":"square"},"side":{"type":"number"}},"required":["kind","side"]}]})");
  EXPECT_TRUE(accepts(tagged, R"({"kind":"circle","r":1})"));
  auto by_ref = schema(R"({"$defs":{"c":{"type":"object","properties":{"kind":{"enum":["c"]}},"required":["kind"]},
                                   "s":{"allOf":[{"type":"object","required":["kind"]},{"properties":{"kind":{"const":"s"}}}]}},
                          "oneOf":[{"$ref":"#/$defs/c"},{"$ref":"#/$defs/s"}]})");
  EXPECT_TRUE(accepts(by_ref, R"({"kind":"s"})"));
  // A key one requires that the other, closed, does not declare: proven exclusive, but two
  // object schemas with no discriminator cannot be held exactly (decision 0027 point 2).
  auto closed = JsonGrammar::from_schema(json::parse(R"({"oneOf":[
      {"type":"object","properties":{"a":{}},"additionalProperties":false},
      {"type":"object","properties":{"b":{}},"required":["b"]}]})"));
  ASSERT_FALSE(closed.ok());
  EXPECT_NE(closed.status().message().find("no property tells them apart"), std::string::npos)
      << closed.status().message();
  // The keywords beside oneOf count: kinds only objects, so the discriminator decides.
  auto shared_type = schema(R"({"type":"object","required":["k"],
                               "oneOf":[{"properties":{"k":{"const":"x"}}},{"properties":{"k":{"const":"y"}}}]})");
  EXPECT_TRUE(accepts(shared_type, R"({"k":"y"})"));
  EXPECT_FALSE(accepts(shared_type, R"({"k":"z"})"));
  // A discriminator whose values are numbers is not one the matcher dispatches on.
  EXPECT_FALSE(JsonGrammar::from_schema(json::parse(R"({"type":"object","required":["k"],
      "oneOf":[{"properties":{"k":{"const":1}}},{"properties":{"k":{"const":2}}}]})")).ok());
  // One alternative: nothing to overlap.
  auto single = schema(R"({"oneOf":[{"type":"string"}]})");
  EXPECT_TRUE(accepts(single, R"("x")"));
  // Bounded work: two enums of 50000 values each would take 2.5e9 comparisons; refused at
  // once instead (not proven), as is a schema past the budget however it is built.
  json big = json::parse(R"({"oneOf":[{"enum":[]},{"enum":[]}]})");
  for (int i = 0; i < 50000; ++i) {
    big["oneOf"][0]["enum"].push_back(2 * i);
    big["oneOf"][1]["enum"].push_back(2 * i + 1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto bounded = JsonGrammar::from_schema(big);
  EXPECT_FALSE(bounded.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // A self-referential union stays within the work budget and is proven or refused quickly.
  auto rec = JsonGrammar::from_schema(json::parse(
      R"({"$defs":{"t":{"type":"object","properties":{"k":{"$ref":"#/$defs/t"}},"required":["k"]}},
          "oneOf":[{"$ref":"#/$defs/t"},{"$ref":"#/$defs/t"}]})"));
  EXPECT_FALSE(rec.ok());
  // A tool call's arguments (kGemmaCall): read as anyOf, as before.
  auto call = JsonGrammar::from_schema(json::parse(R"({"type":"object","properties":{"x":{"oneOf":[{"type":"number"},{"type":"integer"}]}}})"),
                                       "parameters", JsonSyntax::kGemmaCall);
  EXPECT_TRUE(call.ok()) << call.status().to_string();
}

// check_schema_refs finds a reference that resolves to nothing wherever a reading of the
// schema reaches (also beside keywords from_schema refuses first), names it by where it is
// written, and refuses nothing else.
TEST(JsonGrammar, DanglingReferencesAreFoundAndNamed) {
  const std::pair<const char*, const char*> kDangling[] = {
      {R"({"$ref":"#/$defs/missing"})", "p.$ref: '#/$defs/missing' names nothing"},
      {R"({"$ref":"https://example.com/s.json"})", "p.$ref: only references into this schema"},
      {R"({"$ref":"#/$defs/a~2"})", "p.$ref: '#/$defs/a~2' is not a JSON pointer"},
      {R"({"$ref":5})", "p.$ref must be a string"},
      {R"({"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}})", "p.properties.a.$ref:"},
      {R"({"type":"array","items":{"anyOf":[{"type":"null"},{"$ref":"#/definitions/x"}]}})",
       "p.items.anyOf[1].$ref:"},
      {R"({"not":{"$ref":"#/nope"},"properties":{}})", "p.not.$ref:"},
      // Reached through a reference: named where it is written.
      {R"({"$defs":{"x":{"properties":{"b":{"$ref":"#/$defs/missing"}}}},"properties":{"a":{"$ref":"#/$defs/x"}}})",
       "p.$defs.x.properties.b.$ref:"},
      {R"({"$defs":{"a/b":{"items":[{"$ref":"#/$defs/missing"}]}},"$ref":"#/$defs/a~1b"})",
       "p.$defs.a/b.items[0].$ref:"},
      {R"({"allOf":[{"$ref":"#/allOf/1"},{"properties":{"c":{"$ref":"#/x"}}}]})", "p.allOf[1].properties.c.$ref:"},
  };
  for (const auto& [text, prefix] : kDangling) {
    const Status st = check_schema_refs(json::parse(text), "p");
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(st.message().rfind(prefix, 0), 0u) << text << " -> " << st.message();
  }
  const char* const kFine[] = {
      R"({})",
      R"({"type":"object","properties":{"next":{"$ref":"#"}}})",  // recursion
      R"({"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"})",  // a cycle: from_schema's
      R"({"$defs":{"unused":{"$ref":"#/$defs/missing"}},"type":"string"})",  // not reached, as from_schema
      R"({"properties":{"$ref":{"type":"string"}}})",                        // a property named $ref
      R"({"enum":[{"$ref":"#/nope"}],"default":{"$ref":"#/nope"}})",         // values, not schemas
      R"({"type":"string","pattern":"^a","format":"uri"})",
      R"({"patternProperties":{"^a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer"}}})",
  };
  for (const char* text : kFine) {
    const Status st = check_schema_refs(json::parse(text), "p");
    EXPECT_TRUE(st.ok()) << text << " -> " << st.to_string();
  }
  std::string deep = "{}";
  for (int i = 0; i < 2000; ++i) deep = R"({"items":)" + deep + "}";
  EXPECT_TRUE(check_schema_refs(json::parse(deep)).ok());  // past the compiler's depth: not walked
}

// A reference is a URI fragment: percent-decoded first (RFC 3986), then read as a JSON
// pointer (RFC 6901: ~1 is '/', ~0 is '~'). Before, "%20" was looked up as it is.
// check_schema_values (breaker round 28): a keyword that leaves its schema no value is found
// and named in the call form too, where from_schema's refusal otherwise meant the forced-call
// fallback; a keyword the grammar cannot hold, and an enum emptied only by values the call form
// cannot write, are not faults of the schema.
TEST(JsonGrammar, KeywordsThatLeaveNoValueAreFoundInTheCallForm) {
  const std::pair<const char*, const char*> kNoValue[] = {
      {R"({"type":"object","properties":{"a":{"enum":[]}}})", "p.properties.a.enum must be a non-empty array"},
      {R"({"type":"object","properties":{"a":{"type":"integer","minimum":3,"maximum":2}}})",
       "p.properties.a: no integer lies within its minimum and maximum"},
      {R"({"type":"object","properties":{"a":{"type":"string","enum":[1,2]}}})", "p.properties.a: no enum or const value"},
      {R"({"type":"object","properties":{"a":{"type":"string","minLength":3,"maxLength":1}}})",
       "p.properties.a: minLength is above maxLength"},
      {R"({"type":"object","properties":{"a":{"type":"array","minItems":2,"maxItems":1}}})",
       "p.properties.a: minItems is above maxItems"},
      {R"({"type":"object","minProperties":3,"maxProperties":1})", "p.minProperties: minProperties 3 is above"},
      {R"({"type":"object","properties":{"a":{"const":"x","enum":["y"]}}})", "p.properties.a.const: the value is not"},
  };
  for (const auto& [schema, message] : kNoValue) {
    for (const JsonSyntax syntax : {JsonSyntax::kGemmaCall, JsonSyntax::kJson}) {
      const Status st = check_schema_values(json::parse(schema), "p", syntax);
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << schema;
      EXPECT_EQ(st.message().rfind(message, 0), 0u) << schema << " -> " << st.message();
    }
  }
  const char* kFine[] = {
      R"({"type":"object","properties":{"a":{"type":"integer","minimum":2,"maximum":3}}})",
      R"({"type":"object","properties":{"a":{"enum":["x"]}},"not":{"required":["a"]}})",  // cannot be held
      R"({"type":"object","properties":{"a b":{"type":"string"}}})",                         // a key the form cannot spell
      R"({"type":"object","properties":{"a":{"enum":["<|\"|>","x<tool_call|>"]}}})",          // the form's limit
      R"({"type":"object","properties":{"a":{"type":"number","multipleOf":1e-30,"minimum":0}}})",
  };
  for (const char* schema : kFine) {
    EXPECT_TRUE(check_schema_values(json::parse(schema), "p", JsonSyntax::kGemmaCall).ok())
        << schema << " -> " << check_schema_values(json::parse(schema), "p", JsonSyntax::kGemmaCall).to_string();
  }
}

TEST(JsonGrammar, ReferencesArePercentDecodedJsonPointers) {
  auto space = schema(R"({"$ref":"#/$defs/a%20b","$defs":{"a b":{"type":"integer"}}})");
  EXPECT_TRUE(accepts(space, "1"));
  EXPECT_FALSE(accepts(space, R"("x")"));
  auto percent = schema(R"({"$ref":"#/$defs/a%25b","$defs":{"a%b":{"type":"string"},"a%25b":{"type":"integer"}}})");
  EXPECT_TRUE(accepts(percent, R"("x")"));
  EXPECT_FALSE(accepts(percent, "1"));
  // Decoded first, then unescaped: %7E1 is ~1, a '/' in the key; %2F is a separator.
  auto tilde = schema(R"({"$ref":"#/%24defs/a%7E1b","$defs":{"a/b":{"type":"boolean"},"a~1b":{"type":"null"}}})");
  EXPECT_TRUE(accepts(tilde, "true"));
  EXPECT_FALSE(accepts(tilde, "null"));
  auto tilde0 = schema(R"({"$ref":"#/$defs/%7E0","$defs":{"~":{"type":"null"}}})");
  EXPECT_TRUE(accepts(tilde0, "null"));
  auto slash = schema(R"({"$ref":"#/$defs/a%2Fb","$defs":{"a":{"b":{"type":"integer"}},"a/b":{"type":"string"}}})");
  EXPECT_TRUE(accepts(slash, "1"));
  EXPECT_FALSE(accepts(slash, R"("x")"));
  // Two spellings of one schema are one schema (recursion through either).
  auto rec = schema(R"({"$ref":"#/$defs/a%20b","$defs":{"a b":{"type":"object","properties":{
      "p":{"$ref":"#/$defs/a b"},"q":{"$ref":"#/$defs/a%20b"}},"additionalProperties":false}}})");
  EXPECT_TRUE(accepts(rec, R"({"p":{"q":{}}})"));
  EXPECT_FALSE(accepts(rec, R"({"p":{"q":1}})"));
  // A '%' without two hex digits is refused; check_schema_refs decodes as from_schema does
  // and names a dangling reference by the decoded path.
  for (const char* bad : {R"({"$ref":"#/$defs/a%2","$defs":{"a%2":{}}})", R"({"$ref":"#/$defs/a%zz","$defs":{"a%zz":{}}})"}) {
    auto g = JsonGrammar::from_schema(json::parse(bad));
    ASSERT_FALSE(g.ok()) << bad;
    EXPECT_EQ(g.status().message().rfind("schema.$ref: ", 0), 0u) << g.status().message();
    EXPECT_FALSE(check_schema_refs(json::parse(bad), "p").ok()) << bad;
  }
  EXPECT_TRUE(check_schema_refs(json::parse(R"({"$ref":"#/$defs/a%20b","$defs":{"a b":{}}})"), "p").ok());
  const Status st = check_schema_refs(
      json::parse(R"({"$ref":"#/$defs/a%20b","$defs":{"a b":{"properties":{"c":{"$ref":"#/nope"}}}}})"), "p");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind("p.$defs.a b.properties.c.$ref:", 0), 0u) << st.message();
}

TEST(JsonGrammar, RandomWalksStayInsideTheSchema) {
  // Pick random allowed bytes until the value is whole: every finished text parses and has
  // the schema's shape.
  auto g = schema(R"({"type":"object","properties":{"id":{"type":"integer"},"kind":{"enum":["a","bc"]},
      "tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2},"ok":{"type":"boolean"},
      "n":{"type":"integer","minimum":-40,"exclusiveMaximum":1235}},
      "required":["id","kind"],"additionalProperties":false})");
  std::mt19937 rng(3);
  int finished = 0;
  for (int walk = 0; walk < 300; ++walk) {
    JsonMatcher m(g);
    std::string text;
    while (!m.can_end() && text.size() < 400) {
      const std::vector<unsigned char> next = test_util::bytes_taken(m);
      ASSERT_FALSE(next.empty()) << "stuck after " << json(text).dump();
      // Prefer structure to string content, so that walks finish.
      unsigned char b = next[rng() % next.size()];
      for (unsigned char s : {'"', '}', ']', ','}) {
        if (rng() % 3 == 0 && std::find(next.begin(), next.end(), s) != next.end()) b = s;
      }
      ASSERT_TRUE(m.feed(b));
      text += static_cast<char>(b);
    }
    if (!m.can_end()) continue;
    ++finished;
    const json v = json::parse(text);
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_TRUE(v.contains("id") && v["id"].is_number_integer()) << text;
    EXPECT_TRUE(v.contains("kind") && (v["kind"] == "a" || v["kind"] == "bc")) << text;
    for (const auto& item : v.items()) {
      EXPECT_TRUE(item.key() == "id" || item.key() == "kind" || item.key() == "tags" || item.key() == "ok" ||
                  item.key() == "n")
          << text;
    }
    if (v.contains("n")) {
      EXPECT_TRUE(v["n"].is_number_integer() && v["n"].get<int64_t>() >= -40 && v["n"].get<int64_t>() <= 1234) << text;
    }
    if (v.contains("tags")) {
      EXPECT_LE(v["tags"].size(), 2u) << text;
      for (const auto& t : v["tags"]) EXPECT_LE(t.get<std::string>().size(), 12u) << text;
    }
    if (v.contains("ok")) {
      EXPECT_TRUE(v["ok"].is_boolean()) << text;
    }
  }
  EXPECT_GT(finished, 100);
}

}  // namespace
}  // namespace gs::text
