#include "server/lifecycle/in_place_recovery.h"

#include <spdlog/spdlog.h>

#include "core/lifecycle/in_place.h"
#include "server/lifecycle/replica_ranks.h"
#include "server/lifecycle/start_gate.h"

namespace allot::server {

void recover_in_place_from(Txn& txn, const std::string& node) {
  const Node* n = txn.cluster().find_node(node);
  if (!n) return;
  const std::vector<InPlaceRecovery> plans = plan_in_place_recoveries(txn.cluster(), n->id);
  if (plans.empty()) return;
  AsServer as(txn);
  for (const InPlaceRecovery& r : plans) {
    const ClusterState& s = txn.cluster();
    const Job& j = s.jobs[r.job.index()];
    store::RecoverInPlace rec{j.spec.name, node, j.membership_epoch + 1, {}};
    for (const ReplicaMove& m : r.moves)
      rec.moves.push_back({static_cast<int>(m.pod_set), static_cast<int>(m.index),
                           store::ReplicaRecord{s.nodes[m.to.node.index()].name, m.to.accelerators, m.to.numa_domains, m.to.cpus}});
    const std::string name = j.spec.name;
    const uint32_t index = j.id.index();
    // The moved ranks and their new nodes, for the start gate once the record is applied.
    std::vector<std::pair<int, std::string>> moved;
    for (const ReplicaMove& m : r.moves) {
      int rank = static_cast<int>(m.index);
      for (size_t p = 0; p < m.pod_set && p < j.placement.pod_sets.size(); ++p) rank += static_cast<int>(j.placement.pod_sets[p].replicas.size());
      moved.push_back({rank, s.nodes[m.to.node.index()].name});
    }
    if (auto st = txn.apply(std::move(rec)); !st) {
      spdlog::error("job {}: cannot recover it in place from node {}: {}", name, node, st.error().message);
      continue;
    }
    // Each moved rank starts on its new node only once its process here is confirmed stopped (start_gate.h).
    for (const auto& [rank, to] : moved) hold_moved_rank(txn.state(), txn.cluster().jobs[index], rank, node, to);
    // Awaited from now on this server's clock (the record's time has whole seconds only).
    if (auto it = txn.state().in_place_waits.find(index); it != txn.state().in_place_waits.end()) it->second.since_ms = txn.now_ms();
    // The exit its replica on the node reported (held for the node's verdict) was the node's.
    if (auto it = txn.state().deferred_exits.find(index); it != txn.state().deferred_exits.end() && it->second.node == node)
      txn.state().deferred_exits.erase(it);
    spdlog::info("job {}: recovered in place from node {} (membership epoch {})", name, node, j.membership_epoch);
  }
}

void note_recovered(Txn& txn, const std::string& node_name, const std::vector<ReplicaReport>& reports) {
  if (txn.view().in_place_waits.empty()) return;
  const Node* node = txn.cluster().find_node(node_name);
  if (!node) return;
  for (const ReplicaReport& rep : reports) {
    if (rep.state != ReplicaState::kRunning) continue;
    const Job* j = txn.cluster().find_job(rep.job);
    if (!j || j->state != JobState::kRunning || (rep.attempt && *rep.attempt != attempt_of(*j))) continue;
    auto it = txn.state().in_place_waits.find(j->id.index());
    if (it == txn.state().in_place_waits.end() || it->second.epoch != j->membership_epoch) continue;
    bool here = false;
    for_each_replica(*j, [&](int rank, const PodSetPlacement&, const ReplicaBinding& r) { here |= rank == rep.rank && r.node == node->id; });
    if (!here || !it->second.ranks.erase(rep.rank) || !it->second.ranks.empty()) continue;
    const double took_s = static_cast<double>(txn.now_ms() - it->second.since_ms) / 1000.0;
    txn.note("recovered", node_name,
             "in-place recovery of membership epoch " + std::to_string(j->membership_epoch) + " done: every moved rank runs, " +
                 std::to_string(static_cast<int64_t>(took_s * 1000)) + " ms after the recovery",
             j->spec.name);
    txn.state().in_place_waits.erase(it);
  }
}

bool fall_back_stalled_recoveries(Txn& txn) {
  ServerState& st = txn.state();
  if (st.in_place_waits.empty()) return false;
  std::vector<std::pair<std::string, int>> due;  // job, epoch
  for (auto it = st.in_place_waits.begin(); it != st.in_place_waits.end();) {
    const Job& j = st.cluster.jobs[it->first];
    if (j.state != JobState::kRunning || j.membership_epoch != it->second.epoch) {
      it = st.in_place_waits.erase(it);  // the run ended, or a later recovery replaced this one
      continue;
    }
    if (txn.now_ms() - it->second.since_ms >= j.spec.recovery_bound_s() * 1000) due.push_back({j.spec.name, it->second.epoch});
    ++it;
  }
  if (due.empty()) return false;
  AsServer as(txn);
  for (const auto& [name, epoch] : due) {
    const Job* j = st.cluster.find_job(name);
    std::string ranks;
    for (int r : st.in_place_waits[j->id.index()].ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    const std::string why = "in-place recovery (membership epoch " + std::to_string(epoch) + ") did not finish within " +
                            std::to_string(j->spec.recovery_bound_s()) + " s (recovery_timeout): rank " + ranks +
                            " not running; restarting the job";
    if (auto r = txn.apply(store::InPlaceFallback{name, epoch, why}); !r) {
      spdlog::error("job {}: cannot fall back from its in-place recovery: {}", name, r.error().message);
      continue;
    }
    spdlog::warn("job {}: {}", name, why);
  }
  return true;
}

}  // namespace allot::server
