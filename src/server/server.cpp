#include "server/server.h"

#include <spdlog/spdlog.h>

#include <sys/socket.h>

#include <filesystem>

#include "server/api.h"
#include "server/http_server.h"
#include "server/log_store.h"

namespace allot::server {

int64_t system_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

struct HostPort {
  std::string host;
  int port = 0;
};

Result<HostPort> parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Error::invalid("--listen wants HOST:PORT (as in 127.0.0.1:7070), got '" + listen + "'");
  HostPort hp{listen.substr(0, colon), 0};
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') hp.host = hp.host.substr(1, hp.host.size() - 2);
  const std::string port = listen.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535)
    return Error::invalid("--listen: the port must be 0..65535, got '" + port + "'");
  hp.port = std::stoi(port);
  return hp;
}

// Fills in the JSON error body for the answers cpp-httplib makes itself (no route, oversize body, bad HTTP).
void error_body(const ServerOptions& options, const httplib::Request& req, httplib::Response& res) {
  if (!res.body.empty()) return;
  Reply r;
  switch (res.status) {
    case 404: r = error_reply(404, "NotFound", "no such endpoint: " + req.method + " " + req.path + " (see docs/api.md)"); break;
    case 413:
      r = error_reply(413, "PayloadTooLarge", "the request body is larger than the limit of " +
                                                   std::to_string(options.max_body_bytes) + " bytes");
      break;
    default: r = error_reply(res.status, res.status >= 500 ? "Internal" : "InvalidArgument", "the HTTP request could not be handled"); break;
  }
  res.set_content(r.body, r.content_type.c_str());
}

}  // namespace

Result<std::unique_ptr<Server>> Server::open(ServerOptions options) {
  // Check the flags before the store creates anything on disk.
  if (auto hp = parse_listen(options.listen); !hp) return hp.error();
  if (options.database.empty()) options.database = "sqlite:" + options.data_dir + "/allot.db";
  auto store = store::open_store(options.database);
  if (!store) return store.error();
  return open(std::move(options), std::move(*store));
}

Result<std::unique_ptr<Server>> Server::open(ServerOptions options, std::unique_ptr<store::Store> store) {
  if (options.master_port_min < 1 || options.master_port_max > 65535 || options.master_port_min > options.master_port_max)
    return Error::invalid("the master port range must lie within 1..65535 and not be empty");
  return std::unique_ptr<Server>(new Server(std::move(options), std::move(store)));
}

Server::Server(ServerOptions options, std::unique_ptr<store::Store> store) : options_(std::move(options)) {
  events_ = std::make_unique<EventLog>(options_.event_ring);
  writer_ = std::make_unique<Writer>(options_, std::move(store), *events_);
  logs_ = std::make_unique<LogStore>(options_.data_dir + "/logs", options_.log_bytes_per_replica);
}

Server::~Server() { stop(); }

Status Server::start() {
  auto hp = parse_listen(options_.listen);
  if (!hp) return hp.error();
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) return Error::internal("cannot create the data directory " + options_.data_dir + ": " + ec.message());
  if (auto st = writer_->recover(); !st) return st;
  api_ = std::unique_ptr<Api>(new Api{*writer_, *events_, *logs_, options_, ClusterState().catalog});

  http_ = std::make_unique<HttpServer>(HttpLimits{.read_timeout = options_.read_timeout,
                                                   .write_timeout = options_.write_timeout,
                                                   .keep_alive_timeout = options_.keep_alive_timeout,
                                                   .max_connections = options_.max_connections});
  http_->set_payload_max_length(options_.max_body_bytes);  // Content-Length bodies; Routes limits the others
  http_->set_tcp_nodelay(true);  // answers are small; Nagle would hold them back by a delayed-ACK round
  // cpp-httplib listens with a backlog of 5, so a burst of new connections (many agents, many clients) has
  // SYNs dropped and retried a second later. Keep the listening socket and raise the backlog after binding:
  // listen() on a listening socket only changes its backlog.
  http_->set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_socket_ = sock;
  });
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) { error_body(options_, req, res); });
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    answer(res, error_reply(Error::internal("unexpected failure")));
  });
  Routes routes(*http_, options_.max_body_bytes);
  add_watch_routes(routes, *api_);
  add_config_routes(routes, *api_);
  add_job_routes(routes, *api_);
  add_node_routes(routes, *api_);
  add_agent_routes(routes, *api_);
  routes.add_fallbacks();  // last: it takes every request with a body that no route above took

  host_ = hp->host;
  if (hp->port == 0) {
    port_ = http_->bind_to_any_port(hp->host);
    if (port_ < 0) return Error::internal("cannot listen on " + options_.listen);
  } else {
    if (!http_->bind_to_port(hp->host, hp->port)) return Error::internal("cannot listen on " + options_.listen + " (in use?)");
    port_ = hp->port;
  }
  if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
  writer_->start();
  listener_ = std::thread([this] { http_->listen_after_bind(); });
  spdlog::info("allot server listening on {} (store {})", url(), options_.database.empty() ? "custom" : options_.database);
  return ok_status();
}

std::string Server::url() const { return "http://" + host_ + ":" + std::to_string(port_); }

void Server::stop() {
  // Stop accepting, release long-polling readers, let the request threads finish (the writer still answers
  // them), then stop the writer.
  if (http_) http_->stop();
  events_->shutdown();
  if (listener_.joinable()) listener_.join();
  writer_->stop();
}

}  // namespace allot::server
