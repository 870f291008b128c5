#include "agent/watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "agent/leftovers.h"

namespace allot::agent {

namespace {

[[noreturn]] void watch(int fd, const std::string& state_path, const std::string& lock_path, const std::string& prefix) {
  setsid();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  // Nothing of the agent's but the pipe and the standard streams: above all not its sockets.
  if (fd != 3) {
    dup2(fd, 3);
    fd = 3;
  }
  close_range(4, ~0U, 0);
  char byte;
  for (;;) {
    ssize_t n = read(fd, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;  // the agent is gone (it never writes)
  }
  // The dying agent may close its lock a moment after the pipe, so the lock is tried for a while. A new agent
  // that holds it all that time sweeps by itself; one that comes later waits until we are done.
  int lock = open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
  if (lock < 0) _exit(0);
  for (int tries = 0; flock(lock, LOCK_EX | LOCK_NB) != 0; ++tries) {
    if (tries == 150) _exit(0);
    usleep(20 * 1000);
  }
  auto state = load_state(state_path);
  if (state && !state->replicas.empty())
    end_leftovers(*state, [&](const std::string& line) { std::cerr << prefix << line << std::endl; });
  // The agent's cgroup directory goes too once it is empty (an agent that stops cleanly removed it already).
  if (state && !state->cgroup_dir.empty()) (void)rmdir(state->cgroup_dir.c_str());
  _exit(0);
}

}  // namespace

Result<Watchdog> start_watchdog(const std::string& state_path, const std::string& lock_path,
                                const std::string& log_prefix) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return Error::internal(std::string("cannot create the watchdog's pipe: ") + std::strerror(errno));
  std::cerr.flush();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(p[0]), close(p[1]);
    return Error::internal(std::string("cannot fork the watchdog: ") + std::strerror(err));
  }
  if (pid == 0) {
    close(p[1]);
    watch(p[0], state_path, lock_path, log_prefix);
  }
  close(p[0]);
  return Watchdog{pid, p[1]};
}

}  // namespace allot::agent
