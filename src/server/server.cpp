#include "server/server.h"

#include <sys/resource.h>

#include "server/writer/data_files.h"
#include "store/sqlite_store.h"

#include <spdlog/spdlog.h>

#include <openssl/ssl.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/model/spec.h"
#include "server/api/api.h"
#include "server/writer/bootstrap.h"
#include "server/http/listen_address.h"
#include "server/http/http_server.h"
#include "server/lifecycle/log_store.h"
#include "server/http/tls_identity.h"
#include "server/outside/webhook_rules.h"

namespace allot::server {

int64_t system_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

// The transport flags, checked before anything touches the store: a valid --listen, --tls-cert and --tls-key
// together and loadable, and no plain HTTP on an address other machines reach unless the operator insists.
Status check_transport(const ServerOptions& o) {
  auto addr = parse_listen(o.listen);
  if (!addr) return addr.error();
  if (o.tls_cert.empty() != o.tls_key.empty())
    return Error::invalid("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither for plain HTTP");
  if (!o.tls_cert.empty()) return check_tls_identity(o.tls_cert, o.tls_key);
  if (!o.insecure && !is_loopback_host(addr->host))
    return Error::invalid("refusing to serve plain HTTP on " + o.listen +
                          ": other machines can reach that address, and tokens, job commands and environment would "
                          "cross the network unencrypted; serve HTTPS with --tls-cert FILE --tls-key FILE, listen on "
                          "loopback (127.0.0.1), or pass --insecure to accept the risk");
  return ok_status();
}

// --max-watches leaves connections for heartbeats: a server whose every connection may be held by a watch would
// turn away the heartbeats that keep its nodes alive.
Status check_watch_limit(const ServerOptions& o) {
  if (!o.max_watches || *o.max_watches < o.max_connections) return ok_status();
  return Error::invalid("--max-watches " + std::to_string(*o.max_watches) + " is too many for --max-connections " +
                        std::to_string(o.max_connections) + ": it must be 0.." + std::to_string(o.max_connections - 1) +
                        ", because each agent's watch holds a connection for its whole wait and the agents' heartbeats "
                        "need connections too (0: no agent watches, all learn of work at their heartbeats; unset: half "
                        "of --max-connections)");
}

// The flags, checked before anything touches the store.
// Every open connection is a file descriptor: the soft limit is raised to the hard one, and a hard limit too low
// for the connections the flags allow is refused at start rather than met as failed accepts under load.
Status check_file_limit(const ServerOptions& o) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return ok_status();
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  // The store, journal, logs and webhooks need descriptors of their own besides the connections.
  constexpr rlim_t kSpare = 256;
  const rlim_t need = static_cast<rlim_t>(o.max_connections + o.agent_connections) + kSpare;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return ok_status();
  return Error::invalid("--max-connections " + std::to_string(o.max_connections) + " and --agent-connections " +
                        std::to_string(o.agent_connections) + " need " + std::to_string(need) +
                        " file descriptors (one per connection, " + std::to_string(kSpare) +
                        " for the store, logs and the rest), but this process may open at most " +
                        std::to_string(lim.rlim_cur) + " (RLIMIT_NOFILE, hard limit " + std::to_string(lim.rlim_max) +
                        "): raise it (ulimit -n, LimitNOFILE= in a systemd unit) or lower --max-connections");
}

Status check_flags(const ServerOptions& o) {
  if (auto st = check_transport(o); !st) return st;
  if (auto st = check_file_limit(o); !st) return st;
  if (auto st = check_host_patterns(o.webhooks.hosts); !st) return st;
  return check_watch_limit(o);
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

// cpp-httplib only says that binding failed; bind_problem() finds out why.
std::string bind_failure(const std::string& host, int port) {
  std::string problem = bind_problem(host, port);
  return problem.empty() ? "cannot listen on " + host_port(host, port) : problem;
}

std::string default_checkpoint_dir(const std::string& data_dir) {
  return std::filesystem::absolute(std::filesystem::path(data_dir) / "checkpoints").lexically_normal().string();
}

}  // namespace

Result<std::unique_ptr<Server>> Server::open(ServerOptions options) {
  // Check the flags before the store creates anything on disk, and that the port is free: a second server
  // started by mistake on the same port would also open the same journal. start() checks again when it binds.
  if (auto st = check_flags(options); !st) return st.error();
  if (auto addr = parse_listen(options.listen); addr->port != 0)
    if (auto problem = bind_problem(addr->host, addr->port); !problem.empty()) return Error::internal(problem);
  if (options.database.empty()) options.database = "sqlite:" + options.data_dir + "/allot.db";
  const std::string checkpoints = options.checkpoint_dir.empty() ? default_checkpoint_dir(options.data_dir) : options.checkpoint_dir;
  if (auto st = secure_data_files({options.data_dir, checkpoints, store::sqlite_path_of(options.database)}); !st) return st.error();
  auto store = store::open_store(options.database);
  if (!store) return store.error();
  return make(std::move(options), std::move(*store));
}

