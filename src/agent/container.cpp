#include "agent/container.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/health_checks.h"

namespace allot::agent {
namespace fs = std::filesystem;
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::vector<std::string> podman_base(const ContainerOptions& opt) {
  std::vector<std::string> argv = {opt.podman};
  if (!opt.runtime.empty()) argv.insert(argv.end(), {"--runtime", opt.runtime});
  if (!opt.cgroup_manager.empty()) argv.insert(argv.end(), {"--cgroup-manager", opt.cgroup_manager});
  return argv;
}

uint64_t below_hard(int resource, uint64_t cap) {
  rlimit rl{};
  if (getrlimit(resource, &rl) != 0 || rl.rlim_max == RLIM_INFINITY) return cap;
  const uint64_t hard = rl.rlim_max;
  return std::max<uint64_t>(1, std::min(cap, hard > 1 ? hard - 1 : hard));
}

}  // namespace

PodmanFacts detect_podman(const ContainerOptions& opt) {
  PodmanFacts f;
  auto v = run_with_timeout({opt.podman, "version", "--format", "{{.Client.Version}}"}, std::chrono::seconds(20));
  if (!v.started || v.exit_code == 127 || (!v.timed_out && v.exit_code != 0 && v.output.find("not found") != std::string::npos)) {
    f.problem = opt.podman + " is not installed (apt-get install podman runc uidmap)";
    return f;
  }
  if (v.timed_out || v.exit_code != 0) {
    f.problem = "`" + opt.podman + " version` failed: " + trimmed(v.output);
    return f;
  }
  f.version = trimmed(v.output);
  // podman's runtime started with the agent's own flags (a runtime or cgroup manager it cannot use fails here, not at
  // the first replica). Not `podman info`: it looks up the packages of the runtime and conmon (dpkg-query --search
  // over every installed file list), ten times the CPU of this, at every agent start.
  auto probe = podman_base(opt);
  probe.insert(probe.end(), {"ps", "--all", "--quiet", "--filter", "label=allot.probe=none"});
  auto ps = run_with_timeout(probe, std::chrono::seconds(30));
  if (ps.timed_out || ps.exit_code != 0) {
    f.problem = "`" + opt.podman + " ps` with runtime " + opt.runtime + " and cgroup manager " + opt.cgroup_manager +
                " failed: " + trimmed(ps.output);
    return f;
  }
  f.usable = true;
  return f;
}

std::string default_container_init() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : (self.parent_path() / "allot-container-init").string();
}

std::string container_init_problem(const std::string& path) {
  if (path.empty()) return "no container init was given (--container-init)";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return "the container init " + path + " is missing (allot-container-init is built beside allot; or --container-init PATH)";
  if (!S_ISREG(st.st_mode) || (st.st_mode & S_IXUSR) == 0) return "the container init " + path + " is not an executable file";
  return "";
}

Result<ContainerLifeline> ContainerLifeline::create() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Error::internal(std::string("cannot create the containers' lifeline pipe: ") + std::strerror(errno));
  ContainerLifeline l;
  l.read_ = fds[0];
  l.write_ = fds[1];
  return l;
}

ContainerLifeline& ContainerLifeline::operator=(ContainerLifeline&& o) noexcept {
  if (this != &o) {
    close_both();
    read_ = o.read_, write_ = o.write_;
    o.read_ = o.write_ = -1;
  }
  return *this;
}

ContainerLifeline::~ContainerLifeline() { close_both(); }

void ContainerLifeline::close_both() {
  if (read_ >= 0) close(read_);
  if (write_ >= 0) close(write_);
  read_ = write_ = -1;
}

std::string describe(const PodmanFacts& f, const ContainerOptions& opt) {
  if (!f.usable) return "containers: off (" + f.problem + "); jobs with an image fail to start here";
  return "containers: podman " + f.version + " (runtime " + opt.runtime + ", cgroup manager " + opt.cgroup_manager + "; init " +
         opt.init + ")";
}

// 32768 processes: runc on Debian bookworm refused 65536 under a hard limit of 96365 (EPERM from setrlimit).
Ulimits container_ulimits() { return {below_hard(RLIMIT_NOFILE, 1048576), below_hard(RLIMIT_NPROC, 32768)}; }

