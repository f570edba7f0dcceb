// Request input handling: safe JSON parsing, typed fields, request validation (bug-case 56
// bodies and friends), API keys and stop strings.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include "common/cpu_time.h"
#include "server/api_request.h"
#include "server/auth.h"
#include "server/json_input.h"
#include "server/stop_matcher.h"

namespace gs::server {
namespace {

using nlohmann::json;

Status chat_status(const std::string& body) {
  Result<json> j = parse_json_object(body);
  if (!j.ok()) return j.status();
  RequestDefaults d;
  d.n_vocab = 1000;
  return parse_chat_request(*j, d).status();
}

TEST(JsonInput, RejectsNonObjectsAndMalformedText) {
  for (const char* body : {"", "   ", "[]", "5", "\"x\"", "null", "{:", "{\"a\":", "{\"a\":1,}", "tru"}) {
    Result<json> j = parse_json_object(body);
    ASSERT_FALSE(j.ok()) << body;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument) << body;
  }
  EXPECT_TRUE(parse_json_object("{}").ok());
}

// A body is exactly one JSON value: a NUL byte and text after it were dropped (nlohmann
// reads NUL as the end of input), so '{"prompt":"x"}\0garbage' was a valid request.
TEST(JsonInput, RejectsAnythingAfterTheValueNulIncluded) {
  using namespace std::string_literals;
  for (const std::string& body : {"{\"prompt\":\"x\"}\0garbage"s, "{\"prompt\":\"x\"}\0"s, "{}\0{}"s, "\0{}"s,
                                  "{\"a\":\"b\0c\"}"s, "{} x"s, "{}{}"s, "{} \n {}"s}) {
    Result<json> j = parse_json_object(body);
    ASSERT_FALSE(j.ok()) << json(body).dump();
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument) << json(body).dump();
    EXPECT_NE(j.status().message().find("not valid JSON"), std::string::npos) << j.status().message();
  }
  EXPECT_TRUE(parse_json_object("{} \r\n\t ").ok());
  EXPECT_TRUE(parse_json_object(R"({"a":"b\u0000c"})").ok());  // an escaped NUL is text
}

// A number beyond a double's range (1e400, a 400-digit integer) was "not valid JSON:
// [json.exception.out_of_range.406] number overflow parsing '1e400'", with no word of where.
// The 400 now says what (number out of range) and where: the field it is the value of, first
// in a request body (the error's param), and its byte offset.
TEST(JsonInput, ANumberOutOfRangeIsNamedWithItsFieldAndOffset) {
  const std::string digits(400, '7');
  struct Case {
    std::string body;
    std::string field;  // "" when none
    size_t offset;
  };
  const std::vector<Case> cases = {
      {R"({"max_tokens": 1e400})", "max_tokens", 15},
      {R"({"max_tokens":-1e400})", "max_tokens", 14},
      {R"({"seed":)" + digits + "}", "seed", 8},
      {R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"5":1E+999}})", R"(logit_bias["5"])", 62},
      {R"({"stop":["a",{"b":[1,2,3e999]}]})", "stop[1].b[2]", 23},
      {R"({"a":{"b":[[],[0.5,1e-5,9e9999]]}})", "a.b[1][2]", 24},
  };
  for (const Case& c : cases) {
    Result<json> j = parse_json_object(c.body);
    ASSERT_FALSE(j.ok()) << c.body;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
    const std::string& m = j.status().message();
    EXPECT_EQ(m.rfind(c.field + ": number out of range", 0), 0u) << m;
    EXPECT_NE(m.find(fmt::format("byte offset {} of the request body", c.offset)), std::string::npos) << m;
    EXPECT_EQ(c.body.substr(c.offset, 2), m.substr(m.find("range: ") + 7, 2)) << m;
    EXPECT_LT(m.size(), 300u) << m;  // the 400 digits are not all repeated
  }
  // Inside a JSON text held in a field (guided_json), that field is named first.
  Result<json> nested = parse_json_object(R"({"type":"integer","maximum":1e400})", kMaxJsonDepth, "guided_json");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.status().message().rfind("guided_json is not valid JSON: number out of range: 1e400", 0), 0u)
      << nested.status().message();
  EXPECT_NE(nested.status().message().find("byte offset 28 (maximum)"), std::string::npos) << nested.status().message();
  // Small and huge numbers that a double holds still parse (a denormal underflows to 0).
  for (const char* body : {R"({"a":1e308})", R"({"a":1e-400})", R"({"a":18446744073709551616})"}) {
    EXPECT_TRUE(parse_json_object(body).ok()) << body;
  }
}

TEST(JsonInput, RejectsDeepNestingWithoutRecursing) {
  std::string deep(200000, '[');
  std::string body = "{\"a\":" + deep;
  Result<json> j = parse_json_object(body);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("nested"), std::string::npos);
  std::string ok = "{\"a\":" + std::string(60, '[') + std::string(60, ']') + "}";
  EXPECT_TRUE(parse_json_object(ok).ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(parse_json_object("{\"a\":\"" + std::string(500, '[') + "\"}").ok());
}

// nlohmann keeps every object, array and string on the heap: an 8 MB body of 2.7 million
// "{}" took 290 MB to parse (and glibc kept most of it), 16 such requests at once 4.3 GB, so
// the HTTP threads could exhaust memory. Such bodies are refused before the parse; numbers,
// which are held inline (a prompt of token ids), are not counted.
TEST(JsonInput, RejectsBodiesOfTooManyHeapValues) {
  for (const char* item : {"{}", "[]", "\"\""}) {
    std::string body = "{\"stop\":[";
    for (size_t i = 0; i < kMaxJsonHeapValues + 1; ++i) body += std::string(i ? "," : "") + item;
    body += "]}";
    Result<json> j = parse_json_object(body);
    ASSERT_FALSE(j.ok()) << item;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(j.status().message().find("objects, arrays and strings"), std::string::npos) << j.status().message();
  }
  // Keys count as strings; brackets and quotes inside strings do not count.
  std::string keys = "{";
  for (size_t i = 0; i < kMaxJsonHeapValues; ++i) keys += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  keys += "}";
  EXPECT_FALSE(parse_json_object(keys).ok());
  EXPECT_TRUE(parse_json_object("{\"a\":\"" + std::string(kMaxJsonHeapValues * 2, '{') + "\\\"[\"}").ok());
  // A long prompt of token ids and a long conversation are fine.
  std::string tokens = "{\"prompt\":[";
  for (size_t i = 0; i < 4 * kMaxJsonHeapValues; ++i) tokens += (i ? ",7" : "7");
  tokens += "]}";
  EXPECT_TRUE(parse_json_object(tokens).ok());
  std::string chat = "{\"messages\":[";
  for (int i = 0; i < 20000; ++i) chat += std::string(i ? "," : "") + R"({"role":"user","content":"hi"})";
  chat += "]}";
  EXPECT_TRUE(parse_json_object(chat).ok());
}

TEST(JsonInput, RejectsInvalidUtf8) {
  Result<json> j = parse_json_object("{\"a\":\"\xff\xfe\"}");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
}

