#include "agent/pid_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "agent/shim.h"

namespace allot::agent {

Result<std::unique_ptr<ReplicaPidNamespace>> ReplicaPidNamespace::create(const std::string& init_program) {
  const pid_t agent = getpid();
  // The init tells the agent's death by its parent as /proc names it (getppid() is 0 for a namespace's init).
  if (host_parent() != getppid())
    return Error::precondition("/proc cannot be read here, or is not of this process's PID namespace, so a namespace's "
                               "first process could not tell when the agent dies");
  // Everything the child needs is built before the clone: after it, only async-signal-safe calls.
  const std::string agent_arg = std::to_string(agent);
  const char* argv[] = {"allot", kPidInitCommand, agent_arg.c_str(), nullptr};
  const char* program = init_program.empty() ? nullptr : init_program.c_str();
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return Error::internal(std::string("cannot open /dev/null: ") + std::strerror(errno));
  // clone(2) as fork(2) does it (a copy of this process, SIGCHLD at its exit), with a new PID namespace whose first
  // process the child is. glibc has no wrapper that takes CLONE_NEWPID without a stack of its own.
  const long pid = syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) {
    const int err = errno;
    close(null_fd);
    return Error::precondition(std::string("cannot create a PID namespace for the replicas: ") + std::strerror(err) +
                               (err == EPERM ? " (it needs root)" : ""));
  }
  if (pid == 0) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    // At their defaults: a blocked signal the agent ignores would be dropped, not kept pending for sigwaitinfo.
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (host_parent() != agent) _exit(0);  // the agent died before the parent-death signal was set
    // Nothing of the agent's but its stderr (the init's lines go to the agent's log).
    dup2(null_fd, STDIN_FILENO);
    dup2(null_fd, STDOUT_FILENO);
    close_range(3, ~0U, 0);
    if (program) {
      char* no_env[] = {nullptr};
      execve(program, const_cast<char* const*>(argv), no_env);
      // Cannot exec the allot binary (replaced, removed): this copy runs the same loop.
    }
    run_pid_init(agent);
  }
  close(null_fd);
  const std::string ns_path = "/proc/" + std::to_string(pid) + "/ns/pid";
  const int fd = open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    kill(static_cast<pid_t>(pid), SIGKILL);
    waitpid(static_cast<pid_t>(pid), nullptr, 0);
    return Error::internal("cannot open " + ns_path + ": " + std::strerror(err));
  }
  return std::unique_ptr<ReplicaPidNamespace>(new ReplicaPidNamespace(static_cast<pid_t>(pid), fd));
}

ReplicaPidNamespace::~ReplicaPidNamespace() {
  if (fd_ >= 0) close(fd_);
  if (init_ > 0) {
    kill(init_, SIGKILL);
    while (waitpid(init_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

bool ReplicaPidNamespace::ended(int* status) {
  if (init_ <= 0) return true;
  int st = 0;
  const pid_t r = waitpid(init_, &st, WNOHANG);
  if (r == 0 || (r < 0 && errno == EINTR)) return false;
  if (status) *status = st;
  init_ = 0;
  if (fd_ >= 0) close(fd_), fd_ = -1;
  return true;
}

void run_pid_init(pid_t agent) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  for (;;) {
    // Leaving ends the namespace: the kernel kills every process in it. A parent that is not the agent (or a /proc
    // that cannot be read) means the agent is gone.
    if (host_parent() != agent) _exit(0);
    for (;;) {
      const pid_t p = waitpid(-1, nullptr, WNOHANG);
      if (p > 0 || (p < 0 && errno == EINTR)) continue;
      break;
    }
    siginfo_t info;
    if (sigwaitinfo(&all, &info) < 0 && errno != EINTR) {
      timespec t{0, 10'000'000L};  // never spin
      nanosleep(&t, nullptr);
    }
  }
}

int pid_init_main(int argc, char** argv) {
  // argv: allot internal-pid-init AGENT_PID
  if (argc != 3 || getpid() != 1) return 2;
  char* end = nullptr;
  const long agent = std::strtol(argv[2], &end, 10);
  if (!end || *end != '\0' || agent <= 0) return 2;
  run_pid_init(static_cast<pid_t>(agent));
}

}  // namespace allot::agent
