// One fault, one restart (docs/resiliency.md): when a replica dies abnormally, its node's health is checked at once,
// so that a GPU that killed its process is seen before the exit is judged. The heartbeats carry
// `health.exit_checks_running` until the checks have run; the server holds the exit that long.
#include "agent/agent.h"

namespace allot::agent {

void Agent::check_health_after_exit(const std::string& key, int exit_code) {
  if (!monitor_) return;
  say("replica " + key + " died abnormally (exit code " + std::to_string(exit_code) +
      "): running the fast health checks now, before its exit is judged");
  monitor_->check_now();
  awaiting_exit_checks_ = true;
}

bool Agent::exit_checks_finished() {
  if (!awaiting_exit_checks_ || !monitor_ || monitor_->exit_checks_running()) return false;
  awaiting_exit_checks_ = false;
  return true;
}

}  // namespace allot::agent
