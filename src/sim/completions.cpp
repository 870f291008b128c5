#include "sim/completions.h"

#include <algorithm>

namespace allot::sim {

std::optional<Time> next_completion(const ClusterState& s, Time now) {
  std::optional<Time> t;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (!j.spec.duration_s) continue;
    const Time done = now + remaining_work(j, now);
    if (!t || done < *t) t = done;
  }
  return t;
}

std::vector<JobId> completed_by(const ClusterState& s, Time now) {
  std::vector<std::pair<Time, JobId>> done;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (j.spec.duration_s && remaining_work(j, now) == 0)
      done.emplace_back(j.started_at + (*j.spec.duration_s - j.work_done_s), id);
  }
  std::sort(done.begin(), done.end());
  std::vector<JobId> out;
  for (const auto& [at, id] : done) out.push_back(id);
  return out;
}

}  // namespace allot::sim
