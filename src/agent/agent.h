#pragma once
// The node agent (DESIGN.md, "Control plane"): registers its node with the server, heartbeats, runs the
// replicas the server assigns as real processes, ships their logs and reports their exits.
//
// Delivery rules that keep the server's view right without acknowledgements beyond HTTP 200:
//  - an attempt of a replica (job, rank, attempt) is started at most once, however often the server lists it,
//    and across restarts of the agent (agent/attempt_journal.h);
//  - nothing new starts on the node while a replica that the server no longer lists is still alive (it is being
//    stopped): the capacity it held is free only once it has exited (docs/scheduling.md, "Stops before starts");
//  - an exit is reported in heartbeats until one succeeds, at once: the log follows, with a bounded number of
//    tries, and a log given up on ends with a line that says it is incomplete.
//
// Isolation (docs/security.md, "Agent isolation"): replicas run as AgentOptions::user with only their own
// environment, each in its own process group and, where the machine allows, its own cgroup. The running
// replicas are recorded in <work dir>/replicas.json, so an agent that died without stopping them (kill -9)
// ends what they left behind when it starts again, before it registers; and an agent that cannot reach the
// server stops its replicas itself before the server would restart them elsewhere (agent/fencing.h).
#include <atomic>
#include <memory>
#include <chrono>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/attempt_journal.h"
#include "agent/cgroups.h"
#include "agent/fencing.h"
#include "agent/health_monitor.h"
#include "agent/inventory.h"
#include "agent/leftovers.h"
#include "agent/log_capture.h"
#include "agent/pid_namespace.h"
#include "agent/process.h"
#include "agent/replica.h"
#include "agent/run_as.h"
#include "agent/team_uids.h"
#include "client/http_client.h"
#include "common/thread_annotations.h"
#include "core/model/result.h"

namespace allot::agent {

struct AgentOptions {
  std::string name;
  std::map<std::string, std::string> labels;
  // Its network-node layers, top first, from --ec2-topology (docs/topology.md, "Live nodes"); sent in every
  // registration as network_layers. Absent: none sent.
  std::optional<std::vector<std::string>> network_layers;
  std::string work_dir;  // logs and replicas' working directories live under it
  std::string address;   // how other nodes reach this one (ranks use it as MASTER_ADDR)
  // Tokens (docs/security.md, "Agents"): the node credential kept in `credential_file` once the node has joined,
  // else `join_token` (an agent-join token), which registration exchanges for that credential.
  std::string join_token;
  std::string credential_file;  // empty: <work_dir>/credential
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds stop_grace{10000};
  // The program each replica's shim execs (agent/shim.h): the allot binary ("/proc/self/exe"), set by `allot agent`.
  // Empty (agents inside the unit tests, whose binary has no shim command): the forked shim supervises in place.
  std::string shim_program;
  size_t log_chunk_bytes = 64 * 1024;
  Identity user;               // who replicas run as (agent/run_as.h: replica_identity checked it) ...
  std::optional<UidRange> uid_range;  // ... unless set: each team's replicas as its own uid (agent/team_uids.h)
  bool cgroups = true;         // a cgroup per replica where the machine allows one
  bool pid_namespace = true;   // process replicas in a PID namespace of their own (agent/pid_namespace.h), where allowed
  std::string cgroup_parent;   // tests: the cgroup directory to put the agent's under, instead of its own
  // Health (docs/resiliency.md): the checks, the emulated faults file, what a reboot runs (empty: an emulated
  // reboot, which stops the replicas, clears the emulated faults and registers again), and the node this one
  // replaces (set by a provisioner).
  HealthConfig health = default_health_config();
  std::string faults_path;
  std::string kmsg_path;       // the kernel log XIDs are read from (agent/kmsg.h); empty: none
  std::string reboot_command;
  std::string replaces;
  std::string stress_program;  // the allot binary (the built-in deep check runs `allot deep-check`)
  double stress_seconds = 2.0;
  // Container replicas (agent/container.h): which podman, OCI runtime and cgroup manager the agent drives.
  ContainerOptions containers;
};

class Agent {
 public:
  Agent(AgentOptions options, Inventory inventory, client::ApiClient api, std::ostream& log);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Prepares (see prepare()), registers, then heartbeats until `stop` is set; then stops every replica and
  // reports their exits. Fails only for what retrying cannot fix (another agent has the work directory, the
  // server rejects the registration).
  Status run(const std::atomic<bool>& stop);
  // Starts the watchdog (agent/watchdog.h), takes the work directory (a lock file: one agent per
  // directory), ends the leftovers of a previous agent's replicas recorded there, and sets up the replicas'
  // cgroups. Before the first registration, while the agent is single-threaded.
  Status prepare();

