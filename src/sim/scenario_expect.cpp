#include "sim/scenario_expect.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/model/ascii_text.h"
#include "core/model/plans.h"
#include "core/lifecycle/time_limit.h"
#include "core/placement/topology_levels.h"
#include "view/state_json.h"

namespace allot::sim {
namespace {

std::string bracketed(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return "[" + out + "]";
}

void check_resources(const std::string& what, const ResourceExpect& want, const Resources& got, std::vector<std::string>& bad) {
  auto cmp = [&](const char* name, const std::optional<int64_t>& w, int64_t g, Resource r) {
    if (w && *w != g)
      bad.push_back(what + "." + name + " is " + format_amount(r, g) + ", expected " + format_amount(r, *w));
  };
  cmp("accelerators", want.accelerators, got.accelerators, Resource::kAccelerators);
  cmp("vcpu", want.vcpu_milli, got.vcpu_milli, Resource::kVcpu);
  cmp("memory_gib", want.memory_mib, got.memory_mib, Resource::kMemory);
}

}  // namespace

int check_expect(const ClusterState& s, const Event& e, std::vector<std::string>& failures) {
  int checks = 0;
  const std::string where = "line " + std::to_string(e.line) + ", t=" + std::to_string(e.at) + ": ";
  for (const auto& [name, want] : e.expect.jobs) {
    ++checks;
    const std::string at = "line " + std::to_string(want.line ? want.line : e.line) + ", t=" + std::to_string(e.at) + ": job " + name + ": ";
    const Job* j = s.find_job(name);
    if (!j) {
      failures.push_back(at + "no such job (never submitted)");
      continue;
    }
    std::vector<std::string> bad;
    if (want.state && *want.state != job_state_name(j->state))
      bad.push_back(std::string("state is ") + job_state_name(j->state) + ", expected " + *want.state);
    std::vector<std::string> nodes;
    for (NodeId n : j->placement.nodes()) nodes.push_back(s.nodes[n.index()].name);
    std::sort(nodes.begin(), nodes.end());
    if (want.nodes) {
      auto w = *want.nodes;
      std::sort(w.begin(), w.end());
      if (w != nodes) bad.push_back("nodes are " + bracketed(nodes) + ", expected " + bracketed(w));
    }
    if (want.node_count && *want.node_count != static_cast<int>(nodes.size()))
      bad.push_back("node_count is " + std::to_string(nodes.size()) + ", expected " + std::to_string(*want.node_count));
    for (const auto& [level_name, count] : want.distinct) {
      auto level = find_level(s.levels, level_name);
      if (!level) {
        bad.push_back("distinct names unknown level '" + level_name + "'");
        continue;
      }
      // A domain is identified by its values at its level and every coarser one.
      std::set<std::vector<std::string>> domains;
      for (NodeId n : j->placement.nodes()) {
        const auto& topo = s.nodes[n.index()].topology;
        domains.insert(std::vector<std::string>(topo.begin(), topo.begin() + *level + 1));
      }
      if (static_cast<int>(domains.size()) != count)
        bad.push_back("distinct " + level_name + " is " + std::to_string(domains.size()) + ", expected " + std::to_string(count));
    }
    if (want.borrowing && *want.borrowing != j->borrowing)
      bad.push_back(std::string("borrowing is ") + (j->borrowing ? "true" : "false") + ", expected " + (*want.borrowing ? "true" : "false"));
    if (want.preemptions && *want.preemptions != j->preemptions)
      bad.push_back("preemptions is " + std::to_string(j->preemptions) + ", expected " + std::to_string(*want.preemptions));
    if (want.time_left) {
      const auto left = time_left(*j, e.at);
      if (!left) bad.push_back("it has no time limit, expected " + std::to_string(*want.time_left) + " s left");
      else if (*left != *want.time_left)
        bad.push_back("time_left is " + std::to_string(*left) + " s, expected " + std::to_string(*want.time_left));
    }
    if (want.restarts && *want.restarts != j->restarts)
      bad.push_back("restarts is " + std::to_string(j->restarts) + ", expected " + std::to_string(*want.restarts));
    if (want.replicas && *want.replicas != j->size())
      bad.push_back("replicas is " + std::to_string(j->size()) + ", expected " + std::to_string(*want.replicas));
    if (want.resizes && *want.resizes != static_cast<int>(j->resizes.size()))
      bad.push_back("resizes is " + std::to_string(j->resizes.size()) + ", expected " + std::to_string(*want.resizes));
    if (want.membership_epoch && *want.membership_epoch != j->membership_epoch)
      bad.push_back("membership_epoch is " + std::to_string(j->membership_epoch) + ", expected " +
                    std::to_string(*want.membership_epoch));
    if (want.reason && ascii_lower(j->reason.str()).find(ascii_lower(*want.reason)) == std::string::npos)
      bad.push_back("reason does not contain \"" + *want.reason + "\"");
    if (want.reason_code && *want.reason_code != j->reason_code)
      bad.push_back(std::string("reason_code is ") + reason_code_name(j->reason_code) + ", expected " +
                    reason_code_name(*want.reason_code));
    for (const auto& b : bad)
      failures.push_back(at + b + " (state " + job_state_name(j->state) + ", reason: " + j->reason.str() + ")");
  }
  for (const auto& [name, want] : e.expect.teams) {
    ++checks;
    const std::string at = "line " + std::to_string(want.line ? want.line : e.line) + ", t=" + std::to_string(e.at) + ": team " + name + ": ";
    const Team* t = s.find_team(name);
    if (!t) {
      failures.push_back(at + "no such team");
      continue;
    }
    std::vector<std::string> bad;
    if (want.usage) check_resources("usage", *want.usage, view::team_usage_total(s, t->id), bad);
    if (want.borrowed) check_resources("borrowed", *want.borrowed, view::team_borrowed_total(s, t->id), bad);
    if (want.lent) check_resources("lent", *want.lent, view::team_lent_total(s, t->id), bad);
    if (want.quota) check_resources("quota", *want.quota, view::team_nominal_total(s, t->id), bad);
    for (const auto& b : bad) failures.push_back(at + b);
  }
  for (const auto& [name, want] : e.expect.plans) {
    ++checks;
    const std::string at = "line " + std::to_string(want.line ? want.line : e.line) + ", t=" + std::to_string(e.at) + ": plan " + name + ": ";
    const Plan* p = s.find_plan(name);
    if (!p) {
      failures.push_back(at + "no such plan (never defined, or deleted)");
      continue;
    }
    if (want.state && *want.state != plan_state_name(p->state))
      failures.push_back(at + "state is " + plan_state_name(p->state) + ", expected " + *want.state);
    if (want.nodes && *want.nodes != plan_nodes_joined(s, p->id))
      failures.push_back(at + "nodes is " + std::to_string(plan_nodes_joined(s, p->id)) + ", expected " + std::to_string(*want.nodes));
  }
  (void)where;
  return checks;
}

}  // namespace allot::sim
