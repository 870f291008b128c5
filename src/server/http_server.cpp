#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>

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

// A connection's socket with deadlines instead of per-read timeouts. Reads of one request share one
// deadline, set when its first byte arrives; writes of one answer share another, set at its first write.
// Waits are cut into short slices so that a stopping server (its listening socket closed) is noticed.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, const std::atomic<socket_t>& listener, const HttpLimits& limits)
      : fd_(fd), listener_(listener), limits_(limits) {}

  // Waits up to the keep-alive timeout for the next request to start. False when the client went away or
  // stayed quiet, or the server stops.
  bool next_request() {
    writing_ = false;
    if (off_ == len_ && !wait(POLLIN, SteadyClock::now() + limits_.keep_alive_timeout, /*stop_aware=*/true)) return false;
    read_deadline_ = SteadyClock::now() + limits_.read_timeout;
    return true;
  }

  // Whether a read gave up because the request was not sent in time (the connection is then dropped).
  bool timed_out() const { return timed_out_; }

  bool is_readable() const override { return off_ < len_ || wait(POLLIN, read_deadline_, true); }
  bool is_writable() const override { return wait(POLLOUT, writing_ ? write_deadline_ : SteadyClock::now() + limits_.write_timeout, false); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ < len_) {
      const size_t n = std::min(size, len_ - off_);
      std::memcpy(ptr, buf_.data() + off_, n);
      off_ += n;
      return static_cast<ssize_t>(n);
    }
    // Small reads (the request line and headers come a byte at a time) go through the buffer.
    const bool direct = size >= buf_.size();
    for (;;) {
      if (!wait(POLLIN, read_deadline_, true)) {
        timed_out_ = true;
        return -1;
      }
      ssize_t n = ::recv(fd_, direct ? ptr : buf_.data(), direct ? size : buf_.size(), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
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
      if (!wait(POLLOUT, write_deadline_, false)) return -1;
      ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
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
  const std::atomic<socket_t>& listener_;
  const HttpLimits& limits_;
  SteadyClock::time_point read_deadline_{};
  SteadyClock::time_point write_deadline_{};
  bool writing_ = false;
  bool timed_out_ = false;
  std::array<char, 4096> buf_{};
  size_t off_ = 0, len_ = 0;
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

// Past the connection limit: a 503 written without waiting, and the connection closed.
void refuse(int fd, size_t limit) {
  const std::string body = R"({"error": {"code": "Unavailable", "message": "the server is serving its limit of )" +
                           std::to_string(limit) + R"( connections (allot server --max-connections); retry shortly"}})";
  const std::string answer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n" + body;
  (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  close_lingering(fd, std::chrono::milliseconds(0));
}

}  // namespace

void close_after_response() { t_close_after_response = true; }

void ConnectionThreads::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back(std::move(fn));
  if (jobs_.size() > idle_ && threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
  cv_.notify_one();
}

void ConnectionThreads::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void ConnectionThreads::work() {
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stopping, and nothing left to run
      fn = std::move(jobs_.front());
      jobs_.pop_front();
    }
    fn();
  }
}

HttpServer::HttpServer(HttpLimits limits) : limits_(limits) {
  // A few threads beyond the limit write the refusals, so that a full server still answers at once.
  const size_t threads = limits_.max_connections + 8;
  new_task_queue = [threads] { return new ConnectionThreads(threads); };
  // cpp-httplib writes these into its Keep-Alive answer header; the loop below enforces them.
  set_keep_alive_timeout(std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.keep_alive_timeout).count()));
  set_keep_alive_max_count(limits_.max_requests_per_connection);
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  struct Slot {
    std::atomic<size_t>& n;
    const size_t taken;
    explicit Slot(std::atomic<size_t>& a) : n(a), taken(++a) {}
    ~Slot() { --n; }
  } slot(active_);
  if (slot.taken > limits_.max_connections) {
    refuse(sock, limits_.max_connections);
    return false;
  }
  DeadlineStream strm(sock, svr_sock_, limits_);
  bool ret = false;
  bool linger = false;
  for (size_t served = 0; served < limits_.max_requests_per_connection; ++served) {
    if (!strm.next_request()) break;
    t_close_after_response = false;
    bool closed = false;
    ret = process_request(strm, served + 1 == limits_.max_requests_per_connection, closed, offer_gzip_only);
    if (t_close_after_response) {
      linger = true;
      break;
    }
    if (!ret || closed || strm.timed_out()) break;
  }
  if (linger) {
    close_lingering(sock, std::chrono::milliseconds(1000));
  } else {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
  }
  return ret;
}

}  // namespace allot::server
