#include "server/lifecycle/start_gate.h"

#include <algorithm>

#include "server/outside/admission_checks.h"
#include "server/lifecycle/agent_reports.h"
#include "server/writer/server_state.h"

namespace allot::server {
namespace {

std::vector<std::string> node_names(const ClusterState& s, const Job& j) {
  std::vector<std::string> out;
  for (NodeId id : j.placement.nodes()) out.push_back(s.nodes[id.index()].name);
  return out;
}

// Replicas on `node` can still be alive: an agent runs them and the server has not fenced it (a heartbeat timeout,
// or silence past it while the node was out of service already: NodeInfo::fenced).
// A node that left while its agent was live counts as running until that agent has fenced itself
// (ServerState::left_live_ms): a replacement retires the failed node at once, maybe within its old rank's stop grace.
bool may_run_there(const ServerState& st, const std::string& node) {
  const Node* n = st.cluster.find_node(node);
  auto info = st.nodes.find(node);
  if (!n || info == st.nodes.end()) return st.left_live_ms.count(node) > 0;
  return info->second.agent && !info->second.timed_out && !info->second.fenced;
}

// The ended runs `j`'s current run waits for: the earlier runs of `j`, and the runs of other jobs on its nodes.
template <typename F>
void for_each_blocker(const ServerState& st, const Job& j, F fn) {
  const auto nodes = node_names(st.cluster, j);
  for (const auto& entry : st.gate.ended) {
    // Named, not a structured binding: clang 14 (the fuzz build) refuses bindings captured by a lambda.
    const auto& key = entry.first;
    const auto& e = entry.second;
    if (e.nodes.empty()) continue;
    const bool same_job = key.first == j.id.index();
    const bool shares_node = std::any_of(nodes.begin(), nodes.end(), [&](const std::string& n) { return e.nodes.count(n) > 0; });
    if (same_job || shares_node) fn(key, e);
  }
}

// Each rank's node in `j`'s current placement, in rank order.
std::vector<std::string> rank_node_names(const ClusterState& s, const Job& j) {
  std::vector<std::string> out;
  for (const auto& ps : j.placement.pod_sets)
    for (const auto& r : ps.replicas) out.push_back(s.nodes[r.node.index()].name);
  return out;
}

// A heard node still runs `rank` of `job`'s run `attempt` (a recovery): if that is not where the job's current run
// has that rank, it is a stop under way that the restarted server did not know of. An earlier run blocks the job's
// current run (and other jobs' runs on the node) until it is confirmed stopped; a rank moved off the node blocks
// its new node. A job that is not Running has no run to hold, and the node's agent keeps its own starts after its
// stops.
void note_survivor(ServerState& st, const std::string& node, const std::string& job, int attempt, int rank) {
  const Job* j = st.cluster.find_job(job);
  if (!j || j->state != JobState::kRunning || attempt < 0) return;  // attempt -1: the agent sent none, nothing to go by
  const std::string team = st.cluster.teams[j->team.index()].spec.name;
  if (attempt != attempt_of(*j)) {
    StartGate::Ended& e = st.gate.ended[{j->id.index(), attempt}];
    e.job = job, e.team = team;
    e.nodes.insert(node);
    return;
  }
  const std::vector<std::string> placed = rank_node_names(st.cluster, *j);
  if (rank >= 0 && static_cast<size_t>(rank) < placed.size() && placed[rank] == node) return;  // the current run's own
  st.gate.moved[{j->id.index(), rank, node}] = StartGate::Moved{attempt, job, team};
  for (const auto& n : node_names(st.cluster, *j)) st.nodes_touched.push_back(n);
}

// Every rank of the run placed on `node` was reported exited there, and none was moved off it.
bool all_exited_on(const StartGate::Handed& h, const std::string& node) {
  if (h.moved_from.count(node)) return false;
  bool any = false;
  for (size_t rank = 0; rank < h.rank_nodes.size(); ++rank) {
    if (h.rank_nodes[rank] != node) continue;
    if (!h.exited_ranks.count(static_cast<int>(rank))) return false;
    any = true;
  }
  return any;
}

// Whatever blocks `j`'s current run from starting: ended runs (for_each_blocker) or a moved rank's old process.
bool blocked(const ServerState& st, const Job& j) {
  bool any = false;
  for_each_blocker(st, j, [&](const auto&, const auto&) { any = true; });
  if (any) return true;
  auto it = st.gate.moved.lower_bound({j.id.index(), 0, std::string()});
  return it != st.gate.moved.end() && std::get<0>(it->first) == j.id.index();
}

}  // namespace

bool start_held(const ServerState& st, const Job& j) {
  auto it = st.gate.handed.find(j.id.index());
  return it != st.gate.handed.end() && it->second.attempt == attempt_of(j) && it->second.hold;
}

void begin_start_recovery(ServerState& st, int64_t now_ms, int64_t heartbeat_timeout_ms) {
  StartGate& g = st.gate;
  g.handed.clear();
  g.ended.clear();
  g.moved.clear();
  g.heard.clear();
  g.heard_ranks.clear();
  g.recovery = StartGate::Recovery{now_ms + heartbeat_timeout_ms, {}};
  for (const auto& [name, info] : st.nodes)
    if (may_run_there(st, name)) g.recovery->unheard.insert(name);
  g.seen_event = st.last_event - 1;  // looked at again: every Running job is handed out anew, held
}

bool handed_out(const ServerState& st, const Job& j) {
  auto it = st.gate.handed.find(j.id.index());
  return it != st.gate.handed.end() && it->second.attempt == attempt_of(j);
}

bool awaits_stops_on(const ServerState& st, const std::string& node) {
  for (const auto& [key, e] : st.gate.ended)
    if (e.nodes.count(node)) return true;
  for (const auto& [key, m] : st.gate.moved)
    if (std::get<2>(key) == node) return true;
  return st.gate.recovery && st.gate.recovery->unheard.count(node) > 0;  // its first heartbeat says what runs there
}

bool held_after_move(const ServerState& st, const Job& j, int rank) {
  if (st.gate.moved.empty()) return false;
  auto it = st.gate.moved.lower_bound({j.id.index(), rank, std::string()});
  return it != st.gate.moved.end() && std::get<0>(it->first) == j.id.index() && std::get<1>(it->first) == rank &&
         it->second.attempt == attempt_of(j);
}

void hold_moved_rank(ServerState& st, const Job& j, int rank, const std::string& from, const std::string& to) {
  auto h = st.gate.handed.find(j.id.index());
  // A run not handed out yet started nothing anywhere: nothing of it to wait for.
  if (h == st.gate.handed.end() || h->second.attempt != attempt_of(j)) return;
  if (std::find(h->second.nodes.begin(), h->second.nodes.end(), to) == h->second.nodes.end()) h->second.nodes.push_back(to);
  h->second.moved_from.insert(from);
  if (rank >= 0 && static_cast<size_t>(rank) < h->second.rank_nodes.size()) {
    h->second.rank_nodes[rank] = to;
    h->second.exited_ranks.erase(rank);
  }
  if (!may_run_there(st, from)) return;  // fenced or gone: its replicas are stopped already
  st.gate.moved[{j.id.index(), rank, from}] = StartGate::Moved{attempt_of(j), j.spec.name, st.cluster.teams[j.team.index()].spec.name};
  st.nodes_touched.push_back(from);  // its heartbeats now go to the writer, which confirms the stop
}

void note_heartbeat(ServerState& st, const std::string& node, const std::vector<ReplicaReport>& reports) {
  auto& alive = st.gate.heard[node];
  alive.clear();
  auto& ranks = st.gate.heard_ranks[node];
  ranks.clear();
  for (const ReplicaReport& r : reports) {
    if (r.exited()) {
      // Kept with the run while it is handed out: when it ends, this node's stop of that rank is confirmed already.
      const Job* j = r.attempt ? st.cluster.find_job(r.job) : nullptr;
      auto h = j ? st.gate.handed.find(j->id.index()) : st.gate.handed.end();
      if (h != st.gate.handed.end() && h->second.attempt == *r.attempt && r.rank >= 0 &&
          static_cast<size_t>(r.rank) < h->second.rank_nodes.size() && h->second.rank_nodes[r.rank] == node)
        h->second.exited_ranks.insert(r.rank);
      continue;
    }
    alive.insert({r.job, r.attempt.value_or(-1)});
    ranks.insert({r.job, r.attempt.value_or(-1), r.rank});
  }
}

void advance_start_gate(ServerState& st, int64_t now_ms) {
  StartGate& g = st.gate;
  if (g.seen_event == st.last_event && g.heard.empty() && g.ended.empty() && g.moved.empty() && !g.recovery) return;
  // Runs are handed out only after a change: a job's (events) or a stop confirmed.
  bool changed = g.seen_event != st.last_event;
  // A recovery: each node's first heartbeat since the start says what still runs there; the recovery ends when
  // every node has been heard or fenced, or at its deadline.
  if (g.recovery) {
    // A node leaving `unheard` has its heartbeats answered off the writer again: its answer is published anew.
    for (const auto& [node, alive] : g.heard_ranks) {
      if (!g.recovery->unheard.erase(node)) continue;
      st.nodes_touched.push_back(node);
      for (const auto& [job, attempt, rank] : alive) note_survivor(st, node, job, attempt, rank);
    }
    std::erase_if(g.recovery->unheard, [&](const std::string& n) {
      if (may_run_there(st, n)) return false;
      st.nodes_touched.push_back(n);
      return true;
    });
    if (g.recovery->unheard.empty() || now_ms >= g.recovery->until_ms) {
      for (const auto& n : g.recovery->unheard) st.nodes_touched.push_back(n);
      g.recovery.reset();
      changed = true;
    }
  }
  // Runs that ended: no longer Running, or Running another attempt (a restart, a resize).
  if (changed) {
    for (auto it = g.handed.begin(); it != g.handed.end();) {
      const Job* j = it->first < st.cluster.jobs.size() ? &st.cluster.jobs[it->first] : nullptr;
      if (j && j->state == JobState::kRunning && attempt_of(*j) == it->second.attempt) {
        ++it;
        continue;
      }
      StartGate::Ended e;
      if (j) e.job = j->spec.name, e.team = st.cluster.teams[j->team.index()].spec.name;
      for (const auto& n : it->second.nodes)
        if (may_run_there(st, n) && !all_exited_on(it->second, n)) e.nodes.insert(n), st.nodes_touched.push_back(n);
      if (j && !e.nodes.empty()) g.ended[{it->first, it->second.attempt}] = std::move(e);
      it = g.handed.erase(it);
    }
  }
  g.seen_event = st.last_event;
  // Stops confirmed by a heartbeat (an agent that sends no attempt speaks for every attempt of the job), by fencing
  // (a timeout), by a node's departure or its agent's absence.
  for (auto it = g.ended.begin(); it != g.ended.end();) {
    const auto& key = it->first;
    const auto& e = it->second;
    std::erase_if(it->second.nodes, [&](const std::string& n) {
      auto h = g.heard.find(n);
      const bool confirmed = h != g.heard.end() && !h->second.count({e.job, key.second}) && !h->second.count({e.job, -1});
      if (!confirmed && may_run_there(st, n)) return false;
      st.nodes_touched.push_back(n);
      changed = true;
      return true;
    });
    it = it->second.nodes.empty() ? g.ended.erase(it) : std::next(it);
  }
  // Moved ranks whose old process is confirmed stopped, the same ways; or whose run ended (a restart then waits for
  // every node of the run, the nodes the rank left and its new one included: hold_moved_rank).
  for (auto it = g.moved.begin(); it != g.moved.end();) {
    const auto& [index, rank, from] = it->first;
    const StartGate::Moved& m = it->second;
    const Job* j = index < st.cluster.jobs.size() ? &st.cluster.jobs[index] : nullptr;
    const bool same_run = j && j->state == JobState::kRunning && attempt_of(*j) == m.attempt;
    auto h = g.heard_ranks.find(from);
    const bool confirmed = h != g.heard_ranks.end() && !h->second.count({m.job, m.attempt, rank}) && !h->second.count({m.job, -1, rank});
    if (same_run && !confirmed && may_run_there(st, from)) {
      ++it;
      continue;
    }
    st.nodes_touched.push_back(from);
    if (j)
      for (const auto& n : node_names(st.cluster, *j)) st.nodes_touched.push_back(n);  // the rank's new node's run list
    it = g.moved.erase(it);
    changed = true;  // a run held since a recovery may be released
  }
  g.heard.clear();
  g.heard_ranks.clear();
  if (!changed) return;
  for (uint32_t index : st.running) {
    const Job& j = st.cluster.jobs[index];
    if (handed_out(st, j)) {
      // Held since a recovery: released once it is over and nothing blocks the run.
      StartGate::Handed& h = g.handed[index];
      if (!h.hold || g.recovery || blocked(st, j)) continue;
      h.hold = false;
      for (const auto& n : h.nodes) st.nodes_touched.push_back(n);
      continue;
    }
    bool waits = false;
    for_each_blocker(st, j, [&](const auto&, const auto&) { waits = true; });
    if (waits) continue;
    // Admission checks that have not answered ready for this run hold it too (admission_checks.h).
    if (check_waited_for(st, j)) continue;
    g.handed[index] = StartGate::Handed{attempt_of(j), node_names(st.cluster, j), g.recovery.has_value(), rank_node_names(st.cluster, j), {}, {}};
    for (const auto& n : g.handed[index].nodes) st.nodes_touched.push_back(n);
  }
}

nlohmann::json start_waits(const ServerState& st, const Job& j, const view::SeesTeamJobs& sees) {
  nlohmann::json out = nlohmann::json::array();
  if (j.state != JobState::kRunning) return out;
  if (!handed_out(st, j) || start_held(st, j)) for_each_blocker(st, j, [&](const std::pair<uint32_t, int>& key, const StartGate::Ended& e) {
    nlohmann::json w = {{"team", e.team}, {"attempt", key.second}, {"nodes", std::vector<std::string>(e.nodes.begin(), e.nodes.end())}};
    w["job"] = !sees || sees(e.team) ? nlohmann::json(e.job) : nlohmann::json(nullptr);
    out.push_back(std::move(w));
  });
  for (auto it = st.gate.moved.lower_bound({j.id.index(), 0, std::string()});
       it != st.gate.moved.end() && std::get<0>(it->first) == j.id.index(); ++it) {
    if (it->second.attempt != attempt_of(j)) continue;
    nlohmann::json w = {{"team", it->second.team},
                        {"attempt", it->second.attempt},
                        {"nodes", nlohmann::json::array({std::get<2>(it->first)})},
                        {"rank", std::get<1>(it->first)}};
    w["job"] = !sees || sees(it->second.team) ? nlohmann::json(it->second.job) : nlohmann::json(nullptr);
    out.push_back(std::move(w));
  }
  return out;
}

nlohmann::json recovery_waits(const ServerState& st, const Job& j) {
  if (!st.gate.recovery || !start_held(st, j)) return nullptr;
  const auto& unheard = st.gate.recovery->unheard;
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : unheard) {
    if (nodes.size() == kRecoveryNodesShown) break;
    nodes.push_back(n);
  }
  return {{"nodes", std::move(nodes)}, {"count", unheard.size()}, {"until_ms", st.gate.recovery->until_ms}};
}

}  // namespace allot::server
