// EC2 describe-instance-topology JSON (`allot topology import --ec2`), and the node-name map that renames
// the imported instances (`--names`): an input that starts with '!' is a name map (the rest of it), any other
// is the JSON, so the JSON seeds are used as they are. An import that
// succeeds is written as a nodes YAML, which must read back to the same nodes: that file is what the
// other topology tools are given next.
#include "config/spec_yaml.h"
#include "fuzz_checks.h"
#include "interop/ec2_topology.h"

namespace {
const allot::Catalog& catalog() {
  static const allot::Catalog c = allot::Catalog::builtin();
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  if (size > 0 && data[0] == '!') {
    fuzz::accepted(interop::parse_name_map(fuzz::text_of(data + 1, size - 1)), "parse_name_map");
    return 0;
  }
  auto imported = interop::import_ec2_topology(fuzz::text_of(data, size), catalog());
  if (!fuzz::accepted(imported, "import_ec2_topology")) return 0;
  // An instance type the catalog does not know is kept, with a warning: that file needs the type added to
  // an instance_types section before it reads back, so the round trip is checked for known types only.
  for (const NodeSpec& n : imported->nodes)
    if (!catalog().find(n.instance_type)) return 0;
  const std::string yaml = nodes_to_yaml(imported->nodes);
  auto back = parse_nodes_text(yaml, catalog(), "imported.yaml");
  if (!back) fuzz::fail("nodes YAML of an EC2 import does not read back", back.error().message + "\n" + yaml);
  fuzz::require(*back == imported->nodes, "EC2 import -> nodes YAML -> nodes", yaml);
  return 0;
}
