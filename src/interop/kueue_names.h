#pragma once
// Internal to the Kueue export and import: the names HyperPod gives a team's Kueue objects, and the resource
// names of a ClusterQueue's quotas.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model/spec.h"

namespace allot::interop {

inline constexpr std::string_view kKueueApiGroup = "kueue.x-k8s.io/";
inline constexpr std::string_view kInstanceTypeLabel = "node.kubernetes.io/instance-type";
inline constexpr std::string_view kKueueCpu = "cpu";
inline constexpr std::string_view kKueueMemory = "memory";
inline constexpr std::string_view kKueueGpu = "nvidia.com/gpu";
inline constexpr std::string_view kKueueNeuron = "aws.amazon.com/neurondevice";
// The node label the NVIDIA GPU operator's mig-manager partitions a node by ("all-1g.10gb": every GPU in that
// profile): a ResourceFlavor of a MIG type selects its nodes with it (docs/mig.md).
inline constexpr std::string_view kMigConfigLabel = "nvidia.com/mig.config";

// A name that must be a DNS label (a namespace; a LocalQueue's name, which jobs carry as a label value):
// at most 63 characters. A longer one keeps its first 54 characters and ends with "-" and 8 hexadecimal digits
// of the FNV-1a hash of the whole name, so it is stable and two long names that share a beginning still differ.
inline constexpr size_t kMaxDnsLabel = 63;
inline std::string fit_dns_label(const std::string& name) {
  if (name.size() <= kMaxDnsLabel) return name;
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = name.substr(0, kMaxDnsLabel - 9);
  out += '-';
  for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(h >> shift) & 0xf];
  return out;
}

// HyperPod task governance names a team's namespace and queues after it; the namespace and the LocalQueue are
// shortened to DNS labels (fit_dns_label) for teams of more than 40 characters.
inline std::string team_namespace(const std::string& team) { return fit_dns_label("hyperpod-ns-" + team); }
inline std::string cluster_queue_name(const std::string& team) { return "hyperpod-ns-" + team + "-clusterqueue"; }
inline std::string local_queue_name(const std::string& team) {
  return fit_dns_label("hyperpod-ns-" + team + "-localqueue");
}
// Kueue's priority classes are named <name>-priority in HyperPod: the suffix is added unless the class's name
// has it already (a class inference-priority stays inference-priority, the name jobs' labels carry).
inline std::string priority_class_object_name(const std::string& cls) {
  return cls.ends_with("-priority") ? cls : cls + "-priority";
}

// `name` without `prefix` and `suffix` when it has both, else nullopt.
inline std::optional<std::string> strip_affixes(std::string_view name, std::string_view prefix, std::string_view suffix) {
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) || !name.ends_with(suffix))
    return std::nullopt;
  return std::string(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
}

// Kueue object names (ClusterQueue, ResourceFlavor, Cohort, ...) are DNS subdomains, as allot's priority
// class names are.
inline bool is_dns_subdomain(const std::string& name) {
  return static_cast<bool>(check_name(NameKind::kPriorityClass, name));
}

}  // namespace allot::interop
