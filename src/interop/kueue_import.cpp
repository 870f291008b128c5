// Kueue objects into allot's policy and teams (interop/kueue.h has the mapping). What has no exact
// counterpart becomes a warning that names the object and the field, and says what allot does instead.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/quota/cohort_tree.h"
#include "core/model/request.h"
#include "core/placement/topology_levels.h"
#include "config/container_rules.h"
#include "config/spec_yaml.h"
#include "interop/k8s_quantity.h"
#include "core/model/mig.h"
#include "interop/kueue.h"
#include "interop/kueue_names.h"
#include "interop/topology_labels.h"
#include "config/yaml_stream.h"

namespace allot::interop {
namespace {

// The largest borrow_limit allot accepts (percent of the team's own quota): what an unlimited Kueue
// borrowingLimit becomes.
constexpr int kMaxBorrowLimit = 10000;

// n[k1][k2]...: an undefined node where any step is missing or not a mapping (yaml-cpp throws when a missing
// node is indexed again, and a Kubernetes object may lack any field). Recursion, not assignment: assigning to
// a yaml-cpp Node rewrites the node it refers to, inside the document.
YAML::Node at_keys(const YAML::Node& n, const std::string_view* key, const std::string_view* end) {
  if (!n) return YAML::Node(YAML::NodeType::Undefined);
  if (key == end) return n;
  if (!n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node child = n[std::string(*key)];
  return at_keys(child, key + 1, end);
}

YAML::Node at(const YAML::Node& n, std::initializer_list<std::string_view> keys) {
  return at_keys(n, keys.begin(), keys.end());
}

std::string scalar_or_empty(const YAML::Node& n) { return n && n.IsScalar() ? n.Scalar() : std::string(); }

// Reads one object's fields, collecting warnings with the object's kind and name in front.
struct ObjectReader {
  std::string kind, name;
  KueueImport& into;

  void warn(const std::string& field, const std::string& what) const {
    into.warnings.push_back(kind + " " + name + ": " + field + ": " + what);
  }
};

// Every key of `node` (the object, or its spec) that allot does not read is a warning naming it: fields not
// taken are never dropped silently. `why` has the reason for fields that are known to have no counterpart.
void warn_unread(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> read,
                 const ObjectReader& r, const std::map<std::string, std::string>& why = {}) {
  if (!node || !node.IsMap()) return;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (std::find(read.begin(), read.end(), key) != read.end()) continue;
    const auto it = why.find(key);
    r.warn(path + key, it != why.end() ? it->second : "allot does not read this field; ignored");
  }
}

// A quantity in allot's unit for `resource` (accelerators, or their milli-units when `milli_accelerators`;
// cpu in milli; memory in MiB).
Result<int64_t> read_quantity(const YAML::Node& n, std::string_view resource, bool milli_accelerators) {
  if (!n || !n.IsScalar()) return Error::invalid("expected a quantity such as 8, 1500m or 2048Gi");
  const std::string q = n.Scalar();
  if (resource == kKueueCpu) return parse_cpu_milli(q);
  if (resource == kKueueMemory) return parse_memory_mib(q);
  if (milli_accelerators) return parse_cpu_milli(q);  // same grammar: milli-units of a count
  return parse_device_count(q);
}

struct FlavorType {
  const InstanceType* type = nullptr;  // nullptr: the flavor names no instance type allot knows
};

// What the ClusterQueue gives one resource of one flavor.
struct ResourceQuota {
  int64_t nominal = 0;                    // allot's unit
  std::optional<int64_t> borrowing;       // allot's unit (accelerators in milli)
  std::optional<int64_t> lending;         // allot's unit
};

// The allocation entry that resolves to `quota` with `unlimited` left unlimited, in the shortest form: whole
// instances, accelerators alone (vCPU and memory in proportion), accelerators and vCPU (memory in proportion),
// or all three; nullopt when it gives nothing.
std::optional<AmountSpec> compact_amount(const InstanceType& type, const Resources& quota, ResourceSet unlimited) {
  const Resources cap = type.capacity();
  if (quota.is_zero() && unlimited.empty()) return std::nullopt;
  auto entry = [&](std::optional<int64_t> instances, std::optional<int64_t> accelerators, std::optional<int64_t> vcpu,
                   std::optional<int64_t> memory) {
    AmountSpec a;
    a.instances = instances;
    a.accelerators = accelerators;
    a.vcpu_unlimited = unlimited.has(Resource::kVcpu);
    a.memory_unlimited = unlimited.has(Resource::kMemory) && !a.vcpu_unlimited;  // memory follows vCPU
    a.vcpu_milli = a.vcpu_unlimited ? std::nullopt : vcpu;
    a.memory_mib = unlimited.has(Resource::kMemory) ? std::nullopt : memory;
    return a;
  };
  if (unlimited.empty() && cap.vcpu_milli > 0 && quota.vcpu_milli % cap.vcpu_milli == 0) {
    const int64_t n = quota.vcpu_milli / cap.vcpu_milli;
    if (n > 0 && cap * n == quota) return entry(n, {}, {}, {});
  }
  const std::optional<int64_t> accelerators =
      quota.accelerators > 0 ? std::optional<int64_t>(quota.accelerators) : std::nullopt;
  std::vector<AmountSpec> candidates;
  if (accelerators) candidates.push_back(entry({}, accelerators, {}, {}));
  candidates.push_back(entry({}, accelerators, quota.vcpu_milli, {}));
  for (const auto& c : candidates)
    if (auto r = resolve_allocation(type, c); r && *r == quota && unlimited_resources(c) == unlimited) return c;
  return entry({}, accelerators, quota.vcpu_milli, quota.memory_mib);
}

// What a ClusterQueue's or Cohort's spec.resourceGroups give, per flavor and resource, in the order listed.
struct FlavorQuotas {
  std::map<std::string, std::map<std::string, ResourceQuota>> per_flavor;  // flavor -> resource -> quota
  std::vector<std::string> order;
};

FlavorQuotas read_resource_groups(const YAML::Node& spec, const ObjectReader& r) {
  FlavorQuotas out;
  const YAML::Node groups = at(spec, {"resourceGroups"});
  for (size_t g = 0; groups && groups.IsSequence() && g < groups.size(); ++g) {
    const YAML::Node fls = at(groups[g], {"flavors"});
    for (size_t f = 0; fls && fls.IsSequence() && f < fls.size(); ++f) {
      const std::string fpath = "spec.resourceGroups[" + std::to_string(g) + "].flavors[" + std::to_string(f) + "]";
      const std::string fname = scalar_or_empty(at(fls[f], {"name"}));
      const YAML::Node res = at(fls[f], {"resources"});
      for (size_t i = 0; res && res.IsSequence() && i < res.size(); ++i) {
        const std::string rpath = fpath + ".resources[" + std::to_string(i) + "]";
        const std::string rname = scalar_or_empty(at(res[i], {"name"}));
        const bool mig = rname.starts_with(kMigResourcePrefix) && rname.size() > kMigResourcePrefix.size();
        if (rname != kKueueCpu && rname != kKueueMemory && rname != kKueueGpu && rname != kKueueNeuron && !mig) {
          r.warn(rpath + ".name", "'" + rname + "' is not a resource allot accounts (nvidia.com/gpu, nvidia.com/mig-<profile>, "
                                  "aws.amazon.com/neurondevice, cpu, memory); ignored");
          continue;
        }
        const bool accel = rname == kKueueGpu || rname == kKueueNeuron || mig;
        ResourceQuota q;
        auto nominal = read_quantity(at(res[i], {"nominalQuota"}), rname, false);
        if (!nominal) {
          r.warn(rpath + ".nominalQuota", nominal.error().message + "; the resource is skipped");
          continue;
        }
        q.nominal = *nominal;
        if (const YAML::Node b = at(res[i], {"borrowingLimit"})) {
          auto v = read_quantity(b, rname, accel);
          if (v) q.borrowing = *v;
          else r.warn(rpath + ".borrowingLimit", v.error().message + "; taken as no limit");
        }
        if (const YAML::Node l = at(res[i], {"lendingLimit"})) {
          auto v = read_quantity(l, rname, false);
          if (v) q.lending = *v;
          else r.warn(rpath + ".lendingLimit", v.error().message + "; taken as no limit");
        }
        if (!out.per_flavor.contains(fname)) out.order.push_back(fname);
        out.per_flavor[fname][rname] = q;
      }
    }
  }
  return out;
}

// spec.fairSharing.weight as allot's whole weight 0..100 (a fraction rounds, with a warning); nothing when absent or
// not a quantity (then Kueue's default, 1, applies).
std::optional<int> read_weight(const YAML::Node& spec, const ObjectReader& r) {
  const YAML::Node w = at(spec, {"fairSharing", "weight"});
  if (!w) return std::nullopt;
  auto milli = w.IsScalar() ? parse_cpu_milli(w.Scalar()) : Result<int64_t>(Error::invalid("not a scalar"));
  if (!milli) {
    r.warn("spec.fairSharing.weight", "not a quantity; taken as Kueue's default, 1");
    return std::nullopt;
  }
  const int64_t whole = std::clamp<int64_t>((*milli + 500) / 1000, 0, 100);
  if (whole * 1000 != *milli)
    r.warn("spec.fairSharing.weight", "'" + w.Scalar() + "' is not a whole number 0..100 (allot's weights); taken as " +
                                          std::to_string(whole));
  return static_cast<int>(whole);
}

// The instance type of a flavor named in a resource group: its ResourceFlavor's, else (a flavor without a
// ResourceFlavor object in the input) the type of its name; nullptr when neither is one allot knows.
const InstanceType* flavor_type(const std::string& fname, const std::map<std::string, FlavorType>& flavors,
                                const Catalog& catalog) {
  const auto it = flavors.find(fname);
  if (it != flavors.end() && it->second.type) return it->second.type;
  if (auto id = catalog.find(canonical_type_name(fname))) return &catalog.at(*id);
  return nullptr;
}

// The resource a type's accelerators are counted in, as Kueue names it.
std::string accelerator_resource_of(const InstanceType& type) {
  return type.is_mig() ? mig_resource_name(type.mig_profile)
                       : std::string(type.accelerator_kind == AcceleratorKind::kNeuron ? kKueueNeuron : kKueueGpu);
}

// A team's or priority class's time limits, which allot's export writes as annotations (kueue_export.cpp). A bad
// value is left out with a warning, and so is a default above the maximum.
void read_time_limit_annotations(const YAML::Node& obj, const ObjectReader& r, TimeLimitSettings& t) {
  const std::string p(kKueueAnnotationPrefix);
  auto seconds = [&](const std::string& key, std::optional<int64_t>& out) {
    const std::string v = scalar_or_empty(at(obj, {"metadata", "annotations", p + key}));
    if (v.empty()) return;
    try {
      size_t used = 0;
      const long long s = std::stoll(v, &used);
      if (used != v.size() || s < 1 || s > kMaxSeconds) throw std::invalid_argument(v);
      out = s;
    } catch (const std::exception&) {
      r.warn("metadata.annotations." + p + key, "'" + printable(v) + "' is not a whole number of seconds, at least 1; left out");
    }
  };
  seconds("default-time-limit", t.default_s);
  seconds("max-time-limit", t.max_s);
  if (t.default_s && t.max_s && *t.default_s > *t.max_s) {
    r.warn("metadata.annotations." + p + "default-time-limit", "is above max-time-limit; left out");
    t.default_s.reset();
  }
  const std::string resets = scalar_or_empty(at(obj, {"metadata", "annotations", p + "time-limit-resets-on-restart"}));
  if (resets == "true") t.resets_on_restart = true;
  else if (!resets.empty() && resets != "false")
    r.warn("metadata.annotations." + p + "time-limit-resets-on-restart", "'" + printable(resets) + "' is not true or false; left out");
}

// A Cohort: allot's policy on its annotations (allot's export puts it on the cluster's cohort), and the fields of a
// cohort tree (parent, own quota, weight, and allot's group limits on annotations), which finish_kueue_import maps
// to groups once every Cohort is read.
void read_cohort(const YAML::Node& obj, ObjectReader& r, const std::map<std::string, FlavorType>& flavors,
                 const Catalog& catalog) {
  KueueImport& into = r.into;
  if (std::any_of(into.cohort_objects.begin(), into.cohort_objects.end(), [&](const auto& c) { return c.name == r.name; })) {
    r.warn("metadata.name", "Cohort " + r.name + " was read already; this one is skipped");
    return;
  }
  KueueImport::CohortRef cohort{.name = r.name};
  const YAML::Node annotations = at(obj, {"metadata", "annotations"});
  const std::string p(kKueueAnnotationPrefix);
  if (annotations && annotations.IsMap()) {
    for (const auto& kv : annotations) {
      const std::string key = kv.first.Scalar();
      if (!key.starts_with(p)) continue;
      const std::string field = "metadata.annotations." + key;
      const std::string v = scalar_or_empty(kv.second);
      const std::string k = key.substr(p.size());
      // A group's limits (percent of its subtree quota), which Kueue's absolute amounts cannot say exactly.
      if (k == "borrow-limit" || k == "lend-limit") {
        const int most = k == "borrow-limit" ? 10000 : 100;
        const bool whole = !v.empty() && v.size() <= 5 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (whole && std::stoi(v) <= most) (k == "borrow-limit" ? cohort.borrow_limit : cohort.lend_limit) = std::stoi(v);
        else r.warn(field, "'" + v + "' is not a percentage 0.." + std::to_string(most) + "; no limit is taken");
        continue;
      }
      auto seconds = [&](int64_t& out) {
        try {
          size_t used = 0;
          const long long s = std::stoll(v, &used);
          if (used != v.size() || s < 0) throw std::invalid_argument(v);
          out = s;
        } catch (const std::exception&) {
          r.warn(field, "'" + v + "' is not a whole number of seconds; the default is kept");
        }
      };
      into.policy_annotations = true;
      into.has_policy = true;
      PolicySpec& pol = into.policy;
      if (k == "task-prioritization" && parse_task_prioritization(v))
        pol.task_prioritization = *parse_task_prioritization(v);
      else if (k == "idle-compute" && parse_idle_compute(v))
        pol.idle_compute = *parse_idle_compute(v);
      else if (k == "idle-pool" && (v == "true" || v == "false"))
        pol.idle_pool = v == "true";
      else if (k == "fair-share-preemption" && (v == "true" || v == "false"))
        pol.fair_share_preemption = v == "true";
      else if (k == "min-runtime")
        seconds(pol.min_runtime_s);
      else if (k == "starvation-threshold")
        seconds(pol.starvation_threshold_s);
      else if (k == "elastic-grow-delay")
        seconds(pol.elastic_grow_delay_s);
      else if (k == "locality-wait")
        seconds(pol.locality_wait_s);
      else if (k == "start-timeout")
        seconds(pol.start_timeout_s);
      else if (k == "start-backoff")
        seconds(pol.start_backoff_s);
      else if (k == "start-backoff-max")
        seconds(pol.start_backoff_max_s);
      else if (k == "backfill" && (v == "true" || v == "false"))
        pol.backfill = v == "true";
      else if (k == "backfill-min-priority") {
        const bool whole = !v.empty() && v.size() <= 3 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (whole && std::stoi(v) <= 100) pol.backfill_min_priority = std::stoi(v);
        else r.warn(field, "'" + v + "' is not a priority class weight (a whole number 0..100); the default is kept");
      }
      else
        r.warn(field, "'" + v + "' is not an allot policy setting this version knows; ignored");
    }
  }
  const YAML::Node spec = at(obj, {"spec"});
  // v1beta1 and v1beta2 call it parentName; v1alpha1 called it parent.
  cohort.parent = scalar_or_empty(at(spec, {at(spec, {"parentName"}) ? "parentName" : "parent"}));
  cohort.weight = read_weight(spec, r);
  cohort.has_quota_fields = at(spec, {"resourceGroups"}).size() > 0 || at(spec, {"fairSharing"});
  const FlavorQuotas fq = read_resource_groups(spec, r);
  bool absolute_limits = false;
  for (const auto& fname : fq.order) {
    const InstanceType* type = flavor_type(fname, flavors, catalog);
    if (!type) {
      r.warn("spec.resourceGroups: flavor " + fname, "names no instance type allot knows; its quota is skipped");
      continue;
    }
    // A group's quota covers every resource: one the cohort does not list is 0 of its own.
    Resources quota;
    for (const auto& [rname, q] : fq.per_flavor.at(fname)) {
      absolute_limits |= q.borrowing.has_value() || q.lending.has_value();
      if (rname == kKueueCpu) quota.vcpu_milli = q.nominal;
      else if (rname == kKueueMemory) quota.memory_mib = q.nominal;
      else if (rname == accelerator_resource_of(*type)) quota.accelerators = q.nominal;
      else if (q.nominal > 0)
        r.warn("spec.resourceGroups: flavor " + fname + ", " + rname,
               type->name + " has no " + rname + " (a group's quota is of the flavor's own type); its nominal quota of " +
                   std::to_string(q.nominal) + " is ignored");
    }
    if (auto amount = compact_amount(*type, quota, {})) cohort.allocation.push_back({type->name, *amount});
  }
  // allot's export writes the percentages as annotations; Kueue's own limits are amounts per resource, which allot's
  // percentages of a subtree quota (that changes with the teams) cannot carry exactly.
  if (absolute_limits && !cohort.borrow_limit && !cohort.lend_limit)
    r.warn("spec.resourceGroups.borrowingLimit/lendingLimit", "a cohort's limits are amounts per resource in Kueue and "
           "percentages of the group's subtree quota in allot (policy.groups borrow_limit, lend_limit); not imported: "
           "set them by hand");
  warn_unread(spec, "spec.", {"parentName", "parent", "resourceGroups", "fairSharing"}, r);
  into.cohort_objects.push_back(std::move(cohort));
}

void read_priority_class(const YAML::Node& obj, ObjectReader& r) {
  // allot's export names the class in an annotation (training -> training-priority, inference-priority stays);
  // without it, HyperPod's <name>-priority becomes <name>.
  std::string cls = scalar_or_empty(at(obj, {"metadata", "annotations", std::string(kKueueAnnotationPrefix) + "priority-class"}));
  if (cls.empty()) {
    cls = r.name;
    if (auto stripped = strip_affixes(cls, "", "-priority")) cls = *stripped;
  }
  if (auto st = check_name(NameKind::kPriorityClass, cls); !st) {
    r.warn("metadata.name", st.error().message + "; the class is skipped");
    return;
  }
  const YAML::Node v = at(obj, {"value"});
  int64_t value = 0;
  try {
    if (!v || !v.IsScalar()) throw std::invalid_argument("value");
    value = v.as<int64_t>();
    if (value < INT32_MIN || value > INT32_MAX) throw std::out_of_range("value");
  } catch (const std::exception&) {
    r.warn("value", "expected a whole number (Kueue's int32); the class is skipped");
    return;
  }
  warn_unread(obj, "", {"apiVersion", "kind", "metadata", "value", "description"}, r);
  r.into.has_policy = true;
  auto& classes = r.into.policy.priority_classes;
  if (std::any_of(classes.begin(), classes.end(), [&](const auto& c) { return c.name == cls; })) {
    r.warn("metadata.name", "priority class " + cls + " was read already; this one is skipped");
    return;
  }
  // The weight is set by finish_kueue_import, which sees every class's value.
  classes.push_back({cls, 0});
  const std::string wait = scalar_or_empty(at(obj, {"metadata", "annotations", std::string(kKueueAnnotationPrefix) + "locality-wait"}));
  if (!wait.empty()) {
    try {
      size_t used = 0;
      const int64_t s = std::stoll(wait, &used);
      if (used != wait.size() || s < 0) throw std::invalid_argument(wait);
      classes.back().locality_wait_s = s;
    } catch (const std::exception&) {
      r.warn("metadata.annotations." + std::string(kKueueAnnotationPrefix) + "locality-wait",
             "'" + wait + "' is not a whole, non-negative number of seconds; the policy's locality wait applies");
    }
  }
  read_time_limit_annotations(obj, r, classes.back().time_limits);
  r.into.priority_values.push_back({r.name, value});
}

void read_topology(const YAML::Node& obj, ObjectReader& r) {
  const YAML::Node levels = at(obj, {"spec", "levels"});
  if (!levels || !levels.IsSequence()) return;
  for (size_t i = 0; i < levels.size(); ++i) {
    const std::string label = scalar_or_empty(at(levels[i], {"nodeLabel"}));
    const auto known = default_topology_levels();
    if (std::find(known.begin(), known.end(), canonical_level(label)) == known.end())
      r.warn("spec.levels[" + std::to_string(i) + "].nodeLabel",
             "'" + label + "' is not a topology level allot knows (zone, network-node-layer-1..4, ultraserver-id, "
             "hostname); allot reads topology from node labels, and this one will be ignored");
  }
}

void read_local_queue(const YAML::Node& obj, ObjectReader& r) {
  r.into.local_queues.push_back(
      {r.name, scalar_or_empty(at(obj, {"metadata", "namespace"})), scalar_or_empty(at(obj, {"spec", "clusterQueue"}))});
  if (const std::string sp = scalar_or_empty(at(obj, {"spec", "stopPolicy"})); !sp.empty() && sp != "None")
    r.warn("spec.stopPolicy", "'" + sp + "' has no counterpart (hold jobs one by one with `allot hold`); ignored");
  warn_unread(at(obj, {"spec"}), "spec.", {"clusterQueue", "stopPolicy"}, r,
              {{"fairSharing", "a LocalQueue's weight (admission fair sharing) has no counterpart: allot shares "
                               "between teams, not between the queues of one team; ignored"}});
}

// allot maps a job to a team by its queue-name label or its namespace hyperpod-ns-<team>, which is the one
// selector it can honour; any other namespaceSelector is a warning.
void read_namespace_selector(const YAML::Node& sel, const std::string& team, const ObjectReader& r) {
  if (!sel) return;
  const std::string what = "allot maps jobs to team " + team + " by their kueue.x-k8s.io/queue-name label or the "
                           "namespace " + team_namespace(team) + ", whatever the selector says; ";
  if (sel.IsMap() && sel.size() == 0) return;  // every namespace: allot does not restrict namespaces either
  if (const YAML::Node e = at(sel, {"matchExpressions"}); e && e.size() > 0)
    r.warn("spec.namespaceSelector.matchExpressions", what + "ignored");
  if (const YAML::Node l = at(sel, {"matchLabels"}); l && l.IsMap())
    for (const auto& kv : l) {
      const std::string key = kv.first.Scalar();
      if (key == "kubernetes.io/metadata.name" && scalar_or_empty(kv.second) == team_namespace(team)) continue;
      r.warn("spec.namespaceSelector.matchLabels." + key, what + "ignored");
    }
  warn_unread(sel, "spec.namespaceSelector.", {"matchLabels", "matchExpressions"}, r);
}

// A comma-separated annotation's entries, without empty ones.
std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The team's container settings, which Kueue does not have: allot's export writes them as annotations of the
// ClusterQueue (kueue_export.cpp). An entry that is not valid is left out with a warning.
void read_container_annotations(const YAML::Node& obj, const ObjectReader& r, TeamContainerSettings& c) {
  const std::string p(kKueueAnnotationPrefix);
  auto annotation = [&](const std::string& key) { return scalar_or_empty(at(obj, {"metadata", "annotations", p + key})); };
  for (const std::string& entry : comma_list(annotation("container-host-paths"))) {
    auto path = config::normal_path(entry, "a host path");
    if (!path || *path == "/" || std::find(c.host_paths.begin(), c.host_paths.end(), *path) != c.host_paths.end() ||
        c.host_paths.size() >= config::kMaxTeamHostPaths) {
      r.warn("metadata.annotations." + p + "container-host-paths",
             "'" + printable(entry) + "' is not an absolute path (other than /, given once, at most " +
                 std::to_string(config::kMaxTeamHostPaths) + " of them); left out");
      continue;
    }
    c.host_paths.push_back(*path);
  }
  for (const std::string& entry : comma_list(annotation("container-capabilities"))) {
    auto cap = config::capability_named(entry);
    if (!cap || std::find(c.capabilities.begin(), c.capabilities.end(), *cap) != c.capabilities.end()) {
      r.warn("metadata.annotations." + p + "container-capabilities", "'" + printable(entry) + "' is not a Linux capability "
             "(or is given twice); left out");
      continue;
    }
    c.capabilities.push_back(*cap);
  }
  std::sort(c.capabilities.begin(), c.capabilities.end());
  if (const std::string file = annotation("registry-auth-file"); !file.empty()) {
    auto path = config::normal_path(file, "registry_auth_file");
    if (path && *path != "/") c.registry_auth_file = *path;
    else r.warn("metadata.annotations." + p + "registry-auth-file", "'" + printable(file) + "' is not an absolute file path; left out");
  }
}

// The team a ClusterQueue stands for: hyperpod-ns-<team>-clusterqueue, else the queue's own name.
std::string team_of_cluster_queue(const std::string& cq) {
  if (auto t = strip_affixes(cq, "hyperpod-ns-", "-clusterqueue")) return *t;
  return cq;
}

void read_cluster_queue(const YAML::Node& obj, ObjectReader& r, const std::map<std::string, FlavorType>& flavors,
                        const Catalog& catalog) {
  KueueImport& into = r.into;
  TeamSpec team;
  team.name = team_of_cluster_queue(r.name);
  if (auto st = check_name(NameKind::kTeam, team.name); !st) {
    r.warn("metadata.name", st.error().message + "; the queue is skipped");
    return;
  }
  if (std::any_of(into.teams.begin(), into.teams.end(), [&](const TeamSpec& t) { return t.name == team.name; })) {
    r.warn("metadata.name", "team " + team.name + " was read already (from another ClusterQueue); this one is skipped");
    return;
  }
  into.cluster_queues.push_back(r.name);
  const YAML::Node spec = at(obj, {"spec"});

  // Fair-share weight: Kueue's default is 1.
  team.fair_share_weight = read_weight(spec, r).value_or(1);

  // Preemption. Kueue's defaults: withinClusterQueue Never, reclaimWithinCohort Never.
  const YAML::Node pre = at(spec, {"preemption"});
  const std::string within = scalar_or_empty(at(pre, {"withinClusterQueue"}));
  team.preempt_team_tasks = within == "LowerPriority" || within == "LowerOrNewerEqualPriority"
                                ? PreemptTeamTasks::kLowerPriority
                                : PreemptTeamTasks::kNever;
  if (within == "LowerOrNewerEqualPriority")
    r.warn("spec.preemption.withinClusterQueue", "allot preempts strictly lower priorities only; taken as LowerPriority");
  if (const std::string reclaim = scalar_or_empty(at(pre, {"reclaimWithinCohort"})); reclaim != "Any")
    r.warn("spec.preemption.reclaimWithinCohort",
           "'" + (reclaim.empty() ? std::string("Never (the default)") : reclaim) +
               "': allot always reclaims lent quota from teams above theirs, whatever the priority (Any)");
  if (const std::string bwc = scalar_or_empty(at(pre, {"borrowWithinCohort", "policy"})); !bwc.empty() && bwc != "Never")
    r.warn("spec.preemption.borrowWithinCohort.policy",
           "'" + bwc + "' has no counterpart per team; borrowers preempt only under policy.fair_share_preemption");
  if (const std::string qs = scalar_or_empty(at(spec, {"queueingStrategy"})); qs == "StrictFIFO")
    r.warn("spec.queueingStrategy", "StrictFIFO: allot queues best-effort FIFO (a job that cannot run does not block "
                                    "the ones behind it)");
  for (const char* field : {"admissionChecks", "admissionChecksStrategy"})
    if (at(spec, {field})) r.warn(std::string("spec.") + field, "not imported: an AdmissionCheck's controller has no counterpart in a file; make allot's own with `allot admission-check create` (docs/scheduling.md, \"Admission checks\")");
  if (const std::string sp = scalar_or_empty(at(spec, {"stopPolicy"})); !sp.empty() && sp != "None")
    r.warn("spec.stopPolicy", "'" + sp + "' has no counterpart; ignored");

  // v1beta2 (Kueue's storage version) calls it cohortName; v1beta1 cohort.
  const std::string cohort_field = at(spec, {"cohortName"}) ? "cohortName" : "cohort";
  const std::string cohort = scalar_or_empty(at(spec, {cohort_field}));
  if (!cohort.empty()) {
    into.cohorts.push_back(cohort);
    into.team_cohort[team.name] = cohort;
  }
  warn_unread(spec, "spec.", {"resourceGroups", "cohort", "cohortName", "queueingStrategy", "namespaceSelector",
                              "preemption", "fairSharing", "stopPolicy", "admissionChecks", "admissionChecksStrategy"}, r,
              {{"flavorFungibility", "allot has no flavor fungibility: a job without an instance type tries the "
                                     "team's types in order and takes the first it fits on, borrowing included; ignored"},
               {"admissionScope", "admission fair sharing has no counterpart: allot orders a team's jobs by priority "
                                  "or arrival (policy.task_prioritization); ignored"}});
  read_namespace_selector(at(spec, {"namespaceSelector"}), team.name, r);

  // Quotas per flavor and resource.
  const FlavorQuotas fq = read_resource_groups(spec, r);
  auto per_flavor = fq.per_flavor;
  const auto& flavor_order = fq.order;

  // Sharing: one strategy and one percentage per team in allot; Kueue has limits per resource.
  bool any_lending_zero = false, all_lending_zero = true, partial_lending = false;
  bool any_borrow_unlimited = false, all_borrow_zero = true;
  // The percentage from the resource with the largest nominal quota in its unit: the least rounded.
  int64_t best_nominal = 0;
  int best_percent = 0;
  std::string best_field;
  std::vector<std::pair<std::string, int>> percents;  // field, percent

  for (const auto& fname : flavor_order) {
    const InstanceType* type = flavor_type(fname, flavors, catalog);
    if (!type) {
      r.warn("spec.resourceGroups: flavor " + fname,
             "names no instance type allot knows (neither its ResourceFlavor's node.kubernetes.io/instance-type nor "
             "its name); its quota is skipped");
      continue;
    }
    Resources quota;
    // A resource the queue does not cover for this flavor is not limited by the queue: vCPU and memory become
    // unlimited, accelerators (allot has no unlimited ones) stay 0, each with a warning.
    ResourceSet unlimited;
    const auto& listed = per_flavor[fname];
    const std::string flavor_field = "spec.resourceGroups: flavor " + fname;
    for (const auto& [rname, resource] : {std::pair{kKueueCpu, Resource::kVcpu}, std::pair{kKueueMemory, Resource::kMemory}}) {
      if (listed.contains(std::string(rname))) continue;
      unlimited.add(resource);
      r.warn(flavor_field + ", " + std::string(rname),
             "not covered: allot does not limit team " + team.name + "'s " + resource_name(resource) + " on " +
                 type->name + " (" + resource_name(resource) + ": unlimited); Kueue admits workloads that request it "
                 "only where its configuration excludes the resource (resources.excludeResourcePrefixes)");
    }
    const std::string accel_name = accelerator_resource_of(*type);
    // MIG devices listed in a flavor of their base type: a quota of the MIG type (docs/mig.md), vCPU and memory
    // following the proportional rule.
    std::vector<AllocationSpec> mig_quotas;
    if (type->accelerators > 0 && !listed.contains(accel_name))
      r.warn(flavor_field + ", " + std::string(accel_name),
             "not covered: allot has no unlimited accelerators; team " + team.name + "'s quota of them on " + type->name +
                 " is 0");
    for (const auto& [rname, q] : per_flavor[fname]) {
      const bool mig = rname.starts_with(kMigResourcePrefix);
      const bool accel = rname == kKueueGpu || rname == kKueueNeuron || mig;
      const std::string field = "spec.resourceGroups: flavor " + fname + ", " + rname;
      if (mig && rname != accel_name) {
        const std::string mig_type = mig_type_name(type->is_mig() ? type->mig_base : type->name, rname.substr(kMigResourcePrefix.size()));
        if (!type->is_mig() && catalog.find(mig_type)) {
          if (q.nominal > 0) {
            AmountSpec a;
            a.accelerators = q.nominal;
            mig_quotas.push_back({mig_type, a});
          }
        } else if (q.nominal > 0) {
          r.warn(field, type->name + " has no MIG type " + mig_type + "; its nominal quota of " + std::to_string(q.nominal) +
                            " is ignored");
        }
        continue;
      }
      if (accel) {
        const bool matches = rname == accel_name;
        if (!matches) {
          if (q.nominal > 0)
            r.warn(field, type->name + " has no " + rname + "; its nominal quota of " + std::to_string(q.nominal) +
                              " is ignored");
          continue;
        }
        quota.accelerators = q.nominal;
      } else if (rname == kKueueCpu) {
        quota.vcpu_milli = q.nominal;
      } else {
        quota.memory_mib = q.nominal;
      }
      if (q.nominal == 0) continue;
      if (!q.lending || *q.lending != 0) all_lending_zero = false;
      if (q.lending && *q.lending == 0) any_lending_zero = true;
      if (q.lending && *q.lending > 0 && *q.lending < q.nominal) partial_lending = true;
      if (!q.borrowing) {
        any_borrow_unlimited = true;
        all_borrow_zero = false;
        continue;
      }
      if (*q.borrowing != 0) all_borrow_zero = false;
      const int64_t nominal_scaled = accel ? q.nominal * 1000 : q.nominal;
      const int percent = static_cast<int>(
          std::min<int64_t>(kMaxBorrowLimit, (*q.borrowing * 100 + nominal_scaled / 2) / nominal_scaled));
      percents.emplace_back(field + ".borrowingLimit", percent);
      if (nominal_scaled > best_nominal) {
        best_nominal = nominal_scaled;
        best_percent = percent;
        best_field = field;
      }
    }
    auto amount = compact_amount(*type, quota, unlimited);
    // A flavor listed with zero quota (so the queue may borrow it in Kueue) gives no allocation.
    if (amount) team.allocation.push_back({type->name, *amount});
    for (auto& m : mig_quotas) team.allocation.push_back(std::move(m));
  }

  if (cohort.empty()) {
    team.strategy = SharingStrategy::kDontLend;
    r.warn("spec.cohortName", "empty (v1beta1: spec.cohort): the queue neither lends nor borrows; imported as "
                              "DontLend (allot's teams share one cohort)");
  } else if (team.allocation.empty()) {
    // No quota: nothing to lend, and a percentage of nothing to borrow; allot's defaults stay.
  } else if (all_lending_zero) {
    team.strategy = SharingStrategy::kDontLend;
  } else {
    if (any_lending_zero || partial_lending)
      r.warn("spec.resourceGroups.lendingLimit", "allot lends a team's whole idle quota or none of it; the limits are "
                                                 "ignored and the team lends all of it");
    if (all_borrow_zero) {
      team.strategy = SharingStrategy::kLend;
    } else if (any_borrow_unlimited && percents.empty()) {
      team.strategy = SharingStrategy::kLendAndBorrow;
      team.borrow_limit = kMaxBorrowLimit;
      r.warn("spec.resourceGroups.borrowingLimit", "absent (no limit); allot's borrow limit is a percentage of the "
                                                     "team's quota: taken as " + std::to_string(kMaxBorrowLimit) + "%");
    } else {
      team.strategy = SharingStrategy::kLendAndBorrow;
      team.borrow_limit = best_percent;
      bool differ = any_borrow_unlimited;
      for (const auto& [field, pct] : percents) differ |= std::abs(pct - best_percent) > 1;
      if (differ)
        r.warn("spec.resourceGroups.borrowingLimit", "differs between resources; allot has one percentage per team: "
                                                     "took " + std::to_string(best_percent) + "% from " + best_field);
    }
  }
  read_container_annotations(obj, r, team.containers);
  read_time_limit_annotations(obj, r, team.time_limits);
  into.teams.push_back(std::move(team));
}

}  // namespace

Status import_kueue(const std::string& text, const std::string& origin, const Catalog& catalog, KueueImport& into) {
  // Through the bounded reader, not YAML::LoadAll: yaml-cpp 0.7 loops for ever on some malformed texts (a stray
  // ','; found by kueue_import_fuzz), and the reader also bounds what aliases expand to.
  auto loaded = load_yaml_documents(text, YamlContext{origin, "", 0});
  if (!loaded) return Error::invalid(loaded.error().message + "; expected Kueue objects as YAML");
  std::vector<YAML::Node> docs = std::move(*loaded);
  // Flavors first, wherever they appear: queues name them.
  std::map<std::string, FlavorType> flavors;
  std::vector<std::pair<YAML::Node, ObjectReader>> objects;
  for (size_t d = 0; d < docs.size(); ++d) {
    const YAML::Node& doc = docs[d];
    if (doc.IsNull()) continue;
    const std::string where = origin + ": document " + std::to_string(d + 1);
    if (!doc.IsMap()) return Error::invalid(where + " is not a mapping; expected a Kubernetes object with apiVersion and kind");
    // A kubectl `List` holds the objects in items.
    std::vector<YAML::Node> items;
    if (scalar_or_empty(at(doc, {"kind"})) == "List" && at(doc, {"items"}).IsSequence()) {
      for (const auto& item : at(doc, {"items"})) items.push_back(item);
    } else {
      items.push_back(doc);
    }
    for (const YAML::Node& obj : items) {
      if (!obj.IsMap()) return Error::invalid(where + " holds an item that is not a mapping; expected Kubernetes objects");
      ObjectReader r{scalar_or_empty(at(obj, {"kind"})), scalar_or_empty(at(obj, {"metadata", "name"})), into};
      const std::string api = scalar_or_empty(at(obj, {"apiVersion"}));
      if (r.kind.empty() || r.name.empty()) {
        into.warnings.push_back(where + ": an object without kind or metadata.name; ignored");
        continue;
      }
      if (!api.starts_with("kueue.x-k8s.io/")) {
        r.warn("apiVersion", "'" + api + "' is not Kueue's (kueue.x-k8s.io); ignored");
        continue;
      }
      if (r.kind == "ResourceFlavor") {
        const std::string label = scalar_or_empty(at(obj, {"spec", "nodeLabels", kInstanceTypeLabel}));
        const std::string type_name = canonical_type_name(label.empty() ? r.name : label);
        FlavorType ft;
        if (auto id = catalog.find(type_name)) ft.type = &catalog.at(*id);
        else
          r.warn(label.empty() ? "metadata.name" : "spec.nodeLabels." + std::string(kInstanceTypeLabel),
                 "'" + (label.empty() ? r.name : label) + "' is not an instance type allot knows; quotas of this flavor "
                 "are skipped");
        // The NVIDIA GPU operator's mig-manager label: "all-1g.10gb" partitions every GPU in one profile, which is
        // the MIG type of the flavor's instance type (docs/mig.md).
        const std::string mig_config = scalar_or_empty(at(obj, {"spec", "nodeLabels", kMigConfigLabel}));
        if (ft.type && !ft.type->is_mig() && mig_config.starts_with("all-")) {
          if (auto id = catalog.find(mig_type_name(ft.type->name, mig_config.substr(4)))) ft.type = &catalog.at(*id);
          else
            r.warn("spec.nodeLabels." + std::string(kMigConfigLabel),
                   "'" + mig_config + "': " + ft.type->name + " has no such MIG profile; the flavor is taken as whole GPUs");
        }
        for (const char* field : {"nodeTaints", "tolerations"})
          if (at(obj, {"spec", field}).size() > 0)
            r.warn(std::string("spec.") + field, "allot has no taints or tolerations; ignored");
        // allot's flavors are instance types: other node labels do not narrow where the flavor's jobs run.
        if (const YAML::Node labels = at(obj, {"spec", "nodeLabels"}); labels && labels.IsMap())
          for (const auto& kv : labels)
            if (kv.first.Scalar() != kInstanceTypeLabel && kv.first.Scalar() != kMigConfigLabel)
              r.warn("spec.nodeLabels." + kv.first.Scalar(),
                     "allot's flavors are instance types; a job of this flavor may run on any node of the type, "
                     "whatever its other labels; ignored");
        warn_unread(at(obj, {"spec"}), "spec.", {"nodeLabels", "nodeTaints", "tolerations", "topologyName"}, r);
        flavors[r.name] = ft;
        continue;
      }
      objects.emplace_back(obj, r);
    }
  }
  for (auto& [obj, r] : objects) {
    if (r.kind == "ClusterQueue") read_cluster_queue(obj, r, flavors, catalog);
    else if (r.kind == "Cohort") read_cohort(obj, r, flavors, catalog);
    else if (r.kind == "LocalQueue") read_local_queue(obj, r);
    else if (r.kind == "WorkloadPriorityClass") read_priority_class(obj, r);
    else if (r.kind == "Topology") read_topology(obj, r);
    else r.warn("kind", "no counterpart in allot's teams and policy; ignored");
  }
  return ok_status();
}

namespace {

// Kueue's priorities are int32 values; allot's weights are 0..100, compared only for order (docs/scheduling.md).
// Values of at most 100 are kept (negative ones become 0). Otherwise the distinct positive values are spread in order over
// 1..100 (the lowest 1, the highest 100), so every class keeps its place above or below the others and above
// jobs without a class (0 in both); values at or below 0 become 0. Each changed value is a warning.
void map_priorities(KueueImport& result) {
  auto& classes = result.policy.priority_classes;
  const auto& values = result.priority_values;
  const bool in_range = std::all_of(values.begin(), values.end(), [](const auto& v) { return v.value <= 100; });
  std::vector<int64_t> positive;
  for (const auto& v : values)
    if (v.value > 0) positive.push_back(v.value);
  std::sort(positive.begin(), positive.end());
  positive.erase(std::unique(positive.begin(), positive.end()), positive.end());
  const bool tied = positive.size() > 100;
  for (size_t i = 0; i < classes.size() && i < values.size(); ++i) {
    const int64_t v = values[i].value;
    int weight = static_cast<int>(std::clamp<int64_t>(v, 0, 100));
    if (!in_range && v > 0) {
      const auto rank = static_cast<int64_t>(std::lower_bound(positive.begin(), positive.end(), v) - positive.begin());
      const auto n = static_cast<int64_t>(positive.size());
      weight = n == 1 ? 100 : static_cast<int>(1 + (rank * 99 + (n - 1) / 2) / (n - 1));
    }
    classes[i].weight = weight;
    if (weight == v) continue;
    std::string why = v < 0 ? "is below 0, below jobs without a class (0 in Kueue as in allot); allot's lowest "
                                   "weight is 0: taken as 0, the same as no class"
                            : "is outside allot's weights 0..100; the classes' values were spread in order over 1..100, "
                              "so each keeps its place: taken as " + std::to_string(weight);
    if (tied && v > 0) why += " (more than 100 distinct values: some classes now share a weight)";
    result.warnings.push_back("WorkloadPriorityClass " + values[i].object + ": value: " + std::to_string(v) + " " + why);
  }
}

// Kueue's hierarchical Cohorts as allot's groups (docs/from-kueue-hyperpod.md, "Cohort trees"). One root cohort is
// the cluster (allot's export writes the cluster's cohort above the root groups): its children are the root
// groups, its ClusterQueues the teams without a group; with no cohort under it this is the flat cluster of
// before. Several roots are several independent trees: each root is a root group that lends nothing outside
// (lend_limit 0), as Kueue's separate cohorts share nothing.
Status map_cohorts(KueueImport& result) {
  const auto& objects = result.cohort_objects;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < objects.size(); ++i) index.emplace(objects[i].name, i);
  for (const auto& c : objects) {
    if (c.parent.empty()) continue;
    if (!index.contains(c.parent))
      return Error::invalid("Cohort " + c.name + ": spec.parentName: '" + printable(c.parent) + "' is not among the "
                            "Cohorts read; give the parent's Cohort object too (allot's groups need every parent defined)");
    std::string path = c.name;
    std::vector<std::string> seen = {c.name};
    for (std::string up = c.parent; !up.empty(); up = objects[index.at(up)].parent) {
      path += " > " + up;
      const bool again = std::find(seen.begin(), seen.end(), up) != seen.end();
      seen.push_back(up);
      if (again)
        return Error::invalid("Cohort " + c.name + ": spec.parentName: the Cohorts' parents form a cycle: " + path +
                              "; a cohort may not be its own ancestor");
    }
  }
  // Roots: Cohort objects without a parent, then cohorts only ClusterQueues name (Kueue makes them implicitly).
  std::vector<std::string> roots;
  for (const auto& c : objects)
    if (c.parent.empty()) roots.push_back(c.name);
  for (const auto& name : result.cohorts)
    if (!index.contains(name) && std::find(roots.begin(), roots.end(), name) == roots.end()) roots.push_back(name);
  const std::string cluster = roots.size() == 1 ? roots[0] : "";
  if (index.contains(cluster)) {
    const auto& c = objects[index.at(cluster)];
    const std::string who = "Cohort " + c.name + ": ";
    if (!c.allocation.empty())
      result.warnings.push_back(who + "spec.resourceGroups: the one root cohort is allot's cluster, which has no quota of "
                                "its own; capacity outside every quota is the idle pool (policy.idle_pool); ignored");
    if (c.weight)
      result.warnings.push_back(who + "spec.fairSharing: the one root cohort is allot's cluster, which has no siblings "
                                "to weigh against; ignored");
    if (c.borrow_limit || c.lend_limit)
      result.warnings.push_back(who + "metadata.annotations: the one root cohort is allot's cluster; its group limits "
                                "are ignored");
  }
  std::vector<GroupSpec> groups;
  auto group_of = [&](const KueueImport::CohortRef& c) {
    GroupSpec g{.name = c.name, .parent = c.parent == cluster ? "" : c.parent, .allocation = c.allocation,
                .borrow_limit = c.borrow_limit, .lend_limit = c.lend_limit, .fair_share_weight = c.weight.value_or(1)};
    if (cluster.empty() && c.parent.empty()) {
      if (c.lend_limit && *c.lend_limit != 0)
        result.warnings.push_back("Cohort " + c.name + ": metadata.annotations: lend-limit " + std::to_string(*c.lend_limit) +
                                  "% taken as 0: a root cohort among several shares nothing with the others, in Kueue as in allot");
      g.lend_limit = 0;
    }
    return g;
  };
  for (const auto& c : objects)
    if (c.name != cluster) groups.push_back(group_of(c));
  for (const auto& name : roots)
    if (name != cluster && !index.contains(name)) groups.push_back(group_of({.name = name}));
  for (const auto& g : groups) {
    if (auto st = check_name(NameKind::kGroup, g.name); !st)
      return Error::invalid("Cohort " + g.name + ": metadata.name: " + st.error().message);
    if (std::any_of(result.teams.begin(), result.teams.end(), [&](const TeamSpec& t) { return t.name == g.name; }))
      return Error::invalid("Cohort " + g.name + ": metadata.name: team " + g.name + " (a ClusterQueue) has the same "
                            "name; allot's teams and groups need different names: rename the cohort or the queue");
  }
  if (auto st = check_groups(groups); !st) return Error::invalid("the Cohorts as allot's groups: " + st.error().message);
  for (TeamSpec& t : result.teams)
    if (auto it = result.team_cohort.find(t.name); it != result.team_cohort.end() && it->second != cluster)
      t.group = it->second;
  if (!groups.empty()) {
    result.policy.groups = std::move(groups);
    result.has_policy = true;
  }
  return ok_status();
}

}  // namespace

