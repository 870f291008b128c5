// The web dashboard (docs/dashboard.md): its files at / and /dashboard/NAME, and the JSON its pages read under
// /v1/dashboard. The files are public (they hold no data; the page asks for a token and sends it as a bearer
// header like any client); every JSON endpoint needs a reader token and answers members in aggregate, except
// the queue and the cluster's recent failures, which list a member's own teams' jobs only.
#include <memory>

#include "dashboard/assets.h"
#include "server/api/api.h"
#include "server/views/dashboard_views.h"

namespace allot::server {
namespace {

constexpr int64_t kMaxQueuePage = 500;

void serve_asset(const std::string& path, httplib::Response& res) {
  const dashboard::Asset* a = dashboard::find_asset(path);
  if (!a) return answer(res, error_reply(Error::not_found("the dashboard has no file " + path)));
  // The page runs only its own scripts and talks only to this server; nothing may frame it.
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                 "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-cache");  // a new server binary brings new files
  res.status = 200;
  res.set_content(std::string(a->body), std::string(a->content_type).c_str());
}

void asset_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/", Access::kPublic, [](const auth::Caller&, const httplib::Request&, httplib::Response& res) {
    serve_asset("/index.html", res);
  });
  route(http, api, "GET", R"(/dashboard/([A-Za-z0-9_-]+\.[a-z]+))", Access::kPublic,
        [](const auth::Caller&, const httplib::Request& req, httplib::Response& res) { serve_asset("/" + param(req), res); });
}

void summary_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/dashboard/cluster", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [&api, who](Txn& txn) -> Result<Render> {
      return Render([&api, who, now = txn.now()](const ServerState& st) {
        nlohmann::json out = cluster_summary(st, now, who);
        out["events_last"] = api.events.last();  // where a page starts following the event stream
        // Who the page acts as: its filters offer a member only its own teams.
        out["caller"] = {{"role", auth::role_name(who.role)}, {"teams", who.teams}};
        return json_reply(200, out);
      });
    });
  });
  route(http, api, "GET", "/v1/dashboard/teams", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) { return json_reply(200, teams_summary(st)); });
    });
  });
  route(http, api, "GET", "/v1/dashboard/topology", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) { return json_reply(200, topology_summary(st)); });
    });
  });
}

void queue_route(Routes& http, Api& api) {
  // The order is cached across requests until the state changes; only Renders (the writer thread) touch it.
  auto cache = std::make_shared<QueueCache>();
  route(http, api, "GET", "/v1/dashboard/queue", Access::kReader, [&api, cache](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    QueueQuery q;
    q.team = req.get_param_value("team");
    q.priority = req.get_param_value("priority");
    q.job = req.get_param_value("job");
    if (req.has_param("state")) {
      q.state = parse_job_state(req.get_param_value("state"));
      if (!q.state || (*q.state != JobState::kPending && *q.state != JobState::kSuspended))
        return answer(res, error_reply(Error::invalid("query parameter state: the queue holds Pending and Suspended jobs, not '" +
                                                      printable(req.get_param_value("state"), 40) + "'")));
    }
    auto offset = query_int(req, "offset", 0, int64_t{1} << 40);
    if (!offset) return answer(res, error_reply(offset.error()));
    auto limit = query_int(req, "limit", 100, kMaxQueuePage);
    if (!limit) return answer(res, error_reply(limit.error()));
    if (*limit == 0) return answer(res, error_reply(Error::invalid("query parameter limit must be 1.." + std::to_string(kMaxQueuePage))));
    q.offset = static_cast<size_t>(*offset);
    q.limit = static_cast<size_t>(*limit);
    run(api, who, req, res, [cache, q, who](Txn& txn) -> Result<Render> {
      if (!q.team.empty() && !txn.cluster().find_team(q.team)) return Error::not_found("no team named " + q.team);
      return Render([cache, q, who, now = txn.now()](const ServerState& st) {
        refresh_queue(*cache, st, now);
        return json_reply(200, queue_page(*cache, st, q, who, now));
      });
    });
  });
}

}  // namespace

void add_dashboard_routes(Routes& http, Api& api) {
  asset_routes(http, api);
  summary_routes(http, api);
  queue_route(http, api);
}

}  // namespace allot::server
