// Integers beyond 64 bits in tool JSON (declarations, Anthropic's past calls): read again, exactly.
#include "server/tool_integers.h"

#include <cmath>
#include <vector>

#include "text/chat_values.h"

namespace gs::server {

namespace {

using nlohmann::json;

constexpr const char* kToolKeys[] = {"tools", "functions"};

// Whether `v` holds a whole double of magnitude 2^63 or more (without recursion: bodies nest
// up to kMaxJsonDepth, and this runs on every request with tools).
bool holds_big_whole_double(const json& v) {
  std::vector<const json*> stack = {&v};
  while (!stack.empty()) {
    const json* node = stack.back();
    stack.pop_back();
    if (node->is_number_float()) {
      const double d = node->get<double>();
      if (std::isfinite(d) && std::fabs(d) >= 9223372036854775808.0 && std::floor(d) == d) return true;
    } else if (node->is_structured()) {
      for (const json& child : *node) stack.push_back(&child);
    }
  }
  return false;
}

// The input of messages[i].content[j] when that block is a tool_use block whose input is an
// object, else nullptr.
json* tool_use_input(json& messages, size_t i, size_t j) {
  if (!messages.is_array() || i >= messages.size() || !messages[i].is_object()) return nullptr;
  const auto content = messages[i].find("content");
  if (content == messages[i].end() || !content->is_array() || j >= content->size()) return nullptr;
  json& block = (*content)[j];
  if (!block.is_object()) return nullptr;
  const auto type = block.find("type");
  if (type == block.end() || !type->is_string() || *type != "tool_use") return nullptr;
  const auto input = block.find("input");
  if (input == block.end() || !input->is_object()) return nullptr;
  return &*input;
}

// The tool_use inputs of an Anthropic messages array, as (message, block) indices, that hold a
// big whole double.
std::vector<std::pair<size_t, size_t>> big_tool_use_inputs(json& messages) {
  std::vector<std::pair<size_t, size_t>> found;
  if (!messages.is_array()) return found;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (!messages[i].is_object()) continue;
    const auto content = messages[i].find("content");
    if (content == messages[i].end() || !content->is_array()) continue;
    for (size_t j = 0; j < content->size(); ++j) {
      const json* input = tool_use_input(messages, i, j);
      if (input != nullptr && holds_big_whole_double(*input)) found.emplace_back(i, j);
    }
  }
  return found;
}

}  // namespace

void keep_exact_tool_integers(std::string_view text, json* body) {
  if (!body->is_object()) return;
  bool any = false;
  for (const char* key : kToolKeys) {
    const auto it = body->find(key);
    any = any || (it != body->end() && holds_big_whole_double(*it));
  }
  const auto messages = body->find("messages");
  const std::vector<std::pair<size_t, size_t>> inputs =
      messages == body->end() ? std::vector<std::pair<size_t, size_t>>{} : big_tool_use_inputs(*messages);
  if (!any && inputs.empty()) return;
  json exact = text::chat::parse_json_exact(text);
  if (!exact.is_object()) return;  // parse_json_object read it: not reached
  if (any) {
    for (const char* key : kToolKeys) {
      const auto it = exact.find(key);
      if (it != exact.end()) (*body)[key] = std::move(*it);
    }
  }
  const auto exact_messages = exact.find("messages");
  if (exact_messages == exact.end()) return;  // not reached: the same text
  for (const auto& [i, j] : inputs) {
    json* from = tool_use_input(*exact_messages, i, j);
    if (from != nullptr) *tool_use_input(*messages, i, j) = std::move(*from);
  }
}

}  // namespace gs::server
