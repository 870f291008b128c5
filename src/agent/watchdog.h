#pragma once
// The agent's watchdog: a small process forked when the agent starts, which waits on a pipe from the agent.
// The pipe closes when the agent exits, however it exits (kill -9 included); the watchdog then ends what the
// agent's state file still lists (agent/leftovers.h), removes the agent's cgroup directory when it is
// empty, and exits. So a dead agent's replicas do not outlive it
// even when nothing restarts the agent; a restarted agent sweeps again in case the watchdog was killed too. Each
// replica's shim (agent/shim.h) ends its replica's tree at the same moment, and alone when the watchdog is killed
// too; the watchdog's sweep is for a shim killed as well, and for the cgroup directories.
//
// It also fences for a frozen agent (issue: an agent stopped by SIGSTOP, swapped out or stuck in the kernel cannot
// fence itself): the agent sends it its lease over the same pipe after every answered heartbeat (send_lease), and
// when the lease runs out without a newer one the watchdog stops the replicas the state file lists, SIGTERM at
// the lease's stop time and SIGKILL at its kill time (agent/fencing.h), exactly as the agent would. A live agent
// collects their exits when it runs again; a newer lease ends the fence.
//
// The watchdog holds the work directory's lock while it sweeps, so a new agent cannot start replicas there
// that the sweep would take for leftovers (the new agent waits for the lock). It leaves its session and
// ignores SIGINT, SIGTERM and SIGHUP: a Ctrl-C or a stop meant for the agent must not end the watchdog
// before the agent has stopped its replicas.
#include <sys/types.h>

#include <chrono>
#include <string>

#include "core/model/result.h"

namespace allot::agent {

struct Watchdog {
  pid_t pid = 0;
  int fd = -1;  // the agent's end of the pipe; kept open (close-on-exec) for the agent's lifetime
};

// The agent's lease, on the steady clock (CLOCK_MONOTONIC, shared by every process of the machine).
struct Lease {
  std::chrono::steady_clock::time_point stop_at;  // SIGTERM to the replicas
  std::chrono::steady_clock::time_point kill_at;  // SIGKILL to what is left
};

// Hands the watchdog a newer lease. Never blocks: a full pipe drops it, and the next one is sent a heartbeat later.
void send_lease(int fd, const Lease& lease);

// Forks the watchdog. Must be called while the agent is single-threaded and before it opens the lock
// (the watchdog must not share the agent's lock). `log_prefix` starts each line it writes to stderr.
Result<Watchdog> start_watchdog(const std::string& state_path, const std::string& lock_path,
                                const std::string& log_prefix);

}  // namespace allot::agent
