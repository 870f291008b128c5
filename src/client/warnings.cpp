#include "client/warnings.h"

#include <map>

#include "core/model/request.h"

namespace allot::client {
namespace {

std::string describe(const Resources& r) {
  return std::to_string(r.accelerators) + " accelerators, " + std::to_string(r.vcpu_milli / 1000) + " vCPUs, " +
         std::to_string(r.memory_mib / 1024) + " GiB";
}

bool allocated(const nlohmann::json& team, const std::string& type) {
  for (const auto& a : team.value("allocation", nlohmann::json::array()))
    if (canonical_type_name(a.value("instance_type", "")) == type) return true;
  return false;
}

}  // namespace

std::vector<std::string> job_warnings(const JobSpec& job, const nlohmann::json& team, const Catalog& catalog) {
  std::vector<std::string> out;
  for (const PodSetSpec& ps : job.pod_sets) {
    const std::string where = job.pod_sets.size() > 1 ? "pod set " + ps.name + ": " : "";
    if (!ps.instance_type.empty()) {
      const std::string type = canonical_type_name(ps.instance_type);
      if (auto id = catalog.lookup(type)) {
        const InstanceType& t = catalog.at(*id);
        auto need = resolve_replica(t, ps.per_replica);
        const Resources cap = t.capacity();
        if (need && (need->accelerators > cap.accelerators || need->vcpu_milli > cap.vcpu_milli || need->memory_mib > cap.memory_mib))
          out.push_back(where + "one replica asks for " + describe(*need) + " but an " + type + " node has " + describe(cap) +
                        ": it can never be placed");
      }
      if (team.is_object() && !allocated(team, type))
        out.push_back(where + "team " + job.team + " has no allocation of " + type +
                      ": the job runs only on capacity other teams lend, and waits while none is free");
    } else if (team.is_object() && team.value("allocation", nlohmann::json::array()).empty()) {
      out.push_back(where + "team " + job.team +
                    " has no allocation: the job runs only on capacity other teams lend, and waits while none is free");
    }
  }
  return out;
}

std::vector<std::string> apply_warnings(const std::vector<TeamSpec>& teams, const std::vector<std::string>& without_weight,
                                        const nlohmann::json& nodes, const Catalog& catalog) {
  std::vector<std::string> out;
  for (const auto& name : without_weight)
    out.push_back("team " + name + " has no fair_share_weight: it defaults to 0; with idle_compute fair-share, idle "
                  "capacity goes by borrowed share per unit of weight, which puts a team of weight 0 last (set 1..100)");
  if (!nodes.is_array()) return out;
  std::map<std::string, int64_t> have;  // accelerators (or vCPUs for CPU types) per instance type in the cluster
  std::map<std::string, int64_t> asked;
  for (const auto& n : nodes) have[n.value("instance_type", "")] += 1;
  for (const TeamSpec& t : teams)
    for (const auto& a : t.allocation) {
      const std::string type = canonical_type_name(a.instance_type);
      auto id = catalog.lookup(type);
      if (!id) continue;
      auto r = resolve_allocation(catalog.at(*id), a.amount);
      if (!r) continue;
      const Resources one = catalog.at(*id).capacity();
      // In whole nodes, rounded up: the unit in which the cluster has the type.
      const int64_t nodes_needed = one.accelerators > 0 ? (r->accelerators + one.accelerators - 1) / one.accelerators
                                                        : (r->vcpu_milli + one.vcpu_milli - 1) / std::max<int64_t>(1, one.vcpu_milli);
      asked[type] += nodes_needed;
    }
  for (const auto& [type, n] : asked)
    if (n > have[type])
      out.push_back("the teams' allocations of " + type + " add up to " + std::to_string(n) + " nodes' worth, and the cluster has " +
                    std::to_string(have[type]) + ": jobs within their quota can wait for capacity that does not exist");
  return out;
}

}  // namespace allot::client
