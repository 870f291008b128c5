#pragma once
// The single writer: one thread owns the ServerState. Request threads hand it commands and wait; it takes
// every command queued, applies them in order, runs the scheduler, journals the commands' records and the
// scheduler's decisions in ONE store transaction (group commit), and only then answers them all. So a 2xx
// answer means durable, and one fsync serves every request that arrived while the previous batch was being
// written. Between requests it wakes every `tick` to time out silent nodes and to run the scheduler at its
// next_wakeup.
//
// A scheduler pass costs time in proportion to the waiting jobs, so under load it does not run after every
// batch: a pass that took d (more than 2 ms) is followed by the next one only once the writer has spent d on
// other work. The writer so spends at most about half its time scheduling, batches grow
// instead, and admission waits at most about two passes. On an idle-enough cluster a pass takes
// microseconds and runs after every batch, so a submission's answer already shows it Running.
//
// On a shared store (PostgreSQL) several servers run a Writer each and exactly one leads (store.h): the leader
// works as above; a standby runs no scheduler and times out no node, but follows the journal every leader_poll
// (so its reads are at most that far behind), answers reads, and tries to take the lead. When it does, it first
// reads the journal to its end, then gives every agent a full heartbeat timeout to find it. A leader whose store
// lost the lead becomes a standby at its next batch; a batch it could not write is answered with an error and its
// state rebuilt from the journal, as after any failed write.
//
// Reads off the write path: a read-only request (read()) is answered on its own thread from an immutable copy of
// the state that the writer publishes after a batch, before answering it, when a read has asked for one
// (view_publisher.h: read-your-writes, the spacing of costly copies, what a copy shares with the one before).
// While the state awaits a rebuild from the journal (a failed write on a shared store) or the writer stops, a read
// that needs a fresh view is answered 503.
//
// A full disk: after a failed write the writer asks the store whether it has room (Store::check_space). While it
// has not, changes that clients ask for are refused at once on their own threads (507 Insufficient Storage with
// Retry-After), the leader's own work that writes (scheduling passes, node timeouts, compaction) waits, and reads
// are answered as before; every quarter second the writer asks again, and changes resume once there is room. So
// a full disk costs one rebuild of the state from the journal (of the batch that failed), not one per refused
// change, and refusals take no time (bench/RESULTS.md, "Faults").
//
// Heartbeats off the write path: after each batch, before answering it, the leader also publishes every changed
// node's heartbeat answer to the heartbeat board (heartbeat_board.h), from which request threads answer the
// heartbeats that change nothing but the node's time. The writer takes those times into the state at the start
// of each batch, and asks the board before it times a node out.
//
// Thread-safety: call(), read(), leading(), leader_url() and heartbeats() from any thread; everything else from
// the thread that owns the Writer.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <thread>
#include <tuple>

#include "core/placement/fit_cache.h"
#include "server/outside/admission_checks.h"
#include "server/http/auth_gate.h"
#include "server/writer/event_log.h"
#include "server/lifecycle/heartbeat_board.h"
#include "server/writer/leadership.h"
#include "server/lifecycle/node_silence.h"
#include "server/lifecycle/round_nodes.h"
#include "server/options.h"
#include "server/outside/provisioner.h"
#include "server/http/reply.h"
#include "server/writer/server_state.h"
#include "server/writer/snapshot_writer.h"
#include "common/thread_annotations.h"
#include "server/writer/view_publisher.h"
#include "store/store.h"

