#include "interop/ec2_topology.h"

#include <cctype>
#include <set>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "core/model/spec.h"
#include "interop/topology_labels.h"

namespace allot::interop {
namespace {

using nlohmann::json;

bool has_control(const std::string& s);

// Reads an optional string field; a present field of another type (or JSON null, which EC2 uses while the
// data propagates) is reported through `error` or treated as absent respectively.
Result<std::string> string_field(const json& obj, const char* key, const std::string& where, bool required) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) {
    if (required) return Error::invalid(where + " has no " + key);
    return std::string();
  }
  if (!it->is_string()) return Error::invalid(where + ": " + key + " must be a string, not " + it->type_name());
  std::string s = it->get<std::string>();
  if (required && s.empty()) return Error::invalid(where + ": " + key + " is empty");
  if (has_control(s)) return Error::invalid(where + ": " + key + " contains a control character");
  return s;
}

// The nodes file the import writes is read back by the other topology tools, where a comma or a bracket
// makes a host list and control characters are refused.
bool has_control(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// The readers of that file check node names by the naming rule (core/model/spec.h), so a name the import writes
// must pass the same rule, or the file would not read back.
Status valid_node_name(const std::string& name) { return check_name(NameKind::kNode, name); }

}  // namespace

Result<Ec2Instances> parse_ec2_instances(std::string_view json_text) {
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    // Not only parse_error: a number beyond double's range ("1e400") is an out_of_range (found by
    // fuzz/ec2_topology_fuzz.cpp; it used to end the program).
    return Error::invalid("EC2 topology: not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!doc.is_object() || !doc.contains("Instances"))
    return Error::invalid(
        "EC2 topology: expected the output of `aws ec2 describe-instance-topology`, an object with "
        "\"Instances\"");
  const json& instances = doc["Instances"];
  if (!instances.is_array()) return Error::invalid("EC2 topology: \"Instances\" must be an array");
  if (instances.empty()) return Error::invalid("EC2 topology: \"Instances\" is empty, there is nothing to import");

  Ec2Instances out;
  if (auto it = doc.find("NextToken"); it != doc.end() && it->is_string() && !it->get<std::string>().empty())
    out.warnings.push_back(
        "the answer has a NextToken: it is one page of several; instances on the other pages are missing "
        "(run describe-instance-topology without --max-items to get them all)");

  std::set<std::string> ids;
  for (size_t i = 0; i < instances.size(); ++i) {
    const json& inst = instances[i];
    std::string where = "Instances[" + std::to_string(i) + "]";
    if (!inst.is_object()) return Error::invalid(where + " must be an object, not " + inst.type_name());
    auto id = string_field(inst, "InstanceId", where, true);
    if (!id) return id.error();
    if (auto st = valid_node_name(*id); !st)
      return Error::invalid(where + ": InstanceId '" + printable(*id) + "' cannot name a node (" + st.error().message +
                            "); EC2 ids look like i-0123456789abcdef0");
    where += " (" + *id + ")";
    if (!ids.insert(*id).second) return Error::invalid(where + ": InstanceId appears more than once");
    auto type = string_field(inst, "InstanceType", where, true);
    if (!type) return type.error();
    auto az = string_field(inst, "AvailabilityZone", where, false);
    if (!az) return az.error();
    auto zone_id = string_field(inst, "ZoneId", where, false);
    if (!zone_id) return zone_id.error();
    auto block = string_field(inst, "CapacityBlockId", where, false);
    if (!block) return block.error();

    auto nn = inst.find("NetworkNodes");
    if (nn == inst.end() || nn->is_null() || (nn->is_array() && nn->empty()))
      return Error::invalid(where +
                            " has no NetworkNodes (EC2 returns none for instance types without topology support "
                            "and for instances that are not running)");
    if (!nn->is_array()) return Error::invalid(where + ": NetworkNodes must be an array of strings");
    Ec2Instance e{.id = *id, .type = *type};
    for (size_t l = 0; l < nn->size(); ++l) {
      const json& v = (*nn)[l];
      if (!v.is_string())
        return Error::invalid(where + ": NetworkNodes[" + std::to_string(l) + "] must be a string, not " + v.type_name());
      e.network_nodes.push_back(v.get<std::string>());
    }
    if (auto st = check_network_layers(e.network_nodes); !st)
      return Error::invalid(where + ": NetworkNodes: " + st.error().message);
    // The zone name is what people and Kubernetes use; the zone id is the same place under another name.
    e.zone = !az->empty() ? *az : *zone_id;
    if (e.zone.empty()) return Error::invalid(where + " has neither AvailabilityZone nor ZoneId");
    e.capacity_block = *block;
    out.instances.push_back(std::move(e));
  }
  return out;
}

const Ec2Instance* find_instance(const Ec2Instances& parsed, std::string_view instance_id) {
  for (const auto& i : parsed.instances)
    if (i.id == instance_id) return &i;
  return nullptr;
}

Result<Ec2Import> import_ec2_topology(std::string_view json_text, const Catalog& catalog) {
  auto parsed = parse_ec2_instances(json_text);
  if (!parsed) return parsed.error();
  Ec2Import out;
  out.warnings = std::move(parsed->warnings);
  for (size_t i = 0; i < parsed->instances.size(); ++i) {
    const Ec2Instance& e = parsed->instances[i];
    const std::string where = "Instances[" + std::to_string(i) + "] (" + e.id + ")";
    NodeSpec node;
    node.name = e.id;
    node.instance_type = canonical_type_name(e.type);
    node.labels[std::string(kInstanceIdLabel)] = e.id;
    for (size_t l = 0; l < e.network_nodes.size(); ++l) node.labels[network_layer_label(int(l) + 1)] = e.network_nodes[l];
    node.labels[std::string(kZoneLabel)] = e.zone;

    auto type_id = catalog.find(node.instance_type);
    int us_size = type_id ? catalog.at(*type_id).ultraserver_size : -1;  // -1: the catalog does not know
    if (!type_id)
      out.warnings.push_back(where + ": instance type " + node.instance_type +
                             " is not in the catalog; add it before using these nodes");
    if (!e.capacity_block.empty()) {
      if (us_size == 0)
        out.warnings.push_back(where + ": CapacityBlockId ignored, " + node.instance_type +
                               " has no UltraServers so the block is not an NVLink domain");
      else
        node.labels[std::string(kUltraserverIdLabel)] = e.capacity_block;
    } else if (us_size > 0) {
      out.warnings.push_back(where + ": " + node.instance_type +
                             " comes in UltraServers but the instance has no CapacityBlockId yet (EC2 fills it in "
                             "eventually); it gets no ultraserver-id label");
    }
    out.nodes.push_back(std::move(node));
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_name_map(std::string_view yaml_text) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Error::invalid("name map: not valid YAML (" + std::string(e.what()) + ")");
  }
  if (!doc.IsMap()) return Error::invalid("name map: expected a mapping `instance-id: node-name` per line");
  std::map<std::string, std::string> out;
  for (const auto& kv : doc) {
    int line = kv.first.Mark().line + 1;
    if (!kv.first.IsScalar() || !kv.second.IsScalar())
      return Error::invalid("name map line " + std::to_string(line) + ": expected `instance-id: node-name`");
    std::string id = kv.first.Scalar(), name = kv.second.Scalar();
    if (auto st = valid_node_name(name); !st)
      return Error::invalid("name map line " + std::to_string(line) + ": '" + printable(name) + "' is not a node name (" +
                            st.error().message + ")");
    if (!out.emplace(id, name).second)
      return Error::invalid("name map line " + std::to_string(line) + ": " + id + " is mapped twice");
  }
  return out;
}

Status rename_nodes(std::vector<NodeSpec>& nodes, const std::map<std::string, std::string>& names,
                    std::vector<std::string>& warnings) {
  std::map<std::string, std::string> owner;  // new name -> instance id
  for (NodeSpec& node : nodes) {
    std::string id = node.name;
    auto it = names.find(id);
    if (it == names.end()) {
      warnings.push_back(id + " is not in the name map; it keeps its instance id as its name");
    } else {
      node.name = it->second;
    }
    auto [o, inserted] = owner.emplace(node.name, id);
    if (!inserted) return Error::invalid("name map: " + o->second + " and " + id + " would both be named " + node.name);
  }
  return ok_status();
}

}  // namespace allot::interop
