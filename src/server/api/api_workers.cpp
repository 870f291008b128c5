// A manager's worker clusters (docs/multicluster.md): GET /v1/workers, for admins and viewers (whole-cluster
// readers). Names, URLs and leases, never tokens; a server that is no manager answers with empty lists.
#include "server/api/api.h"

namespace allot::server {

void add_worker_routes(Routes& http, Api& api) {
  route(http, api, "GET", "/v1/workers", Access::kReader, [&api](const auth::Caller& who, const httplib::Request&, httplib::Response& res) {
    if (who.role != auth::Role::kAdmin && who.role != auth::Role::kViewer)
      return answer(res, error_reply(denied(who, "reading the worker clusters", "an admin or viewer token")));
    if (!api.dispatcher) return answer(res, json_reply(200, nlohmann::json{{"teams", nlohmann::json::array()}, {"workers", nlohmann::json::array()}}));
    answer(res, json_reply(200, api.dispatcher->workers_json()));
  });
}

}  // namespace allot::server
