#include "view/instance_type_json.h"

namespace allot::view {

using nlohmann::json;

json instance_type_json(const InstanceType& t) {
  json numa = json::array();
  for (const auto& d : t.numa) numa.push_back({{"accelerators", d.accelerators}, {"first_vcpu", d.first_vcpu}, {"vcpus", d.vcpus}});
  json out = {{"name", t.name},
          {"accelerator_kind", accelerator_kind_name(t.accelerator_kind)},
          {"accelerator_model", t.accelerator_model},
          {"accelerators", t.accelerators},
          {"accelerator_memory_gib", t.accelerator_memory_gib},
          {"neuron_cores_per_accelerator", t.neuron_cores_per_accelerator},
          {"vcpus", t.vcpus},
          {"memory_gib", t.memory_gib},
          {"efa_interfaces", t.efa_interfaces},
          {"ultraserver_size", t.ultraserver_size},
          {"numa", numa}};
  // A MIG type (docs/mig.md): its base type, profile and devices per GPU; absent for other types.
  if (t.is_mig()) {
    out["mig_base"] = t.mig_base;
    out["mig_profile"] = t.mig_profile;
    out["mig_per_gpu"] = t.mig_per_gpu;
  }
  return out;
}

Result<InstanceType> instance_type_from_json(const json& j) {
  try {
    InstanceType t;
    t.name = j.at("name").get<std::string>();
    const std::string kind = j.at("accelerator_kind").get<std::string>();
    bool known = false;
    for (AcceleratorKind k : {AcceleratorKind::kNone, AcceleratorKind::kNvidiaGpu, AcceleratorKind::kNeuron})
      if (kind == accelerator_kind_name(k)) t.accelerator_kind = k, known = true;
    if (!known) return Error::invalid("instance type " + t.name + ": unknown accelerator_kind '" + kind + "'");
    t.accelerator_model = j.at("accelerator_model").get<std::string>();
    t.accelerators = j.at("accelerators").get<int>();
    t.accelerator_memory_gib = j.at("accelerator_memory_gib").get<int>();
    t.neuron_cores_per_accelerator = j.at("neuron_cores_per_accelerator").get<int>();
    t.vcpus = j.at("vcpus").get<int>();
    t.memory_gib = j.at("memory_gib").get<int>();
    t.efa_interfaces = j.at("efa_interfaces").get<int>();
    t.ultraserver_size = j.at("ultraserver_size").get<int>();
    for (const auto& d : j.at("numa"))
      t.numa.push_back({d.at("accelerators").get<std::vector<int>>(), d.at("first_vcpu").get<int>(), d.at("vcpus").get<int>()});
    if (j.contains("mig_profile")) {
      t.mig_base = j.at("mig_base").get<std::string>();
      t.mig_profile = j.at("mig_profile").get<std::string>();
      t.mig_per_gpu = j.at("mig_per_gpu").get<int>();
    }
    return t;
  } catch (const json::exception& e) {
    return Error::invalid(std::string("malformed instance type: ") + e.what());
  }
}

}  // namespace allot::view
