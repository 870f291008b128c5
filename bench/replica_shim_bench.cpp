// The cost of each replica's shim (agent/shim.h; issue 25 item 9): replica start latency and the shim's memory.
//
// Three ways to start the same replica (`/bin/true`, then `sleep 30` for the memory), --runs times each,
// interleaved so that the machine's load falls on all three alike:
//   direct  one fork and exec of the replica, waited for: the table's path before the shim (the old child did
//           setpgid, dup2s, prctl and exec, which cost nothing beside the fork and exec);
//   inplace ProcessTable with no shim program: the forked shim supervises in place (what the unit tests run);
//   exec    ProcessTable with --allot as the shim program: the shim execs `allot internal-replica-shim`, as the
//           agent does for a container replica or without the replicas' PID namespace;
//   pidns   the same, the shim entering the replicas' PID namespace (agent/pid_namespace.h, made once with --allot
//           as its init) before it forks the replica: what a root agent does for a process replica. Its init's
//           own memory is printed once (one per node, not per replica).
// Figures, medians of --runs: start() (the call, as the agent's main loop waits for it), start to exit collected
// (a poll every 0.2 ms), and for a running replica the shim's VmRSS, Pss and Private_Dirty (/proc/PID/smaps_rollup).
//
// Run: build/bench/replica_shim_bench --allot build/allot [--runs 200]
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "agent/pid_namespace.h"
#include "agent/process.h"

namespace {

using allot::agent::Clock;
using allot::agent::ProcessTable;
using us = std::chrono::duration<double, std::micro>;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A field of /proc/PID/status or smaps_rollup ("VmRSS:", "Pss:"), in kB.
long kb(pid_t pid, const char* file, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  return -1;
}

struct Figures {
  std::vector<double> start_us, exit_us, rss_kb, pss_kb, dirty_kb;
};

void direct(Figures& f) {
  const auto t0 = Clock::now();
  const pid_t p = fork();
  if (p == 0) {
    setpgid(0, 0);
    execl("/bin/true", "true", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(p, p);
  const auto t1 = Clock::now();
  int status = 0;
  while (waitpid(p, &status, WNOHANG) == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  const auto t2 = Clock::now();
  f.start_us.push_back(us(t1 - t0).count());
  f.exit_us.push_back(us(t2 - t0).count());
}

void table(Figures& f, const std::string& shim, int pid_namespace = -1) {
  ProcessTable t(std::chrono::seconds(1), shim);
  const auto t0 = Clock::now();
  if (!t.start("r", {.argv = {"/bin/true"}, .pid_namespace = pid_namespace})) std::exit(1);
  const auto t1 = Clock::now();
  for (bool done = false; !done;) {
    for (const auto& e : t.poll(Clock::now())) done = done || e.key == "r";
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const auto t2 = Clock::now();
  f.start_us.push_back(us(t1 - t0).count());
  f.exit_us.push_back(us(t2 - t0).count());
}

void memory(Figures& f, const std::string& shim, int pid_namespace = -1) {
  ProcessTable t(std::chrono::seconds(1), shim);
  if (!t.start("m", {.argv = {"/bin/sleep", "30"}, .pid_namespace = pid_namespace})) std::exit(1);
  const pid_t p = *t.shim_pid("m");
  // Until the shim is waiting (exec'd, or in sigwaitinfo): its memory no longer changes then.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  f.rss_kb.push_back(static_cast<double>(kb(p, "status", "VmRSS:")));
  f.pss_kb.push_back(static_cast<double>(kb(p, "smaps_rollup", "Pss:")));
  f.dirty_kb.push_back(static_cast<double>(kb(p, "smaps_rollup", "Private_Dirty:")));
  t.stop("m", Clock::now());
  for (bool done = false; !done; std::this_thread::sleep_for(std::chrono::milliseconds(1)))
    for (const auto& e : t.poll(Clock::now())) done = done || e.key == "m";
}

}  // namespace

int main(int argc, char** argv) {
  std::string allot;
  int runs = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--allot") allot = argv[i + 1];
    else if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
  }
  if (allot.empty() || runs <= 0) {
    std::cerr << "usage: replica_shim_bench --allot PATH/TO/allot [--runs N]\n";
    return 2;
  }
  auto ns = allot::agent::ReplicaPidNamespace::create(allot);
  if (!ns) std::cerr << "no PID namespace here (" << ns.error().message << "): the pidns row is left out\n";
  const int ns_fd = ns ? (*ns)->fd() : -1;
  Figures d, in, ex, pn;
  for (int i = 0; i < runs; ++i) {
    direct(d), table(in, ""), table(ex, allot);
    if (ns) table(pn, allot, ns_fd);
  }
  const int mem_runs = std::min(runs, 20);
  for (int i = 0; i < mem_runs; ++i) {
    memory(in, ""), memory(ex, allot);
    if (ns) memory(pn, allot, ns_fd);
  }
  std::printf("replica start, medians of %d runs (memory: %d runs)\n", runs, mem_runs);
  std::printf("%-42s %12s %16s %12s %10s %18s\n", "how", "start() us", "start->exit us", "shim RSS kB",
              "Pss kB", "Private_Dirty kB");
  std::printf("%-42s %12.0f %16.0f %12s %10s %18s\n", "direct fork+exec (before the shim)", median(d.start_us),
              median(d.exit_us), "-", "-", "-");
  std::printf("%-42s %12.0f %16.0f %12.0f %10.0f %18.0f\n", "shim forked, in place", median(in.start_us),
              median(in.exit_us), median(in.rss_kb), median(in.pss_kb), median(in.dirty_kb));
  std::printf("%-42s %12.0f %16.0f %12.0f %10.0f %18.0f\n", "shim exec'd (allot internal-replica-shim)",
              median(ex.start_us), median(ex.exit_us), median(ex.rss_kb), median(ex.pss_kb), median(ex.dirty_kb));
  if (ns) {
    std::printf("%-42s %12.0f %16.0f %12.0f %10.0f %18.0f\n", "shim exec'd, replica in the PID namespace",
                median(pn.start_us), median(pn.exit_us), median(pn.rss_kb), median(pn.pss_kb), median(pn.dirty_kb));
    const pid_t init = (*ns)->init();
    std::printf("the namespace's init (allot internal-pid-init, one per node): VmRSS %ld kB, Pss %ld kB, "
                "Private_Dirty %ld kB\n",
                kb(init, "status", "VmRSS:"), kb(init, "smaps_rollup", "Pss:"), kb(init, "smaps_rollup", "Private_Dirty:"));
  }
  return 0;
}
