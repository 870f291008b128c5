#pragma once
// A cgroup per replica, where the machine lets the agent make one: everything a replica starts stays in it
// whatever it does with process groups and sessions, so a stop or a leftover sweep reaches all of it
// (cgroup.kill, or SIGKILL to each member), and the memory and CPU limits hold the replica to what it asked for.
//
// Two kinds of hierarchy, one interface: cgroup v2 (unified: memory.max, cpu.max, memory.events) and cgroup v1
// (one hierarchy per controller: memory.limit_in_bytes in the memory one, cpu.cfs_quota_us in the cpu one,
// memory.oom_control). v2 is used when it has the memory or cpu controller for the agent; else v1 when its
// memory or cpu hierarchy is mounted and writable (v1-only machines, and hybrid ones whose unified hierarchy has
// no controllers); else v2 without limits (the cgroup still holds the replica's processes); else none.
//
// The agent's cgroups live in one directory beside the agent's own cgroup, "allot-<node name>-<hash of the
// work directory>" (two agents of one name on one machine, as in tests, must not sweep each other's), with
// one child per replica ("r-<job>-<rank>-<attempt>"). Under v1 that directory exists in each hierarchy used; the
// memory one (else the cpu one) is the replica's cgroup that the rest of the agent sees, and the others
// (extra_paths) are joined and removed beside it. Limits under v2 need the memory and cpu controllers enabled
// for that directory's children, which the parent cgroup must delegate (systemd: Delegate=yes, or a root
// cgroup); what is missing is said once in the agent's log and in its heartbeats (limits()), and replicas run
// without it: never a failed start.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

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

// The mount point of the cgroup v1 hierarchy that holds `controller` ("memory", "cpu") in a mountinfo text
// (fstype "cgroup", the controller among its super options: "rw,cpu,cpuacct"), or nullopt.
std::optional<std::string> cgroup1_mount(std::string_view mountinfo, std::string_view controller);
// This process's path in the v1 hierarchy of `controller` ("4:memory:/path" or "2:cpu,cpuacct:/path"), or nullopt.
std::optional<std::string> cgroup1_path(std::string_view proc_self_cgroup, std::string_view controller);

enum class CgroupVersion { kNone, kV1, kV2 };
const char* cgroup_version_name(CgroupVersion v);  // "none", "v1", "v2"

// Where to look instead of /proc/self (tests: temporary directories laid out like the kernel's files). When any
// is set only the set ones are used: the directory the agent's own directory goes in, per hierarchy.
struct CgroupBases {
  std::string v2;         // a cgroup v2 directory (its cgroup.controllers says what its children may have)
  std::string v1_memory;  // a directory of the v1 memory hierarchy
  std::string v1_cpu;     // a directory of the v1 cpu hierarchy
  bool any() const { return !v2.empty() || !v1_memory.empty() || !v1_cpu.empty(); }
};

struct ReplicaLimits {
  int64_t vcpu_milli = 0;  // 0: no cpu.max
  int64_t memory_mib = 0;  // 0: no memory.max
};

class Cgroups {
 public:
  // Finds the hierarchy and prepares the agent's directory; never fails: what cannot be done is in
  // summary() and the corresponding features are off. `bases` (tests) replace the agent's own cgroup
  // directories as the parents.
  static Cgroups detect(const std::string& dir_name, const CgroupBases& bases = {});
  // "allot-<name>-<8 hex digits of FNV-1a of work_dir>".
  static std::string dir_name_for(const std::string& agent_name, const std::string& work_dir);

  bool available() const { return !dir_.empty(); }  // replicas get their own cgroup
  bool limits_memory() const { return memory_; }
  bool limits_cpu() const { return cpu_; }
  CgroupVersion version() const { return version_; }
  const std::string& dir() const { return dir_; }
  const std::vector<std::string>& extra_dirs() const { return extra_; }  // v1: the agent's other hierarchies' directories
  // One line for the agent's log: where replica cgroups go and which limits apply, or why there are none.
  const std::string& summary() const { return summary_; }

  // Creates the replica's cgroup and writes the limits the controllers allow. Returns its directory (under
  // dir()); under v1 the same name is made in the other hierarchies too (extra_paths). A limit the kernel
  // refuses is an error (the caller runs the replica without a cgroup, saying why); nothing is left behind.
  Result<std::string> create(const std::string& replica_name, const ReplicaLimits& limits) const;
  // The directories of the replica cgroup `path` (one create() returned) in the other v1 hierarchies: the
  // replica joins them too, and they are removed with it. Empty under v2.
  std::vector<std::string> extra_paths(const std::string& path) const;
  // The replica cgroups present in every hierarchy used (for the leftover sweep at start), dir()'s first.
  std::vector<std::string> children() const;
  // Removes the agent's directories when nothing is left in them (an agent that stops cleanly).
  void remove_if_empty() const;

 private:
  static Cgroups detect_v2(const std::string& dir_name, const std::string& base_override);
  static Cgroups detect_v1(const std::string& dir_name, const CgroupBases& bases);
  CgroupVersion version_ = CgroupVersion::kNone;
  std::string dir_;                 // the agent's directory in the hierarchy that holds replica processes
  std::vector<std::string> extra_;  // v1: the agent's directory in the other hierarchy used (cpu beside memory)
  std::string cpu_dir_;             // where cpu limits are written: dir_ (v2) or the v1 cpu hierarchy's
  std::string memory_dir_;          // likewise for memory limits
  bool memory_ = false, cpu_ = false;
  std::string summary_;
};

// Kills every process in the cgroup at `path` (cgroup.kill where the kernel has it, else SIGKILL to each pid
// in cgroup.procs until it is empty) and waits, at most `wait_ms`, until it is empty. Returns how many
// processes it saw there; a cgroup that does not exist has none.
int kill_cgroup(const std::string& path, int wait_ms = 2000);
// How many times the kernel's out-of-memory killer ended a process of the cgroup at `path` for going past its
// limit ("oom_kill N" in v2's memory.events, or in v1's memory.oom_control); 0 when it never did or neither
// file is there.
int64_t oom_kills(const std::string& path);
// Removes an empty cgroup directory; false while processes are still in it (or it is gone already: true).
bool remove_cgroup(const std::string& path);
// For a dead agent's watchdog: ends what is left in every replica cgroup ("r-*") under the agent's directory
// `dir` (records or not: a replica whose exit the agent collected but whose cgroup it had not removed yet), removes
// them, then `dir` itself. Bounded: a cgroup that does not empty within `wait_ms` stays for the next agent.
void sweep_agent_dir(const std::string& dir, int wait_ms = 1000);

}  // namespace allot::agent
