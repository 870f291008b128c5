// allot's teams and policy as Kueue objects (interop/kueue.h has the mapping).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "core/model/request.h"
#include "core/model/mig.h"
#include "interop/kueue.h"
#include "interop/kueue_names.h"

namespace allot::interop {
namespace {

// A team's or priority class's time limits (docs/teams-and-policy.md, "Time limits"), which Kueue has no field for:
// annotations of its ClusterQueue or WorkloadPriorityClass, read back by kueue_import.cpp.
void put_time_limit_annotations(YAML::Emitter& out, const TimeLimitSettings& t) {
  const std::string p(kKueueAnnotationPrefix);
  if (t.default_s) out << YAML::Key << p + "default-time-limit" << YAML::Value << YAML::DoubleQuoted << std::to_string(*t.default_s);
  if (t.max_s) out << YAML::Key << p + "max-time-limit" << YAML::Value << YAML::DoubleQuoted << std::to_string(*t.max_s);
  if (t.resets_on_restart) out << YAML::Key << p + "time-limit-resets-on-restart" << YAML::Value << YAML::DoubleQuoted << "true";
}

// "96", "1500m": Kubernetes quantities of milli-units, exact.
std::string milli_quantity(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

// "2048Gi", "1536Mi": memory in MiB, exact.
std::string mib_quantity(int64_t mib) {
  if (mib % 1024 == 0) return std::to_string(mib / 1024) + "Gi";
  return std::to_string(mib) + "Mi";
}

// One resource of one flavor: its Kueue name and the amount in allot's unit, with the unit's writer.
struct ResourceAmount {
  std::string name;
  int64_t nominal = 0;  // accelerators: whole; cpu: milli; memory: MiB
};

std::string quantity(const std::string& resource, int64_t amount_in_unit, bool milli_accelerators) {
  if (resource == kKueueCpu) return milli_quantity(amount_in_unit);
  if (resource == kKueueMemory) return mib_quantity(amount_in_unit);
  return milli_accelerators ? milli_quantity(amount_in_unit) : std::to_string(amount_in_unit);
}

// The Kueue resource a type's accelerators are counted in: nvidia.com/gpu, nvidia.com/mig-<profile> (a MIG type),
// aws.amazon.com/neurondevice; empty for a type without accelerators.
std::string accelerator_resource(const InstanceType& type) {
  if (type.is_mig()) return mig_resource_name(type.mig_profile);
  switch (type.accelerator_kind) {
    case AcceleratorKind::kNvidiaGpu: return std::string(kKueueGpu);
    case AcceleratorKind::kNeuron: return std::string(kKueueNeuron);
    case AcceleratorKind::kNone: break;
  }
  return "";
}

void begin_object(YAML::Emitter& out, KueueApiVersion api, const char* kind, const std::string& name) {
  out << YAML::BeginDoc << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << std::string(kKueueApiGroup) + kueue_api_version_name(api);
  out << YAML::Key << "kind" << YAML::Value << kind;
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name;
}

Status check_object_name_for_kueue(const std::string& what, const std::string& name) {
  if (is_dns_subdomain(name)) return ok_status();
  return Error::invalid(what + " '" + printable(name) +
                        "' cannot name a Kueue object; Kueue names are lowercase DNS subdomains (at most 253 characters)");
}

// Whether the team's allocation leaves `r` unlimited on every type it names (then the ClusterQueue does not
// cover it), on none (it covers it), or on some only, which a ClusterQueue cannot say: Kueue wants every flavor
// of a resource group to list every covered resource.
Result<bool> uncovered(const TeamSpec& t, Resource r) {
  size_t n = 0;
  for (const auto& a : t.allocation) n += unlimited_resources(a.amount).has(r);
  if (n == 0 || n == t.allocation.size()) return n > 0;
  return Error::invalid("team " + t.name + " leaves " + resource_name(r) + " unlimited on some instance types but not "
                        "on others; a Kueue ClusterQueue covers a resource for all its flavors or for none");
}

// The resources a quota owner's resource group covers: cpu and memory (unless left unlimited), and the accelerator
// resource of each of its types (nvidia.com/gpu, aws.amazon.com/neurondevice, nvidia.com/mig-<profile>).
std::vector<std::string> covered_resources(const std::vector<AllocationSpec>& allocation,
                                           const std::map<std::string, const InstanceType*>& types, bool cpu, bool memory) {
  bool gpu = false, neuron = false;
  std::set<std::string> mig;  // the MIG resources of its MIG types (docs/mig.md), by name
  for (const auto& a : allocation) {
    const InstanceType& type = *types.at(canonical_type_name(a.instance_type));
    if (type.is_mig()) mig.insert(mig_resource_name(type.mig_profile));
    gpu |= type.accelerator_kind == AcceleratorKind::kNvidiaGpu && !type.is_mig();
    neuron |= type.accelerator_kind == AcceleratorKind::kNeuron;
  }
  std::vector<std::string> covered;
  if (cpu) covered.emplace_back(kKueueCpu);
  if (memory) covered.emplace_back(kKueueMemory);
  if (gpu) covered.emplace_back(kKueueGpu);
  if (neuron) covered.emplace_back(kKueueNeuron);
  covered.insert(covered.end(), mig.begin(), mig.end());
  return covered;
}

// Limits written beside a resource's nominal quota: (resource, nominal in allot's unit, is an accelerator).
using LimitWriter = std::function<void(YAML::Emitter&, const std::string&, int64_t, bool)>;

// spec.resourceGroups of a ClusterQueue or Cohort: one resource group (Kueue lets a resource appear in one group
// only, so cpu and memory of every flavor share it), each flavor listing every covered resource (0 where its type
// has none of it). `owner` names the team or group in errors.
Status put_resource_groups(YAML::Emitter& out, const std::string& owner, const std::vector<AllocationSpec>& allocation,
                           const std::map<std::string, const InstanceType*>& types, const std::vector<std::string>& covered,
                           const LimitWriter& limits) {
  out << YAML::Key << "resourceGroups" << YAML::Value << YAML::BeginSeq;
  if (!allocation.empty() && !covered.empty()) {
    out << YAML::BeginMap << YAML::Key << "coveredResources" << YAML::Value << YAML::Flow << covered;
    out << YAML::Key << "flavors" << YAML::Value << YAML::BeginSeq;
    for (const auto& a : allocation) {
      const std::string type_name = canonical_type_name(a.instance_type);
      const InstanceType& type = *types.at(type_name);
      auto quota = resolve_allocation(type, a.amount);
      if (!quota) return Error::invalid(owner + ", " + type_name + ": " + quota.error().message);
      out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << type_name;
      out << YAML::Key << "resources" << YAML::Value << YAML::BeginSeq;
      for (const auto& r : covered) {
        int64_t nominal = 0;
        if (r == kKueueCpu) nominal = quota->vcpu_milli;
        else if (r == kKueueMemory) nominal = quota->memory_mib;
        else if (r == accelerator_resource(type)) nominal = quota->accelerators;
        const bool accel = r == kKueueGpu || r == kKueueNeuron || r.starts_with(kMigResourcePrefix);
        out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << r;
        out << YAML::Key << "nominalQuota" << YAML::Value << quantity(r, nominal, false);
        limits(out, r, nominal, accel);
        out << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
  return ok_status();
}

}  // namespace

const char* kueue_api_version_name(KueueApiVersion v) {
  switch (v) {
    case KueueApiVersion::kV1beta1: return "v1beta1";
    case KueueApiVersion::kV1beta2: return "v1beta2";
  }
  return "v1beta2";
}

Result<KueueExport> export_kueue(const PolicySpec& policy, const std::vector<TeamSpec>& teams, const Catalog& catalog,
                                 const KueueExportOptions& options) {
  if (auto st = check_object_name_for_kueue("cohort", options.cohort); !st) return st.error();
  if (auto st = check_object_name_for_kueue("topology", options.topology_name); !st) return st.error();
  std::vector<std::string> levels = options.topology_levels;
  if (levels.empty())
    levels = {"topology.k8s.aws/network-node-layer-1", "topology.k8s.aws/network-node-layer-2",
              "topology.k8s.aws/network-node-layer-3", "kubernetes.io/hostname"};

  // Flavors: every instance type a team has quota for, by name, so the output does not depend on team order.
  std::set<std::string> type_names;
  for (const auto& t : teams)
    for (const auto& a : t.allocation) type_names.insert(canonical_type_name(a.instance_type));
  for (const auto& g : policy.groups)
    for (const auto& a : g.allocation) type_names.insert(canonical_type_name(a.instance_type));
  std::map<std::string, const InstanceType*> types;
  for (const auto& name : type_names) {
    auto id = catalog.lookup(name);
    if (!id) return id.error();
    types[name] = &catalog.at(*id);
  }

  KueueExport result;
  // Cohort trees (docs/scheduling.md): a Cohort per group, under the cluster's cohort, which a group cannot be.
  for (const auto& g : policy.groups) {
    if (auto st = check_object_name_for_kueue("Cohort of group " + g.name, g.name); !st) return st.error();
    if (g.name == options.cohort)
      return Error::invalid("group " + g.name + " has the name of the cluster's cohort (--cohort " + options.cohort +
                            "), which holds the root groups; choose another --cohort");
  }
  YAML::Emitter out;
  out.SetIndent(2);
  begin_object(out, options.api_version, "Topology", options.topology_name);
  out << YAML::EndMap;
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "levels" << YAML::Value << YAML::BeginSeq;
  for (const auto& l : levels) out << YAML::BeginMap << YAML::Key << "nodeLabel" << YAML::Value << l << YAML::EndMap;
  out << YAML::EndSeq << YAML::EndMap << YAML::EndMap;

  for (const auto& [name, type] : types) {
    begin_object(out, options.api_version, "ResourceFlavor", name);
    out << YAML::EndMap;
    out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    // A MIG type's nodes are its base type's nodes that the GPU operator's mig-manager partitioned in its profile.
    out << YAML::Key << "nodeLabels" << YAML::Value << YAML::BeginMap << YAML::Key << std::string(kInstanceTypeLabel)
        << YAML::Value << (type->is_mig() ? type->mig_base : name);
    if (type->is_mig()) out << YAML::Key << std::string(kMigConfigLabel) << YAML::Value << "all-" + type->mig_profile;
    out << YAML::EndMap;
    out << YAML::Key << "topologyName" << YAML::Value << options.topology_name;
    out << YAML::EndMap << YAML::EndMap;
  }

  // The policy rides on the cohort: Kueue has no objects for it (docs/from-kueue-hyperpod.md).
  begin_object(out, options.api_version, "Cohort", options.cohort);
  if (options.with_policy) {
    const std::string p(kKueueAnnotationPrefix);
    out << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << p + "task-prioritization" << YAML::Value << YAML::DoubleQuoted << task_prioritization_name(policy.task_prioritization);
    out << YAML::Key << p + "idle-compute" << YAML::Value << YAML::DoubleQuoted << idle_compute_name(policy.idle_compute);
    out << YAML::Key << p + "idle-pool" << YAML::Value << YAML::DoubleQuoted << (policy.idle_pool ? "true" : "false");
    out << YAML::Key << p + "fair-share-preemption" << YAML::Value << YAML::DoubleQuoted << (policy.fair_share_preemption ? "true" : "false");
    out << YAML::Key << p + "min-runtime" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.min_runtime_s);
    out << YAML::Key << p + "starvation-threshold" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.starvation_threshold_s);
    out << YAML::Key << p + "elastic-grow-delay" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.elastic_grow_delay_s);
    // Written only when set, so that an export without it stays as it was.
    if (policy.locality_wait_s != 0)
      out << YAML::Key << p + "locality-wait" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.locality_wait_s);
    // The gang start timeout (Kueue keeps waitForPodsReady in its controller's configuration, not in an object).
    if (policy.start_timeout_s != 0)
      out << YAML::Key << p + "start-timeout" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.start_timeout_s);
    if (policy.start_backoff_s != PolicySpec{}.start_backoff_s)
      out << YAML::Key << p + "start-backoff" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.start_backoff_s);
    if (policy.start_backoff_max_s != PolicySpec{}.start_backoff_max_s)
      out << YAML::Key << p + "start-backoff-max" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.start_backoff_max_s);
    if (policy.backfill) out << YAML::Key << p + "backfill" << YAML::Value << YAML::DoubleQuoted << "true";
    if (policy.backfill_min_priority > 0)
      out << YAML::Key << p + "backfill-min-priority" << YAML::Value << YAML::DoubleQuoted << std::to_string(policy.backfill_min_priority);
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::EndMap << YAML::EndMap;

  // Each group: its parent (a root group's is the cluster's cohort, as allot's cluster is the node above the roots
  // and the teams without a group), its own quota, its weight; its limits, percentages of its subtree quota, ride
  // on annotations (Kueue's are amounts, which would not follow the subtree as teams change).
  for (const auto& g : policy.groups) {
    begin_object(out, options.api_version, "Cohort", g.name);
    if (g.borrow_limit || g.lend_limit) {
      const std::string p(kKueueAnnotationPrefix);
      out << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
      if (g.borrow_limit) out << YAML::Key << p + "borrow-limit" << YAML::Value << YAML::DoubleQuoted << std::to_string(*g.borrow_limit);
      if (g.lend_limit) out << YAML::Key << p + "lend-limit" << YAML::Value << YAML::DoubleQuoted << std::to_string(*g.lend_limit);
      out << YAML::EndMap;
    }
    out << YAML::EndMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "parentName" << YAML::Value << (g.parent.empty() ? options.cohort : g.parent);
    out << YAML::Key << "fairSharing" << YAML::Value << YAML::BeginMap << YAML::Key << "weight" << YAML::Value
        << g.fair_share_weight << YAML::EndMap;
    if (!g.allocation.empty()) {
      const auto none = [](YAML::Emitter&, const std::string&, int64_t, bool) {};
      if (auto st = put_resource_groups(out, "group " + g.name, g.allocation, types,
                                        covered_resources(g.allocation, types, true, true), none); !st)
        return st.error();
    }
    out << YAML::EndMap << YAML::EndMap;
  }

  for (const auto& t : teams) {
    const std::string cq = cluster_queue_name(t.name);
    if (auto st = check_object_name_for_kueue("ClusterQueue of team " + t.name, cq); !st) return st.error();
    auto no_cpu = uncovered(t, Resource::kVcpu);
    if (!no_cpu) return no_cpu.error();
    auto no_memory = uncovered(t, Resource::kMemory);
    if (!no_memory) return no_memory.error();
    const std::vector<std::string> covered = covered_resources(t.allocation, types, !*no_cpu, !*no_memory);

    begin_object(out, options.api_version, "ClusterQueue", cq);
    // A LimitRange in the team's namespace would carry it on Kubernetes; Kueue's objects have no place for it.
    if (!t.default_request.asks_nothing())
      result.warnings.push_back("team " + t.name + ": default_request is not exported (Kueue's objects have no place for it; "
                                "a LimitRange in namespace " + team_namespace(t.name) + " plays its part)");
    if (!t.containers.empty() || !(t.time_limits == TimeLimitSettings{})) {
      // The team's container settings (docs/teams-and-policy.md, "Containers") have no Kueue counterpart: they
      // ride on the ClusterQueue's annotations, comma-separated (host paths and capability names hold no comma).
      const std::string p(kKueueAnnotationPrefix);
      auto joined = [](const std::vector<std::string>& v) {
        std::string out;
        for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
        return out;
      };
      std::vector<std::string> caps;
      for (Capability c : t.containers.capabilities) caps.push_back(capability_name(c));
      out << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
      if (!t.containers.host_paths.empty())
        out << YAML::Key << p + "container-host-paths" << YAML::Value << YAML::DoubleQuoted << joined(t.containers.host_paths);
      if (!caps.empty()) out << YAML::Key << p + "container-capabilities" << YAML::Value << YAML::DoubleQuoted << joined(caps);
      if (!t.containers.registry_auth_file.empty())
        out << YAML::Key << p + "registry-auth-file" << YAML::Value << YAML::DoubleQuoted << t.containers.registry_auth_file;
      put_time_limit_annotations(out, t.time_limits);
      out << YAML::EndMap;
    }
    out << YAML::EndMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << (options.api_version == KueueApiVersion::kV1beta1 ? "cohort" : "cohortName") << YAML::Value
        << (t.group.empty() ? options.cohort : t.group);
    out << YAML::Key << "namespaceSelector" << YAML::Value << YAML::BeginMap << YAML::Key << "matchLabels" << YAML::Value
        << YAML::BeginMap << YAML::Key << "kubernetes.io/metadata.name" << YAML::Value << team_namespace(t.name)
        << YAML::EndMap << YAML::EndMap;
    out << YAML::Key << "queueingStrategy" << YAML::Value << "BestEffortFIFO";
    out << YAML::Key << "fairSharing" << YAML::Value << YAML::BeginMap << YAML::Key << "weight" << YAML::Value
        << t.fair_share_weight << YAML::EndMap;
    out << YAML::Key << "preemption" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "reclaimWithinCohort" << YAML::Value << "Any";
    out << YAML::Key << "borrowWithinCohort" << YAML::Value << YAML::BeginMap << YAML::Key << "policy" << YAML::Value
        << "Never" << YAML::EndMap;
    out << YAML::Key << "withinClusterQueue" << YAML::Value << preempt_team_tasks_name(t.preempt_team_tasks);
    out << YAML::EndMap;
    // borrow_limit percent of the nominal quota, per resource (DESIGN.md "Compute allocation"); rounded down to the
    // unit (milli-accelerators, milli-vCPU, MiB), which import rounds back to the percent.
    auto team_limits = [&t](YAML::Emitter& o, const std::string& r, int64_t nominal, bool accel) {
      const int64_t scale = accel ? 1000 : 1;
      const int64_t borrow = t.strategy == SharingStrategy::kLendAndBorrow ? nominal * scale * t.borrow_limit / 100 : 0;
      o << YAML::Key << "borrowingLimit" << YAML::Value << quantity(r, borrow, accel);
      if (t.strategy == SharingStrategy::kDontLend) o << YAML::Key << "lendingLimit" << YAML::Value << quantity(r, 0, false);
    };
    if (auto st = put_resource_groups(out, "team " + t.name, t.allocation, types, covered, team_limits); !st) return st.error();
    out << YAML::EndMap << YAML::EndMap;

    // Namespaces and label values (a job's kueue.x-k8s.io/queue-name) are DNS labels: long team names are
    // shortened (kueue_names.h), and jobs then name the team with the shortened queue or the team itself.
    struct Fitted {
      const char* field;
      std::string full, fitted;
    };
    const Fitted names[] = {{"metadata.namespace", "hyperpod-ns-" + t.name, team_namespace(t.name)},
                            {"metadata.name", "hyperpod-ns-" + t.name + "-localqueue", local_queue_name(t.name)}};
    for (const auto& [what, full, fitted] : names)
      if (full != fitted)
        result.warnings.push_back("LocalQueue " + local_queue_name(t.name) + ": " + what + ": '" + full + "' is longer than " +
                                  std::to_string(kMaxDnsLabel) + " characters (a DNS label); shortened to '" + fitted +
                                  "' with a hash of the whole name");
    begin_object(out, options.api_version, "LocalQueue", local_queue_name(t.name));
    out << YAML::Key << "namespace" << YAML::Value << team_namespace(t.name) << YAML::EndMap;
    out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "clusterQueue" << YAML::Value << cq
        << YAML::EndMap << YAML::EndMap;
  }

  if (options.with_policy)
    for (const auto& pc : policy.priority_classes) {
      const std::string name = priority_class_object_name(pc.name);
      if (auto st = check_object_name_for_kueue("WorkloadPriorityClass of priority class " + pc.name, name); !st)
        return st.error();
      begin_object(out, options.api_version, "WorkloadPriorityClass", name);
      // The class's own name, so that import gives back "training" for training-priority and
      // "inference-priority" for inference-priority.
      out << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap << YAML::Key
          << std::string(kKueueAnnotationPrefix) + "priority-class" << YAML::Value << pc.name;
      // The class's own locality wait (docs/scheduling.md, "Waiting for locality"), which Kueue has no field for.
      if (pc.locality_wait_s)
        out << YAML::Key << std::string(kKueueAnnotationPrefix) + "locality-wait" << YAML::Value << YAML::DoubleQuoted
            << std::to_string(*pc.locality_wait_s);
      put_time_limit_annotations(out, pc.time_limits);
      out << YAML::EndMap;
      out << YAML::EndMap << YAML::Key << "value" << YAML::Value << pc.weight;
      out << YAML::Key << "description" << YAML::Value << "allot priority class " + pc.name;
      out << YAML::EndMap;
    }
  if (!out.good()) return Error::internal(std::string("writing the Kueue objects failed: ") + out.GetLastError());
  result.yaml = std::string(out.c_str()) + "\n";
  return result;
}

}  // namespace allot::interop
