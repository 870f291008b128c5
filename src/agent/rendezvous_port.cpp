#include "agent/rendezvous_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace allot::agent {

namespace {

// errno of binding `port` on the wildcard address of `family` (0: bound, or the family is not there).
int bind_error(int family, int port) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  const int one = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (family == AF_INET6) {
    // IPv6 only: the IPv4 wildcard is checked on its own.
    (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  }
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

}  // namespace

Status rendezvous_port_free(int port) {
  if (port < 1 || port > 65535) return ok_status();  // none assigned: nothing to check
  for (int family : {AF_INET, AF_INET6})
    if (bind_error(family, port) == EADDRINUSE)
      return Error::precondition("MASTER_PORT " + std::to_string(port) + " is in use on this node (another process holds it: " +
                                 std::strerror(EADDRINUSE) + ")");
  return ok_status();
}

}  // namespace allot::agent