// A float literal that an integer field could take but that a double does not hold exactly
// was rounded without a word ("seed": 9007199254740993.0 was the seed 9007199254740992): it is
// refused naming its field, while whole floats a double holds stay accepted.
TEST(JsonInput, WholeFloatsADoubleCannotHoldAreRefusedNamingTheField) {
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"seed": 9007199254740993.0})", "seed"},
           {R"({"seed": -9007199254740993.0})", "seed"},
           {R"({"max_tokens": 9007199254740993.5})", "max_tokens"},
           {R"({"max_tokens": 1.0000000000000001e17})", "max_tokens"},
           {R"({"n": 1.8446744073709550e19})", "n"},
           {R"({"e": -9.223372036854775809e18})", "e"}}) {
    auto r = parse_json_object(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(field + ": the number ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find("is not held exactly (a double rounds it to"), std::string::npos)
        << r.status().message();
  }
  // Only a request body's top-level members: the integer fields that reach 2^53 are there
  // (seed), and nested numbers are data (a replayed call's arguments, a schema, a history's
  // tool_use input), as is a JSON text nested in the body as a string.
  for (const char* body : {R"({"a": {"b": [1, 12345678901234567890.0]}})",
                           R"({"messages": [{"tool_use": {"t": 1715000000123456789.0}}]})"}) {
    auto r = parse_json_object(body);
    EXPECT_TRUE(r.ok()) << body << ": " << r.status().to_string();
  }
  for (const char* what : {"response_format.json_schema", "messages[1].tool_calls[0].function.arguments"}) {
    auto r = parse_json_object(R"({"t": 1715000000123456789.0})", kMaxJsonDepth, what);
    EXPECT_TRUE(r.ok()) << what << ": " << r.status().to_string();
  }
  // What a double holds exactly, integer literals (int64 and uint64 hold them) and numbers
  // outside an integer field's reach are read as before.
  for (const char* body : {R"({"seed": 9007199254740992.0})", R"({"max_tokens": 1e16})", R"({"seed": 9.2e18})",
                           R"({"seed": 9007199254740993})", R"({"seed": 18446744073709551615})",
                           R"({"x": 1e300})", R"({"x": 0.1})", R"({"x": 18446744073709551616.5})",
                           R"({"seed": -9.223372036854775808e18})", R"({"seed": -9223372036854775809})"}) {
    auto r = parse_json_object(body);
    EXPECT_TRUE(r.ok()) << body << ": " << r.status().to_string();
  }
  auto exact = parse_json_object(R"({"seed": 9007199254740993, "f": 1.8e19})");
  ASSERT_TRUE(exact.ok());
  std::optional<int64_t> v;
  ASSERT_TRUE(read_int(*exact, "", "seed", 0, INT64_MAX, &v).ok());
  EXPECT_EQ(*v, 9007199254740993);
}

TEST(JsonInput, IntegerFieldRangesAndTypes) {
  json o = json::parse(R"({"a": 5, "b": "ten", "c": 1e30, "d": -3, "e": 2.5, "f": 7.0, "g": 18446744073709551615})");
  std::optional<int64_t> v;
  EXPECT_TRUE(read_int(o, "", "a", 1, 10, &v).ok());
  EXPECT_EQ(*v, 5);
  EXPECT_FALSE(read_int(o, "", "b", 1, 10, &v).ok());
  EXPECT_FALSE(read_int(o, "", "c", 1, 10, &v).ok());
  EXPECT_FALSE(read_int(o, "", "d", 1, 10, &v).ok());
  EXPECT_FALSE(read_int(o, "", "e", 1, 10, &v).ok());
  EXPECT_TRUE(read_int(o, "", "f", 1, 10, &v).ok());
  EXPECT_EQ(*v, 7);
  EXPECT_FALSE(read_int(o, "", "g", 1, 10, &v).ok());
  EXPECT_TRUE(read_int(o, "", "missing", 1, 10, &v).ok());
  EXPECT_FALSE(v.has_value());
  Status s = read_int(o, "x", "b", 1, 10, &v);
  EXPECT_NE(s.message().find("x.b"), std::string::npos);
  // A float at the edge of int64: 2^63 is above INT64_MAX although (double)INT64_MAX equals
  // it, so it is out of range, not converted (undefined behaviour; on x86 it became INT64_MIN).
  json edge = json::parse(R"({"big": 9223372036854775808.0, "low": -9223372036854775808.0, "ok": 9.2e18})");
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(read_int(edge, "", "big", lo, hi, &v).ok());
  ASSERT_TRUE(read_int(edge, "", "low", lo, hi, &v).ok());
  EXPECT_EQ(*v, lo);
  ASSERT_TRUE(read_int(edge, "", "ok", lo, hi, &v).ok());
  EXPECT_EQ(*v, 9200000000000000000);
}

// An integer written past 64 bits is a double to nlohmann, and from -9223372036854775809 to
// about -2^63 - 1024 it is -2^63 exactly: the valid int64 -2^63, which read_int took (a seed of
// -9223372036854775809 ran as -2^63). The body parser makes each such value the next double
// below, wherever it is; -2^63 written as a float or as its digits is still -2^63 (decision 0053).
TEST(JsonInput, IntegersPastSixtyFourBitsNeverReadAsInt64Min) {
  const std::string body = R"({"seed": -9223372036854775809, "a": [1, {"b/c~": [-9223372036854775810, 7]}],
    "f": -9223372036854775808.0, "i": -9223372036854775808, "e": -9.223372036854775808e18,
    "s": "-9223372036854775809", "far": -9223372036854776833})";
  Result<json> j = parse_json_object(body);
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  const double below = std::nextafter(-9223372036854775808.0, -std::numeric_limits<double>::infinity());
  EXPECT_EQ((*j)["seed"].get<double>(), below);
  EXPECT_EQ((*j)["a"][1]["b/c~"][0].get<double>(), below);
  EXPECT_EQ((*j)["a"][1]["b/c~"][1], 7);
  EXPECT_EQ((*j)["f"].get<double>(), -9223372036854775808.0);  // a float literal: as written
  EXPECT_EQ((*j)["e"].get<double>(), -9223372036854775808.0);
  EXPECT_TRUE((*j)["i"].is_number_integer());
  EXPECT_EQ((*j)["s"], "-9223372036854775809");
  EXPECT_LE((*j)["far"].get<double>(), below);  // rounds below -2^63 on its own
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  std::optional<int64_t> v;
  EXPECT_FALSE(read_int(*j, "", "seed", lo, hi, &v).ok());
  for (const char* key : {"f", "i", "e"}) {
    ASSERT_TRUE(read_int(*j, "", key, lo, hi, &v).ok()) << key;
    EXPECT_EQ(*v, lo) << key;
  }
}

