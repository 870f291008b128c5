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
// Thread-safety: call(), leading() and leader_url() from any thread; everything else from the thread that owns
// the Writer.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "server/auth_gate.h"
#include "server/event_log.h"
#include "server/options.h"
#include "server/provisioner.h"
#include "server/reply.h"
#include "server/server_state.h"
#include "store/store.h"

namespace allot::server {

// A command's view of the batch it runs in.
class Txn {
 public:
  Txn(ServerState& st, int64_t now_ms, std::vector<store::Record>& records, std::vector<Event>& events)
      : st_(st), now_ms_(now_ms), records_(records), events_(events) {}
  ServerState& state() { return st_; }
  const ClusterState& cluster() const { return st_.cluster; }
  Time now() const { return now_ms_ / 1000; }
  int64_t now_ms() const { return now_ms_; }
  // Applies an operation at this batch's time, in the name of the current command's caller: to the state,
  // into the batch's records and events. An error means the core refused it and nothing changed.
  Status apply(store::Op op);
  // Whom the records of the command now running name (set by the writer for each command).
  void act_as(store::Actor actor) { actor_ = std::move(actor); }
  const store::Actor& actor() const { return actor_; }

 private:
  store::Actor actor_;
  ServerState& st_;
  int64_t now_ms_;
  std::vector<store::Record>& records_;
  std::vector<Event>& events_;
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

  // Whether this server leads (always, on a store that is not shared): request threads redirect writes to the
  // leader when it does not. The leader's URL is empty while none is known.
  bool leading() const { return leading_flag_.load(); }
  std::string leader_url() const;
  // The URL the other servers redirect writes to while this one leads. REQUIRES: before start().
  void set_advertise_url(std::string url);
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
  };
  Stats stats() const;

 private:
  struct Pending {
    Command cmd;
    CallContext ctx;
    std::promise<Reply> answer;
  };
  void loop();
  void run_batch(std::vector<Pending>& batch);
  void time_out_nodes(Txn& txn);
  // Hands the token table to the AuthGate when a batch changed it.
  void publish_tokens();
  // Rebuilds a state from the journal; with `publish`, its events go to the event log as well.
  Result<ServerState> replay(bool publish);
  // A standby: applies what the leader wrote since the last record applied, and publishes its events.
  void follow();
  std::string own_url() const;

  const ServerOptions options_;
  std::unique_ptr<store::Store> store_;
  EventLog& events_;
  AuthGate& auth_;
  uint64_t published_tokens_ = ~uint64_t{0};  // the tokens_version last handed to auth_
  ServerState state_;
  Provisioner provisioner_;
  std::string public_url_;
  // When the scheduler may run next (see the note at the top); only the writer thread touches these.
  std::chrono::steady_clock::time_point next_pass_{};
  std::optional<Time> next_wakeup_;
  bool dirty_ = true;  // the state changed since the last pass
  bool leading_ = true;  // false on a shared store until it takes the lead
  std::chrono::steady_clock::time_point next_leader_try_{};
  std::atomic<bool> leading_flag_{true};  // leading_, for request threads
  std::string leader_url_;                // guarded by mu_
  std::string advertise_url_;             // guarded by mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool running_ = false;
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace allot::server