  // A second connection to the same servers, on which run() watches the node's run tag (GET
  // /v1/agents/{name}/changes, a long poll) so that the agent heartbeats as soon as the server has new work or
  // orders for it, rather than at its next interval. Without one, or against a server that lacks the route,
  // the agent learns of work at its heartbeats only.
  void watch_with(client::ApiClient api);

  // One cycle, for tests: reap exits, ship logs, heartbeat, act on the answer.
  Status cycle();
  Status register_node() EXCLUDES(watch_mu_);
  const ProcessTable& processes() const { return procs_; }
  bool fenced() const { return fenced_; }
  int boot() const { return boot_; }

 private:
  struct Replica {
    Assignment a;
    std::string log_path;  // in <work dir>/_logs, which only the agent can write (agent/log_capture.h)
    std::string private_tmp;  // the job's /tmp on this node, removed with its last replica here
    uint64_t shipped = 0;  // bytes of the log the server has
    bool exited = false;
    int exit_code = 0;
    bool lost = false;          // exited while no agent watched it (a previous agent's): its exit code is unknown
    bool end_reported = false;  // a heartbeat carrying its end was answered; it stays until its log is shipped
    int log_failures = 0;       // uploads of its log that failed in a row while the server answered heartbeats
    std::string cpus;  // the CPUs it was bound to ("0-3,8"; empty: not bound), reported while it runs
    // A container replica (agent_containers.cpp): podman's name for it, and its `podman run` while the image is
    // pulled first (the pull runs under key#pull; the run starts when it succeeds).
    std::string container;
    std::optional<LaunchSpec> after_pull;  // set while its image is pulled (it reports `pulling`)
    std::string pull_failure;    // the registry's answer when the pull failed; reported with the exit
    std::string pidfile;         // where podman writes the container's host pid
    bool container_recorded = false;  // its pid is in the state file (records_), for the watchdog and a restart
    int port_in_use = 0;  // not started: its MASTER_PORT was held on this node (agent/rendezvous_port.h)
    // Log rules (agent_log_rules.cpp): the rule that fired on its output (it is stopped for it, and its end is
    // reported with the rule), and the progress clock: the progress lines counted when they last grew, and when.
    std::optional<LogRuleFiring> log_rule;
    // The kernel's out-of-memory killer ended it inside its cgroup's memory limit (agent/cgroups.h, oom_kills): the
    // limit in MiB as written; reported with its end as failure oom_killed, the job's fault (docs/resiliency.md).
    int64_t oom_limit_mib = 0;
    // Stopped by fencing (check_fence): why, reported with its end as failure fenced, so that the server can tell
    // a stop it caused by not answering from a node's failure (docs/resiliency.md, "Leases and fencing").
    std::string fenced;
    uint64_t progress_seen = 0;
    Clock::time_point progress_at{};
    // Recovery in place (agent/membership.h): the membership epoch its membership.json holds; -1: none written.
    int membership_epoch = -1;
  };
  static std::string key_of(const Assignment& a) { return a.slot() + "#" + std::to_string(a.attempt); }

  // A new membership epoch of a running replica's job (recovery in place, agent/membership.h): membership.json is
  // rewritten and the replica's process group signalled.
  void update_membership(const std::string& key, Replica& r, const Assignment& listed);
  std::string membership_path(const Assignment& a) const;

