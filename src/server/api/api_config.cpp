// Administrators' endpoints: the cluster policy, priority classes, teams and `allot apply`.
#include <algorithm>

#include "config/spec_yaml.h"
#include "server/api/api.h"
#include "server/views/views.h"
#include "view/instance_type_json.h"
#include "view/state_json.h"

namespace allot::server {
namespace {

using nlohmann::json;
Render policy_render() {
  return [](const ServerState& st) { return json_reply(200, policy_json(st.cluster.policy)); };
}

const Team* live_team(const ServerState& st, const std::string& name) {
  const Team* t = st.cluster.find_team(name);
  return t && !st.removed_teams.count(name) ? t : nullptr;
}

Error no_team(const ServerState& st, const std::string& name) {
  std::string names;
  for (const Team& t : st.cluster.teams)
    if (!st.removed_teams.count(t.spec.name)) names += (names.empty() ? "" : ", ") + t.spec.name;
  return Error::not_found("no team named " + name + "; teams: " + (names.empty() ? "(none defined)" : names));
}

Render team_render(const std::string& name, int status = 200) {
  return [name, status](const ServerState& st) -> Reply {
    const Team* t = live_team(st, name);
    if (!t) return error_reply(no_team(st, name));
    return json_reply(status, view::team_json(st.cluster, *t));
  };
}

// Validates teams against an empty cluster with the same catalog: a team's spec does not depend on other
// objects, so what passes here cannot fail on the live state.
// `groups`: the cohort groups the teams may name (the applied policy's, or the cluster's when the apply has none).
Status check_teams(const Catalog& catalog, const std::vector<GroupSpec>& groups, const std::vector<TeamSpec>& teams) {
  ClusterState scratch(catalog);
  PolicySpec with_groups;
  with_groups.groups = groups;
  if (auto st = set_policy(scratch, with_groups); !st) return st;
  for (const TeamSpec& t : teams) {
    auto st = upsert_team(scratch, t);
    if (!st) return st;
  }
  return ok_status();
}

void policy_routes(Routes& http, Api& api) {
  // The instance types nodes may have: the built-in ones and the policy file's (`allot server --instance-types`),
  // by name. Fixed for the server's life, so answered without the writer. Role: any reader.
  route(http, api, "GET", "/v1/instance-types", Access::kReader, [&api](const auth::Caller&, const httplib::Request&, httplib::Response& res) {
    std::vector<const InstanceType*> types;
    for (const auto& t : api.catalog.types()) types.push_back(&t);
    std::sort(types.begin(), types.end(), [](const InstanceType* a, const InstanceType* b) { return a->name < b->name; });
    nlohmann::json out = nlohmann::json::array();
    for (const InstanceType* t : types) out.push_back(view::instance_type_json(*t));
    answer(res, json_reply(200, out));
  });
  route(http, api, "GET", "/v1/policy", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> { return policy_render(); });
  });
  route(http, api, "PUT", "/v1/policy", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    auto policy = parse_policy(*doc, kRequestBody);
    if (!policy) return answer(res, error_reply(policy.error()));
    run(api, who, req, res, [p = std::move(*policy)](Txn& txn) -> Result<Render> {
      auto st = txn.apply(store::SetPolicy{p});
      if (!st) return st.error();
      return policy_render();
    });
  });
  route(http, api, "GET", "/v1/priority-classes", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) { return json_reply(200, policy_json(st.cluster.policy)["priority_classes"]); });
    });
  });
  route(http, api, "PUT", R"(/v1/priority-classes/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    auto fields = config::Fields::open(kRequestBody, config::root(*doc, kRequestBody), {"name", "weight"});
    if (!fields) return answer(res, error_reply(fields.error()));
    const std::string name = param(req);
    if (auto st = check_name(NameKind::kPriorityClass, name); !st) return answer(res, error_reply(st.error()));
    if (auto n = fields->get("name")) {
      auto given = config::read_name(kRequestBody, *n);
      if (!given) return answer(res, error_reply(given.error()));
      if (*given != name)
        return answer(res, error_reply(Error::invalid("request body names priority class " + *given + " but the path names " + name)));
    }
    auto w = fields->need(kRequestBody, "weight");
    if (!w) return answer(res, error_reply(w.error()));
    auto weight = config::read_int(kRequestBody, *w, 0, 100);
    if (!weight) return answer(res, error_reply(weight.error()));
    run(api, who, req, res, [name, weight = static_cast<int>(*weight)](Txn& txn) -> Result<Render> {
      PolicySpec p = txn.cluster().policy;
      bool found = false;
      for (auto& pc : p.priority_classes)
        if (pc.name == name) pc.weight = weight, found = true;
      if (!found) p.priority_classes.push_back({name, weight});
      auto st = txn.apply(store::SetPolicy{p});
      if (!st) return st.error();
      return Render([name, weight](const ServerState&) { return json_reply(200, {{"name", name}, {"weight", weight}}); });
    });
  });
  route(http, api, "DELETE", R"(/v1/priority-classes/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      PolicySpec p = txn.cluster().policy;
      auto& pcs = p.priority_classes;
      auto it = std::find_if(pcs.begin(), pcs.end(), [&](const PriorityClassSpec& pc) { return pc.name == name; });
      if (it == pcs.end())
        return Error::not_found("no priority class named " + name + "; priority classes: " + txn.cluster().priority_class_names());
      pcs.erase(it);
      auto st = txn.apply(store::SetPolicy{p});
      if (!st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

void team_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/teams", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) { return json_reply(200, teams_json(st)); });
    });
  });
  route(http, api, "GET", R"(/v1/teams/([^/]+))", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn&) -> Result<Render> { return team_render(name); });
  });
  route(http, api, "PUT", R"(/v1/teams/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    const std::string name = param(req);
    if (!(*doc)["name"]) (*doc)["name"] = name;  // the name is optional in the body: the path gives it
    auto team = parse_team(*doc, api.catalog, kRequestBody);
    if (!team) return answer(res, error_reply(team.error()));
    if (team->name != name)
      return answer(res, error_reply(Error::invalid("request body names team " + team->name + " but the path names " + name)));
    run(api, who, req, res, [t = std::move(*team)](Txn& txn) -> Result<Render> {
      auto st = txn.apply(store::UpsertTeam{t});
      if (!st) return st.error();
      return team_render(t.name);
    });
  });
  route(http, api, "DELETE", R"(/v1/teams/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      if (!live_team(txn.state(), name)) return no_team(txn.state(), name);
      auto st = txn.apply(store::RemoveTeam{name});
      if (!st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

// POST /v1/apply: a scenario file's policy and teams sections, all or nothing.
void apply_route(Routes& http, Api& api) {
  route(http, api, "POST", "/v1/apply", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return answer(res, error_reply(doc.error()));
    auto fields = config::Fields::open(kRequestBody, config::root(*doc, kRequestBody), {"name", "policy", "teams"});
    if (!fields) {
      Error e = fields.error();
      e.message += " (apply takes a scenario file's policy and teams; nodes join through agents or POST /v1/nodes, "
                   "jobs through POST /v1/jobs)";
      return answer(res, error_reply(e));
    }
    std::optional<PolicySpec> policy;
    if (auto p = fields->get("policy")) {
      auto parsed = parse_policy(p->node, config::sub(kRequestBody, *p));
      if (!parsed) return answer(res, error_reply(parsed.error()));
      policy = std::move(*parsed);
    }
    std::vector<TeamSpec> teams;
    if (auto t = fields->get("teams")) {
      auto parsed = parse_teams(t->node, api.catalog, config::sub(kRequestBody, *t));
      if (!parsed) return answer(res, error_reply(parsed.error()));
      teams = std::move(*parsed);
    }
    if (!policy && teams.empty()) return answer(res, error_reply(Error::invalid("request body has neither policy nor teams")));
    run(api, who, req, res, [&api, policy, teams](Txn& txn) -> Result<Render> {
      // Teams first on a scratch state, then the policy on the live one (which may refuse it because of active
      // jobs): after both checks nothing can fail, so the whole apply takes effect or none of it does.
      if (auto st = check_teams(api.catalog, policy ? policy->groups : txn.cluster().policy.groups, teams); !st) return st.error();
      if (policy)
        if (auto st = txn.apply(store::SetPolicy{*policy}); !st) return st.error();
      for (const TeamSpec& t : teams)
        if (auto st = txn.apply(store::UpsertTeam{t}); !st) return st.error();
      std::vector<std::string> names;
      for (const TeamSpec& t : teams) names.push_back(t.name);
      return Render([names](const ServerState& st) {
        json out = {{"policy", policy_json(st.cluster.policy)}, {"teams", json::array()}};
        for (const auto& n : names)
          if (const Team* t = st.cluster.find_team(n)) out["teams"].push_back(view::team_json(st.cluster, *t));
        return json_reply(200, out);
      });
    });
  });
}

}  // namespace

void add_config_routes(Routes& http, Api& api) {
  policy_routes(http, api);
  team_routes(http, api);
  apply_route(http, api);
}

}  // namespace allot::server
