#pragma once
// Fair-sharing preemption (policy.fair_share_preemption; docs/scheduling.md, "Fair-sharing preemption"), after
// Kueue's fair sharing strategies. Shares are (borrowed dominant share / weight) (quota.h), weight 0 counting as
// an infinite share. With the switch on:
//  - a job that must borrow may take jobs of other teams above their nominal quota. Teams are visited highest
//    share first (recomputed after every victim), each team's jobs in victim order. A candidate of team T is
//    taken when the preemptor team's share after admission is at most T's share after losing it
//    (LessThanOrEqualToFinalShare); only when no candidate passes that, when it is below T's share before
//    (LessThanInitialShare). T gives up jobs only while it stays at or above its nominal quota after losing
//    them, the last victim included (stricter than Kueue, whose exception for a last victim lets reclaim and
//    fair sharing undo each other). When no other team's candidate passes, the team's own lower-priority jobs
//    are taken, which lowers the preemptor's share and may let another team's candidate pass.
//  - reclaim by a job within its nominal quota keeps its rule, but takes teams in the same share order.
// The caller minimises the set afterwards (preemption.h).
#include <utility>
#include <vector>

#include "core/preemption.h"

namespace allot {

using QuotaRequest = std::vector<std::pair<TypeId, Resources>>;

// Chooses victims into `trial` until the job fits; false if the candidates run out first. `others` are the
// other teams' candidates in victim order (reclaim candidates when `within`, else jobs of teams above nominal),
// `own` the team's lower-priority jobs in victim order.
bool greedy_fair_share(const ClusterState& s, const Job& job, const QuotaRequest& request,
                       const std::vector<const Job*>& others, const std::vector<const Job*>& own, bool within, Trial& trial);

// Gives each fair-share victim of the final (minimised) plan its explanation: the rule that let it be taken and
// both teams' shares before the plan and after it.
void explain_fair_share_victims(const ClusterState& s, const Job& job, const QuotaRequest& request, Trial& trial);

}  // namespace allot
