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
#include <string>
#include <unordered_map>
#include <nlohmann/json.hpp>

#include "core/model/result.h"
#include "core/model/state.h"

namespace allot::store {

// How a job entry is written. kEveryField: every field (snapshot format 1, and cluster_to_json). kCompact (format
// 2): the fields at their usual values are left out (a finished job that was never held, preempted, resized or
// restarted; an arrival one after the previous entry's; a spec's zero retries, empty environment), which halves a
// finished job's entry. Both are read by the same reader, which takes a missing field as that usual value.
enum class JobEncoding { kEveryField, kCompact };

// With with_jobs false, "jobs" is an empty array: the caller writes the entries for_each_job_entry gives instead.
nlohmann::json cluster_to_json(const ClusterState& s, bool with_jobs = true);
// The entries of cluster_to_json's "jobs", one at a time, in order (a job kept, or a run of compacted IDs), so that
// a large state can be written without its whole JSON document in memory at once (state_snapshot.cpp).
void for_each_job_entry(const ClusterState& s, const std::function<void(const nlohmann::json&)>& f,
                        JobEncoding encoding = JobEncoding::kEveryField);
// REQUIRES: `catalog` is the one the state was encoded with (the server's is always the built-in catalog).
Result<ClusterState> cluster_from_json(const nlohmann::json& j, const Catalog& catalog = Catalog::builtin());

// The same restore a piece at a time, for a snapshot whose job entries are read one by one rather than as one
// document (server/writer/state_snapshot.cpp, format 2): begin with the document without its jobs (configuration,
// teams, plans, nodes), add each entry for_each_job_entry gave, in order, then finish with the same document
// (the tables after the jobs: next_arrival, removed teams, attempts, compaction, room_changed_at). Errors say what
// was wrong, as cluster_from_json's do.
class ClusterRestore {
 public:
  [[nodiscard]] static Result<ClusterRestore> begin(const nlohmann::json& doc, const Catalog& catalog = Catalog::builtin());
  [[nodiscard]] Status add_job_entry(const nlohmann::json& entry);
  [[nodiscard]] Result<ClusterState> finish(const nlohmann::json& doc) &&;
  // The jobs added so far (compacted ones too): IDs beyond it name no job.
  size_t jobs() const { return s_.jobs.size(); }

 private:
  explicit ClusterRestore(const Catalog& catalog) : catalog_(&catalog), s_(catalog) {}
  Status begin_throwing(const nlohmann::json& doc);
  Status add_job_throwing(const nlohmann::json& entry);
  Status finish_throwing(const nlohmann::json& doc);

  const Catalog* catalog_;
  ClusterState s_;
  std::unordered_map<std::string, SharedText> texts_;
  uint64_t next_arrival_ = 0;      // one past the largest arrival restored
  uint64_t expected_arrival_ = 0;  // one past the previous entry's: a compact entry's arrival when it has none
};

}  // namespace allot::store
