#pragma once
// Why an agent ended a replica's attempt on its own, before or instead of running it (docs/api.md, "Heartbeats"):
// the "failure" of an exited replica report, {"reason": <name>, "message": <text>}. A closed set with one
// spelling table, shared by the agent that sends it and the server that reads it.
#include <cstddef>
#include <optional>
#include <string_view>

namespace allot::view {

enum class ReplicaFailureReason {
  // The image could not be pulled (or, with image_pull_policy Never, is not on the node): the job's fault, never
  // the node's. The message is "<image>: <the registry's or podman's answer>".
  kImagePull,
  // A rule on the job's output fired (core/lifecycle/log_rules.h): the agent stopped the replica. The failure carries the
  // fact as data, {"reason": "log_rule", "rule": {"kind": hung|restart|fail, "index": i}, "line": <the line>}; the
  // server ends or restarts the run by the rule (the job's retries, never the node's).
  kLogRule,
  // The kernel's out-of-memory killer ended it inside the memory limit its agent gave it from the job's
  // per_replica memory (agent/cgroups.h): {"reason": "oom_killed", "memory_limit_mib": N}, the limit as data. The
  // job's fault, never the node's: the run fails at once (a retry, like a non-zero exit), its reason says
  // OOMKilled and the limit, and no node is suspected.
  kOomKilled,
  // The agent stopped it because no heartbeat was answered for 3/4 of the server's failure timeout (fencing,
  // docs/security.md): {"reason": "fenced", "message": "<why>"}. The server charges it as a node failure, unless it
  // could not hear its agents itself at that time (a stall, connections refused past every seat, a disruption):
  // then the run is requeued without using a retry (docs/resiliency.md, "Leases and fencing").
  kFenced,
};
const char* replica_failure_reason_name(ReplicaFailureReason r);  // "image_pull"
std::optional<ReplicaFailureReason> replica_failure_reason_named(std::string_view name);
inline constexpr ReplicaFailureReason kReplicaFailureReasons[] = {ReplicaFailureReason::kImagePull, ReplicaFailureReason::kLogRule,
                                                                 ReplicaFailureReason::kOomKilled, ReplicaFailureReason::kFenced};

// A failure's message is text from outside (a registry's answer): the server keeps at most this many bytes of it,
// with bytes outside printable ASCII escaped (core/model/spec.h, printable), and the agent sends no more.
inline constexpr size_t kMaxReplicaFailureMessage = 2000;

}  // namespace allot::view
