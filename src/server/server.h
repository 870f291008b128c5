#pragma once
// `allot server`: the HTTP API (docs/api.md) in front of the single writer (writer.h) and its store.
// start() replays the journal, then serves; stop() stops accepting, answers what is queued and returns.
#include <atomic>
#include <memory>
#include <thread>

#include "server/outside/admission_checker.h"
#include "server/outside/dispatcher.h"
#include "server/options.h"
#include "server/writer/writer.h"
#include "store/store.h"

namespace httplib {
class Server;
}

namespace allot::server {

class LogStore;
class HttpServer;
struct Api;
class ReadSeats;
class WebhookSender;

class Server {
 public:
  // Opens the store options.database names (default sqlite:<data_dir>/allot.db). Both overloads first check
  // the transport: --listen, the TLS files, and no plain HTTP beyond loopback unless options.insecure.
  static Result<std::unique_ptr<Server>> open(ServerOptions options);
  // With a store the caller made (tests use store::MemStore to inject failures).
  static Result<std::unique_ptr<Server>> open(ServerOptions options, std::unique_ptr<store::Store> store);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Replays the journal, binds the listen address and serves (HTTPS when options.tls_cert is set) on
  // background threads. Fails with a message when the journal cannot be replayed or the address cannot be
  // bound (kInternal; the port in use by another process among them).
  Status start();
  // The port bound (the one chosen when the listen address asked for port 0).
  int port() const { return port_; }
  // "http://HOST:PORT", or https:// when serving TLS.
  std::string url() const;
  void stop();
  Writer::Stats stats() const { return writer_->stats(); }
  Writer::ViewStats view_stats() const { return writer_->view_stats(); }
  // The seats of job listings (read_seats.h), for tests and benchmarks. REQUIRES: started.
  ReadSeats& listings();
  // Connections parked without a thread (idle keep-alive, waiting watches: http_server.h), for tests and benchmarks.
  size_t connections_parked() const;

 private:
  Server(ServerOptions options, std::unique_ptr<store::Store> store);
  static Result<std::unique_ptr<Server>> make(ServerOptions options, std::unique_ptr<store::Store> store);
  // http_ as plain HTTP, or as HTTPS with the TLS identity of the options.
  Status make_http();
  // The HTTP server's refusals reach the writer's liveness (node_silence.h).
  void note_refusals(HttpServer& http);

  ServerOptions options_;
  std::unique_ptr<EventLog> events_;
  std::unique_ptr<AuthGate> auth_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<WebhookSender> webhooks_;  // after writer_ (it asks the writer whether it leads), before api_
  std::unique_ptr<AdmissionChecker> checker_;  // after writer_ (it hands the writer its answers)
  std::unique_ptr<Dispatcher> dispatcher_;  // after writer_ (it reads the view and journals its steps there)
  std::unique_ptr<LogStore> logs_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<httplib::Server> http_;
  HttpServer* parking_http_ = nullptr;  // http_, as the HttpServer it is
  std::thread listener_;
  std::atomic<bool> listener_done_{false};  // listen_after_bind() returned (stop() waits for it or for the loop)
  std::string host_;
  int port_ = 0;
  int listen_socket_ = -1;
};

}  // namespace allot::server
