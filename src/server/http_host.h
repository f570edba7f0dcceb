// The Host header of a request head, as RFC 9112 3.2 has it: a request carries at most one,
// and its value is a host (RFC 3986 3.2.2) with an optional port. The listener refuses a head
// that breaks this (decision 0051): two Host lines are read differently by a proxy in front
// (the first, the last, or both) and by httplib. An HTTP/1.1 request without one is served
// (decision 0051's addendum), although RFC 9112 asks for a 400.
#pragma once

#include <string>
#include <string_view>

namespace gs::server {

// What is wrong with the Host header of `head` (the request line and header lines, line ends
// CRLF or LF, up to the empty line or the end): "" when nothing, else the reason for the
// client ("the request has 2 Host headers", "the Host header's value is not a host and
// port").
std::string host_problem(std::string_view head);

}  // namespace gs::server
