#include "server/http/listen_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace allot::server {

Result<ListenAddress> parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Error::invalid("--listen wants HOST:PORT (as in 127.0.0.1:7070), got '" + listen + "'");
  ListenAddress a{listen.substr(0, colon), 0};
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
  const std::string port = listen.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    return Error::invalid("--listen: the port must be 0..65535, got '" + port + "'");
  a.port = std::stoi(port);
  return a;
}

bool is_loopback_host(const std::string& host) {
  std::string lower = host;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

std::string host_port(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string url_for(const std::string& scheme, const std::string& host, int port) {
  return scheme + "://" + host_port(host, port);
}

std::string bind_problem(const std::string& host, int port) {
  const std::string where = host_port(host, port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    return "cannot listen on " + where + ": the host does not resolve (" + gai_strerror(rc) + ")";
  int last_errno = 0;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    const bool bound = ::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    if (!bound) last_errno = errno;
    ::close(fd);
    if (bound) {
      last_errno = 0;
      break;
    }
  }
  freeaddrinfo(found);
  if (last_errno == EADDRINUSE)
    return "cannot listen on " + where + ": the port is in use (another allot server or another program listens "
           "there); stop it or choose another --listen";
  if (last_errno == EADDRNOTAVAIL)
    return "cannot listen on " + where + ": this machine has no such address";
  if (last_errno == EACCES)
    return "cannot listen on " + where + ": permission denied (ports below 1024 need privileges)";
  if (last_errno != 0) return "cannot listen on " + where + ": " + std::strerror(last_errno);
  return "";
}

}  // namespace allot::server
