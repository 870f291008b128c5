#pragma once
// Heartbeats off the write path (bench/RESULTS.md, "Heartbeats off the writer"). With 1,000 agents heartbeating
// every second, most heartbeats report nothing new: the same replicas still running, the same health. Such a
// heartbeat changes only the node's last-heard time, yet it used to queue behind whole batches of the writer
// (a scheduling pass over every waiting job, an fsync), and agents went unanswered past their timeout.
//
// After every batch, once it is durable and before it is answered, the writer publishes per node what a
// heartbeat answer holds (NodeAnswer: the run list, what stop decisions and CPU reports are compared with, the
// orders, the last health report). A request thread answers a heartbeat from that when the heartbeat would change
// nothing but the node's last-heard time (changes_nothing()): no exit, no CPU list that differs from the one
// recorded, no health report that differs from the last one or that would move the node along its lifecycle.
// Every other heartbeat goes through the writer as before, and both are answered by render_heartbeat() from a
// NodeAnswer, so a heartbeat gets the same answer either way (a test checks it after every batch, see
// ServerOptions::verify_heartbeat_board). Because the writer publishes before it answers its batch, an answer
// from the board holds every change answered before the heartbeat arrived, and only durable ones.
//
// The time is kept per node here (the writer folds it into NodeInfo::last_heartbeat_ms at the start of each
// batch). The failure timeout stays exact: before the writer times a node out, close_if_silent() looks at the
// node's time and closes its slot in one step under the slot's lock, so a heartbeat is either seen in time (and
// the node is not timed out) or is refused here and goes to the writer, which undoes the timeout as it always
// did. So no answer from the board ever lists a replica the server has already restarted elsewhere.
//
// Agents learn of new work at once rather than at their next heartbeat by watching their node's run tag
// (wait_for_change(), GET /v1/agents/{name}/changes): a digest of what the answer tells the agent to do (run
// list and orders). The writer's publish wakes the node's watchers when the answer brings the agent something to
// do (adds_work(): a replica or attempt it did not list, an order), and the watch is answered with the run list
// and orders themselves (render_changes()), so the agent starts new work without a heartbeat of its own; its next
// scheduled heartbeat reports it. A publish that only takes replicas away wakes nobody: most are exits the
// agent itself reported, and a watch answer stops nothing (stops answer a heartbeat's report), so replicas the
// server ends are stopped at the agent's next heartbeat, as without the watch. A watch that starts with a tag
// other than the published one is answered at once (the agent is behind). Every answer also says which journal record its state follows (as_of): the agent acts on a watch answer only when it
// is newer than the last answer it acted on, since the two come on different connections and may cross.
//
// Each watch holds a connection for its whole wait (parked without a thread where the HTTP server defers it:
// check_or_subscribe()), and heartbeats need connections too:
// the endpoint admits at most a bounded number of watches at once (try_add_watcher()), and refuses the rest
// with 429 and Retry-After; those agents learn of work at their heartbeats meanwhile.
//
// Thread-safety: try_answer(), answered(), wait_for_change() and shutdown() from any thread; everything else
// from the writer thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/lifecycle/agent_reports.h"
#include "server/options.h"
#include "server/writer/server_state.h"
#include "common/thread_annotations.h"

