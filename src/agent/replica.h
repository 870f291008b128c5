#pragma once
// One replica assignment from the server (docs/api.md, "A replica assignment") and how it becomes a process:
// the rank variables torchrun and most launchers read, the devices it may see, its CPUs and its log file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/container.h"
#include "agent/process.h"
#include "core/model/catalog.h"
#include "core/lifecycle/log_rules.h"
#include "core/model/result.h"

namespace allot::agent {

// A replica that runs in an OCI container (docs/jobs.md, "Images"): what the server sends in the assignment's
// `container` object, from the job's spec and its team's container settings.
struct ContainerAssignment {
  std::string image;
  PullPolicy pull_policy = PullPolicy::kIfNotPresent;
  int64_t shm_mib = 64;
  std::vector<Volume> volumes;
  std::vector<std::string> cap_add;  // the capabilities the team's admin allows
  std::string auth_file;             // the team's registry credentials on this node; empty: none
  std::vector<std::string> args;     // argv items after the image (the job's args); empty: the image's CMD
  friend bool operator==(const ContainerAssignment&, const ContainerAssignment&) = default;
};

// The membership of a run of a job with recovery: in_place (docs/resiliency.md, "Recovery in place"): its epoch
// (0 at the run's start, one more per in-place recovery), the signal its running replicas get when it changes (0:
// none), and where every rank runs now.
struct MemberRank {
  int rank = 0;
  std::string node;
  std::string address;
};
struct Membership {
  int epoch = 0;
  std::string signal_name;  // as the job gave it (SIGUSR1, ...); empty: none
  int signal = 0;           // its number on this machine
  std::vector<MemberRank> ranks;
};

struct Assignment {
  std::string job;
  std::string team;  // whose job it is: replicas of two teams never share a uid (agent/team_uids.h)
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::vector<int> accelerators;  // device indices on this node
  std::string accelerator_kind;   // "nvidia-gpu", "neuron", "none"; empty: the node's own kind
  std::string cpus;               // "0-47,96-143"; empty: no binding
  int attempt = 0;
  // Listed held (a server that started from its journal has not yet heard what still runs on every node:
  // server/lifecycle/start_gate.h): a replica of it already running keeps running, but none is started until it is released.
  bool hold = false;
  // ALLOT_ATTEMPT: the run number as the user sees it. It differs from `attempt` (which tells runs apart, in
  // keys, directories and reports) only for a job numbered after folded names (server_state.h, attempt_shown).
  int attempt_shown = 0;
  int64_t vcpu_milli = 0;         // what the replica requested (its cgroup's cpu.max); 0: not given
  int64_t memory_mib = 0;         // likewise for memory.max
  // Checkpoints (docs/resiliency.md): the server's shared root; the agent makes <root>/<job> the replica's
  // ALLOT_CHECKPOINT_DIR (checkpoint_dir), the same directory for every run of the job.
  std::string checkpoint_root;
  std::string checkpoint_dir;
  int restart_count = 0;          // ALLOT_RESTART_COUNT: restarts after failures so far
  // Set: the replica runs in this container (its command, when given, replaces the image's); unset: a process.
  std::optional<ContainerAssignment> container;
  LogRules log_rules;  // rules on its output (core/lifecycle/log_rules.h), matched as the agent captures its log
  std::optional<Membership> membership;  // set for a job with recovery: in_place (agent/membership.h)

  // Identifies the replica across heartbeats ("job/rank"); attempts of it replace one another.
  std::string slot() const { return job + "/" + std::to_string(rank); }
};

Result<Assignment> assignment_from_json(const nlohmann::json& j);

// What the agent knows about its machine that shapes a replica's environment.
struct MachineFacts {
  AcceleratorKind kind = AcceleratorKind::kNone;  // of the node's instance type
  int neuron_cores_per_device = 0;
  std::vector<int> cpus;  // the CPUs that really exist here
  std::string user;       // who replicas run as (USER, LOGNAME) ...
  std::string home;       // ... and that user's home directory (HOME)
  // A node of a MIG type (docs/mig.md): the UUID of each accelerator index's MIG device ("MIG-..."), which
  // CUDA_VISIBLE_DEVICES names instead of the index. Empty: whole GPUs, named by index.
  std::vector<std::string> mig_uuids;
};

// The environment a replica runs with, which is all it gets (never the agent's own, which may hold the
// agent's credentials): a minimal base (PATH=/usr/local/bin:/usr/bin:/bin, HOME, USER and LOGNAME of the
// replica's user, LANG=C.UTF-8), then the job's env over it, then ALLOT_JOB, ALLOT_ATTEMPT, RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and CUDA_VISIBLE_DEVICES (GPU indices, or the MIG devices'
// UUIDs on a MIG node) or NEURON_RT_VISIBLE_CORES (which win over the job's: they describe where the scheduler
// put it).
std::map<std::string, std::string> replica_env(const Assignment& a, const MachineFacts& m);

// The whole launch: argv, env, CPUs (clamped to the real ones), log file and working directory.
Result<LaunchSpec> launch_spec(const Assignment& a, const MachineFacts& m, const std::string& log_path,
                               const std::string& work_dir);

}  // namespace allot::agent
