#pragma once
// MIG (NVIDIA Multi-Instance GPU) profiles and the instance types they make (docs/mig.md).
//
// A node whose GPUs are all partitioned in one MIG profile is a node of its own instance type, the MIG type
// `<base type>.mig-<profile>` ("ml.p4de.24xlarge.mig-1g.10gb"): its accelerators are the MIG devices (8 GPUs x 7
// instances of 1g.10gb = 56), its vCPUs, memory, EFA and NUMA domains are the base type's (each device in the
// domain of its GPU). Quotas, requests, placement, lending, borrowing, fair share and preemption work on a MIG type
// exactly as on any other type, so the core needs no second kind of resource; a whole-GPU job names the base type
// (or none: a pod set without a type never considers MIG types), so it never lands on a partitioned GPU.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace allot {

struct InstanceType;

// One MIG profile of a GPU model: its name as nvidia-smi and the device plugin spell it ("1g.10gb"), how many
// instances of it one GPU holds when the whole GPU is partitioned in it, and the memory of one instance.
struct MigProfile {
  std::string_view name;
  int per_gpu = 0;
  int memory_gib = 0;
};

// The profiles of a GPU model with that much memory per GPU (catalog facts: accelerator_model and
// accelerator_memory_gib), smallest first; empty for a model without MIG (A10G, L4, L40S, Trainium, ...).
std::span<const MigProfile> mig_profiles(std::string_view accelerator_model, int accelerator_memory_gib);

// "ml.p4de.24xlarge" + "1g.10gb" -> "ml.p4de.24xlarge.mig-1g.10gb".
std::string mig_type_name(std::string_view base_type, std::string_view profile);
inline constexpr std::string_view kMigTypeInfix = ".mig-";

// The base type and profile a MIG type's name is made of; nullopt for a name without ".mig-".
struct MigTypeParts {
  std::string base;
  std::string profile;
};
std::optional<MigTypeParts> split_mig_type_name(std::string_view name);

// The resource a Kubernetes pod asks for a device of this profile with under the device plugin's mixed strategy
// (and Kueue counts in a ResourceFlavor): "nvidia.com/mig-1g.10gb".
std::string mig_resource_name(std::string_view profile);
inline constexpr std::string_view kMigResourcePrefix = "nvidia.com/mig-";

// The MIG types of `base`, one per profile of its GPU model (empty for a type without MIG). REQUIRES: base is a
// valid catalog type.
std::vector<InstanceType> mig_instance_types(const InstanceType& base);

}  // namespace allot