namespace allot::server {

// What a heartbeat answer of one node depends on, as of one state.
struct NodeAnswer {
  // A heartbeat that changes nothing may be answered from this: the node is in the cluster and the server did not
  // mark it failed for silence (a heartbeat then makes it Schedulable again, which is the writer's to do).
  bool fast = false;
  nlohmann::json run = nlohmann::json::array();  // every replica placed on the node (agents.h)
  std::map<std::pair<std::string, int>, int> placed;        // (job, rank) of those replicas -> their attempt
  std::map<std::pair<std::string, int>, std::string> cpus;  // the CPUs recorded for them, where any are
  std::set<std::pair<std::string, int>> pulling;            // those recorded as pulling their image (note_pulls)
  // While the policy sets a start_timeout: those recorded as started (note_starts); a replica reported running
  // that is not yet recorded goes to the writer.
  bool track_starts = false;
  std::set<std::pair<std::string, int>> started;
  // Moved ranks placed here that an in-place recovery awaits (in_place_recovery.h): reported running, they go to
  // the writer.
  std::set<std::pair<std::string, int>> awaited;
  // The membership epoch of each job with recovery: in_place that has a replica here: a new one is work for the
  // agent (it tells the replicas here), so it wakes the node's watchers at once.
  std::map<std::string, int> epochs;
  // Those listed held (start_gate.h, a recovery): the agent keeps them running but starts none of them; their
  // release wakes the node's watchers.
  std::set<std::pair<std::string, int>> held;
  bool reboot = false, deep_check = false;                  // orders (node_lifecycle.h)
  HealthReport health;                                      // the node's last health report, as NodeInfo holds it
  bool same_health_changes_nothing = false;                 // node_lifecycle.h
  // A digest of `run`, `reboot` and `deep_check` (run_tag()): equal tags, the same work for the agent.
  std::string tag;
  // The last journal record of the state the answer was made from (ServerState::last_seq): orders answers for
  // the agent, whose heartbeats and watch may cross. Answers of different records may say the same.
  uint64_t as_of = 0;
  bool operator==(const NodeAnswer&) const = default;
};

// The tag of an answer's run list and orders: 16 hex digits. Not a secret: it only tells an agent that its
// answer changed.
std::string run_tag(const NodeAnswer& a);

NodeAnswer node_answer(const ServerState& st, const ServerOptions& options, const std::string& node);

// {"run": [assignment], "stop": [{"job", "rank"}], "heartbeat_timeout_ms", "run_tag", "as_of", "reboot"?, "deep_check"?}:
// the run list, and the replicas the agent reports running that are not placed on the node (or not of their
// current attempt).
nlohmann::json render_heartbeat(const NodeAnswer& a, const ServerOptions& options, const std::vector<ReplicaReport>& reports);

// The answer to a watch (GET /v1/agents/{name}/changes): {"run_tag", "as_of", "run", "reboot"?, "deep_check"?},
// what a heartbeat answer says about the node's work, without "stop" (that compares with a heartbeat's report).
// Null `a` (no answer published for the node): {"run_tag": ""}, nothing to act on.
nlohmann::json render_changes(const NodeAnswer* a);

// Whether `now` gives the agent something to do that `before` did not: a replica (or attempt of one) placed on the
// node or released from a hold, a new membership epoch of a job here (recovery in place), or an order (reboot, deep
// check). What wakes the node's watchers.
bool adds_work(const NodeAnswer& before, const NodeAnswer& now);

// Whether handling the heartbeat in the writer would change nothing but the node's last-heard time.
bool changes_nothing(const NodeAnswer& a, const std::vector<ReplicaReport>& reports, const std::optional<HealthReport>& health);

class HeartbeatBoard {
 public:
  explicit HeartbeatBoard(std::function<int64_t()> clock) : clock_(std::move(clock)) {}

  // Request threads: the answer to a heartbeat of `node` that changes nothing, with the node's time noted; or
  // nullopt when the writer must handle it.
  std::optional<nlohmann::json> try_answer(const std::string& node, const ServerOptions& options,
                                           const std::vector<ReplicaReport>& reports, const std::optional<HealthReport>& health);
  uint64_t answered() const { return answered_.load(); }  // heartbeats answered here (tests, benchmarks)

