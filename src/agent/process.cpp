#include "agent/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <thread>

#include "agent/cgroups.h"
#include "agent/log_capture.h"
#include "agent/shim.h"

extern char** environ;

namespace allot::agent {
namespace {

// Writes a constant-size message without allocating: only async-signal-safe calls run between fork and exec.
void child_fail(int fd, const char* prefix, const char* what, int err) {
  const char* reason = err == ENOENT ? ": no such file or directory\n"
                       : err == EACCES ? ": permission denied\n"
                       : err == EPERM  ? ": operation not permitted\n"
                                       : ": cannot execute\n";
  (void)!write(fd, prefix, strlen(prefix));
  (void)!write(fd, what, strlen(what));
  (void)!write(fd, reason, strlen(reason));
  _exit(127);
}

// Writes v >= 0 in decimal into buf (room for any pid); async-signal-safe, for the shim's command line.
void decimal(char (&buf)[24], long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + v % 10), v /= 10;
  while (v > 0 && n < 23);
  int i = 0;
  while (n > 0) buf[i++] = digits[--n];
  buf[i] = '\0';
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

ProcessTable::~ProcessTable() {
  for (auto& [key, p] : procs_) {
    if (p.group > 0) kill(-p.group, SIGKILL);
    else kill(p.pid, SIGKILL);
    if (!p.cgroup.empty()) (void)kill_cgroup(p.cgroup);
    int status = 0;
    waitpid(p.pid, &status, 0);  // the shim, which exits once the replica's first process has
    if (!p.cgroup.empty()) (void)remove_cgroup(p.cgroup);
  }
}

Result<pid_t> ProcessTable::start(const std::string& key, const LaunchSpec& spec) {
  if (procs_.count(key)) return Error::exists("replica " + key + " is already running");
  if (spec.argv.empty()) return Error::invalid("replica " + key + " has no command");

  // Everything the child needs is built before fork(): after it, only async-signal-safe calls are allowed.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int c : spec.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &mask);

  // The files are opened here, by the agent, so a replica that runs as another user still writes its log
  // (which that user may not be able to open) and joins its cgroup (which it must not be able to change).
  // A log path is opened without following symlinks (agent/log_capture.h); the agent's own replicas write
  // into its pipe instead (output_fd), so it never opens a file the replica could have replaced.
  int log_fd = -1;
  if (spec.output_fd >= 0) {
    log_fd = fcntl(spec.output_fd, F_DUPFD_CLOEXEC, 0);
    if (log_fd < 0) return Error::internal(std::string("cannot use the output pipe: ") + std::strerror(errno));
  } else if (spec.log_path.empty()) {
    log_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (log_fd < 0) return Error::internal(std::string("cannot open /dev/null: ") + std::strerror(errno));
  } else {
    auto fd = open_log_for_append(spec.log_path);
    if (!fd) return fd.error();
    log_fd = *fd;
  }
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int cg_fd = spec.cgroup.empty() ? -1 : open((spec.cgroup + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  std::vector<int> more_fds;
  auto close_all = [&] {
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    if (cg_fd >= 0) close(cg_fd);
    for (int fd : more_fds) close(fd);
  };
  if (null_fd < 0 || (!spec.cgroup.empty() && cg_fd < 0)) {
    int err = errno;
    close_all();
    return Error::internal((null_fd < 0 ? std::string("cannot open /dev/null") : "cannot open cgroup " + spec.cgroup) +
                           ": " + std::strerror(err));
  }
  for (const std::string& more : spec.more_cgroups) {
    const int fd = open((more + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      close_all();
      return Error::internal("cannot open cgroup " + more + ": " + std::strerror(err));
    }
    more_fds.push_back(fd);
  }
  const pid_t parent = getpid();
  const char* work_dir = spec.work_dir.empty() ? nullptr : spec.work_dir.c_str();
  const char* private_tmp = spec.private_tmp.empty() ? nullptr : spec.private_tmp.c_str();
  const int pid_namespace = spec.pid_namespace;
  const int fd3 = spec.fd3;
  const bool switch_user = spec.run_as.has_value();
  const uid_t uid = switch_user ? spec.run_as->uid : 0;
  const gid_t gid = switch_user ? spec.run_as->gid : 0;
  std::vector<gid_t> groups = switch_user ? spec.run_as->groups : std::vector<gid_t>{};
  if (switch_user && groups.empty()) groups.push_back(gid);

  // The agent learns the replica's pid from the shim through this pipe, once the replica leads its own group.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    int err = errno;
    close_all();
    return Error::internal(std::string("cannot create a pipe: ") + std::strerror(err));
  }
  char agent_pid[24];
  decimal(agent_pid, parent);
  const char* shim_program = shim_program_.empty() ? nullptr : shim_program_.c_str();

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close_all();
    close(report[0]), close(report[1]);
    return Error::internal(std::string("fork failed: ") + std::strerror(err));
  }
  if (pid == 0) {
    // The shim (agent/shim.h). Every signal blocked (the shim takes them with sigwaitinfo, and the replica unblocks
    // them); its parent-death signal and SIGCHLD at their defaults, since a blocked signal the agent ignores would
    // be dropped, not kept pending.
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    signal(kShimDeathSignal, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, kShimDeathSignal);
    if (getppid() != parent) _exit(137);
    close(report[0]);
    const pid_t shim = getpid();
    // The replica (and all it starts) in the node's namespace for replicas; the shim itself stays in the agent's.
    if (pid_namespace >= 0 && setns(pid_namespace, CLONE_NEWPID) != 0) {
      const char why[] = "allot agent: cannot enter the replicas' PID namespace\n";
      (void)!write(log_fd, why, sizeof why - 1);
      _exit(127);
    }
    pid_t replica = fork();
    if (replica < 0) {
      // In the namespace, ENOMEM also means that its init has exited (the agent makes a new one).
      const char why[] = "allot agent: cannot fork the replica's process (the node is out of processes or memory, or the replicas' PID namespace has ended)\n";
      (void)!write(log_fd, why, sizeof why - 1);
      _exit(127);
    }
    if (replica == 0) {
      setpgid(0, 0);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD, SIGHUP}) signal(sig, SIG_DFL);
      dup2(null_fd, STDIN_FILENO);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      // "0" moves the writing process; before exec, so nothing the replica starts is ever outside it.
      if (cg_fd >= 0 && write(cg_fd, "0", 1) != 1) child_fail(STDERR_FILENO, "allot agent: cannot join cgroup ", spec.cgroup.c_str(), errno);
      for (size_t i = 0; i < more_fds.size(); ++i)
        if (write(more_fds[i], "0", 1) != 1) child_fail(STDERR_FILENO, "allot agent: cannot join cgroup ", spec.more_cgroups[i].c_str(), errno);
      if (!spec.cpus.empty()) sched_setaffinity(0, sizeof mask, &mask);  // best effort, as taskset
      // Entered before the switch of user: the directory is the replica's, but the agent's work directory
      // above it need not be open to that user.
      if (work_dir && chdir(work_dir) != 0) child_fail(STDERR_FILENO, "allot agent: cannot enter ", work_dir, errno);
      // The job's own /tmp: a mount namespace whose mounts do not propagate back to the node, with the job's
      // directory bound over /tmp, so no other team's replica sees or plants files in it.
      if (private_tmp && (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                          mount(private_tmp, "/tmp", nullptr, MS_BIND, nullptr) != 0))
        child_fail(STDERR_FILENO, "allot agent: cannot give the replica its private /tmp ", private_tmp, errno);
      if (switch_user) {
        // Groups first (they need root), then the group, then the user; each checked, and root must be gone
        // for good: a setuid that silently failed would run the job as root.
        if (setgroups(groups.size(), groups.data()) != 0 || setgid(gid) != 0 || setuid(uid) != 0 || getuid() != uid ||
            geteuid() != uid || getgid() != gid || getegid() != gid || (uid != 0 && setuid(0) == 0))
          child_fail(STDERR_FILENO, "allot agent: cannot switch to the replica's user", "", errno);
      }
      // The replica's first process dies with its shim (which is root, so the replica's user cannot kill it): a
      // node whose agent is gone is treated as failed by the server, and its jobs run again elsewhere, so a
      // survivor here would only compete with its own restart. Set after the switch of user, which clears it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      // The parent as /proc names it: in the replicas' PID namespace getppid() is 0 (the shim is outside it).
      if ((pid_namespace >= 0 ? host_parent() : getppid()) != shim) _exit(137);
      // Nothing the replica executes gains privileges (setuid binaries, file capabilities): the user it runs as is
      // all it ever has.
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail(STDERR_FILENO, "allot agent: cannot set no_new_privs", "", errno);
      // Last, once no other fd of the child is needed: dup2 clears close-on-exec on its copy (an fd already at 3
      // keeps the flag, which is cleared by hand).
      if (fd3 >= 0 && (fd3 == 3 ? fcntl(3, F_SETFD, 0) : dup2(fd3, 3)) < 0)
        child_fail(STDERR_FILENO, "allot agent: cannot pass the replica its fd 3", "", errno);
      // execvp searches the PATH of the environment it runs in, which is the replica's from here on.
      environ = envp.data();
      execvp(argv[0], argv.data());
      child_fail(STDERR_FILENO, "allot agent: cannot run ", argv[0], errno);
    }
    setpgid(replica, replica);  // also in the replica, so its group exists whichever runs first
    (void)!write(report[1], &replica, sizeof replica);
    // Nothing of the agent's but its stderr (the shim's few lines go to the agent's log): not its sockets, not the
    // replica's log or cgroup.
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    close_range(3, ~0U, 0);
    if (shim_program) {
      char replica_pid[24];
      decimal(replica_pid, replica);
      // argv[0] "allot", not the path: `ps` then reads `allot internal-replica-shim AGENT REPLICA`.
      const char* shim_argv[] = {"allot", kShimCommand, agent_pid, replica_pid, nullptr};
      char* no_env[] = {nullptr};
      execve(shim_program, const_cast<char* const*>(shim_argv), no_env);
      // Cannot exec the allot binary (replaced, removed): this fork supervises instead, the same code.
    }
    supervise_replica(parent, replica);
  }
  close(report[1]);
  pid_t replica = -1;
  for (ssize_t got = 0; got < static_cast<ssize_t>(sizeof replica);) {
    const ssize_t r = read(report[0], reinterpret_cast<char*>(&replica) + got, sizeof replica - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      replica = -1;  // the shim could not fork it: it wrote why to the log and exits 127
      break;
    }
    got += r;
  }
  close(report[0]);
  close_all();
  procs_[key] = Proc{pid, replica > 0 ? replica : 0, std::nullopt, spec.cgroup, false};
  return replica > 0 ? replica : pid;
}

void ProcessTable::stop(const std::string& key, Clock::time_point now) { stop(key, now, grace_); }

void ProcessTable::stop(const std::string& key, Clock::time_point now, std::chrono::milliseconds grace) {
  auto it = procs_.find(key);
  if (it == procs_.end()) return;
  if (it->second.kill_at) {
    it->second.kill_at = std::min(*it->second.kill_at, now + grace);
    return;
  }
  if (it->second.group > 0) kill(-it->second.group, SIGTERM);
  it->second.kill_at = now + grace;
}

std::vector<Exited> ProcessTable::poll(Clock::time_point now) {
  std::vector<Exited> out;
  for (auto it = procs_.begin(); it != procs_.end();) {
    Proc& p = it->second;
    int status = 0;
    pid_t r = waitpid(p.pid, &status, WNOHANG);
    if (r == p.pid || (r < 0 && errno == ECHILD)) {
      // The shim exits as the replica's first process did (agent/shim.h), after it; whatever that one left behind
      // in its group (and its cgroup) goes with it.
      if (p.group > 0) kill(-p.group, SIGKILL);
      if (!p.cgroup.empty()) (void)kill_cgroup(p.cgroup, 0);
      out.push_back({it->first, p.group > 0 ? p.group : p.pid, r == p.pid ? exit_code_of(status) : 255,
                     p.kill_at.has_value(), p.cgroup, r == p.pid && WIFEXITED(status)});
      it = procs_.erase(it);
      continue;
    }
    if (p.kill_at && now >= *p.kill_at && !p.killed) {
      if (p.group > 0) kill(-p.group, SIGKILL);
      if (!p.cgroup.empty()) (void)kill_cgroup(p.cgroup, 0);
      p.killed = true;  // escalate once
    }
    ++it;
  }
  return out;
}

std::optional<pid_t> ProcessTable::pid(const std::string& key) const {
  auto it = procs_.find(key);
  if (it == procs_.end()) return std::nullopt;
  return it->second.group > 0 ? it->second.group : it->second.pid;
}

std::optional<pid_t> ProcessTable::shim_pid(const std::string& key) const {
  auto it = procs_.find(key);
  if (it == procs_.end()) return std::nullopt;
  return it->second.pid;
}

std::vector<std::string> ProcessTable::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, p] : procs_) out.push_back(k);
  return out;
}

