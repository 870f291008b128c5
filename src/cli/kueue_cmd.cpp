// allot export kueue FILE|--server URL | allot import kueue FILE...: argument parsing, reading and printing
// only; the mapping is in interop/kueue.h. Invalid input exits 2 with a message on stderr; what does not map on import is
// a warning on stderr, and the command still succeeds.
#include <iostream>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "client/session.h"
#include "client/spec_json.h"
#include "config/spec_yaml.h"
#include "core/model/catalog.h"
#include "core/placement/topology_levels.h"
#include "interop/kueue.h"
#include "interop/topology_labels.h"

namespace allot::cli {
namespace {

struct KueueArgs {
  std::string file;
  std::vector<std::string> files;
  interop::KueueExportOptions options;
  std::string api_version = "v1beta2";
  // export from a live server instead of a file: --server (and --token, --context, --ca as for every client
  // command), or no FILE.
  client::ClientFlags flags;
};

int kueue_fail(const std::string& what, const Error& e) {
  std::cerr << "allot " << what << ": " << e.message << "\n";
  return 2;
}

// The topology levels the file's nodes carry, coarse to fine, ending with the hostname; empty without nodes.
Result<std::vector<std::string>> levels_of_nodes(const YAML::Node& root, const Catalog& catalog, const std::string& origin) {
  if (!root["cluster"] || !root["cluster"]["nodes"]) return std::vector<std::string>{};
  auto nodes = parse_nodes(root["cluster"]["nodes"], catalog, {origin, "cluster.nodes", 0});
  if (!nodes) return nodes.error();
  std::set<std::string> present;
  for (const auto& n : *nodes) {
    auto labels = interop::canonical_labels(n);
    if (!labels) return labels.error();
    for (const auto& kv : *labels) present.insert(kv.first);
  }
  std::vector<std::string> levels;
  for (const auto& l : default_topology_levels())
    if (present.contains(l) || l == kHostnameLabel) levels.push_back(l);
  return levels;
}

// A live server's policy, teams and nodes as a teams file's text (JSON, which YAML reads), so that the export
// reads it exactly as it reads a file: GET /v1/policy answers what PUT takes, a team's view becomes the entry
// a PUT takes, and the nodes keep what a nodes file holds. These reads need a reader role (docs/security.md).
Result<std::string> teams_file_of_server(const client::ClientFlags& flags) {
  auto session = client::Session::open(flags);
  if (!session) return session.error();
  auto policy = session->api().get("/v1/policy");
  if (!policy) return policy.error();
  auto teams = session->api().get("/v1/teams");
  if (!teams) return teams.error();
  auto nodes = session->api().get("/v1/nodes");
  if (!nodes) return nodes.error();
  nlohmann::json file = {{"policy", *policy}, {"teams", nlohmann::json::array()}, {"cluster", {{"nodes", nlohmann::json::array()}}}};
  for (const auto& t : *teams) file["teams"].push_back(client::team_body_from_view(t));
  for (const auto& n : *nodes) {
    nlohmann::json spec = nlohmann::json::object();
    for (const char* k : {"name", "instance_type", "instance_group", "labels"})
      if (n.contains(k) && !n[k].is_null() && !(n[k].is_string() && n[k].get<std::string>().empty())) spec[k] = n[k];
    file["cluster"]["nodes"].push_back(std::move(spec));
  }
  if (file["cluster"]["nodes"].empty()) file.erase("cluster");
  return file.dump();
}

int run_export(KueueArgs& a) {
  // Without FILE: the server that --server, $ALLOT_SERVER or the config file's context names.
  const bool live = a.file.empty();
  auto text = live ? teams_file_of_server(a.flags) : client::read_input(a.file);
  if (!text) return kueue_fail("export kueue", text.error());
  const YamlContext ctx{live ? "the server's teams and policy" : a.file == "-" ? "<stdin>" : a.file, "", 0};
  auto doc = load_yaml(*text, ctx);
  if (!doc) return kueue_fail("export kueue", doc.error());
  if (!doc->IsMap()) return kueue_fail("export kueue", Error::invalid(ctx.origin + ": expected a teams file (policy and teams sections)"));
  const YAML::Node& root = *doc;
  Catalog catalog = Catalog::builtin();
  if (root["instance_types"]) {
    // Kueue's objects cannot carry a type's facts, so such a file would not come back from `import kueue`.
    auto t = parse_instance_types(root["instance_types"], catalog, {ctx.origin, "instance_types", 0});
    if (!t) return kueue_fail("export kueue", t.error());
    std::cerr << "allot export kueue: warning: instance_types: Kueue objects do not carry an instance type's facts; "
                 "`allot import kueue` will know only the built-in types\n";
  }
  PolicySpec policy;
  a.options.with_policy = static_cast<bool>(root["policy"]);
  if (root["policy"]) {
    auto p = parse_policy(root["policy"], {ctx.origin, "policy", 0});
    if (!p) return kueue_fail("export kueue", p.error());
    policy = *p;
  }
  std::vector<TeamSpec> teams;
  if (root["teams"]) {
    auto t = parse_teams(root["teams"], catalog, {ctx.origin, "teams", 0});
    if (!t) return kueue_fail("export kueue", t.error());
    teams = *t;
  }
  if (!root["policy"] && !root["teams"])
    return kueue_fail("export kueue", Error::invalid(ctx.origin + " has neither a policy nor a teams section"));
  if (a.options.topology_levels.empty()) {
    auto levels = levels_of_nodes(root, catalog, ctx.origin);
    if (!levels) return kueue_fail("export kueue", levels.error());
    a.options.topology_levels = *levels;
  } else {
    for (auto& l : a.options.topology_levels) l = canonical_level(l);
  }
  if (a.api_version == "v1beta1") a.options.api_version = interop::KueueApiVersion::kV1beta1;
  auto out = interop::export_kueue(policy, teams, catalog, a.options);
  if (!out) return kueue_fail("export kueue", out.error());
  for (const auto& w : out->warnings) std::cerr << "allot export kueue: warning: " << w << "\n";
  std::cout << out->yaml;
  return 0;
}

int run_kueue_import(KueueArgs& a) {
  const Catalog catalog = Catalog::builtin();
  interop::KueueImport result;
  for (const auto& f : a.files) {
    auto text = client::read_input(f);
    if (!text) return kueue_fail("import kueue", text.error());
    if (auto st = interop::import_kueue(*text, f == "-" ? "<stdin>" : f, catalog, result); !st)
      return kueue_fail("import kueue", st.error());
  }
  if (auto st = interop::finish_kueue_import(result); !st) return kueue_fail("import kueue", st.error());
  for (const auto& w : result.warnings) std::cerr << "allot import kueue: warning: " << w << "\n";
  if (result.teams.empty() && !result.has_policy)
    return kueue_fail("import kueue", Error::invalid("no ClusterQueue, WorkloadPriorityClass or Cohort with allot's policy in the "
                                               "input; nothing to import"));
  std::cout << interop::teams_file_yaml(result);
  return 0;
}

}  // namespace

void add_kueue_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<KueueArgs>();
  CLI::App* exp = app.add_subcommand("export", "Write allot's teams and policy in another system's objects");
  exp->require_subcommand(1);
  CLI::App* ek = exp->add_subcommand(
      "kueue", "Teams file or a live server (--server) -> Kueue objects (ResourceFlavors, Cohort, ClusterQueues, "
               "LocalQueues, WorkloadPriorityClasses, Topology) as multi-document YAML on stdout");
  ek->add_option("file", args->file,
                 "a teams file (the policy and teams sections of a scenario file); - for stdin; without it, the "
                 "server's (--server)");
  // The live cluster's teams, policy and nodes: --server (and --token, --context, --ca as for every client command).
  auto* server = ek->add_option("--server", args->flags.server, "Read the teams, policy and nodes from this allot server");
  server->excludes(ek->get_option("file"));
  ek->add_option("--token", args->flags.token, "Bearer token (default: $ALLOT_TOKEN, then the config context's)");
  ek->add_option("--context", args->flags.context, "Config file context to use");
  ek->add_option("--ca", args->flags.ca_file, "PEM CA certificate of an https:// server");
  ek->add_option("--cohort", args->options.cohort, "name of the Cohort every ClusterQueue joins")->capture_default_str();
  ek->add_option("--topology-name", args->options.topology_name, "name of the Topology the ResourceFlavors use")
      ->capture_default_str();
  ek->add_option("--api-version", args->api_version,
                 "Kueue API version to write: v1beta2 (Kueue's storage version) or v1beta1 (older clusters)")
      ->check(CLI::IsMember({"v1beta2", "v1beta1"}))
      ->capture_default_str();
  ek->add_option("--levels", args->options.topology_levels,
                 "topology levels, coarse to fine (default: those the file's cluster.nodes carry, else "
                 "network-node-layer-1..3 and hostname)")
      ->delimiter(',');
  ek->callback([&ctx, args] { ctx.exit_code = run_export(*args); });

  CLI::App* imp = app.add_subcommand("import", "Read another system's objects into allot's formats");
  imp->require_subcommand(1);
  CLI::App* ik = imp->add_subcommand(
      "kueue", "Kueue objects (YAML, e.g. kubectl get clusterqueues,localqueues,resourceflavors,"
               "workloadpriorityclasses,cohorts -o yaml) -> a teams file for `allot apply` on stdout; what does not "
               "map is a warning on stderr");
  ik->add_option("files", args->files, "files of Kueue objects; - for stdin")->required();
  ik->callback([&ctx, args] { ctx.exit_code = run_kueue_import(*args); });
}

}  // namespace allot::cli
