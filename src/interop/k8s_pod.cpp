#include "interop/k8s_pod.h"

#include <algorithm>

#include "config/container_rules.h"
#include "core/model/mig.h"
#include "interop/k8s_quantity.h"

namespace allot::interop::k8s {
namespace {

constexpr std::string_view kKueuePrefix = "kueue.x-k8s.io/podset-";
constexpr const char* kRequired = "kueue.x-k8s.io/podset-required-topology";
constexpr const char* kPreferred = "kueue.x-k8s.io/podset-preferred-topology";
constexpr const char* kUnconstrained = "kueue.x-k8s.io/podset-unconstrained-topology";
constexpr const char* kSliceLevel = "kueue.x-k8s.io/podset-slice-required-topology";
constexpr const char* kSliceSize = "kueue.x-k8s.io/podset-slice-size";

// One pod's resources in allot's units; unset means the manifest did not ask.
struct PodAmount {
  std::optional<int64_t> gpus, neuron, cpu_milli, memory_mib;
  // MIG devices (nvidia.com/mig-<profile>, the device plugin's mixed strategy; docs/mig.md): how many, of which
  // profile. A pod asks for one profile at most.
  std::optional<int64_t> mig;
  std::string mig_profile;
};

// Adds the MIG devices of `a` to `total` (`how` adds or raises the count); an error when the profiles differ.
Status add_mig(PodAmount& total, const PodAmount& a, void (*how)(std::optional<int64_t>&, std::optional<int64_t>), const Field& where) {
  if (!a.mig) return ok_status();
  if (!total.mig_profile.empty() && total.mig_profile != a.mig_profile)
    return where.error("a pod asks for MIG devices of one profile, not both " + mig_resource_name(total.mig_profile) +
                       " and " + mig_resource_name(a.mig_profile) + " (docs/mig.md)");
  total.mig_profile = a.mig_profile;
  how(total.mig, a.mig);
  return ok_status();
}

void add(std::optional<int64_t>& into, std::optional<int64_t> v) {
  if (v) into = into.value_or(0) + *v;
}
void raise(std::optional<int64_t>& into, std::optional<int64_t> v) {
  if (v) into = std::max(into.value_or(0), *v);
}

// Reads requests, falling back to limits per resource: Kubernetes defaults a missing request to its limit,
// and device plugins' resources are usually written only as limits.
Result<PodAmount> container_amount(const Field& c, std::vector<std::string>& warnings) {
  PodAmount out;
  const Field res = c.child("resources");
  if (!res.present()) return out;
  if (auto st = res.expect_map(); !st) return st.error();
  for (const auto& part : {"limits", "requests"}) {  // requests last: they win
    const Field m = res.child(part);
    if (!m.present()) continue;
    if (auto st = m.expect_map(); !st) return st.error();
    for (const auto& kv : m.node()) {
      const std::string name = kv.first.Scalar();
      const Field v = m.entry(name, kv.second);
      auto q = v.str();
      if (!q) return q.error();
      auto parsed = [&](Result<int64_t> r) -> Result<int64_t> {
        if (!r) return v.error(r.error().message);
        return r;
      };
      if (name == "nvidia.com/gpu") {
        auto n = parsed(parse_device_count(*q));
        if (!n) return n.error();
        out.gpus = *n;
      } else if (name.starts_with(kMigResourcePrefix) && name.size() > kMigResourcePrefix.size()) {
        auto n = parsed(parse_device_count(*q));
        if (!n) return n.error();
        const std::string profile = name.substr(kMigResourcePrefix.size());
        if (!out.mig_profile.empty() && out.mig_profile != profile)
          return v.error("a container asks for MIG devices of one profile, not both " + mig_resource_name(out.mig_profile) +
                         " and " + name + " (docs/mig.md)");
        out.mig_profile = profile;
        out.mig = *n;
      } else if (name == "aws.amazon.com/neurondevice" || name == "aws.amazon.com/neuron") {
        auto n = parsed(parse_device_count(*q));
        if (!n) return n.error();
        out.neuron = *n;
      } else if (name == "cpu") {
        auto n = parsed(parse_cpu_milli(*q));
        if (!n) return n.error();
        out.cpu_milli = *n;
      } else if (name == "memory") {
        auto n = parsed(parse_memory_mib(*q));
        if (!n) return n.error();
        out.memory_mib = *n;
      } else if (name == "aws.amazon.com/neuroncore") {
        return v.error("allot binds whole Neuron devices: request aws.amazon.com/neurondevice instead");
      } else if (name == "vpc.amazonaws.com/efa") {
        if (std::string_view(part) == "requests" || !res.child("requests").child(name).present())
          warnings.push_back(v.warning("ignored: EFA interfaces come with the instance type"));
      } else if (name == "ephemeral-storage" || name.rfind("hugepages-", 0) == 0) {
        // Node-local resources allot does not account; the node's kubelet-free runtime has no limit to set.
      } else {
        return v.error("unknown resource \"" + name +
                       "\"; allot understands nvidia.com/gpu, nvidia.com/mig-<profile>, aws.amazon.com/neurondevice, cpu and memory");
      }
    }
  }
  return out;
}

// A pod's request: the sum over its containers, but at least what any one init container needs (init
// containers run one at a time before the others), as Kubernetes computes a pod's effective request.
Result<PodAmount> pod_amount(const Field& spec, std::vector<std::string>& warnings) {
  PodAmount total;
  const Field cs = spec.child("containers");
  for (size_t i = 0; i < cs.node().size(); ++i) {
    auto a = container_amount(cs.item(i), warnings);
    if (!a) return a.error();
    add(total.gpus, a->gpus), add(total.neuron, a->neuron), add(total.cpu_milli, a->cpu_milli),
        add(total.memory_mib, a->memory_mib);
    if (auto st = add_mig(total, *a, add, cs.item(i)); !st) return st.error();
  }
  const Field init = spec.child("initContainers");
  if (init.present()) {
    if (auto st = init.expect_list(); !st) return st.error();
    for (size_t i = 0; i < init.node().size(); ++i) {
      auto a = container_amount(init.item(i), warnings);
      if (!a) return a.error();
      raise(total.gpus, a->gpus), raise(total.neuron, a->neuron), raise(total.cpu_milli, a->cpu_milli),
          raise(total.memory_mib, a->memory_mib);
      if (auto st = add_mig(total, *a, raise, init.item(i)); !st) return st.error();
    }
  }
  return total;
}

Result<std::string> instance_type_from_affinity(const Field& spec) {
  const Field terms = spec.child("affinity").child("nodeAffinity")
                          .child("requiredDuringSchedulingIgnoredDuringExecution").child("nodeSelectorTerms");
  if (!terms.present() || !terms.node().IsSequence()) return std::string();
  for (size_t t = 0; t < terms.node().size(); ++t) {
    const Field exprs = terms.item(t).child("matchExpressions");
    if (!exprs.node().IsSequence()) continue;
    for (size_t e = 0; e < exprs.node().size(); ++e) {
      const Field x = exprs.item(e);
      const auto key = x.child("key").node();
      if (!key.IsScalar() || (key.Scalar() != "node.kubernetes.io/instance-type" &&
                              key.Scalar() != "beta.kubernetes.io/instance-type"))
        continue;
      const Field values = x.child("values");
      const auto op = x.child("operator").node();
      if (!op.IsScalar() || op.Scalar() != "In" || !values.node().IsSequence() || values.node().size() != 1)
        return x.error("allot needs exactly one instance type: use operator In with a single value");
      return values.item(0).str();
    }
  }
  return std::string();
}

// The first container's image and imagePullPolicy (Kubernetes' default policy when absent).
Status read_image(const Field& c, PodTemplate& out) {
  const Field image = c.child("image");
  if (!image.present()) {
    if (c.child("imagePullPolicy").present()) return c.child("imagePullPolicy").error("is given without an image");
    return ok_status();
  }
  auto ref = image.str();
  if (!ref) return ref.error();
  if (auto st = config::check_image_reference(*ref); !st) return image.error(st.error().message);
  out.container.image = *ref;
  out.container.pull_policy = config::default_pull_policy(*ref);
  if (const Field p = c.child("imagePullPolicy"); p.present()) {
    auto name = p.str();
    if (!name) return name.error();
    auto policy = config::pull_policy_named(*name);
    if (!policy) return p.error("must be Always, IfNotPresent or Never, got \"" + printable(*name) + "\"");
    out.container.pull_policy = *policy;
  }
  return ok_status();
}

// The first container's volumeMounts of the pod's volumes: a hostPath volume becomes a volume (its subPath joined
// to the host path), a memory emptyDir mounted at /dev/shm sizes /dev/shm (its sizeLimit; none: allot's default);
// other volumes (configMap, secret, persistentVolumeClaim, a disk emptyDir ...) are not mounted, with a warning.
Status read_volumes(const Field& spec, const Field& c, PodTemplate& out, std::vector<std::string>& warnings) {
  const Field mounts = c.child("volumeMounts");
  if (!mounts.present()) return ok_status();
  if (auto st = mounts.expect_list(); !st) return st.error();
  if (out.container.image.empty()) {
    warnings.push_back(mounts.warning("ignored: without an image the command runs on the node itself and sees its files"));
    return ok_status();
  }
  const Field volumes = spec.child("volumes");
  if (volumes.present())
    if (auto st = volumes.expect_list(); !st) return st.error();
  for (size_t i = 0; i < mounts.node().size(); ++i) {
    const Field m = mounts.item(i);
    auto name = m.child("name").str();
    if (!name) return name.error();
    auto mount_path = m.child("mountPath").str();
    if (!mount_path) return mount_path.error();
    bool read_only = false;
    if (const Field ro = m.child("readOnly"); ro.present()) {
      auto v = ro.str();
      if (!v) return v.error();
      if (*v != "true" && *v != "false") return ro.error("must be true or false");
      read_only = *v == "true";
    }
    Field volume = volumes.item(volumes.node().size());  // absent unless found below
    for (size_t k = 0; k < volumes.node().size(); ++k)
      if (auto n = volumes.item(k).child("name").str(); n && *n == *name) volume = volumes.item(k);
    if (!volume.present()) return m.child("name").error("names no volume of spec.volumes (\"" + printable(*name) + "\")");
    if (const Field host = volume.child("hostPath"); host.present()) {
      auto path = host.child("path").str();
      if (!path) return path.error();
      std::string host_path = *path;
      if (const Field sub = m.child("subPath"); sub.present()) {
        auto s = sub.str();
        if (!s) return s.error();
        host_path += "/" + *s;
      }
      auto normal = config::normal_path(host_path, "the host path");
      if (!normal) return host.child("path").error(normal.error().message);
      auto in = config::normal_path(*mount_path, "mountPath");
      if (!in) return m.child("mountPath").error(in.error().message);
      if (const Field t = host.child("type"); t.present())
        warnings.push_back(t.warning("not checked: the agent mounts the path as it is on the node"));
      out.container.volumes.push_back({*normal, *in, read_only});
      continue;
    }
    const Field empty = volume.child("emptyDir");
    const bool memory = empty.present() && empty.child("medium").present() && empty.child("medium").node().IsScalar() &&
                        empty.child("medium").node().Scalar() == "Memory";
    auto in = config::normal_path(*mount_path, "mountPath");
    if (memory && in && *in == "/dev/shm") {
      if (const Field limit = empty.child("sizeLimit"); limit.present()) {
        auto q = limit.str();
        if (!q) return q.error();
        auto mib = parse_memory_mib(*q);
        if (!mib) return limit.error(mib.error().message);
        if (*mib <= 0 || *mib > config::kMaxShmMib) return limit.error("must be above 0 and at most 16Ti");
        out.container.shm_mib = *mib;
      }
      continue;
    }
    warnings.push_back(m.warning("not mounted: allot mounts hostPath volumes, and sizes /dev/shm from an emptyDir with "
                                 "medium Memory mounted there; other volumes need a hostPath on the nodes"));
  }
  if (auto st = config::check_volumes(out.container.volumes); !st) return mounts.error(st.error().message);
  return ok_status();
}

// Kubernetes runs `command` (replacing the image's entrypoint) followed by `args`, and `args` alone after the
// image's entrypoint (in place of its CMD). allot's command replaces the entrypoint the same way, so `command` and
// `args` together become allot's command (command first); `args` without `command` become the job's args
// (docs/jobs.md, "Images"), which need an image: without one there is no entrypoint, and the command is required.
Status read_command(const Field& c, PodTemplate& out) {
  auto argv_of = [](const Field& f, std::vector<std::string>& to) -> Status {
    if (auto st = f.expect_list(); !st) return st.error();
    for (size_t i = 0; i < f.node().size(); ++i) {
      auto s = f.item(i).str();
      if (!s) return s.error();
      to.push_back(*s);
    }
    return ok_status();
  };
  const Field command = c.child("command"), args = c.child("args");
  if (!command.present()) {
    if (out.container.image.empty())
      return command.error("is required without an image: allot runs the command on the node and has no entrypoint to run");
    return args.present() ? argv_of(args, out.container.args) : ok_status();
  }
  for (const Field* part : {&command, &args})
    if (part->present())
      if (auto st = argv_of(*part, out.command); !st) return st;
  return ok_status();
}

// The first container's env entries with a value; valueFrom and allot's own rendezvous variables are left out,
// with a warning.
Status read_env(const Field& c, PodTemplate& out, std::vector<std::string>& warnings) {
  const Field env = c.child("env");
  if (!env.present()) return ok_status();
  if (auto st = env.expect_list(); !st) return st.error();
  for (size_t i = 0; i < env.node().size(); ++i) {
    const Field e = env.item(i);
    auto name = e.child("name").str();
    if (!name) return name.error();
    if (e.child("valueFrom").present()) {
      warnings.push_back(e.warning(*name + " uses valueFrom, which allot cannot resolve; it is left out"));
      continue;
    }
    const Field v = e.child("value");
    auto value = v.present() ? v.str() : Result<std::string>(std::string());
    if (!value) return value.error();
    // allot sets these for every replica from its placement (docs/jobs.md, "What a replica gets"); a manifest's
    // own value would name a host or port allot did not choose, so it is not used, and said so.
    for (const char* ours : {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"})
      if (*name == ours) {
        warnings.push_back(e.warning(*name + "=" + *value + " is not used: allot sets " + *name +
                                     " for every replica (rank 0's node and a free port for MASTER_ADDR/MASTER_PORT)"));
        break;
      }
    out.env[*name] = *value;
  }
  return ok_status();
}

}  // namespace

Status read_topology_annotations(const Field& annotations, PodTemplate& out) {
  if (!annotations.present()) return ok_status();
  if (auto st = annotations.expect_map(); !st) return st.error();
  for (const auto& kv : annotations.node()) {
    const std::string key = kv.first.Scalar();
    if (key.rfind(kKueuePrefix, 0) != 0) continue;
    const Field f = annotations.entry(key, kv.second);
    auto v = f.str();
    if (!v) return v.error();
    if (key == kRequired) out.topology.required = *v;
    else if (key == kPreferred) out.topology.preferred = *v;
    else if (key == kSliceLevel) out.topology.slice = SliceSpec{*v, out.topology.slice ? out.topology.slice->size : 0};
    else if (key == kSliceSize) {
      auto n = f.integer(1, 1'000'000);
      if (!n) return n.error();
      out.slice_size = static_cast<int>(*n);
    } else if (key == kUnconstrained) {
      if (*v != "true" && *v != "false") return f.error("must be \"true\" or \"false\"");
    } else {
      return f.error("is not supported by allot (it understands podset-required-topology, "
                     "podset-preferred-topology, podset-slice-required-topology and podset-slice-size)");
    }
  }
  if (!out.topology.required.empty() && !out.topology.preferred.empty())
    return annotations.error(std::string(kRequired) + " and " + kPreferred + " cannot both be set");
  if (out.slice_size > 0 && !out.topology.slice)
    return annotations.error(std::string(kSliceSize) + " needs " + kSliceLevel);
  if (out.topology.slice && out.slice_size == 0)
    return annotations.error(std::string(kSliceLevel) + " needs " + kSliceSize);
  if (out.topology.slice) out.topology.slice->size = out.slice_size;
  return ok_status();
}

Result<PodTemplate> read_pod_template(const Field& tmpl, std::vector<std::string>& warnings) {
  if (!tmpl.present()) return tmpl.error("is required");
  if (auto st = tmpl.expect_map(); !st) return st.error();
  PodTemplate out;
  if (auto st = read_topology_annotations(tmpl.child("metadata").child("annotations"), out); !st) return st.error();
  const Field spec = tmpl.child("spec");
  if (auto st = spec.expect_map(); !st) return st.error();
  const Field cs = spec.child("containers");
  if (!cs.present() || !cs.node().IsSequence() || cs.node().size() == 0)
    return cs.error("needs at least one container");
  if (cs.node().size() > 1)
    warnings.push_back(cs.warning("allot runs the first container's image and command; the others' requests are added to it"));
  if (auto st = read_image(cs.item(0), out); !st) return st.error();
  if (auto st = read_command(cs.item(0), out); !st) return st.error();
  if (auto st = read_env(cs.item(0), out, warnings); !st) return st.error();
  if (auto st = read_volumes(spec, cs.item(0), out, warnings); !st) return st.error();

  auto amount = pod_amount(spec, warnings);
  if (!amount) return amount.error();
  if (amount->gpus.value_or(0) > 0 && amount->neuron.value_or(0) > 0)
    return cs.error("a pod cannot request both nvidia.com/gpu and aws.amazon.com/neurondevice");
  // A MIG node offers MIG devices only (docs/mig.md), so a pod takes MIG devices or whole devices, never both.
  if (amount->mig.value_or(0) > 0 && (amount->gpus.value_or(0) > 0 || amount->neuron.value_or(0) > 0))
    return cs.error("a pod cannot request both " + mig_resource_name(amount->mig_profile) +
                    " and whole devices (nvidia.com/gpu, aws.amazon.com/neurondevice): a MIG node offers MIG devices only");
  // No request at all: the pod set asks for nothing, and the server gives it the team's default_request (as a
  // LimitRange default would) or refuses it naming that setting (core/lifecycle/submit.cpp).
  if (!amount->gpus && !amount->neuron && !amount->mig && !amount->cpu_milli && !amount->memory_mib)
    warnings.push_back(cs.item(0).child("resources").warning(
        "no requests (nvidia.com/gpu, aws.amazon.com/neurondevice, cpu, memory): the team's default_request applies, "
        "or the server refuses the job if the team has none"));
  if (amount->gpus.value_or(0) > 0) out.per_replica.accelerators = amount->gpus;
  else if (amount->neuron.value_or(0) > 0) out.per_replica.accelerators = amount->neuron;
  else if (amount->mig.value_or(0) > 0) out.per_replica.accelerators = amount->mig;
  else if (amount->gpus || amount->neuron) out.per_replica.accelerators = 0;
  out.per_replica.vcpu_milli = amount->cpu_milli;
  out.per_replica.memory_mib = amount->memory_mib;

  const Field selector = spec.child("nodeSelector");
  if (selector.present()) {
    if (auto st = selector.expect_map(); !st) return st.error();
    for (const auto& kv : selector.node()) {
      const std::string key = kv.first.Scalar();
      const Field f = selector.entry(key, kv.second);
      if (key == "node.kubernetes.io/instance-type" || key == "beta.kubernetes.io/instance-type") {
        auto v = f.str();
        if (!v) return v.error();
        out.instance_type = *v;
      } else {
        warnings.push_back(f.warning("ignored: allot selects nodes by instance type and topology only"));
      }
    }
  }
  if (out.instance_type.empty()) {
    auto t = instance_type_from_affinity(spec);
    if (!t) return t.error();
    out.instance_type = *t;
  }
  if (amount->mig.value_or(0) > 0) {
    // MIG devices are accelerators of the MIG type of the pod's instance type (core/model/mig.h), which the pod names.
    if (out.instance_type.empty())
      return cs.error("a pod that requests " + mig_resource_name(amount->mig_profile) +
                      " selects the instance type whose GPUs are partitioned (nodeSelector node.kubernetes.io/instance-type, "
                      "e.g. ml.p4de.24xlarge): allot has a MIG type per instance type and profile (docs/mig.md)");
    if (auto parts = split_mig_type_name(out.instance_type); !parts)
      out.instance_type = mig_type_name(out.instance_type, amount->mig_profile);
    else if (parts->profile != amount->mig_profile)
      return cs.error("the pod selects instance type " + out.instance_type + " but requests " +
                      mig_resource_name(amount->mig_profile));
  }
  return out;
}

}  // namespace allot::interop::k8s
