#pragma once
// What `allot server` can be told: where to listen, where its data lives, and the knobs of the loop and of
// node lifecycle. Tests shorten the timeouts and inject the clock.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/model/catalog.h"

namespace allot::server {

// Wall-clock milliseconds since the Unix epoch. The core sees whole seconds (Time).
using Clock = std::function<int64_t()>;
int64_t system_clock_ms();

// Webhook deliveries (webhook_sender.h, docs/api.md "Webhooks").
struct WebhookOptions {
  // Hosts a member's team webhook may point at (webhook_rules.h, host_allowed): exact names or IP literals, or
  // *.DOMAIN. Empty: members cannot make webhooks; an admin makes them for a team.
  std::vector<std::string> hosts;
  size_t queue = 10000;  // deliveries waiting (new and retrying) at most; past it the oldest is dropped
  int senders = 2;       // threads that POST; a slow receiver holds one for at most `timeout`
  int max_attempts = 8;  // tries of one delivery before it counts as failed
  std::chrono::milliseconds backoff{1000};       // the wait after the first failed try, doubled after each
  std::chrono::milliseconds backoff_max{300000};  // ... up to this
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds timeout{10000};  // reading the answer, and writing the request
};

// HTTP admission checks (admission_checker.h): the threads that ask them, how long a try may take, and the backoff
// between tries that got no usable answer; and the backoff of a job requeued by a retry answer (admission_checks.h).
struct AdmissionCheckOptions {
  int askers = 2;  // threads that POST; a hanging endpoint holds one for at most `timeout`
  std::chrono::milliseconds backoff{1000};        // the wait after a first failed try, doubled after each
  std::chrono::milliseconds backoff_max{60000};   // ... up to this
  std::chrono::milliseconds connect_timeout{3000};
  std::chrono::milliseconds timeout{10000};  // reading the answer, and writing the request
  int64_t retry_backoff_s = 10;              // a retry answer requeues the job this long, doubled for each earlier one
  int64_t retry_backoff_max_s = 600;         // ... up to this
};

// Several clusters (docs/multicluster.md): a worker cluster a manager server dispatches jobs to (`allot server
// --workers FILE`, workers_file.h).
struct WorkerCluster {
  std::string name;        // a DNS label: how the manager's jobs and events name it
  std::string url;         // its allot server: http(s)://host:port
  std::string token_file;  // where the bearer token the manager sends it is read from
  std::string token;       // that token (a member of the dispatched teams there, or an admin); never logged or shown
  std::string ca_file;     // https: the CA its certificate chains to (empty: the system's)
};
struct MulticlusterOptions {
  std::vector<WorkerCluster> workers;  // empty: this server is no manager
  std::vector<std::string> teams;      // the teams whose jobs this manager dispatches (and never runs itself)
  // A worker that answered nothing for this long is lost: its copies are dispatched again elsewhere.
  std::chrono::milliseconds lease{60000};
  std::chrono::milliseconds poll{1000};     // how often the dispatcher looks at the jobs and the workers
  // A copy that waits in its worker this long (since its dispatch, or since it began to wait there again) is
  // withdrawn and its job dispatched again, to another worker when one can admit it now. 0: never.
  std::chrono::milliseconds dispatch_timeout{0};
  std::chrono::milliseconds timeout{5000};  // one request to a worker
  bool dispatches(const std::string& team) const { return std::find(teams.begin(), teams.end(), team) != teams.end(); }
};

// Where a snapshot starts to pay (ServerOptions::snapshot_min_records), measured by bench/startup_bench.
inline constexpr uint64_t kSnapshotMinRecords = 10000;

struct ServerOptions {
  // The instance types nodes may have: the built-in ones plus the policy file's `instance_types`
  // (`--instance-types FILE`, config/spec_yaml.h load_catalog). Fixed for the server's life; journal records and
  // snapshots name types, so a type that registered nodes have must stay in the file.
  Catalog catalog = Catalog::builtin();
  std::string listen = "127.0.0.1:7070";  // host:port; port 0 picks a free one (see Server::port)
  // HTTPS: the PEM certificate chain and its unencrypted private key, both or neither; neither serves plain
  // HTTP, which is refused on any address but loopback unless `insecure` is set, because bearer tokens, job
  // commands and environment would cross the network in clear text.
  std::string tls_cert;
  std::string tls_key;
  bool insecure = false;
  std::string data_dir = "./allot-data";  // the database (by default) and the replicas' logs
  std::string database;                   // empty: sqlite:<data_dir>/allot.db
  std::string admin_token_file;           // empty: <data_dir>/admin-token (bootstrap.h)
  // A node whose agent has not heartbeated for this long becomes UnschedulablePendingReboot and its jobs
  // restart elsewhere; its next heartbeat makes it Schedulable again.
  std::chrono::milliseconds heartbeat_timeout{15000};
  // The disruption rule (node_silence.h): when at least disruption_min_nodes agents, and at least this share of
  // all agents, are silent past the timeout at once, none is timed out (0 nodes: never held).
  double disruption_share = 0.55;
  size_t disruption_min_nodes = 3;
  // MASTER_PORT of a job's attempt: master_port_min + ((job number + 97 x attempt) mod the range size)
  // (rendezvous_port.h): deterministic, so a restarted server gives the same port, and another for each attempt,
  // so that a port held on rank 0's node is not tried again.
  int master_port_min = 29500;
  int master_port_max = 30499;
  size_t max_body_bytes = 1 << 20;          // larger request bodies get 413, whatever their framing
  size_t log_bytes_per_replica = 1 << 20;   // the last this many bytes of each replica's log are kept
  size_t max_batch = 4096;                  // commands applied and journaled in one transaction at most
  std::chrono::milliseconds tick{100};      // how often the idle loop looks at timeouts and wakeups
  std::chrono::milliseconds request_timeout{30000};  // a request not answered by then gets 503
  // Slow clients (http_server.h): a request must have arrived within read_timeout of its first byte and an
  // answer been written within write_timeout, or the connection is dropped; an idle keep-alive connection
  // is closed after keep_alive_timeout. At most max_connections are open at once; one more is answered 503 at
  // once. Requests are served on at most http_threads threads (a request waiting for its batch holds one); a
  // connection waiting for its next request, or a watch waiting for work, holds none (http_server.h). Unset:
  // max_connections + agent_connections + 8, a thread for every connection as before connections parked.
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{30000};
  std::chrono::milliseconds keep_alive_timeout{5000};
  size_t max_connections = 512;
  std::optional<size_t> http_threads;
  // Overload (http_server.h): a request's head must be complete within head_timeout; at most
  // max_connections_per_address of the max_connections from one address (unset: half of max_connections, at least
  // 1); past either, agent_connections more seats serve agents' POSTs (heartbeats, registrations, logs) only.
  std::chrono::milliseconds head_timeout{5000};
  std::optional<size_t> max_connections_per_address;
  size_t agent_connections = 64;
  // Agents' watches (heartbeat_board.h) admitted at once, each holding one of those connections (but no thread)
  // for its whole wait: unset, half of max_connections; 0, none (every agent learns of work at its heartbeats). Must stay
  // below max_connections (Server::open refuses it otherwise), so that heartbeats always find a connection.
  std::optional<size_t> max_watches;
  // Job listings (GET /v1/jobs) rendered at once (server/http/read_seats.h): one more waits up to a second for a
  // seat, then gets 503 with Retry-After. Unset: half the machine's cores, at least 1, so that listers leave
  // the writer a core.
  std::optional<size_t> max_listings;
  // How much lower than the server's the CPU priority of the threads listings render on is (a nice value added,
  // read_seats.h): the writer and the other request threads get the cores first. 0: the same priority.
  int listing_nice = 10;
  // How much higher than the server's the writer thread's CPU priority is (a nice value taken away,
  // thread_priority.h): under CPU pressure the one thread every change waits for is served before the request
  // threads. Needs CAP_SYS_NICE or an RLIMIT_NICE that allows it; refused, the writer runs at the server's priority
  // (a warning says so). 0: the same priority.
  int writer_priority = 0;
  size_t event_ring = 10000;                // events kept in memory for /v1/events
  WebhookOptions webhooks;
  AdmissionCheckOptions admission_checks;
  MulticlusterOptions multicluster;
  // Several servers on one shared store (PostgreSQL, docs/deployment.md): the URL this server gives the others
  // for redirecting writes to it while it leads (empty: its own listen URL), and how often a standby tries to
  // take the lead and reads what the leader wrote.
  std::string advertise_url;
  std::chrono::milliseconds leader_poll{500};
  // Snapshots (docs/deployment.md): the leader writes the whole state to the store after every
  // snapshot_every_records journal records, or snapshot_interval after the last one when records were written
  // since (0 turns either off), so that start-up replays only what follows the latest. Without use_snapshots
  // none is written or read: start-up replays the whole journal.
  uint64_t snapshot_every_records = 50000;
  // And none while the journal holds fewer than snapshot_min_records records: below that, a snapshot saves no
  // start-up time and takes more bytes than the records it stands for (bench/startup_bench, bench/RESULTS.md
  // "Snapshots and start-up: issue 25 item 6").
  uint64_t snapshot_min_records = kSnapshotMinRecords;
  std::chrono::milliseconds snapshot_interval{600000};
  bool use_snapshots = true;
  // Retention (server/writer/retention.h, docs/deployment.md): finished jobs leave the live state this many seconds
  // after they finished (none: never). A day by default: long enough for the people who ran a job to read
  // its outcome, logs and events the next morning, short enough that memory, the read view and snapshots
  // follow a day of jobs rather than every job ever run. The journal keeps every record either way.
  std::optional<int64_t> retain_finished_s = 86400;
  // Node lifecycle (docs/resiliency.md). A failed health check is acted on fault_window after it is first
  // reported (nodes failing within one window restart each job once); a reboot that has not brought the node
  // back healthy within reboot_timeout, a deep check that has not finished within deep_check_timeout, and an
  // agent silent for replace_silent_after lead to a replacement through `provisioner` (a shell command; empty:
  // the node waits in UnschedulablePendingReplacement for an administrator).
  std::chrono::milliseconds fault_window{1000};
  std::chrono::milliseconds reboot_timeout{300000};
  std::chrono::milliseconds deep_check_timeout{900000};
  std::chrono::milliseconds replace_silent_after{600000};
  std::string provisioner;
  bool deep_check_new_nodes = false;  // every new node (not only replacements) waits for its deep check
  // Where jobs keep checkpoints, as the agents see it (a shared file system on a real cluster): each job gets
  // <checkpoint_dir>/<job> as ALLOT_CHECKPOINT_DIR. Empty: <data_dir>/checkpoints (one machine).
  std::string checkpoint_dir;
  std::string public_url;  // how provisioned agents reach this server (set once it listens)
  Clock clock = system_clock_ms;
  // Test hook: called on the writer thread at the start of every batch that has commands, before any runs (a
  // test holds the writer busy with it).
  std::function<void()> before_batch;
  // Test check: after every batch the writer builds every node's heartbeat answer afresh and counts each one the
  // heartbeat board (heartbeat_board.h) holds otherwise (Writer::Stats::heartbeat_board_mismatches).
  bool verify_heartbeat_board = false;
  // Test check: every time the writer's rounds take their nodes (round_nodes.h), it also walks every node and counts
  // each one a round may act on that is not among them (Writer::Stats::round_nodes_missed).
  bool verify_round_nodes = false;
};

// Connections one address may hold at once (ServerOptions::max_connections_per_address).
inline size_t connections_per_address(const ServerOptions& o) {
  return o.max_connections_per_address.value_or(std::max<size_t>(1, o.max_connections / 2));
}

// Job listings rendered at once (ServerOptions::max_listings).
inline size_t listing_seats(const ServerOptions& o) {
  return o.max_listings.value_or(std::max<size_t>(1, std::thread::hardware_concurrency() / 2));
}

// The watches a server admits at once (ServerOptions::max_watches).
inline size_t watch_limit(const ServerOptions& o) { return o.max_watches.value_or(o.max_connections / 2); }

}  // namespace allot::server
