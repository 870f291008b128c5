#pragma once
// Kubernetes manifests as allot jobs (DESIGN.md, "Control plane"): a `batch/v1` Job or a `kubeflow.org/v1`
// PyTorchJob becomes a JobSpec the way SageMaker HyperPod task governance reads it:
//   team      label kueue.x-k8s.io/queue-name (hyperpod-ns-<team>-localqueue or <team>),
//             else metadata.namespace (hyperpod-ns-<team> or <team>)
//   priority  label kueue.x-k8s.io/priority-class (<name>-priority or <name>)
//   replicas  Job spec.parallelism; PyTorchJob Master + Worker replicas (rank 0 is the master)
//   request   container requests (limits where a request is missing): nvidia.com/gpu,
//             aws.amazon.com/neurondevice, cpu, memory
//   type      nodeSelector node.kubernetes.io/instance-type (or a one-value required node affinity)
//   topology  pod-template annotations kueue.x-k8s.io/podset-required-topology, -preferred-topology,
//             -slice-required-topology with -slice-size
//   command   the first container's command + args; env its `value` entries
// Fields that change what runs or where, and that allot cannot honour, are errors naming the field; fields
// that only matter to a kubelet (image, volumes, probes ...) are ignored, and a few that users may expect to
// matter come back as warnings.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::interop {

struct ManifestJob {
  JobSpec spec;
  std::vector<std::string> warnings;  // for people: what was ignored and why
  // The kueue.x-k8s.io/priority-class label as written ("inference-priority"); spec.priority holds it
  // without the -priority suffix. A client that knows the server's classes picks the one that exists
  // (pick_priority_class), the label as written first.
  std::string priority_label;
  // A JobSet whose replicated jobs depend on one another (dependsOn): `spec` is the first replicated job's allot job
  // and these the others', in order, each naming in `after` the earlier ones it depends on. Empty otherwise.
  std::vector<JobSpec> chained;
};

// The priority class a kueue.x-k8s.io/priority-class label names among `classes`: the label as written
// when a class has that name, else the label without "-priority", else that shortened name (which the
// server then refuses, naming its classes).
std::string pick_priority_class(const std::string& label, const std::vector<std::string>& classes);

// A name for metadata.generateName: the prefix and five random characters of the alphabet the Kubernetes
// API server uses (no vowels, so no words).
std::string generated_name(const std::string& prefix);

// True for a YAML map with apiVersion and kind: a Kubernetes object rather than an allot job spec.
bool is_k8s_manifest(const YAML::Node& doc);

// One Kubernetes object. `origin` names the file in messages ("job.yaml:12: ..."). A `queue_name` (hyp's and
// `allot submit`'s --queue-name) is taken as the object's kueue.x-k8s.io/queue-name label, replacing the one it
// has: it names the team, and the job carries it among its labels.
Result<ManifestJob> job_from_manifest(const YAML::Node& doc, const std::string& origin, const std::string& queue_name = "");

// "hyperpod-ns-team-a-localqueue" -> "team-a"; "team-a" -> "team-a".
std::string team_from_queue_name(std::string_view queue);
// "hyperpod-ns-team-a" -> "team-a".
std::string team_from_namespace(std::string_view ns);
// "training-priority" -> "training".
std::string priority_from_class(std::string_view cls);

}  // namespace allot::interop
