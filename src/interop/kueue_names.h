#pragma once
// Internal to the Kueue export and import: the names HyperPod gives a team's Kueue objects, and the resource
// names of a ClusterQueue's quotas.
#include <optional>
#include <string>
#include <string_view>

#include "core/spec.h"

namespace allot::interop {

inline constexpr std::string_view kKueueApiVersion = "kueue.x-k8s.io/v1beta1";
inline constexpr std::string_view kInstanceTypeLabel = "node.kubernetes.io/instance-type";
inline constexpr std::string_view kKueueCpu = "cpu";
inline constexpr std::string_view kKueueMemory = "memory";
inline constexpr std::string_view kKueueGpu = "nvidia.com/gpu";
inline constexpr std::string_view kKueueNeuron = "aws.amazon.com/neurondevice";

// HyperPod task governance names a team's namespace and queues after it.
inline std::string team_namespace(const std::string& team) { return "hyperpod-ns-" + team; }
inline std::string cluster_queue_name(const std::string& team) { return team_namespace(team) + "-clusterqueue"; }
inline std::string local_queue_name(const std::string& team) { return team_namespace(team) + "-localqueue"; }
// Kueue's priority classes are named <name>-priority in HyperPod; always appended, so import can strip it.
inline std::string priority_class_object_name(const std::string& cls) { return cls + "-priority"; }

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
