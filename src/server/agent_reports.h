#pragma once
// What an agent reports in a heartbeat, as parsed (agents.h, node_lifecycle.h): plain values, so that the
// request threads' heartbeat board (heartbeat_board.h) can compare them with what the writer last published.
#include <optional>
#include <string>
#include <vector>

#include "server/server_state.h"

namespace allot::server {

// One replica as an agent reports it in a heartbeat.
struct ReplicaReport {
  std::string job;
  int rank = 0;
  bool exited = false;
  int exit_code = 0;            // when exited
  // Exited, exit code unknown: the replica ended with its agent (a restarted agent reports what its predecessor
  // started and did not see end, agent/attempt_journal.h). A failure, like a non-zero exit.
  bool lost = false;
  std::optional<int> attempt;   // the assignment's attempt it belongs to, when the agent sends it
  std::string cpus;             // running: the CPUs it is bound to ("0-3,8"), when the agent sends them
  // Not started (exited is set too): rank 0's MASTER_PORT was in use on its node (server/rendezvous_port.h).
  int port_in_use = 0;
};

// The "health" object of a heartbeat: {"checks": [{name, status, detail, on_failure, at_ms}], "configured",
// "boot", "deep_check": {"status": none|running|passed|failed, "detail"}}.
struct HealthReport {
  std::vector<NodeCheck> checks;
  size_t configured = 0;
  int boot = 0;
  std::string deep_status = "none", deep_detail;
  bool operator==(const HealthReport&) const = default;
};

}  // namespace allot::server
