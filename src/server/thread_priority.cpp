#include "server/thread_priority.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace allot::server {

namespace {
id_t own_thread_id() { return static_cast<id_t>(::syscall(SYS_gettid)); }
thread_local int raised_by = 0;  // net nice levels adjust_thread_nice took away on this thread
}  // namespace

int thread_nice() {
  return ::getpriority(PRIO_PROCESS, own_thread_id());  // -1 is a valid nice value; this thread's can always be read
}

int adjust_thread_nice(int delta, std::string_view what) {
  if (delta == 0) return 0;
  const id_t tid = own_thread_id();
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, tid);
  if (before == -1 && errno != 0) return 0;
  if (::setpriority(PRIO_PROCESS, tid, before + delta) != 0) {
    spdlog::warn("{}: at the server's own priority, setpriority(nice {} -> {}) failed: {}{}", what, before, before + delta,
                 std::strerror(errno),
                 delta < 0 ? " (a higher priority needs CAP_SYS_NICE, or an RLIMIT_NICE that allows it: systemd's LimitNICE=)" : "");
    return 0;
  }
  const int granted = ::getpriority(PRIO_PROCESS, tid) - before;
  raised_by -= granted;
  return granted;
}

int thread_raised() { return raised_by; }

void back_to_process_priority(int raised, std::string_view what) {
  if (raised > 0) adjust_thread_nice(raised, what);
}

void back_to_process_priority_after_fork(int raised) {
  if (raised <= 0) return;
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, 0);
  if (now == -1 && errno != 0) return;
  ::setpriority(PRIO_PROCESS, 0, now + raised);  // lowering is always allowed
}

void name_thread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  ::pthread_setname_np(::pthread_self(), cut.c_str());
}

}  // namespace allot::server