  // The writer: publishes the node's answer (null: the node left, its slot goes).
  void publish(const std::string& node, std::shared_ptr<const NodeAnswer> answer);
  // Drops every slot (a server that stops leading answers no heartbeat from here).
  void clear();
  bool empty() const;
  // The answer published for `node` (tests: compared with a fresh node_answer()).
  std::shared_ptr<const NodeAnswer> published(const std::string& node) const;
  // Request threads (an agent's watch): returns the answer published for `node` at once when its tag differs
  // from `known`; else waits until a publish adds work (adds_work()), the node's slot goes, the board shuts down,
  // or `deadline`, and returns the answer then. A node without a slot (a standby's board, a node timed out)
  // waits until the deadline, so that an agent watching the wrong server does not spin.
  // The answer is null when none is published.
  std::shared_ptr<const NodeAnswer> wait_for_change(const std::string& node, const std::string& known,
                                                    std::chrono::steady_clock::time_point deadline);
  // Request threads (a watch deferred by the HTTP server, http_server.h: it waits parked, without a thread): the
  // answer wait_for_change() would return at once (ready), or, where it would wait, not ready with `wake`
  // registered under `ticket`: called once, from the thread that publishes (or shuts down), when wait_for_change()
  // would have returned: a publish adds work, the node's slot goes or comes with a tag other than `known`, the
  // board shuts down. The watch then answers current(). A watch that ends otherwise (its deadline, its client gone)
  // unsubscribes.
  struct Check {
    bool ready = false;
    std::shared_ptr<const NodeAnswer> answer;  // when ready (null: none published)
    uint64_t ticket = 0;                       // when not
  };
  Check check_or_subscribe(const std::string& node, const std::string& known, std::function<void()> wake);
  void unsubscribe(const std::string& node, uint64_t ticket);
  // What a watch answers when woken or at its deadline: the answer published for `node`; null when none is, the
  // node's slot is gone or the board shut down.
  std::shared_ptr<const NodeAnswer> current(const std::string& node) const;
  size_t subscribed() const;  // wakes registered (tests: a watcher gone leaves none behind)
  // Request threads: counts a watch in, unless `limit` are under way already (false: refuse it). Each true is
  // paired with one remove_watcher() when the watch ends.
  bool try_add_watcher(size_t limit);
  void remove_watcher() { --watchers_; }
  void add_watcher() { ++watchers_; }  // a deferred watch that waits again, admitted already
  size_t watchers() const { return watchers_.load(); }
  // Wakes every watcher and makes later waits return at once (the server is stopping).
  void shutdown();
  // Calls fn(node, last-heard ms) for every node heard from here (0: not yet).
  void for_each_time(const std::function<void(const std::string&, int64_t)>& fn) const;
  // Calls fn(node, last-heard ms) for every node heard here since the last call (each once, with its latest time),
  // so that folding the times costs the heartbeats answered, not the nodes: 10,000 nodes each batch were most of
  // the writer's round. A node heard while this runs is either seen with that time or listed for the next call.
  void take_heard(const std::function<void(const std::string&, int64_t)>& fn) EXCLUDES(heard_mu_);
  // The writer, about to time `node` out for silence at `now_ms`: false when a heartbeat came within `limit_ms`
  // (the node is not silent); else closes the node's slot, so that from now on its heartbeats go to the writer,
  // and returns true.
  bool close_if_silent(const std::string& node, int64_t now_ms, int64_t limit_ms);
  // Tests: called by try_answer() with the node's name after it read the published answer and before it rechecks
  // it under the slot's lock, the window in which the writer may replace or close it (heartbeat_board_test.cpp).
  // REQUIRES: before any try_answer().
  void set_before_recheck(std::function<void(const std::string&)> hook) { before_recheck_ = std::move(hook); }

 private:
  struct Slot {
    explicit Slot(std::string n) : node(std::move(n)) {}
    const std::string node;
    Mutex mu;  // orders try_answer()'s note of the time against close_if_silent()
    std::shared_ptr<const NodeAnswer> answer GUARDED_BY(mu);
    std::atomic<int64_t> last_heard_ms{0};
    std::condition_variable changed;      // with mu: work was added, or the slot was dropped
    uint64_t work_added GUARDED_BY(mu) = 0;  // publishes that added work (adds_work())
    bool dropped GUARDED_BY(mu) = false;     // the slot left the board (node gone, board cleared)
    std::atomic<bool> listed{false};         // in heard_ (take_heard)
  };
  void drop(Slot& slot) REQUIRES(mu_);
  // The wakes of `node` (all, or those whose known tag differs from `tag`), taken out to be called after the
  // locks are let go.
  void take_wakes(const std::string& node, const std::string* tag, std::vector<std::function<void()>>& out) REQUIRES(mu_);
  std::shared_ptr<Slot> find(const std::string& node) const;

  std::function<int64_t()> clock_;
  mutable Mutex mu_;  // guards the map, not the slots; taken before a slot's lock, never after
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots_ GUARDED_BY(mu_);
  std::condition_variable slot_added_;  // with mu_: a watcher of a node without a slot waits for one
  struct Subscriber {
    std::string known;
    std::function<void()> wake;
  };
  std::unordered_map<std::string, std::map<uint64_t, Subscriber>> subscribers_ GUARDED_BY(mu_);  // by node, ticket
  uint64_t next_ticket_ GUARDED_BY(mu_) = 1;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> answered_{0};
  std::atomic<size_t> watchers_{0};
  std::function<void(const std::string&)> before_recheck_;
  Mutex heard_mu_;  // taken alone, never with another lock of the board
  std::vector<std::shared_ptr<Slot>> heard_ GUARDED_BY(heard_mu_);  // heard since the last take_heard()
};

}  // namespace allot::server
