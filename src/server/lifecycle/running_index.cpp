#include "server/lifecycle/running_index.h"

#include <algorithm>

namespace allot::server {

void RunningIndex::update(const Job& j) {
  const uint32_t job = j.id.index();
  std::vector<uint32_t> nodes;
  if (j.state == JobState::kRunning)
    for (const auto& ps : j.placement.pod_sets)
      for (const auto& r : ps.replicas) nodes.push_back(r.node.index());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  // A job named in an event may have changed in what its assignments say even where it stays (a restart count).
  touched_.insert(touched_.end(), nodes.begin(), nodes.end());
  auto it = nodes_of_.find(job);
  if (it != nodes_of_.end()) touched_.insert(touched_.end(), it->second.begin(), it->second.end());
  if (it != nodes_of_.end() && it->second == nodes) return;
  remove(job);
  if (nodes.empty()) return;
  for (uint32_t n : nodes) jobs_on_[n].insert(job);
  nodes_of_.emplace(job, std::move(nodes));
}

void RunningIndex::remove(uint32_t job) {
  auto it = nodes_of_.find(job);
  if (it == nodes_of_.end()) return;
  for (uint32_t n : it->second) {
    auto on = jobs_on_.find(n);
    if (on == jobs_on_.end()) continue;
    on->second.erase(job);
    if (on->second.empty()) jobs_on_.erase(on);
  }
  nodes_of_.erase(it);
}

const std::set<uint32_t>* RunningIndex::on(NodeId node) const {
  auto it = jobs_on_.find(node.index());
  return it == jobs_on_.end() ? nullptr : &it->second;
}

}  // namespace allot::server
