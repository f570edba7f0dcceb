#include "server/http_host.h"

#include <cctype>
#include <cstring>

#include "server/http_head.h"

namespace gs::server {
namespace {

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// uri-host [ ":" port ] (RFC 3986 3.2.2, 3.2.3): an IP-literal in brackets (an IPv6 zone id
// after '%' too, RFC 6874), or a reg-name (unreserved, pct-encoded, sub-delims; an IPv4 address
// is one too), then digits after a colon.
bool is_host_and_port(std::string_view v) {
  size_t i = 0;
  if (!v.empty() && v.front() == '[') {
    const size_t close = v.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    for (i = 1; i < close; ++i) {
      const unsigned char c = static_cast<unsigned char>(v[i]);
      if (!std::isalnum(c) && std::strchr(":.-_~!$&'()*+,;=%", c) == nullptr) return false;
    }
    i = close + 1;
  } else {
    for (; i < v.size() && v[i] != ':'; ++i) {
      const unsigned char c = static_cast<unsigned char>(v[i]);
      if (c == '%') {
        if (i + 2 >= v.size() || !is_hex(v[i + 1]) || !is_hex(v[i + 2])) return false;
        i += 2;
        continue;
      }
      if (!std::isalnum(c) && std::strchr("-._~!$&'()*+,;=", c) == nullptr) return false;
    }
  }
  if (i == v.size()) return true;
  if (v[i] != ':') return false;
  for (++i; i < v.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  }
  return true;
}

}  // namespace

std::string host_problem(std::string_view head) {
  int hosts = 0;
  bool valid = true;
  for_each_header(head, [&](std::string_view name, std::string_view value) {
    if (!same_name(name, "host")) return;
    ++hosts;
    valid = valid && is_host_and_port(value);
  });
  if (hosts > 1) return "the request has " + std::to_string(hosts) + " Host headers (RFC 9112 3.2: at most one)";
  // No Host at all is served (decision 0051's addendum): no route reads it, and llama-server's
  // and vLLM's HTTP parsers serve such a request too.
  if (!valid) return "the Host header's value is not a host and an optional port (RFC 9112 3.2)";
  return "";
}

}  // namespace gs::server