namespace allot::server {

// A command's view of the batch it runs in.
class Txn {
 public:
  using Effect = std::function<void()>;
  Txn(ServerState& st, int64_t now_ms, std::vector<store::Record>& records, std::vector<Event>& events,
      std::vector<Effect>& effects)
      : st_(&st), view_(&st), now_ms_(now_ms), records_(&records), events_(&events), effects_(&effects) {}
  // A read-only request's view of a state: state(), apply() and after_commit() refuse (a read must not change
  // what other threads read at the same time). A read gets one on both of its paths (Writer::read).
  Txn(const ServerState& view, int64_t now_ms) : view_(&view), now_ms_(now_ms) {}
  ServerState& state();
  const ServerState& view() const { return *view_; }
  const ClusterState& cluster() const { return view_->cluster; }
  Time now() const { return now_ms_ / 1000; }
  int64_t now_ms() const { return now_ms_; }
  // Applies an operation at this batch's time, in the name of the current command's caller: to the state,
  // into the batch's records and events. An error means the core refused it and nothing changed.
  Status apply(store::Op op);
  // Runs `effect` on the writer thread once the journal holds the batch, before its answers go out: what a
  // change does outside the state (a deleted job's log files). Never when the write fails (the state is then
  // rebuilt from the journal, where the change is not) nor when the command answers an error.
  Status after_commit(Effect effect);
  // An event that no record carries (the server's own observations, such as node_silence.h's), at this batch's
  // time, published with the batch's events once it is durable.
  // With `job`, the event is about that job (and visible to its team's members, as its records' events are).
  void note(std::string kind, std::string node, std::string message, std::string job = "");
  // Whom the records of the command now running name (set by the writer for each command).
  void act_as(store::Actor actor) { actor_ = std::move(actor); }
  const store::Actor& actor() const { return actor_; }
  // For a refusal the command answers as another error (a member who names another team's job is told what a
  // name no job has ever had gets, access.h refuse_job): the refusal itself, which the audit trail records
  // instead of the answer. The writer takes it after each command.
  void audit_as(Error refusal) { audited_as_ = std::move(refusal); }
  std::optional<Error> take_audited_as() { return std::exchange(audited_as_, std::nullopt); }

 private:
  store::Actor actor_;
  std::optional<Error> audited_as_;
  ServerState* st_ = nullptr;  // null for a read-only request
  const ServerState* view_;
  int64_t now_ms_;
  std::vector<store::Record>* records_ = nullptr;
  std::vector<Event>* events_ = nullptr;
  std::vector<Effect>* effects_ = nullptr;
};

// The server itself, as the records of its own decisions name it (scheduling, health changes, plan steps, time
// limits).
inline const store::Actor kServerActor{.token = "server", .role = store::Tokenless::kServer};

// In its scope the Txn acts as the server, whoever's request happened to be in the batch; then as before.
class AsServer {
 public:
  explicit AsServer(Txn& txn) : txn_(txn), saved_(txn.actor()) { txn_.act_as(kServerActor); }
  ~AsServer() { txn_.act_as(saved_); }
  AsServer(const AsServer&) = delete;
  AsServer& operator=(const AsServer&) = delete;

 private:
  Txn& txn_;
  store::Actor saved_;
};

// Renders the answer once the batch is scheduled and durable (so a submitted job may already be Running).
using Render = std::function<Reply(const ServerState&)>;
// Runs on the writer thread. An error answer must mean the command changed nothing.
using Command = std::function<Result<Render>(Txn&)>;

// Who sent a command, and, for a request that asks for a change, the audit record to write with its answer
// (status and message are filled in by the writer).
struct CallContext {
  store::Actor actor;
  std::optional<store::Audit> audit;
};

class Writer {
 public:
  // `auth` receives the token table after every durable batch that changed it.
  Writer(const ServerOptions& options, std::unique_ptr<store::Store> store, EventLog& events, AuthGate& auth);
  ~Writer();

  // Replays the journal into a fresh state. REQUIRES: not started.
  Status recover();
  void start();
  // How provisioned agents reach the server (known once it listens). REQUIRES: not started.
  void set_public_url(std::string url) { public_url_ = std::move(url); }
  // Answers what is queued with 503 and joins the thread.
  void stop();

  // Runs `cmd` in the next batch and waits for its answer; 503 when the server stops or the answer takes
  // longer than the request timeout (the outcome is then unknown: read the object to find out).
  Reply call(Command cmd, CallContext ctx);
  // Runs a read-only `cmd` on the calling thread against the published view, once that reflects every change
  // answered before read() was called (waiting for a fresh one when it does not; 503 after the request timeout,
  // while the state awaits a rebuild, or when the writer stops). `cmd` gets a read-only Txn: a command that tries
  // to change the state is refused.
  Reply read(Command cmd, CallContext ctx);

