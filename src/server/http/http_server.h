#pragma once
// The HTTP server under the API, hardened against clients that are slow on purpose. cpp-httplib 0.11.4 only
// bounds each single read by a timeout, so a client that trickles one byte every few seconds keeps its
// connection (and the thread serving it) forever, and its thread pool queues every further connection
// behind the stalled ones: 64 half-sent requests locked every other client out. HttpServer keeps
// cpp-httplib's parsing and routing (process_request) but owns each connection's loop:
//   - a request (line, headers and body) must have arrived within `read_timeout` of its first byte, and an
//     answer must have been written within `write_timeout`; past either the connection is dropped;
//   - an idle keep-alive connection is closed after `keep_alive_timeout`;
//   - a request's head (line and headers) must be complete within `head_timeout`: of the accept for a
//     connection's first request (so a connection that sends nothing, or trickles, is closed soon), of its first
//     byte for a later one;
//   - at most `max_connections` connections are open at once, and at most
//     `max_connections_per_address` of them from one address; past either, a connection takes one of
//     `agent_connections` seats reserved for agents, where only agents' requests (/v1/agents/...) are served, each
//     within `head_timeout` as a whole (after Kubernetes' API Priority and Fairness: seats per class, so an
//     anonymous flood cannot take the agents' heartbeats with it). Past those too, a connection is answered
//     503 and closed at once instead of waiting behind the others, and on_refused is told (a heartbeat may have
//     been among them: node_silence.h);
//   - a handler can ask for the connection to be closed after its answer (close_after_response), which is
//     how a refused oversize body is not read to its end.
// Threads serve requests, not connections (at most `http_threads` of them): a connection that waits for its next
// request (after the accept, or idle on keep-alive) with nothing buffered is parked on one epoll thread
// (ConnectionParking, below) and its thread returns to the pool; when the client sends, the connection goes back
// on the pool and its loop continues; at its deadline (head_timeout after the accept, keep_alive_timeout when
// idle), or when the client hangs up, it is closed and its seat released. A request whose handler defers it
// (defer_request(): an agent's watch that has nothing to answer yet) is parked the same way until its wake or its
// own deadline, then run again; so thousands of idle keep-alive connections and waiting watches hold no thread.
// TLS: given an OpenSSL server context, each connection is an SSL stream over the same deadlines: the
// handshake must finish within `read_timeout` of the accept (a client that trickles its ClientHello is
// dropped like one that trickles its headers), then requests are read and answered as over plain TCP.
// cpp-httplib's own SSLServer is not used: its private connection loop only bounds each single read.
// Past the connection limit a TLS client still gets its 503, after a handshake bounded by
// `refusal_handshake_timeout` (a plain 503 on a TLS connection would read as a protocol error).
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <unordered_map>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

typedef struct ssl_ctx_st SSL_CTX;  // NOLINT: OpenSSL's own declaration, repeated to keep <openssl/ssl.h> out

namespace allot::server {

struct HttpLimits {
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  std::chrono::milliseconds keep_alive_timeout{5000};
  std::chrono::milliseconds head_timeout{5000};
  size_t max_connections = 512;
  size_t max_connections_per_address = 256;
  size_t agent_connections = 64;
  size_t max_requests_per_connection = 100000;
  std::chrono::milliseconds refusal_handshake_timeout{1000};
  // Threads serving requests at once; 0: max_connections + agent_connections + 8, what a thread per connection
  // took before connections parked (so a small server behaves as before).
  size_t http_threads = 0;
};

// The threads an HttpServer of these limits serves requests on.
size_t http_threads_of(const HttpLimits& limits);

// Threads for connections: one per connection being served, started when none is idle, up to `max_threads`
// (beyond that, connections wait for a thread; HttpServer keeps that from happening by refusing
// connections past its limit, which takes a thread only for as long as writing the 503 does).
//
// A job wakes one idle thread, the one that went idle last, and only that one, after the lock is released. At
// thousands of heartbeats a second each is a job (a parked connection handed back), and a shared condition
// variable woke a thread of the pool's hundreds at random (cold stack and caches), signalled under the lock it
// then had to wait for (bench/RESULTS.md, "10,000 agents: one thread woken, the warmest").
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  // `before_shutdown` runs first in shutdown() (the parked connections are closed: nothing resumes on a pool
  // that stops).
  explicit ConnectionThreads(size_t max_threads, std::function<void()> before_shutdown = {})
      : max_threads_(max_threads), before_shutdown_(std::move(before_shutdown)) {}
  ~ConnectionThreads() override { shutdown(); }
  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;
  // Threads waiting for a job now (tests).
  size_t idle() const {
    MutexLock lock(mu_);
    return idle_.size();
  }

