#include "agent/cgroups.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

std::optional<std::string> cgroup1_mount(std::string_view mountinfo, std::string_view controller) {
  std::istringstream in{std::string(mountinfo)};
  for (std::string line; std::getline(in, line);) {
    auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 7, "cgroup ") != 0) continue;
    // After " - ": fstype source super-options; the options list the controllers.
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype, source, options;
    if (!(tail >> fstype >> source >> options)) continue;
    std::replace(options.begin(), options.end(), ',', ' ');
    if (!has_word(options, std::string(controller))) continue;
    std::istringstream f(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    if (f >> id >> parent >> dev >> root >> mount_point) return mount_point;
  }
  return std::nullopt;
}

std::optional<std::string> cgroup1_path(std::string_view proc_self_cgroup, std::string_view controller) {
  // "hierarchy-id:controller,controller:path"; v2's line has an empty controller list.
  std::istringstream in{std::string(proc_self_cgroup)};
  for (std::string line; std::getline(in, line);) {
    auto a = line.find(':');
    auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string ctls = line.substr(a + 1, b - a - 1);
    std::replace(ctls.begin(), ctls.end(), ',', ' ');
    if (has_word(ctls, std::string(controller))) return line.substr(b + 1);
  }
  return std::nullopt;
}

const char* cgroup_version_name(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::kNone: return "none";
    case CgroupVersion::kV1: return "v1";
    case CgroupVersion::kV2: return "v2";
  }
  return "?";
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
  for (const auto& d : extra_) (void)rmdir(d.c_str());
}

namespace {
const std::string kNoLimits = "; replicas run in their own process group only (no memory or CPU limits)";
}  // namespace

Cgroups Cgroups::detect(const std::string& dir_name, const CgroupBases& bases) {
  // v2 when it limits something; else v1 when it does; else v2 that only holds the processes; else none.
  Cgroups v2;
  if (!bases.any() || !bases.v2.empty()) v2 = detect_v2(dir_name, bases.v2);
  if (v2.memory_ || v2.cpu_) return v2;
  Cgroups v1;
  if (!bases.any() || !bases.v1_memory.empty() || !bases.v1_cpu.empty()) v1 = detect_v1(dir_name, bases);
  if (v1.available()) {
    if (v2.available()) v2.remove_if_empty();
    return v1;
  }
  if (v2.available()) return v2;
  Cgroups none;
  none.summary_ = v2.summary_.empty() ? v1.summary_ : v1.summary_.empty() ? v2.summary_ : v2.summary_ + "; " + v1.summary_.substr(9);
  if (none.summary_.empty()) none.summary_ = "cgroups: none found" + kNoLimits;
  return none;
}

Cgroups Cgroups::detect_v1(const std::string& dir_name, const CgroupBases& bases) {
  Cgroups c;
  const std::string mountinfo = bases.any() ? "" : slurp("/proc/self/mountinfo");
  const std::string self = bases.any() ? "" : slurp("/proc/self/cgroup");
  // The agent's own directory in a hierarchy, as the v2 one: a v1 hierarchy nests (memory.use_hierarchy), so a
  // container's limit still holds its replicas.
  auto base_of = [&](const char* ctl, const std::string& given) -> std::string {
    if (bases.any()) return given;
    auto mount = cgroup1_mount(mountinfo, ctl);
    auto own = cgroup1_path(self, ctl);
    if (!mount || !own) return "";
    return (fs::path(*mount) / own->substr(own->empty() ? 0 : 1)).lexically_normal().string();
  };
  std::string why;
  auto make = [&](const char* ctl, const std::string& base) -> std::string {
    if (base.empty()) return "";
    std::string b = base;
    while (b.size() > 1 && b.back() == '/') b.pop_back();
    const std::string dir = (fs::path(b) / dir_name).string();
    std::error_code ec;
    fs::create_directory(dir, ec);
    if (fs::is_directory(dir) && access(dir.c_str(), W_OK) == 0) return dir;
    why += std::string(why.empty() ? "" : "; ") + "cannot create " + dir + " in the v1 " + ctl + " hierarchy (" +
           (ec ? ec.message() : "not writable") + ")";
    return "";
  };
  const std::string mem = make("memory", base_of("memory", bases.v1_memory));
  const std::string cpu = make("cpu", base_of("cpu", bases.v1_cpu));
  if (mem.empty() && cpu.empty()) {
    c.summary_ = why.empty() ? "" : "cgroups: " + why + kNoLimits;
    return c;
  }
  c.version_ = CgroupVersion::kV1;
  c.dir_ = !mem.empty() ? mem : cpu;
  if (!mem.empty() && !cpu.empty()) c.extra_ = {cpu};
  c.memory_dir_ = mem;
  c.cpu_dir_ = cpu;
  c.memory_ = !mem.empty();
  c.cpu_ = !cpu.empty();
  if (why.empty()) why = std::string("no v1 ") + (c.memory_ ? "cpu" : "memory") + " hierarchy is mounted";
  c.summary_ = "cgroups: each replica gets its own cgroup v1 under " + c.dir_ + (c.extra_.empty() ? "" : " and " + cpu) +
               (c.memory_ && c.cpu_ ? " with memory.limit_in_bytes and cpu.cfs_quota_us from its request"
                : c.memory_        ? " with memory.limit_in_bytes from its request; only memory limits apply (" + why + ")"
                                   : " with cpu.cfs_quota_us from its request; only CPU limits apply (" + why + ")");
  return c;
}

