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

#include "core/catalog.h"
#include "core/result.h"
#include "core/spec.h"

namespace allot::interop {

struct Ec2Import {
  std::vector<NodeSpec> nodes;        // in the order of the answer; named by InstanceId
  std::vector<std::string> warnings;  // things worth telling a person that do not stop the import
};

// Parses the JSON text. Errors name the instance (by index and id) and what is wrong: malformed JSON,
// a missing or mistyped field, NetworkNodes that are not 3 or 4 non-empty strings, a repeated InstanceId.
// Instance types get the ml. prefix; a type the catalog does not know is kept, with a warning.
Result<Ec2Import> import_ec2_topology(std::string_view json_text, const Catalog& catalog);

// A node-name map, as YAML: `i-0123456789abcdef0: gpu-1` per line. Slurm and Kubernetes name nodes by host
// name, not by instance id, and the tools downstream must use the same names.
Result<std::map<std::string, std::string>> parse_name_map(std::string_view yaml_text);

// Renames imported nodes by the map. Instances missing from the map keep their id (a warning each, added to
// `warnings`); two instances mapped to one name are an error.
Status rename_nodes(std::vector<NodeSpec>& nodes, const std::map<std::string, std::string>& names,
                    std::vector<std::string>& warnings);

}  // namespace allot::interop
