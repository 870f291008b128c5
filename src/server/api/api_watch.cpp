// Endpoints for watching the server: health, the event stream (long-poll) and Prometheus metrics.
#include "server/api/api.h"
#include "server/views/metrics.h"
#include "server/version.h"
#include "server/views/views.h"
#include "view/job_refs.h"
#include "view/times.h"

namespace allot::server {

void add_watch_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/health", Access::kPublic, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    // role and leader: which of several servers on one PostgreSQL takes changes (docs/deployment.md).
    const bool leads = api.writer.leading();
    nlohmann::json out = {{"ok", true}, {"version", kVersion}, {"role", leads ? "leader" : "standby"}};
    if (std::string leader = api.writer.leader_url(); !leader.empty()) out["leader"] = leader;
    answer(res, json_reply(200, out));
  });
  route(http, api, "GET", "/v1/events", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    auto since = query_int(req, "since", 0, int64_t{1} << 62);
    if (!since) return answer(res, error_reply(since.error()));
    auto wait = query_int(req, "wait", 0, 60);
    if (!wait) return answer(res, error_reply(wait.error()));
    auto page = api.events.read(static_cast<uint64_t>(*since), std::chrono::seconds(*wait));
    nlohmann::json events = nlohmann::json::array();
    const view::SeesTeamJobs sees = job_names_for(who);
    for (const Event& e : page.events) {
      // Members follow their own teams' jobs; other teams' jobs they see only in aggregate (teams, metrics).
      if (who.role == auth::Role::kMember && !e.team.empty() && !who.in_team(e.team)) continue;
      // Token events (ids, roles, the teams a token acts for) are for the roles that read the whole cluster.
      if (who.role == auth::Role::kMember && e.audience == EventAudience::kWholeClusterReaders) continue;
      nlohmann::json j = {{"seq", e.seq}, {"at", view::rfc3339(e.at)}, {"kind", e.kind}, {"message", view::hide_job_refs(e.message, sees)}};
      if (!e.job.empty()) j["job"] = e.job;
      if (!e.node.empty()) j["node"] = e.node;
      if (e.preemption) j["preemption"] = view::preemption_json(*e.preemption, sees);
      events.push_back(std::move(j));
    }
    nlohmann::json out = {{"events", events}, {"next", page.next}};
    if (page.truncated) out["truncated"] = true;
    answer(res, json_reply(200, out));
  });
  route(http, api, "GET", "/metrics", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [&api](Txn&) -> Result<Render> {
      return Render([&api](const ServerState& st) {
        return Reply{200, render_metrics(st) + render_webhook_metrics(api.webhooks.counters()) +
                         render_admission_checker_metrics(api.checks.counters()), "text/plain; version=0.0.4"};
      });
    });
  });
}

}  // namespace allot::server
