#pragma once
// Records in and out of the core: applying a record through the core operation it names (the only way the
// journal changes a ClusterState, live and on replay), and turning a scheduler Decision into its record.
#include "core/preemption/preemption_record.h"
#include "core/model/state.h"
#include "store/record.h"

namespace allot::store {

// Applies one record to the state through the core operation of its kind, at the record's time. A record
// the core refuses leaves the state unchanged and returns the core's error.
Status apply_record(ClusterState& s, const Record& r);

// The record of a decision the scheduler has made (and applied) on `s`: names instead of IDs.
Op decision_record(const ClusterState& s, const Decision& d);

// The core placement of an admit record, resolving names against the state; fails when a node or instance
// type it names is unknown. `leaving`: a running job whose own room counts as free (a resize restarts it).
Result<Placement> placement_from_record(const ClusterState& s, const std::vector<PodSetRecord>& placement,
                                        const Job* leaving = nullptr);

}  // namespace allot::store
