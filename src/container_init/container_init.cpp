// allot-container-init: the first process of every container the agent starts (docs/jobs.md, "Images"; issue 25,
// item 9). podman mounts it at /run/podman-init (`--init --init-path`) and runs it as `/run/podman-init -- ENTRY...`,
// the image's entrypoint and command (or the job's) resolved by podman.
//
// Why it exists: a container's processes are children of conmon, which podman double-forks away from the agent's
// tree. When the agent, its watchdog and the replica's shim die together (SIGKILL to the agent's service, the OOM
// killer), nothing is left that knows the container, and it ran on beside the replica's restart on another node
// until an agent started here again: the same rank twice. So the agent passes every container, as its fd 3
// (`--preserve-fds 1`), the read end of a pipe whose only write end the agent holds (close-on-exec, so no other
// process keeps it). The kernel closes the write end when the agent dies, however it dies; this init then sees
// end-of-file and exits, and the kernel kills every other process of the container's PID namespace with it.
//
// Otherwise it is an ordinary container init: it runs the command as its child, forwards every signal it gets
// (podman's SIGTERM on a stop) to that child, reaps the orphans reparented to it, and exits as the child did (its
// code, or 128 + the signal that killed it, as a container's exit code says). A command that cannot be run exits
// 127 (not found) or 126 (cannot be executed), as podman's own would.
//
// It is linked statically (the image holds none of the host's libraries) and uses nothing but system calls and the
// C library.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

constexpr int kLifelineFd = 3;

void say(const char* a, const char* b = "", const char* c = "") {
  const char* parts[] = {"allot container init: ", a, b, c, "\n"};
  for (const char* s : parts) (void)!write(STDERR_FILENO, s, strlen(s));
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// The agent is gone: everything in the container goes. As the namespace's first process, leaving is enough (the
// kernel kills the rest); the SIGKILL to every process it may signal is for an init run outside a namespace of
// its own (a test), where it ends at least its child's process group.
[[noreturn]] void end_container(pid_t child) {
  say("the allot agent that started this container is gone; ending the container");
  if (getpid() == 1) kill(-1, SIGKILL);
  else kill(-child, SIGKILL);
  _exit(137);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || strcmp(argv[1], "--") != 0) {
    say("usage: allot-container-init -- COMMAND [ARG...] (podman runs it as a container's init for the allot agent)");
    return 2;
  }
  struct stat st {};
  if (fstat(kLifelineFd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
    say("fd 3 is not a pipe: this init runs only in containers the allot agent starts, which pass the agent's "
        "lifeline there");
    return 2;
  }
  // The command must not hold the lifeline: it would see the agent's end without needing to.
  fcntl(kLifelineFd, F_SETFD, FD_CLOEXEC);
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &old);
  const int sigfd = signalfd(-1, &all, SFD_CLOEXEC);
  if (sigfd < 0) {
    say("cannot create a signalfd: ", strerror(errno));
    return 126;
  }
  const pid_t child = fork();
  if (child < 0) {
    say("cannot fork the command: ", strerror(errno));
    return 126;
  }
  if (child == 0) {
    // Its own process group, so that an init outside a namespace (a test) can end the command's whole tree.
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execvp(argv[2], argv + 2);
    const int err = errno;
    say("cannot run ", argv[2], err == ENOENT ? ": no such file or directory" : ": cannot execute");
    _exit(err == ENOENT ? 127 : 126);
  }
  setpgid(child, child);
  for (;;) {
    pollfd fds[2] = {{sigfd, POLLIN, 0}, {kLifelineFd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      say("poll failed: ", strerror(errno));
      end_container(child);
    }
    if (fds[1].revents != 0) {
      char buf[64];
      const ssize_t n = read(kLifelineFd, buf, sizeof buf);
      // Nothing is ever written: only end-of-file (every write end closed) or an error ends the wait.
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) end_container(child);
    }
    if (fds[0].revents != 0) {
      signalfd_siginfo info{};
      if (read(sigfd, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) continue;
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig != SIGCHLD) {
        kill(child, sig);
        continue;
      }
      // Several children may have exited for one SIGCHLD: reap them all, and leave once the command has.
      for (;;) {
        int status = 0;
        const pid_t p = waitpid(-1, &status, WNOHANG);
        if (p < 0 && errno == EINTR) continue;
        if (p <= 0) break;
        if (p == child) _exit(exit_code_of(status));
      }
    }
  }
}
