#include "agent/health_checks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/xid_table.h"

namespace allot::agent {

const char* check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPassed: return "passed";
    case CheckStatus::kFailed: return "failed";
    case CheckStatus::kSkipped: return "skipped";
  }
  return "skipped";
}

nlohmann::json check_result_json(const CheckResult& r) {
  return {{"name", r.name},
          {"status", check_status_name(r.status)},
          {"detail", r.detail},
          {"on_failure", failure_action_name(r.action)},
          {"at_ms", r.at_ms}};
}

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr size_t kOutputKept = 4096;

}  // namespace

CommandOutcome run_with_timeout(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                const std::map<std::string, std::string>& extra_env) {
  CommandOutcome out;
  if (argv.empty()) return out;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return out;
  std::vector<std::string> env_text;
  for (char** e = environ; e && *e; ++e) env_text.emplace_back(*e);
  for (const auto& [k, v] : extra_env) env_text.push_back(k + "=" + v);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return out;
  }
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec: the agent has other threads.
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execve(args[0], args.data(), envp.data());  // callers pass an absolute path
    _exit(127);
  }
  close(fds[1]);
  out.started = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  bool exited = false;
  char buf[1024];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 20) > 0) {
      ssize_t n = read(fds[0], buf, sizeof buf);
      if (n > 0 && out.output.size() < kOutputKept) out.output.append(buf, static_cast<size_t>(std::min<ssize_t>(n, kOutputKept - out.output.size())));
    }
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) exited = true;
    if (exited) {
      // Drain what is left without blocking on grandchildren that keep the pipe open.
      while (poll(&p, 1, 0) > 0) {
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n <= 0) break;
        if (out.output.size() < kOutputKept) out.output.append(buf, static_cast<size_t>(std::min<ssize_t>(n, kOutputKept - out.output.size())));
      }
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      out.timed_out = true;
      break;
    }
  }
  close(fds[0]);
  if (!out.timed_out) out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return out;
}

CommandOutcome run_shell(const std::string& command, std::chrono::milliseconds timeout) {
  return run_with_timeout({"/bin/sh", "-c", command}, timeout);
}

