#pragma once
// Job arrays (docs/jobs.md, "Arrays"; Slurm's `--array=0-99%10` with ArrayTaskThrottle, Kubernetes Jobs with
// completionMode: Indexed and parallelism below completions). This file is the one home of the rules; submission
// (submit.cpp), the scheduler pass (pass.cpp), the server and the simulator all read it. No I/O, no clock.
//
// Representation. An array submission `NAME` with `array: {count: N, parallel: P}` is never a job itself: it is
// made into N ordinary jobs, its tasks, named `NAME-0` .. `NAME-(N-1)` (a name must be a DNS subdomain, so not
// Slurm's `NAME_i` nor `NAME[i]`), each carrying the array's name and its own index in JobSpec::array. So every
// task has its own attempts, restarts and retries (max_retries per task), log, state, events and retention, through
// every path an ordinary job takes (agents, the start gate, time limits, snapshots, replay), and a task that fails
// touches no other. What the array adds is only:
//   - one submission: the server applies one store::Submit per task inside ONE command, so the journal holds one
//     record per task written in one batch (one transaction): after a crash either every task is there or none;
//   - a name: ClusterState::arrays keeps, per array name, the IDs of its tasks (in index order), which listings,
//     `describe NAME`, `cancel NAME` and `delete NAME` read; it is rebuilt from the tasks' specs by every path that
//     adds a job (submission, replay, snapshot restore), so it needs no record of its own;
//   - the throttle: at most P tasks of the array are admitted (Running, starting included) at once. The scheduler
//     pass counts the running tasks of each array from the running jobs (not from the tasks), lets at most
//     P - running waiting tasks of it into its queue, lowest index first, and passes over the rest with reason
//     `array_throttle` (as it passes over a job waiting for a dependency): they hold no quota, get no reservation,
//     are never a reason to preempt and block no other job (strict FIFO included). A pass thus costs O(1) per
//     waiting task whatever P is.
//
// All or nothing: submitting task 0 checks the whole array (every task name is free, the user's pending_jobs limit
// leaves room for all N) besides everything an ordinary job is checked for; the other tasks differ from it only in
// their name and index, so once task 0 is in, they cannot be refused (submit_array, and the server's submission).
// Task 0 is also what replay meets first, so the same check holds again there.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/state.h"

namespace allot {

// "NAME-i": the job name of task `index` of array `array`.
std::string array_task_name(std::string_view array, int index);

// The rules of an array on a spec, with the job's name in the message: count 1..kMaxArrayCount, parallel
// 1..count, no elastic pod set (an elastic job's size follows idle capacity, while an array's parallelism is the
// knob that spreads work: the two would fight over the same capacity, and a task's index would no longer say
// which share of the work it holds), every task's name within 253 characters. A task also names its array and an
// index below count.
Status check_array(const JobSpec& spec);

// The tasks of an array submission (spec.array set, without an index): count specs named NAME-i, each with
// array.name and array.index set, in index order. An error (check_array's) when the submission is not valid.
Result<std::vector<JobSpec>> array_tasks(const JobSpec& submission);

// Every task of an array submission submitted, all or nothing (see above): the simulator's way in. The server
// applies the same tasks as one batch of store::Submit operations.
Result<std::vector<JobId>> submit_array(ClusterState& s, const JobSpec& submission, Time now);

// At task 0's submission (submit.cpp): every other task's name is free, and no live array or job already has
// the array's own name. The message names the name taken.
Status check_array_names(const ClusterState& s, const JobSpec& task0);
// The array a job's spec names joins (or creates) its entry in ClusterState::arrays; the job's slot.
int32_t note_array_task(ClusterState& s, const Job& j);

// The array of that name with at least one task not deleted; null when none.
const ArrayTasks* find_array(const ClusterState& s, std::string_view name);

// How many of an array's live tasks are in each state (index: JobState), and in all.
struct ArrayCounts {
  std::array<int64_t, 6> by_state{};
  int64_t total = 0;
  int count = 0, parallel = 0;  // the array's spec, from its first live task counted
  TeamId team;
  JobId first;  // that task
};
// `counted`: only the tasks it holds for (a listing's filters); empty: every live task.
ArrayCounts count_array(const ClusterState& s, const ArrayTasks& a, const std::function<bool(const Job&)>& counted = {});
// The array's state as one word: Running while any task runs, else Pending while any waits (Suspended: only
// Suspended ones wait), else Failed if any failed, else Cancelled if any was, else Succeeded.
JobState array_state(const ArrayCounts& c);
// "3 running, 90 pending, 7 succeeded": the states with tasks, in JobState order; "no tasks" when none.
std::string array_counts_text(const ArrayCounts& c);

// The throttle, as one scheduler pass keeps it: the running tasks of each array at the pass's start, and which
// waiting tasks may enter its queue. O(1) per task offered, plus a selection per array with room (settle).
class ArrayThrottle {
 public:
  // Counts the running jobs of every array (nothing to count when no array exists).
  static ArrayThrottle count(const ClusterState& s);
  bool any() const { return !running_.empty(); }
  // A waiting task the pass would queue: kept out at once when its array has no room, else a candidate.
  void offer(const Job& j);
  // Of the candidates, the `parallel - running` of each array that came first (earliest arrival: lowest index,
  // a retried or preempted task before those never run) go to `enter`; the rest, and the tasks kept out by
  // offer(), to `throttled`. Resets the candidates.
  void settle(const ClusterState& s, std::vector<JobId>& enter, std::vector<JobId>& throttled);
  // The reason of a task kept out, naming its array and its parallelism (one text per array and pass will do).
  static Explanation why(const Job& j);

 private:
  int32_t room(const Job& j) const;
  std::vector<int32_t> running_;              // by array slot, at the pass's start
  std::vector<std::vector<JobId>> candidates_;  // by array slot
  std::vector<int32_t> touched_;               // slots with candidates
  std::vector<JobId> out_;                     // kept out by offer()
};

}  // namespace allot
