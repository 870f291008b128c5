// `allot server [--listen 127.0.0.1:7070] [--data DIR] [--database sqlite:PATH | postgresql://...] [--advertise-url URL]
// [--tls-cert FILE --tls-key FILE] [--insecure] [--max-connections N] [--max-watches N] [--max-listings N] [--listing-nice 10] [--snapshot-every N] [--snapshot-min-records N]
// [--snapshot-interval S] [--no-snapshots] [--retain-finished DURATION] [--head-timeout S] [--agent-connections N]
// [--max-connections-per-address N] [--disruption-share F] [--disruption-min-nodes N] [--instance-types FILE]`: runs the control plane until SIGINT or
// SIGTERM. Exit codes: 0 after a clean stop, 2 for invalid flags (unreadable or mismatched TLS files, plain HTTP
// beyond loopback without --insecure, --max-watches not below --max-connections among them), 3 when the server
// cannot start (store, journal, address in use).
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <tuple>

#include "cli/commands.h"
#include "config/spec_yaml.h"
#include "server/writer/retention.h"
#include "server/server.h"
#include "server/outside/workers_file.h"

namespace allot::cli {
namespace {

struct ServerArgs {
  server::ServerOptions options;
  double heartbeat_timeout_s = 15;
  double read_timeout_s = 30;
  double write_timeout_s = 30;
  double head_timeout_s = 5;
  size_t per_address = 0;  // used when --max-connections-per-address is given
  std::string master_ports = "29500-30499";
  std::string workers;  // --workers: the manager's worker clusters (server/outside/workers_file.h); empty: no manager
  std::string instance_types;  // the policy file whose instance_types section adds to the built-in catalog
  // Node lifecycle (docs/resiliency.md), in seconds.
  double fault_window_s = 1, reboot_timeout_s = 300, deep_check_timeout_s = 900, replace_silent_after_s = 600;
  double snapshot_interval_s = 600;
  bool no_snapshots = false;
  std::string retain_finished = "24h";
  size_t max_watches = 0;  // used when --max-watches is given (default: half of --max-connections)
  bool max_watches_given = false;
  size_t max_listings = 1;  // used when --max-listings is given (default: half the cores, at least 1)
  size_t http_threads = 1;  // used when --http-threads is given
};

int run_server(ServerArgs& a) {
  if (a.heartbeat_timeout_s <= 0) {
    std::cerr << "allot server: --heartbeat-timeout must be positive\n";
    return 2;
  }
  a.options.heartbeat_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.heartbeat_timeout_s * 1000));
  for (auto [flag, seconds, out] : {std::tuple{"--read-timeout", a.read_timeout_s, &a.options.read_timeout},
                                    std::tuple{"--write-timeout", a.write_timeout_s, &a.options.write_timeout},
                                    std::tuple{"--head-timeout", a.head_timeout_s, &a.options.head_timeout}}) {
    if (!(seconds >= 0.1 && seconds <= 3600)) {
      std::cerr << "allot server: " << flag << " must be 0.1..3600 seconds\n";
      return 2;
    }
    *out = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  for (auto [flag, seconds, out] : {std::tuple{"--fault-window", a.fault_window_s, &a.options.fault_window},
                                    std::tuple{"--reboot-timeout", a.reboot_timeout_s, &a.options.reboot_timeout},
                                    std::tuple{"--deep-check-timeout", a.deep_check_timeout_s, &a.options.deep_check_timeout},
                                    std::tuple{"--replace-silent-after", a.replace_silent_after_s, &a.options.replace_silent_after}}) {
    if (!(seconds >= 0 && seconds <= 7 * 86400)) {
      std::cerr << "allot server: " << flag << " must be 0..604800 seconds\n";
      return 2;
    }
    *out = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  if (!(a.snapshot_interval_s >= 0 && a.snapshot_interval_s <= 7 * 86400)) {
    std::cerr << "allot server: --snapshot-interval must be 0..604800 seconds (0: none by time)\n";
    return 2;
  }
  a.options.snapshot_interval = std::chrono::milliseconds(static_cast<int64_t>(a.snapshot_interval_s * 1000));
  a.options.use_snapshots = !a.no_snapshots;
  auto retain = server::parse_retention(a.retain_finished);
  if (!retain) {
    std::cerr << "allot server: --retain-finished: " << retain.error().message << "\n";
    return 2;
  }
  a.options.retain_finished_s = *retain;
  // Checked against --max-connections by Server::open (server.cpp), with the rest of the flags.
  if (a.max_watches_given) a.options.max_watches = a.max_watches;
  auto dash = a.master_ports.find('-');
  try {
    a.options.master_port_min = std::stoi(a.master_ports.substr(0, dash));
    a.options.master_port_max = dash == std::string::npos ? a.options.master_port_min : std::stoi(a.master_ports.substr(dash + 1));
  } catch (const std::exception&) {
    std::cerr << "allot server: --master-ports wants LOW-HIGH, as in 29500-30499\n";
    return 2;
  }
  auto catalog = load_catalog(a.instance_types);
  if (!catalog) {
    std::cerr << "allot server: --instance-types: " << catalog.error().message << "\n";
    return 2;
  }
  a.options.catalog = std::move(*catalog);
  if (!a.workers.empty()) {  // several clusters (docs/multicluster.md): this server is a manager
    auto workers = server::load_workers_file(a.workers);
    if (!workers) {
      std::cerr << "allot server: " << workers.error().message << "\n";
      return 2;
    }
    a.options.multicluster = std::move(*workers);
  }
  // Block the stop signals in every thread (threads inherit the mask), then wait for one here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up must not kill the server

  // Logs go to stderr; stdout carries only the "listening on URL" line that scripts wait for.
  spdlog::set_default_logger(spdlog::stderr_color_mt("allot-server"));
  auto srv = server::Server::open(a.options);
  if (!srv) {
    std::cerr << "allot server: " << srv.error().message << "\n";
    return srv.error().code == ErrorCode::kInvalidArgument ? 2 : 3;
  }
  if (auto st = (*srv)->start(); !st) {
    std::cerr << "allot server: " << st.error().message << "\n";
    return st.error().code == ErrorCode::kInvalidArgument ? 2 : 3;
  }
  std::cout << "allot server listening on " << (*srv)->url() << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cerr << "allot server: stopping (signal " << sig << ")\n";
  (*srv)->stop();
  return 0;
}

}  // namespace

void add_server_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<ServerArgs>();
  auto* cmd = app.add_subcommand("server", "Run the control plane: HTTP API, scheduling loop, durable state");
  cmd->add_option("--listen", args->options.listen, "HOST:PORT to serve on (port 0: any free port)")->capture_default_str();
  cmd->add_option("--data", args->options.data_dir, "Data directory: the database (by default) and replica logs")
      ->capture_default_str();
  cmd->add_option("--database", args->options.database,
                  "sqlite:PATH (default sqlite:<data>/allot.db) or postgresql://USER@HOST[:PORT]/DB (several servers, one leads)");
  cmd->add_option("--advertise-url", args->options.advertise_url,
                  "With PostgreSQL: the URL other servers redirect changes to while this one leads (default: its listen URL)");
  cmd->add_option("--admin-token-file", args->options.admin_token_file,
                  "Where the first start writes the bootstrap admin token, mode 0600 (default: <data>/admin-token)");
  cmd->add_option("--heartbeat-timeout", args->heartbeat_timeout_s,
                  "Seconds without a heartbeat before a node is UnschedulablePendingReboot")
      ->capture_default_str();
  cmd->add_option("--disruption-share", args->options.disruption_share,
                  "When this share of the agents (and at least --disruption-min-nodes) is silent past the heartbeat "
                  "timeout at once, none is timed out: they stay suspect and their jobs run on (a disruption)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--disruption-min-nodes", args->options.disruption_min_nodes,
                  "The fewest silent agents that make a disruption (0: never; every silent node is timed out)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1000000}));
  cmd->add_option("--instance-types", args->instance_types,
                  "Policy file whose instance_types section adds types to (or, stated, replaces) the built-in catalog");
  cmd->add_option("--workers", args->workers,
                  "Make this server a manager of several clusters: the YAML file naming its worker clusters, their "
                  "token files and the teams whose jobs go to them (docs/multicluster.md)");
  cmd->add_option("--master-ports", args->master_ports, "MASTER_PORT range for jobs, LOW-HIGH")->capture_default_str();
  cmd->add_option("--tls-cert", args->options.tls_cert, "Serve HTTPS with this PEM certificate (chain); needs --tls-key");
  cmd->add_option("--tls-key", args->options.tls_key, "The unencrypted PEM private key of --tls-cert");
  cmd->add_flag("--insecure", args->options.insecure,
                "Allow plain HTTP on an address other machines reach (refused without it: tokens would travel in clear)");
  cmd->add_option("--max-connections", args->options.max_connections,
                  "Connections open at once (an idle one or a waiting watch holds no thread); more are answered 503")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  auto* http_threads = cmd->add_option("--http-threads", args->http_threads,
                                       "Threads serving requests at once; connections waiting for a request, and agents' "
                                       "watches waiting for work, hold none (default: --max-connections + "
                                       "--agent-connections + 8)")
                           ->check(CLI::Range(size_t{1}, size_t{100000}));
  auto* max_watches = cmd->add_option("--max-watches", args->max_watches,
                                      "Agents' watches (long polls for new work) served at once, each holding a connection; "
                                      "more are answered 429 and those agents see new work at their heartbeats "
                                      "(default: half of --max-connections; 0: no agent watches; below --max-connections)")
                          ->check(CLI::Range(size_t{0}, size_t{100000}));
  auto* max_listings = cmd->add_option("--max-listings", args->max_listings,
                                       "Job listings (GET /v1/jobs) rendered at once; one more waits up to a second, then "
                                       "gets 503 with Retry-After (default: half the cores, at least 1)")
                           ->check(CLI::Range(size_t{1}, size_t{10000}));
  cmd->add_option("--listing-nice", args->options.listing_nice,
                  "How much lower the CPU priority of the threads job listings render on is than the server's (a nice "
                  "increment): the writer, heartbeats and submissions get the cores first; 0: the same priority")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  cmd->add_option("--writer-priority", args->options.writer_priority,
                  "How much higher the CPU priority of the writer thread (the one every change and admission waits for) "
                  "is than the server's (a nice decrement), so that it is served first when the cores are short; needs "
                  "CAP_SYS_NICE or an RLIMIT_NICE that allows it (systemd: LimitNICE=), else a warning and the same "
                  "priority; 0: the same priority")
      ->capture_default_str()
      ->check(CLI::Range(0, 20));
  auto* per_address = cmd->add_option("--max-connections-per-address", args->per_address,
                                      "Of --max-connections, how many one client address may hold (default: half)")
                          ->check(CLI::Range(size_t{1}, size_t{100000}));
  cmd->add_option("--agent-connections", args->options.agent_connections,
                  "Connections beyond --max-connections (and the per-address limit) that serve only agents' heartbeats, "
                  "registrations and logs, so that a flood of other clients cannot starve the nodes")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{100000}));
  cmd->add_option("--head-timeout", args->head_timeout_s,
                  "Seconds a client has to send a request's line and headers (a connection's first: from its accept)")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", args->options.max_body_bytes, "Largest request body accepted (413 beyond)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  cmd->add_option("--read-timeout", args->read_timeout_s, "Seconds a client has to send a whole request")->capture_default_str();
  cmd->add_option("--write-timeout", args->write_timeout_s, "Seconds a client has to read a whole answer")->capture_default_str();
  cmd->add_option("--provisioner", args->options.provisioner,
                  "Shell command that provisions a replacement for a failed node (ALLOT_NODE_NAME, ALLOT_INSTANCE_TYPE, "
                  "ALLOT_NODE_LABELS, ALLOT_REPLACEMENT_NAME, ALLOT_SERVER, ALLOT_JOIN_TOKEN_FILE in its environment; "
                  "scripts/provision-emulated.sh starts an emulated agent)");
  cmd->add_option("--fault-window", args->fault_window_s,
                  "Seconds between a failed health check's first report and the reboot or replacement (faults within one "
                  "window restart each job once)")->capture_default_str();
  cmd->add_option("--reboot-timeout", args->reboot_timeout_s, "Seconds a rebooted node has to report healthy before it is replaced")
      ->capture_default_str();
  cmd->add_option("--deep-check-timeout", args->deep_check_timeout_s, "Seconds a new node's deep health check may take")
      ->capture_default_str();
  cmd->add_option("--replace-silent-after", args->replace_silent_after_s,
                  "Seconds an agent may stay silent before its node is replaced")->capture_default_str();
  cmd->add_flag("--deep-check-new-nodes", args->options.deep_check_new_nodes,
                "Every new node waits Unschedulable for its deep health check (replacements always do)");
  cmd->add_option("--checkpoint-dir", args->options.checkpoint_dir,
                  "Where jobs keep checkpoints, as agents see it (a shared file system); each job gets DIR/JOB as "
                  "ALLOT_CHECKPOINT_DIR (default: <data>/checkpoints)");
  cmd->add_option("--snapshot-every", args->options.snapshot_every_records,
                  "Journal records between two snapshots of the state (0: none by count); start-up replays only the "
                  "records after the latest snapshot")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{1000000000}));
  cmd->add_option("--snapshot-min-records", args->options.snapshot_min_records,
                  "No snapshot until the journal holds this many records: below it, replaying the journal is about as "
                  "fast as restoring a snapshot, and smaller (docs/deployment.md, \"Snapshots\")")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{1000000000}));
  cmd->add_option("--snapshot-interval", args->snapshot_interval_s,
                  "Seconds after which a snapshot is written when records were journaled since the last (0: none by time)")
      ->capture_default_str();
  cmd->add_flag("--no-snapshots", args->no_snapshots,
                "Neither write nor read snapshots: start-up replays the whole journal (a damaged snapshot is passed over without it)");
  cmd->add_option("--retain-finished", args->retain_finished,
                  "How long finished jobs stay in the server after they finished (90s, 30m, 24h, 7d, or never); then "
                  "they leave memory, listings and snapshots, their names are free, and only the journal keeps them")
      ->capture_default_str();
  cmd->add_option("--webhook-hosts", args->options.webhooks.hosts,
                  "Hosts a member's team webhook may post to (comma-separated: names, IP addresses, *.DOMAIN); without "
                  "it only admins make webhooks (docs/security.md, \"Webhooks\")")
      ->delimiter(',');
  cmd->add_option("--webhook-queue", args->options.webhooks.queue,
                  "Webhook deliveries waiting at most (new and retrying); past it the oldest event's is dropped")
      ->capture_default_str();
  cmd->callback([args, max_watches, max_listings, per_address, http_threads, &ctx] {
    args->max_watches_given = max_watches->count() > 0;
    if (http_threads->count() > 0) args->options.http_threads = args->http_threads;
    if (max_listings->count() > 0) args->options.max_listings = args->max_listings;
    if (per_address->count() > 0) args->options.max_connections_per_address = args->per_address;
    ctx.exit_code = run_server(*args);
  });
}

}  // namespace allot::cli