std::vector<std::string> podman_run_argv(const ContainerOptions& opt, const ContainerRun& r, const Ulimits& limits) {
  std::vector<std::string> a = podman_base(opt);
  const std::string map = "0:" + std::to_string(r.first_uid) + ":" + std::to_string(r.uids);
  a.insert(a.end(), {"run", "--rm", "--name", r.name, "--label", "allot.agent=" + r.agent,
                     // Pulled beforehand by the agent (podman_pull_argv): a run never reaches a registry.
                     "--pull", "never",
                     "--uidmap", map, "--gidmap", map,
                     "--network", "host", "--ipc", "private", "--shm-size", std::to_string(r.shm_mib) + "m",
                     "--security-opt", "no-new-privileges", "--cap-drop", "all",
                     "--ulimit", "nofile=" + std::to_string(limits.nofile) + ":" + std::to_string(limits.nofile),
                     "--ulimit", "nproc=" + std::to_string(limits.nproc) + ":" + std::to_string(limits.nproc),
                     "--env-file", r.env_file,
                     // SIGTERM from the agent reaches the container's first process; podman waits for it.
                     "--sig-proxy=true", "--stop-timeout", "5"});
  for (const auto& c : r.cap_add) a.insert(a.end(), {"--cap-add", c});
  if (!r.pidfile.empty()) a.insert(a.end(), {"--pidfile", r.pidfile});
  // The init ends the container when the agent's lifeline, its fd 3, closes (agent/container.h).
  if (!r.init.empty()) a.insert(a.end(), {"--init", "--init-path", r.init, "--preserve-fds", "1"});
  if (r.memory_mib > 0) a.insert(a.end(), {"--memory", std::to_string(r.memory_mib) + "m"});
  if (r.vcpu_milli > 0) {
    char cpus[32];
    std::snprintf(cpus, sizeof cpus, "%.3f", static_cast<double>(r.vcpu_milli) / 1000.0);
    a.insert(a.end(), {"--cpus", cpus});
  }
  if (!r.cpus.empty()) {
    std::string list;
    for (int c : r.cpus) list += (list.empty() ? "" : ",") + std::to_string(c);
    a.insert(a.end(), {"--cpuset-cpus", list});
  }
  for (const auto& d : r.devices) a.insert(a.end(), {"--device", d});
  if (!r.work_dir.empty()) a.insert(a.end(), {"--volume", r.work_dir + ":" + r.work_dir, "--workdir", r.work_dir});
  if (!r.checkpoint_dir.empty()) a.insert(a.end(), {"--volume", r.checkpoint_dir + ":" + r.checkpoint_dir});
  for (const auto& v : r.volumes)
    a.insert(a.end(), {"--volume", v.host_path + ":" + v.container_path + (v.read_only ? ":ro" : "")});
  // A command replaces the image's entrypoint, as Kubernetes' `command` does (docs/jobs.md, "Images"); without
  // one the image's entrypoint runs with its own arguments.
  if (!r.command.empty()) a.insert(a.end(), {"--entrypoint", nlohmann::json(r.command).dump()});
  a.push_back(r.image);
  // The args follow the image, as Kubernetes' args: the entrypoint (or the command) gets them as its argv, in place
  // of the image's CMD. podman reads no option after the image, so an argument beginning with '-' is the job's.
  a.insert(a.end(), r.args.begin(), r.args.end());
  return a;
}

std::vector<std::string> podman_rm_argv(const ContainerOptions& opt, const std::string& name) {
  auto a = podman_base(opt);
  a.insert(a.end(), {"rm", "--force", "--ignore", "--time", "0", name});
  return a;
}

std::vector<std::string> podman_leftovers_argv(const ContainerOptions& opt, const std::string& agent) {
  auto a = podman_base(opt);
  a.insert(a.end(), {"ps", "--all", "--quiet", "--filter", "label=allot.agent=" + agent});
  return a;
}

