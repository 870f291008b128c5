// Reservations of existing nodes (core/model/reservations.h): administrators create and delete them; members and
// viewers read those of their teams, administrators all. A reservation's steps (Active, then its end) are taken by
// the writer when their time comes (step_reservations), each one journaled.
#include "config/spec_yaml.h"
#include "core/model/reservations.h"

#include "server/api/api.h"
#include "server/lifecycle/reservation_steps.h"
#include "view/reservation_json.h"
#include "view/times.h"

namespace allot::server {
namespace {

using nlohmann::json;

Error no_reservation(const std::string& name) {
  return Error::not_found("no reservation named " + name + " that this token may read (administrators read all, members "
                          "and viewers those of their teams)");
}

// Start and end arrive as RFC 3339 times, Unix seconds, or (start only) "now"; the parser, shared with scenario
// files, takes seconds.
Status reservation_times(YAML::Node& doc, Time now) {
  if (!doc.IsMap()) return ok_status();  // parse_reservation says what is wrong with it
  for (const char* key : {"start", "end"}) {
    YAML::Node v = doc[key];
    if (!v || !v.IsScalar()) continue;
    if (std::string(key) == "start" && v.Scalar() == "now") {
      doc[key] = now;
      continue;
    }
    auto t = view::parse_time_input(v.Scalar(), std::string("request body: ") + key);
    if (!t) return t.error();
    doc[key] = *t;
  }
  return ok_status();
}

Render reservation_render(const std::string& name, int status) {
  return [name, status](const ServerState& st) -> Reply {
    auto it = st.cluster.reservations.find(name);
    if (it == st.cluster.reservations.end()) return error_reply(no_reservation(name));
    return json_reply(status, view::reservation_json(st.cluster, it->second, view::Times::kRfc3339));
  };
}

}  // namespace

void add_reservation_routes(Routes& http, Api& api) {
  // Readers: administrators see every reservation, members and viewers those of their teams.
  route(http, api, "GET", "/v1/reservations", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [who](Txn&) -> Result<Render> {
      return Render([who](const ServerState& st) {
        json out = json::array();
        for (const auto& [name, r] : st.cluster.reservations)  // by name
          if (who.sees_team(r.spec.team)) out.push_back(view::reservation_json(st.cluster, r, view::Times::kRfc3339));
        return json_reply(200, out);
      });
    });
  });
  route(http, api, "GET", R"(/v1/reservations/([^/]+))", Access::kReader, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req), who](Txn& txn) -> Result<Render> {
      auto it = txn.cluster().reservations.find(name);
      if (it == txn.cluster().reservations.end() || !who.sees_team(it->second.spec.team)) return no_reservation(name);
      return reservation_render(name, 200);
    });
  });
  // Admin only: a reservation takes nodes from every other team.
  route(http, api, "PUT", R"(/v1/reservations/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    if (auto bad = check_content_type(req)) return answer(res, *bad);
    auto doc = yaml_body(req);
    if (!doc) return refuse(api, who, req, res, doc.error());
    const std::string name = param(req);
    if (doc->IsMap()) {
      if (!(*doc)["name"]) (*doc)["name"] = name;
      else if (!(*doc)["name"].IsScalar() || (*doc)["name"].Scalar() != name)
        return refuse(api, who, req, res, Error::invalid("request body: name must be the reservation's name in the path (" + name + ") or left out"));
    }
    run(api, who, req, res, [&api, doc = std::move(*doc), name](Txn& txn) mutable -> Result<Render> {
      if (auto st = reservation_times(doc, txn.now()); !st) return st.error();
      auto r = parse_reservation(doc, api.catalog, kRequestBody);
      if (!r) return r.error();
      if (r->end <= txn.now())
        return Error::invalid("reservation " + name + " ends at " + view::rfc3339(r->end) + ", which has passed (now " +
                              view::rfc3339(txn.now()) + ")");
      if (auto st = txn.apply(store::CreateReservation{*r}); !st) return st.error();
      step_reservations(txn);  // a reservation whose start has come is Active in the same answer
      return reservation_render(name, 201);
    });
  });
  route(http, api, "DELETE", R"(/v1/reservations/([^/]+))", Access::kAdmin, [&api](const auth::Caller& who, const httplib::Request& req, httplib::Response& res) {
    run(api, who, req, res, [name = param(req)](Txn& txn) -> Result<Render> {
      if (!txn.cluster().reservations.count(name)) return no_reservation(name);
      if (auto st = txn.apply(store::DeleteReservation{name}); !st) return st.error();
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
  });
}

}  // namespace allot::server
