#include "agent/cgroups.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace allot::agent {
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `value` to a cgroup interface file; the kernel's refusal comes back as errno's text.
Status write_file(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return Error::internal("cannot open " + path + ": " + std::strerror(errno));
  out << value;
  out.flush();
  if (!out) return Error::internal("cannot write \"" + value + "\" to " + path + ": " + std::strerror(errno));
  return ok_status();
}

bool has_word(const std::string& list, const std::string& word) {
  std::istringstream in(list);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

std::vector<pid_t> procs_of(const std::string& dir) {
  std::vector<pid_t> out;
  std::istringstream in(slurp(dir + "/cgroup.procs"));
  for (long p; in >> p;) out.push_back(static_cast<pid_t>(p));
  return out;
}

pid_t parent_of(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream f(stat.substr(close + 1));
  std::string state;
  long ppid = 0;
  f >> state >> ppid;
  return static_cast<pid_t>(ppid);
}

// Under delegation (systemd Delegate=yes) the agent starts inside the cgroup it was given, and a cgroup with
// processes cannot enable controllers for its children. When only the agent and its own children (the
// watchdog) are there, it moves them into a leaf so the controllers can be enabled; it never moves other
// processes.
void make_room_for_controllers(const std::string& base, const std::string& leaf) {
  auto procs = procs_of(base);
  for (pid_t p : procs)
    if (p != getpid() && parent_of(p) != getpid()) return;
  std::error_code ec;
  fs::create_directories(leaf, ec);
  for (pid_t p : procs) (void)write_file(leaf + "/cgroup.procs", std::to_string(p));
}

}  // namespace

std::optional<std::string> cgroup2_mount(std::string_view mountinfo) {
  // Fields: id parent major:minor root mount-point options... - fstype source super-options
  std::istringstream in{std::string(mountinfo)};
  for (std::string line; std::getline(in, line);) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream f(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    if (f >> id >> parent >> dev >> root >> mount_point) return mount_point;
  }
  return std::nullopt;
}

std::optional<std::string> cgroup2_path(std::string_view proc_self_cgroup) {
  std::istringstream in{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return std::nullopt;
}

std::string cpu_max_value(int64_t vcpu_milli) {
  if (vcpu_milli <= 0) return "max";
  constexpr int64_t kPeriodUs = 100000;
  // quota = vCPUs x period; the kernel refuses quotas under 1 ms.
  const int64_t quota = std::max<int64_t>(1000, vcpu_milli * kPeriodUs / 1000);
  return std::to_string(quota) + " " + std::to_string(kPeriodUs);
}

std::string memory_max_value(int64_t memory_mib) {
  if (memory_mib <= 0) return "max";
  return std::to_string(std::max(memory_mib, kMinMemoryMib) * 1024 * 1024);
}

std::string Cgroups::dir_name_for(const std::string& agent_name, const std::string& work_dir) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : work_dir) h = (h ^ ch) * 1099511628211ull;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(h ^ (h >> 32)));
  return "allot-" + agent_name.substr(0, 200) + "-" + hex;
}

void Cgroups::remove_if_empty() const {
  if (!dir_.empty()) (void)rmdir(dir_.c_str());
}

