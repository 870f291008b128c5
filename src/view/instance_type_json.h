#pragma once
// An instance type as the API shows it (GET /v1/instance-types) and as the CLI reads it back, so that `allot submit`
// knows the types a server was given in its policy file (`allot server --instance-types`), not only the built-in ones.
#include <nlohmann/json.hpp>

#include "core/model/catalog.h"

namespace allot::view {

// {"name", "accelerator_kind", "accelerator_model", "accelerators", "accelerator_memory_gib",
//  "neuron_cores_per_accelerator", "vcpus", "memory_gib", "efa_interfaces", "ultraserver_size",
//  "numa": [{"accelerators": [...], "first_vcpu", "vcpus"}]}
nlohmann::json instance_type_json(const InstanceType& t);
// The reverse of instance_type_json; an error names the key that is missing or of the wrong type.
Result<InstanceType> instance_type_from_json(const nlohmann::json& j);

}  // namespace allot::view
