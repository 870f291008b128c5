#pragma once
// Each replica's supervisor ("shim"): the agent's direct child, which stays root and forks the replica. It exists
// because PR_SET_PDEATHSIG reaches only a direct child: when the agent AND its watchdog are killed (SIGKILL, the
// OOM killer), the replica's first process died with the agent, but what it started (a `sleep &`, torchrun's
// workers, a setsid'd daemon) ran on beside the replica's restart on another node until an agent started here
// again; the same rank ran twice (issue 25, item 9).
//
// The shim is a child subreaper (PR_SET_CHILD_SUBREAPER), so every orphan of the replica, setsid'd and
// double-forked ones included, is reparented to it rather than to init; and it has a parent-death signal it
// handles (PDEATH_SIGNAL; it cannot handle SIGKILL). When the agent dies, whatever killed it, the shim ends the
// replica's process group and every process reparented to it, round after round until it has no child left
// (bounded: kEndTreeBound), and exits. While the agent lives, it only reaps the orphans it adopted and waits for
// the replica's first process; that one's exit status it passes up unchanged: the same exit code, or death by the
// same signal (without a core file of its own), so the agent's exit classification sees what it saw before.
// It does not end the leftovers of an ordinary exit itself: the agent does (group SIGKILL, cgroup.kill) as before.
//
// The shim is outside the replica's process group and cgroup, so a stop's SIGTERM/SIGKILL to the group, a
// membership signal and cgroup.kill never reach it, and a replica running as another user cannot signal it. All
// signals are blocked in it and taken with sigwaitinfo: a stray SIGTERM or SIGHUP (a systemd stop, a terminal) does
// nothing while the agent lives. Killed itself with SIGKILL, the replica's first process dies with it (its
// PR_SET_PDEATHSIG), the agent reaps the shim (exit 137) and ends the group and cgroup as for any exit; if the agent
// is gone too, what is left dies with the replicas' PID namespace (agent/pid_namespace.h), which the shim enters
// before it forks the replica, or where there is none is the restarted agent's leftovers sweep's (agent/leftovers.h):
// the state file records the replica's own first process and group, not the shim. In the namespace, the replica's
// orphans go to the namespace's init rather than to the shim (a subreaper adopts only within its own namespace).
//
// Everything here is async-signal-safe (no allocation, no stdio), so it may run in a child forked from a
// multi-threaded process; the agent execs the allot binary's hidden `internal-replica-shim` command instead, so
// the shim is a small fresh process rather than a copy of the agent that pins the agent's memory.
#include <sys/types.h>

#include <csignal>

namespace allot::agent {

// The parent-death signal the shim asks for: any blockable signal would do, since all are blocked and each one
// makes the shim look at its parent again.
inline constexpr int kShimDeathSignal = SIGTERM;
// The hidden command of the allot binary that runs supervise_replica (src/app/main.cpp dispatches it first).
inline constexpr const char* kShimCommand = "internal-replica-shim";

// Runs the shim in this process until the replica's first process `replica` (a child of this process, the leader
// of its own process group) has exited, then exits as it did; or until this process's parent is no longer `agent`,
// then ends the replica's tree and exits 137. Expects every signal blocked and the subreaper and parent-death
// attributes set (ProcessTable::start does this before it forks the replica).
[[noreturn]] void supervise_replica(pid_t agent, pid_t replica);

// Ends the replica's tree: SIGKILL to the group `replica` and to every child of this process, reaping them,
// until none is left or kEndTreeBound has passed. Returns how many processes it signalled. Async-signal-safe.
int end_replica_tree(pid_t replica);
inline constexpr int kEndTreeBoundMs = 5000;

// This process's parent as the node's /proc names it (-1 when /proc cannot be read). Inside a PID namespace whose
// parent is outside it, getppid() says 0; this still tells whether the parent is the one it was. Async-signal-safe.
pid_t host_parent();

// Exits the way `status` (from waitpid) says a process exited: _exit(code), or death by the same signal.
[[noreturn]] void exit_like(int status);

// `allot internal-replica-shim AGENT_PID REPLICA_PID`: parses the two pids and runs supervise_replica; a
// malformed command line exits 2 (it is never typed by a person).
int replica_shim_main(int argc, char** argv);

}  // namespace allot::agent
