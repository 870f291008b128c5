#pragma once
// The processes an agent runs for its replicas. Each replica runs under a shim of its own (agent/shim.h), the
// agent's direct child, which ends the replica's whole tree when the agent dies and otherwise exits as the
// replica's first process did. Each replica is started in its own process group (and, where
// the agent has one for it, its own cgroup), so that a stop reaches everything it spawned (a shell and its
// children, torchrun and its workers): SIGTERM to the group first, SIGKILL (and cgroup.kill) once the grace
// period has passed. The child drops to the replica's user before exec and gets exactly the environment of
// its spec, nothing of the agent's. Exits are collected by polling (waitpid WNOHANG),
// which keeps the agent single-threaded and needs no SIGCHLD handler. Time is passed in, so tests control it.
//
// Thread-safety: none; one thread owns a ProcessTable.
#include <sys/types.h>

#include <chrono>
#include <map>
#include <utility>
#include <optional>
#include <string>
#include <vector>

#include "agent/run_as.h"
#include "core/model/result.h"

namespace allot::agent {

using Clock = std::chrono::steady_clock;

struct LaunchSpec {
  std::vector<std::string> argv;           // argv[0] is looked up on the PATH of `env`
  std::map<std::string, std::string> env;  // the whole environment: the agent's own is not passed on
  std::vector<int> cpus;                   // CPU affinity; empty: inherit the agent's
  std::string log_path;                    // stdout and stderr, appended; empty: /dev/null
  std::string work_dir;                    // empty: the agent's
  std::optional<Identity> run_as;          // set: groups, gid and uid switched to it before exec
  std::string cgroup;                      // a cgroup directory the child joins before exec; empty: none
  // The same replica's cgroup in the other cgroup v1 hierarchies (agent/cgroups.h, extra_paths): joined too,
  // after `cgroup`. The agent removes them; the table only joins them.
  std::vector<std::string> more_cgroups;
  // Where stdout and stderr go instead of log_path: the write end of the agent's pipe (agent/log_capture.h).
  // The caller still owns and closes it. -1: log_path.
  int output_fd = -1;
  // A directory bind-mounted on /tmp in a mount namespace of the replica's own (the job's private /tmp);
  // empty: the node's /tmp. Needs root.
  std::string private_tmp;
  // The node's PID namespace for replicas (agent/pid_namespace.h, its fd): the shim enters it before it forks the
  // replica, so every process of the replica dies when the namespace's init does. -1: the agent's namespace.
  int pid_namespace = -1;
  // An fd the replica's first process gets as its fd 3 (a container's `podman run`: the agent's lifeline, which
  // --preserve-fds passes on to the container's init; agent/container.h). The caller owns it. -1: none.
  int fd3 = -1;
};

struct Exited {
  std::string key;
  pid_t pid = 0;  // the replica's first process (not its shim)
  int exit_code = 0;  // the exit status, or 128 + signal number as a shell reports it
  bool stopped = false;  // it exited after stop() asked it to
  std::string cgroup;    // its cgroup (emptied by the kill that follows the leader's exit), for removal
  // It called exit (with any code) rather than being ended by a signal: a program that cleans up when it exits
  // (podman run --rm removes its container) has done so.
  bool exited_itself = false;
};

class ProcessTable {
 public:
  // `shim_program`: the allot binary, which the shim execs with its hidden command (agent/shim.h) so that it is a
  // small fresh process; empty (tests, whose binary has no such command): the forked shim supervises in place.
  explicit ProcessTable(std::chrono::milliseconds stop_grace, std::string shim_program = "")
      : grace_(stop_grace), shim_program_(std::move(shim_program)) {}
  ~ProcessTable();  // kills what is still running (SIGKILL to each group) and reaps it
  ProcessTable(const ProcessTable&) = delete;
  ProcessTable& operator=(const ProcessTable&) = delete;

  // Starts `spec` under `key` (which must not be running) and returns the pid of the replica's first process. A program that cannot be executed still starts:
  // the child writes why to the log and exits 127, as a shell would, so the failure reaches the job's logs.
  Result<pid_t> start(const std::string& key, const LaunchSpec& spec);
  // SIGTERM to the process group now; poll() sends SIGKILL once the grace period has passed. No-op when the
  // key is unknown or already stopping.
  void stop(const std::string& key, Clock::time_point now);
  // The same with its own grace (fencing has less time than an ordinary stop). A stop already under way
  // keeps the earlier of the two deadlines.
  void stop(const std::string& key, Clock::time_point now, std::chrono::milliseconds grace);
  // Reaps what has exited and escalates stops whose grace has run out. Returns each exit once.
  std::vector<Exited> poll(Clock::time_point now);

  bool running(const std::string& key) const { return procs_.count(key) > 0; }
  bool stopping(const std::string& key) const {  // running, and stop() was called for it
    auto it = procs_.find(key);
    return it != procs_.end() && it->second.kill_at.has_value();
  }
  // The replica's first process, the leader of its process group: what stop() and a membership signal reach and
  // what the state file records. Not the shim's.
  std::optional<pid_t> pid(const std::string& key) const;
  // The shim's (agent/shim.h), which the table waits for.
  std::optional<pid_t> shim_pid(const std::string& key) const;
  size_t size() const { return procs_.size(); }
  std::vector<std::string> keys() const;

  // Stops everything and waits (at most grace + 1 s) until it is gone; for an agent that is shutting down.
  std::vector<Exited> stop_all_and_wait();

 private:
  struct Proc {
    pid_t pid = 0;    // the shim, the agent's child
    pid_t group = 0;  // the replica's first process and its process group; 0: the shim could not fork it
    std::optional<Clock::time_point> kill_at;  // set once stop() sent SIGTERM
    std::string cgroup;
    bool killed = false;  // SIGKILL sent
  };
  std::chrono::milliseconds grace_;
  std::string shim_program_;
  std::map<std::string, Proc> procs_;
};

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Rejects malformed lists.
Result<std::vector<int>> parse_cpu_list(std::string_view list);
// {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);
// The CPUs this process may run on (its own affinity mask), sorted.
std::vector<int> available_cpus();
// Maps wanted CPU ids onto the ones that exist: an emulated p5.48xlarge asks for CPUs 0-95 on a 2-CPU
// machine; each wanted id lands on available[id % n], so replicas with different NUMA domains still spread
// over the real CPUs. Empty `wanted` stays empty.
std::vector<int> clamp_cpus(const std::vector<int>& wanted, const std::vector<int>& available);

}  // namespace allot::agent
