#pragma once
// The writer's clock for wall-time limits (core/lifecycle/time_limit.h): every running job that has reached its limit is
// ended through a time_limit_exceeded record (Failed, reason deadline_exceeded). The job then leaves its agents'
// lists, and each agent stops its replicas as it stops a cancelled job's (SIGTERM, the grace period, SIGKILL).
// The deadline is computed from journaled data only (the job's admissions and stops, with their times), so a
// server that restarts after a limit passed, however it stopped, ends the job at its first tick. Only the leader
// calls it.
#include "server/writer/writer.h"

namespace allot::server {

// Returns whether any job was ended.
bool end_jobs_past_time_limit(Txn& txn);

}  // namespace allot::server
