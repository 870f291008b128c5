#pragma once
// Several clusters (docs/multicluster.md): the steps of a manager's job (spec.multicluster) through the worker
// clusters, each one journaled (store::RemoteCopyStep) by the manager's dispatcher (server/outside/dispatcher.h), which
// decides them off the writer's thread from what the workers answer. The core only keeps the job's account of its
// copies (Job::remote) and its state and reason right; it never talks to a worker.
//
//   kDispatched  a copy named `copy` was (about to be) submitted to `worker`: the job's live copy. REQUIRES: the job
//                waits and has no live copy, or `copy` is its live copy, which waits in its worker again (preempted
//                there): then `reason` is the worker's.
//   kRunning     the live copy's worker admitted it: the job's reason says where it runs (reason code
//                remote_running); it stays Pending here, as the manager runs nothing of it.
//   kSucceeded,  the live copy ended there: the job ends Succeeded or Failed with the worker's reason.
//   kFailed
//   kLost        the live copy's worker did not answer for its lease: the copy becomes stale (cancelled there
//                once the worker answers again) and the job waits to be dispatched again.
//   kWithdrawn   the copy was cancelled in its worker (the job was cancelled here, or the copy was stale): no
//                longer the live copy, nor a stale one.
//   kEvent       an event of the live copy in its worker (its admission there, a preemption, a fault of its node,
//                ...), numbered `worker_seq` by the worker: mirrored as an event here. Nothing of the job changes but
//                how far the copy's events were read (RemoteCopy::events_seen), so that an event is mirrored once,
//                also across the manager's restarts. REQUIRES: the live copy, worker_seq > events_seen.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/model/result.h"
#include "core/model/state.h"

namespace allot {

enum class RemoteStep { kDispatched, kRunning, kSucceeded, kFailed, kLost, kWithdrawn, kEvent };
inline constexpr RemoteStep kRemoteSteps[] = {RemoteStep::kDispatched, RemoteStep::kRunning, RemoteStep::kSucceeded,
                                              RemoteStep::kFailed,     RemoteStep::kLost,    RemoteStep::kWithdrawn,
                                              RemoteStep::kEvent};
const char* remote_step_name(RemoteStep s);
std::optional<RemoteStep> parse_remote_step(std::string_view s);

// The name of a job's n-th copy (1-based): deterministic, so a dispatch journaled before a crash and submitted
// again after it finds its copy (409 from the worker) instead of making a second one.
std::string copy_name(std::string_view job, int n);

// Applies one step (above). `reason` is the worker's reason for kRunning, kSucceeded and kFailed, why for kLost, and
// the worker's message for kEvent; may be empty otherwise. `worker_seq` is kEvent's only. An error means nothing
// changed.
Status step_remote_copy(ClusterState& s, std::string_view job, RemoteStep step, const RemoteCopyRef& copy,
                        const std::string& reason, Time now, uint64_t worker_seq = 0);

}  // namespace allot
