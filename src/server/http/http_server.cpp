#include "server/http/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/request_framing.h"

namespace allot::server {
namespace {

using SteadyClock = std::chrono::steady_clock;

thread_local bool t_close_after_response = false;

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  char host[INET6_ADDRSTRLEN] = "";
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  ip = host;
}

// cpp-httplib compresses text and JSON answers with brotli whenever a client accepts it (every browser does), at
// brotli's highest quality: 150 ms for the dashboard's 36 KB script and 100-300 ms for a 40-110 KB JSON page on a
// 2-core machine, against under a millisecond to send it as it is. gzip, which it picks otherwise, costs a few
// ms; so a request's Accept-Encoding is narrowed to gzip before cpp-httplib reads it.
void offer_gzip_only(httplib::Request& req) {
  auto it = req.headers.find("Accept-Encoding");
  if (it == req.headers.end()) return;
  const bool gzip = it->second.find("gzip") != std::string::npos;
  req.headers.erase("Accept-Encoding");
  if (gzip) req.headers.emplace("Accept-Encoding", "gzip");
}

// A connection's socket (or an SSL stream over it) with deadlines instead of per-read timeouts. Reads of one
// request share one deadline, set when its first byte arrives; writes of one answer share another, set at
// its first write. Waits are cut into short slices so that a stopping server (its listening socket closed)
// is noticed. Every recv/send (SSL_read/SSL_write) is non-blocking and says what it waits for: TLS may need
// to write while reading and the other way round.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, SSL* ssl, const std::atomic<socket_t>& listener, const HttpLimits& limits)
      : fd_(fd), ssl_(ssl), listener_(listener), limits_(limits) {}