  // Whether this server leads (always, on a store that is not shared): request threads redirect writes to the
  // leader when it does not. The leader's URL is empty while none is known.
  bool leading() const { return leadership_.leading(); }
  // Where request threads answer heartbeats that change nothing (heartbeat_board.h).
  HeartbeatBoard& heartbeats() { return board_; }
  // Where the HTTP server notes the connections it refused (node_silence.h).
  ServerLiveness& liveness() { return liveness_; }
  std::string leader_url() const { return leadership_.leader_url(); }
  // The URL the other servers redirect writes to while this one leads. REQUIRES: before start().
  void set_advertise_url(std::string url) { leadership_.set_advertise_url(std::move(url)); }
  // Called on the writer thread with the names of the jobs a compaction took, once it is durable (the server
  // drops their logs, as for a deleted job). REQUIRES: before start().
  void set_on_compacted(std::function<void(const std::vector<std::string>&)> hook) { on_compacted_ = std::move(hook); }
  // Called on the writer thread with the webhook table whenever a durable batch (or a replay, or following the
  // leader) changed it (webhook_sender.h). REQUIRES: set before start().
  void set_on_webhooks(std::function<void(std::shared_ptr<const WebhookTable>)> hook) { on_webhooks_ = std::move(hook); }
  // Called on the writer thread with the HTTP admission checks runs wait for (admission_checks.h, check_asks)
  // whenever a durable batch moved the events or the checks; empty while this server does not lead
  // (admission_checker.h). REQUIRES: set before start().
  void set_on_check_asks(std::function<void(std::vector<CheckAsk>)> hook) { on_check_asks_ = std::move(hook); }
  // Tries to take the lead once now (Server::start, before the first bootstrap); a no-op when leading.
  void step_leadership(bool force);

  // Batches and records journaled so far (for benchmarks and tests).
  struct Stats {
    uint64_t batches = 0;
    uint64_t commands = 0;
    uint64_t records = 0;
    uint64_t passes = 0;          // scheduler runs
    double pass_seconds = 0;      // their total duration
    double max_pass_seconds = 0;
    uint64_t heartbeats_off_writer = 0;        // answered from the heartbeat board
    uint64_t heartbeat_board_mismatches = 0;   // with ServerOptions::verify_heartbeat_board; 0 unless a bug
    uint64_t round_nodes_walks = 0;            // walks over every node for the rounds (round_nodes.h)
    uint64_t round_nodes_missed = 0;           // with ServerOptions::verify_round_nodes; 0 unless a bug
    uint64_t watches_waiting = 0;              // agents' watches (GET /v1/agents/{name}/changes) under way
    uint64_t watch_wakes = 0;                  // of those, parked ones' wakes registered on the heartbeat board
    uint64_t snapshots_written = 0;
    uint64_t snapshots_refused = 0;   // latest snapshots that could not be read or restored: the journal was replayed
    uint64_t rebuilds = 0;            // states rebuilt from the journal after a failed write
    uint64_t refused_no_space = 0;    // changes refused at once while the journal had no room
    // How much higher than the process's the writer thread's CPU priority is: ServerOptions::writer_priority as the
    // kernel granted it when the thread started (thread_priority.h).
    int writer_priority = 0;
    bool snapshot_writing = false;  // one is being encoded and written off the writer thread (snapshot_writer.h)
  };
  Stats stats() const;
  // Reads answered from the published view, and views published, so far (for tests and benchmarks).
  using ViewStats = ViewPublisher::Stats;
  ViewStats view_stats() const { return views_.stats(); }

 private:
  struct Pending {
    Command cmd;
    CallContext ctx;
    std::promise<Reply> answer;
  };
  Reply enqueue(Command cmd, CallContext ctx);
  void loop();
  void run_batch(std::vector<Pending>& batch);
  void time_out_nodes(Txn& txn);
  // The nodes the rounds look at now (RoundNodes::due), checked with ServerOptions::verify_round_nodes.
  const std::vector<RoundNodes::Entry>& round_nodes(int64_t now_ms);
  // After a failed write: whether the journal has room; without, changes are refused until it has (see the note at
  // the top). REQUIRES: the writer thread.
  void note_space_after_failure();
  // While the journal has no room: asks again every kSpaceCheck, and resumes changes once it has.
  void check_space_returned();
  // At the start of a batch: after a stall or a refusal, no node's silence counts before it (the leader's).
  void note_liveness(Txn& txn);
  // Takes the heartbeat times the board noted into the state (NodeInfo::last_heartbeat_ms).
  void fold_heartbeat_times();
  // Publishes the heartbeat answers of the nodes the batch (whose events these are) may have changed, or of every
  // node after a rebuild; on a server that does not lead, empties the board. REQUIRES: the state is durable.
  void refresh_heartbeat_board(const std::vector<Event>& events);
  // The leader: journals a compaction when finished jobs have outlived retain_finished_s (server/writer/retention.h),
  // at most every retention_check_interval. Returns the names of the jobs it compacted.
  std::vector<std::string> compact_finished_jobs(Txn& txn);
  // Hands the token table to the AuthGate, and the webhook table to on_webhooks_, when a batch changed them.
  void publish_tables();
  // Takes a state rebuilt from the journal after a failed write, keeping what the journal does not hold.
  void adopt_rebuilt(ServerState fresh);
  // Rebuilds a state from the journal; with `publish`, its events go to the event log as well.
  Result<ServerState> replay(bool publish);
  // A standby: applies what the leader wrote since the last record applied, and publishes its events.
  // Applies the journal's records after the state's last one; false (and logged, once per distinct error) when it
  // cannot read them all, a damaged record among them (store/journal_checksum.h): a standby that cannot follow
  // does not take the lead.
  bool follow();
  std::string follow_error_;  // the last error of follow(), logged once

