#include "server/lifecycle/start_timeouts.h"

#include <spdlog/spdlog.h>

#include <set>

#include "core/lifecycle/start_timeout.h"
#include "server/lifecycle/per_run.h"
#include "server/lifecycle/replica_ranks.h"

namespace allot::server {
namespace {

// "rank 1 on node n2 (pulling its image), rank 3 on node n4", and the nodes named, each once.
std::string not_started(const ServerState& st, const Job& j, const ReplicaStarts& s, std::set<std::string>& nodes) {
  const ImagePulls* pulls = find_run(st.pulls, j.id.index(), s.attempt);
  std::string out;
  int named = 0, more = 0;
  for_each_replica(j, [&](int rank, const PodSetPlacement&, const ReplicaBinding& r) {
    if (s.ranks.count(rank)) return;
    const std::string& node = st.cluster.nodes[r.node.index()].name;
    nodes.insert(node);
    if (named == 8) return void(++more);  // a line for people: the record's nodes list every node
    ++named;
    out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(rank) + " on node " + node;
    if (pulls && pulls->pulling.count({node, rank})) out += " (pulling its image)";
  });
  if (more) out += " and " + std::to_string(more) + " more";
  return out;
}

}  // namespace

bool time_out_starts(Txn& txn) {
  ServerState& st = txn.state();
  const PolicySpec& policy = st.cluster.policy;
  if (policy.start_timeout_s <= 0) {
    if (!st.starts.empty()) st.starts.clear();  // the policy turned it off
    return false;
  }
  const int64_t now_ms = txn.now_ms();
  std::vector<uint32_t> due;
  for (const auto& [index, handed] : st.gate.handed) {
    const Job& j = st.cluster.jobs[index];
    if (j.state != JobState::kRunning || attempt_of(j) != handed.attempt) continue;
    ReplicaStarts& s = run_entry(st.starts, index, handed.attempt);
    if (s.since_ms == 0) s.since_ms = now_ms;
    if (now_ms - s.since_ms < policy.start_timeout_s * 1000) continue;
    if (static_cast<int>(s.ranks.size()) >= world_size(j)) continue;
    due.push_back(index);
  }
  // Runs that ended (or wait for stops again) start afresh when next handed out.
  std::erase_if(st.starts, [&](const auto& e) { return !st.gate.handed.count(e.first); });
  if (due.empty()) return false;
  AsServer as(txn);
  bool any = false;
  for (uint32_t index : due) {
    const Job& j = st.cluster.jobs[index];
    std::set<std::string> nodes;
    const std::string which = not_started(st, j, st.starts[index], nodes);
    const std::string name = j.spec.name;
    const int64_t backoff = next_start_backoff_s(policy, j);
    const std::string why = "not every replica was running " + std::to_string(policy.start_timeout_s) +
                            " s after its agents were given the run (policy start_timeout): " + which + " did not start";
    if (auto r = txn.apply(store::StartTimeout{name, {nodes.begin(), nodes.end()}, backoff, why}); !r) {
      spdlog::error("job {}: cannot requeue it after its start timeout: {}", name, r.error().message);
      continue;
    }
    spdlog::info("job {}: start timeout ({}); requeued, backing off {} s", name, which, backoff);
    any = true;
  }
  return any;
}

}  // namespace allot::server
