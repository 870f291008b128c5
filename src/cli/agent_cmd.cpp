// `allot agent --server URL [--ca FILE] [--name NAME] [--instance-type TYPE] [--instance-types FILE] [--labels k=v,k=v]
// [--instance-id ID] [--ec2-topology FILE] [--work-dir DIR]
// [--address ADDR] [--heartbeat-interval S] [--stop-grace S] [--run-as USER | --run-as-range FIRST-LAST
// [--uids-per-team N]] [--allow-root] [--no-cgroups]
// [--health-config FILE] [--health-interval S] [--emulate-faults FILE] [--kmsg PATH] [--reboot-command CMD] [--replaces NODE]
// [--podman PATH] [--container-runtime NAME] [--container-cgroup-manager cgroupfs|systemd] [--container-init PATH]`:
// runs the node agent until SIGINT or SIGTERM, then stops its replicas. Exit codes: 0 after a clean stop,
// 2 for invalid flags (replicas that would run as root without --allow-root among them), a work directory
// another agent uses, or a registration the server refuses; 3 for a runtime failure.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <fstream>
#include <memory>
#include <sstream>

#include "agent/agent.h"
#include "agent/stress.h"
#include "auth/secret_file.h"
#include "cli/commands.h"
#include "config/spec_yaml.h"
#include "core/model/plans.h"
#include "core/placement/topology_levels.h"
#include "interop/ec2_topology.h"
#include "view/label_list.h"

namespace allot::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop = true; }

struct AgentArgs {
  std::string server, ca_file, name, instance_type, labels, work_dir, address, token, token_file, credential_file;
  std::string instance_types;  // --instance-types: the policy file whose instance_types the server was given too
  std::string plan;  // --plan: the capacity plan this node belongs to (the allot.dev/plan label)
  std::string instance_id;   // --instance-id: the node's EC2 instance id (the allot.dev/instance-id label)
  std::string ec2_topology;  // --ec2-topology: describe-instance-topology output holding this instance's layers
  double heartbeat_s = 1.0;
  double grace_s = 10.0;
  std::string run_as;
  std::string run_as_range;  // each team's replicas as its own uid (agent/team_uids.h)
  uint32_t uids_per_team = 65536;
  bool allow_root = false;
  bool no_cgroups = false;
  bool no_pid_namespace = false;
  std::string health_config, faults, reboot_command, replaces, kmsg;
  agent::ContainerOptions containers;
  double health_interval_s = 0;  // 0: as configured
  double deep_check_s = 2.0;
};

// The node's own network layers from an EC2 topology file (docs/topology.md, "Live nodes"), read once at start and
// sent in every registration; the server checks them by the same rule as `allot topology apply`. A file that cannot
// be read or parsed is an error (exit 2); a file without this instance is a warning, and the node registers without
// layers from it (a file older than the instance must not keep a node out of the cluster).
Result<std::optional<std::vector<std::string>>> own_layers(const std::string& path, const std::string& instance_id) {
  if (path.empty()) return std::optional<std::vector<std::string>>();
  if (instance_id.empty())
    return Error::invalid("--ec2-topology needs the node's instance id: --instance-id ID (or the label " +
                          std::string(kInstanceIdLabel) + " in --labels)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::invalid("--ec2-topology: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = interop::parse_ec2_instances(text.str());
  if (!parsed) return Error::invalid("--ec2-topology " + path + ": " + parsed.error().message);
  const interop::Ec2Instance* mine = interop::find_instance(*parsed, instance_id);
  if (!mine) {
    std::cerr << "allot agent: warning: instance " << instance_id << " is not in --ec2-topology " << path << " ("
              << parsed->instances.size() << " instances); the node registers without network layers from it\n";
    return std::optional<std::vector<std::string>>();
  }
  return std::optional<std::vector<std::string>>(mine->network_nodes);
}

std::string hostname() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host[0] ? host : "localhost";
}

bool loopback_url(const std::string& url) {
  return url.find("://127.") != std::string::npos || url.find("://localhost") != std::string::npos ||
         url.find("://[::1]") != std::string::npos;
}

