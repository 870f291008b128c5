// Changes to a job that users ask for besides submitting and cancelling it: holding and releasing a waiting
// job, moving it to another priority class, deleting a finished one. None of them runs the scheduler; the
// next pass sees the change.
#include <algorithm>

#include "core/state.h"

namespace allot {

namespace {

Result<Job*> find_mutable(ClusterState& s, std::string_view name) {
  const Job* j = s.find_job(name);
  if (!j) return Error::not_found("no job named " + std::string(name));
  return &s.jobs[j->id.index()];
}

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
  s.attempts_used[j.spec.name] = j.attempt_base + j.restarts + j.preemptions + static_cast<int>(j.resizes.size()) + 1;
  s.job_by_name.erase(j.spec.name);
  return ok_status();
}

Job compacted_tombstone(JobId id) {
  Job tomb;
  tomb.id = id;
  tomb.state = JobState::kCancelled;
  tomb.deleted = true;
  tomb.compacted = true;
  return tomb;
}

Time finished_at(const Job& j) { return j.history.empty() ? j.submitted_at : j.history.back().at; }

Result<std::vector<JobId>> compact_finished(ClusterState& s, Time finished_before, Time now) {
  if (finished_before > now)
    return Error::invalid("compaction cutoff " + std::to_string(finished_before) + " is after the record's time " +
                          std::to_string(now) + "; only jobs that have already finished can be compacted");
  std::vector<JobId> out;
  for (Job& j : s.jobs) {
    if (j.compacted || is_active(j.state) || finished_at(j) > finished_before) continue;
    if (!j.deleted) {
      // As delete_job does: the name is free, and a later job of that name numbers its runs after these.
      s.attempts_used[j.spec.name] = j.attempt_base + j.restarts + j.preemptions + static_cast<int>(j.resizes.size()) + 1;
      s.job_by_name.erase(j.spec.name);
    }
    j = compacted_tombstone(j.id);
    out.push_back(j.id);
  }
  s.compacted_before = std::max(s.compacted_before, finished_before);
  s.compacted_at = now;
  s.compacted_jobs += out.size();
  return out;
}

}  // namespace allot