  // The TLS handshake, done by `deadline`. False when the client did not complete it in time, went away, or
  // spoke something else than TLS.
  bool handshake(SteadyClock::time_point deadline) {
    for (;;) {
      ERR_clear_error();
      const int r = SSL_accept(ssl_);
      if (r == 1) return true;
      const int err = SSL_get_error(ssl_, r);
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return false;
      if (!wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, true)) {
        timed_out_ = true;
        return false;
      }
    }
  }

  // A request starts: its read deadline runs from now.
  void begin_request() {
    writing_ = false;
    read_deadline_ = SteadyClock::now() + limits_.read_timeout;
  }

  // Whether the next request may already be here: bytes buffered (here or inside OpenSSL, decrypted or not), or
  // readable (or hung up) on the socket now. False: the connection may park until the socket is readable.
  bool may_have_request() const {
    if (buffered() || (ssl_ != nullptr && SSL_has_pending(ssl_) == 1)) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  // The head read ahead by read_head() (line, headers and the blank line), when it is complete: what a deferred
  // request is run again from.
  std::optional<std::string> head_bytes() const {
    const size_t end = head_.find("\r\n\r\n", head_off_);
    if (end == std::string::npos) return std::nullopt;
    return head_.substr(head_off_, end + 4 - head_off_);
  }
  // Puts `bytes` back in front of what is buffered: the next read returns them first.
  void unread(const std::string& bytes) {
    head_ = bytes + head_.substr(head_off_);
    head_off_ = 0;
  }

  // Reads ahead until the request's head (its line and headers) is complete, by `deadline`; the bytes stay in the
  // stream for cpp-httplib to parse. False when the client did not send it in time or went away. A head larger
  // than kHeadPeek is left to cpp-httplib's own limits once that much has arrived.
  bool read_head(SteadyClock::time_point deadline) {
    deadline = std::min(deadline, read_deadline_);
    for (;;) {
      if (head_.find("\r\n\r\n", head_off_) != std::string::npos || head_.size() - head_off_ >= kHeadPeek) return true;
      if (off_ < len_) {
        head_.append(buf_.data() + off_, len_ - off_);
        off_ = len_;
        continue;
      }
      short want = 0;
      const ssize_t n = try_recv(buf_.data(), buf_.size(), want);
      if (n == kWouldBlock) {
        if (!wait(want, deadline, true)) {
          timed_out_ = true;
          return false;
        }
        continue;
      }
      if (n <= 0) return false;
      head_.append(buf_.data(), static_cast<size_t>(n));
    }
  }
  // The request line read ahead by read_head() ("POST /v1/agents/gpu-1/heartbeat HTTP/1.1").
  std::string_view request_line() const {
    std::string_view rest(head_);
    rest.remove_prefix(head_off_);
    return rest.substr(0, rest.find("\r\n"));
  }
  // Cuts the whole request's deadline short (a reserved seat holds a request no longer than its head may take).
  void limit_read_deadline(SteadyClock::time_point deadline) { read_deadline_ = std::min(read_deadline_, deadline); }

  // Whether a read gave up because the request was not sent in time (the connection is then dropped).
  bool timed_out() const { return timed_out_; }

  bool is_readable() const override { return buffered() || wait(POLLIN, read_deadline_, true); }
  bool is_writable() const override { return wait(POLLOUT, writing_ ? write_deadline_ : SteadyClock::now() + limits_.write_timeout, false); }

  ssize_t read(char* ptr, size_t size) override {
    if (head_off_ < head_.size()) {
      const size_t n = std::min(size, head_.size() - head_off_);
      std::memcpy(ptr, head_.data() + head_off_, n);
      head_off_ += n;
      if (head_off_ == head_.size()) head_.clear(), head_off_ = 0;
      return static_cast<ssize_t>(n);
    }
    if (off_ < len_) {
      const size_t n = std::min(size, len_ - off_);
      std::memcpy(ptr, buf_.data() + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    // Small reads (the request line and headers come a byte at a time) go through the buffer.
    const bool direct = size >= buf_.size();
    for (;;) {
      short want = 0;
      const ssize_t n = try_recv(direct ? ptr : buf_.data(), direct ? size : buf_.size(), want);
      if (n == kWouldBlock) {
        if (!wait(want, read_deadline_, true)) {
          timed_out_ = true;
          return -1;
        }
        continue;
      }
      if (n <= 0 || direct) return n;
      len_ = static_cast<size_t>(n);
      off_ = 0;
      return read(ptr, size);
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!writing_) {
      writing_ = true;
      write_deadline_ = SteadyClock::now() + limits_.write_timeout;
    }
    for (;;) {
      short want = 0;
      const ssize_t n = try_send(ptr, size, want);
      if (n != kWouldBlock) return n;
      if (!wait(want, write_deadline_, false)) return -1;
    }
  }

  // cpp-httplib asks both for every request; a connected socket's addresses never change, so each is read once (two
  // system calls a request fewer: at 10,000 agents heartbeating every second they were 2.3% of the server's CPU).
  void get_remote_ip_and_port(std::string& ip, int& port) const override { cached_address(peer_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { cached_address(local_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  static constexpr ssize_t kWouldBlock = -2;
  static constexpr size_t kHeadPeek = 16384;

  struct Address {
    std::string ip;
    int port = 0;
  };
  void cached_address(std::optional<Address>& cache, bool peer, std::string& ip, int& port) const {
    if (!cache) {
      Address a;
      address_of(fd_, peer, a.ip, a.port);
      if (a.ip.empty()) return;  // not known (the call failed): asked again next time
      cache = std::move(a);
    }
    ip = cache->ip;
    port = cache->port;
  }
  // The stream is used by one thread at a time (a connection is handed between threads under a lock).
  mutable std::optional<Address> peer_, local_;

  // Bytes already received and not yet handed out (by this stream's buffer, or decrypted inside OpenSSL,
  // where poll() cannot see them).
  bool buffered() const { return head_off_ < head_.size() || off_ < len_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0); }

  // One non-blocking read: bytes, 0 at end of stream, -1 on error, kWouldBlock with the poll event to wait for.
  ssize_t try_recv(char* ptr, size_t size, short& want) {
    if (ssl_ == nullptr) {
      const ssize_t n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return want = POLLIN, kWouldBlock;
      return n;
    }
    ERR_clear_error();
    const int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, INT_MAX)));
    return n > 0 ? n : ssl_outcome(n, want);
  }

  ssize_t try_send(const char* ptr, size_t size, short& want) {
    if (ssl_ == nullptr) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return want = POLLOUT, kWouldBlock;
      return n;
    }
    ERR_clear_error();
    const int n = SSL_write(ssl_, ptr, static_cast<int>(std::min<size_t>(size, INT_MAX)));
    return n > 0 ? n : ssl_outcome(n, want);
  }

  ssize_t ssl_outcome(int r, short& want) const {
    switch (SSL_get_error(ssl_, r)) {
      case SSL_ERROR_WANT_READ: return want = POLLIN, kWouldBlock;
      case SSL_ERROR_WANT_WRITE: return want = POLLOUT, kWouldBlock;
      case SSL_ERROR_ZERO_RETURN: return 0;
      default: return -1;
    }
  }

  // True once the socket is ready (or has an error or hang-up, which the next recv/send reports).
  bool wait(short events, SteadyClock::time_point deadline, bool stop_aware) const {
    for (;;) {
      if (stop_aware && listener_.load() == INVALID_SOCKET) return false;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }

  const int fd_;
  SSL* const ssl_;
  const std::atomic<socket_t>& listener_;
  const HttpLimits& limits_;
  SteadyClock::time_point read_deadline_{};
  SteadyClock::time_point write_deadline_{};
  bool writing_ = false;
  bool timed_out_ = false;
  std::array<char, 4096> buf_{};
  size_t off_ = 0, len_ = 0;
  std::string head_;  // read ahead by read_head(), handed out before buf_
  size_t head_off_ = 0;
};

// An SSL connection over `fd` (non-blocking, which the deadlines above need), or null for plain HTTP or when
// OpenSSL cannot make one.
struct SslConnection {
  SSL* ssl = nullptr;
  SslConnection(SSL_CTX* ctx, int fd) {
    if (ctx == nullptr) return;
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    ssl = SSL_new(ctx);
    if (ssl != nullptr && SSL_set_fd(ssl, fd) != 1) {
      SSL_free(ssl);
      ssl = nullptr;
    }
  }
  ~SslConnection() { finish(); }
  // Before the socket is closed (after, its number may already be another connection's): one close_notify,
  // without waiting for the client's.
  void finish() {
    if (ssl == nullptr) return;
    if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);
    SSL_free(ssl);
    ssl = nullptr;
  }
  SslConnection(const SslConnection&) = delete;
  SslConnection& operator=(const SslConnection&) = delete;
};

// Reads and drops what the client still sends, for up to `linger`, then closes. Closing a socket with unread
// data makes the kernel reset the connection, and a reset can discard the answer before the client reads it.
void close_lingering(int fd, std::chrono::milliseconds linger) {
  ::shutdown(fd, SHUT_WR);
  const auto until = SteadyClock::now() + linger;
  std::array<char, 16384> sink;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - SteadyClock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0))) <= 0) break;
    if (::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT) <= 0) break;
  }
  ::close(fd);
}