  bool reap();  // true when a replica exited
  // A replica died abnormally (not stopped by the agent; a signal or a non-zero exit): the fast health checks run at
  // once, and the heartbeats say so until they have (agent_exit_checks.cpp, docs/resiliency.md).
  void check_health_after_exit(const std::string& key, int exit_code);
  // True once, when the checks asked for by check_health_after_exit have finished: heartbeat now.
  bool exit_checks_finished();
  // Log rules (agent_log_rules.cpp; docs/resiliency.md, "Rules on a job's output"): a running replica whose output
  // matched a restart_on or fail_on pattern, or showed no progress line for its `every` seconds (its stacks dumped to
  // its log first where py-spy or gdb is installed), is stopped, the rule recorded in the journal of started
  // attempts first, so that its end is reported with the rule even by a restarted agent.
  void check_log_rules(Clock::time_point now);
  void log_rule_fired(const std::string& key, Replica& r, const LogRuleFiring& firing, Clock::time_point now);
  void dump_stacks(const std::string& key, const Replica& r);
  // Stops every replica when no heartbeat has been answered for too long (agent/fencing.h).
  void check_fence(Clock::time_point now);
  // A request to the server, bounded so that a server that does not answer cannot hold the agent past a
  // fencing deadline. `heartbeat`: an answer shows the server counts this node alive (register, heartbeat).
  Result<nlohmann::json> call(const std::string& path, const nlohmann::json& body, bool heartbeat);
  void note_answer(Clock::time_point sent, const nlohmann::json& answer);
  void persist();  // the state file, after every change of the running replicas
  // The journal of started attempts (agent/attempt_journal.h): an exit collected, and what a restarted agent
  // finds there (the ends to report).
  void journal_exit(const std::string& key, int exit_code, int64_t oom_limit_mib = 0);
  void resume_from_journal();
  // Forgets the attempts the server no longer lists and whose end it has, with their directories.
  void forget_attempts();
  void remove_unused_dirs();  // of unused_dirs_, those no attempt here needs any more
  // Replicas alive that the newest run list does not name (or names with another attempt): they are being, or are
  // about to be, stopped, and nothing new starts until they are gone.
  bool outgoing_alive() const;
  bool outgoing_unstopped() const;  // ... of which some have not been told to stop yet
  // The lease (agent/fencing.h) handed to the watchdog, which fences the replicas if this agent freezes.
  void tell_watchdog_lease();
  // An exited replica's cgroup (and its directories in the other v1 hierarchies) is removed once empty.
  void forget_cgroup(const std::string& path);
  void remove_cgroups();
  void ship_logs();
  Status heartbeat() EXCLUDES(watch_mu_);
  void apply(const nlohmann::json& answer);
  void start_pending();
  void start(const Assignment& a);
  // Starts the replica's process (or, for a container, its `podman run`) and records it.
  void launch(const std::string& key, Replica r, LaunchSpec spec);
  // Whether anything of the replica runs: its process, or the pull before its container.
  bool alive(const std::string& key) const;
  bool stopping(const std::string& key) const;
  void stop_replica(const std::string& key, Clock::time_point now);
  // A process the table reaped (`e`, of key `key`) that belongs to a container replica's pull: starts its
  // container, or ends the attempt with the pull's failure.
  void pull_ended(const std::string& key, const Exited& e);

  // Containers (agent_containers.cpp; docs/jobs.md, "Images").
  // prepare(): what podman is here (said in the log), and the containers a previous agent left, removed.
  void detect_containers();
  // The `podman run` of a container replica, and its pull when the policy asks for one (empty argv: none).
  struct ContainerLaunch {
    LaunchSpec run;
    std::vector<std::string> pull_argv;
    std::string name;
    std::string pidfile;
  };
  Result<ContainerLaunch> container_launch(const Assignment& run, const LaunchSpec& process, const Identity& who,
                                           const std::string& log_dir);
  // After its `podman run` exited: the container's first process, if it outlived podman (killed), is killed too, so
  // that the exit reported means the replica is gone, and podman is told to forget the container.
  // What is left of a container replica whose podman process ended (`e`): its first process if it outlived podman,
  // and the container itself unless podman exited by itself (--rm removed it then).
  void end_container(const std::string& key, Replica& r, const Exited& e);
  bool pull_exited(const Exited& e);  // a pull's exit (KEY#pull), routed to pull_ended; false for any other
  void stop_all_replicas();           // stops every process and settles each exit (reboot, shutdown)
  // The container's host pid, once podman wrote it, recorded for the watchdog and a restarted agent.
  void record_containers();
  // Who `a` runs as: the team's own uid (--run-as-range) or the agent's one user. Refuses a replica that would
  // share a uid with a running replica of another team.
  Result<Identity> identity_for(const Assignment& a, const std::string& home);
  // Removes the job's private /tmp once no replica of the job runs here.
  void drop_private_tmp(const std::string& job, const std::string& dir);
  void say(const std::string& line);
  // The server asked for a reboot (docs/resiliency.md): stop the replicas, run the reboot command or reset the
  // emulated devices, count a boot, register again.
  void reboot();
  // The boot count kept in <work dir>/boot: one more at every start of the agent and every emulated reboot.
  void count_boot();
  // The token to present: the saved credential, else the join token. False when there is neither.
  bool choose_token();
  void use_token(const std::string& token) EXCLUDES(watch_mu_);  // on the heartbeat connection and the watch's
  void watch_loop() EXCLUDES(watch_mu_);  // the watch thread (watch_with)
  // The heartbeat loop: acts on the run list and orders a watch answer brought (false: none, the watch asks for
  // a heartbeat instead).
  bool take_watch_news() EXCLUDES(watch_mu_);
  Status save_credential(const std::string& credential);
  std::string credential_path() const;

