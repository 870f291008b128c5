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
// Thread-safety: try_answer() and answered() from any thread; everything else from the writer thread.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/agent_reports.h"
#include "server/options.h"
#include "server/server_state.h"

namespace allot::server {

// What a heartbeat answer of one node depends on, as of one state.
struct NodeAnswer {
  // A heartbeat that changes nothing may be answered from this: the node is in the cluster and the server did not
  // mark it failed for silence (a heartbeat then makes it Schedulable again, which is the writer's to do).
  bool fast = false;
  nlohmann::json run = nlohmann::json::array();  // every replica placed on the node (agents.h)
  std::map<std::pair<std::string, int>, int> placed;        // (job, rank) of those replicas -> their attempt
  std::map<std::pair<std::string, int>, std::string> cpus;  // the CPUs recorded for them, where any are
  bool reboot = false, deep_check = false;                  // orders (node_lifecycle.h)
  HealthReport health;                                      // the node's last health report, as NodeInfo holds it
  bool same_health_changes_nothing = false;                 // node_lifecycle.h
  bool operator==(const NodeAnswer&) const = default;
};

NodeAnswer node_answer(const ServerState& st, const ServerOptions& options, const std::string& node);

// {"run": [assignment], "stop": [{"job", "rank"}], "heartbeat_timeout_ms", "reboot"?, "deep_check"?}: the run list,
// and the replicas the agent reports running that are not placed on the node (or not of their current attempt).
nlohmann::json render_heartbeat(const NodeAnswer& a, const ServerOptions& options, const std::vector<ReplicaReport>& reports);

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
  // Calls fn(node, last-heard ms) for every node heard from here (0: not yet).
  void for_each_time(const std::function<void(const std::string&, int64_t)>& fn) const;
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
    std::mutex mu;  // orders try_answer()'s note of the time against close_if_silent()
    std::shared_ptr<const NodeAnswer> answer;
    std::atomic<int64_t> last_heard_ms{0};
  };
  std::shared_ptr<Slot> find(const std::string& node) const;

  std::function<int64_t()> clock_;
  mutable std::mutex mu_;  // guards the map, not the slots
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots_;
  std::atomic<uint64_t> answered_{0};
  std::function<void(const std::string&)> before_recheck_;
};

}  // namespace allot::server
