// Capacity plans (core/model/plans.h): administrators create and delete them, every reader lists them. A plan's steps
// (Active, Ending, Expired) are taken by the writer when their time comes (step_plans), each one journaled.
#include <algorithm>

#include "config/spec_yaml.h"
#include "core/model/plans.h"
#include <spdlog/spdlog.h>

#include "server/api/api.h"
#include "server/lifecycle/plan_steps.h"
#include "server/views/views.h"
#include "view/state_json.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;
Error no_plan(const ClusterState& s, const std::string& name) {
  return Error::not_found("no plan named " + name + "; plans: " + s.plan_names());
}

// A plan's start and end arrive as RFC 3339 times, or as Unix seconds (what a client before RFC 3339 times
// sent); the plan parser, shared with scenario files, takes seconds.
Status unix_times(YAML::Node& doc) {
  if (!doc.IsMap()) return ok_status();  // parse_plan says what is wrong with it
  for (const char* key : {"start", "end"}) {
    YAML::Node v = doc[key];
    if (!v || !v.IsScalar()) continue;
    auto t = view::parse_time_input(v.Scalar(), std::string("request body: ") + key);
    if (!t) return t.error();
    doc[key] = *t;
  }
  return ok_status();
}

// A plan as `who` may read it: the jobs of a team it may not see (views.h, job_names_for) are listed as "a job of
// team T", as job_refs.h writes such references; the count stays, the names do not.
json plan_view(const ClusterState& s, const Plan& p, const view::SeesTeamJobs& sees) {
  json out = view::plan_json(s, p, view::Times::kRfc3339);
  if (!sees) return out;
  for (json& job : out["jobs"]) {
    const Job* j = s.find_job(job.get<std::string>());
    if (!j) continue;  // plan_json lists jobs of the state: never so
    const std::string& team = s.teams[j->team.index()].spec.name;
    if (!sees(team)) job = "a job of team " + team;
  }
  return out;
}

Render plan_render(const std::string& name, const auth::Caller& who, int status = 200) {
  return [name, who, status](const ServerState& st) -> Reply {
    const Plan* p = st.cluster.find_plan(name);
    if (!p) return error_reply(no_plan(st.cluster, name));
    return json_reply(status, plan_view(st.cluster, *p, job_names_for(who)));
  };
}

}  // namespace

void add_plan_routes(Routes& http, Api& api) {
  // Readers (admin, member, viewer): plans are the cluster's, like its nodes.
  route(http, api, "GET", "/v1/plans", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [who](Txn&) -> Result<Render> {
      return Render([who](const ServerState& st) {
        std::vector<const Plan*> plans;
        for (const Plan& p : st.cluster.plans)
          if (!p.deleted) plans.push_back(&p);
        std::sort(plans.begin(), plans.end(), [](const Plan* a, const Plan* b) { return a->spec.name < b->spec.name; });
        json out = json::array();
        const view::SeesTeamJobs sees = job_names_for(who);
        for (const Plan* p : plans) out.push_back(plan_view(st.cluster, *p, sees));
        return json_reply(200, out);
      });
    });
  });
  route(http, api, "GET", R"(/v1/plans/([^/]+))", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req), who](Txn& txn) -> Result<Render> {
      if (!txn.cluster().find_plan(name)) return no_plan(txn.cluster(), name);
      return plan_render(name, who);
    });
  });
  // Admin only: a plan changes quota and brings nodes in and out.
  route(http, api, "POST", "/v1/plans", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return refuse(api, who, req, res, doc.error());
    if (auto st = unix_times(*doc); !st) return refuse(api, who, req, res, st.error());
    auto plan = parse_plan(*doc, api.catalog, kRequestBody);
    if (!plan) return refuse(api, who, req, res, plan.error());
    run(api, who, req, res, [&api, plan = std::move(*plan), who](Txn& txn) -> Result<Render> {
      if (plan.end <= txn.now())
        return Error::invalid("plan " + plan.name + " ends at " + view::rfc3339(plan.end) + ", which has passed (now " +
                              view::rfc3339(txn.now()) + ")");
      if (auto st = txn.apply(store::CreatePlan{plan}); !st) return st.error();
      step_plans(txn, api.options);  // a plan whose start has come is Active in the same answer
      return plan_render(plan.name, who, 201);
    });
  });
  route(http, api, "DELETE", R"(/v1/plans/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      if (!txn.cluster().find_plan(name)) return no_plan(txn.cluster(), name);
      if (auto st = txn.apply(store::DeletePlan{name}); !st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

}  // namespace allot::server