Cgroups Cgroups::detect(const std::string& dir_name, const std::string& base_override) {
  Cgroups c;
  const std::string none = "; replicas run in their own process group only (no memory or CPU limits)";
  auto mount = cgroup2_mount(slurp("/proc/self/mountinfo"));
  auto own = cgroup2_path(slurp("/proc/self/cgroup"));
  if (base_override.empty() && (!mount || !own)) {
    c.summary_ = "cgroups: no cgroup v2 hierarchy is mounted" + none;
    return c;
  }
  std::string base =
      !base_override.empty() ? base_override : (fs::path(*mount) / own->substr(1)).lexically_normal().string();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string dir = (fs::path(base) / dir_name).string();
  std::error_code ec;
  // Controllers flow down one level at a time: the base must enable them for its children (our directory),
  // which enables them for the replicas' cgroups. The base is changed only when it is the agent's own,
  // delegated cgroup; never the root cgroup or one given in tests.
  const bool own_base = base_override.empty() && !fs::equivalent(base, *mount, ec);
  if (own_base) {
    const std::string offered = slurp(base + "/cgroup.controllers");
    for (const char* ctl : {"memory", "cpu"}) {
      if (!has_word(offered, ctl) || has_word(slurp(base + "/cgroup.subtree_control"), ctl)) continue;
      make_room_for_controllers(base, dir + "/agent");
      (void)write_file(base + "/cgroup.subtree_control", std::string("+") + ctl);
    }
  }
  fs::create_directory(dir, ec);
  if (!fs::is_directory(dir)) {
    c.summary_ = "cgroups: cannot create " + dir + " (" + (ec ? ec.message() : "not a directory") + ")" + none;
    return c;
  }
  std::string missing;
  bool offered = true;  // the missing controllers are at least available to the base
  for (const char* ctl : {"memory", "cpu"}) {
    const bool on = has_word(slurp(dir + "/cgroup.controllers"), ctl) &&
                    (has_word(slurp(dir + "/cgroup.subtree_control"), ctl) ||
                     write_file(dir + "/cgroup.subtree_control", std::string("+") + ctl).ok());
    (std::string(ctl) == "memory" ? c.memory_ : c.cpu_) = on;
    if (on) continue;
    missing += missing.empty() ? ctl : std::string(" and ") + ctl;
    offered &= has_word(slurp(base + "/cgroup.controllers"), ctl);
  }
  c.dir_ = dir;
  c.summary_ = "cgroups: each replica gets its own cgroup under " + dir;
  if (missing.empty()) {
    c.summary_ += " with memory.max and cpu.max from its request";
  } else {
    const bool two = missing.find(' ') != std::string::npos;
    c.summary_ += "; the " + missing + " controller" + (two ? "s are" : " is") +
                  (offered ? " not enabled for its children (" + base + "/cgroup.subtree_control; under systemd, run the agent with Delegate=yes)"
                           : " not available in " + base + " (held by cgroup v1 on a hybrid system, or not delegated by a parent)") +
                  ", so " + (c.memory_ ? "only memory limits apply" : c.cpu_ ? "only CPU limits apply" : "no memory or CPU limits apply");
  }
  return c;
}

Result<std::string> Cgroups::create(const std::string& replica_name, const ReplicaLimits& limits) const {
  if (dir_.empty()) return Error::precondition("cgroups are not available on this node");
  const std::string path = dir_ + "/" + replica_name;
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return Error::internal("cannot create cgroup " + path + ": " + std::strerror(errno));
  auto fail = [&](const Error& e) -> Result<std::string> {
    (void)remove_cgroup(path);
    return e;
  };
  if (memory_ && limits.memory_mib > 0) {
    if (auto st = write_file(path + "/memory.max", memory_max_value(limits.memory_mib)); !st) return fail(st.error());
    // Without this a replica past its limit goes on in swap (slowing the whole node) instead of being ended;
    // the file exists only where the kernel accounts swap.
    std::error_code ec;
    if (fs::exists(path + "/memory.swap.max", ec))
      if (auto st = write_file(path + "/memory.swap.max", "0"); !st) return fail(st.error());
  }
  if (cpu_ && limits.vcpu_milli > 0)
    if (auto st = write_file(path + "/cpu.max", cpu_max_value(limits.vcpu_milli)); !st) return fail(st.error());
  return path;
}

std::vector<std::string> Cgroups::children() const {
  std::vector<std::string> out;
  std::error_code ec;
  if (dir_.empty()) return out;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.is_directory() && e.path().filename().string().rfind("r-", 0) == 0) out.push_back(e.path().string());
  return out;
}

int kill_cgroup(const std::string& path, int wait_ms) {
  if (!fs::is_directory(path)) return 0;
  auto procs = procs_of(path);
  const int seen = static_cast<int>(procs.size());
  if (procs.empty()) return 0;
  const bool has_kill = fs::exists(path + "/cgroup.kill") && write_file(path + "/cgroup.kill", "1").ok();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  // Without cgroup.kill, a process may fork between reading the list and the kill: repeat until empty.
  while (true) {
    if (!has_kill)
      for (pid_t p : procs) kill(p, SIGKILL);
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    procs = procs_of(path);
    if (procs.empty()) break;
  }
  return seen;
}

int64_t oom_kills(const std::string& path) {
  std::istringstream in(slurp(path + "/memory.events"));
  std::string key;
  int64_t n = 0;
  while (in >> key >> n)
    if (key == "oom_kill") return n;
  return 0;
}

bool remove_cgroup(const std::string& path) {
  if (rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
  return false;
}

}  // namespace allot::agent
