#pragma once
// Retention of finished jobs (docs/deployment.md, "Retention"): the leader compacts every finished job whose
// last change is older than `allot server --retain-finished` (a day by default), so that the live state, the
// read view and snapshots hold the jobs still kept rather than every job ever submitted. A compaction is one
// journal record (store/record.h, CompactFinished) carrying its cutoff, so replay and standbys compact exactly
// the same jobs; the compacted jobs' own records stay in the journal.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "core/model/state.h"

namespace allot::server {

// A retention as written on the command line: "never", or a whole number with a unit: s, m, h or d ("90s",
// "30m", "24h", "7d"); a bare number is seconds. Returns seconds (none for "never").
Result<std::optional<int64_t>> parse_retention(std::string_view text);
std::string retention_text(std::optional<int64_t> seconds);  // "24h", "never"

// How often the leader looks for finished jobs to compact: a quarter of the retention, within 0.1 s .. 10 s,
// so a job leaves at most that much after its retention ran out. A check reads the oldest finished job only.
std::chrono::milliseconds retention_check_interval(int64_t retain_s);

// The cutoff to journal now (now - retain_s), when some finished job not yet compacted finished at or before
// it; none when there is nothing to compact. Both functions read ClusterState::finished_jobs, which the first
// call builds (core keep_finished_index: a server without retention never keeps it), hence the non-const state.
std::optional<Time> compaction_cutoff(ClusterState& s, Time now, int64_t retain_s);
// The names of the jobs a compaction at `cutoff` takes (the same test as core compact_finished), read before it
// is applied: their logs go once it is durable, as a deleted job's do.
std::vector<std::string> jobs_compacted_by(ClusterState& s, Time cutoff);

// The answer for a job name the state does not hold (404): when retention has compacted jobs, it says that a
// job so named may have finished and left, from when, and that the journal keeps its records.
Error job_not_found(const ClusterState& s, const std::string& name);
// The same answer for a name that no job has ever had.
Error no_such_job(const ClusterState& s, const std::string& name);

}  // namespace allot::server
