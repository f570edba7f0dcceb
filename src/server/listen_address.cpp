// Listening addresses: see listen_address.h.
#include "server/listen_address.h"

#include <netdb.h>
#include <sys/socket.h>

#include <fmt/format.h>

namespace gs::server {

std::string listen_address_problem(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return fmt::format("{} is an IPv6 address in brackets: give it without them ({})", host,
                       host.substr(1, host.size() - 2));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found);
  if (found) ::freeaddrinfo(found);
  if (rc != 0) return fmt::format("{} does not resolve to an address ({})", host, ::gai_strerror(rc));
  return {};
}

}  // namespace gs::server
