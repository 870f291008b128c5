// Administrators' commands: `allot apply FILE`, `team list|get|delete`, `allocation set`, `policy get|set`,
// `priority-class list|set|delete`. Argument parsing and printing only; the server does the work, and
// client/ turns its answers into tables and exit codes.
#include <iostream>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/apply_plan.h"
#include "client/render.h"
#include "client/server_catalog.h"
#include "client/warnings.h"
#include "client/spec_json.h"
#include "config/spec_yaml.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::report;
using client::Session;
using nlohmann::json;

struct AdminArgs {
  ClientFlags flags;
  std::string file, name, instance_type, task_prioritization, idle_compute, idle_pool, fair_share_preemption, backfill;
  std::optional<int64_t> instances, accelerators, min_runtime, starvation_threshold, elastic_grow_delay, backfill_min_priority;
  std::optional<double> vcpu, memory_gib;
  int weight = 0;
  bool dry_run = false, prune = false;  // apply
};

// Runs `body` with an open session; errors opening it (a bad URL or format) are reported like any other.
int run_apply(Session& s, AdminArgs& a) {
  if (a.file.empty()) return report("apply", Error::invalid("which file? allot apply FILE, or -f FILE; - for stdin"));
  auto text = client::read_input(a.file);
  if (!text) return report("apply", text.error());
  const YamlContext ctx{a.file == "-" ? "<stdin>" : a.file, "", 0};
  auto doc = load_yaml(*text, ctx);
  if (!doc) return report("apply", doc.error());
  if (!doc->IsMap()) return report("apply", Error::invalid(ctx.origin + ": expected a scenario-format mapping with policy and teams"));
  // The server's types (built in, and its --instance-types file's), with the file's own instance_types section:
  // a team may name a type the server knows and this client's built-in catalog does not.
  Catalog catalog = client::server_catalog(s.api());
  json body = json::object();
  const YAML::Node& root = *doc;
  if (root["instance_types"])
    if (auto t = parse_instance_types(root["instance_types"], catalog, {ctx.origin, "instance_types", 0}); !t)
      return report("apply", t.error());
  if (root["policy"]) {
    auto p = parse_policy(root["policy"], {ctx.origin, "policy", 0});
    if (!p) return report("apply", p.error());
    body["policy"] = client::policy_body(*p);
  }
  if (root["teams"]) {
    auto teams = parse_teams(root["teams"], catalog, {ctx.origin, "teams", 0});
    if (!teams) return report("apply", teams.error());
    body["teams"] = json::array();
    for (const auto& t : *teams) body["teams"].push_back(client::team_body(t));
    std::vector<std::string> without_weight;
    for (const auto& t : root["teams"])
      if (t.IsMap() && !t["fair_share_weight"] && t["name"]) without_weight.push_back(t["name"].Scalar());
    auto nodes = s.api().get("/v1/nodes");
    for (const auto& w : client::apply_warnings(*teams, without_weight, nodes ? *nodes : json(), catalog))
      std::cerr << "allot apply: warning: " << w << "\n";
  }
  if (body.empty()) return report("apply", Error::invalid(ctx.origin + " has neither a policy nor a teams section"));
  // Merge with what the server has (client/apply_plan.h): only what the file names changes.
  client::ApplyInput in{.file_policy = body.value("policy", json()), .file_teams = body.value("teams", json()), .prune = a.prune};
  if (root["policy"] && root["policy"].IsMap())
    for (const auto& kv : root["policy"]) in.file_policy_keys.insert(kv.first.Scalar());
  auto policy = s.api().get("/v1/policy");
  if (!policy) return report("apply", policy.error());
  auto teams = s.api().get("/v1/teams");
  if (!teams) return report("apply", teams.error());
  in.current_policy = *policy;
  in.current_teams = *teams;
  const client::ApplyPlan plan = client::plan_apply(in);
  json out = {{"changes", plan.changes}, {"dry_run", a.dry_run}};
  auto changes_text = [&plan, &a] {
    std::string text;
    for (const auto& c : plan.changes) text += c + "\n";
    if (plan.changes.empty()) text += "no changes\n";
    if (a.dry_run) text += "(dry run: nothing was changed)\n";
    return text;
  };
  if (a.dry_run) return s.print(out, [&](const json&) { return changes_text(); });
  // Sent even when nothing changes: the server decides who may apply (and audits the attempt), not the diff.
  const bool send = plan.body.contains("policy") || !plan.body.value("teams", json::array()).empty();
  if (send) {
    auto r = s.api().post("/v1/apply", plan.body);
    if (!r) return report("apply", r.error());
    if (r->contains("teams")) out["teams"] = (*r)["teams"];
  }
  for (const auto& name : plan.delete_teams)
    if (auto d = s.api().del("/v1/teams/" + client::url_encode(name)); !d) return report("apply", d.error());
  return s.print(out, [&](const json& o) {
    std::string text = changes_text();
    if (o.contains("teams") && !o["teams"].empty()) text += "\n" + client::teams_table(o["teams"]);
    return text;
  });
}

