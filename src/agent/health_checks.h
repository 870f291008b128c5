#pragma once
// Runs the health checks of agent/health_config.h: commands with a deadline, and the built-in checks on real
// tools (nvidia-smi, dcgmi, neuron-monitor, the EFA driver's sysfs counters) or on an emulated node's devices (agent/emulated_faults.h).
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/device_counters.h"
#include "agent/emulated_faults.h"
#include "agent/health_config.h"
#include "agent/kmsg.h"

namespace allot::agent {

enum class CheckStatus { kPassed, kFailed, kSkipped };
const char* check_status_name(CheckStatus s);

struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::kSkipped;
  std::string detail;                       // what was seen: the fault, or why the check was skipped
  FailureAction action = FailureAction::kReboot;  // what a failure asks for
  int64_t at_ms = 0;                        // when it ran (Unix milliseconds)
};
nlohmann::json check_result_json(const CheckResult& r);

struct CommandOutcome {
  bool started = false;   // false: /bin/sh could not be started
  bool timed_out = false;
  int exit_code = -1;
  std::string output;     // stdout and stderr, the first 4 KiB
};
// Runs argv with stdin from /dev/null and a deadline; the process group is killed when it passes.
CommandOutcome run_with_timeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                const std::map<std::string, std::string>& extra_env = {});
CommandOutcome run_shell(const std::string& command, std::chrono::milliseconds timeout);

// True when `tool` is an executable on $PATH (or /usr/bin, /usr/sbin, /usr/local/bin when PATH is unset).
bool tool_exists(const std::string& tool);

// What a built-in check looks at.
struct CheckContext {
  bool emulated = false;          // the node's devices are emulated: look at `faults`, not at the tools
  std::string accelerator_kind;   // nvidia-gpu, neuron, none
  int accelerators = 0;
  std::string work_dir;           // the disk whose free space node-basics checks
  std::vector<EmulatedFault> faults;
  // XID errors from the kernel log (agent/kmsg.h), judged by agent/xid_table.h in the nvidia-gpu check: those that
  // are the node's (reboot, replace) for the whole boot, those that are the job's only when they are new.
  std::vector<XidEvent> xids;
  std::string kernel_log_note;    // why the kernel log is not read, if it is not (said in the check's detail)
  // The efa check's previous reading (its counters are judged by their rise); none: every reading is a first one.
  EfaWatch* efa = nullptr;
};

CheckResult run_check(const HealthCheck& check, const CheckContext& ctx);

// What XID errors say about the node: empty `problems` when none is the node's. Job-only XIDs are named in `jobs`.
struct XidJudgement {
  std::string problems;
  bool replace = false;
  std::string jobs;
};
XidJudgement judge_xids(const std::vector<XidEvent>& xids);

// Parses `nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,temperature.gpu
// --format=csv,noheader,nounits`; empty when every GPU looks healthy, else what is wrong.
std::string judge_nvidia_query(const std::string& csv, int expected_gpus);

}  // namespace allot::agent
