#pragma once
// Rank 0's rendezvous port (MASTER_PORT; docs/resiliency.md, "The rendezvous port"): chosen per attempt, checked
// free by rank 0's agent before the start (agent/rendezvous_port.h), and a port found in use charged to the node:
// the job is requeued without using a retry, and its next attempt gets another port.
#include <nlohmann/json.hpp>
#include <string>

#include "server/lifecycle/agent_reports.h"
#include "server/options.h"
#include "server/writer/writer.h"

namespace allot::server {

// The port of a job's attempt: --master-ports' low end plus (job number + attempt * kAttemptStride) modulo the range's
// size. Deterministic, so every rank of an attempt, and every agent asked again, gets the same one; a new attempt
// moves kAttemptStride ports on, so that a port some other process holds on rank 0's node is not tried again by
// the next attempt (unless the range has a single port).
// An in-place recovery (core/lifecycle/in_place.h) begins a new membership epoch of the same attempt, whose rendezvous is
// fresh too: each epoch moves kEpochStride ports on (epoch 0, the run's start, is the attempt's own port).
int master_port(const ServerOptions& options, JobId job, int attempt, int epoch = 0);
inline constexpr int kAttemptStride = 97;
inline constexpr int kEpochStride = 499;

// A replica report's "not_started" part (`"cause": "port_in_use", "port": N`) into `rep`, or an error that says
// what `where` got wrong.
Status parse_not_started(const nlohmann::json& r, const std::string& where, ReplicaReport& rep);

// Rank 0 of the current attempt of `job` (running on `node`) was not started because its port was in use: the job
// is requeued without using a retry (store::Requeue), with an event on the node. With a range of a single port the
// next attempt would clash the same way, so the run fails instead, as a start failure does.
void requeue_for_port(Txn& txn, const Job& job, const std::string& node, const ServerOptions& options, int port);

}  // namespace allot::server