int run_team_get(Session& s, AdminArgs& a) {
  auto r = a.name.empty() ? s.api().get("/v1/teams") : s.api().get("/v1/teams/" + client::url_encode(a.name));
  if (!r) return report("team", r.error());
  if (!a.name.empty() && s.format() == client::Format::kTable) return s.print(json::array({*r}), client::teams_table);
  return s.print(*r, client::teams_table);
}

int run_team_delete(Session& s, AdminArgs& a) {
  auto r = s.api().del("/v1/teams/" + client::url_encode(a.name));
  if (!r) return report("team delete", r.error());
  std::cout << "team " << a.name << " deleted\n";
  return 0;
}

// GET the team (or start a new one), replace its entry for the instance type, PUT it back.
int run_allocation_set(Session& s, AdminArgs& a) {
  if (a.instances && (a.accelerators || a.vcpu || a.memory_gib))
    return report("allocation set", Error::invalid("give --instances, or --accelerators/--vcpu/--memory-gib, not both"));
  if (!a.instances && !a.accelerators && !a.vcpu && !a.memory_gib)
    return report("allocation set", Error::invalid("give --instances N or --accelerators N (with optional --vcpu, --memory-gib)"));
  const std::string path = "/v1/teams/" + client::url_encode(a.name);
  json team;
  bool created = false;
  if (auto r = s.api().get(path); r) {
    team = client::team_body_from_view(*r);
  } else if (r.error().code == ErrorCode::kNotFound) {
    team = {{"name", a.name}, {"allocation", json::array()}};
    created = true;
  } else {
    return report("allocation set", r.error());
  }
  json entry = {{"instance_type", canonical_type_name(a.instance_type)}};
  if (a.instances) entry["instances"] = *a.instances;
  if (a.accelerators) entry["accelerators"] = *a.accelerators;
  if (a.vcpu) entry["vcpu"] = *a.vcpu;
  if (a.memory_gib) entry["memory_gib"] = *a.memory_gib;
  json alloc = json::array();
  for (const auto& e : team.value("allocation", json::array()))
    if (canonical_type_name(e.value("instance_type", "")) != entry["instance_type"].get<std::string>()) alloc.push_back(e);
  alloc.push_back(entry);
  team["allocation"] = alloc;
  auto r = s.api().put(path, team);
  if (!r) return report("allocation set", r.error());
  if (created && s.format() == client::Format::kTable) std::cout << "created team " << a.name << "\n";
  return s.print(json::array({*r}), client::teams_table);
}

int run_policy_get(Session& s, AdminArgs&) {
  return s.show("policy get", s.api().get("/v1/policy"), client::policy_text);
}

