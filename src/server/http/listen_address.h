#pragma once
// The address `allot server` listens on: parsing --listen, telling loopback from addresses other machines
// reach, and saying why a bind failed (cpp-httplib only reports that it did).
#include <string>

#include "core/model/result.h"

namespace allot::server {

struct ListenAddress {
  std::string host;  // without the brackets of an IPv6 literal
  int port = 0;
};

// "127.0.0.1:7070", "[::1]:7070", "localhost:0". Port 0 asks for any free port.
Result<ListenAddress> parse_listen(const std::string& listen);

// True for 127.0.0.0/8, ::1 (and ::ffff:127.x.y.z) and "localhost": addresses only this machine can reach.
// Everything else, 0.0.0.0 and host names included, counts as reachable from the network.
bool is_loopback_host(const std::string& host);

// "HOST:PORT" with IPv6 literals in brackets, and the URL "SCHEME://HOST:PORT".
std::string host_port(const std::string& host, int port);
std::string url_for(const std::string& scheme, const std::string& host, int port);

// Why binding host:port fails, found by trying a bind with the options the server uses (SO_REUSEADDR): the
// port in use by another process, an address this machine does not have, a name that does not resolve.
// Empty when the bind succeeds (the socket is closed again at once).
std::string bind_problem(const std::string& host, int port);

}  // namespace allot::server
