#include "agent/watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <optional>

#include "agent/cgroups.h"
#include "agent/leftovers.h"

namespace allot::agent {

namespace {

using std::chrono::nanoseconds;
using std::chrono::steady_clock;

// A lease on the pipe: two int64 counts of nanoseconds on the steady clock. Written whole (16 bytes, far below
// PIPE_BUF, so never split) and read whole.
struct LeaseMessage {
  int64_t stop_at_ns = 0;
  int64_t kill_at_ns = 0;
};

// Sends `sig` to every process of the replicas the state file lists (those that are still the recorded ones,
// agent/leftovers.h); SIGKILL also empties their cgroups.
void signal_replicas(const std::string& state_path, int sig, const std::string& prefix, const char* what) {
  auto state = load_state(state_path);
  if (!state || state->boot_id != boot_id()) return;
  size_t n = 0;
  for (const auto& r : state->replicas) {
    for (pid_t p : leftover_processes(r)) n += kill(p, sig) == 0;
    if (sig == SIGKILL && !r.cgroup.empty()) (void)kill_cgroup(r.cgroup, 0);
  }
  if (n > 0) std::cerr << prefix << what << " " << n << " process(es) of " << state->replicas.size() << " replica(s)" << std::endl;
}

[[noreturn]] void watch(int fd, const std::string& state_path, const std::string& lock_path, const std::string& prefix) {
  setsid();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  // Nothing of the agent's but the pipe and the standard streams: above all not its sockets.
  if (fd != 3) {
    dup2(fd, 3);
    fd = 3;
  }
  close_range(4, ~0U, 0);
  // The lease: none until the agent knows the server's timeout. `done` counts the steps taken on this lease
  // (1: SIGTERM sent, 2: SIGKILL sent, 3: SIGKILL sent again for what forked meanwhile).
  std::optional<LeaseMessage> lease;
  int done = 0;
  for (;;) {
    int timeout_ms = -1;
    if (lease && done < 3) {
      const int64_t now = std::chrono::duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
      const int64_t next = done == 0 ? lease->stop_at_ns : done == 1 ? lease->kill_at_ns : lease->kill_at_ns + 200'000'000;
      if (now >= next) {
        if (done == 0) {
          std::cerr << prefix << "the agent has not heard from the server within its lease (it may be frozen): stopping "
                    << "its replicas (fencing)" << std::endl;
          signal_replicas(state_path, SIGTERM, prefix, "SIGTERM to");
        } else {
          signal_replicas(state_path, SIGKILL, prefix, "SIGKILL to");
        }
        ++done;
        continue;
      }
      timeout_ms = static_cast<int>(std::min<int64_t>((next - now) / 1'000'000 + 1, 60'000));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    if (ready == 0) continue;
    LeaseMessage buf[16];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the agent is gone
    if (n >= static_cast<ssize_t>(sizeof(LeaseMessage))) {
      const LeaseMessage& newest = buf[n / sizeof(LeaseMessage) - 1];
      if (done > 0 && lease && newest.stop_at_ns > lease->stop_at_ns)
        std::cerr << prefix << "the agent has a newer lease: fencing ended" << std::endl;
      if (!lease || newest.stop_at_ns > lease->stop_at_ns) lease = newest, done = 0;
    }
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
  // The agent's cgroup directories go too, with any replica cgroup still in them (an agent that stops cleanly
  // removed them already; one killed may have collected an exit and not yet removed its cgroup).
  if (state && !state->cgroup_dir.empty()) sweep_agent_dir(state->cgroup_dir);
  if (state)
    for (const auto& more : state->more_cgroup_dirs) sweep_agent_dir(more);
  _exit(0);
}

}  // namespace

void send_lease(int fd, const Lease& lease) {
  const LeaseMessage m{std::chrono::duration_cast<nanoseconds>(lease.stop_at.time_since_epoch()).count(),
                       std::chrono::duration_cast<nanoseconds>(lease.kill_at.time_since_epoch()).count()};
  (void)!write(fd, &m, sizeof m);
}

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
  // Leases are written by the agent's heartbeat loop, which must never wait on a watchdog that is slow to read.
  (void)fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
  return Watchdog{pid, p[1]};
}

}  // namespace allot::agent