// Bug-case 56: every one of these is a 400 with a message, never a crash.
TEST(ChatRequest, MalformedBodiesAreInvalidArgument) {
  const char* kBad[] = {
      "{}",
      R"({"messages":"hi"})",
      R"({"messages":[]})",
      R"({"messages":[{"role":"user"}]})",
      R"({"messages":[{"role":"user","content":42}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":"ten"})",
      R"({"messages":[{"role":"user","content":"hi"}],"stop":{"a":1}})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":"x"})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}],"tool_choice":{"type":"function","function":{"name":"nope"}}})",
      R"({"messages":[{"role":"wizard","content":"hi"}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":-5})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":0})",
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":1e30})",
      R"({"messages":[{"role":"user","content":"hi"}],"temperature":-1})",
      R"({"messages":[{"role":"user","content":"hi"}],"temperature":"hot"})",
      R"({"messages":[{"role":"user","content":"hi"}],"n":17})",
      R"({"messages":[{"role":"user","content":"hi"}],"n":0})",
      R"({"messages":[{"role":"user","content":"hi"}],"top_p":7})",
      R"({"messages":[{"role":"user","content":"hi"}],"top_k":-2})",
      R"({"messages":[{"role":"user","content":"hi"}],"top_logprobs":3})",
      R"({"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":99})",
      R"({"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"extreme"})",
      R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"required"})",
      R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"sometimes","tools":[{"type":"function","function":{"name":"a"}}]})",
      R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]})",
      R"({"messages":[{"role":"tool","content":"x"}]})",
      R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"not json"}}]}]})",
      R"({"messages":[null]})",
      R"({"messages":[{"role":5,"content":"x"}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"stream":"yes"})",
      R"({"messages":[{"role":"user","content":"hi"}],"stream_options":5})",
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"bad name!"}}]})",
      R"({"messages":[{"role":"user","content":"hi"}],"seed":"x"})",
      R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"enable_thinking":"yes"}})",
      R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":"x"})",
  };
  for (const char* body : kBad) {
    Status s = chat_status(body);
    EXPECT_FALSE(s.ok()) << body;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << body << " -> " << s.to_string();
    EXPECT_FALSE(s.message().empty()) << body;
  }
  // response_format: JSON mode and schemas are read (decision 0027); a schema the grammar
  // cannot hold is refused by name, not silently ignored.
  EXPECT_TRUE(chat_status(R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}})").ok());
  EXPECT_TRUE(chat_status(
      R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}})")
                  .ok());
  EXPECT_EQ(chat_status(
                R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"array","prefixItems":[{"type":"string"}]}}}})")
                .code(),
            StatusCode::kInvalidArgument);
  // logit_bias: OpenAI's object of token ids, and llama-server's false and [id, bias] pairs;
  // ids in the vocabulary (1000 here), distinct, biases in [-100, 100].
  EXPECT_TRUE(chat_status(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":{}})").ok());
  EXPECT_TRUE(chat_status(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":null})").ok());
  for (const char* ok : {R"({"5":-100,"999":100,"0":0.5})", R"({"7":false})", R"([[5,1.5],[6,false]])", R"([])"}) {
    EXPECT_TRUE(chat_status(std::string(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":)") + ok + "}").ok())
        << ok;
  }
  for (const char* bad : {R"({"1000":1})", R"({"-1":1})", R"({"hello":1})", R"({"5x":1})", R"({"":1})",
                          R"({"5":101})", R"({"5":-100.5})", R"({"5":true})", R"({"5":"1"})", R"({"5":null})",
                          R"([[5]])", R"([[5,1,2]])", R"([["hello",1]])", R"([[1.5,1]])", R"([[5,1],[5,2]])",
                          R"({"5":1,"05":2})", R"([[18446744073709551615,1]])", R"(5)"}) {
    Status s = chat_status(std::string(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":)") + bad + "}");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad << " -> " << s.to_string();
  }
  // Banning every token of the vocabulary (1000 here) leaves nothing to sample: a 400; all but
  // one is a request like any other.
  {
    json bans = json::object();
    for (int id = 0; id < 1000; ++id) bans[std::to_string(id)] = false;
    json body = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})");
    body["logit_bias"] = bans;
    const Status all = chat_status(body.dump());
    EXPECT_EQ(all.code(), StatusCode::kInvalidArgument) << all.to_string();
    EXPECT_NE(all.message().find("bans every token"), std::string::npos) << all.to_string();
    body["logit_bias"]["999"] = -100;
    EXPECT_TRUE(chat_status(body.dump()).ok());
  }
  // Bad tool-call arguments in the history name the field, not "the request body".
  const std::string args_msg = chat_status(
      R"({"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{oops"}}]}]})")
                                   .message();
  EXPECT_NE(args_msg.find("messages[1].tool_calls[0].function.arguments is not valid JSON"), std::string::npos)
      << args_msg;
  EXPECT_EQ(args_msg.find("request body"), std::string::npos) << args_msg;
}

TEST(ChatRequest, ParsesTheOpenAIFields) {
  json body = json::parse(R"({
    "model": "m", "stream": true, "stream_options": {"include_usage": true},
    "max_completion_tokens": 77, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
    "presence_penalty": 0.1, "frequency_penalty": -0.2, "seed": 42, "stop": ["END", ""],
    "logprobs": true, "top_logprobs": 3, "parallel_tool_calls": false,
    "messages": [
      {"role": "system", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]},
      {"role": "assistant", "content": null, "reasoning_content": "hmm",
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}}
  })");
  RequestDefaults d;
  Result<ChatCompletionRequest> r = parse_chat_request(body, d);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->model, "m");
  EXPECT_TRUE(r->gen.stream);
  EXPECT_TRUE(r->gen.include_usage);
  EXPECT_EQ(*r->gen.max_tokens, 77);
  EXPECT_FLOAT_EQ(r->gen.sampling.temperature, 0.5f);
  EXPECT_EQ(r->gen.sampling.top_k, 40);
  EXPECT_TRUE(r->gen.sampling.has_seed);
  EXPECT_EQ(r->gen.sampling.seed, 42u);
  EXPECT_EQ(r->gen.stop, std::vector<std::string>{"END"});
  EXPECT_EQ(r->gen.n_logprobs, 3);
  EXPECT_FALSE(r->parallel_tool_calls);
  ASSERT_EQ(r->messages.size(), 4u);
  ASSERT_EQ(r->messages[1].content_parts.size(), 2u);
  EXPECT_EQ(r->messages[1].content_parts[0].text + r->messages[1].content_parts[1].text, "hello");
  EXPECT_EQ(r->messages[2].reasoning_content, "hmm");
  ASSERT_EQ(r->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments_json, "{\"city\":\"Paris\"}");
  EXPECT_EQ(r->messages[3].tool_call_id, "c1");
  EXPECT_EQ(r->tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r->tool_choice_name, "get_weather");
}