std::vector<Exited> ProcessTable::stop_all_and_wait() {
  auto now = Clock::now();
  for (const auto& k : keys()) stop(k, now);
  std::vector<Exited> out;
  const auto deadline = now + grace_ + std::chrono::seconds(1);
  while (!procs_.empty() && Clock::now() < deadline) {
    auto e = poll(Clock::now());
    out.insert(out.end(), e.begin(), e.end());
    if (!procs_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return out;
}

Result<std::vector<int>> parse_cpu_list(std::string_view list) {
  std::vector<int> out;
  auto bad = [&] { return Error::invalid("\"" + std::string(list) + "\" is not a CPU list such as 0-3,8"); };
  size_t i = 0;
  auto num = [&](int& v) {
    size_t start = i;
    v = 0;
    while (i < list.size() && std::isdigit(static_cast<unsigned char>(list[i])) && i - start < 6)
      v = v * 10 + (list[i++] - '0');
    return i > start;
  };
  while (i < list.size()) {
    int a = 0, b = 0;
    if (!num(a)) return bad();
    b = a;
    if (i < list.size() && list[i] == '-') {
      ++i;
      if (!num(b) || b < a) return bad();
    }
    for (int c = a; c <= b; ++c) out.push_back(c);
    if (i < list.size()) {
      if (list[i] != ',') return bad();
      ++i;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> available_cpus() {
  std::vector<int> out;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &mask)) out.push_back(c);
  if (out.empty()) out.push_back(0);
  return out;
}

std::vector<int> clamp_cpus(const std::vector<int>& wanted, const std::vector<int>& available) {
  if (wanted.empty() || available.empty()) return {};
  std::vector<int> out;
  for (int c : wanted) out.push_back(available[static_cast<size_t>(c) % available.size()]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace allot::agent
