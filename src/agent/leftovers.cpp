#include "agent/leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/cgroups.h"
#include "agent/durable_file.h"

namespace allot::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Stat {
  char state = '?';
  pid_t pgrp = 0;
  uint64_t start_time = 0;
};

// /proc/PID/stat: "pid (comm) state ppid pgrp ... starttime(22) ...". comm may hold spaces and ')', so the
// fields are counted from the last ')'.
std::optional<Stat> read_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  try {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    // The process ended between the open and the read (read(2) fails with ESRCH), and istreambuf_iterator lets
    // the stream buffer's exception through: the agent aborted on it when a replica exited as it started.
    return std::nullopt;
  }
  auto close = text.rfind(')');
  if (!in.good() && text.empty()) return std::nullopt;
  if (close == std::string::npos) return std::nullopt;
  std::istringstream f(text.substr(close + 1));
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  for (std::string w; f >> w && fields.size() < 20;) fields.push_back(w);
  if (fields.size() < 20) return std::nullopt;
  try {
    return Stat{fields[0][0], static_cast<pid_t>(std::stol(fields[2])), std::stoull(fields[19])};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long p = std::strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && p > 0) out.push_back(static_cast<pid_t>(p));
  }
  closedir(d);
  return out;
}

bool alive(pid_t pid) {
  auto s = read_stat(pid);
  return s && s->state != 'Z' && s->state != 'X';
}

// The group's members when the group is still the recorded one (see leftover_processes).
std::vector<pid_t> group_members(const ReplicaRecord& r) {
  std::vector<pid_t> out;
  if (r.pgid <= 0) return out;
  if (auto leader = read_stat(r.pgid); leader && leader->start_time != r.start_time) return out;  // recycled
  for (pid_t p : all_pids()) {
    auto s = read_stat(p);
    if (s && s->pgrp == r.pgid && s->state != 'Z' && s->start_time >= r.start_time) out.push_back(p);
  }
  return out;
}

std::vector<pid_t> cgroup_members(const std::string& dir) {
  std::vector<pid_t> out;
  if (dir.empty()) return out;
  std::ifstream in(dir + "/cgroup.procs");
  for (long p; in >> p;)
    if (alive(static_cast<pid_t>(p))) out.push_back(static_cast<pid_t>(p));
  return out;
}

}  // namespace

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::optional<uint64_t> process_start_time(pid_t pid) {
  auto s = read_stat(pid);
  if (!s) return std::nullopt;
  return s->start_time;
}

std::optional<pid_t> process_group(pid_t pid) {
  auto s = read_stat(pid);
  if (!s) return std::nullopt;
  return s->pgrp;
}

Status save_state(const std::string& path, const std::vector<ReplicaRecord>& replicas, const std::string& cgroup_dir,
                  const std::vector<std::string>& more_cgroup_dirs) {
  json list = json::array();
  for (const auto& r : replicas) {
    json e = {{"key", r.key}, {"pid", r.pid}, {"pgid", r.pgid}, {"start_time", r.start_time}, {"cgroup", r.cgroup}};
    if (!r.more_cgroups.empty()) e["more_cgroups"] = r.more_cgroups;
    list.push_back(std::move(e));
  }
  json j = {{"boot_id", boot_id()}, {"replicas", list}, {"cgroup_dir", cgroup_dir}};
  if (!more_cgroup_dirs.empty()) j["more_cgroup_dirs"] = more_cgroup_dirs;
  const std::string text = j.dump(1) + "\n";
  return write_file_durably(path, text);
}

Result<StateFile> load_state(const std::string& path) {
  StateFile out;
  std::ifstream in(path);
  if (!in) return out;
  try {
    json j = json::parse(in);
    out.boot_id = j.at("boot_id").get<std::string>();
    out.cgroup_dir = j.value("cgroup_dir", std::string());
    out.more_cgroup_dirs = j.value("more_cgroup_dirs", std::vector<std::string>());
    for (const auto& r : j.at("replicas"))
      out.replicas.push_back({r.at("key").get<std::string>(), r.at("pid").get<pid_t>(), r.at("pgid").get<pid_t>(),
                              r.at("start_time").get<uint64_t>(), r.value("cgroup", std::string()),
                              r.value("more_cgroups", std::vector<std::string>())});
  } catch (const json::exception& e) {
    return Error::internal("the agent's state file " + path + " is malformed (" + e.what() +
                           "); remove it once no replica of the previous agent runs");
  }
  return out;
}

std::vector<pid_t> leftover_processes(const ReplicaRecord& r) {
  std::set<pid_t> out;
  for (pid_t p : cgroup_members(r.cgroup)) out.insert(p);
  for (pid_t p : group_members(r)) out.insert(p);
  if (auto s = read_stat(r.pid); s && s->start_time == r.start_time && s->state != 'Z') out.insert(r.pid);
  return {out.begin(), out.end()};
}

void end_leftovers(const StateFile& state, const std::function<void(const std::string&)>& say) {
  if (state.replicas.empty()) return;
  if (state.boot_id != boot_id()) {
    say("the state file is from before a reboot; its " + std::to_string(state.replicas.size()) +
        " replica(s) cannot still run");
    return;
  }
  for (const auto& r : state.replicas) {
    auto pids = leftover_processes(r);
    std::string list;
    for (pid_t p : pids) list += (list.empty() ? "" : " ") + std::to_string(p);
    if (!r.cgroup.empty()) (void)kill_cgroup(r.cgroup);
    // Killed a round at a time until none is left: a process may fork between a scan and the kill.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!pids.empty() && std::chrono::steady_clock::now() < deadline) {
      for (pid_t p : pids) kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      pids = leftover_processes(r);
    }
    if (!r.cgroup.empty())
      for (int i = 0; i < 50 && !remove_cgroup(r.cgroup); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Its directories in the other v1 hierarchies hold the same processes, gone now.
    for (const auto& more : r.more_cgroups)
      for (int i = 0; i < 50 && !remove_cgroup(more); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (list.empty())
      say("replica " + r.key + " of the previous agent left nothing behind");
    else
      say("ended what replica " + r.key + " of the previous agent left running: pid(s) " + list +
          (pids.empty() ? "" : " (some could not be killed: " + std::to_string(pids.size()) + " left)"));
  }
}

}  // namespace allot::agent
