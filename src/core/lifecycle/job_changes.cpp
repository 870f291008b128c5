// Changes to a job that users ask for besides submitting and cancelling it: holding and releasing a waiting
// job, moving it to another priority class, deleting a finished one. None of them runs the scheduler; the
// next pass sees the change.
#include <algorithm>

#include "core/model/dependency.h"
#include "core/model/state.h"

namespace allot {

namespace {

Result<Job*> find_mutable(ClusterState& s, std::string_view name) {
  const Job* j = s.find_job(name);
  if (!j) return Error::not_found("no job named " + std::string(name));
  return &s.jobs[j->id.index()];
}

// The attempts a finished job used: the next job of its name numbers its attempts from here.
int attempts_after(const Job& j) { return j.attempt_base + j.restarts + j.preemptions + static_cast<int>(j.resizes.size()) + 1; }

}  // namespace

Status set_job_held(ClusterState& s, std::string_view name, bool held, Time now) {
  auto found = find_mutable(s, name);
  if (!found) return found.error();
  Job& j = **found;
  if (!is_waiting(j.state))
    return Error::precondition("job " + j.spec.name + " is " + job_state_name(j.state) + "; only a Pending or Suspended job can be " +
                               (held ? "held" : "released"));
  if (j.held == held)
    return Error::precondition("job " + j.spec.name + (held ? " is already held" : " is not held; `allot hold` holds it"));
  j.held = held;
  std::string reason = held ? "held by request; `allot release " + j.spec.name + "` lets the scheduler consider it again"
                            : "released; waiting for the scheduler";
  j.history.push_back({now, j.state, j.state, reason});
  j.reason = std::move(reason);
  j.reason_code = held ? ReasonCode::kHeld : ReasonCode::kSubmitted;
  j.feasible = true;
  return ok_status();
}

Status set_job_priority(ClusterState& s, std::string_view name, const std::string& priority_class, Time now) {
  auto found = find_mutable(s, name);
  if (!found) return found.error();
  Job& j = **found;
  if (!is_waiting(j.state))
    return Error::precondition("job " + j.spec.name + " is " + job_state_name(j.state) +
                               "; only a Pending or Suspended job's priority can change");
  int weight = 0;
  if (!priority_class.empty()) {
    weight = s.priority_weight(priority_class);
    if (weight < 0)
      return Error::invalid("job " + j.spec.name + ": unknown priority class '" + priority_class +
                            "'; priority classes: " + s.priority_class_names());
  }
  const std::string from = j.spec.priority.empty() ? "none" : j.spec.priority;
  j.spec.priority = priority_class;
  j.priority = weight;
  j.history.push_back({now, j.state, j.state,
                       "priority class changed from " + from + " to " + (priority_class.empty() ? "none" : priority_class)});
  return ok_status();
}

Status delete_job(ClusterState& s, std::string_view name) {
  auto found = find_mutable(s, name);
  if (!found) return found.error();
  Job& j = **found;
  if (is_active(j.state))
    return Error::precondition("job " + j.spec.name + " is " + job_state_name(j.state) +
                               "; only a finished job can be deleted (cancel it first)");
  j.deleted = true;
  s.attempts_used[j.spec.name] = attempts_after(j);
  s.job_by_name.erase(j.spec.name);
  return ok_status();
}

Time finished_at(const Job& j) { return j.history.empty() ? j.submitted_at : j.history.back().at; }

Result<std::vector<JobId>> compact_finished(ClusterState& s, Time finished_before, Time now) {
  if (finished_before > now)
    return Error::invalid("compaction cutoff " + std::to_string(finished_before) + " is after the record's time " +
                          std::to_string(now) + "; only jobs that have already finished can be compacted");
  // The jobs that leave lead finished_jobs (ordered by when they finished); they are compacted in ID order, as
  // they were when this walked every job.
  keep_finished_index(s);
  std::vector<JobId> out;
  auto end = s.finished_jobs.upper_bound({finished_before, UINT32_MAX});
  // A job a waiting job that never ran depends on stays (dependency.h, jobs_depended_on): its dependents' verdicts
  // read it. It stays in finished_jobs, and a later compaction takes it once no such job names it.
  const std::vector<JobId> kept = s.finished_jobs.begin() == end ? std::vector<JobId>{} : jobs_depended_on(s);
  for (auto it = s.finished_jobs.begin(); it != end;) {
    if (std::binary_search(kept.begin(), kept.end(), JobId(it->second))) {
      ++it;
      continue;
    }
    out.push_back(JobId(it->second));
    it = s.finished_jobs.erase(it);
  }
  std::sort(out.begin(), out.end());
  for (JobId id : out) {
    Job& j = s.jobs[id.index()];
    if (!j.deleted) {
      // As delete_job does: the name is free, and a later job of that name numbers its runs after these.
      s.attempts_used[j.spec.name] = attempts_after(j);
      s.job_by_name.erase(j.spec.name);
    }
    s.jobs.compact(id.index());
  }
  s.jobs.release_revived();
  // attempts_used kept within kAttemptsKept names (state.h, attempts_folded): an entry is needed only until
  // a job of that name is submitted again, and names that never come back would otherwise pile up forever.
  if (s.attempts_used.size() > ClusterState::kAttemptsKept) {
    for (const auto& [name, used] : s.attempts_used) s.attempts_folded = std::max(s.attempts_folded, used);
    s.attempts_used.clear();
  }
  s.compacted_before = std::max(s.compacted_before, finished_before);
  s.compacted_at = now;
  s.compacted_jobs += out.size();
  return out;
}

}  // namespace allot
