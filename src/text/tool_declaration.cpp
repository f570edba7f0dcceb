// Tool declarations as the Gemma 4 template prints them (format_function_declaration and
// format_parameters), including its quirks: schema keys named like the standard keys are
// skipped, and a parameters object without "type" is left unclosed.
#include <string>

#include "text/chat_format.h"
#include "text/chat_values.h"

namespace gs::text {
namespace {

using nlohmann::json;
using chat::ascii_upper;
using chat::format_argument;
using chat::member;
using chat::python_str;
using chat::truthy;

// Jinja `x | upper` of any value: upper-cased str(x); Undefined gives "".
std::string upper_of(const json* v) { return v == nullptr ? std::string() : ascii_upper(python_str(*v)); }

void append_quoted(std::string_view s, std::string* out) {
  out->append(markup::kQuote);
  out->append(s);
  out->append(markup::kQuote);
}

// `for item in X` over a required-list: a list's items, a string's characters, an
// object's keys; each printed with str().
void append_required_items(const json* list, std::string* out) {
  if (list == nullptr) return;
  std::vector<std::string> items;
  if (list->is_array()) {
    for (const auto& item : *list) items.push_back(python_str(item));
  } else if (list->is_string()) {
    for (const char c : list->get_ref<const std::string&>()) items.emplace_back(1, c);
  } else if (list->is_object()) {
    for (const auto& [k, v] : list->items()) items.push_back(k);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    append_quoted(items[i], out);
    if (i + 1 < items.size()) out->push_back(',');
  }
}

void format_parameters(const json& properties, ChatTemplate variant, std::string* out);


// items:{...} of an array schema (without a leading comma).
void format_items(const json& items, ChatTemplate variant, std::string* out) {
  out->append("items:{");
  bool first = true;
  for (const auto& [item_key, item_value] : chat::dictsort(items)) {
    if (item_value->is_null()) continue;
    if (!first) out->push_back(',');
    first = false;
    if (item_key == "properties") {
      out->append("properties:{");
      if (item_value->is_object()) format_parameters(*item_value, variant, out);
      out->push_back('}');
    } else if (item_key == "required") {
      out->append("required:[");
      append_required_items(item_value, out);
      out->push_back(']');
    } else if (item_key == "type") {
      out->append("type:");
      if (item_value->is_string()) {
        format_argument(json(ascii_upper(item_value->get_ref<const std::string&>())), true, out);
      } else {
        json upper_list = json::array();
        if (item_value->is_array()) {
          for (const auto& t : *item_value) upper_list.push_back(ascii_upper(python_str(t)));
        } else if (item_value->is_object()) {
          for (const auto& [k, t] : item_value->items()) upper_list.push_back(ascii_upper(k));
        } else {
          upper_list = json(ascii_upper(python_str(*item_value)));
        }
        format_argument(upper_list, true, out);
      }
    } else {
      out->append(item_key);
      out->push_back(':');
      format_argument(*item_value, /*escape_keys=*/true, out);
    }
  }
  out->push_back('}');
}

// One property: KEY:{description:...,enum:...,items:{...},nullable:true,properties:{...},
// required:[...],type:<|"|>TYPE<|"|>} (the 31B template's order; the interleaved variant
// puts nullable second and writes properties/required/items with a fixed leading comma).
void format_property(const std::string& key, const json& value, ChatTemplate variant, std::string* out) {
  bool add_comma = false;
  const auto comma = [&] {
    if (add_comma) {
      out->push_back(',');
    } else {
      add_comma = true;
    }
  };
  const auto nullable = [&] {
    if (truthy(member(&value, "nullable"))) {
      comma();
      out->append("nullable:true");
    }
  };
  out->append(key);
  out->append(":{");
  if (const json* d = member(&value, "description"); truthy(d)) {
    out->append("description:");
    append_quoted(python_str(*d), out);
    add_comma = true;
  }
  const std::string type = upper_of(member(&value, "type"));
  const json* items = member(&value, "items");
  const bool has_items = items != nullptr && items->is_object() && !items->empty();
  const json* props = member(&value, "properties");
  const json* object_props = (props != nullptr && props->is_object()) ? props : (value.is_object() ? &value : nullptr);
  const json* required = member(&value, "required");
  switch (variant) {
    case ChatTemplate::kGemma4:
      if (type == "STRING") {
        if (const json* e = member(&value, "enum"); truthy(e)) {
          comma();
          out->append("enum:");
          format_argument(*e, /*escape_keys=*/true, out);
        }
      } else if (type == "ARRAY" && has_items) {
        comma();
        format_items(*items, variant, out);
      }
      nullable();
      if (type == "OBJECT") {
        if (object_props != nullptr) {
          comma();
          out->append("properties:{");
          format_parameters(*object_props, variant, out);
          out->push_back('}');
        }
        if (truthy(required)) {
          comma();
          out->append("required:[");
          append_required_items(required, out);
          out->push_back(']');
        }
      }
      break;
    case ChatTemplate::kGemma4Interleaved:
      nullable();
      if (type == "STRING") {
        if (const json* e = member(&value, "enum"); truthy(e)) {
          comma();
          out->append("enum:");
          format_argument(*e, /*escape_keys=*/true, out);
        }
      } else if (type == "OBJECT") {
        out->append(",properties:{");
        if (object_props != nullptr) format_parameters(*object_props, variant, out);
        out->push_back('}');
        if (truthy(required)) {
          out->append(",required:[");
          append_required_items(required, out);
          out->push_back(']');
        }
      } else if (type == "ARRAY" && has_items) {
        out->push_back(',');
        format_items(*items, variant, out);
      }
      break;
  }
  comma();
  out->append("type:");
  append_quoted(type, out);
  out->push_back('}');
}

void format_parameters(const json& properties, ChatTemplate variant, std::string* out) {
  static const char* const kStandardKeys[] = {"description", "type", "properties", "required", "nullable"};
  bool found_first = false;
  for (const auto& [key, value] : chat::dictsort(properties)) {
    bool standard = false;
    for (const char* k : kStandardKeys) standard = standard || key == k;
    if (standard) continue;  // the template skips these names (docs/decisions/0005)
    if (found_first) out->push_back(',');
    found_first = true;
    format_property(key, *value, variant, out);
  }
}

}  // namespace

std::string render_tool_declaration(const ChatTool& tool, ChatTemplate variant) {
  std::string out = "declaration:";
  out += tool.name;
  out += "{description:";
  append_quoted(tool.description, &out);
  const json* params = &tool.parameters;
  if (truthy(params)) {
    out += ",parameters:{";
    if (const json* props = member(params, "properties"); truthy(props)) {
      out += "properties:{";
      format_parameters(*props, variant, &out);
      out += "},";
    }
    if (const json* req = member(params, "required"); truthy(req)) {
      out += "required:[";
      append_required_items(req, &out);
      out += "],";
    }
    if (const json* type = member(params, "type"); truthy(type)) {
      out += "type:";
      append_quoted(upper_of(type), &out);
      out += "}";
    }
  }
  // "'response' in tool_data['function']": printed whatever its value (a description alone
  // leaves ",}", as the template writes it).
  if (tool.response) {
    const json* r = &*tool.response;
    out += ",response:{";
    if (const json* d = member(r, "description"); truthy(d)) {
      out += "description:";
      append_quoted(python_str(*d), &out);
      out += ",";
    }
    if (upper_of(member(r, "type")) == "OBJECT") {
      out += "type:";
      append_quoted("OBJECT", &out);
      out += "}";
    }
  }
  out += "}";
  return out;
}

}  // namespace gs::text
