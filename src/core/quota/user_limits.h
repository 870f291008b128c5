#pragma once
// Per-user limits inside a team (docs/teams-and-policy.md, "Per-user limits"; Slurm association limits
// GrpTRES=gres/gpu:N, MaxJobs, MaxSubmitJobs; Kueue has none). This file is the one home of the rule; the scheduler
// pass (pass.cpp), submission (submit.cpp), the server and the simulator all read it. No I/O, no clock.
//
// A team may give any user (JobSpec::user, the name a token carries) limits on what that user's jobs in the team
// hold at once:
//   running_jobs   the user's running jobs, counted one each           gate: running + 1 <= limit
//   accelerators   per instance type T, accelerators those jobs hold   gate: held_T + need_T <= limit_T
//   pending_jobs   the user's waiting jobs (Pending or Suspended)      at submission: waiting + 1 <= limit
// A job's need_T is what its pod sets ask of T at their largest size (admission.h, job_request): an elastic job
// waits until its largest size fits within the limit. For a job whose pod sets name no type, each type it may use
// is judged apart: the job may run on the types where its user's limit leaves room, and waits when there is none.
//
// The running and accelerator gates are judged by the scheduler pass, on the jobs running as it goes: a job over
// them is passed over (as a job waiting for a dependency is, core/model/dependency.h) with reason `user_limit` naming the
// user and the limit. It holds no quota and no reservation, is never a reason to preempt, and blocks no other
// user's job (strict FIFO included). A job of a user with an accelerator limit is not grown past its size
// (elastic growth), and one whose limit leaves room on only some of its types preempts nothing: preemption never
// evicts a job to make room over a user's limit. Jobs without a user, users without an entry, and teams without
// user_limits are scheduled exactly as before.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model/state.h"

namespace allot {

// A user name: 1..64 characters of letters, digits, '.', '_', '-' and '@' (a login, or an e-mail address).
inline constexpr size_t kMaxUserName = 64;
// An error naming the user (escaped), the rule and where (`where`: "user" or "user_limits[2].user"), or ok.
Status check_user_name(std::string_view name, std::string_view where);

// The limits of a team spec, checked: each user once and a valid name, counts 0..1,000,000, known instance types.
// The error names the team, the entry and what is allowed.
Result<std::vector<UserLimits>> resolve_user_limits(const Catalog& catalog, const TeamSpec& team);
// The team's limits for `user`; null when it has none (or the user is empty).
const UserLimits* limits_of(const Team& team, std::string_view user);

// What each user's running jobs hold, per team: counted from the running jobs of users that have limits.
class UserTally {
 public:
  struct Held {
    int64_t running = 0;
    std::vector<int64_t> accelerators;  // by TypeId index
  };
  // Counts every running job whose user has limits in its team.
  static UserTally count(const ClusterState& s);
  // A job of a limited user starts running (with its placement) or stops.
  void add(const ClusterState& s, const Job& j);
  void remove(const ClusterState& s, const Job& j);
  // What `user` holds in `team` (zero when nothing).
  const Held& of(TeamId team, std::string_view user) const;
  // The key of a (team, user) pair, for callers that index jobs by it.
  static std::string key(TeamId team, std::string_view user);

 private:
  std::unordered_map<std::string, Held> held_;
  Held none_;
};

// The gate on one waiting job: open, open on some of the types it may use only, or closed with the reason.
struct UserGate {
  bool closed = false;
  // Open on these types only (the others would take the user over an accelerator limit); empty: on every type.
  std::vector<TypeId> only_types;
  Explanation why;  // closed: code user_limit, naming the user, the limit and what the user holds
};
UserGate judge_user_limits(const ClusterState& s, const UserTally& tally, const Job& job);

// At submission (submit.cpp): refused when the job's user already has pending_jobs waiting jobs in its team (or,
// for `jobs` at once, the tasks of an array, too many to add all). The message names the user, the team, the limit
// and the count.
Status check_pending_limit(const ClusterState& s, const Team& team, const JobSpec& spec, int64_t jobs = 1);

}  // namespace allot
