#pragma once
// A cgroup (v2) per replica, where the machine lets the agent make one: everything a replica starts stays in
// it whatever it does with process groups and sessions, so a stop or a leftover sweep reaches all of it
// (cgroup.kill), and memory.max / cpu.max hold the replica to what it asked for.
//
// The agent's cgroups live in one directory beside the agent's own cgroup, "allot-<node name>-<hash of the
// work directory>" (two agents of one name on one machine, as in tests, must not sweep each other's), with
// one child per replica ("r-<job>-<rank>-<attempt>"). Limits need the memory and cpu controllers enabled for
// that directory's children, which the parent cgroup must delegate (systemd: Delegate=yes, or a root
// cgroup); what is missing is said once in the agent's log, and replicas run without it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace allot::agent {

// The mount point of the cgroup2 hierarchy in a /proc/self/mountinfo text (hybrid systems mount it at
// /sys/fs/cgroup/unified), or nullopt.
std::optional<std::string> cgroup2_mount(std::string_view mountinfo);
// This process's cgroup2 path ("0::/path" in a /proc/self/cgroup text), or nullopt.
std::optional<std::string> cgroup2_path(std::string_view proc_self_cgroup);

// cpu.max for a request of `vcpu_milli` thousandths of a vCPU: "QUOTA 100000" (microseconds per 100 ms
// period), at least the kernel's 1 ms minimum; "max" for 0 (no request).
std::string cpu_max_value(int64_t vcpu_milli);
// memory.max for a request of `memory_mib` MiB, in bytes, never below kMinMemoryMib: a limit below what a
// shell needs to start would turn a small request into a replica that cannot run at all. "max" for 0.
inline constexpr int64_t kMinMemoryMib = 64;
std::string memory_max_value(int64_t memory_mib);

struct ReplicaLimits {
  int64_t vcpu_milli = 0;  // 0: no cpu.max
  int64_t memory_mib = 0;  // 0: no memory.max
};

class Cgroups {
 public:
  // Finds the hierarchy and prepares the agent's directory; never fails: what cannot be done is in
  // summary() and the corresponding features are off. `base_override` (tests) replaces the agent's own
  // cgroup directory as the parent.
  static Cgroups detect(const std::string& dir_name, const std::string& base_override = "");
  // "allot-<name>-<8 hex digits of FNV-1a of work_dir>".
  static std::string dir_name_for(const std::string& agent_name, const std::string& work_dir);

  bool available() const { return !dir_.empty(); }  // replicas get their own cgroup
  bool limits_memory() const { return memory_; }
  bool limits_cpu() const { return cpu_; }
  const std::string& dir() const { return dir_; }
  // One line for the agent's log: where replica cgroups go and which limits apply, or why there are none.
  const std::string& summary() const { return summary_; }

  // Creates the replica's cgroup and writes the limits the controllers allow. Returns its directory.
  Result<std::string> create(const std::string& replica_name, const ReplicaLimits& limits) const;
  // The replica cgroups present under dir() (for the leftover sweep at start).
  std::vector<std::string> children() const;
  // Removes dir() when nothing is left in it (an agent that stops cleanly).
  void remove_if_empty() const;

 private:
  std::string dir_;
  bool memory_ = false, cpu_ = false;
  std::string summary_;
};

// Kills every process in the cgroup at `path` (cgroup.kill where the kernel has it, else SIGKILL to each pid
// in cgroup.procs until it is empty) and waits, at most `wait_ms`, until it is empty. Returns how many
// processes it saw there; a cgroup that does not exist has none.
int kill_cgroup(const std::string& path, int wait_ms = 2000);
// How many times the kernel's out-of-memory killer ended a process of the cgroup at `path` for going past its
// memory.max ("oom_kill N" in memory.events); 0 when it never did or the file is missing.
int64_t oom_kills(const std::string& path);
// Removes an empty cgroup directory; false while processes are still in it (or it is gone already: true).
bool remove_cgroup(const std::string& path);

}  // namespace allot::agent