bool tool_exists(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
  std::stringstream ss(dirs);
  for (std::string d; std::getline(ss, d, ':');) {
    if (d.empty()) continue;
    if (access((d + "/" + tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

XidJudgement judge_xids(const std::vector<XidEvent>& xids) {
  XidJudgement out;
  for (const XidEvent& e : xids) {
    const XidMeaning m = xid_meaning(e.xid);
    const std::string what = "XID " + std::to_string(e.xid) + " on " + e.device + " (" + std::string(m.what) + ")";
    switch (m.action) {
      case XidAction::kIgnore: break;
      case XidAction::kJobOnly:
        if (out.jobs.find(what) == std::string::npos)
          out.jobs += (out.jobs.empty() ? "" : "; ") + what + ": an application error, charged to the job, not the node";
        break;
      case XidAction::kReboot:
      case XidAction::kReplace:
        if (out.problems.find(what) != std::string::npos) break;
        out.problems += (out.problems.empty() ? "" : "; ") + what;
        out.replace |= m.action == XidAction::kReplace;
        break;
    }
  }
  return out;
}

std::string judge_nvidia_query(const std::string& csv, int expected_gpus) {
  std::stringstream in(csv);
  std::string problems;
  int seen = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) {
      c.erase(0, c.find_first_not_of(' '));
      while (!c.empty() && (c.back() == ' ' || c.back() == '\r')) c.pop_back();
      cells.push_back(c);
    }
    ++seen;
    if (cells.size() < 3) {
      problems += (problems.empty() ? "" : "; ") + std::string("unreadable line \"") + line + "\"";
      continue;
    }
    const std::string& gpu = cells[0];
    if (cells[1] != "[N/A]" && cells[1] != "N/A" && cells[1] != "0")
      problems += (problems.empty() ? "" : "; ") + cells[1] + " uncorrectable ECC errors on GPU " + gpu;
    char* end = nullptr;
    long temp = std::strtol(cells[2].c_str(), &end, 10);
    if (end != cells[2].c_str() && temp >= 90)
      problems += (problems.empty() ? "" : "; ") + std::string("GPU ") + gpu + " at " + cells[2] + " C";
  }
  if (seen < expected_gpus)
    problems += (problems.empty() ? "" : "; ") + std::string("lost GPUs: nvidia-smi shows ") + std::to_string(seen) +
                " of " + std::to_string(expected_gpus);
  return problems;
}

namespace {

CheckResult result(const HealthCheck& c, CheckStatus s, std::string detail) {
  return CheckResult{c.name, s, std::move(detail), c.on_failure, now_ms()};
}

CheckResult from_command(const HealthCheck& c, const std::string& what, const CommandOutcome& o) {
  if (!o.started) return result(c, CheckStatus::kFailed, "cannot start " + what);
  if (o.timed_out)
    return result(c, CheckStatus::kFailed, what + " took longer than " + std::to_string(c.timeout.count()) + " ms");
  if (o.exit_code != 0) {
    std::string tail = o.output.size() > 300 ? o.output.substr(o.output.size() - 300) : o.output;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    return result(c, CheckStatus::kFailed, what + " exited with code " + std::to_string(o.exit_code) + (tail.empty() ? "" : ": " + tail));
  }
  return result(c, CheckStatus::kPassed, what + " passed");
}

CheckResult node_basics(const HealthCheck& c, const CheckContext& ctx) {
  std::string problems, facts;
  struct statvfs fs {};
  if (statvfs(ctx.work_dir.empty() ? "/" : ctx.work_dir.c_str(), &fs) == 0 && fs.f_blocks > 0) {
    const double free_share = static_cast<double>(fs.f_bavail) / static_cast<double>(fs.f_blocks);
    const uint64_t free_mib = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize / (1024 * 1024);
    if (free_share < 0.01 || free_mib < 64)
      problems += "disk full: " + std::to_string(free_mib) + " MiB free under " + ctx.work_dir;
    facts += std::to_string(static_cast<int>(free_share * 100)) + "% disk free";
  }
  std::ifstream mi("/proc/meminfo");
  long total = 0, avail = -1;
  for (std::string k; mi >> k;) {
    long v = 0;
    mi >> v;
    if (k == "MemTotal:") total = v;
    if (k == "MemAvailable:") avail = v;
    mi.ignore(64, '\n');
  }
  if (total > 0 && avail >= 0) {
    const double share = static_cast<double>(avail) / static_cast<double>(total);
    if (share < 0.02) problems += (problems.empty() ? "" : "; ") + std::string("memory pressure: ") + std::to_string(avail / 1024) + " MiB available";
    facts += (facts.empty() ? "" : ", ") + std::to_string(static_cast<int>(share * 100)) + "% memory available";
  }
  // A clock before 2020 means it was never set; certificates and checkpoints' times go wrong with it.
  if (std::time(nullptr) < 1577836800) problems += (problems.empty() ? "" : "; ") + std::string("the system clock is not set");
  if (!problems.empty()) return result(c, CheckStatus::kFailed, problems);
  return result(c, CheckStatus::kPassed, facts.empty() ? "disk, memory and clock look right" : facts);
}

CheckResult emulated_gpu(const HealthCheck& c, const CheckContext& ctx) {
  std::string problems;
  bool replace = false;
  for (const auto& f : ctx.faults) {
    if (f.gpu >= ctx.accelerators && (f.kind == EmulatedFault::Kind::kXid || f.kind == EmulatedFault::Kind::kEcc)) continue;
    if (f.kind == EmulatedFault::Kind::kXid) {
      // The same table as real XIDs: an application's error (XID 13, 31, 43 ...) is no fault of the node.
      const XidMeaning m = xid_meaning(f.xid);
      if (m.action == XidAction::kIgnore || m.action == XidAction::kJobOnly) continue;
      problems += (problems.empty() ? "" : "; ") + std::string("XID ") + std::to_string(f.xid) + " on GPU " + std::to_string(f.gpu);
      replace |= m.action == XidAction::kReplace;
    } else if (f.kind == EmulatedFault::Kind::kEcc) {
      problems += (problems.empty() ? "" : "; ") + std::string("uncorrectable ECC errors on GPU ") + std::to_string(f.gpu);
    }
  }
  if (problems.empty())
    return result(c, CheckStatus::kPassed, std::to_string(ctx.accelerators) + " emulated GPU(s) healthy");
  auto r = result(c, CheckStatus::kFailed, problems + " (emulated)");
  if (replace) r.action = FailureAction::kReplace;
  return r;
}

// The devices themselves: nvidia-smi, or the emulated devices' faults.
CheckResult gpu_devices(const HealthCheck& c, const CheckContext& ctx) {
  if (ctx.emulated) return emulated_gpu(c, ctx);
  if (!tool_exists("nvidia-smi")) return result(c, CheckStatus::kSkipped, "nvidia-smi is not installed");
  auto o = run_with_timeout({"/bin/sh", "-c",
                             "nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,temperature.gpu "
                             "--format=csv,noheader,nounits"},
                            c.timeout);
  if (!o.started || o.timed_out || o.exit_code != 0) return from_command(c, "nvidia-smi --query-gpu", o);
  std::string problems = judge_nvidia_query(o.output, ctx.accelerators);
  if (!problems.empty()) return result(c, CheckStatus::kFailed, problems);
  return result(c, CheckStatus::kPassed, std::to_string(ctx.accelerators) + " GPU(s) healthy (nvidia-smi)");
}

// The devices and the XIDs of the kernel log together: an XID that is the node's fails the check even where
// nvidia-smi still answers (or is missing); the worse action of the two wins.
CheckResult nvidia_gpu(const HealthCheck& c, const CheckContext& ctx) {
  if (ctx.accelerator_kind != "nvidia-gpu") return result(c, CheckStatus::kSkipped, "no NVIDIA GPUs on this node");
  CheckResult r = gpu_devices(c, ctx);
  const XidJudgement x = judge_xids(ctx.xids);
  if (!x.problems.empty()) {
    r.detail = x.problems + (r.status == CheckStatus::kFailed ? "; " + r.detail : "");
    r.status = CheckStatus::kFailed;
    if (x.replace) r.action = FailureAction::kReplace;
  } else if (!x.jobs.empty()) {
    r.detail += "; " + x.jobs;
  }
  if (!ctx.kernel_log_note.empty()) r.detail += "; " + ctx.kernel_log_note;
  return r;
}

CheckResult dcgm(const HealthCheck& c, const CheckContext& ctx) {
  if (ctx.accelerator_kind != "nvidia-gpu") return result(c, CheckStatus::kSkipped, "no NVIDIA GPUs on this node");
  if (ctx.emulated) return result(c, CheckStatus::kSkipped, "DCGM is not emulated (the gpu check sees emulated faults)");
  if (!tool_exists("dcgmi")) return result(c, CheckStatus::kSkipped, "DCGM (dcgmi) is not installed");
  return from_command(c, "dcgmi diag -r 1", run_shell("dcgmi diag -r 1", c.timeout));
}

// A device judgement into the check's result, as XIDs are: the node's errors fail the check (replace wins over the
// check's own on_failure), job-only ones are named in a passing check's detail.
CheckResult from_judgement(const HealthCheck& c, const DeviceJudgement& j, const std::string& healthy) {
  if (!j.problems.empty()) {
    auto r = result(c, CheckStatus::kFailed, j.problems);
    if (j.replace) r.action = FailureAction::kReplace;
    return r;
  }
  return result(c, CheckStatus::kPassed, healthy + (j.jobs.empty() ? "" : "; " + j.jobs + " (the job's, not the node's)"));
}

CheckResult neuron(const HealthCheck& c, const CheckContext& ctx) {
  if (ctx.accelerator_kind != "neuron") return result(c, CheckStatus::kSkipped, "no Neuron devices on this node");
  if (ctx.emulated) return result(c, CheckStatus::kPassed, std::to_string(ctx.accelerators) + " emulated Neuron device(s) healthy");
  const std::string source = c.source.empty() ? kNeuronSource : c.source;
  if (c.source.empty() && !tool_exists("neuron-monitor")) return result(c, CheckStatus::kSkipped, "neuron-monitor is not installed");
  auto o = run_shell(source, c.timeout);
  if (!o.started || o.timed_out) return from_command(c, "\"" + source + "\"", o);
  auto j = judge_neuron_report(o.output);
  if (!j) return result(c, CheckStatus::kFailed, "\"" + source + "\": " + j.error().message);
  return from_judgement(c, *j, "Neuron devices healthy (neuron-monitor)");
}

CheckResult efa(const HealthCheck& c, const CheckContext& ctx) {
  if (ctx.emulated) {
    for (const auto& f : ctx.faults)
      if (f.kind == EmulatedFault::Kind::kEfaDown) return result(c, CheckStatus::kFailed, "EFA device down (emulated)");
    return result(c, CheckStatus::kPassed, "emulated EFA up");
  }
  const std::string root = c.root.empty() ? kEfaRoot : c.root;
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return result(c, CheckStatus::kSkipped, "no " + root + " (no RDMA devices on this node)");
  auto now = read_efa(root);
  if (!now) return result(c, CheckStatus::kFailed, now.error().message);
  if (now->devices == 0) return result(c, CheckStatus::kSkipped, "no EFA device under " + root);
  EfaWatch none;
  EfaWatch& watch = ctx.efa ? *ctx.efa : none;
  const DeviceJudgement j = judge_efa(watch.last, *now);
  watch.last = std::move(*now);
  return from_judgement(c, j, std::to_string(watch.last->devices) + " EFA device(s) up, no new errors");
}

}  // namespace

CheckResult run_check(const HealthCheck& check, const CheckContext& ctx) {
  switch (check.builtin) {
    case Builtin::kNone: return from_command(check, "\"" + check.command + "\"", run_shell(check.command, check.timeout));
    case Builtin::kNodeBasics: return node_basics(check, ctx);
    case Builtin::kNvidiaGpu: return nvidia_gpu(check, ctx);
    case Builtin::kDcgm: return dcgm(check, ctx);
    case Builtin::kNeuron: return neuron(check, ctx);
    case Builtin::kEfa: return efa(check, ctx);
  }
  return result(check, CheckStatus::kSkipped, "unknown check");
}

}  // namespace allot::agent
