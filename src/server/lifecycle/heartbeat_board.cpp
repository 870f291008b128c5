#include "server/lifecycle/heartbeat_board.h"

#include <cstdio>

#include "server/lifecycle/agents.h"
#include "server/lifecycle/node_lifecycle.h"
#include "server/lifecycle/per_run.h"
#include "server/lifecycle/start_gate.h"

namespace allot::server {

using nlohmann::json;

NodeAnswer node_answer(const ServerState& st, const ServerOptions& options, const std::string& name) {
  NodeAnswer a;
  const Node* node = st.cluster.find_node(name);
  auto info = st.nodes.find(name);
  if (!node || info == st.nodes.end()) return a;  // a heartbeat of such a node is the writer's (404, or a new entry)
  // A node with stops to confirm (start_gate.h) has its heartbeats read by the writer.
  a.fast = !(info->second.timed_out && node->health == NodeHealth::kUnschedulablePendingReboot) && !awaits_stops_on(st, name);
  a.track_starts = st.cluster.policy.start_timeout_s > 0;
  if (const std::set<uint32_t>* here = st.running_by_node.on(node->id)) {
    for (uint32_t index : *here) {
      const Job& j = st.cluster.jobs[index];
      if (j.state != JobState::kRunning) continue;  // cannot happen while the index is right; cheap to check
      if (!handed_out(st, j)) continue;  // its replicas wait for stops elsewhere (start_gate.h)
      const int attempt = attempt_of(j);
      const bool hold = start_held(st, j);  // listed, so that what runs keeps running; nothing of it starts yet
      std::map<NodeId, int> local;  // replicas of this job seen so far per node: LOCAL_RANK
      int rank = 0;
      for (const auto& ps : j.placement.pod_sets) {
        for (const auto& r : ps.replicas) {
          const int this_rank = rank++;
          const int local_rank = local[r.node]++;
          if (r.node != node->id) continue;
          if (held_after_move(st, j, this_rank)) continue;  // its old process may still run elsewhere (start_gate.h)
          a.run.push_back(replica_assignment(st, options, j, this_rank, local_rank, ps, r));
          a.placed[{j.spec.name, this_rank}] = attempt;
          if (hold) {
            a.run.back()["hold"] = true;
            a.held.insert({j.spec.name, this_rank});
          }
        }
      }
      // The CPUs recorded for this run's replicas here (note_replica_cpus keeps those of the current attempt).
      if (const ReplicaCpus* c = find_run(st.replica_cpus, index, attempt))
        for (const auto& [rank_of, cpus] : c->by_rank)
          if (a.placed.count({j.spec.name, rank_of})) a.cpus[{j.spec.name, rank_of}] = cpus;
      // The replicas here recorded as started (note_starts keeps those of the current attempt).
      if (a.track_starts)
        if (const ReplicaStarts* s = find_run(st.starts, index, attempt))
          for (int rank_of : s->ranks)
            if (a.placed.count({j.spec.name, rank_of})) a.started.insert({j.spec.name, rank_of});
      if (j.spec.recovery == Recovery::kInPlace) a.epochs[j.spec.name] = j.membership_epoch;
      // The moved ranks here an in-place recovery awaits.
      if (auto w = st.in_place_waits.find(index); w != st.in_place_waits.end() && w->second.epoch == j.membership_epoch)
        for (int rank_of : w->second.ranks)
          if (a.placed.count({j.spec.name, rank_of})) a.awaited.insert({j.spec.name, rank_of});
      // The replicas here recorded as pulling their image (note_pulls keeps those of the current attempt).
      if (const ImagePulls* p = find_run(st.pulls, index, attempt))
        for (const auto& [on, rank_of] : p->pulling)
          if (on == name) a.pulling.insert({j.spec.name, rank_of});
    }
  }
  const NodeOrders orders = orders_for(st, name);
  a.reboot = orders.reboot;
  a.deep_check = orders.deep_check;
  const NodeInfo& i = info->second;
  a.health = HealthReport{*i.checks, i.checks_configured, i.boot, i.deep_status, i.deep_detail, i.exit_checks_running, i.limits};
  a.same_health_changes_nothing = same_health_changes_nothing(st, name);
  a.tag = run_tag(a);
  a.as_of = st.last_seq;
  return a;
}

std::string run_tag(const NodeAnswer& a) {
  // FNV-1a over the run list as sent and the orders: the same work gives the same tag on every server.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::string_view bytes) {
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  };
  mix(a.run.dump());
  mix(a.reboot ? "R" : "r");
  mix(a.deep_check ? "D" : "d");
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

json render_heartbeat(const NodeAnswer& a, const ServerOptions& options, const std::vector<ReplicaReport>& reports) {
  json stop = json::array();
  for (const ReplicaReport& rep : reports) {
    if (rep.exited()) continue;
    auto it = a.placed.find({rep.job, rep.rank});
    const bool current = it != a.placed.end() && (!rep.attempt || *rep.attempt == it->second);
    if (!current) stop.push_back({{"job", rep.job}, {"rank", rep.rank}});
  }
  // The agent fences itself (stops its replicas) when it cannot heartbeat for about this long.
  json out = {{"run", a.run}, {"stop", stop}, {"heartbeat_timeout_ms", options.heartbeat_timeout.count()},
              {"run_tag", a.tag}, {"as_of", a.as_of}};
  if (a.reboot) out["reboot"] = true;
  if (a.deep_check) out["deep_check"] = true;
  return out;
}

json render_changes(const NodeAnswer* a) {
  if (!a) return {{"run_tag", ""}};
  json out = {{"run_tag", a->tag}, {"as_of", a->as_of}, {"run", a->run}};
  if (a->reboot) out["reboot"] = true;
  if (a->deep_check) out["deep_check"] = true;
  return out;
}

bool adds_work(const NodeAnswer& before, const NodeAnswer& now) {
  if ((now.reboot && !before.reboot) || (now.deep_check && !before.deep_check)) return true;
  for (const auto& [slot, attempt] : now.placed) {
    auto it = before.placed.find(slot);
    if (it == before.placed.end() || it->second != attempt) return true;
  }
  for (const auto& [job, epoch] : now.epochs) {
    auto it = before.epochs.find(job);
    if (it != before.epochs.end() && it->second != epoch) return true;
  }
  // A held replica released (start_gate.h): it may start now.
  for (const auto& slot : before.held)
    if (now.placed.count(slot) && !now.held.count(slot)) return true;
  return false;
}

bool changes_nothing(const NodeAnswer& a, const std::vector<ReplicaReport>& reports, const std::optional<HealthReport>& health) {
  if (!a.fast) return false;
  for (const ReplicaReport& rep : reports) {
    if (rep.exited()) return false;  // apply_exits: a run may end, or a rank count as done
    // note_pulls: a current replica placed here that starts or stops pulling changes what describe shows.
    if (auto it = a.placed.find({rep.job, rep.rank}); it != a.placed.end() && (!rep.attempt || *rep.attempt == it->second)) {
      if ((rep.state == ReplicaState::kPulling) != (a.pulling.count({rep.job, rep.rank}) > 0)) return false;
      // note_starts: a current replica placed here that is running and not yet recorded as started.
      if (a.track_starts && rep.state == ReplicaState::kRunning && !a.started.count({rep.job, rep.rank})) return false;
      // note_recovered: a moved rank an in-place recovery awaits, now running.
      if (rep.state == ReplicaState::kRunning && a.awaited.count({rep.job, rep.rank})) return false;
    }
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
  MutexLock lock(mu_);
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
      MutexLock lock(slot->mu);
      a = slot->answer;
    }
    if (!a || !changes_nothing(*a, reports, health)) return std::nullopt;
    if (before_recheck_) before_recheck_(node);
    {
      MutexLock lock(slot->mu);
      if (slot->answer != a) continue;
      const int64_t now = clock_();
      if (now > slot->last_heard_ms.load()) slot->last_heard_ms.store(now);
    }
    // After the time is stored, so that take_heard() (which unlists before it reads the time) either reads it or
    // finds the slot listed again.
    if (!slot->listed.exchange(true)) {
      MutexLock lock(heard_mu_);
      heard_.push_back(slot);
    }
    ++answered_;
    return render_heartbeat(*a, options, reports);
  }
  return std::nullopt;  // the writer keeps publishing: let it answer
}

