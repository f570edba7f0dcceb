// Responses API response objects and stream events (decision 0032).
#include "server/responses_format.h"

#include <utility>

namespace gs::server {

using nlohmann::json;

namespace {

json reasoning_item(const std::string& id, const std::string& text) {
  return json{{"type", "reasoning"},
              {"id", id},
              {"summary", json::array()},
              {"content", json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

json output_text_part(const std::string& text) {
  return json{{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json message_item(const std::string& id, const char* status, const std::string& text) {
  return json{{"type", "message"},
              {"id", id},
              {"status", status},
              {"role", "assistant"},
              {"content", json::array({output_text_part(text)})}};
}

json function_call_item(const std::string& id, const char* status, const std::string& call_id,
                        const std::string& name, const std::string& arguments) {
  return json{{"type", "function_call"}, {"id", id},     {"call_id", call_id},
              {"name", name},            {"arguments", arguments}, {"status", status}};
}

}  // namespace

json responses_usage_json(const GenerationResult& r) {
  const Usage& u = r.usage;
  return json{{"input_tokens", u.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
              {"output_tokens", u.completion_tokens},
              {"output_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

const char* responses_status(const GenerationResult& r) {
  return r.finish_reason == "length" ? "incomplete" : "completed";
}

json responses_output_json(const GenerationResult& r) {
  json output = json::array();
  if (!r.reasoning_content.empty()) output.push_back(reasoning_item(make_response_id("rs_"), r.reasoning_content));
  if (!r.content.empty()) output.push_back(message_item(make_response_id("msg_"), "completed", r.content));
  for (const auto& call : r.tool_calls) {
    output.push_back(function_call_item(make_response_id("fc_"), "completed", call.id, call.name, call.arguments_json));
  }
  if (std::string_view(responses_status(r)) == "incomplete" && !output.empty() && output.back().contains("status")) {
    output.back()["status"] = "incomplete";
  }
  return output;
}

std::string responses_output_text(const json& output) {
  std::string text;
  for (const json& item : output) {
    if (item.value("type", "") != "message") continue;
    for (const json& part : item.value("content", json::array())) {
      if (part.value("type", "") == "output_text") text += part.value("text", "");
    }
  }
  return text;
}

json response_object_json(const ResponseMeta& meta, const json& echo, std::string_view status, json output,
                          const GenerationResult* r, const json& error) {
  json j{{"id", meta.id},
         {"object", "response"},
         {"created_at", meta.created},
         {"status", status},
         {"error", error},
         {"incomplete_details", nullptr},
         {"model", meta.model}};
  if (status == "incomplete") j["incomplete_details"] = {{"reason", "max_output_tokens"}};
  // Not while in progress: the OpenAI SDKs' stream helpers build the final response from the
  // first event's object and compute output_text only when the field is absent.
  if (status != "in_progress") j["output_text"] = responses_output_text(output);
  j["output"] = std::move(output);
  j["usage"] = r ? responses_usage_json(*r) : json(nullptr);
  for (const auto& [key, value] : echo.items()) j[key] = value;
  return j;
}

json responses_response_json(const ResponseMeta& meta, const json& echo, const GenerationResult& r) {
  return response_object_json(meta, echo, responses_status(r), responses_output_json(r), &r);
}

std::string responses_sse_event(const json& data) {
  return "event: " + data.value("type", std::string("message")) + "\ndata: " + dump_json(data) + "\n\n";
}

std::string ResponsesStream::event(json data) {
  data["sequence_number"] = sequence_++;
  return responses_sse_event(data);
}

std::string ResponsesStream::start() {
  const json response = response_object_json(meta_, echo_, "in_progress", json::array(), nullptr);
  std::string out = event({{"type", "response.created"}, {"response", response}});
  out += event({{"type", "response.in_progress"}, {"response", response}});  // after: sequence numbers
  return out;
}

json ResponsesStream::item_json(const char* status) const {
  switch (open_) {
    case Item::kReasoning:
      return reasoning_item(item_id_, text_);
    case Item::kMessage:
      return message_item(item_id_, status, text_);
    case Item::kFunctionCall:
      return function_call_item(item_id_, status, call_id_, name_, text_);
    case Item::kNone:
      break;
  }
  return nullptr;
}

std::string ResponsesStream::open(Item kind, const OutputDelta& d) {
  open_ = kind;
  text_.clear();
  const int64_t index = static_cast<int64_t>(done_items_.size());
  std::string out;
  switch (kind) {
    case Item::kReasoning: {
      item_id_ = make_response_id("rs_");
      json item = reasoning_item(item_id_, "");
      item["content"] = json::array();
      out = event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
      out += event({{"type", "response.content_part.added"},
                    {"item_id", item_id_},
                    {"output_index", index},
                    {"content_index", 0},
                    {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
      break;
    }
    case Item::kMessage: {
      item_id_ = make_response_id("msg_");
      json item = message_item(item_id_, "in_progress", "");
      item["content"] = json::array();
      out = event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
      out += event({{"type", "response.content_part.added"},
                    {"item_id", item_id_},
                    {"output_index", index},
                    {"content_index", 0},
                    {"part", output_text_part("")}});
      break;
    }
    case Item::kFunctionCall:
      item_id_ = make_response_id("fc_");
      call_id_ = d.tool_id;
      name_ = d.tool_name;
      out = event({{"type", "response.output_item.added"},
                   {"output_index", index},
                   {"item", function_call_item(item_id_, "in_progress", call_id_, name_, "")}});
      break;
    case Item::kNone:
      break;
  }
  return out;
}

std::string ResponsesStream::close(const char* status) {
  if (open_ == Item::kNone) return {};
  const int64_t index = static_cast<int64_t>(done_items_.size());
  std::string out;
  switch (open_) {
    case Item::kReasoning:
      out = event({{"type", "response.reasoning_text.done"},
                   {"item_id", item_id_},
                   {"output_index", index},
                   {"content_index", 0},
                   {"text", text_}});
      out += event({{"type", "response.content_part.done"},
                    {"item_id", item_id_},
                    {"output_index", index},
                    {"content_index", 0},
                    {"part", {{"type", "reasoning_text"}, {"text", text_}}}});
      break;
    case Item::kMessage:
      out = event({{"type", "response.output_text.done"},
                   {"item_id", item_id_},
                   {"output_index", index},
                   {"content_index", 0},
                   {"text", text_},
                   {"logprobs", json::array()}});
      out += event({{"type", "response.content_part.done"},
                    {"item_id", item_id_},
                    {"output_index", index},
                    {"content_index", 0},
                    {"part", output_text_part(text_)}});
      break;
    case Item::kFunctionCall:
      out = event({{"type", "response.function_call_arguments.done"},
                   {"item_id", item_id_},
                   {"output_index", index},
                   {"name", name_},
                   {"arguments", text_}});
      break;
    case Item::kNone:
      break;
  }
  json item = item_json(status);
  out += event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  done_items_.push_back(std::move(item));
  open_ = Item::kNone;
  return out;
}

std::string ResponsesStream::delta(const OutputDelta& d) {
  std::string out;
  Item kind = Item::kNone;
  switch (d.kind) {
    case OutputDelta::Kind::kReasoning:
      kind = Item::kReasoning;
      break;
    case OutputDelta::Kind::kContent:
      kind = Item::kMessage;
      break;
    case OutputDelta::Kind::kToolCallBegin:
      out = close("completed");
      return out + open(Item::kFunctionCall, d);
    case OutputDelta::Kind::kToolCallArgs:
      if (open_ != Item::kFunctionCall || d.text.empty()) return out;  // arguments always follow their call's begin
      text_ += d.text;
      return event({{"type", "response.function_call_arguments.delta"},
                    {"item_id", item_id_},
                    {"output_index", static_cast<int64_t>(done_items_.size())},
                    {"delta", d.text}});
  }
  if (d.text.empty()) return out;
  if (open_ != kind) {
    out = close("completed");
    out += open(kind, d);
  }
  text_ += d.text;
  const char* type = kind == Item::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta";
  json ev{{"type", type},
          {"item_id", item_id_},
          {"output_index", static_cast<int64_t>(done_items_.size())},
          {"content_index", 0},
          {"delta", d.text}};
  if (kind == Item::kMessage) ev["logprobs"] = json::array();
  return out + event(std::move(ev));
}

std::string ResponsesStream::finish(const GenerationResult& r) {
  const char* status = responses_status(r);
  std::string out = close(status);
  const std::string type = std::string("response.") + status;
  out += event({{"type", type}, {"response", response_object_json(meta_, echo_, status, done_items_, &r)}});
  return out;
}

std::string ResponsesStream::fail(const ApiError& e) {
  std::string out = close("incomplete");
  const json error{{"code", e.code.empty() ? std::string("server_error") : e.code}, {"message", e.message}};
  out += event({{"type", "response.failed"},
                {"response", response_object_json(meta_, echo_, "failed", done_items_, nullptr, error)}});
  return out;
}

}  // namespace gs::server
