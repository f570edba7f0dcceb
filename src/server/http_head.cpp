#include "server/http_head.h"

#include <cctype>

namespace gs::server {

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view without_blanks(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

std::string_view without_line_end(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

std::string_view request_header(std::string_view head, std::string_view name) {
  std::string_view found;
  bool seen = false;
  for_each_header(head, [&](std::string_view n, std::string_view value) {
    if (seen || !same_name(n, name)) return;
    found = value;
    seen = true;
  });
  return found;
}

}  // namespace gs::server
