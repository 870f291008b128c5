#pragma once
// What AWS Neuron devices and EFA adapters report about their own errors (docs/resiliency.md, "Neuron and EFA
// errors"), judged by one table each with the four actions of the XID table (agent/xid_table.h): reboot, replace,
// job-only, ignore.
//
// Neuron: one report of `neuron-monitor` (one JSON object per line on its stdout), its parts
//   system_data.neuron_hw_counters.neuron_devices[]: {neuron_device_index, mem_ecc_corrected, mem_ecc_uncorrected,
//                                                      sram_ecc_corrected, sram_ecc_uncorrected}
//   neuron_runtime_data[].report.execution_stats.error_summary: {generic, numerical, transient, model, runtime,
//                                                                hardware}   (inference_stats in older releases)
//   neuron_hardware_info.error: set when the driver does not answer
// EFA: the counters the efa driver exposes in sysfs, read from ROOT/<device>/ports/<port>/hw_counters/<name> and
// ROOT/<device>/hw_counters/<name> (ROOT: /sys/class/infiniband), and each port's ROOT/<device>/ports/<port>/state
// ("4: ACTIVE"). A device is EFA's when it has the efa driver's own `lifespan` counter. Its counters count from the
// driver's load, so what is judged is the rise since the previous reading (EfaWatch keeps it).
//
// Neither neuron-monitor nor an EFA device exists where allot is tested: the tests feed a report file and a sysfs
// tree of files (tests/unit/agent_device_counters_test.cpp), which is the honest substitute.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "agent/xid_table.h"
#include "core/model/result.h"

namespace allot::agent {

// What a counter's rise (EFA) or a non-zero count (Neuron) asks for.
struct CounterMeaning {
  XidAction action = XidAction::kIgnore;
  std::string_view what;
  bool known = false;  // false: not in the table; ignored (the drivers add counters of traffic, not of errors)
};
CounterMeaning neuron_counter_meaning(std::string_view counter);
CounterMeaning efa_counter_meaning(std::string_view counter);

// What a device's errors say about the node, as for XIDs: empty `problems` when none is the node's; job-only errors
// are named in `jobs`.
struct DeviceJudgement {
  std::string problems;
  bool replace = false;
  std::string jobs;
};

// Judges one neuron-monitor report (the first line holding a JSON object, of `output`). An error when no line is a
// report, saying what was read.
Result<DeviceJudgement> judge_neuron_report(const std::string& output);

// One reading of the EFA counters under a sysfs root: "device/port/counter" (port "-" for the device's own) to its
// value, and "device/port" to the port's state.
struct EfaReading {
  std::map<std::string, uint64_t> counters;
  std::map<std::string, std::string> port_states;
  int devices = 0;
};
// Reads every EFA device under `root`. An error when `root` cannot be listed (the caller tells a missing root apart).
Result<EfaReading> read_efa(const std::string& root);

// Judges a reading against the one before it (none: the first reading, where only port states count: a counter's
// value since the driver loaded says nothing of now).
DeviceJudgement judge_efa(const std::optional<EfaReading>& before, const EfaReading& now);

// The previous EFA reading, kept between runs of the check. Thread-safety: the health monitor's thread only.
struct EfaWatch {
  std::optional<EfaReading> last;
};

}  // namespace allot::agent
