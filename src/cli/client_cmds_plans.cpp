// Capacity plans against a live server: `allot plans`, `allot plan create|describe|delete` (docs/plans.md).
#include <memory>
#include <sstream>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/output.h"
#include "client/time_flags.h"
#include "view/label_list.h"
#include "view/times.h"

namespace allot::cli {
namespace {

using client::report;
using client::Session;
using client::text;
using nlohmann::json;

struct PlanArgs {
  client::ClientFlags flags;
  std::string name, instance_type, team, labels, start = "now", end, grace = "0";
  int count = 1;
};

std::string when(const json& p, const char* key, int64_t now) { return client::from_now(client::time_at(p, key), now); }

std::string plans_table(const json& plans) {
  const int64_t now = client::unix_now();
  client::Table t({"NAME", "STATE", "INSTANCE TYPE", "NODES", "TEAM", "START", "END", "GRACE", "JOBS"});
  for (const auto& p : plans)
    t.add({text(p, "name"), text(p, "state"), text(p, "instance_type"),
           text(p, "nodes_joined") + "/" + text(p, "count"), text(p, "team").empty() ? "(idle pool)" : text(p, "team"),
           when(p, "start", now), when(p, "end", now), text(p, "grace_s") + "s",
           std::to_string(p.value("jobs", json::array()).size())});
  return t.str();
}

std::string plan_text(const json& p) {
  const int64_t now = client::unix_now();
  std::ostringstream o;
  o << "plan " << text(p, "name") << ": " << text(p, "state") << "\n"
    << "  " << text(p, "count") << " x " << text(p, "instance_type") << ", "
    << (text(p, "team").empty() ? "no owner (its capacity joins the idle pool)" : "owned by team " + text(p, "team")) << "\n"
    << "  start " << text(p, "start") << " (" << when(p, "start", now) << "), end " << text(p, "end") << " ("
    << when(p, "end", now) << "), grace " << text(p, "grace_s") << " s\n"
    << "  nodes joined " << text(p, "nodes_joined") << ": " << client::join(p.value("nodes", json::array()), ", ") << "\n"
    << "  jobs: " << client::join(p.value("jobs", json::array()), ", ") << "\n";
  return o.str();
}

int run_plans(Session& s, PlanArgs&) { return s.show("plans", s.api().get("/v1/plans"), plans_table); }

int run_plan_describe(Session& s, PlanArgs& a) {
  return s.show("plan describe", s.api().get("/v1/plans/" + client::url_encode(a.name)), plan_text);
}

int run_plan_create(Session& s, PlanArgs& a) {
  const int64_t now = client::unix_now();
  auto start = client::time_flag(a.start, "--start", now);
  if (!start) return report("plan create", start.error());
  auto end = client::time_flag(a.end, "--end", now);
  if (!end) return report("plan create", end.error());
  auto grace = client::duration_flag(a.grace, "--grace");
  if (!grace) return report("plan create", grace.error());
  json body = {{"name", a.name}, {"instance_type", a.instance_type}, {"count", a.count}, {"start", view::rfc3339(*start)},
               {"end", view::rfc3339(*end)},    {"grace", *grace}};
  if (!a.team.empty()) body["team"] = a.team;
  if (!a.labels.empty()) {
    auto labels = view::parse_label_list(a.labels);
    if (!labels) return report("plan create", Error::invalid("--labels: " + labels.error().message));
    body["labels"] = *labels;
  }
  auto r = s.api().post("/v1/plans", body);
  if (!r) return report("plan create", r.error());
  return s.print(*r, plan_text);
}

int run_plan_delete(Session& s, PlanArgs& a) {
  return s.delete_named("plan delete", "/v1/plans", a.name, "plan " + a.name + " deleted\n");
}

}  // namespace

void add_client_plan_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<PlanArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };
  on_run(flags(app.add_subcommand("plans", "List capacity plans: state, nodes joined, owner, start and end")), ctx, a, "plans",
         run_plans);
  auto* plan = app.add_subcommand("plan", "Capacity plans: create, describe, delete");
  plan->require_subcommand(1);
  auto* create = flags(plan->add_subcommand("create", "Reserve capacity for a period (admin)"));
  create->add_option("name", a->name, "Plan name (a DNS label)")->required();
  create->add_option("--instance-type", a->instance_type, "Instance type of its nodes")->required();
  create->add_option("--count", a->count, "Number of instances")->required();
  create->add_option("--start", a->start, "now (default), +DURATION, an RFC 3339 time or Unix seconds");
  create->add_option("--end", a->end, "+DURATION (from now), an RFC 3339 time or Unix seconds")->required();
  create->add_option("--grace", a->grace, "Before the end, when its jobs are checkpointed and requeued (e.g. 10m)");
  create->add_option("--team", a->team, "Owning team (its quota rises by the plan); default: the idle pool");
  create->add_option("--labels", a->labels, "Topology labels of its nodes, k=v,k=v");
  on_run(create, ctx, a, "plan create", run_plan_create);
  auto* describe = flags(plan->add_subcommand("describe", "A plan's state, nodes and jobs"));
  describe->add_option("name", a->name, "Plan name")->required();
  on_run(describe, ctx, a, "plan describe", run_plan_describe);
  auto* del = flags(plan->add_subcommand("delete", "End a plan now: its jobs are requeued, its nodes leave (admin)"));
  del->add_option("name", a->name, "Plan name")->required();
  on_run(del, ctx, a, "plan delete", run_plan_delete);
}

}  // namespace allot::cli
