// Users' endpoints that change a job after it was submitted, besides cancelling it: hold and release a waiting
// job, move it to another priority class, delete a finished one (docs/api.md, "Jobs"). Each is one journaled
// operation; members act only on their own teams' jobs.
#include "server/api/api.h"
#include "server/api/arrays.h"
#include "server/writer/retention.h"
#include "server/views/views.h"
#include "view/job_refs.h"
#include "view/state_json.h"

namespace allot::server {
namespace {

using nlohmann::json;

Render changed_job_render(const std::string& name, const auth::Caller& who) {
  return [name, who](const ServerState& st) -> Reply {
    const Job* j = st.cluster.find_job(name);
    if (!j) return error_reply(Error::not_found("no job named " + name));
    json v = view::job_json(st.cluster, *j, /*with_history=*/true, view::Times::kRfc3339);
    view::hide_job_refs(v, *j, job_names_for(who));
    return json_reply(200, v);
  };
}

// The job named `name`, when `who` may change it: an admin, or a member of its team.
Status may_change(Txn& txn, const auth::Caller& who, const std::string& name, const std::string& what) {
  const Job* j = txn.cluster().find_job(name);
  if (!j) return job_not_found(txn.cluster(), name);
  const std::string& team = txn.cluster().teams[j->team.index()].spec.name;
  if (!who.acts_for_team(team))
    return refuse_job(txn, who, name, denied(who, what + " job " + name, "an admin token or a member token of team " + team));
  return ok_status();
}

void hold_routes(Routes& http, Api& api) {
  for (bool held : {true, false}) {
    const std::string verb = held ? "hold" : "release";
    route(http, api, "POST", "/v1/jobs/([^/]+)/" + verb, Access::kMember,
          [&api, held](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
            run(api, who, req, res, [name = param(req), who, held](Txn& txn) -> Result<Render> {
              if (auto st = may_change(txn, who, name, held ? "holding" : "releasing"); !st) return st.error();
              if (auto st = txn.apply(store::HoldJob{name, held}); !st) return st.error();
              return changed_job_render(name, who);
            });
          });
  }
}

void priority_route(Routes& http, Api& api) {
  route(http, api, "PUT", R"(/v1/jobs/([^/]+)/priority)", Access::kMember,
        [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
          if (auto bad = check_content_type(req)) return answer(res, *bad);
          auto body = json_body(req);
          if (!body) return answer(res, error_reply(body.error()));
          if (!body->contains("priority") || !(*body)["priority"].is_string())
            return answer(res, error_reply(Error::invalid(
                                   "request body: expected {\"priority\": \"CLASS\"} (\"\" for none, the lowest)")));
          run(api, who, req, res, [name = param(req), who, cls = (*body)["priority"].get<std::string>()](Txn& txn) -> Result<Render> {
            if (auto st = may_change(txn, who, name, "changing the priority of"); !st) return st.error();
            if (auto st = txn.apply(store::SetJobPriority{name, cls}); !st) return st.error();
            return changed_job_render(name, who);
          });
        });
}

void delete_route(Routes& http, Api& api) {
  route(http, api, "DELETE", R"(/v1/jobs/([^/]+))", Access::kMember,
        [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
          run(api, who, req, res, [&api, name = param(req), who](Txn& txn) -> Result<Render> {
            // An array (server/api/arrays.h): its tasks, cancelled where active, all deleted.
            if (!txn.cluster().find_job(name)) {
              auto a = array_for(txn, who, name, /*change=*/true);
              if (!a) return a.error();
              if (*a) return delete_array(txn, api, who, **a);
            }
            if (auto st = may_change(txn, who, name, "deleting"); !st) return st.error();
            const Job& doomed = *txn.cluster().find_job(name);
            json gone = view::job_json(txn.cluster(), doomed, /*with_history=*/false, view::Times::kRfc3339);
            view::hide_job_refs(gone, doomed, job_names_for(who));
            if (auto st = txn.apply(store::DeleteJob{name}); !st) return st.error();
            // Its logs go too, so that a new job of the same name starts with none; but only once the journal
            // holds the deletion: after a failed write the job is rebuilt from the journal, logs and all.
            if (auto st = txn.after_commit([&api, name] { (void)api.logs.remove(name); }); !st) return st.error();
            return Render([gone = std::move(gone)](const ServerState&) -> Reply { return json_reply(200, gone); });
          });
        });
}

}  // namespace

void add_job_change_routes(Routes& http, Api& api) {
  hold_routes(http, api);
  priority_route(http, api);
  delete_route(http, api);
}

}  // namespace allot::server
