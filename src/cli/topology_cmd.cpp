// allot topology import | apply | slurm-conf | mermaid: argument parsing, file reading and printing only; the work
// is in interop/ (and the server, for apply). Invalid input of any kind (unreadable file, malformed content) exits
// 2 with a message on stderr.
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include <csignal>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "client/cli_flags.h"
#include "client/session.h"
#include "config/spec_yaml.h"
#include "core/model/catalog.h"
#include "interop/ec2_topology.h"
#include "interop/mermaid.h"
#include "interop/slurm_topology.h"
#include "client/http_client.h"
#include "client/output.h"

namespace allot::cli {
namespace {

// "-" reads standard input, so `aws ec2 describe-instance-topology | allot topology import --ec2 -` works.
Result<std::string> read_text(const std::string& path) {
  if (path == "-") return std::string(std::istreambuf_iterator<char>(std::cin), {});
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::invalid("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int topology_fail(const std::string& what, const Error& e) {
  std::cerr << "allot topology " << what << ": " << e.message << "\n";
  return 2;
}

struct TopologyArgs {
  std::string ec2_file, names_file, nodes_file, plugin = "auto";
  int max_group = interop::MermaidOptions{}.max_nodes_per_group;
  // The live cluster instead of a nodes file: the server's nodes (any health; retired ones have left).
  client::ClientFlags flags;
  bool live = false;       // --server given (or no --nodes)
  std::string watch_file;  // slurm-conf --watch FILE: rewritten whenever the nodes change
  double interval_s = 2;
};

// The server's nodes as node specs, sorted by name.
Result<std::vector<NodeSpec>> nodes_from_server(const client::ClientFlags& flags) {
  auto session = client::Session::open(flags);
  if (!session) return session.error();
  auto nodes = session->api().get("/v1/nodes");
  if (!nodes) return nodes.error();
  std::vector<NodeSpec> out;
  try {
    for (const auto& n : *nodes) {
      auto str = [&](const char* k) { return n.contains(k) && n[k].is_string() ? n[k].get<std::string>() : std::string(); };
      NodeSpec spec{str("name"), str("instance_type"), str("instance_group"), {}};
      if (n.contains("labels") && n["labels"].is_object())
        for (const auto& [k, v] : n["labels"].items())
          if (v.is_string()) spec.labels[k] = v.get<std::string>();
      out.push_back(std::move(spec));
    }
  } catch (const nlohmann::json::exception& e) {
    return Error::internal(std::string("the server's node list cannot be read: ") + e.what());
  }
  return out;
}

Result<std::vector<NodeSpec>> input_nodes(const TopologyArgs& a, const Catalog& catalog) {
  if (a.live || a.nodes_file.empty()) return nodes_from_server(a.flags);
  return load_nodes_file(a.nodes_file, catalog);
}

volatile std::sig_atomic_t g_stop_watch = 0;
extern "C" void on_watch_signal(int) { g_stop_watch = 1; }

// Writes `text` to `path` through a temporary file and a rename, so Slurm never reads half a file.
Status write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!(out << text)) return Error::internal("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Error::internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return ok_status();
}

int run_topology_import(const TopologyArgs& a) {
  Catalog catalog = Catalog::builtin();
  auto text = read_text(a.ec2_file);
  if (!text) return topology_fail("import", text.error());
  auto imported = interop::import_ec2_topology(*text, catalog);
  if (!imported) return topology_fail("import", imported.error());
  if (!a.names_file.empty()) {
    auto map_text = read_text(a.names_file);
    if (!map_text) return topology_fail("import", map_text.error());
    auto names = interop::parse_name_map(*map_text);
    if (!names) return topology_fail("import", names.error());
    if (auto st = interop::rename_nodes(imported->nodes, *names, imported->warnings); !st)
      return topology_fail("import", st.error());
  }
  for (const auto& w : imported->warnings) std::cerr << "allot topology import: warning: " << w << "\n";
  std::cout << nodes_to_yaml(imported->nodes);
  return 0;
}

// Sets the network layers of the live cluster's nodes from describe-instance-topology output (docs/topology.md,
// "Live nodes"): the file is read and checked here, so a malformed one reaches no server; the server matches the
// instance ids to its nodes and journals the changes as one record.
int run_topology_apply(const TopologyArgs& a) {
  auto text = read_text(a.ec2_file);
  if (!text) return topology_fail("apply", text.error());
  auto parsed = interop::parse_ec2_instances(*text);
  if (!parsed) return topology_fail("apply", parsed.error());
  for (const auto& w : parsed->warnings) std::cerr << "allot topology apply: warning: " << w << "\n";
  nlohmann::json entries = nlohmann::json::array();
  for (const auto& i : parsed->instances) entries.push_back({{"instance_id", i.id}, {"layers", i.network_nodes}});
  auto session = client::Session::open(a.flags);
  if (!session) return topology_fail("apply", session.error());
  auto answer = session->api().post("/v1/topology/apply", {{"instances", entries}});
  if (!answer) {
    std::cerr << "allot topology apply: " << answer.error().message << "\n";
    return client::exit_code_for(answer.error());
  }
  if (a.flags.output == "json" || a.flags.output == "yaml") {
    std::cout << client::render_data(*answer, a.flags.output == "json" ? client::Format::kJson : client::Format::kYaml);
  } else if (a.flags.output == "name") {
    for (const auto& n : (*answer)["nodes"]) std::cout << client::text(n, "node") << "\n";
  } else {
    client::Table t({"NODE", "INSTANCE", "LAYERS", "CHANGED"});
    for (const auto& n : (*answer)["nodes"])
      t.add({client::text(n, "node"), client::text(n, "instance_id"), client::join(n["layers"], "/"),
             n.value("changed", false) ? "yes" : "no"});
    std::cout << t.str();
  }
  for (const auto& id : (*answer)["unknown"])
    std::cerr << "allot topology apply: warning: instance " << id.get<std::string>() << " is not a node in the cluster\n";
  std::cerr << "allot topology apply: " << answer->value("changed", 0) << " of " << (*answer)["nodes"].size()
            << " matched nodes changed; " << (*answer)["unknown"].size() << " instances unknown\n";
  return 0;
}

int run_slurm_conf(const TopologyArgs& a) {
  Catalog catalog = Catalog::builtin();
  auto plugin = interop::parse_slurm_plugin(a.plugin);
  if (!plugin) return topology_fail("slurm-conf", plugin.error());
  if (a.watch_file.empty()) {
    auto nodes = input_nodes(a, catalog);
    if (!nodes) return topology_fail("slurm-conf", nodes.error());
    auto conf = interop::slurm_topology_conf(*nodes, catalog, *plugin);
    if (!conf) return topology_fail("slurm-conf", conf.error());
    std::cout << conf->text;
    return 0;
  }
  // --watch: HyperPod rewrites topology.conf when nodes join, leave or are replaced; so does this, until
  // SIGINT or SIGTERM. A server that cannot be reached for a while leaves the file as it was.
  std::signal(SIGINT, on_watch_signal);
  std::signal(SIGTERM, on_watch_signal);
  std::string written;
  bool reported = false;
  while (!g_stop_watch) {
    auto nodes = nodes_from_server(a.flags);
    if (!nodes && !reported) std::cerr << "allot topology slurm-conf: " << nodes.error().message << "; retrying\n";
    reported = !nodes;
    if (nodes) {
      auto conf = interop::slurm_topology_conf(*nodes, catalog, *plugin);
      if (!conf) return topology_fail("slurm-conf", conf.error());
      if (conf->text != written) {
        if (auto st = write_atomically(a.watch_file, conf->text); !st) return topology_fail("slurm-conf", st.error());
        written = conf->text;
        std::cerr << "allot topology slurm-conf: wrote " << a.watch_file << " (" << nodes->size() << " nodes)" << std::endl;
      }
    }
    for (int i = 0; i < static_cast<int>(a.interval_s * 10) && !g_stop_watch; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return 0;
}

int run_mermaid(const TopologyArgs& a) {
  Catalog catalog = Catalog::builtin();
  auto nodes = input_nodes(a, catalog);
  if (!nodes) return topology_fail("mermaid", nodes.error());
  auto chart = interop::topology_mermaid(*nodes, {.max_nodes_per_group = a.max_group});
  if (!chart) return topology_fail("mermaid", chart.error());
  std::cout << *chart;
  return 0;
}

}  // namespace

void add_topology_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<TopologyArgs>();
  CLI::App* topo = app.add_subcommand("topology", "Import or apply EC2 topology, write Slurm topology.conf or a Mermaid chart");
  topo->require_subcommand(1);

  CLI::App* imp = topo->add_subcommand("import", "EC2 describe-instance-topology JSON -> nodes YAML on stdout");
  imp->add_option("--ec2", args->ec2_file, "describe-instance-topology output (JSON); - for stdin")->required();
  imp->add_option("--names", args->names_file, "YAML map `instance-id: node-name` to name nodes as hosts are named");
  imp->callback([&ctx, args] { ctx.exit_code = run_topology_import(*args); });

  // The live cluster's nodes: --server (and --token, --ca, --context as for every client command).
  auto live = [args](CLI::App* c) {
    c->add_option("--server", args->flags.server, "Read the nodes from this allot server instead of --nodes")
        ->each([args](const std::string&) { args->live = true; });
    c->add_option("--token", args->flags.token, "Bearer token (default: $ALLOT_TOKEN, then the config context's)");
    c->add_option("--context", args->flags.context, "Config file context to use");
    c->add_option("--ca", args->flags.ca_file, "PEM CA certificate of an https:// server");
  };
  CLI::App* apply = topo->add_subcommand(
      "apply", "Set the network layers of the server's nodes from describe-instance-topology output, by instance id (admin)");
  apply->add_option("FILE", args->ec2_file, "describe-instance-topology output (JSON); - for stdin")->required();
  client::add_client_flags(apply, args->flags);
  apply->callback([&ctx, args] { ctx.exit_code = run_topology_apply(*args); });

  CLI::App* slurm = topo->add_subcommand("slurm-conf", "Nodes YAML or a live server's nodes -> Slurm topology.conf on stdout");
  slurm->add_option("--nodes", args->nodes_file, "nodes YAML (a scenario's cluster.nodes list); without it, the server's nodes");
  live(slurm);
  slurm->add_option("--watch", args->watch_file,
                    "Keep FILE up to date with the server's nodes (rewritten when nodes join, leave or are replaced) until interrupted");
  slurm->add_option("--interval", args->interval_s, "With --watch: seconds between looks at the server")->capture_default_str();
  slurm->add_option("--plugin", args->plugin, "tree, block (Slurm 23.11+) or auto (block for UltraServer clusters)")
      ->check(CLI::IsMember({"tree", "block", "auto"}))
      ->capture_default_str();
  slurm->callback([&ctx, args] { ctx.exit_code = run_slurm_conf(*args); });

  CLI::App* mer = topo->add_subcommand("mermaid", "Nodes YAML or a live server's nodes -> Mermaid flowchart of the topology on stdout");
  mer->add_option("--nodes", args->nodes_file, "nodes YAML (a scenario's cluster.nodes list); without it, the server's nodes");
  live(mer);
  mer->add_option("--max-group", args->max_group, "draw larger groups of nodes as one range box")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  mer->callback([&ctx, args] { ctx.exit_code = run_mermaid(*args); });
}

}  // namespace allot::cli
