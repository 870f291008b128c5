#pragma once
// Runs the configured health checks on their own thread, each at its interval, and keeps their last results
// for the heartbeats (agent/health_config.h, agent/health_checks.h). It also runs the deep health check when
// the server asks for one, and forgets what a reboot fixes.
//
// Thread-safety: every public member may be called from any thread.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/health_checks.h"
#include "agent/health_config.h"
#include "common/thread_annotations.h"

namespace allot::agent {

struct MonitorOptions {
  HealthConfig config;
  CheckContext context;          // faults are filled in from faults_path at each run
  std::string faults_path;       // --emulate-faults; empty: none
  std::string kmsg_path;         // the kernel log to read XIDs from (agent/kmsg.h); empty: none
  std::string stress_program;    // the allot binary, run as `allot deep-check` for the built-in deep check
  double stress_seconds = 2.0;
};

class HealthMonitor {
 public:
  HealthMonitor(MonitorOptions options, std::function<void(const std::string&)> say);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  void start() EXCLUDES(mu_);
  // {"checks": [result...], "deep_check": {"status": "none|running|passed|failed", "detail"}}
  nlohmann::json report() const EXCLUDES(mu_);
  // An emulated `hang` is in the faults file: the agent stops heartbeating, as a hung node would.
  bool hung() const { return hung_; }
  // Runs the deep check once (again after a reboot); a request while one runs or has a result is a no-op.
  void request_deep_check() EXCLUDES(mu_);
  // A replica died abnormally (a signal or a non-zero exit): every fast check (interval at most
  // kFastCheckInterval) runs at once, after the kernel log is read, so that the node's health is known before the
  // exit is judged (docs/resiliency.md, "One fault, one restart").
  void check_now() EXCLUDES(mu_);
  // From check_now() until a round of checks that started after it has finished.
  bool exit_checks_running() const EXCLUDES(mu_);
  static constexpr std::chrono::milliseconds kFastCheckInterval{60000};
  // An emulated reboot: the faults written so far are cleared (but those marked persistent), every result is
  // forgotten and every check runs again at once.
  void reboot() EXCLUDES(mu_);

 private:
  void loop() EXCLUDES(mu_);
  void run_deep() EXCLUDES(mu_);
  void refresh_faults() EXCLUDES(mu_);
  // Reads what the kernel logged since the last read and keeps its XIDs (agent/kmsg.h).
  void read_kernel_log() EXCLUDES(mu_);

  MonitorOptions opt_;  // set by the constructor only
  std::function<void(const std::string&)> say_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, CheckResult> results_ GUARDED_BY(mu_);                      // by check name
  std::map<std::string, std::chrono::steady_clock::time_point> due_ GUARDED_BY(mu_);  // by check name
  int cleared_through_ GUARDED_BY(mu_) = 0;  // the faults file's lines a reboot cleared (agent/emulated_faults.h)
  int lines_seen_ GUARDED_BY(mu_) = 0;       // lines of the faults file at its last reading
  std::set<std::string> told_errors_ GUARDED_BY(mu_);  // fault-file errors already logged
  std::vector<EmulatedFault> faults_ GUARDED_BY(mu_);
  std::optional<KmsgReader> kmsg_;  // opened by start() (monitor thread only after that)
  std::string kmsg_note_;           // why the kernel log is not read: written by start() before the thread starts
  // XIDs of this boot that are the node's (reboot, replace): kept until a reboot
  std::vector<XidEvent> node_xids_ GUARDED_BY(mu_);
  std::vector<XidEvent> job_xids_ GUARDED_BY(mu_);  // job-only XIDs not yet shown by a run of the GPU check
  EfaWatch efa_;                                     // the efa check's previous reading; the checks' thread only
  uint64_t exit_asked_ GUARDED_BY(mu_) = 0;          // check_now() calls
  uint64_t exit_done_ GUARDED_BY(mu_) = 0;           // of those, the ones answered by a finished round
  std::string deep_status_ GUARDED_BY(mu_) = "none";
  std::string deep_detail_ GUARDED_BY(mu_);
  bool deep_requested_ GUARDED_BY(mu_) = false;
  uint64_t generation_ GUARDED_BY(mu_) = 0;  // bumped by reboot(): results of checks that started before it are dropped
  std::atomic<bool> hung_{false};
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace allot::agent