 private:
  // A thread waiting for a job, on its own stack; in idle_ until it is woken. The semaphore spins a little
  // (sched_yield) before it sleeps; a mutex and condition variable of its own, which sleep at once, measured
  // slower (bench/RESULTS.md).
  struct IdleThread {
    std::binary_semaphore wake{0};
  };
  void work();

  const size_t max_threads_;
  std::function<void()> before_shutdown_;
  mutable Mutex mu_;
  std::deque<std::function<void()>> jobs_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
  std::vector<IdleThread*> idle_ GUARDED_BY(mu_);  // the last to go idle at the back: woken first
  bool stopping_ GUARDED_BY(mu_) = false;
};

class ConnectionParking;
struct Connection;

class HttpServer final : public httplib::Server {
 public:
  // Plain HTTP when `tls` is null; otherwise HTTPS with this context, which the server then owns.
  explicit HttpServer(HttpLimits limits, SSL_CTX* tls = nullptr);
  ~HttpServer() override;
  // Called (on a connection's thread) for every connection refused past every seat. REQUIRES: before listening.
  void set_on_refused(std::function<void()> fn) { on_refused_ = std::move(fn); }
  // Connections parked now, waiting for their next request or a deferred answer (tests, benchmarks).
  size_t parked() const;

 private:
  enum class Seat { kGeneral, kAgent };
  friend struct Connection;
  bool process_and_close_socket(socket_t sock) override;
  // Runs `c`'s loop on this thread until it parks (returns with `c` handed to the parking) or ends (closed).
  void serve(std::shared_ptr<Connection> c);
  std::optional<Seat> take_seat(const std::string& address);
  void release_seat(Seat seat, const std::string& address);

  const HttpLimits limits_;
  SSL_CTX* const tls_;
  std::function<void()> on_refused_;
  // Made with each listen's pool (new_task_queue, on the listening thread), before the first connection is
  // accepted; read by connections and, for the counters, by any thread: hence the lock.
  std::shared_ptr<ConnectionParking> parking() const EXCLUDES(parking_mu_);
  mutable Mutex parking_mu_;
  std::shared_ptr<ConnectionParking> parking_ GUARDED_BY(parking_mu_);
  Mutex seats_mu_;
  size_t general_seats_ GUARDED_BY(seats_mu_) = 0;
  size_t agent_seats_ GUARDED_BY(seats_mu_) = 0;
  std::unordered_map<std::string, size_t> general_by_address_ GUARDED_BY(seats_mu_);
};

// From a handler: close this connection once the answer is written (the rest of the request is not read).
void close_after_response();

// Deferred requests. The server offers deferral for an agent's watch (GET /v1/agents/{name}/changes without a
// body): a handler that has nothing to answer yet calls defer_request() instead of blocking its thread. The server
// then drops this run's answer, parks the connection (holding no thread) until the returned wake is called (from
// any thread, once or more, even before the handler returns) or `until`, and runs the same request again on a
// pool thread; that run sees resumed_request(). `on_end` runs once when the park ends: the connection resumed or
// was closed (the client went away, the server stopped). Null when this request cannot be deferred: the handler
// then waits on its own thread as before.
using Wake = std::function<void()>;
Wake defer_request(std::chrono::steady_clock::time_point until, std::function<void()> on_end);
// From a handler that called defer_request() and then found its answer ready after all: answer now, no park.
// (`on_end` then runs when the answer is written.)
void undefer_request();
struct Resumed {
  std::chrono::steady_clock::time_point until;  // the deadline the first run deferred to
  bool woken = false;                           // its wake came (else the deadline did)
};
// In a handler: set when this run is the rerun of a deferred request.
std::optional<Resumed> resumed_request();

}  // namespace allot::server