// Other servers' fields for the same things: llama-server's n_predict is max_tokens (-1: the
// server's cap), json_schema / guided_json set the output grammar; the fields that ask for
// nothing (min_tokens 0, ignore_eos false, an empty grammar) are accepted. Before, all of
// them were ignored whatever they asked.
TEST(ChatRequest, OtherServersFields) {
  RequestDefaults d;
  auto chat = [&](const std::string& extra) {
    return parse_chat_request(json::parse(R"({"messages":[{"role":"user","content":"hi"}],)" + extra + "}"), d);
  };
  auto completion = [&](const std::string& extra) {
    return parse_completion_request(json::parse(R"({"prompt":"x",)" + extra + "}"), d);
  };
  Result<ChatCompletionRequest> r = chat(R"("n_predict":7)");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->gen.max_tokens, 7);
  r = chat(R"("n_predict":7,"max_tokens":7)");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->gen.max_tokens, 7);
  r = chat(R"("n_predict":-1)");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_FALSE(r->gen.max_tokens);
  Result<CompletionRequest> c = completion(R"("n_predict":9)");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->gen.max_tokens, 9);
  c = completion(R"("n_predict":-1)");  // the server's cap, not the endpoint's 16
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FALSE(c->gen.max_tokens);
  EXPECT_EQ(completion(R"("n_predict":3,"max_tokens":4)").status().code(), StatusCode::kInvalidArgument);

  for (const char* extra : {R"("min_tokens":0)", R"("ignore_eos":false)", R"("grammar":"")", R"("guided_json":null)",
                            R"("json_schema":null,"response_format":{"type":"text"})"}) {
    r = chat(extra);
    ASSERT_TRUE(r.ok()) << extra << ": " << r.status().to_string();
    EXPECT_FALSE(r->gen.json_grammar) << extra;
  }
  // min_tokens holds the end of generation back (at most max_tokens).
  r = chat(R"("min_tokens":7,"max_tokens":7)");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->gen.sampling.min_tokens, 7);
  EXPECT_EQ(completion(R"("min_tokens":3)")->gen.sampling.min_tokens, 3);
  EXPECT_EQ(completion(R"("min_tokens":9,"max_tokens":8)").status().code(), StatusCode::kInvalidArgument);
  for (const char* extra : {R"("grammar":"root ::= x")",
                            R"("guided_regex":"a")", R"("guided_grammar":"g")", R"("guided_choice":["a","b"])",
                            R"("structural_tag":{})"}) {
    EXPECT_EQ(chat(extra).status().code(), StatusCode::kUnimplemented) << extra;
    EXPECT_EQ(completion(extra).status().code(), StatusCode::kUnimplemented) << extra;
  }

  // ignore_eos goes on past the end of generation (vLLM's meaning), for both endpoints.
  r = chat(R"("ignore_eos":true)");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->gen.ignore_eos);
  c = completion(R"("ignore_eos":true)");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(c->gen.ignore_eos);
  EXPECT_FALSE(chat(R"("ignore_eos":false)")->gen.ignore_eos);

  const std::string schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  for (const std::string& extra : {R"("json_schema":)" + schema, R"("guided_json":)" + schema,
                                   R"("guided_json":)" + json(schema).dump(),
                                   R"("json_schema":)" + schema + R"(,"response_format":{"type":"text"})"}) {
    r = chat(extra);
    ASSERT_TRUE(r.ok()) << extra << ": " << r.status().to_string();
    ASSERT_TRUE(r->gen.json_grammar) << extra;
    text::JsonMatcher ok(r->gen.json_grammar);
    EXPECT_TRUE(ok.feed(R"({"a":12})") && ok.can_end()) << extra;
    text::JsonMatcher bad(r->gen.json_grammar);
    EXPECT_FALSE(bad.feed(R"({"b")")) << extra;
    c = completion(extra);
    ASSERT_TRUE(c.ok()) << extra << ": " << c.status().to_string();
    EXPECT_TRUE(c->gen.json_grammar) << extra;
  }
  for (const char* extra : {R"("json_schema":{},"guided_json":{})",
                                   R"("response_format":{"type":"json_object"},"guided_json":{})",
                                   R"("response_format":{"type":"json_schema","json_schema":{}},"json_schema":{})"}) {
    Status st = chat(extra).status();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << extra;
    EXPECT_NE(st.message().find("cannot be combined"), std::string::npos) << st.message();
  }
}

// The history forms that stay accepted beside the empty turns refused now (ErrorParam cases):
// a final assistant message with text (continued, as llama-server does), calls without
// content, a call without "type", an id reused by a later turn, a tool message's empty parts.
// best_of (vLLM's, on chat too) is n or a 400, on both routes: chat ignored it, so
// {"best_of": 3} gave one completion with a 200 and a string or a bool passed unread.
TEST(ChatRequest, BestOfIsNOrRefusedAsForCompletions) {
  RequestDefaults d;
  for (const char* prefix : {R"({"messages":[{"role":"user","content":"hi"}],)", R"({"prompt":"x",)"}) {
    const bool chat = std::string(prefix).find("messages") != std::string::npos;
    auto status = [&](const std::string& extra) {
      json body = json::parse(prefix + extra + "}");
      return chat ? parse_chat_request(body, d).status() : parse_completion_request(body, d).status();
    };
    for (const char* ok : {R"("best_of":1)", R"("n":2,"best_of":2)", R"("best_of":null)"}) {
      EXPECT_TRUE(status(ok).ok()) << prefix << ok << ": " << status(ok).to_string();
    }
    for (const char* bad : {R"("best_of":3)", R"("n":2,"best_of":3)", R"("best_of":0)", R"("best_of":"3")",
                            R"("best_of":true)"}) {
      const Status st = status(bad);
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << prefix << bad;
      EXPECT_EQ(error_param(st.message()), "best_of") << prefix << bad << ": " << st.message();
    }
  }
}

TEST(ChatRequest, HistoryFormsThatStayAccepted) {
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string call = R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f"}}]})";
  const std::string result = R"({"role":"tool","tool_call_id":"c1","content":"r"})";
  for (const std::string& list :
       {user + R"(,{"role":"assistant","content":"It is"})",
        user + R"(,{"role":"assistant","content":[{"type":"text","text":"It is"}]})",
        R"({"role":"assistant","content":"Hello"},)" + user,
        user + "," + call + "," + result + "," + call + "," + result,
        user + "," + call + R"(,{"role":"tool","tool_call_id":"c1","content":[]})",
        // An empty text, or only reasoning, is an (empty) turn clients replay; not refused.
        user + R"(,{"role":"assistant","content":""},)" + user,
        user + R"(,{"role":"assistant","content":[{"type":"text","text":""}]},)" + user,
        user + R"(,{"role":"assistant","content":null,"reasoning_content":"thought"},)" + user,
        // OpenAI's refusing turn, replayed: content null and the text in refusal, or a
        // refusal part (both were a 400).
        user + R"(,{"role":"assistant","content":null,"refusal":"I can't help with that."},)" + user,
        user + R"(,{"role":"assistant","content":[{"type":"refusal","refusal":"No."}]},)" + user}) {
    Status st = chat_status(R"({"messages":[)" + list + "]}");
    EXPECT_TRUE(st.ok()) << list << ": " << st.to_string();
  }
}

