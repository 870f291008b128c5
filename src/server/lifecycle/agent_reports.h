#pragma once
// What an agent reports in a heartbeat, as parsed (agents.h, node_lifecycle.h): plain values, so that the
// request threads' heartbeat board (heartbeat_board.h) can compare them with what the writer last published.
#include <optional>
#include <string>
#include <vector>

#include "server/writer/server_state.h"
#include "view/replica_failure.h"

namespace allot::server {

// What an agent says of a replica.
enum class ReplicaState {
  kRunning,
  // The agent pulls the job's image before the start (docs/jobs.md, "Images"): alive as a running replica is (the
  // start gate waits for it to stop, the server tells the agent to stop it when it is no longer placed), but not
  // started; no timeout runs against it.
  kPulling,
  kExited,
  // Exited, exit code unknown: the replica ended with its agent (a restarted agent reports what its predecessor
  // started and did not see end, agent/attempt_journal.h). A failure, like a non-zero exit.
  kLost,
  // Never started: rank 0's MASTER_PORT was held on its node (server/lifecycle/rendezvous_port.h, `cause` and `port`). It does
  // not run: like an exit, the heartbeat goes to the writer and the run list drops it.
  kNotStarted,
};
const char* replica_state_name(ReplicaState s);  // "running", "pulling", "exited", "lost", "not_started"

// Why the agent ended an attempt itself (view/replica_failure.h): an exited replica's "failure".
struct ReplicaFailure {
  view::ReplicaFailureReason reason = view::ReplicaFailureReason::kImagePull;
  std::string message;  // untrusted text: bounded and escaped when parsed (kMaxReplicaFailureMessage)
  // kLogRule: which rule fired and the line (the job's output: bounded to kMaxLogRuleLine and escaped when parsed).
  // The rank is the report's.
  std::optional<LogRuleFiring> log_rule;
  // kOomKilled: the memory limit the agent gave the replica, in MiB (at least 1).
  int64_t memory_limit_mib = 0;
};

// One replica as an agent reports it in a heartbeat.
struct ReplicaReport {
  std::string job;
  int rank = 0;
  ReplicaState state = ReplicaState::kRunning;
  bool exited() const { return state == ReplicaState::kExited || state == ReplicaState::kLost || state == ReplicaState::kNotStarted; }
  int exit_code = 0;            // when exited without a failure
  std::optional<ReplicaFailure> failure;  // when exited: the agent ended it (the exit code means nothing then)
  std::optional<int> attempt;   // the assignment's attempt it belongs to, when the agent sends it
  std::string cpus;             // running: the CPUs it is bound to ("0-3,8"), when the agent sends them
  // Not started (exited is set too): rank 0's MASTER_PORT was in use on its node (server/lifecycle/rendezvous_port.h).
  int port_in_use = 0;
};

// The "health" object of a heartbeat: {"checks": [{name, status, detail, on_failure, at_ms}], "configured",
// "boot", "deep_check": {"status": none|running|passed|failed, "detail"}, "exit_checks_running",
// "limits_enforced": {"memory", "cpu"}}.
struct HealthReport {
  std::vector<NodeCheck> checks;
  size_t configured = 0;
  int boot = 0;
  std::string deep_status = "none", deep_detail;
  // A replica here died abnormally and the checks that run at once after it have not finished: the checks above are
  // from before the exit (docs/resiliency.md, "One fault, one restart"). False (or absent): they are from after it.
  bool exit_checks_running = false;
  // "limits_enforced": {"memory": bool, "cpu": bool}: which requested limits this node's replicas get.
  std::optional<LimitsEnforced> limits;
  bool operator==(const HealthReport&) const = default;
};

}  // namespace allot::server
