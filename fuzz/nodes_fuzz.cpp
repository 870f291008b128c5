// Nodes YAML (`cluster.nodes`, `allot topology slurm-conf|mermaid --nodes FILE`, POST /v1/nodes): host lists,
// instance types and topology labels, then everything the topology tools derive from the labels: each
// node's place in the hierarchy, the Slurm topology.conf (tree, block and auto) and the Mermaid chart.
#include "config/spec_yaml.h"
#include "fuzz_checks.h"
#include "interop/mermaid.h"
#include "interop/slurm_topology.h"
#include "interop/topology_labels.h"

namespace {
const allot::Catalog& catalog() {
  static const allot::Catalog c = allot::Catalog::builtin();
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  auto nodes = parse_nodes_text(fuzz::text_of(data, size), catalog(), "nodes.yaml");
  if (!fuzz::accepted(nodes, "parse_nodes_text")) return 0;
  if (nodes->size() > 512) return 0;  // large host lists are valid; the writers are not what is under test there
  for (const NodeSpec& n : *nodes) {
    fuzz::accepted(interop::canonical_labels(n), "canonical_labels");
    fuzz::accepted(interop::node_placement(n), "node_placement");
  }
  for (auto plugin : {interop::SlurmPlugin::kTree, interop::SlurmPlugin::kBlock, interop::SlurmPlugin::kAuto})
    fuzz::accepted(interop::slurm_topology_conf(*nodes, catalog(), plugin), "slurm_topology_conf");
  fuzz::accepted(interop::topology_mermaid(*nodes), "topology_mermaid");
  // What nodes_to_yaml writes must read back to the same nodes.
  auto back = parse_nodes_text(nodes_to_yaml(*nodes), catalog(), "written.yaml");
  if (!back) fuzz::fail("nodes_to_yaml output does not read back", back.error().message);
  fuzz::require(*back == *nodes, "nodes -> YAML -> nodes");
  return 0;
}
