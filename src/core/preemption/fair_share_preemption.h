#pragma once
// Fair-sharing preemption (policy.fair_share_preemption; docs/scheduling.md, "Fair-sharing preemption"), after
// Kueue's fair sharing strategies. Shares are (borrowed dominant share / weight) (quota.h), weight 0 counting as
// an infinite share; wherever the rules compare two teams of weight 0 they compare what the two borrow (their
// unweighted borrowed dominant share), as Kueue does. With the switch on:
//  - a job that must borrow may take jobs of other teams above their nominal quota. Teams are visited highest
//    share first (recomputed after every victim), each team's jobs in victim order. A candidate of team T is
//    taken when the preemptor team's share after admission is at most T's share after losing it
//    (LessThanOrEqualToFinalShare); only when no candidate passes that, when it is below T's share before
//    (LessThanInitialShare). T gives up jobs only while it stays at or above its nominal quota after losing
//    them, the last victim included (stricter than Kueue, whose exception for a last victim lets reclaim and
//    fair sharing undo each other). When no other team's candidate passes, the team's own lower-priority jobs
//    are taken, which lowers the preemptor's share and may let another team's candidate pass.
//  - reclaim by a job within its nominal quota keeps its rule, but takes teams in the same share order (in a
//    cohort tree, the teams nearest the reclaimer's first: cohort_nearness.h).
//  - in a cohort tree, the share rules compare the nodes under the lowest common group of the two teams (a group's
//    share: cohort_share.h), as Kueue's hierarchical fair sharing does; teams of one group compare as teams, and a
//    group is taken from only while it borrows from above. Phi below stays over teams.
// The caller minimises the set afterwards (preemption.h).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/preemption/preemption.h"

namespace allot {

using QuotaRequest = std::vector<std::pair<TypeId, Resources>>;

// Chooses victims into `trial` until the job fits; false if the candidates run out first. `others` are the
// other teams' candidates in victim order (reclaim candidates when `within`, else jobs of teams above nominal),
// `own` the team's lower-priority jobs in victim order. When it fails and the lowest-priority-first rule kept
// out a candidate that the share rules would let go, `stopped_by` says so (which lower-priority job of its team
// may not be taken, and why) for the waiting job's reason; otherwise it is left as it is.
bool greedy_fair_share(const ClusterState& s, const Job& job, const QuotaRequest& request,
                       const std::vector<const Job*>& others, const std::vector<const Job*>& own, bool within, Trial& trial,
                       RefText& stopped_by);

// The rule that makes fair sharing reach a fixed point (docs/scheduling.md, "Fair-sharing preemption"). Order
// teams by (share, dominant borrowed share) (the second part orders teams of weight 0, whose shares are all
// infinite) and call Phi the teams' keys sorted highest first, compared lexicographically. A plan of a job that
// borrows after admission is kept only if it lowers Phi when it takes a job by fair share, and does not raise
// it otherwise; in that check the preemptor's team is also charged what the victims free beyond the job's
// request.
// Why a pass ends. A fair-share plan changes the keys of the preemptor's team (up, to below the highest victim
// team's key before: both share rules say so) and of the victims' teams (down), so Phi falls. Reclaim leaves
// the reclaiming team's borrowing as it is and lowers its victims', a job within its nominal quota borrows
// nothing more, and the check above keeps every other borrower's plan from raising Phi. So between two
// fair-share plans of a cycle something must raise Phi again: only an admission without preemption into free
// capacity can. The cycles the randomized test found were of that kind with the capacity freed by the plan
// itself: a small job of team A takes a large job of B, A's next job takes the rest, and B's job takes both
// back (seed 2081); and a borrower taking its team's lower-priority job's place and growing the team (seed 29:
// Kueue allows both). The leftover charge and the no-growth rule close them. A third kind, found at seeds 28731
// and 55178: a team that cannot give up its lowest-priority job (it would fall below nominal) loses a
// higher-priority one instead, which takes the lower one's place by priority preemption, so the team's share
// does not fall and another team's borrower fills what was freed; fair share then takes it back. Victims are
// therefore taken lowest priority first, never past a job that may not be taken (shields_lower_priority). With
// that and Pass::plan_again, FairSharePropertyTest finds no cycle in seeds 1..160,000; the pass bound stays as
// the guard and reports the jobs (scheduler.h).
// Null when the plan is kept, else why not.
std::optional<std::string> uneven_plan(const ClusterState& s, const Job& job, const QuotaRequest& request, const Trial& trial);

// Gives each fair-share victim of the final (minimised) plan its explanation: the rule that let it be taken and
// the shares it compared before the plan and after it: both teams', or in a cohort tree where the two teams meet
// above a group of theirs, the two nodes' under their lowest common group (named, groups and a team's group said).
void explain_fair_share_victims(const ClusterState& s, const Job& job, const QuotaRequest& request, Trial& trial);

}  // namespace allot
