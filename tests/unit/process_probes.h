#pragma once
// What the agent's process tests look at from outside (agent_shim_test.cpp, agent_pid_namespace_test.cpp): fields
// of /proc/PID/stat as the node names them, whether a process still runs, pid files a replica writes, and the
// table's report of an exit.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "agent/process.h"

namespace allot::agent::process_probes {

inline std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Field `n` (1-based, as proc(5) counts) of /proc/PID/stat; empty when there is no such process.
inline std::string stat_field(pid_t pid, int n) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream f(stat.substr(close + 2));
  std::string w;
  for (int i = 3; i <= n && f >> w; ++i) {
  }
  return w;
}

// Running, not a zombie left for a parent that is not us.
inline bool alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  const std::string state = stat_field(pid, 3);
  return !state.empty() && state != "Z" && state != "X";
}

inline bool gone_within(pid_t pid, std::chrono::milliseconds bound) {
  for (auto deadline = Clock::now() + bound; Clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(10)))
    if (!alive(pid)) return true;
  return !alive(pid);
}

// The positive pid a file holds once it is written (within 10 s), else 0.
inline pid_t wait_for_pid_file(const std::string& p) {
  for (auto deadline = Clock::now() + std::chrono::seconds(10); Clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    std::ifstream in(p);
    long v = 0;
    if (in >> v && v > 0) return static_cast<pid_t>(v);
  }
  return 0;
}

// The table's report of `key`'s exit, polled for up to 10 s.
inline std::optional<Exited> wait_exit(ProcessTable& t, const std::string& key) {
  for (auto deadline = Clock::now() + std::chrono::seconds(10); Clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(10)))
    for (const auto& e : t.poll(Clock::now()))
      if (e.key == key) return e;
  return std::nullopt;
}

}  // namespace allot::agent::process_probes
