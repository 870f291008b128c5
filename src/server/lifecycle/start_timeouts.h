#pragma once
// The writer's clock for the gang start timeout (core/lifecycle/start_timeout.h, docs/resiliency.md "Gang start timeout"):
// a Running job whose replicas the agents were given (start_gate.h) more than policy.start_timeout_s ago, and not
// every one of which its agent has reported running since (agents.h, note_starts), is requeued through a
// start_timeout record: it stops as a preempted run does (its agents stop what did start), backs off, and names
// the nodes that did not start their replicas. The time counts from when the server first saw the run handed out,
// not from admission, so stops the run waits for (start_gate.h) are not counted against it. Not journaled: a
// restarted server (or a new leader) counts every run's start time afresh. Only the leader calls it.
#include "server/writer/writer.h"

namespace allot::server {

// Returns whether any job was requeued.
bool time_out_starts(Txn& txn);

}  // namespace allot::server