int run_policy_set(Session& s, AdminArgs& a) {
  auto cur = s.api().get("/v1/policy");
  if (!cur) return report("policy set", cur.error());
  json p = *cur;
  if (!a.task_prioritization.empty()) p["task_prioritization"] = a.task_prioritization;
  if (!a.idle_compute.empty()) p["idle_compute"] = a.idle_compute;
  if (!a.idle_pool.empty()) p["idle_pool"] = a.idle_pool == "true";
  if (a.min_runtime) p["min_runtime"] = *a.min_runtime;
  if (a.starvation_threshold) p["starvation_threshold"] = *a.starvation_threshold;
  if (a.elastic_grow_delay) p["elastic_grow_delay"] = *a.elastic_grow_delay;
  if (!a.fair_share_preemption.empty()) p["fair_share_preemption"] = a.fair_share_preemption == "true";
  if (!a.backfill.empty()) p["backfill"] = a.backfill == "true";
  if (a.backfill_min_priority) p["backfill_min_priority"] = *a.backfill_min_priority;
  return s.show("policy set", s.api().put("/v1/policy", p), client::policy_text);
}

int run_classes(Session& s, AdminArgs&) {
  return s.show("priority-class list", s.api().get("/v1/priority-classes"), client::priority_classes_table);
}

int run_class_set(Session& s, AdminArgs& a) {
  return s.show("priority-class set", s.api().put("/v1/priority-classes/" + client::url_encode(a.name), {{"weight", a.weight}}),
                [](const json& c) { return "priority class " + client::text(c, "name") + " weight " + client::text(c, "weight") + "\n"; });
}

int run_allocation_get(Session& s, AdminArgs& a) {
  auto team = s.api().get("/v1/teams/" + client::url_encode(a.name));
  if (!team) return report("allocation get", team.error());
  const json alloc = team->value("allocation", json::array());
  return s.print(alloc, [](const json& list) {
    client::Table t({"INSTANCE_TYPE", "INSTANCES", "ACCELERATORS", "VCPU", "MEMORY_GIB"});
    for (const auto& e : list)
      t.add({client::text(e, "instance_type"), client::number(e.value("instances", json())), client::number(e.value("accelerators", json())),
             client::number(e.value("vcpu", json())), client::number(e.value("memory_gib", json()))});
    return t.empty() ? std::string("no allocation\n") : t.str();
  });
}

int run_class_delete(Session& s, AdminArgs& a) {
  auto r = s.api().del("/v1/priority-classes/" + client::url_encode(a.name));
  if (!r) return report("priority-class delete", r.error());
  std::cout << "priority class " << a.name << " deleted\n";
  return 0;
}

}  // namespace

