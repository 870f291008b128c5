#include "server/http/access.h"

#include <cctype>

#include "core/model/ascii_text.h"
#include "server/api/api.h"
#include "server/writer/retention.h"

namespace allot::server {
namespace {

// A browser sends Origin with cross-origin requests (and with same-origin writes). The API is for programs and
// for pages the server itself serves, so any other origin is refused: a page elsewhere cannot drive it even if
// the browser held a credential.
std::optional<Error> check_origin(const httplib::Request& req) {
  if (!req.has_header("Origin")) return std::nullopt;
  const std::string origin = ascii_lower(req.get_header_value("Origin"));
  const std::string host = ascii_lower(req.get_header_value("Host"));
  if (!host.empty() && (origin == "http://" + host || origin == "https://" + host)) return std::nullopt;
  return Error::denied("cross-origin requests are refused (Origin " + req.get_header_value("Origin") +
                       " is not this server); use the allot CLI or a program with a token");
}

// A refusal before the caller is known (no valid token, or another site's page): a refused change is audited
// all the same, in the name of nobody ("role": "none"), with the client's address and the object it named.
void refuse_stranger(Api& api, const httplib::Request& req, httplib::Response& res, const Error& why) {
  if (req.method == "GET" || req.method == "HEAD") return answer(res, error_reply(why));
  CallContext ctx = call_context(auth::Caller{}, req);
  ctx.actor = store::Actor{.role = store::Tokenless::kStranger};
  answer(res, api.writer.call([why](Txn&) -> Result<Render> { return why; }, std::move(ctx)));
}

std::string describe(const auth::Caller& who) {
  const std::string role = auth::role_name(who.role);
  std::string out = (role[0] == 'a' ? "an " : "a ") + role + " token";
  if (!who.teams.empty()) {
    out += " of team";
    out += who.teams.size() > 1 ? "s " : " ";
    for (size_t i = 0; i < who.teams.size(); ++i) out += (i ? ", " : "") + who.teams[i];
  }
  if (!who.node.empty()) out += " for node " + who.node;
  return out;
}

// Nothing for an allowed caller; else why not.
std::optional<Error> check_role(Access access, const auth::Caller& who, const httplib::Request& req) {
  using auth::Role;
  const std::string what = req.method + " " + req.path;
  switch (access) {
    case Access::kPublic: return std::nullopt;
    case Access::kReader:
      if (who.role == Role::kAdmin || who.role == Role::kMember || who.role == Role::kViewer) return std::nullopt;
      return denied(who, what, "an admin, member or viewer token");
    case Access::kMember:
      if (who.role == Role::kAdmin || who.role == Role::kMember) return std::nullopt;
      return denied(who, what, "an admin token or a member token of the job's team");
    case Access::kAdmin:
      if (who.admin()) return std::nullopt;
      return denied(who, what, "an admin token");
    case Access::kAgent:
      if (who.role == Role::kAgent && req.matches.size() > 1 && req.matches[1].str() == who.node) return std::nullopt;
      return denied(who, what, "the agent token of node " + (req.matches.size() > 1 ? req.matches[1].str() : std::string("?")));
    case Access::kRegister:
      if (who.role == Role::kAgentJoin || who.role == Role::kAgent) return std::nullopt;
      return denied(who, what, "an agent-join token (allot token create --role agent-join) or the node's agent token");
  }
  return denied(who, what, "another role");
}

}  // namespace

Error denied(const auth::Caller& who, const std::string& what, const std::string& needed) {
  return Error::denied(what + " needs " + needed + "; this request carries " + describe(who));
}

Error refuse_job(Txn& txn, const auth::Caller& who, const std::string& name, Error refusal) {
  if (who.role != auth::Role::kMember) return refusal;
  txn.audit_as(std::move(refusal));
  return no_such_job(txn.cluster(), name);
}

// A standby answers reads from the state it follows; a change goes to the leader, with the method and body kept
// (307), or waits for one to be elected (503).
void redirect_to_leader(Api& api, const httplib::Request& req, httplib::Response& res) {
  const std::string leader = api.writer.leader_url();
  if (leader.empty()) {
    answer(res, error_reply(503, "Unavailable",
                            "this server is a standby and no server leads right now (a failover is under way); retry in a few seconds"));
    res.set_header("Retry-After", "1");
    return;
  }
  answer(res, error_reply(307, "NotLeader", "this server is a standby; changes go to the leader at " + leader));
  res.set_header("Location", leader + req.target);
}

void route(Routes& http, Api& api, const std::string& method, const std::string& pattern, Access access,
           Handler handler) {
  const bool change = method != "GET";
  auto wrapped = guarded([&api, access, change, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    if (access == Access::kPublic) return handler(auth::Caller{}, req, res);
    if (change && !api.writer.leading()) return redirect_to_leader(api, req, res);
    if (auto bad = check_origin(req)) return refuse_stranger(api, req, res, *bad);
    // Tokens travel in the Authorization header only: URLs end up in logs, proxies and browser history.
    for (const char* key : {"token", "access_token", "bearer"})
      if (req.has_param(key))
        return answer(res, error_reply(Error::invalid(std::string("query parameter '") + key +
                                                      "' is refused: send the token in the Authorization header")));
    auto who = api.auth.authenticate(req.get_header_value("Authorization"), api.options.clock() / 1000);
    if (!who) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"allot\"");
      return refuse_stranger(api, req, res, who.error());
    }
    // A refused change is worth knowing about: it is audited like a change that was made.
    if (auto refusal = check_role(access, *who, req)) return refuse(api, *who, req, res, *refusal);
    handler(*who, req, res);
  });
  if (method == "GET") http.Get(pattern, wrapped);
  else if (method == "POST") http.Post(pattern, wrapped);
  else if (method == "PUT") http.Put(pattern, wrapped);
  else if (method == "DELETE") http.Delete(pattern, wrapped);
  else throw std::invalid_argument("route: unsupported method " + method);
}

}  // namespace allot::server
