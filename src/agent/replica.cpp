#include "agent/replica.h"

#include <algorithm>

#include "config/container_rules.h"
#include "agent/membership.h"
#include "config/log_rules_json.h"

namespace allot::agent {
namespace {

std::string list_of(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

bool absolute_path(const std::string& p) { return !p.empty() && p.front() == '/' && p.size() <= 4096 && p.find('\0') == std::string::npos; }

// The `container` object of an assignment. The server checked it against the spec's rules and the team's
// settings; the agent still refuses a shape it could not run safely (a relative path, a volume option smuggled
// into a path, an unknown pull policy), naming what was wrong.
Result<ContainerAssignment> container_from_json(const nlohmann::json& c, const std::string& slot) {
  const std::string where = "the container of " + slot;
  if (!c.is_object()) return Error::invalid(where + " must be an object");
  ContainerAssignment out;
  out.image = c.value("image", std::string());
  if (out.image.empty() || out.image.size() > 1024 || out.image.front() == '-')
    return Error::invalid(where + " needs an image reference (1-1024 characters, not starting with '-')");
  const std::string policy = c.value("pull_policy", std::string("IfNotPresent"));
  auto p = config::pull_policy_named(policy);
  if (!p) return Error::invalid(where + ": pull_policy " + policy + " is not one of IfNotPresent, Always, Never");
  out.pull_policy = *p;
  out.shm_mib = c.value("shm_mib", int64_t{64});
  if (out.shm_mib < 1 || out.shm_mib > (int64_t{1} << 30)) return Error::invalid(where + ": shm_mib must be 1..1073741824");
  if (c.contains("volumes")) {
    for (const auto& v : c.at("volumes")) {
      Volume vol{v.at("host_path").get<std::string>(), v.at("path").get<std::string>(), v.value("read_only", false)};
      // A ':' would let a path carry podman's volume options ("...:/x:rw,suid"): refused, as a relative path is.
      for (const std::string* path : {&vol.host_path, &vol.container_path})
        if (!absolute_path(*path) || path->find(':') != std::string::npos || path->find(',') != std::string::npos)
          return Error::invalid(where + ": volume path " + *path + " must be absolute, without ':' or ','");
      out.volumes.push_back(std::move(vol));
    }
  }
  out.cap_add = c.value("cap_add", std::vector<std::string>{});
  for (const auto& cap : out.cap_add)
    if (cap.empty() || cap.size() > 64 || cap.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos)
      return Error::invalid(where + ": capability " + cap + " is not a capability name (capitals and '_')");
  out.auth_file = c.value("auth_file", std::string());
  if (!out.auth_file.empty() && !absolute_path(out.auth_file)) return Error::invalid(where + ": auth_file must be an absolute path");
  // Each one argv item of the container's first process: podman passes them on as they are, no shell reads them.
  out.args = c.value("args", std::vector<std::string>{});
  for (const auto& a : out.args)
    if (a.find('\0') != std::string::npos) return Error::invalid(where + ": an argument holds a NUL byte");
  return out;
}

}  // namespace

Result<Assignment> assignment_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Error::invalid("a replica assignment must be an object, got " + j.dump());
  try {
    Assignment a;
    a.job = j.at("job").get<std::string>();
    a.rank = j.at("rank").get<int>();
    a.team = j.value("team", std::string());
    a.world_size = j.value("world_size", 1);
    a.local_rank = j.value("local_rank", 0);
    a.master_addr = j.value("master_addr", std::string("127.0.0.1"));
    a.master_port = j.value("master_port", 0);
    a.hold = j.value("hold", false);
    a.command = j.value("command", std::vector<std::string>{});
    if (j.contains("env") && j["env"].is_object())
      for (const auto& [k, v] : j["env"].items()) a.env[k] = v.is_string() ? v.get<std::string>() : v.dump();
    a.accelerators = j.value("accelerators", std::vector<int>{});
    a.accelerator_kind = j.value("accelerator_kind", std::string());
    a.cpus = j.value("cpus", std::string());
    a.attempt = j.value("attempt", 0);
    a.attempt_shown = j.value("attempt_shown", a.attempt);  // sent only where it differs
    a.vcpu_milli = j.value("vcpu_milli", int64_t{0});
    a.memory_mib = j.value("memory_mib", int64_t{0});
    a.checkpoint_root = j.value("checkpoint_root", std::string());
    a.restart_count = j.value("restart_count", 0);
    if (a.job.empty()) return Error::invalid("a replica assignment has an empty job name");
    if (j.contains("container")) {
      auto c = container_from_json(j["container"], a.slot());
      if (!c) return c.error();
      a.container = std::move(*c);
    }
    if (j.contains("log_rules")) {
      // Compiled again here: an assignment whose rules do not compile (a server of another version) is refused,
      // never half-applied.
      a.log_rules = config::log_rules_from_json(j["log_rules"]);
      if (auto st = check_log_rules(a.log_rules); !st) return Error::invalid("the log rules of " + a.slot() + ": " + st.error().message);
    }
    if (j.contains("membership")) {
      auto m = membership_from_json(j["membership"], a.slot());
      if (!m) return m.error();
      a.membership = std::move(*m);
    }
    // A container without a command runs its image's entrypoint; a process needs one.
    if (a.command.empty() && !a.container) return Error::invalid("the assignment of " + a.slot() + " has no command");
    return a;
  } catch (const nlohmann::json::exception& e) {
    return Error::invalid("malformed replica assignment " + j.dump() + ": " + e.what());
  }
}

std::map<std::string, std::string> replica_env(const Assignment& a, const MachineFacts& m) {
  std::map<std::string, std::string> env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"LANG", "C.UTF-8"}};
  if (!m.home.empty()) env["HOME"] = m.home;
  if (!m.user.empty()) env["USER"] = env["LOGNAME"] = m.user;
  for (const auto& [k, v] : a.env) env[k] = v;
  env["ALLOT_JOB"] = a.job;
  env["ALLOT_ATTEMPT"] = std::to_string(a.attempt_shown);
  env["ALLOT_RESTART_COUNT"] = std::to_string(a.restart_count);
  if (!a.checkpoint_dir.empty()) env["ALLOT_CHECKPOINT_DIR"] = a.checkpoint_dir;
  env["RANK"] = std::to_string(a.rank);
  env["WORLD_SIZE"] = std::to_string(a.world_size);
  env["LOCAL_RANK"] = std::to_string(a.local_rank);
  env["MASTER_ADDR"] = a.master_addr;
  env["MASTER_PORT"] = std::to_string(a.master_port);
  if (a.membership) env["ALLOT_MEMBERSHIP_EPOCH"] = std::to_string(a.membership->epoch);
  AcceleratorKind kind = m.kind;
  if (a.accelerator_kind == "nvidia-gpu") kind = AcceleratorKind::kNvidiaGpu;
  else if (a.accelerator_kind == "neuron") kind = AcceleratorKind::kNeuron;
  else if (a.accelerator_kind == "none") kind = AcceleratorKind::kNone;
  if (kind == AcceleratorKind::kNvidiaGpu) {
    // An empty list hides every GPU: a CPU-only replica on a GPU node must not grab one by accident.
    env["CUDA_VISIBLE_DEVICES"] = list_of(a.accelerators);
    if (!m.mig_uuids.empty()) {
      // CUDA takes MIG devices by UUID only (docs/mig.md). An index past the node's devices is left out: the server
      // assigns indices of the type the node registered as, which has exactly these devices.
      std::string uuids;
      for (int d : a.accelerators)
        if (d >= 0 && static_cast<size_t>(d) < m.mig_uuids.size()) uuids += (uuids.empty() ? "" : ",") + m.mig_uuids[d];
      env["CUDA_VISIBLE_DEVICES"] = uuids;
    }
  } else if (kind == AcceleratorKind::kNeuron) {
    // The Neuron runtime counts NeuronCores, not devices: device d owns cores [d*k, (d+1)*k).
    const int k = m.neuron_cores_per_device > 0 ? m.neuron_cores_per_device : 1;
    std::vector<int> cores;
    for (int d : a.accelerators)
      for (int c = 0; c < k; ++c) cores.push_back(d * k + c);
    std::sort(cores.begin(), cores.end());
    env["NEURON_RT_VISIBLE_CORES"] = format_cpu_list(cores);
  }
  return env;
}

Result<LaunchSpec> launch_spec(const Assignment& a, const MachineFacts& m, const std::string& log_path,
                               const std::string& work_dir) {
  LaunchSpec s;
  s.argv = a.command;
  s.env = replica_env(a, m);
  if (!a.cpus.empty()) {
    auto wanted = parse_cpu_list(a.cpus);
    if (!wanted) return Error::invalid("replica " + a.slot() + ": " + wanted.error().message);
    s.cpus = clamp_cpus(*wanted, m.cpus);
  }
  s.log_path = log_path;
  s.work_dir = work_dir;
  return s;
}

}  // namespace allot::agent