// As OpenAI's API: an assistant message with tool_calls that is not the last message is
// followed by tool messages answering each call. One left unanswered was accepted and
// rendered as the call, a dangling `<|tool_response>` and then the next turn (or the next
// assistant message's text inside the same model turn), as the Messages and Responses routes
// already refused.
TEST(ChatRequest, ACallLeftUnansweredIsRefused) {
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string call = R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f"}}]})";
  const std::string calls2 = R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","function":{"name":"f"}},)"
                             R"({"id":"c2","function":{"name":"g"}}]})";
  const std::string result1 = R"({"role":"tool","tool_call_id":"c1","content":"r"})";
  const std::string result2 = R"({"role":"tool","tool_call_id":"c2","content":"r"})";
  struct Refused {
    std::string list;
    std::string message;     // the start of the error
    std::string unanswered;  // the id it names
  };
  for (const Refused& c : std::vector<Refused>{
           {user + "," + call + "," + user, "messages[1]: an assistant message with tool_calls must be followed", "c1"},
           {user + "," + call + R"(,{"role":"assistant","content":"It is sunny."})", "messages[1]: ", "c1"},
           {user + "," + calls2 + "," + result1 + "," + user, "messages[1]: ", "c2"},
           {user + "," + calls2 + "," + result2 + "," + user, "messages[1]: ", "c1"},
           {user + "," + call + "," + result1 + "," + user + "," + call + "," + user, "messages[4]: ", "c1"},
           {R"({"role":"system","content":"s"},)" + user + "," + call + R"(,{"role":"system","content":"s2"})",
            "messages[2]: ", "c1"},
       }) {
    Status st = chat_status(R"({"messages":[)" + c.list + "]}");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.list;
    EXPECT_EQ(st.message().rfind(c.message, 0), 0u) << c.list << ": " << st.to_string();
    EXPECT_NE(st.message().find("answers " + c.unanswered), std::string::npos) << st.to_string();
  }
  // Answered (in any order, by id, or by name in the legacy form), or the last message (nothing
  // follows it yet).
  const std::string legacy_call = R"({"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}})";
  for (const std::string& list : {user + "," + calls2 + "," + result2 + "," + result1 + "," + user,
                                  user + "," + call + "," + result1 + R"(,{"role":"assistant","content":"Sunny."})",
                                  user + "," + legacy_call + R"(,{"role":"function","name":"f","content":"r"},)" + user,
                                  user + "," + call + R"(,{"role":"tool","name":"f","content":"r"},)" + user,
                                  user + "," + call}) {
    Status st = chat_status(R"({"messages":[)" + list + "]}");
    EXPECT_TRUE(st.ok()) << list << ": " << st.to_string();
  }
}

// vLLM's newer clients send an assistant turn's thought back as "reasoning" (the name its
// responses use now): the same field as reasoning_content. A turn that carries only it is
// accepted as one with only reasoning_content is; both, different, is a 400 naming it.
TEST(ChatRequest, ReasoningIsReasoningContentByVllmsName) {
  const std::string user = R"({"role":"user","content":"hi"})";
  const std::string call = R"("tool_calls":[{"id":"c1","type":"function","function":{"name":"f"}}])";
  const std::string result = R"({"role":"tool","tool_call_id":"c1","content":"r"})";
  auto parse = [](const std::string& list) {
    Result<json> j = parse_json_object(R"({"messages":[)" + list + "]}");
    EXPECT_TRUE(j.ok());
    RequestDefaults d;
    d.n_vocab = 1000;
    return parse_chat_request(*j, d);
  };
  for (const char* fields : {R"("reasoning":"look it up")", R"("reasoning_content":"look it up")",
                                    R"("reasoning":"look it up","reasoning_content":"look it up")",
                                    R"("reasoning":"look it up","reasoning_content":null)",
                                    R"("reasoning":"look it up","reasoning_content":"")",
                                    R"("reasoning":null,"reasoning_content":"look it up")"}) {
    auto r = parse(user + R"(,{"role":"assistant","content":null,)" + call + "," + fields + "}," + result);
    ASSERT_TRUE(r.ok()) << fields << ": " << r.status().to_string();
    EXPECT_EQ(r->messages[1].reasoning_content, "look it up") << fields;
  }
  // Only reasoning, by either name, is a turn clients replay.
  for (const char* key : {"reasoning", "reasoning_content"}) {
    auto r = parse(user + R"(,{"role":"assistant","content":null,")" + key + R"(":"thought"},)" + user);
    ASSERT_TRUE(r.ok()) << key << ": " << r.status().to_string();
    EXPECT_EQ(r->messages[1].reasoning_content, "thought") << key;
  }
  for (const char* fields :
       {R"("reasoning":"a","reasoning_content":"b")", R"("reasoning":5)", R"("reasoning":["a"])"}) {
    auto r = parse(user + R"(,{"role":"assistant","content":"x",)" + fields + "}," + user);
    ASSERT_FALSE(r.ok()) << fields;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(r.status().message().starts_with("messages[1].reasoning")) << r.status().message();
  }
}

TEST(ChatRequest, ThinkingSwitches) {
  RequestDefaults d;
  d.enable_thinking = true;
  auto parse = [&](const char* extra) {
    json body = json::parse(std::string(R"({"messages":[{"role":"user","content":"hi"}])") + extra + "}");
    Result<ChatCompletionRequest> r = parse_chat_request(body, d);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r->enable_thinking : true;
  };
  EXPECT_TRUE(parse(""));
  EXPECT_FALSE(parse(R"(,"reasoning_effort":"none")"));
  EXPECT_TRUE(parse(R"(,"reasoning_effort":"high")"));
  EXPECT_FALSE(parse(R"(,"chat_template_kwargs":{"enable_thinking":false})"));
  EXPECT_FALSE(parse(R"(,"reasoning_budget_tokens":0)"));  // bug-case 25: budget 0 = no thinking
  d.enable_thinking = false;
  EXPECT_TRUE(parse(R"(,"chat_template_kwargs":{"enable_thinking":true})"));
}

