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

#include "core/admission/admission.h"
#include "core/placement/room_capacity.h"

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
  RefText why;  // kFairShare: the rule and both teams' shares before and after, for the victim's reason
  // An elastic victim shrunk rather than preempted: the replicas of its elastic pod set it keeps (at least its
  // minimum). -1: preempted whole.
  int keep = -1;
  bool shrunk() const { return keep >= 0; }
};

struct PreemptionPlan {
  AdmissionAttempt admission;  // where the job runs once the victims are gone
  std::vector<Victim> victims;
};

// One running job's hold on one instance type, with what choosing and ordering candidates reads of it: a plan
// on a large cluster looks at thousands of running jobs, and reading each Job (a cache miss or more each) was
// most of its time.
struct RunningOnType {
  JobId job;
  int priority = 0;
  Time started_at = 0;
  uint64_t arrival = 0;
  int64_t accelerators = 0;  // bound on the type, over all its pod sets there
  bool shrinkable = false;   // shrink.h
};
struct TeamRunningOnType {
  TypeId type;
  std::vector<RunningOnType> jobs;  // the team's running jobs that hold the type
};

// What a scheduler pass knows of the whole cluster, so that planning for a job with no possible victim stops
// before it looks at any running job, and one with candidates reads them from compact lists.
struct PreemptionHints {
  std::vector<char> above_nominal;         // per team: holds more than its nominal quota of some type
  std::vector<uint32_t> teams_above;       // the teams above_nominal marks, in ID order: a plan visits only these
  std::vector<int> min_running_priority;   // per team: lowest priority among its running jobs (INT_MAX: none)
  std::vector<std::vector<JobId>> running_by_team;
  std::vector<std::vector<TeamRunningOnType>> running_by_team_type;  // per team: per type its running jobs hold
  FreeAccelerators free;                   // of the state's room
};
PreemptionHints preemption_hints(const ClusterState& s);

// The tables a trial (below) works in. A caller that makes many plans (a scheduler pass, the benchmark) keeps one
// and hands it to each (PreemptionQuery::tables), so that a trial copies the state's room into memory it has
// touched before: at 100k GPUs a fresh room, usage and capacity cache per plan were page faults for a fifth of a
// plan's time. What a trial leaves in them means nothing to the next, which starts from the state again.
struct TrialTables {
  RoomTable room;
  UsageTable usage;
  RoomCapacity capacity;
  PlacementScratch scratch;
};

struct PreemptionQuery {
  bool allow_reclaim = true;
  Time now = 0;
  const PreemptionHints* hints = nullptr;  // optional
  // Whether the job fits within its team's nominal quota with the state's usage (within_nominal_quota), when the
  // caller knows it already.
  std::optional<bool> within_nominal;
  // Optional: tables kept between plans (one plan at a time uses them). Without, the plan makes its own.
  TrialTables* tables = nullptr;
};

// Without a plan, `why_not` says why (code kNoPreemption).
std::optional<PreemptionPlan> plan_preemption(const ClusterState& s, const Job& job, const PreemptionQuery& q,
                                              Explanation& why_not);

// Lowest priority first, then most recently started, then latest arrival: the cheapest to give up first.
bool victim_order(const Job& a, const Job& b);

// A plan in the making for one instance type: room and usage with the victims chosen so far released.
//
// The trials place the job again and again against a room that differs from the state's by the victims'
// nodes only, so the trial keeps placement's capacity cache (room_capacity.h) for its own room and tells it of
// every node it changes: a trial then costs a few walks up the tree per changed node instead of a pass over
// every node of the cluster. For the same reason reset_to() gives back or releases only the victims that differ
// from what the room has released so far, instead of copying the state's room again (the room that results is
// the same to the bit: charging and releasing a placement add and take the same integers and accelerator bits).
// The trial works in `tables` (its room, usage and capacity cache), which it starts from the state's and which
// must outlive it and serve no other trial meanwhile; it is neither copied nor moved.
class Trial {
 public:
  Trial(const ClusterState& s, const Job& job, TypeId type, TrialTables& tables);
  Trial(const Trial&) = delete;
  Trial& operator=(const Trial&) = delete;
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

  // Room and usage with the victims released (what the last take, shrink or reset_to left).
  const RoomTable& room() const { return room_; }
  const UsageTable& usage() const { return usage_; }
  // For a question asked of the usage with one team's amounts shifted and shifted back before it returns
  // (fair_share_preemption.cpp's key_with and key_without): what the trial released must be left as it was.
  UsageTable& usage() { return usage_; }

 private:
  // Releases (or, with `give_back`, charges again) `part` of `v` and tells the capacity cache which nodes changed.
  void apply(const Job& v, const Placement& part, bool give_back);

  const ClusterState& s_;
  const Job& job_;
  std::vector<TypeId> only_;
  RoomTable& room_;
  UsageTable& usage_;
  struct Released {
    JobId job;
    int keep = -1;  // as Victim::keep
  };
  std::vector<Released> applied_;  // what room_ and usage_ have released
  RoomCapacity& capacity_;       // placement's capacity for room_, told of every change
  PlacementScratch& scratch_;    // the trials place the job again and again

 public:
  std::vector<Victim> chosen;
  AdmissionAttempt fit;
};

// Room and usage with the given victims released (whole, or the replicas a shrink takes): what a trial sees.
void release_victims(const ClusterState& s, const std::vector<Victim>& victims, RoomTable& room, UsageTable& usage);

}  // namespace allot
