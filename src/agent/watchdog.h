#pragma once
// The agent's watchdog: a small process forked when the agent starts, which waits on a pipe from the agent.
// The pipe closes when the agent exits, however it exits (kill -9 included); the watchdog then ends what the
// agent's state file still lists (agent/leftovers.h), removes the agent's cgroup directory when it is
// empty, and exits. So a dead agent's replicas do not outlive it
// even when nothing restarts the agent; a restarted agent sweeps again in case the watchdog was killed too.
//
// The watchdog holds the work directory's lock while it sweeps, so a new agent cannot start replicas there
// that the sweep would take for leftovers (the new agent waits for the lock). It leaves its session and
// ignores SIGINT, SIGTERM and SIGHUP: a Ctrl-C or a stop meant for the agent must not end the watchdog
// before the agent has stopped its replicas.
#include <sys/types.h>

#include <string>

#include "core/result.h"

namespace allot::agent {

struct Watchdog {
  pid_t pid = 0;
  int fd = -1;  // the agent's end of the pipe; kept open (close-on-exec) for the agent's lifetime
};

// Forks the watchdog. Must be called while the agent is single-threaded and before it opens the lock
// (the watchdog must not share the agent's lock). `log_prefix` starts each line it writes to stderr.
Result<Watchdog> start_watchdog(const std::string& state_path, const std::string& lock_path,
                                const std::string& log_prefix);

}  // namespace allot::agent