std::vector<std::string> podman_pull_argv(const ContainerOptions& opt, const std::string& image, const std::string& auth_file,
                                          PullPolicy policy) {
  auto pull = podman_base(opt);
  pull.insert(pull.end(), {"pull", "--quiet"});
  if (!auth_file.empty()) pull.insert(pull.end(), {"--authfile", auth_file});
  pull.push_back(image);
  switch (policy) {
    case PullPolicy::kNever:
      // No pull, but an image that is not on the node fails here, as an image pull failure (the job's), rather
      // than as `podman run`'s own error.
      return {"/bin/sh", "-c", "\"$1\" image exists \"$2\" && exit 0; echo \"$2: not on this node, and image_pull_policy is Never\" >&2; exit 1",
              "allot-pull", opt.podman, image};
    case PullPolicy::kAlways: return pull;
    case PullPolicy::kIfNotPresent: {
      // $1: podman, $2: the image; the pull's own argv follows.
      std::vector<std::string> a = {"/bin/sh", "-c", "\"$1\" image exists \"$2\" && exit 0; shift 2; exec \"$@\"", "allot-pull",
                                    opt.podman, image};
      a.insert(a.end(), pull.begin(), pull.end());
      return a;
    }
  }
  return pull;
}

namespace {

// Whether a CDI spec in one of `cdi_dirs` names NVIDIA GPUs (the container toolkit generated one): devices are then
// given to podman by their CDI names instead of as device nodes.
bool has_nvidia_cdi_spec(const std::vector<std::string>& cdi_dirs) {
  std::error_code ec;
  for (const auto& dir : cdi_dirs)
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::ifstream in(e.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("nvidia.com/gpu") != std::string::npos) return true;
    }
  return false;
}

}  // namespace

std::vector<std::string> container_devices(const std::string& kind, const std::vector<int>& accelerators, bool efa,
                                           const std::vector<std::string>& cdi_dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  auto exists = [&](const std::string& p) { return fs::exists(p, ec); };
  if (kind == "nvidia-gpu" && !accelerators.empty()) {
    const bool cdi = has_nvidia_cdi_spec(cdi_dirs);
    for (int g : accelerators) {
      if (cdi) out.push_back("nvidia.com/gpu=" + std::to_string(g));
      else if (exists("/dev/nvidia" + std::to_string(g))) out.push_back("/dev/nvidia" + std::to_string(g));
    }
    if (!cdi)
      for (const char* d : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"})
        if (exists(d)) out.push_back(d);
  } else if (kind == "neuron") {
    for (int d : accelerators)
      if (exists("/dev/neuron" + std::to_string(d))) out.push_back("/dev/neuron" + std::to_string(d));
  }
  if (efa)
    for (const auto& e : fs::directory_iterator("/dev/infiniband", ec))
      if (e.path().filename().string().rfind("uverbs", 0) == 0) out.push_back(e.path().string());
  return out;
}

std::vector<std::string> mig_container_devices(const std::vector<interop::MigDevice>& devices, const std::vector<int>& accelerators,
                                               const std::vector<std::string>& cdi_dirs) {
  std::vector<std::string> out;
  std::error_code ec;
  const bool cdi = has_nvidia_cdi_spec(cdi_dirs);
  std::vector<int> gpus;
  for (int a : accelerators) {
    if (a < 0 || static_cast<size_t>(a) >= devices.size()) continue;
    const auto& d = devices[static_cast<size_t>(a)];
    if (cdi) out.push_back("nvidia.com/gpu=" + std::to_string(d.gpu) + ":" + std::to_string(d.device));
    else if (std::find(gpus.begin(), gpus.end(), d.gpu) == gpus.end()) gpus.push_back(d.gpu);
  }
  if (!cdi) {
    for (int g : gpus)
      if (fs::exists("/dev/nvidia" + std::to_string(g), ec)) out.push_back("/dev/nvidia" + std::to_string(g));
    if (!gpus.empty())
      for (const char* d : {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-caps"})
        if (fs::exists(d, ec)) out.push_back(d);
  }
  return out;
}

Status write_env_file(const std::string& path, const std::map<std::string, std::string>& env) {
  std::string text;
  for (const auto& [k, v] : env) {
    if (v.find('\n') != std::string::npos || k.find('\n') != std::string::npos)
      return Error::invalid("the variable " + k + " holds a newline, which a container's environment file cannot carry");
    text += k + "=" + v + "\n";
  }
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Error::internal("cannot write " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == text.size() && fchmod(fd, 0600) == 0;
  close(fd);
  if (!ok) return Error::internal("cannot write " + path);
  return ok_status();
}

std::string read_tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const auto size = static_cast<size_t>(in.tellg());
  const size_t from = size > bytes ? size - bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string text(size - from, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (from > 0)
    if (auto nl = text.find('\n'); nl != std::string::npos && nl + 1 < text.size()) text.erase(0, nl + 1);
  return text;
}


}  // namespace allot::agent
