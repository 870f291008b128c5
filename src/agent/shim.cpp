#include "agent/shim.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace allot::agent {
namespace {

// Only what is async-signal-safe from here on: fixed buffers, raw syscalls.

int64_t now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1'000'000;
}

void nap_ms(int ms) {
  timespec t{0, ms * 1'000'000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// Appends the decimal digits of v >= 0 at *out, which has room.
char* put_decimal(char* out, long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + v % 10), v /= 10;
  while (v > 0 && n < 24);
  while (n > 0) *out++ = digits[--n];
  return out;
}

void say(const char* a, long n1, const char* b, long n2, const char* c) {
  char line[256];
  char* p = line;
  auto put = [&](const char* s) {
    for (; *s && p < line + 200; ++s) *p++ = *s;
  };
  put("allot replica shim: ");
  put(a);
  p = put_decimal(p, n1);
  put(b);
  p = put_decimal(p, n2);
  put(c);
  *p++ = '\n';
  (void)!write(STDERR_FILENO, line, static_cast<size_t>(p - line));
}

// Parses the pids in `text` ("12 34 ") into out[0..cap); returns how many.
int parse_pids(const char* text, ssize_t len, pid_t* out, int cap) {
  int n = 0;
  long v = -1;
  for (ssize_t i = 0; i <= len; ++i) {
    const char c = i < len ? text[i] : ' ';
    if (c >= '0' && c <= '9') {
      v = (v < 0 ? 0 : v * 10) + (c - '0');
    } else if (v >= 0) {
      if (n < cap) out[n++] = static_cast<pid_t>(v);
      v = -1;
    }
  }
  return n;
}

// The parent pid field of a /proc/N/stat file ("pid (comm) state ppid ..."), or -1 when it cannot be read. comm may
// hold anything, so the fields count from the last ')'.
pid_t stat_parent(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char st[512];
  const ssize_t len = read(fd, st, sizeof st - 1);
  close(fd);
  if (len <= 0) return -1;
  const char* close_paren = nullptr;
  for (ssize_t i = 0; i < len; ++i)
    if (st[i] == ')') close_paren = st + i;
  if (!close_paren || close_paren + 4 >= st + len) return -1;
  pid_t ppid = 0;
  return parse_pids(close_paren + 4, (st + len) - (close_paren + 4), &ppid, 1) == 1 ? ppid : -1;
}

// This process's children. /proc/thread-self/children lists them (the shim has one thread); where the kernel lacks
// that file (CONFIG_PROC_CHILDREN), /proc is scanned for processes whose parent is this one.
int children(pid_t* out, int cap) {
  char buf[4096];
  int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t len = 0;
    for (ssize_t r; len < static_cast<ssize_t>(sizeof buf) && (r = read(fd, buf + len, sizeof buf - len)) != 0;) {
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) break;
      len += r;
    }
    close(fd);
    return parse_pids(buf, len, out, cap);
  }
  const pid_t self = getpid();
  int n = 0;
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  char ents[4096];
  for (long got; (got = syscall(SYS_getdents64, dir, ents, sizeof ents)) > 0;) {
    for (long off = 0; off < got;) {
      auto* e = reinterpret_cast<dirent64*>(ents + off);
      off += e->d_reclen;
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      char path[64] = "/proc/";
      char* p = path + 6;
      for (const char* s = e->d_name; *s && p < path + 40; ++s) *p++ = *s;
      std::memcpy(p, "/stat", 6);
      if (stat_parent(path) == self && n < cap)
        out[n++] = static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10));
    }
  }
  close(dir);
  return n;
}

// Reaps every child that has exited; a replica's status is kept in *status.
void reap(pid_t replica, bool* have, int* status) {
  for (;;) {
    int st = 0;
    const pid_t p = waitpid(-1, &st, WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p <= 0) return;
    if (p == replica && have && !*have) *have = true, *status = st;
  }
}

}  // namespace

pid_t host_parent() { return stat_parent("/proc/self/stat"); }

int end_replica_tree(pid_t replica) {
  int signalled = 0;
  const int64_t deadline = now_ms() + kEndTreeBoundMs;
  for (;;) {
    // The group first: its members that are not this process's children (a shell's `sleep &`) go at once, and their
    // own orphans come here.
    const bool group_left = replica > 0 && kill(-replica, SIGKILL) == 0;
    reap(0, nullptr, nullptr);
    pid_t kids[512];
    const int n = children(kids, 512);
    for (int i = 0; i < n; ++i) signalled += kill(kids[i], SIGKILL) == 0;
    if (!group_left && n == 0) return signalled;
    if (now_ms() >= deadline) return signalled;
    nap_ms(5);  // the killed die and their children are reparented here; the next round takes those
  }
}

void exit_like(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    // Death by the same signal, but no core file of the shim's (the replica's own was written, or not, as its
    // limits said).
    const rlimit none{0, 0};
    (void)setrlimit(RLIMIT_CORE, &none);
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    (void)sigaction(sig, &dfl, nullptr);
    (void)kill(getpid(), sig);  // pending while blocked...
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    (void)sigprocmask(SIG_UNBLOCK, &one, nullptr);  // ...and delivered here
    _exit(128 + sig);  // a signal whose default is not to terminate (it cannot have ended the replica)
  }
  _exit(255);
}

void supervise_replica(pid_t agent, pid_t replica) {
  sigset_t all;
  sigfillset(&all);
  (void)sigprocmask(SIG_SETMASK, &all, nullptr);
  bool have = false;
  int status = 0;
  for (;;) {
    // The parent-death signal may have come before the shim ran this far, or been merged with another signal: the
    // parent itself is what tells.
    if (getppid() != agent) {
      say("the agent (pid ", agent, ") is gone: ending the processes of replica pid ", replica, "");
      const int n = end_replica_tree(replica);
      say("ended replica pid ", replica, "'s group and ", n, " process(es) reparented to the shim");
      _exit(137);
    }
    reap(replica, &have, &status);
    if (have) exit_like(status);
    siginfo_t info;
    if (sigwaitinfo(&all, &info) < 0 && errno != EINTR) nap_ms(10);  // never spin
  }
}

int replica_shim_main(int argc, char** argv) {
  // argv: allot internal-replica-shim AGENT_PID REPLICA_PID
  if (argc != 4) return 2;
  char* end = nullptr;
  const long agent = std::strtol(argv[2], &end, 10);
  if (!end || *end != '\0' || agent <= 0) return 2;
  const long replica = std::strtol(argv[3], &end, 10);
  if (!end || *end != '\0' || replica <= 0) return 2;
  // Only a replica that is this process's own child (the agent's fork made it so before the exec): typed by hand,
  // with any pids, the command must not end some other process group.
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(replica), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return 2;
  supervise_replica(static_cast<pid_t>(agent), static_cast<pid_t>(replica));
}

}  // namespace allot::agent
