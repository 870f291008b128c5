#pragma once
// What an agent leaves behind when it dies without stopping its replicas (kill -9, a crash, the OOM killer):
// each replica's shim (agent/shim.h) ends the replica's whole tree at once, but a shim killed too (or stuck) leaves
// what the replica's first process started as orphans (the first process dies with its shim, PR_SET_PDEATHSIG),
// and the server, seeing the node again, would place new work beside them. So the agent records each running
// replica (its first process, not its shim) in a state file in its work directory, and its watchdog and a
// restarted agent end what is still there, the agent before it registers.
//
// A record is trusted only as far as it still describes the same processes: a pid is matched with its start
// time (field 22 of /proc/PID/stat), so a pid the kernel has since given to an unrelated process is never
// signalled, and records from before a reboot (another boot_id) are dropped.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model/result.h"

namespace allot::agent {

struct ReplicaRecord {
  std::string key;      // the agent's replica key, "job/rank#attempt"
  pid_t pid = 0;        // the replica's first process, the leader of its process group
  pid_t pgid = 0;       // its process group (= pid)
  uint64_t start_time = 0;  // of pid, in clock ticks since boot
  std::string cgroup;   // its cgroup directory; empty when it has none
  std::vector<std::string> more_cgroups;  // its directories in the other cgroup v1 hierarchies (agent/cgroups.h)
};

struct StateFile {
  std::string boot_id;  // /proc/sys/kernel/random/boot_id when written
  std::vector<ReplicaRecord> replicas;
  std::string cgroup_dir;  // the agent's cgroup directory (agent/cgroups.h); empty: none
  std::vector<std::string> more_cgroup_dirs;  // its directories in the other cgroup v1 hierarchies
};

// The running replicas, written atomically (a temporary file, fsync, rename) so a crash leaves the old or
// the new list, never half of one.
Status save_state(const std::string& path, const std::vector<ReplicaRecord>& replicas,
                  const std::string& cgroup_dir = "", const std::vector<std::string>& more_cgroup_dirs = {});
// The file as saved; a missing file is an empty list. A malformed one is an error naming the path.
Result<StateFile> load_state(const std::string& path);

std::string boot_id();
// Start time of `pid` (clock ticks since boot), or nullopt when there is no such process.
std::optional<uint64_t> process_start_time(pid_t pid);
// The process group of `pid`, or nullopt.
std::optional<pid_t> process_group(pid_t pid);

// The processes of a recorded replica that are still there: those of its cgroup, the recorded process if
// it is still the same one, and those of its process group. A group's members count only when the group is the recorded one: its leader is the recorded
// process (same start time) or is gone (a pid stays reserved by the kernel while a group uses it as its id,
// so the group cannot have been recycled while it had members), and each member started no earlier than
// the leader did.
std::vector<pid_t> leftover_processes(const ReplicaRecord& r);

// Ends the leftovers of every record in `state` (SIGKILL; cgroup.kill for cgroups) and waits, bounded, until
// they are gone; says what it did through `say`. Records of another boot are ignored.
void end_leftovers(const StateFile& state, const std::function<void(const std::string&)>& say);

}  // namespace allot::agent
