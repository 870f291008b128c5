#pragma once
// EC2 `aws ec2 describe-instance-topology` output -> nodes with topology labels.
//
// The answer is {"Instances": [{"InstanceId", "InstanceType", "GroupName", "NetworkNodes": [...],
// "AvailabilityZone", "ZoneId", "CapacityBlockId"}], "NextToken"}. NetworkNodes lists one network node per
// layer, top (layer 1) to bottom (the node the instance is attached to); 3 or 4 layers depending on the
// instance type. CapacityBlockId is only returned for UltraServer instances and identifies the UltraServer
// (NVLink) domain, so it becomes the ultraserver-id label.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::interop {

// One instance of the answer as EC2 gives it, checked: an id that can name a node, a type, the zone (the zone
// name, else the zone id), the capacity block (empty: none) and 3 or 4 network nodes, top to bottom.
struct Ec2Instance {
  std::string id;
  std::string type;  // as EC2 spells it (p5.48xlarge)
  std::string zone;
  std::string capacity_block;
  std::vector<std::string> network_nodes;
};
struct Ec2Instances {
  std::vector<Ec2Instance> instances;  // in the order of the answer, each id once
  std::vector<std::string> warnings;   // a NextToken (one page of several)
};
// Parses the JSON text. Errors name the instance (by index and id) and what is wrong: malformed JSON, a missing or
// mistyped field, NetworkNodes that break the layers' rule (core check_network_layers), a repeated InstanceId.
// The one reader of the format: `allot topology import`, `allot topology apply` and `allot agent --ec2-topology`.
Result<Ec2Instances> parse_ec2_instances(std::string_view json_text);

// The entry of `instance_id` in the parsed answer, or nullptr.
const Ec2Instance* find_instance(const Ec2Instances& parsed, std::string_view instance_id);

struct Ec2Import {
  std::vector<NodeSpec> nodes;        // in the order of the answer; named by InstanceId, which is also their
                                      // allot.dev/instance-id label (core kInstanceIdLabel)
  std::vector<std::string> warnings;  // things worth telling a person that do not stop the import
};

// parse_ec2_instances, then a node per instance. Instance types get the ml. prefix; a type the catalog does not know is kept, with a warning.
Result<Ec2Import> import_ec2_topology(std::string_view json_text, const Catalog& catalog);

// A node-name map, as YAML: `i-0123456789abcdef0: gpu-1` per line. Slurm and Kubernetes name nodes by host
// name, not by instance id, and the tools downstream must use the same names.
Result<std::map<std::string, std::string>> parse_name_map(std::string_view yaml_text);

// Renames imported nodes by the map. Instances missing from the map keep their id (a warning each, added to
// `warnings`); two instances mapped to one name are an error.
Status rename_nodes(std::vector<NodeSpec>& nodes, const std::map<std::string, std::string>& names,
                    std::vector<std::string>& warnings);

}  // namespace allot::interop