Status finish_kueue_import(KueueImport& result) {
  map_priorities(result);
  // Kueue orders every queue by priority, then arrival: allot's task ranking.
  if (!result.policy_annotations) result.policy.task_prioritization = TaskPrioritization::kTaskRanking;
  if (auto st = map_cohorts(result); !st) return st;
  for (const auto& lq : result.local_queues) {
    const std::string where = "LocalQueue " + lq.name;
    const bool known = std::find(result.cluster_queues.begin(), result.cluster_queues.end(), lq.cluster_queue) !=
                       result.cluster_queues.end();
    if (!known) {
      result.warnings.push_back(where + ": spec.clusterQueue: '" + lq.cluster_queue +
                                "' was not among the ClusterQueues read; the queue is ignored");
      continue;
    }
    // allot maps a job's queue-name label to a team by name: hyperpod-ns-<team>-localqueue or <team>.
    const std::string team = team_of_cluster_queue(lq.cluster_queue);
    if (lq.name != local_queue_name(team) && lq.name != team)
      result.warnings.push_back(where + ": metadata.name: jobs naming this queue will not find team " + team +
                                "; allot maps kueue.x-k8s.io/queue-name " + local_queue_name(team) + " or " + team +
                                " to it");
  }
  return ok_status();
}

// The time-limit keys of a team or priority class in the teams file (docs/teams-and-policy.md, "Time limits").
static void put_time_limit_keys(YAML::Emitter& out, const TimeLimitSettings& t) {
  if (t.default_s) out << YAML::Key << "default_time_limit" << YAML::Value << *t.default_s;
  if (t.max_s) out << YAML::Key << "max_time_limit" << YAML::Value << *t.max_s;
  if (t.resets_on_restart) out << YAML::Key << "time_limit_resets_on_restart" << YAML::Value << true;
}

