#include "core/model/dependency.h"

#include <algorithm>
#include <map>
#include <set>

namespace allot {

const char* dependency_state_name(DependencyState s) {
  switch (s) {
    case DependencyState::kHolds: return "holds";
    case DependencyState::kWaits: return "waits";
    case DependencyState::kNever: return "never";
  }
  return "waits";
}

bool ever_ran(const Job& job) {
  if (job.state == JobState::kRunning) return true;
  return std::any_of(job.history.begin(), job.history.end(), [](const Transition& t) { return t.to == JobState::kRunning; });
}

DependencyState dependency_state(const Job& target, DependencyCondition condition) {
  const bool ended = !is_active(target.state);
  switch (condition) {
    case DependencyCondition::kSucceeded:
      if (!ended) return DependencyState::kWaits;
      return target.state == JobState::kSucceeded ? DependencyState::kHolds : DependencyState::kNever;
    case DependencyCondition::kEnded:
      return ended ? DependencyState::kHolds : DependencyState::kWaits;
    case DependencyCondition::kStarted:
      if (ever_ran(target)) return DependencyState::kHolds;
      return ended ? DependencyState::kNever : DependencyState::kWaits;
  }
  return DependencyState::kWaits;
}

DependencyVerdict judge_dependencies(const ClusterState& s, const Job& job) {
  DependencyVerdict v;
  if (!job.depends || ever_ran(job)) return v;
  for (size_t i = 0; i < job.after.size() && i < job.spec.after.size(); ++i) {
    const DependencyState d = dependency_state(s.jobs[job.after[i].index()], job.spec.after[i].condition);
    if (d == DependencyState::kNever) return {DependencyState::kNever, i};
    if (d == DependencyState::kWaits && v.state == DependencyState::kHolds) v = {DependencyState::kWaits, i};
  }
  return v;
}

namespace {

const char* condition_verb(DependencyCondition c) {
  switch (c) {
    case DependencyCondition::kSucceeded: return "succeed";
    case DependencyCondition::kEnded: return "end";
    case DependencyCondition::kStarted: return "start";
  }
  return "end";
}

}  // namespace

Explanation explain_dependency_wait(const ClusterState& s, const Job& job) {
  RefText text = "waits for ";
  int named = 0;
  for (size_t i = 0; i < job.after.size() && i < job.spec.after.size(); ++i) {
    const Job& target = s.jobs[job.after[i].index()];
    const DependencyCondition c = job.spec.after[i].condition;
    if (dependency_state(target, c) != DependencyState::kWaits) continue;
    text += std::string(named++ ? "; " : "") + job_ref(job.spec.after[i].job, s.teams[job.team.index()].spec.name) + " to " +
            condition_verb(c) + " (after: " + dependency_condition_name(c) + "; it is " + job_state_name(target.state) + ")";
  }
  return explain(ReasonCode::kDependency, std::move(text));
}

RefText dependency_never_text(const ClusterState& s, const Job& job, size_t which) {
  const JobDependency& d = job.spec.after[which];
  const Job& target = s.jobs[job.after[which].index()];
  const RefText ref = job_ref(d.job, s.teams[job.team.index()].spec.name);
  std::string how = std::string("ended ") + job_state_name(target.state);
  if (d.condition == DependencyCondition::kStarted) how += " without ever running";
  return "DependencyNeverSatisfied: " + ref + " " + how + ", and this job was to run only once it would " +
         condition_verb(d.condition) + " (after: " + dependency_condition_name(d.condition) + "); cancelled, it never ran";
}

Result<std::vector<JobId>> resolve_dependencies(const ClusterState& s, const JobSpec& spec, TeamId team) {
  std::vector<JobId> out;
  if (spec.after.empty()) return out;
  const std::string where = "job " + spec.name + ", after";
  if (spec.after.size() > kMaxDependencies)
    return Error::invalid(where + ": " + std::to_string(spec.after.size()) + " entries; at most " +
                          std::to_string(kMaxDependencies) + " jobs may be named");
  std::set<std::string> seen;
  for (size_t i = 0; i < spec.after.size(); ++i) {
    const JobDependency& d = spec.after[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (d.job.empty()) return Error::invalid(at + ": job is empty; name a job of team " + spec.team);
    if (auto st = check_name(NameKind::kJob, d.job); !st) return Error::invalid(at + ": " + st.error().message);
    if (d.job == spec.name) return Error::invalid(at + ": a job cannot depend on itself (" + spec.name + ")");
    if (!seen.insert(d.job).second) return Error::invalid(at + ": job " + d.job + " is named twice; name each job once");
    const Job* target = s.find_job(d.job);
    // Another team's job is answered as an unknown one: the answer must not tell whether it exists.
    if (!target || target->team != team)
      return Error::invalid(at + ": no job named " + d.job + " is kept in team " + spec.team +
                            " (never submitted, deleted, or compacted by retention); a job may depend only on jobs of its "
                            "own team that the server still keeps");
    out.push_back(target->id);
  }
  return out;
}

Status check_submission_order(const std::vector<JobSpec>& specs) {
  std::map<std::string, size_t> pos;
  for (size_t i = 0; i < specs.size(); ++i) pos.emplace(specs[i].name, i);
  // A cycle: follow, from each job, the entries naming jobs of this submission (depth-first, colours).
  std::vector<int> colour(specs.size(), 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<size_t> path;
  std::optional<std::string> cycle;
  auto visit = [&](auto&& self, size_t i) -> void {
    colour[i] = 1;
    path.push_back(i);
    for (const JobDependency& d : specs[i].after) {
      if (cycle) break;
      auto it = pos.find(d.job);
      if (it == pos.end() || d.job == specs[i].name) continue;  // outside the submission, or itself (submit_job says)
      if (colour[it->second] == 1) {
        std::string text;
        auto from = std::find(path.begin(), path.end(), it->second);
        for (auto p = from; p != path.end(); ++p) text += specs[*p].name + " -> ";
        cycle = text + d.job;
      } else if (colour[it->second] == 0) {
        self(self, it->second);
      }
    }
    path.pop_back();
    colour[i] = 2;
  };
  for (size_t i = 0; i < specs.size() && !cycle; ++i)
    if (colour[i] == 0) visit(visit, i);
  if (cycle) return Error::invalid("the jobs of this submission depend on one another in a cycle (" + *cycle + "); remove one of its after entries");
  for (size_t i = 0; i < specs.size(); ++i)
    for (const JobDependency& d : specs[i].after)
      if (auto it = pos.find(d.job); it != pos.end() && it->second > i)
        return Error::invalid("job " + specs[i].name + ", after: job " + d.job +
                              " comes later in this submission; jobs are submitted in order, so list " + d.job + " before " +
                              specs[i].name);
  return ok_status();
}

std::vector<JobId> jobs_depended_on(const ClusterState& s) {
  std::vector<JobId> out;
  for (JobId id : s.waiting_jobs) {
    const Job& j = s.jobs[id.index()];
    if (!j.depends || ever_ran(j)) continue;
    out.insert(out.end(), j.after.begin(), j.after.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace allot
