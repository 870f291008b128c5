// Reservations of existing nodes against a live server: `allot reservation create|list|delete`
// (docs/scheduling.md, "Reservations of existing nodes").
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/output.h"
#include "client/time_flags.h"
#include "view/times.h"

namespace allot::cli {
namespace {

using client::report;
using client::Session;
using client::text;
using nlohmann::json;

struct ReservationArgs {
  client::ClientFlags flags;
  std::string name, team, user, nodes, instance_type, start = "now", end;
  int count = 0;
};

std::string reservation_when(const json& r, const char* key, int64_t now) { return client::from_now(client::time_at(r, key), now); }

std::string reservations_table(const json& list) {
  const int64_t now = client::unix_now();
  client::Table t({"NAME", "STATE", "TEAM", "USER", "NODES", "START", "END"});
  for (const auto& r : list) {
    std::string nodes = client::join(r.value("nodes", json::array()), ",");
    if (r.contains("count"))
      nodes = text(r, "count") + " x " + text(r, "instance_type") + (nodes.empty() ? "" : ": " + nodes);
    t.add({text(r, "name"), text(r, "state"), text(r, "team"), text(r, "user").empty() ? "-" : text(r, "user"), nodes,
           reservation_when(r, "start", now), reservation_when(r, "end", now)});
  }
  return t.str();
}

std::string reservation_line(const json& r) {
  return "reservation " + text(r, "name") + ": " + text(r, "state") + ", team " + text(r, "team") +
         (text(r, "user").empty() ? "" : ", user " + text(r, "user")) + ", nodes " +
         (r.value("nodes", json::array()).empty() ? "(chosen at the start)" : client::join(r.value("nodes", json::array()), ", ")) +
         ", " + text(r, "start") + " .. " + text(r, "end") + "\n";
}

int run_reservation_list(Session& s, ReservationArgs&) {
  return s.show("reservation list", s.api().get("/v1/reservations"), reservations_table);
}

int run_reservation_create(Session& s, ReservationArgs& a) {
  const int64_t now = client::unix_now();
  auto start = client::time_flag(a.start, "--start", now);
  if (!start) return report("reservation create", start.error());
  auto end = client::time_flag(a.end, "--end", now);
  if (!end) return report("reservation create", end.error());
  json body = {{"team", a.team}, {"start", a.start == "now" ? std::string("now") : view::rfc3339(*start)}, {"end", view::rfc3339(*end)}};
  if (!a.user.empty()) body["user"] = a.user;
  if (!a.nodes.empty()) body["nodes"] = a.nodes;  // a host list; the server expands it
  if (!a.instance_type.empty()) body["instance_type"] = a.instance_type;
  if (a.count > 0) body["count"] = a.count;
  auto r = s.api().put("/v1/reservations/" + client::url_encode(a.name), body);
  if (!r) return report("reservation create", r.error());
  return s.print(*r, reservation_line);
}

int run_reservation_delete(Session& s, ReservationArgs& a) {
  return s.delete_named("reservation delete", "/v1/reservations", a.name,
                        "reservation " + a.name + " deleted; its nodes returned to the common pool\n");
}

}  // namespace

void add_client_reservation_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ReservationArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };
  auto* res = app.add_subcommand("reservation", "Reservations of existing nodes for a team: create, list, delete");
  res->require_subcommand(1);
  auto* create = flags(res->add_subcommand("create", "Reserve named nodes, or N nodes of a type, for a team (admin)"));
  create->add_option("name", a->name, "Reservation name (a DNS label)")->required();
  create->add_option("--team", a->team, "The team whose jobs may use the nodes")->required();
  create->add_option("--user", a->user, "Only this user's jobs of the team (a token's user name)");
  create->add_option("--nodes", a->nodes, "Named nodes, a host list such as gpu-[1-4] (or --count with --instance-type)");
  create->add_option("--instance-type", a->instance_type, "With --count: the type of the nodes to reserve");
  create->add_option("--count", a->count, "With --instance-type: how many nodes, chosen at the start");
  create->add_option("--start", a->start, "now (default), +DURATION, an RFC 3339 time or Unix seconds");
  create->add_option("--end", a->end, "+DURATION (from now), an RFC 3339 time or Unix seconds")->required();
  on_run(create, ctx, a, "reservation create", run_reservation_create);
  on_run(flags(res->add_subcommand("list", "Reservations (admins: all; members and viewers: their teams')")), ctx, a,
         "reservation list", run_reservation_list);
  auto* del = flags(res->add_subcommand("delete", "End a reservation now: its nodes return to the common pool (admin)"));
  del->add_option("name", a->name, "Reservation name")->required();
  on_run(del, ctx, a, "reservation delete", run_reservation_delete);
}

}  // namespace allot::cli
