#pragma once
// The PID namespace the agent's replicas run in (issue 25, item 9: "replicas must die with their supervisor").
//
// Each replica's shim ends the replica's whole tree when the agent dies (agent/shim.h), and the replica's first
// process dies with its shim (PR_SET_PDEATHSIG). One case was left: the agent, its watchdog and a replica's shim
// all killed at once (SIGKILL to the agent's service, the OOM killer taking all three). Then what the replica had
// started (torchrun's workers, a `sleep &`) ran on, beside the replica's restart on another node, until an agent
// started here again: the same rank twice.
//
// The kernel closes that case: when the first process of a PID namespace (its "init") exits, every other process
// in the namespace is killed with SIGKILL, and none of them can leave it. So the agent makes one namespace at start,
// whose init is the agent's child with a parent-death signal, and every shim enters it (setns) before it forks its
// replica. Whatever kills the agent, its init then exits, and every process of every replica goes with it, however
// it was started (setsid'd, double-forked, reparented). The init runs as root and is the namespace's init, so
// neither a replica's user nor root inside the namespace can signal it.
//
// One namespace for the node, not one per replica: ranks of one job on one node exchange GPU memory through CUDA
// IPC, whose handles do not cross PID namespaces. A container replica does not enter it: podman and conmon record
// pids as seen where they run and the agent reads them on the node (the container has its own namespace anyway).
//
// The init is exec'd (the allot binary's hidden `internal-pid-init` command), so it holds nothing of the agent's
// memory; between clone and exec only async-signal-safe calls run, as after any fork of a threaded process.
#include <sys/types.h>

#include <memory>
#include <string>

#include "core/model/result.h"

namespace allot::agent {

inline constexpr const char* kPidInitCommand = "internal-pid-init";

class ReplicaPidNamespace {
 public:
  // Makes the namespace: its init is a child of this process (clone with CLONE_NEWPID) that execs `init_program`
  // with the hidden command (empty, as in tests whose binary has none: it runs the same loop in place). Refused
  // without CAP_SYS_ADMIN (an agent that does not run as root) or without a readable /proc.
  static Result<std::unique_ptr<ReplicaPidNamespace>> create(const std::string& init_program);
  ~ReplicaPidNamespace();  // SIGKILL to the init, which ends every process in the namespace, and reaps it
  ReplicaPidNamespace(const ReplicaPidNamespace&) = delete;
  ReplicaPidNamespace& operator=(const ReplicaPidNamespace&) = delete;

  // /proc/INIT/ns/pid, open (close-on-exec): what a shim passes to setns() before it forks its replica.
  int fd() const { return fd_; }
  pid_t init() const { return init_; }
  // Whether the init has exited (and with it every process in the namespace); reaps it. Its waitpid status goes
  // to *status. Once it has, new replicas cannot start in the namespace: the agent makes another.
  bool ended(int* status);

 private:
  ReplicaPidNamespace(pid_t init, int fd) : init_(init), fd_(fd) {}
  pid_t init_ = 0;
  int fd_ = -1;
};

// The init's loop: reaps every process reparented to it (the replicas' orphans) and exits once its parent is no
// longer `agent`, which ends the namespace. Every signal blocked and taken with sigwaitinfo: its parent-death
// signal (SIGTERM) wakes it, a stray one does nothing. Async-signal-safe.
[[noreturn]] void run_pid_init(pid_t agent);

// `allot internal-pid-init AGENT_PID`: runs run_pid_init, only as the first process of a PID namespace (typed by
// hand anywhere else it exits 2).
int pid_init_main(int argc, char** argv);

}  // namespace allot::agent
