#include "agent/health_monitor.h"

#include <algorithm>
#include <sstream>

#include "agent/xid_table.h"

namespace allot::agent {

HealthMonitor::HealthMonitor(MonitorOptions options, std::function<void(const std::string&)> say)
    : opt_(std::move(options)), say_(std::move(say)) {}

HealthMonitor::~HealthMonitor() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthMonitor::start() {
  if (thread_.joinable()) return;
  refresh_faults();
  if (!opt_.kmsg_path.empty()) {
    // Opened now, before any replica runs: what the kernel logs from here on is this agent's to judge.
    if (auto r = KmsgReader::open(opt_.kmsg_path)) {
      kmsg_.emplace(std::move(*r));
      say_("XID errors are read from the kernel log " + opt_.kmsg_path);
    } else {
      kmsg_note_ = "XIDs not read: " + r.error().message;
      say_(kmsg_note_);
    }
  }
  thread_ = std::thread([this] { loop(); });
}

nlohmann::json HealthMonitor::report() const {
  MutexLock lock(mu_);
  nlohmann::json checks = nlohmann::json::array();
  for (const HealthCheck& c : opt_.config.checks)
    if (auto it = results_.find(c.name); it != results_.end()) checks.push_back(check_result_json(it->second));
  nlohmann::json out = {{"checks", checks}, {"configured", opt_.config.checks.size()},
                        {"deep_check", {{"status", deep_status_}, {"detail", deep_detail_}}}};
  // Only while true: absent means false, and a server older than the key refuses only the heartbeats of that moment.
  if (exit_done_ < exit_asked_) out["exit_checks_running"] = true;
  return out;
}

void HealthMonitor::check_now() {
  {
    MutexLock lock(mu_);
    ++exit_asked_;
    const auto now = std::chrono::steady_clock::now();
    for (const HealthCheck& c : opt_.config.checks)
      if (c.interval <= kFastCheckInterval) due_[c.name] = now;
  }
  cv_.notify_all();
}

bool HealthMonitor::exit_checks_running() const {
  MutexLock lock(mu_);
  return exit_done_ < exit_asked_;
}

void HealthMonitor::read_kernel_log() {
  if (!kmsg_) return;
  auto lines = kmsg_->read_new();
  if (!lines) {
    say_(lines.error().message);
    return;
  }
  std::vector<std::string> told;
  {
    MutexLock lock(mu_);
    for (const std::string& line : *lines) {
      auto x = parse_xid(line);
      if (!x) continue;
      const XidMeaning m = xid_meaning(x->xid);
      told.push_back("kernel log: " + x->text + " -> " + xid_action_name(m.action));
      if (m.action == XidAction::kIgnore) continue;
      auto& list = m.action == XidAction::kJobOnly ? job_xids_ : node_xids_;
      // Bounded: a driver that logs the same XID in a loop fills neither the memory nor the check's detail.
      if (list.size() < 16 && std::find_if(list.begin(), list.end(), [&](const XidEvent& e) {
                                return e.xid == x->xid && e.device == x->device;
                              }) == list.end())
        list.push_back(*x);
    }
  }
  for (const auto& t : told) say_(t);
}

void HealthMonitor::request_deep_check() {
  {
    MutexLock lock(mu_);
    if (deep_requested_ || deep_status_ != "none") return;
    deep_requested_ = true;
  }
  cv_.notify_all();
}

void HealthMonitor::reboot() {
  {
    MutexLock lock(mu_);
    cleared_through_ = lines_seen_;
    node_xids_.clear();  // the reboot reset the GPUs; an XID that comes back is logged again
    job_xids_.clear();
    results_.clear();
    due_.clear();
    ++generation_;
    deep_status_ = "none";
    deep_detail_.clear();
    deep_requested_ = false;
  }
  refresh_faults();
  cv_.notify_all();
}

void HealthMonitor::refresh_faults() {
  if (opt_.faults_path.empty()) return;
  int cleared_through = 0;
  {
    MutexLock lock(mu_);
    cleared_through = cleared_through_;
  }
  FaultFile f = read_faults(opt_.faults_path, cleared_through);
  bool hang = false;
  for (const auto& x : f.faults) hang |= x.kind == EmulatedFault::Kind::kHang;
  std::vector<std::string> fresh;
  {
    MutexLock lock(mu_);
    faults_ = f.faults;
    lines_seen_ = f.lines;
    for (const auto& e : f.errors)
      if (told_errors_.insert(e).second) fresh.push_back(e);
  }
  for (const auto& e : fresh) say_(opt_.faults_path + ": " + e + "; the line is ignored");
  if (hang != hung_) say_(hang ? "emulated fault: hang (no more heartbeats until the line is removed)" : "emulated hang cleared");
  hung_ = hang;
}

void HealthMonitor::run_deep() {
  bool inject = false;
  {
    MutexLock lock(mu_);
    for (const auto& f : faults_) inject |= f.kind == EmulatedFault::Kind::kDeepCheckFail;
    deep_status_ = "running";
    deep_requested_ = false;
  }
  const DeepCheck& d = opt_.config.deep;
  CommandOutcome o;
  std::string what;
  if (!d.command.empty()) {
    what = "\"" + d.command + "\"";
    o = run_shell(d.command, d.timeout);
  } else {
    what = "allot's stress program";
    std::ostringstream secs;
    secs << opt_.stress_seconds;
    std::map<std::string, std::string> env;
    if (inject) env["ALLOT_STRESS_INJECT_FAULT"] = "1";
    o = run_with_timeout({opt_.stress_program, "deep-check", "--seconds", secs.str()}, d.timeout, env);
  }
  std::string out = o.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  std::string status, detail;
  if (!o.started) status = "failed", detail = "cannot start " + what;
  else if (o.timed_out) status = "failed", detail = what + " took longer than " + std::to_string(d.timeout.count()) + " ms";
  else if (o.exit_code != 0) status = "failed", detail = what + " exited with code " + std::to_string(o.exit_code) + (out.empty() ? "" : ": " + out);
  else status = "passed", detail = out.empty() ? what + " passed" : out;
  say_("deep health check " + status + ": " + detail);
  MutexLock lock(mu_);
  deep_status_ = status;
  deep_detail_ = detail;
}

void HealthMonitor::loop() {
  auto last_read = std::chrono::steady_clock::now();
  for (;;) {
    bool deep = false;
    std::vector<HealthCheck> due;
    uint64_t generation = 0;
    uint64_t asked = 0;
    {
      MutexLock lock(mu_);
      // A loop here, not a predicate: the analysis sees that the lock is held around the read (thread_annotations.h).
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
      while (!stop_)
        if (cv_.wait_until(lock.native(), until) == std::cv_status::timeout) break;
      if (stop_) return;
      const auto now = std::chrono::steady_clock::now();
      for (const HealthCheck& c : opt_.config.checks) {
        auto it = due_.find(c.name);
        if (it == due_.end() || now >= it->second) {
          due.push_back(c);
          due_[c.name] = now + c.interval;
        }
      }
      deep = deep_requested_;
      generation = generation_;
      asked = exit_asked_;
    }
    // The faults file is read before every round of checks, and often enough besides to notice a hang.
    const auto now = std::chrono::steady_clock::now();
    if (!due.empty() || deep || now - last_read >= std::chrono::milliseconds(200)) {
      refresh_faults();
      last_read = now;
    }
    if (!due.empty()) read_kernel_log();
    CheckContext ctx = opt_.context;
    ctx.efa = &efa_;
    bool gpu_due = false;
    for (const HealthCheck& c : due) gpu_due |= c.builtin == Builtin::kNvidiaGpu;
    {
      MutexLock lock(mu_);
      ctx.faults = faults_;
      ctx.xids = node_xids_;
      ctx.xids.insert(ctx.xids.end(), job_xids_.begin(), job_xids_.end());
      if (gpu_due) job_xids_.clear();  // shown once, by this run
      ctx.kernel_log_note = kmsg_note_;
    }
    for (const HealthCheck& c : due) {
      CheckResult r = run_check(c, ctx);
      MutexLock lock(mu_);
      if (generation != generation_) break;  // a reboot came between: this result describes the old boot
      auto prev = results_.find(c.name);
      const bool changed = prev == results_.end() || prev->second.status != r.status || prev->second.detail != r.detail;
      if (changed && r.status == CheckStatus::kFailed) say_("health check " + c.name + " failed: " + r.detail);
      else if (changed && prev != results_.end() && prev->second.status == CheckStatus::kFailed)
        say_("health check " + c.name + " " + check_status_name(r.status) + " again");
      results_[c.name] = r;
    }
    {
      // Every check due after check_now() has run (or none was fast): the health known now is from after the exit.
      MutexLock lock(mu_);
      exit_done_ = std::max(exit_done_, asked);
    }
    if (deep) run_deep();
  }
}

}  // namespace allot::agent
