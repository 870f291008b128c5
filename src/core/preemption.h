#pragma once
// Preemption planning (docs/scheduling.md, "Preemption"). For a waiting job that does not fit:
//  - reclaim: if it fits within its team's nominal quota, jobs of other teams that are above their nominal
//    quota are candidates, whatever their priority; a team stops giving up jobs once it is back within its
//    nominal quota;
//  - within the team (preempt_team_tasks: LowerPriority): the team's strictly lower-priority jobs.
// Candidates are taken lowest priority first, most recently started first (then latest arrival), reclaim
// candidates before the team's own, until the job fits (quota and placement); then every victim whose removal
// is not needed is given back, last taken first. The result is minimal and deterministic. Jobs younger than
// the policy's minimum runtime are never candidates. With policy.fair_share_preemption, a borrower may also take
// jobs of teams above their fair share, and reclaim takes teams in share order (fair_share_preemption.h).
// A plan is made in four parts: candidates, a bound that stops hopeless plans early, a greedy choice, and
// minimisation.
// Elastic candidates above their minimum are shrunk before any whole job is taken (shrink.h): the greedy choice
// first takes their replicas (highest rank first, in the same candidate order and under the same rules), then
// whole jobs; minimisation gives back whole victims first, then replicas, so each victim loses only what the
// job needs.
#include <optional>
#include <string>
#include <vector>

#include "core/admission.h"

namespace allot {

// The two share rules of fair-sharing preemption (Kueue's names), tried in this order: the victim's team, after
// losing it, is not below the preemptor's team after admission; or the preemptor's team after admission is below
// the victim's team now.
enum class ShareRule : uint8_t { kLessThanOrEqualToFinalShare, kLessThanInitialShare };
const char* share_rule_name(ShareRule r);

struct Victim {
  JobId job;
  PreemptionRule rule = PreemptionRule::kReclaim;  // which rule made it a candidate
  ShareRule share_rule = ShareRule::kLessThanOrEqualToFinalShare;  // kFairShare: the share rule that let it go
  std::string why;  // kFairShare: the rule and both teams' shares before and after, for the victim's reason
  // An elastic victim shrunk rather than preempted: the replicas of its elastic pod set it keeps (at least its
  // minimum). -1: preempted whole.
  int keep = -1;
  bool shrunk() const { return keep >= 0; }
};

struct PreemptionPlan {
  AdmissionAttempt admission;  // where the job runs once the victims are gone
  std::vector<Victim> victims;
};

// What a scheduler pass knows of the whole cluster, so that planning for a job with no possible victim stops
// before it looks at any running job.
struct PreemptionHints {
  std::vector<char> above_nominal;         // per team: holds more than its nominal quota of some type
  std::vector<int> min_running_priority;   // per team: lowest priority among its running jobs (INT_MAX: none)
  std::vector<std::vector<JobId>> running_by_team;
  FreeAccelerators free;                   // of the state's room
};
PreemptionHints preemption_hints(const ClusterState& s);

struct PreemptionQuery {
  bool allow_reclaim = true;
  Time now = 0;
  const PreemptionHints* hints = nullptr;  // optional
};

// Without a plan, `why_not` says why (code kNoPreemption).
std::optional<PreemptionPlan> plan_preemption(const ClusterState& s, const Job& job, const PreemptionQuery& q,
                                              Explanation& why_not);

// Lowest priority first, then most recently started, then latest arrival: the cheapest to give up first.
bool victim_order(const Job& a, const Job& b);

// A plan in the making for one instance type: room and usage with the victims chosen so far released.
class Trial {
 public:
  Trial(const ClusterState& s, const Job& job, TypeId type);
  // Releases `v` whole and records it (a victim shrunk so far gives up the rest); whether the job fits now.
  bool take(const Job& v, Victim victim);
  // Releases the next replicas of elastic `v` (one step, shrink.h) and records it, as a new victim that keeps the
  // rest or by lowering what a victim shrunk so far keeps; whether the job fits now. `victim.keep` is ignored.
  bool shrink(const Job& v, Victim victim);
  // Whether elastic `v` may give up another step: it is not taken whole, and keeps at least its minimum after.
  bool can_shrink_further(const Job& v);
  // The entry of `job` among the chosen victims, or null.
  Victim* chosen_entry(JobId job);
  // Whether the job fits with the victims released (reclaimed capacity only for jobs within nominal quota);
  // the answer is in `fit`.
  bool fits_now();
  // Room and usage with exactly `released` given up (chosen is left to the caller).
  void reset_to(const std::vector<Victim>& released);

 private:
  const ClusterState& s_;
  const Job& job_;
  std::vector<TypeId> only_;
  PlacementScratch scratch_;  // the trials place the job again and again

 public:
  RoomTable room;
  UsageTable usage;
  std::vector<Victim> chosen;
  AdmissionAttempt fit;
};

// Room and usage with the given victims released (whole, or the replicas a shrink takes): what a trial sees.
void release_victims(const ClusterState& s, const std::vector<Victim>& victims, RoomTable& room, UsageTable& usage);

}  // namespace allot