// Past the connection limit: a 503 written without waiting for the request, and the connection closed.
// Over TLS the handshake comes first, bounded by limits.refusal_handshake_timeout.
std::string refusal(const HttpLimits& limits) {
  const std::string body = R"({"error": {"code": "Unavailable", "message": "the server is serving its limit of )" +
                           std::to_string(limits.max_connections) + R"( connections (allot server --max-connections), at most )" +
                           std::to_string(limits.max_connections_per_address) +
                           R"( from one address (--max-connections-per-address); past them only agents' requests are served, on )" +
                           std::to_string(limits.agent_connections) + R"( seats of their own (--agent-connections); retry shortly"}})";
  return "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body;
}

// An agent's POST (registration, heartbeat, logs), by its request line: what a reserved seat serves. Not a watch
// (GET .../changes), which holds its connection for its whole wait; a refused watch only makes the agent learn of
// work at its heartbeats. Anyone can send such a line; without an agent's token it is answered 401 at once, so a
// seat taken that way is held no longer than one request, bounded by head_timeout.
bool agent_request(std::string_view line) {
  return line.rfind("POST /v1/agents/", 0) == 0;
}

void refuse(int fd, SSL_CTX* tls, const std::atomic<socket_t>& listener, const HttpLimits& limits) {
  const std::string answer = refusal(limits);
  if (tls == nullptr) {
    (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  } else {
    HttpLimits brief = limits;
    brief.write_timeout = limits.refusal_handshake_timeout;
    SslConnection conn(tls, fd);
    DeadlineStream strm(fd, conn.ssl, listener, brief);
    if (conn.ssl != nullptr && strm.handshake(SteadyClock::now() + limits.refusal_handshake_timeout))
      (void)strm.write(answer.data(), answer.size());
    conn.finish();
  }
  close_lingering(fd, std::chrono::milliseconds(0));
}

// Before any route reads a body: a request whose body length is ambiguous is answered and its connection
// closed, so no byte after its headers is read as another request (request_framing.h).
httplib::Server::HandlerResponse refuse_ambiguous_framing(const httplib::Request& req, httplib::Response& res) {
  auto refusal = ambiguous_framing(req.headers);
  if (!refusal) return httplib::Server::HandlerResponse::Unhandled;
  res.status = refusal->status;
  res.set_content(refusal->body, refusal->content_type.c_str());
  t_close_after_response = true;
  return httplib::Server::HandlerResponse::Handled;
}

// A request line the server offers deferral for: an agent's watch (GET /v1/agents/{name}/changes), which may wait
// long for its answer. Any other request is served on its thread from start to end.
bool deferrable(std::string_view line) {
  if (line.rfind("GET /v1/agents/", 0) != 0) return false;
  const size_t sp = line.find(' ', 4);
  const std::string_view target = line.substr(4, sp == std::string_view::npos ? std::string_view::npos : sp - 4);
  const std::string_view path = target.substr(0, target.find('?'));
  return path.size() > 8 && path.substr(path.size() - 8) == "/changes";
}

// A head that announces a body: its request is not deferred (the body would have to be kept too).
bool announces_body(std::string_view head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return lower.find("\r\ncontent-length:") != std::string::npos || lower.find("\r\ntransfer-encoding:") != std::string::npos;
}

// Reads from the connection's stream, keeps what is written: the answer of a request that may be deferred is
// written only if it was not (a deferred run's answer is dropped).
class CaptureStream final : public httplib::Stream {
 public:
  explicit CaptureStream(httplib::Stream& in) : in_(in) {}
  bool is_readable() const override { return in_.is_readable(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override { return in_.read(ptr, size); }
  ssize_t write(const char* ptr, size_t size) override {
    out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { in_.get_remote_ip_and_port(ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { in_.get_local_ip_and_port(ip, port); }
  socket_t socket() const override { return in_.socket(); }
  const std::string& out() const { return out_; }

 private:
  httplib::Stream& in_;
  std::string out_;
};

// What a handler and the connection loop tell each other about one run of a deferrable request.
struct DeferSlot {
  Wake wake;                      // the connection's (set by the loop)
  std::optional<Resumed> resumed;  // set by the loop on a rerun
  bool deferred = false;          // set by defer_request()
  SteadyClock::time_point until{};
  std::function<void()> on_end;
};
thread_local DeferSlot* t_defer = nullptr;

}  // namespace

void close_after_response() { t_close_after_response = true; }

Wake defer_request(SteadyClock::time_point until, std::function<void()> on_end) {
  if (t_defer == nullptr) return nullptr;
  t_defer->deferred = true;
  t_defer->until = until;
  t_defer->on_end = std::move(on_end);
  return t_defer->wake;
}

void undefer_request() {
  if (t_defer != nullptr) t_defer->deferred = false;
}

std::optional<Resumed> resumed_request() { return t_defer == nullptr ? std::nullopt : t_defer->resumed; }

size_t http_threads_of(const HttpLimits& limits) {
  // A few threads beyond the limit write the refusals, so that a full server still answers at once.
  return limits.http_threads > 0 ? limits.http_threads : limits.max_connections + limits.agent_connections + 8;
}

// One accepted connection, on the heap so that it can wait for its next request (or a deferred answer) parked,
// without a thread. Its destructor closes it and gives its seat back, wherever its last owner lets it go.
struct Connection {
  Connection(HttpServer& s, int sock, HttpServer::Seat seat_taken, std::string from, SteadyClock::time_point accepted_at)
      : server(s), fd(sock), seat(seat_taken), address(std::move(from)), accepted(accepted_at),
        ssl(s.tls_, sock), strm(sock, ssl.ssl, s.svr_sock_, s.limits_), idle_until(accepted_at + s.limits_.head_timeout),
        parking(s.parking()) {}
  ~Connection() {
    end_park();
    ssl.finish();
    if (linger) {
      close_lingering(fd, std::chrono::milliseconds(1000));
    } else {
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
    }
    server.release_seat(seat, address);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  // The deferred request's park is over (resumed or closed): its owner is told once.
  void end_park() {
    if (auto fn = std::move(on_end)) {
      on_end = nullptr;
      fn();
    }
  }

  HttpServer& server;
  const int fd;
  const HttpServer::Seat seat;
  const std::string address;
  const SteadyClock::time_point accepted;
  SslConnection ssl;
  DeadlineStream strm;
  bool secured = false;
  size_t served = 0;
  SteadyClock::time_point idle_until;  // the next request must start by then (head_timeout, keep_alive_timeout)
  bool linger = false;
  // A deferred request: its head, run again on resume, its deadline, whose owner to tell when its park ends, and
  // whether its wake came.
  std::optional<std::string> deferred;
  SteadyClock::time_point deferred_until{};
  std::function<void()> on_end;
  std::atomic<bool> woken{false};
  const std::shared_ptr<ConnectionParking> parking;
};

// Connections waiting without a thread: for their next request (readable socket), or for a deferred request's
// wake. One epoll thread watches their sockets and deadlines and hands each back to the pool (resume) or closes
// it. It only moves connections around (an epoll_ctl, a queue push): it cannot fall behind the pool by more than
// the connections that are ready, which queue for a thread like new connections do.
class ConnectionParking {
 public:
  enum class Kind { kIdle, kDeferred };
  explicit ConnectionParking(std::function<void(std::shared_ptr<Connection>)> resume) : resume_(std::move(resume)) {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    evfd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = evfd_;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev);
    thread_ = std::thread([this] { run(); });
  }
  ~ConnectionParking() {
    stop();
    ::close(epfd_);
    ::close(evfd_);
  }
  ConnectionParking(const ConnectionParking&) = delete;
  ConnectionParking& operator=(const ConnectionParking&) = delete;

  // Parks `c` until its socket is readable (idle) or its wake (deferred), or `until`. A stopped parking closes it.
  void park(std::shared_ptr<Connection> c, SteadyClock::time_point until, Kind kind) {
    {
      MutexLock lock(mu_);
      if (stopping_) {
        lock.unlock();
        c.reset();  // closed here, outside the lock
        return;
      }
      if (kind == Kind::kDeferred && c->woken.load()) {
        resume_(std::move(c));  // woken before it got here
      } else {
        const int fd = c->fd;
        epoll_event ev{};
        // A waiting deferred request listens for the client's hang-up only: bytes it sends meanwhile wait for its answer.
        // One-shot: the event that hands a connection back disarms it, so that take() needs no EPOLL_CTL_DEL, and its
        // next park re-arms it with one EPOLL_CTL_MOD (a socket stays in the set, disarmed, until it is closed, which
        // removes it). A socket not in the set (parked for the first time) is added.
        ev.events = (kind == Kind::kIdle ? (EPOLLIN | EPOLLRDHUP) : EPOLLRDHUP) | EPOLLONESHOT;
        ev.data.fd = fd;
        if (::epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) != 0 && (errno != ENOENT || ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0)) {
          lock.unlock();
          c.reset();
          return;
        }
        const bool earliest = deadlines_.empty() || until < deadlines_.begin()->first;
        deadlines_.emplace(until, fd);
        parked_.emplace(fd, Entry{std::move(c), until, kind});
        if (earliest) poke_thread();
      }
    }
  }

  // A deferred request's wake: resumes `c` if it is parked (else park() sees c->woken).
  void wake(const std::shared_ptr<Connection>& c) {
    MutexLock lock(mu_);
    auto it = parked_.find(c->fd);
    if (it == parked_.end() || it->second.c != c || stopping_) return;
    resume_(take(it));
  }

  // Closes every parked connection; later parks close theirs at once.
  void stop() {
    std::vector<std::shared_ptr<Connection>> closing;
    {
      MutexLock lock(mu_);
      if (!stopping_) {
        stopping_ = true;
        poke_thread();
      }
      while (!parked_.empty()) closing.push_back(take(parked_.begin()));
    }
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
    closing.clear();
  }

  size_t size() const {
    MutexLock lock(mu_);
    return parked_.size();
  }

 private:
  struct Entry {
    std::shared_ptr<Connection> c;
    SteadyClock::time_point until;
    Kind kind;
  };

  // How a parked connection leaves: by its own epoll event (which disarmed it) or otherwise (still armed: taken out
  // of the set, so that its socket's next bytes wake nobody while a request thread has it).
  enum class Leaving { kByItsEvent, kOtherwise };
  std::shared_ptr<Connection> take(std::unordered_map<int, Entry>::iterator it, Leaving how = Leaving::kOtherwise) REQUIRES(mu_) {
    std::shared_ptr<Connection> c = std::move(it->second.c);
    switch (how) {
      case Leaving::kByItsEvent: break;
      case Leaving::kOtherwise: ::epoll_ctl(epfd_, EPOLL_CTL_DEL, it->first, nullptr); break;
    }
    deadlines_.erase({it->second.until, it->first});
    parked_.erase(it);
    return c;
  }

  void poke_thread() {
    const uint64_t one = 1;
    (void)!::write(evfd_, &one, sizeof one);
  }

  void run() {
    std::array<epoll_event, 256> events;
    for (;;) {
      int timeout_ms = 1000;
      {
        MutexLock lock(mu_);
        if (stopping_) return;
        if (!deadlines_.empty()) {
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadlines_.begin()->first - SteadyClock::now()).count();
          timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 1000));
        }
      }
      const int n = ::epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), timeout_ms);
      std::vector<std::shared_ptr<Connection>> close, resume;
      {
        MutexLock lock(mu_);
        if (stopping_) return;
        for (int i = 0; i < n; ++i) {
          const int fd = events[static_cast<size_t>(i)].data.fd;
          if (fd == evfd_) {
            uint64_t count = 0;
            (void)!::read(evfd_, &count, sizeof count);
            continue;
          }
          auto it = parked_.find(fd);
          if (it == parked_.end()) continue;
          // Idle: the next request (or the client's goodbye, which the loop reads as such). Deferred: only a hang-up.
          const Kind kind = it->second.kind;
          if (kind == Kind::kIdle) resume.push_back(take(it, Leaving::kByItsEvent));
          else close.push_back(take(it, Leaving::kByItsEvent));
        }
        // Past its deadline an idle connection is closed, a deferred request is run again (and answers).
        const auto now = SteadyClock::now();
        while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
          auto it = parked_.find(deadlines_.begin()->second);
          const Kind kind = it->second.kind;
          if (kind == Kind::kIdle) close.push_back(take(it));
          else resume.push_back(take(it));
        }
      }
      // Handed to the pool outside the lock, so that request threads parking meanwhile do not wait for the
      // pool's. stop() joins this thread before it returns: none is handed over after it.
      for (auto& c : resume) resume_(std::move(c));
      close.clear();  // closed outside the lock
    }
  }

  // Hands a connection to the pool; called under mu_ (or, by the epoll thread, before stop() has joined it), so
  // that none is handed over once stop() has returned (the pool then stops, and is gone after its listen).
  std::function<void(std::shared_ptr<Connection>)> resume_;
  int epfd_ = -1;
  int evfd_ = -1;
  mutable Mutex mu_;
  std::unordered_map<int, Entry> parked_ GUARDED_BY(mu_);
  std::set<std::pair<SteadyClock::time_point, int>> deadlines_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

