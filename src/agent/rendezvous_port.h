#pragma once
// Rank 0's rendezvous port (MASTER_PORT; docs/resiliency.md, "The rendezvous port"). The server chooses it per
// attempt; before rank 0 of an attempt starts, the agent of its node checks that nothing holds the port there. A
// port in use is the node's problem, not the job's: the agent reports the replica as not started (heartbeat state
// `not_started`, cause `port_in_use`), and the server requeues the job without using a retry, so that its next
// attempt gets another port.
//
// The check binds the port as PyTorch's TCPStore does (SO_REUSEADDR, the wildcard address; IPv6 too where the
// machine has it) and lets it go at once: a process that takes the port between the check and the rendezvous is
// not caught, and that run fails like any other.
#include "core/model/result.h"

namespace allot::agent {

// Ok when `port` can be bound on every address of this machine now; kFailedPrecondition naming the port when
// another process holds it (EADDRINUSE). Other failures (no IPv6, a port below 1024 without the right) are not a
// clash and pass: the replica starts and finds out itself.
Status rendezvous_port_free(int port);

}  // namespace allot::agent
