#include "core/lifecycle/in_place.h"

#include <algorithm>
#include <bit>
#include <optional>

#include "core/placement/numa.h"
#include "core/model/state.h"

namespace allot {
namespace {

// The deepest topology level (an index into ClusterState::levels, not the hostname) a replacement of a replica of
// `ps` must share with the failed node: the level its topology request requires, slices or holds exclusively. -1:
// any node of the cluster.
int bound_level(const PodSet& ps) {
  int level = -1;
  if (ps.topology.mode == TopologyRequest::Mode::kRequired) level = std::max(level, ps.topology.level);
  level = std::max(level, ps.topology.slice_level);
  level = std::max(level, ps.topology.exclusive_level);
  return level;
}

// How many topology levels, from the coarsest, two nodes share (the hostname level excluded: it is the node's own).
// A level neither node is labelled with counts as shared, as the topology tree puts both under one unnamed domain.
int shared_levels(const Node& a, const Node& b) {
  const size_t labelled = a.topology.empty() ? 0 : a.topology.size() - 1;
  int n = 0;
  for (size_t i = 0; i < labelled && i < b.topology.size(); ++i) {
    if (a.topology[i] != b.topology[i]) break;
    ++n;
  }
  return n;
}

// Whether a replica of `per_replica` (with `accelerators` of them bound) fits on the node's room now.
bool fits(const ClusterState& s, const NodeRoom& r, const Node& n, const Resources& per_replica, bool whole_node,
          JobId job) {
  if (r.exclusive_owner.valid() && r.exclusive_owner != job) return false;
  if (whole_node) return r.replicas == 0 && r.free == s.catalog.at(n.type).capacity();
  return per_replica.fits_in(r.free) && std::popcount(r.accelerators_free) >= per_replica.accelerators;
}

// Whether `to` may take a replacement of a replica of pod set `ps` of `job` that ran on `failed`, apart from room.
bool may_host(const ClusterState& s, const Job& job, const PodSet& ps, TypeId type, const Node& failed, const Node& to) {
  if (to.id == failed.id || to.removed || to.health != NodeHealth::kSchedulable || to.type != type) return false;
  if (job.plan.valid() && to.plan != job.plan) return false;
  const int level = bound_level(ps);
  return level < 0 || shared_levels(failed, to) > level;
}

void take(NodeRoom& r, const Resources& per_replica, const ReplicaBinding& b) {
  r.free -= per_replica;
  for (int a : b.accelerators) r.accelerators_free &= ~(uint64_t{1} << a);
  ++r.replicas;
}

void give_back(NodeRoom& r, const Resources& per_replica, const ReplicaBinding& b) {
  r.free += per_replica;
  for (int a : b.accelerators) r.accelerators_free |= uint64_t{1} << a;
  --r.replicas;
}

// Plans one job's recovery on `room` (which it changes as it places), or nothing when a lost replica does not fit.
std::optional<InPlaceRecovery> plan_one(const ClusterState& s, RoomTable& room, const Job& j, const Node& failed) {
  InPlaceRecovery r{.job = j.id, .failed = failed.id, .moves = {}};
  for (size_t p = 0; p < j.placement.pod_sets.size() && p < j.pod_sets.size(); ++p) {
    const PodSetPlacement& psp = j.placement.pod_sets[p];
    const PodSet& ps = j.pod_sets[p];
    const InstanceType& it = s.catalog.at(psp.type);
    for (size_t i = 0; i < psp.replicas.size(); ++i) {
      if (psp.replicas[i].node != failed.id) continue;
      const Node* best = nullptr;
      int best_shared = -1;
      for (const Node& n : s.nodes) {
        const NodeRoom& nr = room[n.id.index()];
        if (!nr.usable || !may_host(s, j, ps, psp.type, failed, n)) continue;
        if (!fits(s, nr, n, psp.per_replica, ps.per_replica.whole_node, j.id)) continue;
        const int shared = shared_levels(failed, n);
        if (shared > best_shared || (shared == best_shared && n.name < best->name)) best = &n, best_shared = shared;
      }
      if (!best) return std::nullopt;
      ReplicaBinding b;
      b.node = best->id;
      bind_replica(it, room[best->id.index()].accelerators_free, static_cast<int>(psp.per_replica.accelerators),
                   ps.per_replica.whole_node, b);
      take(room[best->id.index()], psp.per_replica, b);
      r.moves.push_back({.pod_set = p, .index = i, .to = std::move(b)});
    }
  }
  if (r.moves.empty()) return std::nullopt;
  return r;
}

}  // namespace

std::vector<InPlaceRecovery> plan_in_place_recoveries(const ClusterState& s, NodeId failed) {
  std::vector<InPlaceRecovery> out;
  if (failed.index() >= s.nodes.size()) return out;
  const Node& node = s.nodes[failed.index()];
  RoomTable room = s.room;  // a scratch copy: the state is never changed by planning
  for (JobId id : s.running_jobs.sorted()) {
    const Job& j = s.jobs[id.index()];
    if (j.spec.recovery != Recovery::kInPlace) continue;
    RoomTable trial = room;  // a job that does not fit whole leaves the room as it was for the next one
    if (auto r = plan_one(s, trial, j, node)) {
      room = std::move(trial);
      out.push_back(std::move(*r));
    }
  }
  return out;
}

Status recover_in_place(ClusterState& s, const InPlaceRecovery& r, Time now) {
  if (r.job.index() >= s.jobs.size()) return Error::not_found("no job with id " + std::to_string(r.job.value));
  if (r.failed.index() >= s.nodes.size()) return Error::not_found("no node with id " + std::to_string(r.failed.value));
  Job& j = s.jobs[r.job.index()];
  const Node& failed = s.nodes[r.failed.index()];
  const std::string what = "in-place recovery of job " + j.spec.name + " from node " + failed.name + ": ";
  if (j.state != JobState::kRunning) return Error::precondition(what + "the job is not running (" + job_state_name(j.state) + ")");
  if (j.spec.recovery != Recovery::kInPlace)
    return Error::precondition(what + "the job's recovery is " + recovery_name(j.spec.recovery) + ", not in_place");
  if (r.moves.empty()) return Error::invalid(what + "it moves no replica");
  // Checked on a copy of the room before anything changes: a refused recovery leaves the state as it was.
  RoomTable room = s.room;
  std::vector<std::vector<bool>> moved(j.placement.pod_sets.size());
  for (size_t p = 0; p < moved.size(); ++p) moved[p].assign(j.placement.pod_sets[p].replicas.size(), false);
  for (const ReplicaMove& m : r.moves) {
    if (m.pod_set >= j.placement.pod_sets.size() || m.index >= j.placement.pod_sets[m.pod_set].replicas.size())
      return Error::invalid(what + "it names replica " + std::to_string(m.index) + " of pod set " +
                            std::to_string(m.pod_set) + ", which the job does not have");
    const PodSetPlacement& psp = j.placement.pod_sets[m.pod_set];
    if (psp.replicas[m.index].node != r.failed || moved[m.pod_set][m.index])
      return Error::invalid(what + "replica " + std::to_string(m.index) + " of pod set " + j.pod_sets[m.pod_set].name +
                            " is not on the failed node (or is moved twice)");
    if (m.to.node.index() >= s.nodes.size()) return Error::not_found(what + "no node with id " + std::to_string(m.to.node.value));
    const Node& to = s.nodes[m.to.node.index()];
    if (!may_host(s, j, j.pod_sets[m.pod_set], psp.type, failed, to))
      return Error::precondition(what + "node " + to.name + " may not take the replica (removed, unhealthy, another "
                                 "type or plan, the failed node, or outside the job's topology domain)");
    NodeRoom& nr = room[to.id.index()];
    if (!fits(s, nr, to, psp.per_replica, j.pod_sets[m.pod_set].per_replica.whole_node, j.id))
      return Error::precondition(what + "node " + to.name + " has no room for the replica");
    for (int a : m.to.accelerators)
      if (a < 0 || a >= 64 || !(nr.accelerators_free & (uint64_t{1} << a)))
        return Error::precondition(what + "accelerator " + std::to_string(a) + " of node " + to.name + " is not free");
    if (m.to.accelerators.size() != static_cast<size_t>(psp.per_replica.accelerators))
      return Error::invalid(what + "the replica needs " + std::to_string(psp.per_replica.accelerators) +
                            " accelerators, the move binds " + std::to_string(m.to.accelerators.size()));
    take(nr, psp.per_replica, m.to);
    moved[m.pod_set][m.index] = true;
  }
  for (size_t p = 0; p < moved.size(); ++p)
    for (size_t i = 0; i < moved[p].size(); ++i)
      if (!moved[p][i] && j.placement.pod_sets[p].replicas[i].node == r.failed)
        return Error::invalid(what + "replica " + std::to_string(i) + " of pod set " + j.pod_sets[p].name +
                              " stays on the failed node");
  // Apply: each moved replica leaves its old room, and the copy above already holds its new one. Usage per team
  // and type does not change (the same amounts of the same type).
  for (const ReplicaMove& m : r.moves) {
    PodSetPlacement& psp = j.placement.pod_sets[m.pod_set];
    give_back(room[r.failed.index()], psp.per_replica, psp.replicas[m.index]);
    s.room_changed_at[r.failed.index()] = now;
    s.room_changed_at[m.to.node.index()] = now;
    psp.replicas[m.index] = m.to;
  }
  s.room = std::move(room);
  ++j.membership_epoch;
  j.recoveries.push_back({.at = now, .node = failed.name, .epoch = j.membership_epoch,
                          .replicas = static_cast<int>(r.moves.size())});
  std::string text = "running; recovered in place from the failure of node " + failed.name + " (membership epoch " +
                     std::to_string(j.membership_epoch) + ", " + std::to_string(r.moves.size()) + " replica" +
                     (r.moves.size() == 1 ? "" : "s") + " placed again)";
  j.reason = std::move(text);
  return ok_status();
}

Status fail_node_in_place(ClusterState& s, std::string_view name, Time now, NodeHealth to) {
  const Node* n = s.find_node(name);
  if (!n) return Error::not_found("no node named " + std::string(name) + " in the cluster");
  if (to == NodeHealth::kSchedulable) return Error::invalid("a failed node cannot be Schedulable");
  for (const InPlaceRecovery& r : plan_in_place_recoveries(s, n->id))
    if (auto st = recover_in_place(s, r, now); !st) return st;
  return fail_node(s, name, now, to);
}

}  // namespace allot