void ConnectionThreads::enqueue(std::function<void()> fn) {
  IdleThread* wake = nullptr;
  {
    MutexLock lock(mu_);
    jobs_.push_back(std::move(fn));
    if (!idle_.empty()) {
      wake = idle_.back();
      idle_.pop_back();
    } else if (!stopping_ && threads_.size() < max_threads_) {
      threads_.emplace_back([this] { work(); });
    }
  }
  // A busy thread may take the job first; the woken one then finds none and goes idle again.
  if (wake != nullptr) wake->wake.release();
}

void ConnectionThreads::shutdown() {
  if (auto before = std::move(before_shutdown_)) {
    before_shutdown_ = nullptr;
    before();
  }
  std::vector<std::thread> threads;
  std::vector<IdleThread*> idle;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);  // enqueue() starts no thread once stopping: these are all
    idle.swap(idle_);        // a thread that finds the queue empty from now on ends instead of waiting
  }
  for (IdleThread* t : idle) t->wake.release();
  for (auto& t : threads)
    if (t.joinable()) t.join();
}

void ConnectionThreads::work() {
  IdleThread me;
  for (;;) {
    std::function<void()> fn;
    {
      MutexLock lock(mu_);
      while (jobs_.empty()) {
        if (stopping_) return;  // stopping, and nothing left to run
        idle_.push_back(&me);
        lock.unlock();
        me.wake.acquire();  // released once per push: by enqueue() or shutdown()
        lock.lock();
      }
      fn = std::move(jobs_.front());
      jobs_.pop_front();
    }
    fn();
  }
}

