#pragma once
// The agent's health checks (docs/resiliency.md): what to run, how often, how long it may take, and what a
// failure asks the server to do with the node. Read from `allot agent --health-config FILE`, or the built-in
// default below, which covers NVIDIA GPUs, DCGM, AWS Neuron, EFA and the node's basics; a check whose tool the
// machine does not have reports `skipped`, never `passed`.
//
//   checks:
//     - name: gpu
//       builtin: nvidia-gpu       # or command: "/usr/local/bin/my-check --quick" (run with /bin/sh -c)
//       interval: 10              # seconds between runs (decimals allowed)
//       timeout: 30               # a run that takes longer fails
//       on_failure: reboot        # reboot | replace
//       source: "cat report.json" # neuron only: where the neuron-monitor report comes from
//       root: /sys/class/infiniband  # efa only: where the RDMA devices' counters are
//   deep_check:                   # run before a new or replaced node takes work
//     command: "dcgmi diag -r 3"  # or builtin: stress (allot's own CPU and memory stress program)
//     timeout: 600
#include <chrono>
#include <string>
#include <vector>

#include "core/model/result.h"

namespace allot::agent {

enum class FailureAction { kReboot, kReplace };
const char* failure_action_name(FailureAction a);

// The built-in checks. Each looks at real hardware through its tool, or at the emulated devices of an
// emulated node (agent/emulated_faults.h).
enum class Builtin { kNone, kNodeBasics, kNvidiaGpu, kDcgm, kNeuron, kEfa };
const char* builtin_name(Builtin b);

struct HealthCheck {
  std::string name;
  Builtin builtin = Builtin::kNone;
  std::string command;  // when builtin is kNone
  std::chrono::milliseconds interval{10000};
  std::chrono::milliseconds timeout{30000};
  FailureAction on_failure = FailureAction::kReboot;
  // neuron: the shell command whose output's first JSON line is a neuron-monitor report (kNeuronSource when empty);
  // a test gives `cat report.json`.
  std::string source;
  // efa: the sysfs directory of RDMA devices (kEfaRoot when empty); a test gives a tree of its own.
  std::string root;
};

struct DeepCheck {
  std::string command;  // empty: allot's own stress program
  std::chrono::milliseconds timeout{600000};
};

struct HealthConfig {
  std::vector<HealthCheck> checks;
  DeepCheck deep;
};

// One report of neuron-monitor (it prints one every period, 5 s by default, and runs on until stopped).
inline constexpr const char* kNeuronSource = "neuron-monitor | head -n 1";
inline constexpr const char* kEfaRoot = "/sys/class/infiniband";

// nvidia-gpu, dcgm, neuron, efa and node basics, every 10 s (DCGM's quick diagnostic every 5 min).
HealthConfig default_health_config();

// Reads the YAML above; `origin` names the file in messages. Unknown keys, duplicate names, a check with both
// or neither of builtin and command, and non-positive times are errors.
Result<HealthConfig> parse_health_config(const std::string& text, const std::string& origin);

}  // namespace allot::agent