int run_agent(const AgentArgs& a) {
  if (a.heartbeat_s <= 0 || a.grace_s < 0) {
    std::cerr << "allot agent: --heartbeat-interval must be positive and --stop-grace not negative\n";
    return 2;
  }
  auto labels = view::parse_label_list(a.labels);
  if (!labels) return std::cerr << "allot agent: --labels: " << labels.error().message << "\n", 2;
  auto api = client::ApiClient::connect(a.server, {.ca_file = client::resolve_ca_file(a.ca_file), .token = {}});
  if (!api) return std::cerr << "allot agent: " << api.error().message << "\n", 2;
  auto catalog = load_catalog(a.instance_types);
  if (!catalog) return std::cerr << "allot agent: --instance-types: " << catalog.error().message << "\n", 2;
  auto inv = agent::discover(a.instance_type, *catalog, a.name.empty() ? hostname() : a.name);
  if (!inv) return std::cerr << "allot agent: " << inv.error().message << "\n", 2;
  std::optional<agent::UidRange> range;
  if (!a.run_as_range.empty()) {
    if (!a.run_as.empty()) return std::cerr << "allot agent: give --run-as or --run-as-range, not both\n", 2;
    if (geteuid() != 0)
      return std::cerr << "allot agent: --run-as-range needs an agent started as root (it switches each replica to its team's uid)\n", 2;
    auto r = agent::parse_uid_range(a.run_as_range, a.uids_per_team);
    if (!r) return std::cerr << "allot agent: " << r.error().message << "\n", 2;
    range = *r;
  }
  // With a range, the agent's own identity is used only for what the agent does itself.
  auto user = range ? Result<agent::Identity>(agent::current_identity()) : agent::replica_identity(a.run_as, a.allow_root);
  if (!user) return std::cerr << "allot agent: " << user.error().message << "\n", 2;

  agent::AgentOptions opt;
  opt.name = a.name.empty() ? hostname() : a.name;
  opt.labels = *labels;
  if (!a.plan.empty()) opt.labels[std::string(kPlanLabel)] = a.plan;
  if (!a.instance_id.empty()) opt.labels[std::string(kInstanceIdLabel)] = a.instance_id;
  {
    auto id = opt.labels.find(std::string(kInstanceIdLabel));
    auto layers = own_layers(a.ec2_topology, id == opt.labels.end() ? "" : id->second);
    if (!layers) return std::cerr << "allot agent: " << layers.error().message << "\n", 2;
    opt.network_layers = std::move(*layers);
  }
  const char* tmp = std::getenv("TMPDIR");
  opt.work_dir = !a.work_dir.empty() ? a.work_dir : std::string(tmp && *tmp ? tmp : "/tmp") + "/allot-agent-" + opt.name;
  // On loopback every node is this machine; elsewhere the host name is what other nodes resolve.
  opt.address = !a.address.empty() ? a.address : loopback_url(a.server) ? "127.0.0.1" : hostname();
  opt.credential_file = a.credential_file;
  // The join token: --token, else --token-file, else $ALLOT_TOKEN. Prefer the file or the variable: flags show in ps.
  if (!a.token.empty()) {
    opt.join_token = a.token;
  } else if (!a.token_file.empty()) {
    auto t = auth::read_token_file(a.token_file);
    // A node that has joined registers with its saved credential on every later boot: the join token its first boot
    // used may be gone by then (a provisioner that removes it once used).
    const std::string saved = opt.credential_file.empty() ? opt.work_dir + "/credential" : opt.credential_file;
    if (!t && !auth::read_token_file(saved)) return std::cerr << "allot agent: " << t.error().message << "\n", 2;
    if (t) opt.join_token = *t;
  } else if (const char* env = std::getenv("ALLOT_TOKEN"); env && *env) {
    opt.join_token = env;
  }
  opt.heartbeat_interval = std::chrono::milliseconds(static_cast<int64_t>(a.heartbeat_s * 1000));
  opt.stop_grace = std::chrono::milliseconds(static_cast<int64_t>(a.grace_s * 1000));
  opt.shim_program = "/proc/self/exe";  // this binary: its hidden internal-replica-shim command (agent/shim.h)
  opt.user = *user;
  opt.uid_range = range;
  opt.cgroups = !a.no_cgroups;
  opt.pid_namespace = !a.no_pid_namespace;
  if (!a.health_config.empty()) {
    std::ifstream in(a.health_config);
    if (!in) return std::cerr << "allot agent: cannot read --health-config " << a.health_config << "\n", 2;
    std::stringstream text;
    text << in.rdbuf();
    auto cfg = agent::parse_health_config(text.str(), a.health_config);
    if (!cfg) return std::cerr << "allot agent: " << cfg.error().message << "\n", 2;
    opt.health = std::move(*cfg);
  }
  if (a.health_interval_s < 0 || a.deep_check_s <= 0)
    return std::cerr << "allot agent: --health-interval must not be negative and --deep-check-seconds must be positive\n", 2;
  if (a.health_interval_s > 0)
    for (auto& c : opt.health.checks) c.interval = std::chrono::milliseconds(static_cast<int64_t>(a.health_interval_s * 1000));
  opt.faults_path = a.faults;
  // XIDs: the kernel log of a real NVIDIA node by default; an emulated node reads only the file it is given.
  if (a.kmsg == "none") opt.kmsg_path.clear();
  else if (!a.kmsg.empty()) opt.kmsg_path = a.kmsg;
  else if (!inv->emulated && inv->kind == AcceleratorKind::kNvidiaGpu) opt.kmsg_path = "/dev/kmsg";
  opt.reboot_command = a.reboot_command;
  opt.replaces = a.replaces;
  opt.containers = a.containers;
  if (opt.containers.init.empty()) opt.containers.init = agent::default_container_init();
  opt.stress_seconds = a.deep_check_s;

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a server that hangs up must not kill the agent

  agent::Agent ag(std::move(opt), std::move(*inv), std::move(*api), std::cerr);
  // The watch's own connection: a long poll would hold up the heartbeats on the first one.
  if (auto watch = client::ApiClient::connect(a.server, {.ca_file = client::resolve_ca_file(a.ca_file), .token = {}}))
    ag.watch_with(std::move(*watch));
  auto st = ag.run(g_stop);
  if (!st) {
    std::cerr << "allot agent: " << st.error().message << "\n";
    return client::exit_code_for(st.error());
  }
  return 0;
}

}  // namespace