HttpServer::HttpServer(HttpLimits limits, SSL_CTX* tls) : limits_(limits), tls_(tls) {
  // Each listen's pool, and the parking that hands connections back to it (and is stopped before it).
  new_task_queue = [this] {
    auto* pool = new ConnectionThreads(http_threads_of(limits_), [this] { parking()->stop(); });
    auto made = std::make_shared<ConnectionParking>([this, pool](std::shared_ptr<Connection> c) {
      pool->enqueue([this, c = std::move(c)]() mutable { serve(std::move(c)); });
    });
    MutexLock lock(parking_mu_);
    parking_ = std::move(made);
    return pool;
  };
  // cpp-httplib writes these into its Keep-Alive answer header; the loop below enforces them.
  set_keep_alive_timeout(std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.keep_alive_timeout).count()));
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  set_pre_routing_handler(refuse_ambiguous_framing);
}

HttpServer::~HttpServer() {
  // The connection threads use the TLS context: stop them first (httplib::Server's destructor would be too late).
  stop();
  if (tls_ != nullptr) SSL_CTX_free(tls_);
}

std::optional<HttpServer::Seat> HttpServer::take_seat(const std::string& address) {
  MutexLock lock(seats_mu_);
  size_t& mine = general_by_address_[address];
  if (general_seats_ < limits_.max_connections && mine < limits_.max_connections_per_address) {
    ++general_seats_;
    ++mine;
    return Seat::kGeneral;
  }
  if (mine == 0) general_by_address_.erase(address);
  if (agent_seats_ < limits_.agent_connections) {
    ++agent_seats_;
    return Seat::kAgent;
  }
  return std::nullopt;
}

