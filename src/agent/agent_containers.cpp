// The agent's container replicas (docs/jobs.md, "Images"; agent/container.h has the podman command lines): what
// podman is here, the launch of a replica's container, and its end.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "agent/health_checks.h"

namespace allot::agent {
namespace fs = std::filesystem;

namespace {

// podman's names: letters, digits, '_', '.', '-'; the agent's, job's and replica's parts, so that an operator
// reading `podman ps` knows whose it is.
std::string container_name(const std::string& agent, const Assignment& a) {
  std::string out = "allot-" + agent + "-" + a.job + "-" + std::to_string(a.rank) + "-" + std::to_string(a.attempt);
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') c = '_';
  return out;
}

// The pid podman wrote, when the file holds one.
std::optional<pid_t> read_pidfile(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  if (!(in >> pid) || pid <= 1) return std::nullopt;
  return static_cast<pid_t>(pid);
}

}  // namespace

void Agent::detect_containers() {
  if (geteuid() != 0) {
    podman_.problem = "the agent does not run as root, and allot drives podman rootful";
  } else {
    podman_ = detect_podman(opt_.containers);
  }
  // No container runs without its init and the agent's lifeline: it would outlive an agent killed with its
  // watchdog and the replica's shim (agent/container.h).
  if (podman_.usable) {
    if (auto problem = container_init_problem(opt_.containers.init); !problem.empty()) {
      podman_.usable = false;
      podman_.problem = problem;
    } else if (auto lifeline = ContainerLifeline::create(); !lifeline) {
      podman_.usable = false;
      podman_.problem = lifeline.error().message;
    } else {
      lifeline_ = std::move(*lifeline);
    }
  }
  say(describe(podman_, opt_.containers));
  if (!podman_.usable) return;
  // The containers of an earlier agent of this node that are still known to podman: their processes were ended with
  // the records above (end_leftovers); what podman keeps of them goes now.
  auto list = run_with_timeout(podman_leftovers_argv(opt_.containers, opt_.name), std::chrono::seconds(30));
  if (list.exit_code != 0) {
    say("cannot list the containers an earlier agent left: " + list.output);
    return;
  }
  std::istringstream ids(list.output);
  for (std::string id; ids >> id;) {
    auto rm = run_with_timeout(podman_rm_argv(opt_.containers, id), std::chrono::seconds(30));
    say("removed the container " + id + " an earlier agent left" + (rm.exit_code == 0 ? "" : ": " + rm.output));
  }
}

Result<Agent::ContainerLaunch> Agent::container_launch(const Assignment& run, const LaunchSpec& process, const Identity& who,
                                                       const std::string& log_dir) {
  const ContainerAssignment& c = *run.container;
  if (!podman_.usable) return Error::precondition("this node cannot run containers (" + podman_.problem + ")");
  // Container root is the team's own host uid only with a block of uids per team: with one user for every team,
  // two teams' containers would share it.
  if (!team_uids_ || !opt_.uid_range)
    return Error::precondition("this agent runs containers only with --run-as-range (a block of host uids per team for its "
                               "user namespace)");
  ContainerLaunch out;
  out.name = container_name(opt_.name, run);
  out.pidfile = (fs::path(log_dir) / ("rank-" + std::to_string(run.rank) + ".pid")).string();
  std::error_code ec;
  fs::remove(out.pidfile, ec);
  // The image's own PATH, HOME and user names stand unless the job sets them: the agent's are the host's.
  std::map<std::string, std::string> env = process.env;
  for (const char* k : {"PATH", "HOME", "USER", "LOGNAME"})
    if (!run.env.count(k)) env.erase(k);
  const std::string env_file = (fs::path(log_dir) / ("rank-" + std::to_string(run.rank) + ".env")).string();
  if (auto st = write_env_file(env_file, env); !st) return st.error();
  ContainerRun cr;
  cr.name = out.name;
  cr.agent = opt_.name;
  cr.image = c.image;
  cr.command = run.command;
  cr.args = c.args;
  cr.env_file = env_file;
  cr.first_uid = who.uid;
  cr.uids = opt_.uid_range->block;
  cr.shm_mib = c.shm_mib;
  cr.memory_mib = run.memory_mib;
  cr.vcpu_milli = run.vcpu_milli;
  cr.cpus = process.cpus;
  cr.work_dir = process.work_dir;
  cr.checkpoint_dir = run.checkpoint_dir;
  cr.volumes = c.volumes;
  const std::string kind = run.accelerator_kind.empty() ? accelerator_kind_name(facts_.kind) : run.accelerator_kind;
  if (kind == "nvidia-gpu" && !inv_.mig_devices.empty()) {
    // A MIG node: the replica's MIG devices, then the EFA devices (docs/mig.md).
    cr.devices = mig_container_devices(inv_.mig_devices, run.accelerators);
    for (auto& d : container_devices("none", {}, /*efa=*/true)) cr.devices.push_back(std::move(d));
  } else {
    cr.devices = container_devices(kind, run.accelerators, /*efa=*/true);
  }
  cr.cap_add = c.cap_add;
  cr.pidfile = out.pidfile;
  cr.init = opt_.containers.init;
  out.run.argv = podman_run_argv(opt_.containers, cr, container_ulimits());
  out.run.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, {"HOME", "/root"}, {"LANG", "C.UTF-8"}};
  out.run.cpus = process.cpus;
  out.run.work_dir = process.work_dir;
  out.run.fd3 = lifeline_.read_fd();
  out.pull_argv = podman_pull_argv(opt_.containers, c.image, c.auth_file, c.pull_policy);
  return out;
}

