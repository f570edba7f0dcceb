// Why a server could not listen on a host: the part of the answer that the socket calls'
// failure does not say (httplib only reports that binding failed).
#pragma once

#include <string>

namespace gs::server {

// Checks `host` as a listening address (getaddrinfo with AI_PASSIVE, numeric or a name) and
// returns why it cannot be one, or "" when it resolves (then the port is what failed: in use,
// or the address is not this machine's). Names IPv6 literals written in brackets ("[::1]":
// write ::1), and names that do not resolve with the resolver's own words.
std::string listen_address_problem(const std::string& host);

}  // namespace gs::server
