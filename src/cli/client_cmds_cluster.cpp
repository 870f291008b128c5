// Commands about the cluster itself: `allot nodes`, `teams`, `events [--follow]`, `topology show`, and
// `node cordon|uncordon|drain|health`.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/client_run.h"
#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/render.h"
#include "client/spec_json.h"
#include "config/yaml_read.h"

namespace allot::cli {
namespace {

using client::ClientFlags;
using client::report;
using client::Session;
using nlohmann::json;

struct ClusterArgs {
  ClientFlags flags;
  std::string name, action, health, job, file;
  bool follow = false;
  int64_t since = 0;
};

int run_nodes(Session& s, ClusterArgs&) {
  return s.show("nodes", s.api().get("/v1/nodes"),
                [](const json& n) { return client::nodes_table(n, client::unix_now()); });
}

// In a cohort tree the table shows the tree: the groups and their parents come from the policy (GET /v1/policy,
// which every reader may read), read only when a team names a group. -o json/yaml print GET /v1/teams as it is.
int run_teams(Session& s, ClusterArgs&) {
  auto teams = s.api().get("/v1/teams");
  json groups;
  const bool grouped = teams && teams->is_array() &&
                       std::any_of(teams->begin(), teams->end(), [](const json& t) { return t.contains("group"); });
  if (grouped && s.format() == client::Format::kTable)
    if (auto policy = s.api().get("/v1/policy"); policy && policy->is_object()) groups = policy->value("groups", json());
  return s.show("teams", teams, [&](const json& t) { return client::teams_tree_table(t, groups); });
}

int run_topology(Session& s, ClusterArgs&) {
  return s.show("topology show", s.api().get("/v1/topology"), client::topology_text);
}

int run_node_delete(Session& s, ClusterArgs& a) {
  return s.delete_named("node delete", "/v1/nodes", a.name, "node " + a.name + " deleted\n");
}

// A nodes YAML (what `allot topology import` writes) into the live server: POST /v1/nodes takes it as text,
// all or nothing. Sent as JSON, which the server's YAML reader reads as the same document.
int run_nodes_apply(Session& s, ClusterArgs& a) {
  auto text = client::read_input(a.file);
  if (!text) return report("nodes apply", text.error());
  auto doc = load_yaml(*text, YamlContext{a.file == "-" ? "<stdin>" : a.file, "", 0});
  if (!doc) return report("nodes apply", doc.error());
  auto r = s.api().post("/v1/nodes", client::yaml_to_json(*doc));
  if (!r) return report("nodes apply", r.error());
  return s.print(*r, [](const json& n) { return client::nodes_table(n, client::unix_now()); });
}

int run_node_action(Session& s, ClusterArgs& a) {
  const std::string path = "/v1/nodes/" + client::url_encode(a.name);
  auto r = a.action == "health" ? s.api().put(path + "/health", {{"health", a.health}}) : s.api().post(path + "/" + a.action);
  if (!r) return report("node " + a.action, r.error());
  return s.print(json::array({*r}), [](const json& n) { return client::nodes_table(n, client::unix_now()); });
}

// Without --follow: the events the server still holds, once. With it: long polls until interrupted; in
// JSON or YAML each event is printed as it comes (JSON: one object per line).
int run_events(Session& s, ClusterArgs& a) {
  int64_t since = a.since;
  const int wait_s = a.follow ? 20 : 0;
  s.api().set_timeout(std::chrono::seconds(wait_s + 10));
  json all = json::array();
  for (;;) {
    auto r = s.api().get(client::with_query("/v1/events", {{"since", std::to_string(since)}, {"wait", std::to_string(wait_s)}}));
    if (!r) return report("events", r.error());
    const json events = r->value("events", json::array());
    for (const auto& e : events) {
      if (!a.job.empty() && client::text(e, "job") != a.job) continue;
      if (!a.follow) all.push_back(e);
      else if (s.format() == client::Format::kTable) std::cout << client::event_line(e);
      else if (s.format() == client::Format::kJson) std::cout << e.dump() << "\n";
      else std::cout << "---\n" << client::to_yaml(e);
    }
    std::cout << std::flush;
    if (r->contains("next") && (*r)["next"].is_number()) since = (*r)["next"].get<int64_t>();
    if (!a.follow) break;
  }
  return s.print(all, [](const json& ev) {
    std::string out;
    for (const auto& e : ev) out += client::event_line(e);
    return out;
  });
}

}  // namespace

void add_client_cluster_commands(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<ClusterArgs>();
  auto flags = [&](CLI::App* c) { client::add_client_flags(c, a->flags); return c; };

  auto* nodes = flags(app.add_subcommand("nodes", "List nodes: health, free capacity, topology, last heartbeat"));
  client::add_list_flags(nodes, a->flags);
  nodes->callback([&ctx, a, nodes] {
    if (!nodes->get_subcommands().empty()) return;  // `nodes apply` runs on its own
    auto s = Session::open(a->flags);
    ctx.exit_code = s ? run_nodes(*s, *a) : report("nodes", s.error());
  });
  auto* nodes_apply = flags(nodes->add_subcommand("apply", "Add the nodes of a nodes YAML (allot topology import's output) to the server"));
  nodes_apply->add_option("file", a->file, "Nodes YAML; - for stdin")->required();
  on_run(nodes_apply, ctx, a, "nodes apply", run_nodes_apply);
  auto* teams = flags(app.add_subcommand("teams", "List teams: quota, usage, borrowed, lent, jobs"));
  client::add_list_flags(teams, a->flags);
  on_run(teams, ctx, a, "teams", run_teams);

  auto* events = flags(app.add_subcommand("events", "What the scheduler did and why"));
  events->add_flag("-f,--follow", a->follow, "Keep printing events as they happen");
  events->add_option("--since", a->since, "Start after this event sequence number");
  events->add_option("--job", a->job, "Only the events of this job");
  on_run(events, ctx, a, "events", run_events);

  // `allot topology` belongs to the interop tools (import, slurm-conf, mermaid); `show` reads the server's.
  CLI::App* topo = nullptr;
  try {
    topo = app.get_subcommand("topology");
  } catch (const CLI::OptionNotFound&) {
    topo = app.add_subcommand("topology", "Cluster topology");
    topo->require_subcommand(1);
  }
  on_run(flags(topo->add_subcommand("show", "The server's topology tree: levels, domains and their nodes")), ctx, a,
         "topology show", run_topology);

  auto* node = app.add_subcommand("node", "Node lifecycle: cordon, uncordon, drain, health, adopt");
  node->require_subcommand(1);
  for (const char* action : {"cordon", "uncordon", "drain"}) {
    const std::string help = std::string(action) == "drain" ? "Cordon the node and suspend its jobs (they resume elsewhere)"
                             : std::string(action) == "cordon" ? "Admit nothing new to the node"
                                                               : "Admit jobs to the node again";
    auto* c = flags(node->add_subcommand(action, help));
    c->add_option("name", a->name, "Node name")->required();
    c->callback([&ctx, a, action] {
      a->action = action;
      auto s = Session::open(a->flags);
      ctx.exit_code = s ? run_node_action(*s, *a) : report(std::string("node ") + action, s.error());
    });
  }
  add_node_adopt_command(*node, ctx);
  auto* del = flags(node->add_subcommand("delete", "Remove a node from the cluster (its agent may join again)"));
  del->add_option("name", a->name, "Node name")->required();
  on_run(del, ctx, a, "node delete", run_node_delete);
  auto* health = flags(node->add_subcommand("health", "Set a node's health"));
  health->add_option("name", a->name, "Node name")->required();
  health->add_option("health", a->health, "Schedulable, Unschedulable, UnschedulablePendingReboot or UnschedulablePendingReplacement")
      ->required();
  health->callback([&ctx, a] {
    a->action = "health";
    auto s = Session::open(a->flags);
    ctx.exit_code = s ? run_node_action(*s, *a) : report("node health", s.error());
  });
}

}  // namespace allot::cli