void HeartbeatBoard::drop(Slot& slot) {
  MutexLock slot_lock(slot.mu);
  slot.dropped = true;
  slot.changed.notify_all();
}

void HeartbeatBoard::publish(const std::string& node, std::shared_ptr<const NodeAnswer> answer) {
  std::vector<std::function<void()>> wakes;
  {
    MutexLock lock(mu_);
    if (!answer) {
      if (auto it = slots_.find(node); it != slots_.end()) {
        drop(*it->second);
        slots_.erase(it);
        take_wakes(node, nullptr, wakes);
      }
    } else {
      auto& slot = slots_[node];
      const bool created = !slot;
      if (created) {
        slot = std::make_shared<Slot>(node);
        slot_added_.notify_all();
        take_wakes(node, &answer->tag, wakes);  // as wait_for_change(): a new slot with the known tag is waited on
      }
      MutexLock slot_lock(slot->mu);
      // Most publishes repeat the run list (a heartbeat's time, CPUs) or shorten it (exits): only new work wakes.
      const bool woke = !slot->answer || adds_work(*slot->answer, *answer);
      slot->answer = std::move(answer);
      if (woke) {
        ++slot->work_added;
        slot->changed.notify_all();
        if (!created) take_wakes(node, nullptr, wakes);
      }
    }
  }
  for (auto& wake : wakes) wake();
}

