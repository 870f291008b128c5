#pragma once
// OCI containers for replicas that name an image (docs/jobs.md, "Images"), run by Debian's podman, rootful and
// driven by the agent. This file holds what the agent asks podman: which podman it found (and whether it can
// run containers at all), the pull of an image, and the `podman run` of one replica with its isolation:
//  - a user namespace per team: container uids 0..N-1 are the team's block of host uids (agent/team_uids.h),
//    so container root is an unprivileged host uid and two teams never share one;
//  - `no-new-privileges`, podman's default seccomp profile, every capability dropped but those the admin
//    allows the team;
//  - the host network (NCCL and EFA need it), a private IPC namespace with a /dev/shm of its own size;
//  - devices by CDI name for NVIDIA GPUs where a CDI spec exists, else device nodes (Neuron, EFA);
//  - mounts: the replica's working directory, its checkpoint directory and the job's volumes.
// The environment goes in a 0600 file the agent writes in its own directory (--env-file), never on the command
// line, which every user of the node can read in /proc.
//
// Thread-safety: the functions are pure, except detect_podman() and pull_image(), which run podman.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "interop/nvidia_smi.h"
#include "core/model/spec.h"  // PullPolicy

namespace allot::agent {

// How the agent drives podman (`allot agent --podman PATH --container-runtime NAME --container-cgroup-manager M`).
// runc with the cgroupfs manager works on hosts with hybrid cgroups (v1 and a unified hierarchy), where crun
// refuses to start containers ("cgroups in hybrid mode not supported").
struct ContainerOptions {
  std::string podman = "/usr/bin/podman";  // an absolute path: it is executed without a PATH search
  std::string runtime = "runc";
  std::string cgroup_manager = "cgroupfs";
  // Every container's first process (src/container_init): a static program podman mounts at /run/podman-init.
  // `allot agent` sets it to allot-container-init beside its own binary (or --container-init); an agent without
  // one runs no containers. It ends the container when the agent's lifeline (ContainerLifeline) closes.
  std::string init;
};

// The agent's lifeline to its containers: a pipe whose read end every container's init gets as fd 3 and whose
// write end only the agent holds (close-on-exec, made after the watchdog was forked). The kernel closes it when the
// agent dies, however it dies, and each container's init then ends its container: a container outlives neither
// its agent nor, through conmon, the replica's shim (issue 25, item 9).
class ContainerLifeline {
 public:
  static Result<ContainerLifeline> create();
  ContainerLifeline() = default;
  ContainerLifeline(ContainerLifeline&& o) noexcept : read_(o.read_), write_(o.write_) { o.read_ = o.write_ = -1; }
  ContainerLifeline& operator=(ContainerLifeline&& o) noexcept;
  ContainerLifeline(const ContainerLifeline&) = delete;
  ContainerLifeline& operator=(const ContainerLifeline&) = delete;
  ~ContainerLifeline();
  int read_fd() const { return read_; }  // what a `podman run` gets as its fd 3 (LaunchSpec::fd3)

