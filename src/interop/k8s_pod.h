#pragma once
// Internal to the Kubernetes readers: what allot takes from one pod template (a Job's spec.template, a
// PyTorchJob replica's template): the per-replica request, the instance type, the topology request, and
// the command, environment and container (image, pull policy, args without a command, hostPath volumes, a memory
// emptyDir at /dev/shm) of the first container.
#include <map>
#include <string>
#include <vector>

#include "core/model/spec.h"
#include "interop/k8s_field.h"

namespace allot::interop::k8s {

struct PodTemplate {
  AmountSpec per_replica;
  std::string instance_type;
  TopologySpec topology;
  int slice_size = 0;  // checked against the replica count by the caller
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  ContainerSpec container;  // empty image: the manifest names none
};

Result<PodTemplate> read_pod_template(const Field& tmpl, std::vector<std::string>& warnings);

// Applies the topology annotations of a pod template (or, as a fallback, of the object) to `out`.
Status read_topology_annotations(const Field& annotations, PodTemplate& out);

}  // namespace allot::interop::k8s