TEST(ChatRequest, ThinkingBudgetAliasMustAgree) {
  RequestDefaults d;
  d.enable_thinking = true;
  auto parse = [&](const char* extra) {
    return parse_chat_request(json::parse(std::string(R"({"messages":[{"role":"user","content":"hi"}])") + extra + "}"), d);
  };
  EXPECT_EQ(parse(R"(,"thinking_budget_tokens":7)")->reasoning_budget, 7);
  EXPECT_EQ(parse(R"(,"reasoning_budget_tokens":7,"thinking_budget_tokens":7)")->reasoning_budget, 7);
  const auto r = parse(R"(,"reasoning_budget_tokens":7,"thinking_budget_tokens":100)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("must agree"), std::string::npos) << r.status().message();
}

// llama-server reads a reasoning budget of -1 as unlimited (its --reasoning-budget default); it
// was a 400 here ("must be in [0, ...]"). -1 asks for no cap, over a server default too; other
// negative values stay a 400 naming the field, and -1 against a number on the alias disagrees.
TEST(ChatRequest, ReasoningBudgetMinusOneIsUnlimited) {
  RequestDefaults d;
  d.enable_thinking = true;
  auto parse = [&](const char* extra) {
    return parse_chat_request(json::parse(std::string(R"({"messages":[{"role":"user","content":"hi"}])") + extra + "}"), d);
  };
  for (const char* extra : {R"(,"reasoning_budget_tokens":-1)", R"(,"thinking_budget_tokens":-1)",
                            R"(,"reasoning_budget_tokens":-1,"thinking_budget_tokens":-1)"}) {
    const auto r = parse(extra);
    ASSERT_TRUE(r.ok()) << extra << ": " << r.status().to_string();
    EXPECT_EQ(r->reasoning_budget, -1) << extra;
    EXPECT_TRUE(r->enable_thinking) << extra;
  }
  EXPECT_EQ(parse("")->reasoning_budget, -1);  // absent: the same
  d.reasoning_budget = 64;                     // --reasoning-budget 64: -1 lifts it for this request
  EXPECT_EQ(parse(R"(,"reasoning_budget_tokens":-1)")->reasoning_budget, -1);
  EXPECT_EQ(parse("")->reasoning_budget, 64);
  for (const char* extra : {R"(,"reasoning_budget_tokens":-2)", R"(,"thinking_budget_tokens":-100)",
                            R"(,"reasoning_budget_tokens":-1.5)"}) {
    const auto r = parse(extra);
    ASSERT_FALSE(r.ok()) << extra;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    const std::string field = std::string(extra).substr(2, std::string(extra).find('"', 2) - 2);
    EXPECT_TRUE(r.status().message().starts_with(field)) << r.status().message();
  }
  const auto r = parse(R"(,"reasoning_budget_tokens":-1,"thinking_budget_tokens":8)");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must agree"), std::string::npos) << r.status().message();
}

// `--reasoning-budget 0` is the server's default ("0: no thinking"), and a default yields to a
// request that asks for thinking: reasoning_effort other than none, or enable_thinking true,
// silently got no thinking under it (llama-server lets the request's enable_thinking win
// over its --reasoning-budget 0). Such a request now thinks without a cap; a budget the
// request gives (0 included) is its own, and a request that asks nothing keeps the default.
TEST(ChatRequest, AServerBudgetOfZeroDoesNotVetoThinkingTheRequestAsks) {
  RequestDefaults d;
  d.enable_thinking = false;  // serve --reasoning-budget 0 (with --reasoning on or off)
  d.reasoning_budget = 0;
  auto parse = [&](const char* extra) {
    auto r = parse_chat_request(json::parse(std::string(R"({"messages":[{"role":"user","content":"hi"}])") + extra + "}"),
                                d);
    EXPECT_TRUE(r.ok()) << extra << ": " << r.status().to_string();
    return r.ok() ? std::make_pair(r->enable_thinking, r->reasoning_budget) : std::make_pair(false, -2);
  };
  for (const char* on : {R"(,"reasoning_effort":"high")", R"(,"reasoning_effort":"minimal")",
                         R"(,"chat_template_kwargs":{"enable_thinking":true})",
                         R"(,"reasoning_effort":"none","chat_template_kwargs":{"enable_thinking":true})"}) {
    EXPECT_EQ(parse(on), std::make_pair(true, -1)) << on;
  }
  EXPECT_EQ(parse(R"(,"reasoning_effort":"high","reasoning_budget_tokens":50)"), std::make_pair(true, 50));
  for (const char* off : {"", R"(,"reasoning_effort":"none")", R"(,"chat_template_kwargs":{"enable_thinking":false})",
                          R"(,"reasoning_effort":"high","chat_template_kwargs":{"enable_thinking":false})",
                          R"(,"reasoning_effort":"high","reasoning_budget_tokens":0)"}) {
    EXPECT_FALSE(parse(off).first) << off;
  }
  // A positive server default stays the cap of a request that turns thinking on.
  d.reasoning_budget = 64;
  EXPECT_EQ(parse(R"(,"reasoning_effort":"low")"), std::make_pair(true, 64));
}

TEST(ChatRequest, SpeculationSwitches) {
  RequestDefaults d;
  json body = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_TRUE(parse_chat_request(body, d)->gen.speculative);
  EXPECT_FALSE(parse_chat_request(body, d)->gen.draft_max.has_value());
  body["speculative"] = false;
  body["draft_max"] = 2;
  auto r = parse_chat_request(body, d);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->gen.speculative);
  EXPECT_EQ(*r->gen.draft_max, 2);
  body["draft_max"] = -1;
  EXPECT_FALSE(parse_chat_request(body, d).ok());
  body["draft_max"] = 2;
  body["speculative"] = "no";
  EXPECT_FALSE(parse_chat_request(body, d).ok());
}

// llama-server's cache_prompt: true by default, false computes the whole prompt
// (GenerationRequest::reuse_prefix); any other type is a 400 naming it. Chat and completions.
TEST(ChatRequest, CachePromptSwitch) {
  RequestDefaults d;
  json chat = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  json completion = json::parse(R"({"prompt":"hi"})");
  EXPECT_TRUE(parse_chat_request(chat, d)->gen.cache_prompt);
  EXPECT_TRUE(parse_completion_request(completion, d)->gen.cache_prompt);
  chat["cache_prompt"] = false;
  completion["cache_prompt"] = false;
  EXPECT_FALSE(parse_chat_request(chat, d)->gen.cache_prompt);
  EXPECT_FALSE(parse_completion_request(completion, d)->gen.cache_prompt);
  chat["cache_prompt"] = "no";
  const auto r = parse_chat_request(chat, d);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cache_prompt"), std::string::npos) << r.status().message();
}

TEST(ChatRequest, ToolChoiceDefaults) {
  RequestDefaults d;
  json no_tools = json::parse(R"({"messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(parse_chat_request(no_tools, d)->tool_choice, ToolChoice::kNone);
  json tools = json::parse(
      R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a"}}]})");
  EXPECT_EQ(parse_chat_request(tools, d)->tool_choice, ToolChoice::kAuto);
  tools["tool_choice"] = "required";
  EXPECT_EQ(parse_chat_request(tools, d)->tool_choice, ToolChoice::kRequired);
  tools["tool_choice"] = "none";
  EXPECT_EQ(parse_chat_request(tools, d)->tool_choice, ToolChoice::kNone);
}

TEST(CompletionRequest, PromptForms) {
  RequestDefaults d;
  d.n_vocab = 100;
  auto parse = [&](const std::string& body) { return parse_completion_request(json::parse(body), d); };
  auto text = parse(R"({"prompt":"hello"})");
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->prompt_text, "hello");
  EXPECT_EQ(*text->gen.max_tokens, 16);  // the legacy default
  auto null_max = parse(R"({"prompt":"hello","max_tokens":null})");
  ASSERT_TRUE(null_max.ok());
  EXPECT_EQ(*null_max->gen.max_tokens, 16);  // null reads as missing
  auto mct = parse(R"({"prompt":"hello","max_tokens":null,"max_completion_tokens":9})");
  ASSERT_TRUE(mct.ok());
  EXPECT_EQ(*mct->gen.max_tokens, 9);
  auto both = parse(R"({"prompt":"hello","max_tokens":9,"max_completion_tokens":9})");
  ASSERT_TRUE(both.ok()) << both.status().to_string();  // the same limit under both names
  EXPECT_EQ(*both->gen.max_tokens, 9);
  auto ids = parse(R"({"prompt":[2,5,7],"max_tokens":4,"logprobs":3})");
  ASSERT_TRUE(ids.ok());
  EXPECT_TRUE(ids->prompt_is_tokens);
  EXPECT_EQ(ids->prompt_tokens, (std::vector<int32_t>{2, 5, 7}));
  EXPECT_EQ(ids->gen.n_logprobs, 3);
  EXPECT_TRUE(parse(R"({"prompt":["one"]})").ok());
  EXPECT_FALSE(parse(R"({"prompt":["one","two"]})").ok());
  EXPECT_FALSE(parse(R"({"prompt":[2,500]})").ok());
  EXPECT_FALSE(parse(R"({"prompt":[2,-1]})").ok());
  EXPECT_FALSE(parse(R"({"prompt":""})").ok());
  EXPECT_FALSE(parse(R"({"prompt":[]})").ok());
  EXPECT_FALSE(parse(R"({"prompt":5})").ok());
  EXPECT_FALSE(parse(R"({})").ok());
  EXPECT_FALSE(parse(R"({"prompt":"x","best_of":3})").ok());
}

