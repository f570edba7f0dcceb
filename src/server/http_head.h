// Reading a request head's text (RFC 9110 5 and 5.6.1, RFC 9112 2.2 and 5): field names
// compared without case, values without their blanks, the header lines one by one and
// comma-separated lists member by member. No state; the listener's framing checks
// (http_listener.cpp), the Host check (http_host.cpp) and the API key check read heads with it.
#pragma once

#include <string_view>

namespace gs::server {

// Whether two field names (or list members, or tokens) are equal, ASCII letters compared
// without case.
bool same_name(std::string_view a, std::string_view b);

// v without the blanks (spaces, tabs) around it.
std::string_view without_blanks(std::string_view v);

// The line without its CRLF (or LF).
std::string_view without_line_end(std::string_view line);

// Calls f(name, value) for each header line of `head` (the request or status line first, then
// header lines ending in CRLF or LF, up to the empty line or the end) that has a colon: `name`
// is the text before the colon as written, `value` the text after it without its blanks. Both
// view into `head`. Lines without a colon are skipped (the framing checks refuse them).
template <class F>
void for_each_header(std::string_view head, F&& f) {
  for (size_t pos = head.find('\n'); pos != std::string_view::npos && pos + 1 < head.size();) {
    const size_t next = head.find('\n', pos + 1);
    const std::string_view line =
        without_line_end(head.substr(pos + 1, next == std::string_view::npos ? std::string_view::npos : next - pos - 1));
    pos = next;
    if (line.empty()) return;  // the end of the head
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    f(line.substr(0, colon), without_blanks(line.substr(colon + 1)));
  }
}

// Calls f(member) for each member of a comma-separated list (RFC 9110 5.6.1), without its
// blanks; empty members are none and are skipped.
template <class F>
void for_each_member(std::string_view list, F&& f) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view member = without_blanks(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (!member.empty()) f(member);
  }
}

// The value of the first header `name` of a request head (names compared without case),
// without its blanks; empty when there is none.
std::string_view request_header(std::string_view head, std::string_view name);

}  // namespace gs::server
