#pragma once
// Dependencies between jobs (docs/jobs.md, "Dependencies"; Slurm's --dependency=afterok/afterany/after): a job may
// name, in `after`, jobs of its own team that must have succeeded, ended or started before it runs. This file is
// the one home of the rule; the scheduler pass (pass.cpp), the server (its journal records) and the simulator all
// read it. No I/O, no clock.
//
// Names are resolved once, at submission, to the job kept under that name then (Job::after): a job submitted
// later under the same name is another job. Only jobs that exist when a job is submitted can be named (earlier
// jobs of the same submission included), so dependencies cannot form a cycle; check_submission_order refuses a
// cycle, or a forward reference, within one submission of several jobs with a message that names it.
//
// Each dependency, judged on the job it names:
//   condition  holds once the job ...          can never hold once the job ...
//   succeeded  ended Succeeded                 ended Failed or Cancelled
//   ended      ended, in any state             (always holds in the end)
//   started    began running (or ran once)     ended without ever running
// Both verdicts are final: a finished job never changes again. A job waits (reason `dependency`) while some
// dependency waits; once any can never hold, the pass returns it and the job ends Cancelled (reason
// `dependency_never`), never having run. Dependencies gate only a job's first run: a job that has run does not
// look at them again (a preempted job is not held back by them).
#include <optional>
#include <string>
#include <vector>

#include "core/model/state.h"

namespace allot {

enum class DependencyState { kHolds, kWaits, kNever };
const char* dependency_state_name(DependencyState s);  // "holds", "waits", "never"

// Whether `job` has been Running at least once (its history says so).
bool ever_ran(const Job& job);
// One dependency on `target`.
DependencyState dependency_state(const Job& target, DependencyCondition condition);

// The job's dependencies taken together: kNever with the first that can never hold, else kWaits with the first
// that waits, else kHolds (also for a job without dependencies, or one that has run). `which` indexes spec.after.
struct DependencyVerdict {
  DependencyState state = DependencyState::kHolds;
  size_t which = 0;
};
DependencyVerdict judge_dependencies(const ClusterState& s, const Job& job);
// Whether the scheduler passes the waiting job over for its dependencies (they wait or can never hold).
inline bool waits_for_dependency(const ClusterState& s, const Job& job) {
  return job.depends && judge_dependencies(s, job).state != DependencyState::kHolds;
}
// The reason of a job that waits for its dependencies (code `dependency`): every one still waiting, by name and
// condition, and the state of the job it names.
Explanation explain_dependency_wait(const ClusterState& s, const Job& job);
// Why dependency `which` of `job` can never hold: the job it names, how that job ended, the condition.
RefText dependency_never_text(const ClusterState& s, const Job& job, size_t which);

// At submission (submit.cpp): the IDs spec.after names, or why not. Refused: more than kMaxDependencies entries, an
// empty or invalid name, a name listed twice, the job itself, a name no job of the job's team is kept under (never
// submitted, deleted, compacted by retention, or a job of another team: the message is the same, so it does not
// tell whether another team has such a job).
Result<std::vector<JobId>> resolve_dependencies(const ClusterState& s, const JobSpec& spec, TeamId team);

// A submission of several jobs (POST /v1/jobs {"jobs": [...]}) is submitted in order, each job seeing the earlier
// ones. Refused before anything is submitted: a cycle among the submission's jobs (the message names it, "a -> b ->
// a"), or a job naming one that comes after it in the list (list it first).
Status check_submission_order(const std::vector<JobSpec>& specs);

// Ends waiting job `name`, which never ran, because its dependency on `after` can never hold (the pass found it;
// the journal's record replays it): Cancelled, reason dependency_never. Refused when the job has no such
// dependency, has run, or the dependency does not (yet) fail.
Status end_for_dependency(ClusterState& s, std::string_view name, std::string_view after, Time now);

// Retention (state.h, compact_finished) keeps a finished job while a waiting job that never ran names it: that
// job's verdict reads it. The IDs of such jobs, sorted, each once.
std::vector<JobId> jobs_depended_on(const ClusterState& s);

}  // namespace allot
