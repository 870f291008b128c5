// Administrators' endpoints for tokens (make, list, revoke) and the audit trail. Secrets are shown once, in
// the answer that makes a token; lists show ids, roles and scopes, never secrets or their hashes.
#include "auth/token.h"
#include "core/quota/user_limits.h"
#include "server/api/api.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;

constexpr int64_t kMaxTtlSeconds = int64_t{10} * 365 * 24 * 3600;

json token_json(const TokenTable& all, const TokenInfo& t) {
  json o = {{"id", t.token.id},           {"role", auth::role_name(t.token.role)},       {"teams", t.token.teams},
            {"created_at", view::rfc3339(t.created_at)}, {"created_by", t.created_by}, {"revoked", t.revoked}};
  if (!t.token.node.empty()) o["node"] = t.token.node;
  if (t.token.role == auth::Role::kAgentJoin) {
    if (t.token.max_nodes > 0) o["max_nodes"] = t.token.max_nodes;
    o["nodes_joined"] = joins_of(all, t.token.id);
  }
  if (!t.token.joined_with.empty()) o["joined_with"] = t.token.joined_with;
  if (t.token.expires_at) o["expires_at"] = view::rfc3339(t.token.expires_at);
  if (t.revoked) o["revoked_at"] = view::rfc3339(t.revoked_at);
  if (!t.token.description.empty()) o["description"] = t.token.description;
  if (!t.token.user.empty()) o["user"] = t.token.user;
  return o;
}

// The request to make a token, checked against what each role may carry.
Result<store::TokenRecord> parse_token_request(const json& b) {
  if (auto st = only_keys(b, {"role", "teams", "node", "ttl_s", "description", "max_nodes", "user"}, "token"); !st) return st.error();
  if (!b.contains("role") || !b["role"].is_string())
    return Error::invalid("token: role is required; roles: " + auth::role_list());
  const std::string role = b["role"].get<std::string>();
  auto r = auth::parse_role(role);
  if (!r) return Error::invalid("token: unknown role '" + role + "'; roles: " + auth::role_list());
  store::TokenRecord t;
  t.role = *r;
  if (b.contains("teams")) {
    if (!b["teams"].is_array()) return Error::invalid("token: teams must be a list of team names");
    for (const auto& team : b["teams"]) {
      if (!team.is_string() || team.get<std::string>().empty()) return Error::invalid("token: teams must be a list of team names");
      t.teams.push_back(team.get<std::string>());
    }
  }
  if (b.contains("node")) {
    if (!b["node"].is_string()) return Error::invalid("token: node must be a node name");
    t.node = b["node"].get<std::string>();
  }
  if (b.contains("description")) {
    if (!b["description"].is_string() || b["description"].get<std::string>().size() > 256)
      return Error::invalid("token: description must be a text of at most 256 characters");
    t.description = b["description"].get<std::string>();
  }
  if (*r == auth::Role::kMember && t.teams.empty())
    return Error::invalid("token: a member token needs at least one team (--team NAME)");
  if ((*r == auth::Role::kAdmin || *r == auth::Role::kAgent || *r == auth::Role::kAgentJoin) && !t.teams.empty())
    return Error::invalid("token: an " + role + " token has no teams");
  if (*r == auth::Role::kAgent && t.node.empty())
    return Error::invalid("token: an agent token is bound to one node (--node NAME); agents usually get theirs by "
                          "joining with an agent-join token");
  if (*r != auth::Role::kAgent && *r != auth::Role::kAgentJoin && !t.node.empty())
    return Error::invalid("token: only an agent token, or an agent-join token made for one node, names a node");
  if (!t.node.empty())
    if (auto st = check_name(NameKind::kNode, t.node); !st) return Error::invalid("token: " + st.error().message);
  if (b.contains("max_nodes")) {
    const json& v = b["max_nodes"];
    if (*r != auth::Role::kAgentJoin) return Error::invalid("token: only an agent-join token has max_nodes");
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1'000'000)
      return Error::invalid("token: max_nodes must be a whole number 1..1000000 (the nodes the join token may register)");
    t.max_nodes = static_cast<int>(v.get<int64_t>());
    if (!t.node.empty() && t.max_nodes != 1)
      return Error::invalid("token: a join token made for node " + t.node + " registers that one node (max_nodes 1)");
  }
  // The user a person's token acts for (core/quota/user_limits.h): its jobs carry it, per-user limits apply to it.
  if (b.contains("user")) {
    if (!b["user"].is_string()) return Error::invalid("token: user must be a user name");
    if (*r == auth::Role::kAgent || *r == auth::Role::kAgentJoin)
      return Error::invalid("token: only an admin, member or viewer token acts for a user");
    t.user = b["user"].get<std::string>();
    if (auto st = check_user_name(t.user, "token"); !st) return st.error();
  }
  // A join token made for one node registers it once.
  if (*r == auth::Role::kAgentJoin && !t.node.empty()) t.max_nodes = 1;
  return t;
}

// A join token for one node (`allot node adopt NAME`) is made only for a name an agent can take: none whose
// agent holds a live credential (that agent registers with it), none retired by a replacement.
Status check_adoptable(Txn& txn, const std::string& node) {
  for (const auto& [id, t] : *txn.state().tokens)
    if (!t.revoked && t.token.role == auth::Role::kAgent && t.token.node == node)
      return Error::precondition("node " + node + " has a live agent credential (token " + id +
                                 "), with which its agent registers; revoke it first (allot token revoke " + id + ")");
  if (auto it = txn.state().retired.find(node); it != txn.state().retired.end() && !txn.cluster().find_node(node))
    return Error::precondition("node " + node + " was retired and replaced by " + it->second + "; a machine joins again under a new name");
  return ok_status();
}

