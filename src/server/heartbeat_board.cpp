#include "server/heartbeat_board.h"

#include "server/agents.h"
#include "server/node_lifecycle.h"

namespace allot::server {

using nlohmann::json;

NodeAnswer node_answer(const ServerState& st, const ServerOptions& options, const std::string& name) {
  NodeAnswer a;
  const Node* node = st.cluster.find_node(name);
  auto info = st.nodes.find(name);
  if (!node || info == st.nodes.end()) return a;  // a heartbeat of such a node is the writer's (404, or a new entry)
  a.fast = !(info->second.timed_out && node->health == NodeHealth::kUnschedulablePendingReboot);
  if (const std::set<uint32_t>* here = st.running_by_node.on(node->id)) {
    for (uint32_t index : *here) {
      const Job& j = st.cluster.jobs[index];
      if (j.state != JobState::kRunning) continue;  // cannot happen while the index is right; cheap to check
      const int attempt = attempt_of(j);
      std::map<NodeId, int> local;  // replicas of this job seen so far per node: LOCAL_RANK
      int rank = 0;
      for (const auto& ps : j.placement.pod_sets) {
        for (const auto& r : ps.replicas) {
          const int this_rank = rank++;
          const int local_rank = local[r.node]++;
          if (r.node != node->id) continue;
          a.run.push_back(replica_assignment(st, options, j, this_rank, local_rank, ps, r));
          a.placed[{j.spec.name, this_rank}] = attempt;
        }
      }
      // The CPUs recorded for this run's replicas here (note_replica_cpus keeps those of the current attempt).
      if (auto c = st.replica_cpus.find(index); c != st.replica_cpus.end() && c->second.attempt == attempt)
        for (const auto& [rank_of, cpus] : c->second.by_rank)
          if (a.placed.count({j.spec.name, rank_of})) a.cpus[{j.spec.name, rank_of}] = cpus;
    }
  }
  const NodeOrders orders = orders_for(st, name);
  a.reboot = orders.reboot;
  a.deep_check = orders.deep_check;
  const NodeInfo& i = info->second;
  a.health = HealthReport{i.checks, i.checks_configured, i.boot, i.deep_status, i.deep_detail};
  a.same_health_changes_nothing = same_health_changes_nothing(st, name);
  return a;
}

json render_heartbeat(const NodeAnswer& a, const ServerOptions& options, const std::vector<ReplicaReport>& reports) {
  json stop = json::array();
  for (const ReplicaReport& rep : reports) {
    if (rep.exited) continue;
    auto it = a.placed.find({rep.job, rep.rank});
    const bool current = it != a.placed.end() && (!rep.attempt || *rep.attempt == it->second);
    if (!current) stop.push_back({{"job", rep.job}, {"rank", rep.rank}});
  }
  // The agent fences itself (stops its replicas) when it cannot heartbeat for about this long.
  json out = {{"run", a.run}, {"stop", stop}, {"heartbeat_timeout_ms", options.heartbeat_timeout.count()}};
  if (a.reboot) out["reboot"] = true;
  if (a.deep_check) out["deep_check"] = true;
  return out;
}

bool changes_nothing(const NodeAnswer& a, const std::vector<ReplicaReport>& reports, const std::optional<HealthReport>& health) {
  if (!a.fast) return false;
  for (const ReplicaReport& rep : reports) {
    if (rep.exited) return false;  // apply_exits: a run may end, or a rank count as done
    if (rep.cpus.empty()) continue;
    // note_replica_cpus keeps the CPUs of a current replica placed here, and ignores every other report.
    auto it = a.placed.find({rep.job, rep.rank});
    if (it == a.placed.end() || (rep.attempt && *rep.attempt != it->second)) continue;
    auto known = a.cpus.find({rep.job, rep.rank});
    if (known == a.cpus.end() || known->second != rep.cpus) return false;
  }
  if (health && (!(*health == a.health) || !a.same_health_changes_nothing)) return false;
  return true;
}

std::shared_ptr<HeartbeatBoard::Slot> HeartbeatBoard::find(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto it = slots_.find(node);
  return it == slots_.end() ? nullptr : it->second;
}

std::optional<json> HeartbeatBoard::try_answer(const std::string& node, const ServerOptions& options,
                                               const std::vector<ReplicaReport>& reports, const std::optional<HealthReport>& health) {
  auto slot = find(node);
  if (!slot) return std::nullopt;
  // The answer is checked outside the slot's lock, then the time noted under it only if that answer is still the
  // published one: a heartbeat is never noted against an answer the writer has replaced or closed meanwhile.
  for (int tries = 0; tries < 3; ++tries) {
    std::shared_ptr<const NodeAnswer> a;
    {
      std::lock_guard lock(slot->mu);
      a = slot->answer;
    }
    if (!a || !changes_nothing(*a, reports, health)) return std::nullopt;
    if (before_recheck_) before_recheck_(node);
    {
      std::lock_guard lock(slot->mu);
      if (slot->answer != a) continue;
      const int64_t now = clock_();
      if (now > slot->last_heard_ms.load()) slot->last_heard_ms.store(now);
    }
    ++answered_;
    return render_heartbeat(*a, options, reports);
  }
  return std::nullopt;  // the writer keeps publishing: let it answer
}

void HeartbeatBoard::publish(const std::string& node, std::shared_ptr<const NodeAnswer> answer) {
  std::lock_guard lock(mu_);
  if (!answer) {
    slots_.erase(node);
    return;
  }
  auto& slot = slots_[node];
  if (!slot) slot = std::make_shared<Slot>();
  std::lock_guard slot_lock(slot->mu);
  slot->answer = std::move(answer);
}

void HeartbeatBoard::clear() {
  std::lock_guard lock(mu_);
  slots_.clear();
}

bool HeartbeatBoard::empty() const {
  std::lock_guard lock(mu_);
  return slots_.empty();
}

std::shared_ptr<const NodeAnswer> HeartbeatBoard::published(const std::string& node) const {
  auto slot = find(node);
  if (!slot) return nullptr;
  std::lock_guard lock(slot->mu);
  return slot->answer;
}

void HeartbeatBoard::for_each_time(const std::function<void(const std::string&, int64_t)>& fn) const {
  std::lock_guard lock(mu_);
  for (const auto& [node, slot] : slots_) fn(node, slot->last_heard_ms.load());
}

bool HeartbeatBoard::close_if_silent(const std::string& node, int64_t now_ms, int64_t limit_ms) {
  auto slot = find(node);
  if (!slot) return true;
  std::lock_guard lock(slot->mu);
  if (now_ms - slot->last_heard_ms.load() <= limit_ms) return false;
  slot->answer = nullptr;
  return true;
}

}  // namespace allot::server
