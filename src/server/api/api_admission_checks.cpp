// Admission checks (docs/api.md, "Admission checks"): put and deleted by admins; listed whole (URLs included) by
// admins and viewers, and to a member only the checks that take its teams' jobs, without URLs or makers.
#include <algorithm>

#include "server/outside/admission_checks.h"
#include "server/api/api.h"

namespace allot::server {
namespace {

using nlohmann::json;

// Whether `who` reads every check whole (its URL, its maker), or only those that take its teams' jobs.
bool reads_whole(const auth::Caller& who) { return who.role == auth::Role::kAdmin || who.role == auth::Role::kViewer; }

bool member_sees(const auth::Caller& who, const store::AdmissionCheckRecord& c) {
  if (c.teams.empty()) return true;
  return std::any_of(c.teams.begin(), c.teams.end(), [&](const std::string& t) { return who.in_team(t); });
}

}  // namespace

void add_admission_check_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/admission-checks", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [who](Txn&) -> Result<Render> {
      return Render([who](const ServerState& st) {
        json out = json::array();
        for (const auto& [name, c] : st.admission_checks)
          if (reads_whole(who) || member_sees(who, c.check)) out.push_back(admission_check_json(c, reads_whole(who)));
        return json_reply(200, out);
      });
    });
  });
  route(http, api, "PUT", R"(/v1/admission-checks/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto rec = parse_admission_check_request(param(req), *body);
    if (!rec) return answer(res, error_reply(rec.error()));
    run(api, who, req, res, [c = std::move(*rec)](Txn& txn) mutable -> Result<Render> {
      const ServerState& st = txn.view();
      for (const auto& t : c.teams)
        if (!st.cluster.find_team(t) || st.removed_teams.count(t))
          return Error::not_found("admission check " + c.name + ": teams: no team named " + t + " (teams: " + st.cluster.team_names() + ")");
      for (const auto& p : c.priority_classes)
        if (st.cluster.priority_weight(p) < 0)
          return Error::not_found("admission check " + c.name + ": priority_classes: no priority class named " + p +
                                  " (classes: " + st.cluster.priority_class_names() + ")");
      const bool exists = st.admission_checks.count(c.name) > 0;
      if (!exists && st.admission_checks.size() >= kMaxAdmissionChecks)
        return Error::precondition("admission check " + c.name + ": the cluster has " + std::to_string(kMaxAdmissionChecks) +
                                   " admission checks already, the most it may have; delete one first");
      const std::string name = c.name;
      if (auto s = txn.apply(store::PutAdmissionCheck{std::move(c)}); !s) return s.error();
      return Render([name, exists](const ServerState& st) {
        return json_reply(exists ? 200 : 201, admission_check_json(st.admission_checks.at(name), true));
      });
    });
  });
  route(http, api, "DELETE", R"(/v1/admission-checks/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      if (!txn.view().admission_checks.count(name))
        return Error::not_found("no admission check named " + name + " (allot admission-check list shows them)");
      if (auto s = txn.apply(store::DeleteAdmissionCheck{name}); !s) return s.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

}  // namespace allot::server
