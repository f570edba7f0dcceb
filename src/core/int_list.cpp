// Integer lists from the command line and tokenize's input.
#include "core/int_list.h"

#include <fmt/format.h>

#include <charconv>
#include <system_error>

namespace gs {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

Result<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view what, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  size_t n_items = 0;
  bool any = false;
  for (const char c : text) any = any || !is_space(c);
  if (!any) return out;
  // Comma-separated fields, each holding one or more whitespace-separated items.
  size_t field_start = 0;
  for (;;) {
    const size_t comma = text.find(',', field_start);
    const std::string_view field =
        text.substr(field_start, comma == std::string_view::npos ? std::string_view::npos : comma - field_start);
    size_t i = 0;
    bool field_has_item = false;
    while (i < field.size()) {
      while (i < field.size() && is_space(field[i])) ++i;
      if (i == field.size()) break;
      size_t j = i;
      while (j < field.size() && !is_space(field[j])) ++j;
      const std::string_view item = field.substr(i, j - i);
      ++n_items;
      field_has_item = true;
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      const bool whole = end == item.data() + item.size();
      if (ec == std::errc::result_out_of_range && whole) {
        return make_status(StatusCode::kInvalidArgument, "{}: item {} ({}) is outside [{}, {}]", what, n_items, item, lo,
                           hi);
      }
      if (ec != std::errc() || !whole) {
        return make_status(StatusCode::kInvalidArgument, "{}: item {} '{}' is not a decimal integer", what, n_items,
                           item);
      }
      if (v < lo || v > hi) {
        return make_status(StatusCode::kInvalidArgument, "{}: item {} ({}) is outside [{}, {}]", what, n_items, v, lo,
                           hi);
      }
      out.push_back(v);
      i = j;
    }
    if (!field_has_item) {
      // "1,,2", ",1" and "1," are typos, not the list without the gap: nothing is guessed.
      return make_status(StatusCode::kInvalidArgument, "{}: item {} is empty (between commas, or before the first or "
                         "after the last)", what, n_items + 1);
    }
    if (comma == std::string_view::npos) break;
    field_start = comma + 1;
  }
  return out;
}

}  // namespace gs