Result<std::unique_ptr<Server>> Server::open(ServerOptions options, std::unique_ptr<store::Store> store) {
  if (auto st = check_flags(options); !st) return st.error();
  return make(std::move(options), std::move(store));
}

Result<std::unique_ptr<Server>> Server::make(ServerOptions options, std::unique_ptr<store::Store> store) {
  if (options.master_port_min < 1 || options.master_port_max > 65535 || options.master_port_min > options.master_port_max)
    return Error::invalid("the master port range must lie within 1..65535 and not be empty");
  if (options.checkpoint_dir.empty()) options.checkpoint_dir = default_checkpoint_dir(options.data_dir);
  return std::unique_ptr<Server>(new Server(std::move(options), std::move(store)));
}

Server::Server(ServerOptions options, std::unique_ptr<store::Store> store) : options_(std::move(options)) {
  events_ = std::make_unique<EventLog>(options_.event_ring);
  auth_ = std::make_unique<AuthGate>();
  writer_ = std::make_unique<Writer>(options_, std::move(store), *events_, *auth_);
  webhooks_ = std::make_unique<WebhookSender>(options_.webhooks, *events_, [w = writer_.get()] { return w->leading(); }, options_.clock);
  writer_->set_on_webhooks([sender = webhooks_.get()](std::shared_ptr<const WebhookTable> t) { sender->set_table(std::move(t)); });
  checker_ = std::make_unique<AdmissionChecker>(
      options_.admission_checks, [w = writer_.get()](Command cmd) { return w->call(std::move(cmd), CallContext{kServerActor, std::nullopt}); },
      [w = writer_.get()] { return w->leading(); }, options_.clock);
  writer_->set_on_check_asks([checker = checker_.get()](std::vector<CheckAsk> asks) { checker->set_asks(std::move(asks)); });
  dispatcher_ = std::make_unique<Dispatcher>(options_.multicluster, options_.catalog, *writer_, options_.clock);
  logs_ = std::make_unique<LogStore>(options_.data_dir + "/logs", options_.log_bytes_per_replica);
  // Retention: a compacted job's logs go once the compaction is durable, as a deleted job's do, and so does its
  // checkpoint directory when nothing was saved in it (one the job filled is the user's, kept).
  writer_->set_on_compacted([logs = logs_.get(), ckpt = options_.checkpoint_dir](const std::vector<std::string>& jobs) {
    for (const auto& job : jobs) {
      (void)logs->remove(job);
      std::error_code ec;  // not empty, or not there: left as it is
      if (check_name(NameKind::kJob, job)) std::filesystem::remove(std::filesystem::path(ckpt) / job, ec);
    }
  });
}

Server::~Server() { stop(); }

