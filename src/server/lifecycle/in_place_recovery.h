#pragma once
// The server's part of recovery in place (core/lifecycle/in_place.h; docs/resiliency.md, "Recovery in place"):
// - before a node is made unhealthy (a failed check's window, a reboot, a replacement, a heartbeat timeout, an
//   administrator), every recovery the core plans for it is journaled (store::RecoverInPlace), so that the health
//   change that follows finds none of those jobs' replicas on the node and restarts only the others;
// - the moved ranks are awaited (ServerState::in_place_waits): each is done when the agent of its new node reports
//   it running in the job's current attempt; a recovery not done within the job's recovery_timeout falls back to a
//   full restart (store::InPlaceFallback).
// The wait counts from the recovery record's time, so a restarted server (or a new leader) waits only what is left.
// Only the leader calls these.
#include <string>
#include <vector>

#include "server/lifecycle/agent_reports.h"
#include "server/writer/writer.h"

namespace allot::server {

// Journals the recoveries of the jobs on `node`, about to fail. An exit held for one of those jobs from `node`
// (node_lifecycle.h, hold_exit) is dropped: it was the node's, and the node is no longer the job's.
void recover_in_place_from(Txn& txn, const std::string& node);

// Notes the moved ranks that `node`'s agent reports running in their job's current attempt (one event per recovery
// done, "recovered").
void note_recovered(Txn& txn, const std::string& node, const std::vector<ReplicaReport>& reports);

// Falls back the recoveries not done within their job's recovery_timeout. Returns whether any did.
bool fall_back_stalled_recoveries(Txn& txn);

}  // namespace allot::server
