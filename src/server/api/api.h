#pragma once
// What the HTTP handlers share, and the helpers every endpoint uses: reading a body (JSON or YAML, with the
// content type checked), answering, and keeping exceptions out of cpp-httplib. Handlers parse on their own
// request thread and hand the writer a command; nothing but the writer thread touches the state.
#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>

#include "config/yaml_read.h"
#include "core/model/catalog.h"
#include "server/http/access.h"
#include "server/outside/admission_checker.h"
#include "server/http/auth_gate.h"
#include "server/writer/event_log.h"
#include "server/lifecycle/log_store.h"
#include "server/options.h"
#include "server/http/read_seats.h"
#include "server/http/routes.h"
#include "server/views/usage_ledger.h"
#include "server/outside/webhook_sender.h"
#include "server/outside/dispatcher.h"
#include "server/writer/writer.h"

namespace allot::server {

struct Api {
  Writer& writer;
  AuthGate& auth;
  EventLog& events;
  LogStore& logs;
  const ServerOptions& options;
  Catalog catalog;  // fixed for the server's life: bodies are parsed against it off the writer thread
  ReadSeats listings;  // job listings rendered at once (read_seats.h, ServerOptions::max_listings)
  WebhookSender& webhooks;  // deliveries' counters and each webhook's last delivery (webhook_sender.h)
  const AdmissionChecker& checks;  // the HTTP checks' counters (admission_checker.h), for /metrics
  Dispatcher* dispatcher = nullptr;  // a manager's worker clusters (dispatcher.h); idle when it has none
};

void answer(httplib::Response& res, const Reply& reply);

// 415 unless the body is JSON or YAML, said so by its Content-Type. Types a browser page may send across origins
// without asking first (text/plain, forms) are refused, so a page cannot post a body a server would take.
std::optional<Reply> check_content_type(const httplib::Request& req);
// The body as one YAML document (JSON is YAML); errors name the request body and its line.
Result<YAML::Node> yaml_body(const httplib::Request& req);
// Where the readers of a request body's fields say a fault is.
inline const YamlContext kRequestBody{"request body", "", 0};
// The body as JSON, for the agents' endpoints.
Result<nlohmann::json> json_body(const httplib::Request& req);
// Rejects keys of a JSON object other than `allowed`, naming the first one and the allowed ones.
Status only_keys(const nlohmann::json& j, std::initializer_list<const char*> allowed, const std::string& what);

// The {name} of a route with one or more path parameters; match 1 is the first.
inline std::string param(const httplib::Request& req, size_t i = 1) { return req.matches[i].str(); }
// A non-negative integer query parameter, or `fallback` when absent; an Error when malformed.
Result<int64_t> query_int(const httplib::Request& req, const char* key, int64_t fallback, int64_t max);

// Wraps a handler so that no exception reaches cpp-httplib: anything thrown becomes a 500 with its message.
httplib::Server::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> h);

// The writer's context for a request: whom its records name and, for a change, its audit record, which names the
// client's address and the object the request named: `target` when given (the job a submission names, the node a
// registration names), else the path's first parameter.
CallContext call_context(const auth::Caller& who, const httplib::Request& req, const std::string& target = "");
// Answers with a refusal; a refused change goes through the writer so that the audit trail records it.
void refuse(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, const Error& why,
            const std::string& target = "");
// Runs a command on the writer in the caller's name and answers with what it renders, or with its error. A GET's
// command must only read: it is answered from the writer's published view when that is current (Writer::read).
void run(Api& api, const auth::Caller& who, const httplib::Request& req, httplib::Response& res, Command cmd,
         const std::string& target = "");

// The route groups, one file each. Routes reads request bodies with the size limit (routes.h).
void add_config_routes(Routes& http, Api& api);  // policy, priority classes, teams, apply
void add_job_routes(Routes& http, Api& api);     // jobs, cancel, logs
void add_job_change_routes(Routes& http, Api& api);  // hold, release, priority, delete (api_job_changes.cpp)
void add_node_routes(Routes& http, Api& api);    // nodes, cordon, drain, health, topology
void add_agent_routes(Routes& http, Api& api);   // register, heartbeat, logs
void add_watch_routes(Routes& http, Api& api);   // health, events, metrics
void add_token_routes(Routes& http, Api& api);   // tokens, audit
void add_dashboard_routes(Routes& http, Api& api);
void add_worker_routes(Routes& http, Api& api);  // a manager's worker clusters (api_workers.cpp)  // the dashboard's files and the JSON its pages read
void add_plan_routes(Routes& http, Api& api);    // capacity plans
void add_reservation_routes(Routes& http, Api& api);  // reservations of existing nodes
void add_webhook_routes(Routes& http, Api& api);  // webhooks (api_webhooks.cpp)
void add_admission_check_routes(Routes& http, Api& api);  // admission checks (api_admission_checks.cpp)
void add_usage_routes(Routes& http, Api& api);    // usage reports (api_usage.cpp)
// A usage report as GET /v1/usage answers it (api_usage.cpp); the dashboard's Usage page reads the same.
nlohmann::json usage_report_json(const UsageReport& r);

}  // namespace allot::server