  const ServerOptions options_;
  std::unique_ptr<store::Store> store_;
  EventLog& events_;
  AuthGate& auth_;
  uint64_t published_tokens_ = ~uint64_t{0};  // the tokens_version last handed to auth_
  ServerState state_;
  FitCache fit_cache_;  // what the scheduler's passes on state_ remember of job shapes; replaced with state_
  // The one way state_ is replaced (a replay at start, a rebuild after a failed write): with a new fit cache,
  // whose answers were the old state's.
  void take_state(ServerState fresh);
  Provisioner provisioner_;
  std::string public_url_;
  // When the scheduler may run next (see the note at the top); only the writer thread touches these.
  std::chrono::steady_clock::time_point next_pass_{};
  std::optional<Time> next_wakeup_;
  bool dirty_ = true;  // the state changed since the last pass
  Time time_limits_checked_at_ = -1;  // the second of the last walk for time limits and start timeouts
  Leadership leadership_;  // whether this server leads, and who does (leadership.h)
  // The state holds changes the journal may not (a write failed) and the journal could not be read back to
  // rebuild it: a standby that answers no reads from it until a rebuild from the journal succeeds.
  bool needs_rebuild_ = false;
  int64_t next_compaction_check_ms_ = 0;  // options_.clock() milliseconds
  std::function<void(const std::vector<std::string>&)> on_compacted_;
  std::function<void(std::shared_ptr<const WebhookTable>)> on_webhooks_;
  uint64_t published_webhooks_ = ~uint64_t{0};  // the webhooks_version last handed to on_webhooks_
  std::function<void(std::vector<CheckAsk>)> on_check_asks_;
  // What the asks last handed to on_check_asks_ were made from: the last event, the checks' version, leadership.
  std::tuple<uint64_t, uint64_t, bool> published_asks_{~uint64_t{0}, 0, false};
  uint64_t builtin_checks_seen_ = ~uint64_t{0};  // the last event answer_builtin_checks looked after
  HeartbeatBoard board_;
  std::atomic<int> priority_granted_{0};
  std::atomic<bool> no_space_{false};  // the journal has no room: changes are refused (see the note at the top)
  std::string no_space_why_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point next_space_check_{};
  ServerLiveness liveness_;
  RoundNodes round_nodes_;  // the nodes time_out_nodes and lifecycle_tick look at (round_nodes.h)
  uint64_t round_nodes_missed_ = 0;
  bool disruption_held_ = false;  // the disruption rule held timeouts at the last look (node_silence.h)
  bool board_all_stale_ = true;  // every node's answer is to be published afresh (a new or rebuilt state)
  bool heard_pending_ = false;    // a heartbeat time folded in moved to a new second, not yet counted as a change
  std::chrono::steady_clock::time_point heard_counted_at_{};  // when one last counted (fold_heartbeat_times)
  uint64_t board_mismatches_ = 0;

  // The queue of commands and what request threads and the writer share besides: guarded by mu_; request
  // threads wake the writer through cv_.
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  bool running_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  Stats stats_ GUARDED_BY(mu_);
  std::thread thread_;

  bool view_requested_ GUARDED_BY(mu_) = false;  // a read woke the idle writer for a view
  ViewPublisher views_;  // the read view (view_publisher.h)
  SnapshotWriter snapshots_{options_, *store_, events_};  // the leader's snapshots (snapshot_writer.h)
  bool state_changed_ = true;  // writer thread: the state changed since the last publish
};

}  // namespace allot::server