void HttpServer::release_seat(Seat seat, const std::string& address) {
  MutexLock lock(seats_mu_);
  switch (seat) {
    case Seat::kGeneral:
      --general_seats_;
      if (auto it = general_by_address_.find(address); it != general_by_address_.end() && --it->second == 0)
        general_by_address_.erase(it);
      return;
    case Seat::kAgent:
      --agent_seats_;
      return;
  }
}

std::shared_ptr<ConnectionParking> HttpServer::parking() const {
  MutexLock lock(parking_mu_);
  return parking_;
}

size_t HttpServer::parked() const {
  auto p = parking();
  return p ? p->size() : 0;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  const auto accepted = SteadyClock::now();
  std::string address;
  int port = 0;
  address_of(sock, /*peer=*/true, address, port);
  const std::optional<Seat> seat = take_seat(address);
  if (!seat) {
    // It may have been an agent's heartbeat: the server counts none as missed (node_silence.h).
    if (on_refused_) on_refused_();
    refuse(sock, tls_, svr_sock_, limits_);
    return false;
  }
  serve(std::make_shared<Connection>(*this, sock, *seat, std::move(address), accepted));
  return true;
}

void HttpServer::serve(std::shared_ptr<Connection> c) {
  DeadlineStream& strm = c->strm;
  // The handshake is part of the first request's read deadline: a client that trickles it is dropped.
  if (!c->secured) {
    c->secured = tls_ == nullptr || (c->ssl.ssl != nullptr && strm.handshake(c->accepted + limits_.read_timeout));
    if (!c->secured) return;
  }
  while (c->served < limits_.max_requests_per_connection) {
    const bool rerun = c->deferred.has_value();
    std::optional<std::string> head;
    if (rerun) {
      // A deferred request, woken or at its deadline: run again from its head.
      c->end_park();
      strm.unread(*c->deferred);
      head = std::move(c->deferred);
      c->deferred.reset();
      strm.begin_request();
    } else {
      if (svr_sock_ == INVALID_SOCKET) return;  // the server stops
      // The first request's head must be complete within head_timeout of the accept; a later one's within
      // head_timeout of its first byte, after at most keep_alive_timeout of quiet, waited parked.
      if (!strm.may_have_request()) {
        if (SteadyClock::now() >= c->idle_until) return;
        const auto until = c->idle_until;
        auto parking = c->parking;
        parking->park(std::move(c), until, ConnectionParking::Kind::kIdle);
        return;
      }
      strm.begin_request();
      const auto head_deadline = c->served == 0 ? c->accepted + limits_.head_timeout : SteadyClock::now() + limits_.head_timeout;
      if (!strm.read_head(head_deadline)) return;
      if (c->seat == Seat::kAgent) {
        if (!agent_request(strm.request_line())) {
          const std::string answer = refusal(limits_);
          (void)strm.write(answer.data(), answer.size());
          c->linger = true;
          return;
        }
        strm.limit_read_deadline(head_deadline);
      }
      if (deferrable(strm.request_line())) {
        head = strm.head_bytes();
        if (head && announces_body(*head)) head.reset();
      }
    }
    t_close_after_response = false;
    bool closed = false;
    bool ret = false;
    const bool last = c->served + 1 == limits_.max_requests_per_connection;
    if (!head) {
      ret = process_request(strm, last, closed, offer_gzip_only);
    } else {
      // The answer is kept until the handler has said whether it defers.
      DeferSlot slot;
      slot.wake = [weak = std::weak_ptr<Connection>(c)] {
        if (auto conn = weak.lock()) {
          conn->woken.store(true);
          conn->parking->wake(conn);
        }
      };
      if (rerun) slot.resumed = Resumed{c->deferred_until, c->woken.load()};
      c->woken.store(false);
      CaptureStream capture(strm);
      t_defer = &slot;
      ret = process_request(capture, last, closed, offer_gzip_only);
      t_defer = nullptr;
      if (slot.deferred && !t_close_after_response) {
        c->deferred = std::move(head);
        c->deferred_until = slot.until;
        c->on_end = std::move(slot.on_end);
        auto parking = c->parking;
        parking->park(std::move(c), slot.until, ConnectionParking::Kind::kDeferred);
        return;
      }
      if (slot.on_end) slot.on_end();
      const std::string& out = capture.out();
      for (size_t off = 0; off < out.size();) {
        const ssize_t n = strm.write(out.data() + off, out.size() - off);
        if (n <= 0) {
          ret = false;
          break;
        }
        off += static_cast<size_t>(n);
      }
    }
    ++c->served;
    if (t_close_after_response) {
      c->linger = true;
      return;
    }
    if (!ret || closed || strm.timed_out()) return;
    c->idle_until = SteadyClock::now() + limits_.keep_alive_timeout;
  }
}

}  // namespace allot::server
