#pragma once
// Fencing: an agent that cannot reach the server stops its replicas itself before the server gives up on
// the node and restarts them elsewhere, so that a partitioned node never runs a rank at the same time as its
// replacement.
//
// The clock starts when the agent *sent* its last heartbeat that the server answered. The server recorded
// that heartbeat later than it was sent, so the server's deadline (its record + timeout) is never earlier
// than the agent's (send + timeout), whatever the network delay. Within that window the agent sends SIGTERM
// at 3/4 of the server's timeout and SIGKILL at 7/8: the replicas are gone, not just asked to go, before the
// server can even decide, and the last 1/8 (1.9 s at the default 15 s) absorbs the time the kill takes to
// land, the agent's own scheduling delays on a loaded machine and clocks that run at slightly different
// rates. It is not earlier because a fence is costly: a server that is only slow (a long fsync) would see
// its jobs' replicas stop and restart them, and 3/4 of the timeout tolerates an 11 s stall at the default.
#include <chrono>

namespace allot::agent {

struct FenceTimes {
  std::chrono::milliseconds stop_after;  // since the last answered heartbeat was sent: SIGTERM
  std::chrono::milliseconds kill_after;  // SIGKILL to what is left
};

inline FenceTimes fence_times(std::chrono::milliseconds server_timeout) {
  return {server_timeout * 3 / 4, server_timeout * 7 / 8};
}

}  // namespace allot::agent
