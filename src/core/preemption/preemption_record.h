#pragma once
// A preemption as a record (docs/states.md, "Preemption records"): one per preemption decision group, that is
// one preemptor and all the victims taken so that it runs, with the rule that took each victim and what every
// affected team held before and after. The scheduler pass builds it where it applies the group, from the state
// before the first victim is preempted and after the preemptor is admitted, so the figures are what happened,
// not what the planner expected.
#include <memory>
#include <string>
#include <vector>

#include "core/quota/quota.h"

namespace allot {

// One team's holding of one instance type. borrowed = max(0, usage - nominal) per resource (quota.h).
struct TypeFigures {
  TypeId type;
  Resources nominal;
  Resources usage_before, usage_after;
  Resources borrowed_before, borrowed_after;
  friend bool operator==(const TypeFigures&, const TypeFigures&) = default;
};

// One affected team: its figures for every instance type the group changed, and its fair share before and
// after, as the fair-share order computes it (quota.h, fair_share_value: borrowed dominant share / weight,
// infinite for weight 0).
struct TeamFigures {
  TeamId team;
  Share share_before, share_after;
  std::vector<TypeFigures> types;
  friend bool operator==(const TeamFigures&, const TeamFigures&) = default;
};

// A victim: preempted whole, or an elastic job shrunk (its elastic pod set from `from` to `to` replicas; both 0
// for a job preempted whole).
struct PreemptedJob {
  JobId job;
  TeamId team;
  PreemptionRule rule = PreemptionRule::kReclaim;
  int from = 0, to = 0;
  bool shrunk() const { return to > 0; }
  friend bool operator==(const PreemptedJob&, const PreemptedJob&) = default;
};

// A cohort group whose share fair-sharing preemption compared (docs/scheduling.md, "Cohort trees"): its
// subtree's share (cohort_share.h) before and after.
struct GroupFigures {
  int group = -1;  // index into CohortTree::groups
  Share share_before, share_after;
  friend bool operator==(const GroupFigures&, const GroupFigures&) = default;
};

struct PreemptionRecord {
  JobId preemptor;
  TeamId preemptor_team;
  std::vector<PreemptedJob> victims;  // in the order they were preempted or shrunk
  // The preemptor's team first, then each victim's team in victim order, each once.
  std::vector<TeamFigures> teams;
  // The groups the share rules compared for the fair-share victims, when the preemptor's team and a victim's met
  // above their groups (compared_sides, cohort_nearness.h): the preemptor's side first, then each victim's, each
  // once. Empty when every fair-share victim's team was compared as a team (always, in a cluster without groups).
  std::vector<GroupFigures> groups;
  friend bool operator==(const PreemptionRecord&, const PreemptionRecord&) = default;
};

// Builds the record of a group once it is applied: `usage_before` is the state's usage table as it was before
// the first victim was preempted, `s` the state after the preemptor's admission. `types` are the instance types
// the victims and the preemptor hold (the ones the group changed).
PreemptionRecord preemption_record(const ClusterState& s, const UsageTable& usage_before, JobId preemptor,
                                   std::vector<PreemptedJob> victims, const std::vector<TypeId>& types);

// The same record by names, as it leaves the core: the journal keeps it (store/record.h, Preempt), and the API,
// the CLI and `allot sim run --json` show it (view/state_json.h, preemption_json).
struct PreemptionGroup {
  struct TypeFigures {
    std::string instance_type;
    Resources nominal, usage_before, usage_after, borrowed_before, borrowed_after;
    friend bool operator==(const TypeFigures&, const TypeFigures&) = default;
  };
  struct TeamFigures {
    std::string team;
    Share share_before, share_after;  // exact fractions; den 0 is an infinite share (weight 0)
    std::vector<TypeFigures> types;
    friend bool operator==(const TeamFigures&, const TeamFigures&) = default;
  };
  struct Victim {
    std::string job;
    std::string team;
    PreemptionRule rule = PreemptionRule::kReclaim;
    int from = 0, to = 0;  // a shrink (PreemptedJob); 0, 0: preempted whole
    friend bool operator==(const Victim&, const Victim&) = default;
  };
  struct GroupFigures {
    std::string group;
    Share share_before, share_after;  // as TeamFigures'
    friend bool operator==(const GroupFigures&, const GroupFigures&) = default;
  };
  std::string preemptor;
  std::string preemptor_team;
  std::vector<Victim> victims;
  std::vector<TeamFigures> teams;
  std::vector<GroupFigures> groups;  // PreemptionRecord::groups by name; empty in a cluster without groups
  friend bool operator==(const PreemptionGroup&, const PreemptionGroup&) = default;
};
PreemptionGroup named(const ClusterState& s, const PreemptionRecord& r);

// Adds the types a placement holds to `types`, each once, in first-seen order.
void add_types(const Placement& p, std::vector<TypeId>& types);

}  // namespace allot