// A token id above INT64_MAX is read by nlohmann as an unsigned number; the error named it
// as a negative id (`token id -1 is outside the vocabulary` for 18446744073709551615).
TEST(CompletionRequest, OutOfRangeTokenIdIsNamedAsSent) {
  RequestDefaults d;
  d.n_vocab = 100;
  auto parse = [&](const std::string& body) { return parse_completion_request(json::parse(body), d); };
  auto huge = parse(R"({"prompt":[2,18446744073709551615]})");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("token id 18446744073709551615 "), std::string::npos) << huge.status().message();
  auto above_int64 = parse(R"({"prompt":[9223372036854775808]})");
  ASSERT_FALSE(above_int64.ok());
  EXPECT_NE(above_int64.status().message().find("token id 9223372036854775808 "), std::string::npos)
      << above_int64.status().message();
  auto negative = parse(R"({"prompt":[-3]})");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("token id -3 "), std::string::npos) << negative.status().message();
}

TEST(ApiKeys, MatchesOnlyConfiguredKeys) {
  Result<ApiKeys> keys = ApiKeys::from_keys({"sk-one", "sk-two"});
  ASSERT_TRUE(keys.ok());
  EXPECT_TRUE(keys->enabled());
  EXPECT_TRUE(keys->matches("sk-one"));
  EXPECT_TRUE(keys->matches("sk-two"));
  EXPECT_FALSE(keys->matches("sk-on"));
  EXPECT_FALSE(keys->matches("sk-one "));
  EXPECT_FALSE(keys->matches(""));
  EXPECT_FALSE(ApiKeys::from_keys({""}).ok());
  EXPECT_FALSE(ApiKeys::from_keys({"a b"}).ok());
  EXPECT_FALSE(ApiKeys().enabled());
}

TEST(ApiKeys, PresentedKey) {
  EXPECT_EQ(ApiKeys::presented_key("Bearer abc", ""), "abc");
  EXPECT_EQ(ApiKeys::presented_key("bearer   abc ", ""), "abc");
  EXPECT_EQ(ApiKeys::presented_key("", "xyz"), "xyz");
  EXPECT_EQ(ApiKeys::presented_key("Basic abc", "xyz"), "xyz");
  EXPECT_EQ(ApiKeys::presented_key("Bearer", ""), "");
}

TEST(ApiKeys, FromFile) {
  const std::string path = ::testing::TempDir() + "/gemmaserve-keys.txt";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs("# comment\n\n  sk-file-key  \nsk-second\n", f);
    std::fclose(f);
  }
  Result<ApiKeys> keys = ApiKeys::from_file(path);
  ASSERT_TRUE(keys.ok()) << keys.status().to_string();
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_TRUE(keys->matches("sk-file-key"));
  EXPECT_FALSE(ApiKeys::from_file(path + ".missing").ok());
}

// A key file saved with a UTF-8 byte order mark (Windows editors write one) and CRLF line
// ends: the mark is no part of the first key, which was silently never matched before.
TEST(ApiKeys, KeyFileWithAByteOrderMarkAndCrlfReadsEveryKey) {
  const std::string path = ::testing::TempDir() + "/gemmaserve-keys-bom.txt";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("\xEF\xBB\xBFsk-first\r\n# note\r\nsk-second\r\n", f);
    std::fclose(f);
  }
  Result<ApiKeys> keys = ApiKeys::from_file(path);
  ASSERT_TRUE(keys.ok()) << keys.status().to_string();
  EXPECT_EQ(keys->size(), 2u);
  EXPECT_TRUE(keys->matches("sk-first"));
  EXPECT_TRUE(keys->matches("sk-second"));
}

// A key that HTTP clients cannot send as it is written (a byte outside printable ASCII: the
// OpenAI and Anthropic SDKs refuse or re-encode such header values) is refused at start,
// naming the file's line, instead of answering every request with a 401.
TEST(ApiKeys, KeysOutsidePrintableAsciiAreRefusedNamingTheLine) {
  const std::string path = ::testing::TempDir() + "/gemmaserve-keys-utf8.txt";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("sk-one\n# comment\n\nsk-cl\xC3\xA9\n", f);
    std::fclose(f);
  }
  Result<ApiKeys> keys = ApiKeys::from_file(path);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find(path), std::string::npos) << keys.status().to_string();
  EXPECT_NE(keys.status().message().find("line 4"), std::string::npos) << keys.status().to_string();
  EXPECT_FALSE(ApiKeys::from_keys({"sk-cl\xC3\xA9"}).ok());
  EXPECT_FALSE(ApiKeys::from_keys({"\xEF\xBB\xBFsk"}).ok());
  // A mark anywhere but the file's start is a byte of a key, and refused as such.
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("sk-one\n\xEF\xBB\xBFsk-two\n", f);
    std::fclose(f);
  }
  keys = ApiKeys::from_file(path);
  ASSERT_FALSE(keys.ok());
  EXPECT_NE(keys.status().message().find("line 2"), std::string::npos) << keys.status().to_string();
}

TEST(StopMatcher, HoldsBackPartialStopStrings) {
  StopMatcher m({"END", "\n\n"});
  std::string out;
  out += m.feed("hello E");
  EXPECT_EQ(out, "hello ");
  out += m.feed("N");
  EXPECT_EQ(out, "hello ");
  out += m.feed("Dless");
  EXPECT_EQ(out, "hello ");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(*m.matched(), "END");
  StopMatcher n({"END"});
  std::string o2 = n.feed("xEN");
  o2 += n.feed("d");
  o2 += n.finish();
  EXPECT_EQ(o2, "xENd");
  StopMatcher none({});
  EXPECT_EQ(none.feed("abc"), "abc");
}

TEST(StopMatcher, EveryChunkingGivesTheSameText) {
  const std::string text = "one two ENDthree";
  for (size_t chunk = 1; chunk <= text.size(); ++chunk) {
    StopMatcher m({"END", "two E"});
    std::string out;
    for (size_t i = 0; i < text.size(); i += chunk) out += m.feed(text.substr(i, chunk));
    out += m.finish();
    EXPECT_EQ(out, "one ") << chunk;
  }
}

// vLLM's min_tokens (decision 0007): a stop string is matched where it ends after the boundary
// (feed(..., armed)), wherever it began; the text that may begin one is held before it too, so
// it is cut whole. The text before the boundary was released unheld, and the stop string that
// straddled it was never seen. One that ends before the boundary stays in the text.
TEST(StopMatcher, AStopStringThatStraddlesMinTokensIsCutWhole) {
  StopMatcher m({"there. STOP"});
  std::string out = m.feed("Hello the", /*armed=*/false);
  EXPECT_EQ(out, "Hello ");
  out += m.feed("re. STOP and more", /*armed=*/true);
  EXPECT_EQ(out, "Hello ");
  ASSERT_TRUE(m.stopped());
  EXPECT_EQ(*m.matched(), "there. STOP");
  StopMatcher early({"STOP"});
  out = early.feed("a STOP b", false);
  out += early.feed(" c", true);
  out += early.finish();
  EXPECT_EQ(out, "a STOP b c");
  EXPECT_FALSE(early.stopped());
}