void Agent::record_containers() {
  bool changed = false;
  for (auto& [key, r] : replicas_) {
    if (!r.a.container || r.exited || r.container_recorded || r.pidfile.empty() || !procs_.running(key)) continue;
    auto pid = read_pidfile(r.pidfile);
    if (!pid) continue;
    // The container's first process leads its own session in its own pid namespace: ending it ends every process
    // of the container, which is what the watchdog and a restarted agent do with this record.
    records_[key + "#container"] = ReplicaRecord{key + "#container", *pid, *pid, process_start_time(*pid).value_or(0), ""};
    r.container_recorded = true;
    changed = true;
  }
  if (changed) persist();
}

void Agent::end_container(const std::string& key, Replica& r, const Exited& e) {
  const std::string record = key + "#container";
  bool outlived = false;
  if (auto it = records_.find(record); it != records_.end()) {
    // podman was killed before its container (a stop's grace ran out, or the agent is going): the container's
    // first process goes now, with the pid namespace it leads.
    const ReplicaRecord& rec = it->second;
    if (rec.pid > 1 && process_start_time(rec.pid).value_or(0) == rec.start_time && rec.start_time != 0) {
      say("the container of replica " + key + " outlived podman; killing it (pid " + std::to_string(rec.pid) + ")");
      ::kill(rec.pid, SIGKILL);
      outlived = true;
    }
    records_.erase(it);
  }
  // What podman keeps of it: nothing when podman exited by itself (--rm removed it; not calling podman again
  // saves about 0.3 s per exit); podman ended by a signal (a stop's grace ran out, or a kill) cleaned up nothing.
  // A container left anyway (podman could not remove it) goes at the agent's next start (leftovers by label).
  if (!e.exited_itself || outlived) {
    auto rm = run_with_timeout(podman_rm_argv(opt_.containers, r.container), std::chrono::seconds(20));
    if (rm.exit_code != 0) say("cannot remove the container " + r.container + ": " + rm.output);
  }
  std::error_code ec;
  fs::remove(fs::path(r.log_path).parent_path() / ("rank-" + std::to_string(r.a.rank) + ".env"), ec);
  fs::remove(r.pidfile, ec);
}

}  // namespace allot::agent
