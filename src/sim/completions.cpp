#include "sim/completions.h"

#include <algorithm>

namespace allot::sim {

namespace {

// When a running job's work is done, if it keeps running at its current size (an elastic job below its max
// works more slowly: state.h, run_time_for).
Time completes_at(const Job& j) { return j.started_at + run_time_for(j, *j.spec.duration_s - j.work_done_s); }

}  // namespace

std::optional<Time> next_completion(const ClusterState& s, Time now) {
  std::optional<Time> t;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (!j.spec.duration_s) continue;
    const Time done = std::max(now, completes_at(j));
    if (!t || done < *t) t = done;
  }
  return t;
}

std::vector<JobId> completed_by(const ClusterState& s, Time now) {
  std::vector<std::pair<Time, JobId>> done;
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (j.spec.duration_s && remaining_work(j, now) == 0)
      done.emplace_back(completes_at(j), id);
  }
  std::sort(done.begin(), done.end());
  std::vector<JobId> out;
  for (const auto& [at, id] : done) out.push_back(id);
  return out;
}

}  // namespace allot::sim