// Stop strings built to make the old hold-back quadratic: 16 of them sharing all but their last
// byte, over 200000 bytes of the shared letter fed a byte at a time, so that a whole prefix
// stays held. The old matcher searched the held text and the piece for every stop string on
// every piece (16 x len bytes a piece: about 2 s of CPU at len 32768, 0.04 s at len 64); the
// work now does not grow with their length. The fastest of three runs, in this thread's CPU
// time.
TEST(StopMatcher, PathologicalStopStringsTakeLinearTime) {
  const auto run = [](size_t len) {
    std::vector<std::string> stops;
    for (int i = 0; i < 16; ++i) stops.push_back(std::string(len - 1, 'a') + static_cast<char>('b' + i));
    return test::fastest_cpu_seconds([&] {
      StopMatcher m(stops);
      size_t released = 0;
      for (int i = 0; i < 200000; ++i) released += m.feed("a").size();
      released += m.finish().size();
      EXPECT_EQ(released, 200000u);
    });
  };
  const double t_short = run(64);
  const double t_long = run(32768);
  EXPECT_LT(t_long, std::max(4.0 * t_short, 0.25)) << "stop strings of 64 bytes " << t_short
                                                   << " s, of 32768 bytes " << t_long << " s";
}

// The stop readers the chat routes ("stop": a string or an array) and the Messages adapter
// ("stop_sequences": an array only) share: the same checks, each error naming its field.
TEST(ApiRequest, StopStringsForBothFieldNames) {
  std::vector<std::string> out;
  ASSERT_TRUE(read_stop_strings(json::parse(R"({"stop":"END"})"), "stop", true, &out).ok());
  ASSERT_TRUE(read_stop_strings(json::parse(R"({"stop":["a","","b"]})"), "stop", true, &out).ok());
  ASSERT_TRUE(read_stop_strings(json::parse(R"({"stop":null})"), "stop", true, &out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"END", "a", "b"}));
  const std::pair<const char*, const char*> kBad[] = {
      {R"({"stop":5})", "stop must be a string or an array of strings, got number"},
      {R"({"stop":["a",5]})", "stop[1] must be a string, got number"},
      {R"({"stop_sequences":"END"})", "stop_sequences must be an array of strings, got string"},
      {R"({"stop_sequences":[1]})", "stop_sequences[0] must be a string, got number"},
  };
  for (const auto& [body, message] : kBad) {
    const json b = json::parse(body);
    const char* key = b.contains("stop") ? "stop" : "stop_sequences";
    const Status st = read_stop_strings(b, key, b.contains("stop"), &out);
    EXPECT_EQ(st.message(), message) << body;
  }
  json many = {{"stop_sequences", json::array()}};
  for (size_t i = 0; i <= kMaxStopStrings; ++i) many["stop_sequences"].push_back("s");
  EXPECT_EQ(read_stop_strings(many, "stop_sequences", false, &out).message(),
            "stop_sequences may hold at most " + std::to_string(kMaxStopStrings) + " strings");
  SamplingParams sampling;
  RequestDefaults defaults;
  defaults.n_vocab = 100;
  ASSERT_TRUE(read_sampling(json::parse(R"({"temperature":0.5,"top_p":0.9,"top_k":100})"), defaults, &sampling).ok());
  EXPECT_FLOAT_EQ(sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(sampling.top_p, 0.9f);
  EXPECT_EQ(sampling.top_k, 100);
  EXPECT_FALSE(read_sampling(json::parse(R"({"top_k":101})"), defaults, &sampling).ok());
}

// vLLM documents top_k 0 or -1 as "consider all tokens" (llama.cpp: any value <= 0), and
// vLLM clients send -1; it was a 400 ("top_k must be in [0, N]"). On the OpenAI-shaped routes
// -1 is off, as 0 is, overriding a default from the model file; below -1 is a 400 naming the
// field and both values that turn it off. The Messages route keeps Anthropic's range
// (AnthropicRequest.RefusalsNameTheField).
TEST(ChatRequest, TopKMinusOneIsOffAsInVllm) {
  RequestDefaults d;
  d.n_vocab = 1000;
  d.sampling.top_k = 64;  // general.sampling.top_k of the file
  const std::string chat = R"({"messages":[{"role":"user","content":"hi"}],)";
  for (const char* k : {"-1", "0"}) {
    auto c = parse_chat_request(json::parse(chat + R"("top_k":)" + k + "}"), d);
    ASSERT_TRUE(c.ok()) << k << ": " << c.status().to_string();
    EXPECT_EQ(c->gen.sampling.top_k, 0) << k;
    auto p = parse_completion_request(json::parse(std::string(R"({"prompt":"x","top_k":)") + k + "}"), d);
    ASSERT_TRUE(p.ok()) << k << ": " << p.status().to_string();
    EXPECT_EQ(p->gen.sampling.top_k, 0) << k;
  }
  EXPECT_EQ(parse_chat_request(json::parse(chat + "\"top_k\":null}"), d)->gen.sampling.top_k, 64);
  for (const char* k : {"-2", "-1000", "-1.5", "1001"}) {
    auto c = parse_chat_request(json::parse(chat + R"("top_k":)" + k + "}"), d);
    ASSERT_FALSE(c.ok()) << k;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << k;
    EXPECT_EQ(c.status().message().rfind("top_k ", 0), 0u) << c.status().message();
  }
  const Status minus_two = parse_chat_request(json::parse(chat + R"("top_k":-2})"), d).status();
  EXPECT_NE(minus_two.message().find("-1"), std::string::npos) << minus_two.message();
  EXPECT_NE(minus_two.message().find("got -2"), std::string::npos) << minus_two.message();
}

// An assistant message with thousands of tool calls is checked for repeated ids in linear
// time (a scan per call was quadratic), and a repeated id still names the first call with it.
TEST(ChatRequest, ThousandsOfToolCallIdsAreCheckedInLinearTime) {
  const auto messages_with = [](int n) {
    json calls = json::array();
    json messages = json::array({{{"role", "user"}, {"content", "x"}}});
    for (int i = 0; i < n; ++i) {
      calls.push_back({{"id", "c" + std::to_string(i)}, {"type", "function"},
                       {"function", {{"name", "f"}, {"arguments", "{}"}}}});
    }
    messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}});
    for (int i = 0; i < n; ++i) {
      messages.push_back({{"role", "tool"}, {"tool_call_id", "c" + std::to_string(i)}, {"content", "r"}});
    }
    return messages;
  };
  RequestDefaults d;
  // The fastest of three parses: a run the scheduler preempts on a loaded machine does not decide.
  const auto seconds = [&](const json& messages) {
    double best = 1e9;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_TRUE(parse_chat_request(json{{"messages", messages}}, d).ok());
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  };
  constexpr int kSmall = 1500, kCalls = 12000;
  const json small = messages_with(kSmall);
  json messages = messages_with(kCalls);
  seconds(small);  // warm up the allocator
  const double t_small = seconds(small), t_big = seconds(messages);
  // Linear: ~8x; quadratic: ~64x. The floor keeps a tiny t_small from deciding alone.
  EXPECT_LT(t_big, std::max(24.0 * t_small, 0.25)) << kSmall << " calls " << t_small << " s, " << kCalls << " calls "
                                                   << t_big << " s";
  messages[1]["tool_calls"][kCalls - 1]["id"] = "c5";
  Status s = parse_chat_request(json{{"messages", messages}}, d).status();
  EXPECT_NE(s.message().find("messages[1].tool_calls[" + std::to_string(kCalls - 1) +
                             "].id 'c5' is also the id of tool_calls[5]"),
            std::string::npos)
      << s.to_string();
}

}  // namespace
}  // namespace gs::server
