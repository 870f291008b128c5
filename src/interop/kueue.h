#pragma once
// Kueue's objects from allot's teams and policy, and back (docs/from-kueue-hyperpod.md, "Kueue objects").
//
// Export writes, as multi-document YAML in kueue.x-k8s.io/v1beta2 (Kueue's storage version; v1beta1 for older
// clusters, where ClusterQueue's cohortName is called cohort):
//   Topology               the topology levels, coarse to fine (allot's default levels, or those the nodes carry)
//   ResourceFlavor         one per instance type, selecting nodes by node.kubernetes.io/instance-type, with the
//                          Topology's name (Kueue's topology-aware scheduling)
//   Cohort                 the cohort all teams share (the cluster); allot's policy keys ride on its annotations;
//                          and one Cohort per group of the policy (cohort trees), parentName its parent group or
//                          the cluster's cohort, resourceGroups its own allocation, fairSharing its weight, and its
//                          borrow_limit / lend_limit (percent of the subtree quota) as annotations
//   ClusterQueue           one per team, named as HyperPod names them (hyperpod-ns-<team>-clusterqueue), in its
//                          group's Cohort (else the cluster's): nominal
//                          quota per flavor and resource, borrowingLimit = nominal x borrow_limit / 100
//                          (LendAndBorrow), 0 (Lend, DontLend), lendingLimit 0 (DontLend), fairSharing.weight,
//                          preemption (reclaim: Any; within the queue: LowerPriority or Never); vCPU or memory
//                          the team's allocation leaves unlimited is not a covered resource
//   LocalQueue             hyperpod-ns-<team>-localqueue in namespace hyperpod-ns-<team> (both shortened to 63
//                          characters with a hash, and a warning, for long team names: kueue_names.h)
//   WorkloadPriorityClass  <name>-priority (<name> when it ends in -priority already) with value = the class's
//                          weight, and the class's own name in an annotation
// Import reads such objects, in either version (any order, other kinds ignored with a warning) into the policy
// and teams of a teams file that `allot apply` takes, with a warning, naming the object and field, for every
// setting that has no exact counterpart in allot and every field it does not read. import(export(x)) gives x
// back for every teams file of built-in instance types (borrow_limit of Lend and DontLend teams aside: it has no
// effect there and is not exported).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model/catalog.h"
#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::interop {

// The annotations on the Cohort that carry allot's policy, which Kueue keeps in its own configuration
// (fair sharing) or does not have (first-come-first-serve ordering, the idle pool, ...).
inline constexpr std::string_view kKueueAnnotationPrefix = "allot.scheduler/";

enum class KueueApiVersion { kV1beta1, kV1beta2 };
const char* kueue_api_version_name(KueueApiVersion v);  // "v1beta1", "v1beta2"

struct KueueExportOptions {
  KueueApiVersion api_version = KueueApiVersion::kV1beta2;
  std::string cohort = "allot";
  std::string topology_name = "allot-topology";
  std::vector<std::string> topology_levels;  // full label keys, coarse to fine; empty: the network layers 1..3, hostname
  bool with_policy = true;                   // false: the file had no policy section; no classes, no annotations
};

struct KueueExport {
  std::string yaml;
  std::vector<std::string> warnings;  // "<Kind> <name>: <field>: <what was changed and why>"
};

// Fails when a team or class name cannot become a Kueue object name, an instance type is unknown to `catalog`,
// or a team leaves vCPU or memory unlimited on some of its types but not all (a ClusterQueue covers a resource
// for all its flavors or none); the error names which.
Result<KueueExport> export_kueue(const PolicySpec& policy, const std::vector<TeamSpec>& teams, const Catalog& catalog,
                                 const KueueExportOptions& options);

struct KueueImport {
  PolicySpec policy;
  bool has_policy = false;  // a Cohort with allot's annotations or a WorkloadPriorityClass was read
  std::vector<TeamSpec> teams;
  std::vector<std::string> warnings;  // "<Kind> <name>: <field>: <what does not map and what was done>"

  // Read so far, for the checks that need every file (finish_kueue_import).
  struct LocalQueueRef {
    std::string name, namespace_, cluster_queue;
  };
  std::vector<LocalQueueRef> local_queues;
  std::vector<std::string> cluster_queues;
  std::vector<std::string> cohorts;  // every cohort a ClusterQueue names, in the order read
  // Each Cohort object read, for the tree finish_kueue_import builds (docs/from-kueue-hyperpod.md, "Cohort trees").
  struct CohortRef {
    std::string name, parent;                // parent: spec.parentName (v1alpha1: spec.parent); empty: a root
    std::vector<AllocationSpec> allocation;  // its own quota (spec.resourceGroups)
    std::optional<int> weight;               // spec.fairSharing.weight, whole
    std::optional<int> borrow_limit, lend_limit;  // allot's annotations
    bool has_quota_fields = false;           // spec.resourceGroups or spec.fairSharing given
  };
  std::vector<CohortRef> cohort_objects;
  std::map<std::string, std::string> team_cohort;  // team -> the cohort its ClusterQueue names
  bool policy_annotations = false;  // a Cohort carried allot's policy
  // WorkloadPriorityClass values as Kueue has them (int32), by class, in the order of policy.priority_classes;
  // finish_kueue_import turns them into allot's weights 0..100, keeping their order.
  struct PriorityValue {
    std::string object;  // the WorkloadPriorityClass's name
    int64_t value = 0;
  };
  std::vector<PriorityValue> priority_values;
};

// One input text (one file), multi-document YAML. Fails on YAML syntax errors and on objects that are not
// mappings; everything else that does not map is a warning. Call once per file into the same result.
Status import_kueue(const std::string& text, const std::string& origin, const Catalog& catalog, KueueImport& into);

// Checks what only the whole set of files shows (LocalQueues whose ClusterQueue was not read), maps the
// priority values onto allot's weights, fills in the defaults for a policy that came from Kueue objects
// without allot's annotations, and maps the Cohorts onto the policy's groups and the teams' group. Fails, naming
// the Cohort, on a parentName that names no Cohort read, on parents that form a cycle, and on a Cohort that
// cannot be an allot group (its name, or a team of the same name).
Status finish_kueue_import(KueueImport& result);

// The policy and teams as a teams file (the scenario format's policy and teams sections).
std::string teams_file_yaml(const KueueImport& result);

}  // namespace allot::interop