Status Server::start() {
  auto hp = parse_listen(options_.listen);
  if (!hp) return hp.error();
  std::error_code ec;
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) return Error::internal("cannot create the data directory " + options_.data_dir + ": " + ec.message());
  if (auto st = writer_->recover(); !st) return st;
  checker_->start();  // the replay handed it the asks of the runs still waiting: they are asked again at once
  webhooks_->start();  // from the last event the replay published: a restart does not deliver old events again
  api_ = std::unique_ptr<Api>(new Api{*writer_, *auth_, *events_, *logs_, options_, options_.catalog, ReadSeats(listing_seats(options_), options_.listing_nice), *webhooks_, *checker_, dispatcher_.get()});

  if (auto st = make_http(); !st) return st;
  http_->set_payload_max_length(options_.max_body_bytes);  // Content-Length bodies; Routes limits the others
  http_->set_tcp_nodelay(true);  // answers are small; Nagle would hold them back by a delayed-ACK round
  // cpp-httplib's default socket options set SO_REUSEPORT, which lets a second server bind the same port and
  // take half of the connections. SO_REUSEADDR alone lets a restart bind at once past the old connections in
  // TIME_WAIT, while a port another process listens on stays refused.
  // cpp-httplib also listens with a backlog of 5, so a burst of new connections (many agents, many clients)
  // has SYNs dropped and retried a second later. Keep the listening socket and raise the backlog after
  // binding: listen() on a listening socket only changes its backlog.
  http_->set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
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
  add_token_routes(routes, *api_);
  add_dashboard_routes(routes, *api_);
  add_plan_routes(routes, *api_);
  add_reservation_routes(routes, *api_);
  add_webhook_routes(routes, *api_);
  add_admission_check_routes(routes, *api_);
  add_usage_routes(routes, *api_);
  add_worker_routes(routes, *api_);
  routes.add_fallbacks();  // last: it takes every request with a body that no route above took

  host_ = hp->host;
  if (hp->port == 0) {
    port_ = http_->bind_to_any_port(hp->host);
    if (port_ < 0) return Error::internal(bind_failure(hp->host, 0));
  } else {
    if (!http_->bind_to_port(hp->host, hp->port)) return Error::internal(bind_failure(hp->host, hp->port));
    port_ = hp->port;
  }
  if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
  writer_->set_advertise_url(options_.advertise_url.empty() ? url() : options_.advertise_url);
  writer_->step_leadership(/*force=*/true);  // on a shared store: lead now if nobody does
  writer_->set_public_url(url());
  writer_->start();
  dispatcher_->start();  // a manager's (docs/multicluster.md); it dispatches only while this server leads
  const std::string token_file = options_.admin_token_file.empty() ? options_.data_dir + "/admin-token" : options_.admin_token_file;
  if (!writer_->leading()) {
    // A standby writes nothing; the leader made (or makes) the first admin token.
    listener_done_ = false;
    listener_ = std::thread([this] {
      http_->listen_after_bind();
      listener_done_ = true;
    });
    spdlog::info("allot server listening on {} (store {}) as a standby; the leader is {}", url(), options_.database,
                 writer_->leader_url().empty() ? "not known yet" : writer_->leader_url());
    return ok_status();
  }
  auto boot = ensure_admin_token(*writer_, token_file);
  if (!boot) {
    writer_->stop();
    return boot.error();
  }
  if (boot->created)
    spdlog::info("made the first admin token and wrote it to {} (readable by its owner only): "
                 "export ALLOT_TOKEN=$(cat {}) to use it; make other tokens with `allot token create`",
                 boot->file, boot->file);
  listener_done_ = false;
  listener_ = std::thread([this] {
    http_->listen_after_bind();
    listener_done_ = true;
  });
  spdlog::info("allot server listening on {} (store {})", url(), options_.database.empty() ? "custom" : options_.database);
  return ok_status();
}

Status Server::make_http() {
  const HttpLimits limits{.read_timeout = options_.read_timeout,
                          .write_timeout = options_.write_timeout,
                          .keep_alive_timeout = options_.keep_alive_timeout,
                          .head_timeout = options_.head_timeout,
                          .max_connections = options_.max_connections,
                          .max_connections_per_address = connections_per_address(options_),
                          .agent_connections = options_.agent_connections,
                          .http_threads = options_.http_threads.value_or(0)};
  if (options_.tls_cert.empty()) {
    auto http = std::make_unique<HttpServer>(limits);
    note_refusals(*http);
    parking_http_ = http.get();
    http_ = std::move(http);
    return ok_status();
  }
  // HTTPS goes through the same HttpServer (http_server.h), so TLS clients meet the same whole-request
  // deadlines and connection limit as plain ones; only the context is made here.
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Error::internal("cannot create a TLS context for --tls-cert " + options_.tls_cert);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
  if (auto loaded = load_tls_identity(*ctx, options_.tls_cert, options_.tls_key); !loaded) {
    SSL_CTX_free(ctx);
    return loaded;
  }
  auto http = std::make_unique<HttpServer>(limits, ctx);
  note_refusals(*http);
  parking_http_ = http.get();
  http_ = std::move(http);
  return ok_status();
}

void Server::note_refusals(HttpServer& http) {
  http.set_on_refused([writer = writer_.get(), clock = options_.clock] { writer->liveness().note_refused(clock()); });
}

std::string Server::url() const { return url_for(options_.tls_cert.empty() ? "http" : "https", host_, port_); }

ReadSeats& Server::listings() { return api_->listings; }

size_t Server::connections_parked() const { return parking_http_ ? parking_http_->parked() : 0; }

void Server::stop() {
  // Stop accepting, release long-polling readers, let the request threads finish (the writer still answers
  // them), then stop the writer.
  // cpp-httplib's stop() does nothing until the listener thread has entered its accept loop, which would then
  // accept forever: a stop right after start() waits for the loop (or for the thread to have given up) first.
  if (listener_.joinable())
    while (!http_->is_running() && !listener_done_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (http_) http_->stop();
  if (dispatcher_) dispatcher_->stop();  // before the writer: it may be journaling a step
  if (checker_) checker_->stop();  // before the writer: an asker may be handing it an answer
  if (webhooks_) webhooks_->stop();  // before the event log's shutdown, which would wake its reader at once, forever
  events_->shutdown();
  writer_->heartbeats().shutdown();  // agents watching for changes (heartbeat_board.h)
  if (listener_.joinable()) listener_.join();
  writer_->stop();
}

}  // namespace allot::server