void HeartbeatBoard::take_wakes(const std::string& node, const std::string* tag, std::vector<std::function<void()>>& out) {
  auto it = subscribers_.find(node);
  if (it == subscribers_.end()) return;
  for (auto sub = it->second.begin(); sub != it->second.end();) {
    if (tag && sub->second.known == *tag) {
      ++sub;
      continue;
    }
    out.push_back(std::move(sub->second.wake));
    sub = it->second.erase(sub);
  }
  if (it->second.empty()) subscribers_.erase(it);
}

HeartbeatBoard::Check HeartbeatBoard::check_or_subscribe(const std::string& node, const std::string& known,
                                                         std::function<void()> wake) {
  MutexLock lock(mu_);
  if (stopping_) return Check{true, nullptr, 0};
  if (auto it = slots_.find(node); it != slots_.end()) {
    MutexLock slot_lock(it->second->mu);
    if (it->second->dropped) return Check{true, nullptr, 0};
    if (it->second->answer && it->second->answer->tag != known) return Check{true, it->second->answer, 0};  // behind
  }
  const uint64_t ticket = next_ticket_++;
  subscribers_[node].emplace(ticket, Subscriber{known, std::move(wake)});
  return Check{false, nullptr, ticket};
}

void HeartbeatBoard::unsubscribe(const std::string& node, uint64_t ticket) {
  std::function<void()> dropped;  // let go of outside the lock
  MutexLock lock(mu_);
  auto it = subscribers_.find(node);
  if (it == subscribers_.end()) return;
  if (auto sub = it->second.find(ticket); sub != it->second.end()) {
    dropped = std::move(sub->second.wake);
    it->second.erase(sub);
  }
  if (it->second.empty()) subscribers_.erase(it);
}

std::shared_ptr<const NodeAnswer> HeartbeatBoard::current(const std::string& node) const {
  if (stopping_) return nullptr;
  auto slot = find(node);
  if (!slot) return nullptr;
  MutexLock lock(slot->mu);
  return slot->dropped ? nullptr : slot->answer;
}

