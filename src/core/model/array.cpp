#include "core/model/array.h"

#include <algorithm>
#include <cctype>

namespace allot {

std::string array_task_name(std::string_view array, int index) { return std::string(array) + "-" + std::to_string(index); }

Status check_array(const JobSpec& spec) {
  if (!spec.array) return ok_status();
  const ArraySpec& a = *spec.array;
  const std::string where = "job " + spec.name + ", array";
  if (a.count < 1 || a.count > kMaxArrayCount)
    return Error::invalid(where + ": count must be 1.." + std::to_string(kMaxArrayCount) + ", got " + std::to_string(a.count));
  if (a.parallel < 1 || a.parallel > a.count)
    return Error::invalid(where + ": parallel must be 1..count (" + std::to_string(a.count) + "), got " + std::to_string(a.parallel));
  for (const PodSetSpec& ps : spec.pod_sets)
    if (ps.min_replicas && *ps.min_replicas < ps.replicas)
      return Error::invalid(where + ": an array's tasks cannot be elastic (pod set " + ps.name +
                            " has min replicas): an elastic job grows into idle capacity while an array spreads its work "
                            "over `parallel` tasks, and the two would fight over the same capacity; give the pod set a "
                            "fixed replica count, or raise parallel instead");
  const std::string& array = a.index ? a.name : spec.name;
  if (array_task_name(array, a.count - 1).size() > 253)
    return Error::invalid(where + ": the name of its last task, " + array + "-" + std::to_string(a.count - 1) +
                          ", is longer than 253 characters; shorten the name");
  if (a.index) {
    if (*a.index < 0 || *a.index >= a.count)
      return Error::invalid(where + ": task index must be 0.." + std::to_string(a.count - 1) + ", got " + std::to_string(*a.index));
    if (a.name.empty() || spec.name != array_task_name(a.name, *a.index))
      return Error::invalid(where + ": a task of array " + a.name + " with index " + std::to_string(*a.index) + " is named " +
                            array_task_name(a.name, *a.index) + ", not " + spec.name);
  } else if (!a.name.empty()) {
    return Error::invalid(where + ": name is set by allot on each task, not on a submission");
  }
  return ok_status();
}

Result<std::vector<JobSpec>> array_tasks(const JobSpec& submission) {
  if (!submission.array || submission.array->index)
    return Error::invalid("job " + submission.name + " is not an array submission");
  if (auto st = check_array(submission); !st) return st.error();
  std::vector<JobSpec> tasks;
  tasks.reserve(static_cast<size_t>(submission.array->count));
  for (int i = 0; i < submission.array->count; ++i) {
    JobSpec t = submission;
    t.name = array_task_name(submission.name, i);
    t.array->name = submission.name;
    t.array->index = i;
    tasks.push_back(std::move(t));
  }
  return tasks;
}

Result<std::vector<JobId>> submit_array(ClusterState& s, const JobSpec& submission, Time now) {
  auto tasks = array_tasks(submission);
  if (!tasks) return tasks.error();
  std::vector<JobId> ids;
  ids.reserve(tasks->size());
  for (const JobSpec& t : *tasks) {
    auto id = submit_job(s, t, now);
    // Task 0 checked the whole array: a later refusal would leave it half-submitted, which must not happen.
    if (!id) {
      if (ids.empty()) return id.error();
      return Error::internal("task " + t.name + " was refused after task 0 was accepted: " + id.error().message);
    }
    ids.push_back(*id);
  }
  return ids;
}

const ArrayTasks* find_array(const ClusterState& s, std::string_view name) {
  auto it = s.array_by_name.find(std::string(name));
  if (it == s.array_by_name.end()) return nullptr;
  const ArrayTasks& a = s.arrays[static_cast<size_t>(it->second)];
  for (JobId id : a.tasks)
    if (!s.jobs[id.index()].deleted) return &a;
  return nullptr;
}

Status check_array_names(const ClusterState& s, const JobSpec& task0) {
  const ArraySpec& a = *task0.array;
  if (s.find_job(a.name)) return Error::exists("job " + a.name + ": a job of that name exists; an array takes the name too");
  if (find_array(s, a.name)) return Error::exists("job " + a.name + ": an array of that name exists");
  for (int i = 1; i < a.count; ++i) {
    const std::string name = array_task_name(a.name, i);
    if (s.find_job(name)) return Error::exists("job " + a.name + ", array: its task " + name + " would take the name of a job that exists");
  }
  return ok_status();
}

int32_t note_array_task(ClusterState& s, const Job& j) {
  auto [it, added] = s.array_by_name.try_emplace(j.spec.array->name, static_cast<int32_t>(s.arrays.size()));
  if (added) s.arrays.push_back(ArrayTasks{j.spec.array->name, {}});
  s.arrays[static_cast<size_t>(it->second)].tasks.push_back(j.id);
  return it->second;
}

ArrayCounts count_array(const ClusterState& s, const ArrayTasks& a, const std::function<bool(const Job&)>& counted) {
  ArrayCounts c;
  for (JobId id : a.tasks) {
    const Job& j = s.jobs[id.index()];
    if (j.deleted || (counted && !counted(j))) continue;
    if (c.total++ == 0) {
      c.count = j.spec.array->count;
      c.parallel = j.spec.array->parallel;
      c.team = j.team;
      c.first = j.id;
    }
    ++c.by_state[static_cast<size_t>(j.state)];
  }
  return c;
}

JobState array_state(const ArrayCounts& c) {
  auto n = [&](JobState st) { return c.by_state[static_cast<size_t>(st)]; };
  if (n(JobState::kRunning)) return JobState::kRunning;
  if (n(JobState::kPending)) return JobState::kPending;
  if (n(JobState::kSuspended)) return JobState::kSuspended;
  if (n(JobState::kFailed)) return JobState::kFailed;
  if (n(JobState::kCancelled)) return JobState::kCancelled;
  return JobState::kSucceeded;
}

std::string array_counts_text(const ArrayCounts& c) {
  // Running first, then waiting, then ended: what a person looks at first.
  static constexpr JobState kOrder[] = {JobState::kRunning,   JobState::kPending, JobState::kSuspended,
                                        JobState::kSucceeded, JobState::kFailed,  JobState::kCancelled};
  std::string out;
  for (JobState st : kOrder) {
    const int64_t n = c.by_state[static_cast<size_t>(st)];
    if (n == 0) continue;
    std::string word = job_state_name(st);
    for (char& ch : word) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + word;
  }
  return out.empty() ? "no tasks" : out;
}

ArrayThrottle ArrayThrottle::count(const ClusterState& s) {
  ArrayThrottle t;
  if (s.arrays.empty()) return t;
  t.running_.assign(s.arrays.size(), 0);
  t.candidates_.resize(s.arrays.size());
  for (JobId id : s.running_jobs) {
    const Job& j = s.jobs[id.index()];
    if (j.array >= 0) ++t.running_[static_cast<size_t>(j.array)];
  }
  return t;
}

int32_t ArrayThrottle::room(const Job& j) const {
  return j.spec.array->parallel - running_[static_cast<size_t>(j.array)];
}

void ArrayThrottle::offer(const Job& j) {
  if (room(j) <= 0) {
    out_.push_back(j.id);
    return;
  }
  auto& c = candidates_[static_cast<size_t>(j.array)];
  if (c.empty()) touched_.push_back(j.array);
  c.push_back(j.id);
}

void ArrayThrottle::settle(const ClusterState& s, std::vector<JobId>& enter, std::vector<JobId>& throttled) {
  throttled.insert(throttled.end(), out_.begin(), out_.end());
  out_.clear();
  for (int32_t slot : touched_) {
    auto& c = candidates_[static_cast<size_t>(slot)];
    const size_t room = static_cast<size_t>(this->room(s.jobs[c.front().index()]));
    if (c.size() > room) {
      auto earlier = [&](JobId a, JobId b) { return s.jobs[a.index()].arrival < s.jobs[b.index()].arrival; };
      std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(room), c.end(), earlier);
      throttled.insert(throttled.end(), c.begin() + static_cast<std::ptrdiff_t>(room), c.end());
      c.resize(room);
    }
    enter.insert(enter.end(), c.begin(), c.end());
    c.clear();
  }
  touched_.clear();
}

Explanation ArrayThrottle::why(const Job& j) {
  const std::string p = std::to_string(j.spec.array->parallel);
  return explain(ReasonCode::kArrayThrottle, "waiting: array " + j.spec.array->name + " admits at most " + p +
                                                 " of its tasks at once (parallel), and " + p +
                                                 " of them are running or ahead of this one");
}

}  // namespace allot
