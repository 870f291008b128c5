#include "core/lifecycle/drain.h"

namespace allot {

Result<std::vector<JobId>> drain_node(ClusterState& s, std::string_view name, Time now) {
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  const NodeId id = n->id;
  auto st = set_cordon(s, name, true);
  if (!st) return st.error();
  std::vector<JobId> victims;
  for (const Job& j : s.jobs) {
    if (j.state != JobState::kRunning) continue;
    for (NodeId used : j.placement.nodes())
      if (used == id) {
        victims.push_back(j.id);
        break;
      }
  }
  for (JobId v : victims) {
    auto p = preempt_job(s, v, now, "node " + std::string(name) + " is being drained; the job resumes elsewhere from its last checkpoint",
                         ReasonCode::kDrained);
    if (!p) return p.error();
  }
  return victims;
}

}  // namespace allot
