#pragma once
// Wall-time limits (docs/jobs.md, "Time limits"; docs/teams-and-policy.md, "Time limits"). A job's limit is
// resolved once, at submission: its own `time_limit`, else the default of its team or its priority class. A
// declared limit above the maximum of either is refused. Where both set a default or a maximum, the smaller (the
// stricter) holds; a default above the maximum that holds is lowered to it.
//
// The clock counts the seconds the job has been running, over all its runs: a retry, a node failure or a
// preemption does not start it again, unless the team or the class sets time_limit_resets_on_restart (then
// each run, from its admission, has the whole limit). Once the count reaches the limit the job is stopped and
// ends Failed with reason deadline_exceeded, without using a retry (state.h, exceed_time_limit). The simulator
// and the server both end jobs through past_time_limit here; `now` is an argument, the core has no clock.
#include <optional>
#include <vector>

#include "core/model/state.h"

namespace allot {

struct ResolvedTimeLimit {
  int64_t limit_s = 0;  // 0: none
  bool resets_on_restart = false;
};

// The limit a job of `team` with `spec` gets, or why it is refused (a limit below 1 s, or above a maximum: the
// message names the limit, the maximum, and whose maximum it is).
Result<ResolvedTimeLimit> resolve_time_limit(const ClusterState& s, const Team& team, const JobSpec& spec);

// Seconds the job has run toward its limit by `now` (its earlier runs, and the current one if it runs).
int64_t time_used(const Job& job, Time now);
// Seconds left before the limit (0 once reached); nullopt for a job without a limit.
std::optional<int64_t> time_left(const Job& job, Time now);
// When a running job reaches its limit if it keeps running; nullopt when it has none or is not running.
std::optional<Time> time_limit_at(const Job& job);

// The running jobs that have reached their limit by `now`, in ID order (submission order).
std::vector<JobId> past_time_limit(const ClusterState& s, Time now);
// The earliest time a running job reaches its limit; nullopt when no running job has one.
std::optional<Time> next_time_limit(const ClusterState& s);

}  // namespace allot
