// Integers beyond 64 bits in tool declarations: the body's tools read again, exactly.
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

}  // namespace

void keep_exact_tool_integers(std::string_view text, json* body) {
  if (!body->is_object()) return;
  bool any = false;
  for (const char* key : kToolKeys) {
    const auto it = body->find(key);
    any = any || (it != body->end() && holds_big_whole_double(*it));
  }
  if (!any) return;
  json exact = text::chat::parse_json_exact(text);
  if (!exact.is_object()) return;  // parse_json_object read it: not reached
  for (const char* key : kToolKeys) {
    const auto it = exact.find(key);
    if (it != exact.end()) (*body)[key] = std::move(*it);
  }
}

}  // namespace gs::server