void add_agent_command(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<AgentArgs>();
  auto* cmd = app.add_subcommand("agent", "Run the node agent: register, heartbeat, run the replicas the server assigns");
  cmd->add_option("--server", a->server, "allot server URL, e.g. http://10.0.0.1:7070")->required();
  cmd->add_option("--ca", a->ca_file,
                  "PEM CA certificate an https:// server's certificate must chain to (default: $ALLOT_CA, then the "
                  "system's CAs)");
  cmd->add_option("--name", a->name, "Node name (default: the host name)");
  cmd->add_option("--instance-type", a->instance_type,
                  "Instance type; on a machine that does not have it, the agent emulates it (development, demo). A MIG type "
                  "(ml.p4de.24xlarge.mig-1g.10gb) emulates GPUs partitioned in that profile; on a machine whose GPUs are "
                  "partitioned, the agent registers as the MIG type they make (docs/mig.md)");
  cmd->add_option("--instance-types", a->instance_types,
                  "Policy file whose instance_types section adds types to the built-in catalog (give the server the same)");
  cmd->add_option("--labels", a->labels, "Node labels k=v,k=v (topology: network-node-layer-1..4, zone, ultraserver)");
  cmd->add_option("--instance-id", a->instance_id,
                  "The node's EC2 instance id (the label allot.dev/instance-id): `allot topology apply` and "
                  "--ec2-topology find the node by it");
  cmd->add_option("--ec2-topology", a->ec2_topology,
                  "`aws ec2 describe-instance-topology` output (JSON): this instance's network layers are sent with "
                  "its registration");
  cmd->add_option("--plan", a->plan,
                  "Capacity plan this node belongs to: it joins when the plan starts (waiting until then) and leaves "
                  "at its end");
  cmd->add_option("--work-dir", a->work_dir, "Where replica logs and working directories go (default: $TMPDIR/allot-agent-NAME)");
  cmd->add_option("--address", a->address, "Address other nodes reach this one at (MASTER_ADDR of rank 0)");
  cmd->add_option("--token", a->token, "Agent-join token (prefer --token-file or $ALLOT_TOKEN: flags show in ps)");
  cmd->add_option("--token-file", a->token_file, "File holding the agent-join token");
  cmd->add_option("--credential-file", a->credential_file,
                  "Where the node credential is kept once joined (default: <work-dir>/credential)");
  cmd->add_option("--heartbeat-interval", a->heartbeat_s, "Seconds between heartbeats")->capture_default_str();
  cmd->add_option("--stop-grace", a->grace_s, "Seconds between SIGTERM and SIGKILL when a replica is stopped")
      ->capture_default_str();
  cmd->add_option("--run-as", a->run_as,
                  "User (name or uid) replicas run as; an agent started as root switches to it before each replica "
                  "starts (default: the agent's own user)");
  cmd->add_option("--run-as-range", a->run_as_range,
                  "Uids FIRST-LAST for the replicas, cut into blocks of --uids-per-team: each team's replicas run as "
                  "the first uid of its own block (containers map their user namespace onto the block), so two "
                  "teams never share a uid. Needs root; no uid of the range may belong to an account");
  cmd->add_option("--uids-per-team", a->uids_per_team, "Uids per team in --run-as-range")->capture_default_str();
  cmd->add_flag("--allow-root", a->allow_root,
                "Let replicas run as root (refused otherwise: a job's command is whatever a cluster member submitted)");
  cmd->add_flag("--no-cgroups", a->no_cgroups,
                "Do not give replicas their own cgroup (by default they get one, with memory.max and cpu.max from "
                "their request, where cgroup v2 is writable)");
  cmd->add_flag("--no-pid-namespace", a->no_pid_namespace,
                "Run replicas in the agent's own PID namespace (by default they share one of their own, whose processes "
                "all die with the agent: docs/security.md, \"After the agent dies\")");
  cmd->add_option("--health-config", a->health_config,
                  "YAML file of health checks (name, builtin or command, interval, timeout, on_failure) and the deep "
                  "check; default: the built-in checks (docs/resiliency.md)");
  cmd->add_option("--health-interval", a->health_interval_s, "Seconds between runs of every health check (overrides the config)");
  cmd->add_option("--emulate-faults", a->faults,
                  "File of emulated device faults, read at every check interval (xid 79 gpu 2, ecc gpu 0, efa down, hang, "
                  "deep-check fail)");
  cmd->add_option("--kmsg", a->kmsg,
                  "Kernel log to read NVIDIA XID errors from: /dev/kmsg, or a file of kmsg or dmesg lines (tests); only "
                  "lines written after the agent starts count. Default: /dev/kmsg on a real NVIDIA node, none otherwise; "
                  "`none` turns it off");
  cmd->add_option("--reboot-command", a->reboot_command,
                  "Shell command that reboots the node when the server asks (default: an emulated reboot)");
  cmd->add_option("--replaces", a->replaces, "The failed node this one replaces (set by a provisioner)");
  const auto absolute = CLI::Validator([](std::string& p) { return p.starts_with("/") ? "" : "must be an absolute path"; }, "ABSPATH");
  cmd->add_option("--podman", a->containers.podman, "The podman that runs container replicas (an absolute path)")
      ->capture_default_str()
      ->check(CLI::ExistingFile | absolute);
  cmd->add_option("--container-runtime", a->containers.runtime,
                  "OCI runtime podman runs containers with (runc works on hosts with hybrid cgroups, where crun does not)")
      ->capture_default_str();
  cmd->add_option("--container-cgroup-manager", a->containers.cgroup_manager, "podman's cgroup manager: cgroupfs or systemd")
      ->capture_default_str()
      ->check(CLI::IsMember({"cgroupfs", "systemd"}));
  cmd->add_option("--container-init", a->containers.init,
                  "Every container's first process, which ends it when the agent dies (an absolute path; default: "
                  "allot-container-init beside this binary)")
      ->check(absolute);
  cmd->add_option("--deep-check-seconds", a->deep_check_s, "How long the built-in deep check (stress) runs")->capture_default_str();
  cmd->callback([a, &ctx] { ctx.exit_code = run_agent(*a); });

  // The built-in deep health check, run by the agent as a program of its own (agent/stress.h).
  auto seconds = std::make_shared<double>(2.0);
  auto* deep = app.add_subcommand("deep-check", "Stress CPUs and memory for a while and check every result (the agent's built-in deep health check)");
  deep->add_option("--seconds", *seconds, "How long to run")->capture_default_str();
  deep->callback([seconds, &ctx] {
    const char* inject = std::getenv("ALLOT_STRESS_INJECT_FAULT");
    ctx.exit_code = agent::run_stress(std::max(0.1, *seconds), inject && std::string(inject) == "1", std::cout);
  });
}

}  // namespace allot::cli