void add_client_admin_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<AdminArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };

  auto* apply = flags(app.add_subcommand("apply", "Apply the policy and teams sections of a scenario-format file: what it names "
                                                   "changes, the rest stays (see --prune); prints what changed"));
  auto* file = apply->add_option("file", a->file, "YAML file; - for stdin");
  apply->add_option("-f,--filename", a->file, "The YAML file, as kubectl apply -f takes it (instead of FILE)")->excludes(file);
  apply->add_flag("--dry-run", a->dry_run, "Print what would change; change nothing");
  apply->add_flag("--prune", a->prune,
                  "Also remove the teams and priority classes the file's lists leave out (only for lists the file has)");
  on_run(apply, ctx, a, "apply", run_apply);

  auto* team = app.add_subcommand("team", "Teams: list, get, delete");
  team->require_subcommand(1);
  on_run(flags(team->add_subcommand("list", "List teams with quota, usage, borrowing and lending")), ctx, a, "team list", run_team_get);
  auto* get = flags(team->add_subcommand("get", "One team"));
  get->add_option("name", a->name, "Team name")->required();
  on_run(get, ctx, a, "team get", run_team_get);
  auto* del = flags(team->add_subcommand("delete", "Delete a team without active jobs"));
  del->add_option("name", a->name, "Team name")->required();
  on_run(del, ctx, a, "team delete", run_team_delete);

  auto* alloc = app.add_subcommand("allocation", "A team's compute allocation");
  alloc->require_subcommand(1);
  auto* aget = flags(alloc->add_subcommand("get", "A team's allocation per instance type"));
  aget->add_option("team", a->name, "Team name")->required();
  on_run(aget, ctx, a, "allocation get", run_allocation_get);
  auto* set = flags(alloc->add_subcommand("set", "Set a team's allocation for one instance type (creates the team if needed)"));
  set->add_option("team", a->name, "Team name")->required();
  set->add_option("--instance-type", a->instance_type, "Instance type, e.g. ml.p5.48xlarge")->required();
  set->add_option("--instances", a->instances, "Whole instances");
  set->add_option("--accelerators", a->accelerators, "Accelerators (vCPU and memory follow in proportion)");
  set->add_option("--vcpu", a->vcpu, "vCPUs (overrides the proportional amount)");
  set->add_option("--memory-gib", a->memory_gib, "Memory in GiB (overrides the proportional amount)");
  on_run(set, ctx, a, "allocation set", run_allocation_set);

  auto* policy = app.add_subcommand("policy", "The cluster policy");
  policy->require_subcommand(1);
  on_run(flags(policy->add_subcommand("get", "Show the policy and priority classes")), ctx, a, "policy get", run_policy_get);
  auto* pset = flags(policy->add_subcommand("set", "Change parts of the policy"));
  std::vector<std::string> prioritizations, idle_computes;  // the spellings' one home: core/model/spec.h
  for (TaskPrioritization t : kTaskPrioritizations) prioritizations.emplace_back(task_prioritization_name(t));
  for (IdleCompute i : kIdleComputes) idle_computes.emplace_back(idle_compute_name(i));
  pset->add_option("--task-prioritization", a->task_prioritization, "task-ranking or fcfs")->check(CLI::IsMember(prioritizations));
  pset->add_option("--idle-compute", a->idle_compute, "fair-share or fcfs")->check(CLI::IsMember(idle_computes));
  pset->add_option("--idle-pool", a->idle_pool, "true: capacity outside every allocation may be borrowed")
      ->check(CLI::IsMember({"true", "false"}));
  pset->add_option("--min-runtime", a->min_runtime, "Seconds a started job is protected from preemption");
  pset->add_option("--starvation-threshold", a->starvation_threshold, "Seconds pending before a job gets a reservation");
  pset->add_option("--elastic-grow-delay", a->elastic_grow_delay,
                   "Seconds capacity must stay idle before an elastic job grows into it (and between its resizes)");
  pset->add_option("--fair-share-preemption", a->fair_share_preemption,
                   "true: a borrower may preempt jobs of teams above their fair share")
      ->check(CLI::IsMember({"true", "false"}));
  pset->add_option("--backfill", a->backfill,
                   "true: the first job capacity blocks gets a reservation from running jobs' time limits; later jobs "
                   "take its nodes only if they end before it")
      ->check(CLI::IsMember({"true", "false"}));
  pset->add_option("--backfill-min-priority", a->backfill_min_priority,
                   "With backfill: jobs of a priority class weight below this get no reservation, they only fill in (0..100)");
  on_run(pset, ctx, a, "policy set", run_policy_set);

  auto* pc = app.add_subcommand("priority-class", "Priority classes");
  pc->require_subcommand(1);
  on_run(flags(pc->add_subcommand("list", "List priority classes")), ctx, a, "priority-class list", run_classes);
  auto* pcs = flags(pc->add_subcommand("set", "Add or change a priority class"));
  pcs->add_option("name", a->name, "Class name")->required();
  pcs->add_option("weight", a->weight, "Weight 0..100")->required()->check(CLI::Range(0, 100));
  on_run(pcs, ctx, a, "priority-class set", run_class_set);
  auto* pcd = flags(pc->add_subcommand("delete", "Delete a priority class no active job uses"));
  pcd->add_option("name", a->name, "Class name")->required();
  on_run(pcd, ctx, a, "priority-class delete", run_class_delete);
}

}  // namespace allot::cli
