#pragma once
// Recovery in place on the agent (docs/resiliency.md, "Recovery in place"): the replicas of a job with
// recovery: in_place read their run's membership from membership.json in their working directory
// (ALLOT_MEMBERSHIP_FILE), which the agent writes before a replica starts and rewrites, then signals the replica's
// process group with the job's membership_signal, whenever the server's run list shows a new membership epoch for a
// replica that runs here. A framework (torchft, torch elastic, the test's own program) rebuilds its process group at
// the new MASTER_ADDR/MASTER_PORT and the new rank copies the state from a peer.
#include <nlohmann/json.hpp>
#include <string>

#include "agent/replica.h"
#include "core/model/result.h"

namespace allot::agent {

// An assignment's "membership": {"epoch", "signal"?, "ranks": [{"rank", "node", "address"}]}. A signal other than those
// a job may choose (core/model/spec.h, kMembershipSignals) is refused, so a server of another version cannot make the agent
// send SIGKILL.
Result<Membership> membership_from_json(const nlohmann::json& j, const std::string& slot);

// The file's content: {"job", "attempt", "epoch", "world_size", "master_addr", "master_port", "ranks": [{"rank",
// "node", "address"}]}.
nlohmann::json membership_file_json(const Assignment& a);

// Writes membership.json at `path` atomically (a temporary file in the same directory, synced, renamed over it), so
// that a replica that watches it reads the old membership or the new, never half of either. Readable by everyone
// (0644): the replica may run under another uid than the agent's.
Status write_membership(const std::string& path, const Assignment& a);

}  // namespace allot::agent