  AgentOptions opt_;
  Inventory inv_;
  MachineFacts facts_;
  client::ApiClient api_;
  std::ostream& log_;
  LogCapture capture_;  // the replicas' output pipes; outlives procs_, whose destructor ends the writers
  ProcessTable procs_;
  // The node's PID namespace for process replicas (agent/pid_namespace.h): made at start, again when its init has
  // exited; null where it cannot be made (pidns_problem_ says why, once).
  std::unique_ptr<ReplicaPidNamespace> pidns_;
  std::string pidns_problem_;
  // The namespace's fd for a replica about to start (made anew if it ended), or -1: the agent's own namespace.
  int replica_pid_namespace();
  // Says so and forgets the namespace when its init has exited (every replica in it was killed with it).
  void notice_pid_namespace_end();
  std::optional<TeamUids> team_uids_;  // with opt_.uid_range, loaded by prepare()
  std::map<std::string, Replica> replicas_;     // by key_of: alive, or exited and not yet reported
  std::map<std::string, Assignment> pending_;   // by slot: waits for an older attempt to exit
  AttemptJournal journal_;                       // keys started, by this agent or the one before it
  std::set<std::string> listed_;                 // keys of the newest run list acted on
  std::set<std::string> unused_dirs_;            // working directories of forgotten attempts, to remove
  bool server_reachable_ = true;

  Cgroups cgroups_;
  std::string state_path_;
  int lock_fd_ = -1;
  int watchdog_fd_ = -1;  // agent/watchdog.h
  pid_t watchdog_pid_ = 0;
  std::map<std::string, ReplicaRecord> records_;  // by key_of: what the state file lists
  std::vector<std::string> dead_cgroups_;         // of exited replicas, removed once empty

  std::optional<std::chrono::milliseconds> server_timeout_;  // from the server's answers
  Clock::time_point last_answered_send_ = Clock::now();    // when the last answered request was sent
  // Whether the lease has run out at `now` (3/4 of the server's failure timeout without an answered heartbeat):
  // the agent fences itself, and the watchdog, keeping the same lease, may already have stopped replicas.
  bool lease_ran_out(Clock::time_point now) const {
    return server_timeout_ && now >= last_answered_send_ + fence_times(*server_timeout_).stop_after;
  }
  bool fenced_ = false;
  bool using_credential_ = false;  // the token presented is the node credential (not the join token)
  std::unique_ptr<HealthMonitor> monitor_;
  PodmanFacts podman_;  // detect_containers()
  ContainerLifeline lifeline_;  // made by detect_containers() where containers can run; closed when the agent dies
  int boot_ = 0;
  bool said_hung_ = false;
  bool awaiting_exit_checks_ = false;  // check_health_after_exit asked, exit_checks_finished not yet true

  // The watch (watch_with): its thread asks the server for changes against the newest run tag it knows (from a
  // heartbeat answer or the last watch answer); the answer carries the run list and orders, which it hands to
  // the heartbeat loop (watch_news_, poked_). Answers are ordered by as_of, the journal record their state follows.
  std::optional<client::ApiClient> watch_api_;
  std::thread watcher_;
  Mutex watch_mu_;
  std::string watch_token_ GUARDED_BY(watch_mu_);  // the token the heartbeat connection presents
  std::string known_tag_ GUARDED_BY(watch_mu_);    // run_tag of the newest answer seen
  uint64_t known_as_of_ GUARDED_BY(watch_mu_) = 0;  // its as_of
  std::optional<nlohmann::json> watch_news_ GUARDED_BY(watch_mu_);  // a watch answer the heartbeat loop has not acted on yet
  uint64_t applied_as_of_ = 0;                // heartbeat loop: as_of of the newest answer acted on
  std::atomic<uint64_t> watch_refusals_{0};   // 429s: the server had no room for the watch
  std::atomic<bool> poked_{false};
  std::atomic<bool> watch_stop_{false};
  std::atomic<bool> watch_unsupported_{false};  // the server answered 404: it has no watch route
  std::atomic<uint64_t> heartbeats_{0};         // heartbeats attempted, answered or not
};

}  // namespace allot::agent
