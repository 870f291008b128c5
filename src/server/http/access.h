#pragma once
// Who may call what (docs/security.md, "Roles"). Every route is registered through route(), which states the
// roles it admits; route() authenticates the request, refuses what a browser page could forge, checks the role
// (and, for agents, the node in the path) and only then runs the handler. Checks that need the state (the
// team of a job) are the handler's, through the Caller it is given.
//
//   Access     | roles
//   kPublic    | anyone, no token (GET /v1/health)
//   kReader    | admin, member, viewer   (reads; handlers narrow what members see to their teams)
//   kMember    | admin, member           (jobs; handlers check the job's team)
//   kAdmin     | admin
//   kAgent     | agent, for the node named in the path
//   kRegister  | agent-join, or agent for the node it registers
#include <httplib.h>

#include <functional>
#include <string>

#include "auth/caller.h"
#include "server/http/reply.h"
#include "server/http/routes.h"
#include "server/writer/writer.h"

namespace allot::server {

struct Api;

enum class Access { kPublic, kReader, kMember, kAdmin, kAgent, kRegister };

using Handler = std::function<void(const auth::Caller&, const httplib::Request&, httplib::Response&)>;

// Registers `handler` for `method` ("GET", "POST", "PUT", "DELETE") and `pattern` behind the checks above.
// Refusals of requests that ask for a change are written to the audit trail.
void route(Routes& http, Api& api, const std::string& method, const std::string& pattern, Access access,
           Handler handler);

// The refusal for a caller whose token does not allow `what` ("submit jobs of team a"), naming what would.
Error denied(const auth::Caller& who, const std::string& what, const std::string& needed);

// What `who` is told when `refusal` keeps it from job `name` of a team it is not in. A member gets the answer a
// name no job has ever had gets (404), so that no answer tells it which names another team's jobs have (no
// 403-versus-404 oracle); the audit trail records `refusal` all the same (Txn::audit_as). Other roles get
// `refusal`.
Error refuse_job(Txn& txn, const auth::Caller& who, const std::string& name, Error refusal);

}  // namespace allot::server