Cgroups Cgroups::detect_v2(const std::string& dir_name, const std::string& base_override) {
  Cgroups c;
  const std::string& none = kNoLimits;
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
  c.version_ = CgroupVersion::kV2;
  c.dir_ = dir;
  if (c.memory_) c.memory_dir_ = dir;
  if (c.cpu_) c.cpu_dir_ = dir;
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
  const std::vector<std::string> extra = extra_paths(path);
  auto fail = [&](const Error& e) -> Result<std::string> {
    (void)remove_cgroup(path);
    for (const auto& p : extra) (void)remove_cgroup(p);
    return e;
  };
  for (const std::string& p : [&] { auto all = extra; all.insert(all.begin(), path); return all; }())
    if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST)
      return fail(Error::internal("cannot create cgroup " + p + ": " + std::strerror(errno)));
  const std::string mem = memory_dir_.empty() ? "" : memory_dir_ + "/" + replica_name;
  const std::string cpu = cpu_dir_.empty() ? "" : cpu_dir_ + "/" + replica_name;
  std::error_code ec;
  if (memory_ && limits.memory_mib > 0) {
    const std::string bytes = memory_max_value(limits.memory_mib);
    // Without the swap limit a replica past its limit goes on in swap (slowing the whole node) instead of being
    // ended; the file exists only where the kernel accounts swap. v1's memsw limit is memory plus swap, and may
    // not be set below the memory limit, so it follows it.
    const bool v2 = version_ == CgroupVersion::kV2;
    if (auto st = write_file(mem + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), bytes); !st) return fail(st.error());
    const std::string swap = mem + (v2 ? "/memory.swap.max" : "/memory.memsw.limit_in_bytes");
    if (fs::exists(swap, ec))
      if (auto st = write_file(swap, v2 ? "0" : bytes); !st) return fail(st.error());
  }
  if (cpu_ && limits.vcpu_milli > 0) {
    if (version_ == CgroupVersion::kV2) {
      if (auto st = write_file(cpu + "/cpu.max", cpu_max_value(limits.vcpu_milli)); !st) return fail(st.error());
    } else {
      // v1 says the same as cpu.max in two files: the period first, then the quota within it.
      const std::string v = cpu_max_value(limits.vcpu_milli);
      const auto space = v.find(' ');
      if (auto st = write_file(cpu + "/cpu.cfs_period_us", v.substr(space + 1)); !st) return fail(st.error());
      if (auto st = write_file(cpu + "/cpu.cfs_quota_us", v.substr(0, space)); !st) return fail(st.error());
    }
  }
  return path;
}

std::vector<std::string> Cgroups::extra_paths(const std::string& path) const {
  std::vector<std::string> out;
  const std::string name = fs::path(path).filename().string();
  for (const auto& d : extra_) out.push_back(d + "/" + name);
  return out;
}

std::vector<std::string> Cgroups::children() const {
  std::vector<std::string> out;
  std::error_code ec;
  if (dir_.empty()) return out;
  std::vector<std::string> dirs = extra_;
  dirs.insert(dirs.begin(), dir_);
  for (const auto& d : dirs)
    for (const auto& e : fs::directory_iterator(d, ec))
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
  // v2's memory.events and v1's memory.oom_control are both "key value" lines with the same key.
  for (const char* file : {"/memory.events", "/memory.oom_control"}) {
    std::istringstream in(slurp(path + file));
    std::string key;
    int64_t n = 0;
    while (in >> key >> n)
      if (key == "oom_kill") return n;
  }
  return 0;
}

bool remove_cgroup(const std::string& path) {
  if (rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
  return false;
}

void sweep_agent_dir(const std::string& dir, int wait_ms) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory() || e.path().filename().string().rfind("r-", 0) != 0) continue;
    (void)kill_cgroup(e.path().string(), wait_ms);
    (void)remove_cgroup(e.path().string());
  }
  (void)rmdir(dir.c_str());
}

}  // namespace allot::agent
