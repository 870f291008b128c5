// allot topology import | slurm-conf | mermaid: argument parsing, file reading and printing only; the work is
// in interop/. Invalid input of any kind (unreadable file, malformed content) exits 2 with a message on stderr.
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "config/spec_yaml.h"
#include "core/catalog.h"
#include "interop/ec2_topology.h"
#include "interop/mermaid.h"
#include "interop/slurm_topology.h"

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

int fail(const std::string& what, const Error& e) {
  std::cerr << "allot topology " << what << ": " << e.message << "\n";
  return 2;
}

struct TopologyArgs {
  std::string ec2_file, names_file, nodes_file, plugin = "auto";
  int max_group = interop::MermaidOptions{}.max_nodes_per_group;
};

int run_import(const TopologyArgs& a) {
  Catalog catalog = Catalog::builtin();
  auto text = read_text(a.ec2_file);
  if (!text) return fail("import", text.error());
  auto imported = interop::import_ec2_topology(*text, catalog);
  if (!imported) return fail("import", imported.error());
  if (!a.names_file.empty()) {
    auto map_text = read_text(a.names_file);
    if (!map_text) return fail("import", map_text.error());
    auto names = interop::parse_name_map(*map_text);
    if (!names) return fail("import", names.error());
    if (auto st = interop::rename_nodes(imported->nodes, *names, imported->warnings); !st)
      return fail("import", st.error());
  }
  for (const auto& w : imported->warnings) std::cerr << "allot topology import: warning: " << w << "\n";
  std::cout << nodes_to_yaml(imported->nodes);
  return 0;
}

int run_slurm_conf(const TopologyArgs& a) {
  Catalog catalog = Catalog::builtin();
  auto plugin = interop::parse_slurm_plugin(a.plugin);
  if (!plugin) return fail("slurm-conf", plugin.error());
  auto nodes = load_nodes_file(a.nodes_file, catalog);
  if (!nodes) return fail("slurm-conf", nodes.error());
  auto conf = interop::slurm_topology_conf(*nodes, catalog, *plugin);
  if (!conf) return fail("slurm-conf", conf.error());
  std::cout << conf->text;
  return 0;
}

int run_mermaid(const TopologyArgs& a) {
  Catalog catalog = Catalog::builtin();
  auto nodes = load_nodes_file(a.nodes_file, catalog);
  if (!nodes) return fail("mermaid", nodes.error());
  auto chart = interop::topology_mermaid(*nodes, {.max_nodes_per_group = a.max_group});
  if (!chart) return fail("mermaid", chart.error());
  std::cout << *chart;
  return 0;
}

}  // namespace

void add_topology_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<TopologyArgs>();
  CLI::App* topo = app.add_subcommand("topology", "Import EC2 topology, write Slurm topology.conf or a Mermaid chart");
  topo->require_subcommand(1);

  CLI::App* imp = topo->add_subcommand("import", "EC2 describe-instance-topology JSON -> nodes YAML on stdout");
  imp->add_option("--ec2", args->ec2_file, "describe-instance-topology output (JSON); - for stdin")->required();
  imp->add_option("--names", args->names_file, "YAML map `instance-id: node-name` to name nodes as hosts are named");
  imp->callback([&ctx, args] { ctx.exit_code = run_import(*args); });

  CLI::App* slurm = topo->add_subcommand("slurm-conf", "Nodes YAML -> Slurm topology.conf on stdout");
  slurm->add_option("--nodes", args->nodes_file, "nodes YAML (a scenario's cluster.nodes list)")->required();
  slurm->add_option("--plugin", args->plugin, "tree, block (Slurm 23.11+) or auto (block for UltraServer clusters)")
      ->check(CLI::IsMember({"tree", "block", "auto"}))
      ->capture_default_str();
  slurm->callback([&ctx, args] { ctx.exit_code = run_slurm_conf(*args); });

  CLI::App* mer = topo->add_subcommand("mermaid", "Nodes YAML -> Mermaid flowchart of the topology on stdout");
  mer->add_option("--nodes", args->nodes_file, "nodes YAML (a scenario's cluster.nodes list)")->required();
  mer->add_option("--max-group", args->max_group, "draw larger groups of nodes as one range box")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  mer->callback([&ctx, args] { ctx.exit_code = run_mermaid(*args); });
}

}  // namespace allot::cli