size_t HeartbeatBoard::subscribed() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [node, subs] : subscribers_) n += subs.size();
  return n;
}

void HeartbeatBoard::clear() {
  std::vector<std::function<void()>> wakes;
  {
    MutexLock lock(mu_);
    for (auto& [node, slot] : slots_) {
      drop(*slot);
      take_wakes(node, nullptr, wakes);
    }
    slots_.clear();
  }
  for (auto& wake : wakes) wake();
}

std::shared_ptr<const NodeAnswer> HeartbeatBoard::wait_for_change(const std::string& node, const std::string& known,
                                                                   std::chrono::steady_clock::time_point deadline) {
  std::shared_ptr<Slot> slot;
  {
    MutexLock lock(mu_);
    for (;;) {
      if (stopping_) return nullptr;
      if (auto it = slots_.find(node); it != slots_.end()) slot = it->second;
      if (slot) break;
      if (slot_added_.wait_until(lock.native(), deadline) == std::cv_status::timeout) {
        if (auto it = slots_.find(node); it != slots_.end()) slot = it->second;
        if (!slot || stopping_) return nullptr;
        break;
      }
    }
  }
  MutexLock lock(slot->mu);
  if (slot->dropped) return nullptr;
  if (slot->answer && slot->answer->tag != known) return slot->answer;  // the agent is behind
  // shutdown() drops every slot, so `dropped` covers stopping too (and mu_ is never taken under a slot's lock).
  const uint64_t seen = slot->work_added;
  while (!slot->dropped && slot->work_added == seen)
    if (slot->changed.wait_until(lock.native(), deadline) == std::cv_status::timeout) break;
  return slot->dropped ? nullptr : slot->answer;
}

bool HeartbeatBoard::try_add_watcher(size_t limit) {
  for (size_t n = watchers_.load(); n < limit;)
    if (watchers_.compare_exchange_weak(n, n + 1)) return true;
  return false;
}

void HeartbeatBoard::shutdown() {
  std::vector<std::function<void()>> wakes;
  {
    MutexLock lock(mu_);
    stopping_.store(true);
    slot_added_.notify_all();
    for (auto& [node, slot] : slots_) drop(*slot);
    for (auto& [node, subs] : subscribers_)
      for (auto& [ticket, sub] : subs) wakes.push_back(std::move(sub.wake));
    subscribers_.clear();
  }
  for (auto& wake : wakes) wake();
}

bool HeartbeatBoard::empty() const {
  MutexLock lock(mu_);
  return slots_.empty();
}

std::shared_ptr<const NodeAnswer> HeartbeatBoard::published(const std::string& node) const {
  auto slot = find(node);
  if (!slot) return nullptr;
  MutexLock lock(slot->mu);
  return slot->answer;
}

void HeartbeatBoard::for_each_time(const std::function<void(const std::string&, int64_t)>& fn) const {
  MutexLock lock(mu_);
  for (const auto& [node, slot] : slots_) fn(node, slot->last_heard_ms.load());
}

void HeartbeatBoard::take_heard(const std::function<void(const std::string&, int64_t)>& fn) {
  std::vector<std::shared_ptr<Slot>> heard;
  {
    MutexLock lock(heard_mu_);
    heard.swap(heard_);
  }
  for (const auto& slot : heard) {
    slot->listed.store(false);
    fn(slot->node, slot->last_heard_ms.load());
  }
}

bool HeartbeatBoard::close_if_silent(const std::string& node, int64_t now_ms, int64_t limit_ms) {
  auto slot = find(node);
  if (!slot) return true;
  MutexLock lock(slot->mu);
  if (now_ms - slot->last_heard_ms.load() <= limit_ms) return false;
  slot->answer = nullptr;
  return true;
}

}  // namespace allot::server
