#pragma once
// Shrinking an elastic job to make room (docs/scheduling.md, "Shrink before preempt"): the preemption planner
// takes replicas above an elastic victim's minimum before it takes any whole job. A shrink removes the highest
// ranks of the elastic pod set, a step at a time (one replica, or one slice when the pod set has slices, so
// that every size still divides into slices); the job restarts from its checkpoint on the replicas it keeps,
// with ranks 0..keep-1 where they were. A pod set that holds its topology domain exclusively is never shrunk:
// its domains belong to the job as a whole.
#include "core/model/model.h"

namespace allot {

// Replicas one shrink step removes from `v`'s elastic pod set.
int shrink_step(const Job& v);

// Whether `v`, keeping `keep` replicas of its elastic pod set now, may give up one more step.
bool can_shrink(const Job& v, int keep);

// Whether `v` is elastic and may ever be shrunk (not exclusive), whatever its size.
bool shrinkable(const Job& v);

// `v`'s placement with only the replicas of ranks [from, to) of its elastic pod set (other pod sets hold no
// replica): what a shrink releases.
Placement elastic_ranks(const Job& v, int from, int to);

// `v`'s placement after a shrink to `keep` replicas: its other pod sets whole, the elastic one's lowest ranks.
Placement kept_placement(const Job& v, int keep);

}  // namespace allot