 private:
  void close_both();
  int read_ = -1;
  int write_ = -1;
};

// What the agent found at start, which it says in its log.
struct PodmanFacts {
  bool usable = false;
  std::string version;  // "4.3.1"
  std::string problem;  // why it is not usable: podman missing, podman failing with the agent's runtime and cgroup manager
};
PodmanFacts detect_podman(const ContainerOptions& opt);
// allot-container-init beside the running binary (/proc/self/exe), where the build puts it; empty when /proc cannot
// say where that is.
std::string default_container_init();
// Why `path` cannot serve as the containers' init (missing, not a regular executable file), or empty.
std::string container_init_problem(const std::string& path);
// "containers: podman 4.3.1 (runtime runc, cgroup manager cgroupfs; init PATH)", or why not.
std::string describe(const PodmanFacts& facts, const ContainerOptions& opt);

struct Volume {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
  friend bool operator==(const Volume&, const Volume&) = default;
};

// One replica's container.
struct ContainerRun {
  std::string name;                  // the container's name (unique on the node)
  std::string agent;                 // the agent's name, as a label, so that its leftovers can be found
  std::string image;
  std::vector<std::string> command;  // --entrypoint; empty: the image's entrypoint
  std::vector<std::string> args;     // after the image, in place of its CMD; empty: the image's CMD (none with a command)
  std::string env_file;              // the replica's environment (write_env_file)
  uid_t first_uid = 0;               // the team's block of host uids ...
  uid_t uids = 65536;                // ... and its size
  int64_t shm_mib = 64;              // the size of its /dev/shm
  int64_t memory_mib = 0;            // --memory; 0: none
  int64_t vcpu_milli = 0;            // --cpus; 0: none
  std::vector<int> cpus;             // --cpuset-cpus; empty: any
  std::string work_dir;              // mounted at the same path, and the command's working directory
  std::string checkpoint_dir;        // mounted at the same path; empty: none
  std::vector<Volume> volumes;
  std::vector<std::string> devices;  // "nvidia.com/gpu=0" (CDI) or "/dev/neuron0"
  std::vector<std::string> cap_add;  // capabilities the admin allows the team ("NET_RAW")
  // Where podman writes the host pid of the container's first process, which the agent records so that a stop
  // (or its watchdog's fence) reaches the container even when podman itself was killed; empty: not written.
  std::string pidfile;
  // The container's init (ContainerOptions::init), run with --init; the `podman run` must have the lifeline's
  // read end as its fd 3, which --preserve-fds passes on to it. Empty: no init, no lifeline (tests of the argv).
  std::string init;
};

// The limits a container's processes get: podman sets soft and hard limits, and a hard limit above the agent's
// own is refused (setrlimit EPERM), as is one equal to it on some hosts, so both stay below the agent's hard
// limit (and at most 1048576 open files, 32768 processes).
struct Ulimits {
  uint64_t nofile = 0;
  uint64_t nproc = 0;
};
Ulimits container_ulimits();

// `podman run` of the replica, in the foreground (the agent's process for it), removed when it exits.
std::vector<std::string> podman_run_argv(const ContainerOptions& opt, const ContainerRun& run, const Ulimits& limits);
// `podman rm --force --time 0 NAME`: after a stop, in case podman itself was killed before its container.
std::vector<std::string> podman_rm_argv(const ContainerOptions& opt, const std::string& name);
// `podman ps --all --quiet --filter label=allot.agent=NAME`: the containers an earlier run of the agent left.
std::vector<std::string> podman_leftovers_argv(const ContainerOptions& opt, const std::string& agent);
// `podman pull` of the image (with the team's registry auth file, when the admin gave one); for kIfNotPresent,
// `podman image exists` first, in one shell (the image and paths travel as its arguments, never in its script);
// for kNever only that check, which fails for an image that is not on the node.
std::vector<std::string> podman_pull_argv(const ContainerOptions& opt, const std::string& image, const std::string& auth_file,
                                          PullPolicy policy = PullPolicy::kAlways);


// The NVIDIA CDI device names of `gpus` where a CDI spec for nvidia.com/gpu exists (/etc/cdi, /var/run/cdi),
// else the device nodes /dev/nvidiaN with /dev/nvidiactl, /dev/nvidia-uvm; Neuron devices as /dev/neuronN;
// EFA devices (/dev/infiniband/uverbs*) when `efa`. Only nodes that exist are listed.
std::vector<std::string> container_devices(const std::string& accelerator_kind, const std::vector<int>& accelerators, bool efa,
                                           const std::vector<std::string>& cdi_dirs = {"/etc/cdi", "/var/run/cdi"});

// The MIG devices `accelerators` picks out of a MIG node's `devices` (docs/mig.md): their CDI names
// "nvidia.com/gpu=G:D" (GPU G, MIG device D, as nvidia-ctk names them) where a CDI spec for nvidia.com/gpu exists;
// else the device nodes of their GPUs with /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidia-caps (CUDA then finds
// the devices by the UUIDs in CUDA_VISIBLE_DEVICES). Only nodes that exist are listed.
std::vector<std::string> mig_container_devices(const std::vector<interop::MigDevice>& devices, const std::vector<int>& accelerators,
                                               const std::vector<std::string>& cdi_dirs = {"/etc/cdi", "/var/run/cdi"});

// Writes `env` to `path` (0600, not following a symlink) in podman's --env-file format. Refused: a value with a
// newline, which that format cannot carry.
Status write_env_file(const std::string& path, const std::map<std::string, std::string>& env);

// The last `bytes` of the file at `path` (a pull's output), from a line start where one is in reach; empty when
// it cannot be read.
std::string read_tail(const std::string& path, size_t bytes);

}  // namespace allot::agent