// One allocation entry of a team or group, in the shortest form import found (compact_amount).
static void put_allocation_entry(YAML::Emitter& out, const AllocationSpec& a) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "instance_type" << YAML::Value << a.instance_type;
  const AmountSpec& m = a.amount;
  if (m.instances) out << YAML::Key << "instances" << YAML::Value << *m.instances;
  if (m.accelerators) out << YAML::Key << "accelerators" << YAML::Value << *m.accelerators;
  if (m.vcpu_unlimited) out << YAML::Key << "vcpu" << YAML::Value << "unlimited";
  if (m.memory_unlimited) out << YAML::Key << "memory_gib" << YAML::Value << "unlimited";
  if (m.vcpu_milli) {
    // vcpu is read to a thousandth: an exact decimal, not a float that might print 1.4999999.
    const int64_t v = *m.vcpu_milli;
    std::string text = std::to_string(v / 1000);
    if (v % 1000) {
      std::string frac = std::to_string(1000 + v % 1000).substr(1);
      while (frac.back() == '0') frac.pop_back();
      text += "." + frac;
    }
    out << YAML::Key << "vcpu" << YAML::Value << text;
  }
  if (m.memory_mib) {
    const int64_t mib = *m.memory_mib;
    // memory_gib is read to the nearest MiB and with at most 9 decimals (config/yaml_read.cpp): 9 decimals are
    // within 5e-10 GiB (well under half a MiB) of the exact value, so the amount reads back the same. Ten
    // decimals (1 MiB is 0.0009765625 GiB) were refused by the reader (found by kueue_import_fuzz).
    std::string text = std::to_string(mib / 1024);
    if (mib % 1024) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9f", static_cast<double>(mib % 1024) / 1024.0);
      std::string frac = std::string(buf).substr(2);
      while (frac.back() == '0') frac.pop_back();
      text += "." + frac;
    }
    out << YAML::Key << "memory_gib" << YAML::Value << text;
  }
  out << YAML::EndMap;
}

