#pragma once
// The cluster's state at one moment as JSON, and back: what a snapshot record (store.h, Snapshot) holds of the
// core, so that start-up and a standby's catch-up replay only the journal after it.
//
// Only what the journal decided is written: configuration (levels, policy, teams), every node ever added (in ID
// order, with health, cordon and whether it was removed) and every job ever submitted (in ID order, with its
// state, reasons, placement, counters and history). The derived tables (name indexes, room, usage, capacity,
// topology tree, job sets, shapes) are rebuilt through the core's own operations, as replay would, and a
// node's suspect mark is not written: it is a live server's view, which replay does not rebuild either.
//
// A snapshot is read as untrusted input, like a journal record: every field is checked (a name resolves, an
// enum is known, a placement fits the room the restored cluster has), and a bad one is an error saying what
// was wrong, never undefined behaviour. Both functions are pure.
#include <functional>
#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/state.h"

namespace allot::store {

// With with_jobs false, "jobs" is an empty array: the caller writes the entries for_each_job_entry gives instead.
nlohmann::json cluster_to_json(const ClusterState& s, bool with_jobs = true);
// The entries of cluster_to_json's "jobs", one at a time, in order (a job kept, or a run of compacted IDs), so that
// a large state can be written without its whole JSON document in memory at once (state_snapshot.cpp).
void for_each_job_entry(const ClusterState& s, const std::function<void(const nlohmann::json&)>& f);
// REQUIRES: `catalog` is the one the state was encoded with (the server's is always the built-in catalog).
Result<ClusterState> cluster_from_json(const nlohmann::json& j, const Catalog& catalog = Catalog::builtin());

}  // namespace allot::store