size_t live_admins(const ServerState& st, int64_t now_s) {
  size_t n = 0;
  for (const auto& [id, t] : *st.tokens)
    n += !t.revoked && t.token.role == auth::Role::kAdmin && (t.token.expires_at == 0 || t.token.expires_at > now_s);
  return n;
}

void token_routes(Routes& http, Api& api) {
  route(http, api, "POST", "/v1/tokens", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto body = json_body(req);
    if (!body) return answer(res, error_reply(body.error()));
    auto rec = parse_token_request(*body);
    if (!rec) return answer(res, error_reply(rec.error()));
    int64_t ttl = 0;
    if (body->contains("ttl_s")) {
      const json& v = (*body)["ttl_s"];
      if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > kMaxTtlSeconds)
        return answer(res, error_reply(Error::invalid("token: ttl_s must be a whole number of seconds, 1 to " +
                                                      std::to_string(kMaxTtlSeconds))));
      ttl = v.get<int64_t>();
    }
    const auth::IssuedToken fresh = auth::issue_token();
    rec->id = fresh.id;
    rec->secret_hash = fresh.secret_hash;
    run(api, who, req, res, [t = std::move(*rec), ttl, bearer = fresh.bearer](Txn& txn) mutable -> Result<Render> {
      for (const auto& team : t.teams)
        if (!txn.cluster().find_team(team) || txn.state().removed_teams.count(team))
          return Error::not_found("token: no team named " + team);
      if (t.role == auth::Role::kAgent && !t.node.empty() && !txn.cluster().find_node(t.node)) return Error::not_found("token: no node named " + t.node);
      if (t.role == auth::Role::kAgentJoin && !t.node.empty())
        if (auto st = check_adoptable(txn, t.node); !st) return st.error();
      if (ttl) t.expires_at = txn.now() + ttl;
      const std::string id = t.id;
      if (auto st = txn.apply(store::CreateToken{std::move(t)}); !st) return st.error();
      return Render([id, bearer](const ServerState& st) -> Reply {
        json out = token_json(*st.tokens, st.tokens->at(id));
        out["token"] = bearer;  // shown this once
        return json_reply(201, out);
      });
    });
  });
  route(http, api, "GET", "/v1/tokens", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [](Txn&) -> Result<Render> {
      return Render([](const ServerState& st) {
        json out = json::array();
        for (const auto& [id, t] : *st.tokens) out.push_back(token_json(*st.tokens, t));
        return json_reply(200, out);
      });
    });
  });
  route(http, api, "DELETE", R"(/v1/tokens/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [id = param(req)](Txn& txn) -> Result<Render> {
      auto it = txn.state().tokens->find(id);
      if (it == txn.state().tokens->end()) return Error::not_found("no token with id " + id + " (allot token list shows them)");
      if (it->second.revoked) return Error::precondition("token " + id + " is already revoked");
      if (it->second.token.role == auth::Role::kAdmin && live_admins(txn.state(), txn.now()) <= 1)
        return Error::precondition("token " + id + " is the last admin token: revoking it would leave nobody able to "
                                   "manage the cluster; create another admin token first");
      if (auto st = txn.apply(store::RevokeToken{id}); !st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

// A team's part of the trail: changes made with its tokens, and changes that name it or one of its jobs.
bool about_team(const ServerState& st, const AuditEntry& e, const std::string& team) {
  if (std::find(e.actor.teams.begin(), e.actor.teams.end(), team) != e.actor.teams.end()) return true;
  if (e.audit.target == team) return true;
  const Job* j = e.audit.target.empty() ? nullptr : st.cluster.find_job(e.audit.target);
  return j && st.cluster.teams[j->team.index()].spec.name == team;
}

void audit_route(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/audit", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    // since: a point in time, RFC 3339 like the entries' "at", or Unix seconds as clients sent it before.
    Result<Time> since = Time{0};
    if (req.has_param("since")) since = view::parse_time_input(req.get_param_value("since"), "query parameter since");
    if (!since) return answer(res, error_reply(since.error()));
    auto limit = query_int(req, "limit", 1000, 100000);
    if (!limit) return answer(res, error_reply(limit.error()));
    run(api, who, req, res, [since = *since, limit = *limit, team = req.get_param_value("team")](Txn&) -> Result<Render> {
      return Render([since, limit, team](const ServerState& st) {
        // The newest `limit` entries at or after `since`, oldest first.
        std::vector<const AuditEntry*> picked;
        for (auto it = st.audit.rbegin(); it != st.audit.rend() && static_cast<int64_t>(picked.size()) < limit; ++it) {
          if (it->at < since) break;
          if (!team.empty() && !about_team(st, *it, team)) continue;
          picked.push_back(&*it);
        }
        json out = json::array();
        for (auto it = picked.rbegin(); it != picked.rend(); ++it) {
          const AuditEntry& e = **it;
          json o = {{"seq", e.seq},       {"at", view::rfc3339(e.at)}, {"token", e.actor.token}, {"role", store::actor_role_name(e.actor.role)},
                    {"action", e.audit.action}, {"status", e.audit.status}};
          if (!e.actor.teams.empty()) o["teams"] = e.actor.teams;
          if (!e.actor.node.empty()) o["node"] = e.actor.node;
          if (!e.actor.user.empty()) o["user"] = e.actor.user;
          if (!e.audit.target.empty()) o["target"] = e.audit.target;
          if (!e.audit.message.empty()) o["message"] = e.audit.message;
          if (!e.audit.source.empty()) o["source"] = e.audit.source;
          out.push_back(std::move(o));
        }
        return json_reply(200, out);
      });
    });
  });
}

}  // namespace

void add_token_routes(Routes& http, Api& api) {
  token_routes(http, api);
  audit_route(http, api);
}

}  // namespace allot::server