std::string teams_file_yaml(const KueueImport& result) {
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  if (result.has_policy) {
    const PolicySpec& p = result.policy;
    out << YAML::Key << "policy" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "task_prioritization" << YAML::Value << task_prioritization_name(p.task_prioritization);
    out << YAML::Key << "idle_compute" << YAML::Value << idle_compute_name(p.idle_compute);
    out << YAML::Key << "idle_pool" << YAML::Value << p.idle_pool;
    out << YAML::Key << "fair_share_preemption" << YAML::Value << p.fair_share_preemption;
    out << YAML::Key << "min_runtime" << YAML::Value << p.min_runtime_s;
    out << YAML::Key << "starvation_threshold" << YAML::Value << p.starvation_threshold_s;
    out << YAML::Key << "elastic_grow_delay" << YAML::Value << p.elastic_grow_delay_s;
    if (p.locality_wait_s != 0) out << YAML::Key << "locality_wait" << YAML::Value << p.locality_wait_s;
    if (p.start_timeout_s != 0) out << YAML::Key << "start_timeout" << YAML::Value << p.start_timeout_s;
    if (p.start_backoff_s != PolicySpec{}.start_backoff_s) out << YAML::Key << "start_backoff" << YAML::Value << p.start_backoff_s;
    if (p.start_backoff_max_s != PolicySpec{}.start_backoff_max_s)
      out << YAML::Key << "start_backoff_max" << YAML::Value << p.start_backoff_max_s;
    if (p.backfill) out << YAML::Key << "backfill" << YAML::Value << true;
    if (p.backfill_min_priority > 0) out << YAML::Key << "backfill_min_priority" << YAML::Value << p.backfill_min_priority;
    out << YAML::Key << "priority_classes" << YAML::Value << YAML::BeginSeq;
    for (const auto& pc : p.priority_classes) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << pc.name << YAML::Key << "weight"
          << YAML::Value << pc.weight;
      if (pc.locality_wait_s) out << YAML::Key << "locality_wait" << YAML::Value << *pc.locality_wait_s;
      put_time_limit_keys(out, pc.time_limits);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    if (!p.groups.empty()) {
      out << YAML::Key << "groups" << YAML::Value << YAML::BeginSeq;
      for (const GroupSpec& g : p.groups) {
        out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << g.name;
        if (!g.parent.empty()) out << YAML::Key << "parent" << YAML::Value << g.parent;
        if (!g.allocation.empty()) {
          out << YAML::Key << "allocation" << YAML::Value << YAML::BeginSeq;
          for (const auto& a : g.allocation) put_allocation_entry(out, a);
          out << YAML::EndSeq;
        }
        if (g.borrow_limit) out << YAML::Key << "borrow_limit" << YAML::Value << *g.borrow_limit;
        if (g.lend_limit) out << YAML::Key << "lend_limit" << YAML::Value << *g.lend_limit;
        out << YAML::Key << "fair_share_weight" << YAML::Value << g.fair_share_weight;
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::Key << "teams" << YAML::Value << YAML::BeginSeq;
  for (const auto& t : result.teams) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name;
    out << YAML::Key << "fair_share_weight" << YAML::Value << t.fair_share_weight;
    if (!t.group.empty()) out << YAML::Key << "group" << YAML::Value << t.group;
    out << YAML::Key << "allocation" << YAML::Value << YAML::BeginSeq;
    for (const auto& a : t.allocation) put_allocation_entry(out, a);
    out << YAML::EndSeq;
    out << YAML::Key << "sharing" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "strategy" << YAML::Value
        << sharing_strategy_name(t.strategy);
    if (t.strategy == SharingStrategy::kLendAndBorrow) out << YAML::Key << "borrow_limit" << YAML::Value << t.borrow_limit;
    out << YAML::EndMap;
    out << YAML::Key << "preempt_team_tasks" << YAML::Value << preempt_team_tasks_name(t.preempt_team_tasks);
    if (!t.containers.empty()) {
      const TeamContainerSettings& c = t.containers;
      out << YAML::Key << "containers" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "host_paths" << YAML::Value << YAML::Flow << c.host_paths;
      std::vector<std::string> caps;
      for (Capability cap : c.capabilities) caps.push_back(capability_name(cap));
      out << YAML::Key << "capabilities" << YAML::Value << YAML::Flow << caps;
      if (!c.registry_auth_file.empty()) out << YAML::Key << "registry_auth_file" << YAML::Value << c.registry_auth_file;
      out << YAML::EndMap;
    }
    put_time_limit_keys(out, t.time_limits);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace allot::interop
