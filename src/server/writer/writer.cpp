#include "server/writer/writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>
#include <thread>
#include <unordered_set>
#include <utility>

#include "core/pass/scheduler.h"
#include "server/lifecycle/node_lifecycle.h"
#include "server/writer/retention.h"
#include "server/writer/state_snapshot.h"
#include "server/lifecycle/plan_steps.h"
#include "server/lifecycle/reservation_steps.h"
#include "server/lifecycle/start_timeouts.h"
#include "server/lifecycle/in_place_recovery.h"
#include "server/lifecycle/time_limits.h"
#include "server/thread_priority.h"
#include "store/replay.h"

namespace allot::server {

namespace {
constexpr size_t kReplayEventChunk = 4096;  // events handed to the ring at a time while replaying
constexpr auto kCheapPass = std::chrono::milliseconds(2);  // passes shorter than this run after every batch
constexpr auto kSpaceCheck = std::chrono::milliseconds(250);  // how often a full journal is asked again
constexpr int kNoSpaceRetryAfterS = 5;
// A pass's reservation as the server shows it (names, not ids).
std::optional<ReservationSeen> reservation_seen(const ClusterState& s, const std::optional<BackfillReservation>& r) {
  if (!r) return std::nullopt;
  ReservationSeen seen{r->holder, r->at, {}};
  seen.nodes.reserve(r->nodes.size());
  for (NodeId n : r->nodes) seen.nodes.push_back(s.nodes[n.index()].name);
  return seen;
}
const char* const kRebuildPending =
    "this server lost its database and has not yet rebuilt its state from the journal; retry shortly, or ask another server";
}  // namespace

ServerState& Txn::state() {
  if (!st_) throw std::logic_error("a read-only request tried to change the server's state");
  return *st_;
}

Status Txn::apply(store::Op op) {
  if (!st_)
    return Error::internal(std::string("a read-only request tried to apply a ") + store::op_name(op) + " operation");
  ServerState& st_ = *this->st_;
  store::Record r{st_.last_seq + 1, now(), std::move(op), actor_};
  auto status = server::apply(st_, r, *events_);
  if (!status) return status;
  // The scheduling latency runs from a live submission to its first admission; a job cancelled before it
  // is admitted has none.
  if (auto* sub = std::get_if<store::Submit>(&r.op)) {
    if (const Job* j = st_.cluster.find_job(sub->job.name)) st_.waiting_since.insert_or_assign(j->id.index(), std::chrono::steady_clock::now());
  } else if (auto* cancel = std::get_if<store::Cancel>(&r.op)) {
    if (const Job* j = st_.cluster.find_job(cancel->job)) st_.waiting_since.erase(j->id.index());
  }
  records_->push_back(std::move(r));
  return ok_status();
}

Status Txn::after_commit(Effect effect) {
  if (!effects_) return Error::internal("a read-only request tried to schedule an effect after the commit");
  effects_->push_back(std::move(effect));
  return ok_status();
}

void Txn::note(std::string kind, std::string node, std::string message, std::string job) {
  if (!st_) return;
  std::string team;
  if (const Job* j = job.empty() ? nullptr : st_->cluster.find_job(job)) team = st_->cluster.teams[j->team.index()].spec.name;
  events_->push_back({++st_->last_event, now(), std::move(kind), std::move(job), std::move(node), std::move(message), std::move(team)});
}

Writer::Writer(const ServerOptions& options, std::unique_ptr<store::Store> store, EventLog& events, AuthGate& auth)
    : options_(options), store_(std::move(store)), events_(events), auth_(auth),
      provisioner_(options.provisioner, options.data_dir + "/provision"), board_(options.clock) {}

void Writer::publish_tables() {
  if (published_tokens_ != state_.tokens_version) {
    auth_.publish(state_.tokens.shared());
    published_tokens_ = state_.tokens_version;
  }
  if (published_webhooks_ != state_.webhooks_version && on_webhooks_) {
    on_webhooks_(std::make_shared<const WebhookTable>(state_.webhooks));
    published_webhooks_ = state_.webhooks_version;
  }
  const std::tuple<uint64_t, uint64_t, bool> asks_from{state_.last_event, state_.admission_checks_version, leadership_.leading()};
  if (on_check_asks_ && published_asks_ != asks_from) {
    on_check_asks_(leadership_.leading() && !needs_rebuild_ ? check_asks(state_) : std::vector<CheckAsk>{});
    published_asks_ = asks_from;
  }
}

Writer::~Writer() { stop(); }

Result<ServerState> Writer::replay(bool publish) {
  ServerState st;
  st.cluster = ClusterState(options_.catalog);
  std::vector<Event> events;
  uint64_t count = 0;
  const auto start = std::chrono::steady_clock::now();
  // The latest snapshot, then the records after it (state_snapshot.h).
  uint64_t from = 0;
  if (options_.use_snapshots) {
    // A snapshot that cannot be read or restored (torn, changed, of a format this version does not read) only
    // saves time: the journal has every record, so the whole of it is replayed instead. The next snapshot
    // written replaces the bad one.
    auto snap = store_->latest_snapshot();
    Result<RestoredState> restored = Error::internal("no snapshot");
    if (snap && *snap) restored = restore_state_snapshot((*snap)->seq, (*snap)->body, options_.catalog);
    if (!snap || (*snap && !restored)) {
      spdlog::warn("{}; replaying the whole journal instead (docs/deployment.md, \"Snapshots\")",
                   snap ? restored.error().message : "cannot read the latest snapshot: " + snap.error().message);
      MutexLock lock(mu_);
      ++stats_.snapshots_refused;
    } else if (*snap) {
      st = std::move(restored->state);
      if (publish) events_.publish(std::move(restored->events));
      from = (*snap)->seq;
      snapshots_.note_read(from);
    }
  }
  // A run of node additions (a POST /v1/nodes of thousands, agents joining together) is replayed as one batch:
  // the topology tree is built once for the run, not once per node (core/model/state.h, begin_node_batch).
  bool adding = false;
  auto status = store_->load_after(from, [&](const store::Record& r) -> Status {
    if (from > 0 && r.seq != st.last_seq + 1)
      return Error::internal("journal record " + std::to_string(r.seq) + " follows record " + std::to_string(st.last_seq) +
                             ": records are missing");
    if (const bool add = std::holds_alternative<store::AddNode>(r.op); add != adding) {
      if (add) begin_node_batch(st.cluster);
      else end_node_batch(st.cluster);
      adding = add;
    }
    auto applied = apply(st, r, events);
    if (!applied)
      return Error::internal("journal record " + std::to_string(r.seq) + " (" + store::op_name(r.op) +
                             ") cannot be replayed: " + applied.error().message);
    ++count;
    if (publish && events.size() >= kReplayEventChunk) {
      events_.publish(std::move(events));
      events.clear();
    }
    if (!publish) events.clear();
    return ok_status();
  });
  if (!status) return status.error();
  if (adding) end_node_batch(st.cluster);
  if (publish) events_.publish(std::move(events));
  spdlog::info("replayed {} journal records from {}{} in {:.3f} s", count, store_->describe(),
               from ? " after the snapshot at record " + std::to_string(from) : std::string(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return st;
}

void Writer::take_state(ServerState fresh) {
  state_ = std::move(fresh);
  fit_cache_ = FitCache();  // its answers were the old state's (fit_cache.h)
}

Status Writer::recover() {
  auto st = replay(/*publish=*/true);
  if (!st) return st.error();
  take_state(std::move(*st));
  leadership_.begin(/*alone=*/!store_->shared());
  publish_tables();
  // Heartbeats are not journaled: every agent gets a full timeout from now to show up again.
  const int64_t now = options_.clock();
  for (auto& [name, info] : state_.nodes) info.last_heartbeat_ms = now;
  // Nor are the stops under way: runs are handed out held until the agents have said what still runs.
  begin_start_recovery(state_, now, options_.heartbeat_timeout.count());
  dirty_ = true;
  state_changed_ = true;
  board_all_stale_ = true;
  return ok_status();
}

void Writer::start() {
  MutexLock lock(mu_);
  if (running_) return;
  running_ = true;
  stopping_ = false;
  views_.close(needs_rebuild_ ? kRebuildPending : "");
  thread_ = std::thread([this] { loop(); });
}

void Writer::stop() {
  {
    MutexLock lock(mu_);
    if (!running_) return;
    stopping_ = true;
  }
  views_.close("the server is stopping");
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  snapshots_.finish();  // a snapshot being written is finished, not cut off
  MutexLock lock(mu_);
  for (auto& p : queue_) p.answer.set_value(error_reply(503, "Unavailable", "the server is stopping"));
  queue_.clear();
  running_ = false;
}

Reply Writer::call(Command cmd, CallContext ctx) {
  // A client's change while the journal has no room: refused here, at once, without queuing (see writer.h).
  // Agents' requests (never audited) still go through: most heartbeats write nothing.
  if (ctx.audit && no_space_) {
    std::string why;
    {
      MutexLock lock(mu_);
      why = no_space_why_;
      ++stats_.refused_no_space;
    }
    Reply r = error_reply(507, "InsufficientStorage",
                          "the journal has no room (" + why + "): changes are refused until space returns; reads are "
                          "answered; nothing was changed");
    r.retry_after_s = kNoSpaceRetryAfterS;
    return r;
  }
  return enqueue(std::move(cmd), std::move(ctx));
}

void Writer::note_space_after_failure() {
  auto space = store_->check_space();
  if (space) return;  // a failure of another kind: the next change is tried as before
  spdlog::error("{}; changes are refused until space returns", space.error().message);
  {
    MutexLock lock(mu_);
    no_space_why_ = space.error().message;
  }
  no_space_ = true;
  next_space_check_ = std::chrono::steady_clock::now() + kSpaceCheck;
}

void Writer::check_space_returned() {
  if (!no_space_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_space_check_) return;
  next_space_check_ = now + kSpaceCheck;
  if (!store_->check_space()) return;
  spdlog::info("the journal has room again; changes resume");
  no_space_ = false;
  dirty_ = true;  // passes held back meanwhile run now
}

Reply Writer::read(Command cmd, CallContext ctx) {
  ViewPublisher::Fresh got = views_.fresh(
      [this] {
        {
          MutexLock lock(mu_);
          if (!running_ || stopping_) return false;
          view_requested_ = true;
        }
        cv_.notify_one();  // an idle writer wakes to copy
        return true;
      },
      options_.request_timeout);
  if (!got.view) return error_reply(503, "Unavailable", got.unavailable);
  const std::shared_ptr<const ServerState>& view = got.view;
  {
    MutexLock lock(mu_);
    if (!running_ || stopping_) return error_reply(503, "Unavailable", "the server is stopping");
  }
  // As the writer does for a command: the caller's errors and exceptions become error answers.
  try {
    Txn txn(*view, options_.clock());
    txn.act_as(ctx.actor);
    auto render = cmd(txn);
    if (!render) return error_reply(render.error());
    Reply reply = (*render)(*view);
    if (reply.pieces) reply.keep = view;  // the view outlives this call while the pieces are sent
    return reply;
  } catch (const std::exception& e) {
    return error_reply(Error::internal(std::string("unexpected failure: ") + e.what()));
  }
}

Reply Writer::enqueue(Command cmd, CallContext ctx) {
  std::future<Reply> answer;
  {
    MutexLock lock(mu_);
    if (!running_ || stopping_) return error_reply(503, "Unavailable", "the server is stopping");
    queue_.push_back(Pending{std::move(cmd), std::move(ctx), {}});
    answer = queue_.back().answer.get_future();
  }
  cv_.notify_one();
  if (answer.wait_for(options_.request_timeout) != std::future_status::ready)
    return error_reply(503, "Unavailable",
                       "no answer within the request timeout; the change may or may not have been made: read the object to find out");
  return answer.get();
}

bool Writer::follow() {
  std::vector<Event> events;
  auto status = store_->load_after(state_.last_seq, [&](const store::Record& r) -> Status {
    if (r.seq != state_.last_seq + 1)
      return Error::internal("journal record " + std::to_string(r.seq) + " follows record " + std::to_string(state_.last_seq) +
                             ": records are missing");
    auto applied = apply(state_, r, events);
    if (!applied)
      return Error::internal("journal record " + std::to_string(r.seq) + " (" + store::op_name(r.op) +
                             ") cannot be applied: " + applied.error().message);
    state_changed_ = true;
    return ok_status();
  });
  if (!status && status.error().message != follow_error_) spdlog::error("following the journal: {}", status.error().message);
  follow_error_ = status ? std::string() : status.error().message;
  events_.publish(std::move(events));
  publish_tables();
  return status.ok();
}

void Writer::step_leadership(bool force) {
  if (!store_->shared()) return;
  if (leadership_.leading()) {
    // Between batches, every leader_poll, the database is asked whether this server still leads, so that it
    // steps down when the database goes away (or its session does) even while nobody writes.
    if (leadership_.check_due(std::chrono::steady_clock::now(), options_.leader_poll)) (void)store_->confirm_lead();
    if (store_->leading()) return;
    // Deposed: the store refuses our writes from now on. What we hold was all acknowledged (a failed write
    // rebuilt the state), so we carry on as a standby from here.
    spdlog::warn("this server lost the lead of {}; it is a standby now", store_->describe());
    leadership_.step_down();
  }
  if (!leadership_.try_due(std::chrono::steady_clock::now(), force, options_.leader_poll)) return;
  if (needs_rebuild_) {
    // A write failed and the journal could not be read back then: rebuild from it once the database answers.
    auto fresh = replay(/*publish=*/false);
    if (!fresh) {
      spdlog::warn("cannot rebuild the state from the journal yet: {}", fresh.error().message);
      return;
    }
    adopt_rebuilt(std::move(*fresh));
    needs_rebuild_ = false;
    views_.close("");
    spdlog::info("state rebuilt from the journal up to record {}", state_.last_seq);
  }
  // A standby that cannot read the journal to its end (the database is away, or a record is damaged) does not
  // lead: it would write after a state that is not the journal's.
  if (!follow()) return;
  auto led = store_->try_lead(leadership_.own_url());
  if (!led) {
    spdlog::error("cannot take part in the leader election: {}", led.error().message);
    return;
  }
  if (!*led) {
    if (auto url = store_->leader_url()) leadership_.note_leader(std::move(*url));
    return;
  }
  // Nothing can be written between our catch-up and our first batch but by us: read to the end, then lead.
  (void)follow();
  const int64_t now_ms = options_.clock();
  for (auto& [name, info] : state_.nodes) info.last_heartbeat_ms = now_ms;
  // What the last leader handed out and which stops it awaited died with it (start_gate.h).
  begin_start_recovery(state_, now_ms, options_.heartbeat_timeout.count());
  dirty_ = true;
  state_changed_ = true;
  board_all_stale_ = true;
  next_pass_ = {};
  leadership_.lead();
  spdlog::info("this server leads {} from journal record {}", store_->describe(), state_.last_seq);
}

Writer::Stats Writer::stats() const {
  MutexLock lock(mu_);
  Stats out = stats_;
  out.heartbeats_off_writer = board_.answered();
  out.watches_waiting = board_.watchers();
  out.watch_wakes = board_.subscribed();
  out.snapshot_writing = snapshots_.writing();
  out.snapshots_written = snapshots_.written();
  out.writer_priority = priority_granted_.load();
  return out;
}

void Writer::loop() {
  name_thread("allot-writer");
  priority_granted_.store(-adjust_thread_nice(-options_.writer_priority, "the writer thread"));
  std::vector<Pending> batch;
  for (;;) {
    batch.clear();
    // A pending pass shortens the idle wait to when it may run.
    auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(options_.tick);
    if (dirty_ && leadership_.leading()) wait = std::clamp(next_pass_ - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero(), wait);
    // So does a read waiting for a view: the copy may be made once the spacing allows it (view_publisher.h).
    if (views_.wanted()) wait = std::clamp(views_.next_copy() - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero(), wait);
    {
      MutexLock lock(mu_);
      const auto until = std::chrono::steady_clock::now() + wait;
      while (!stopping_ && queue_.empty() && !view_requested_)
        if (cv_.wait_until(lock.native(), until) == std::cv_status::timeout) break;
      view_requested_ = false;
      if (stopping_) return;
      while (!queue_.empty() && batch.size() < options_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    step_leadership(/*force=*/false);
    check_space_returned();
    run_batch(batch);
  }
}

void Writer::note_liveness(Txn& txn) {
  // Looked at on every server, so that a standby that takes the lead does not take its time as a standby for a stall.
  auto deaf = liveness_.look(options_, txn.now_ms(), std::chrono::steady_clock::now());
  if (!leadership_.leading() || !deaf || deaf->until_ms <= state_.hearing_since_ms) return;
  state_.hearing_since_ms = deaf->until_ms;
  if (deaf->why.empty()) return;
  spdlog::warn("{}", deaf->why);
  txn.note("liveness", "", deaf->why);
}

const std::vector<RoundNodes::Entry>& Writer::round_nodes(int64_t now_ms) {
  const int64_t timeout = options_.heartbeat_timeout.count();
  const auto& due = round_nodes_.due(state_, now_ms, timeout);
  if (options_.verify_round_nodes) {
    std::unordered_set<const NodeInfo*> listed;
    for (const auto& e : due) listed.insert(e.second);
    for (const auto& [name, info] : state_.nodes) {
      if (listed.count(&info) || !round_may_act_on(info, silent_for(state_, info, now_ms), timeout)) continue;
      ++round_nodes_missed_;
      spdlog::error("round nodes: node {} may be acted on but was not among the round's nodes (a change that did not "
                    "set ServerState::round_nodes_changed)", name);
    }
  }
  return due;
}

void Writer::time_out_nodes(Txn& txn) {
  const int64_t limit = options_.heartbeat_timeout.count();
  // A node that left while its agent was live: past the timeout that agent has fenced itself (server_state.h).
  std::erase_if(state_.left_live_ms, [&](const auto& e) { return txn.now_ms() - e.second > limit; });
  std::vector<PastTimeout> past;         // most rounds none
  std::vector<NodeInfo*> fenced_heard;  // fenced at the last round, heard since
  for (const auto& [name, info] : round_nodes(txn.now_ms())) {
    if (info->agent && silent_for(state_, *info, txn.now_ms()) > limit) past.push_back({name, info});
    else if (info->fenced) fenced_heard.push_back(info);
  }
  const Disruption disruption = assess_disruption(state_, options_, txn.now_ms(), past, disruption_held_);
  if (disruption.held != disruption_held_) {
    disruption_held_ = disruption.held;
    // The nodes come back a heartbeat or so apart, and the last of them is no more to blame than the first: as
    // Kubernetes' node lifecycle controller does on leaving a full disruption, every timeout starts afresh.
    if (!disruption.held) state_.hearing_since_ms = std::max(state_.hearing_since_ms, txn.now_ms());
    const std::string message = disruption_message(disruption, options_);
    spdlog::warn("{}", message);
    txn.note("disruption", "", message);
  }
  if (disruption.held) return;  // the silent nodes wait, suspect (node_silence.h)
  // The end of a disruption has just started every timeout afresh: who is past the timeout is looked at again.
  std::erase_if(past, [&](const PastTimeout& p) {
    if (silent_for(state_, *p.info, txn.now_ms()) > limit) return false;
    fenced_heard.push_back(p.info);
    return true;
  });
  // A node already out of service (a failed check, an administrator's reboot) is not timed out again, but past
  // the timeout its agent has fenced itself all the same.
  for (NodeInfo* info : fenced_heard) info->fenced = false;
  std::vector<std::string> silent;
  for (const auto& [name, info] : past) {
    const Node* n = node_of(state_.cluster, *name, *info);
    if (n && n->health == NodeHealth::kSchedulable) silent.push_back(*name);
    info->fenced = n && n->health != NodeHealth::kSchedulable;
  }
  for (const auto& name : silent) {
    // A heartbeat the board answered since the batch began counts. Otherwise the board answers none of the node's
    // heartbeats from now on: the writer does, undoing the timeout (heartbeat_board.h).
    if (!board_.close_if_silent(name, txn.now_ms(), limit)) continue;
    spdlog::warn("node {}: no heartbeat for {} ms; marking it UnschedulablePendingReboot", name, limit);
    recover_in_place_from(txn, name);  // its lease has expired: its replicas are stopped (docs/resiliency.md)
    auto st = txn.apply(store::NodeHealthChange{name, NodeHealth::kUnschedulablePendingReboot, store::HealthCause::kTimeout, "",
                                                "no heartbeat for " + std::to_string(limit) + " ms"});
    if (!st) spdlog::error("node {}: {}", name, st.error().message);
  }
}

std::vector<std::string> Writer::compact_finished_jobs(Txn& txn) {
  if (!options_.retain_finished_s) return {};
  // On the server's clock, as the retention itself is (tests move it).
  if (txn.now_ms() < next_compaction_check_ms_) return {};
  next_compaction_check_ms_ = txn.now_ms() + retention_check_interval(*options_.retain_finished_s).count();
  const auto cutoff = compaction_cutoff(state_.cluster, txn.now(), *options_.retain_finished_s);
  if (!cutoff) return {};
  std::vector<std::string> names = jobs_compacted_by(state_.cluster, *cutoff);
  if (auto st = txn.apply(store::CompactFinished{*cutoff}); !st) {
    spdlog::error("compacting finished jobs: {}", st.error().message);
    return {};
  }
  return names;
}

void Writer::adopt_rebuilt(ServerState fresh) {
  // What the journal does not hold but the server knows: heartbeats and live latency measurements.
  for (auto& [name, info] : fresh.nodes)
    if (auto it = state_.nodes.find(name); it != state_.nodes.end()) info.last_heartbeat_ms = it->second.last_heartbeat_ms;
  fresh.hearing_since_ms = state_.hearing_since_ms;
  fresh.scheduling_latency = state_.scheduling_latency;
  fresh.observed.pass_seconds = state_.observed.pass_seconds;
  fresh.observed.utilisation = state_.observed.utilisation;
  take_state(std::move(fresh));
  // The stops under way were the old state's; the rebuilt one recovers them as a restart does (start_gate.h).
  begin_start_recovery(state_, options_.clock(), options_.heartbeat_timeout.count());
  dirty_ = true;
  state_changed_ = true;
  board_all_stale_ = true;
}

void Writer::fold_heartbeat_times() {
  bool moved = false;
  // Only the nodes heard since the last fold: every other node's time is folded already.
  board_.take_heard([&](const std::string& node, int64_t ms) {
    auto it = state_.nodes.find(node);
    if (it == state_.nodes.end() || ms <= it->second.last_heartbeat_ms) return;
    moved |= ms / 1000 != it->second.last_heartbeat_ms / 1000;
    it->second.last_heartbeat_ms = ms;
  });
  // Reads show these times in whole seconds. A time that moved to a new second counts as a change of the state
  // (so the read view is copied anew) at most once a second: heartbeats alone do not send every read through
  // the writer, and a listing shows a node's last heartbeat at most about a second late.
  heard_pending_ |= moved;
  const auto now = std::chrono::steady_clock::now();
  if (heard_pending_ && now - heard_counted_at_ >= std::chrono::seconds(1)) {
    state_changed_ = true;
    heard_pending_ = false;
    heard_counted_at_ = now;
  }
}

void Writer::refresh_heartbeat_board(const std::vector<Event>& events) {
  advance_start_gate(state_, options_.clock());  // names the nodes whose run lists it changed (start_gate.h)
  const std::vector<uint32_t> touched = state_.running_by_node.take_touched();
  std::vector<std::string> named = std::exchange(state_.nodes_touched, {});
  if (!leadership_.leading() || needs_rebuild_) {
    // Agents heartbeat to the leader; a standby's board would only hold answers that go stale.
    if (!board_.empty()) board_.clear();
    board_all_stale_ = true;
    return;
  }
  std::unordered_set<std::string> nodes;
  if (board_all_stale_) {
    // Slots are kept (with the times they hold) and republished; those of nodes that left go.
    for (const auto& [name, info] : state_.nodes) nodes.insert(name);
    board_.for_each_time([&](const std::string& node, int64_t) { nodes.insert(node); });
    board_all_stale_ = false;
  } else {
    for (uint32_t n : touched)
      if (n < state_.cluster.nodes.size()) nodes.insert(state_.cluster.nodes[n].name);
    for (auto& name : named) nodes.insert(std::move(name));
    std::unordered_set<std::string> event_nodes;
    for (const Event& e : events) {
      if (e.node.empty() || !event_nodes.insert(e.node).second) continue;
      nodes.insert(e.node);
      // A node's address is MASTER_ADDR in the assignments of the jobs whose rank 0 runs there, on all their nodes.
      const Node* n = state_.cluster.find_node(e.node);
      const std::set<uint32_t>* jobs = n ? state_.running_by_node.on(n->id) : nullptr;
      if (!jobs) continue;
      for (uint32_t j : *jobs)
        for (NodeId id : state_.cluster.jobs[j].placement.nodes()) nodes.insert(state_.cluster.nodes[id.index()].name);
    }
  }
  for (const std::string& name : nodes) {
    const bool present = state_.cluster.find_node(name) && state_.nodes.count(name);
    board_.publish(name, present ? std::make_shared<const NodeAnswer>(node_answer(state_, options_, name)) : nullptr);
  }
  if (!options_.verify_heartbeat_board) return;
  for (const auto& [name, info] : state_.nodes) {
    if (!state_.cluster.find_node(name)) continue;
    NodeAnswer fresh = node_answer(state_, options_, name);
    const auto published = board_.published(name);
    if (published) fresh.as_of = published->as_of;  // later records that left the node's answer as it was
    // A slot closed for silence answers nothing, which is right only while the node's answer says so too.
    if (published ? *published == fresh : !fresh.fast) continue;
    ++board_mismatches_;
    spdlog::error("heartbeat board: the answer published for node {} differs from the state's (a change that did not "
                  "republish it)", name);
  }
}

void Writer::run_batch(std::vector<Pending>& batch) {
  if (needs_rebuild_) {
    board_.clear();
    for (auto& p : batch)
      p.answer.set_value(error_reply(503, "Unavailable", kRebuildPending));
    return;
  }
  if (options_.before_batch && !batch.empty()) options_.before_batch();
  if (leadership_.leading()) fold_heartbeat_times();
  const int64_t now_ms = options_.clock();
  std::vector<store::Record> records;
  std::vector<Event> events;
  std::vector<Txn::Effect> effects;
  Txn txn(state_, now_ms, records, events, effects);
  // Per command: how to answer once durable, or why it was refused.
  struct Outcome {
    Render render;
    std::optional<Error> error;
    std::optional<Error> audited_as;  // Txn::audit_as
  };
  std::vector<Outcome> results;
  results.reserve(batch.size());
  // Before the commands: those that waited out a stall (heartbeats reporting fenced exits, agents/lifecycle) are
  // judged knowing the server could not hear meanwhile.
  txn.act_as(kServerActor);
  note_liveness(txn);
  for (auto& p : batch) {
    txn.act_as(p.ctx.actor);
    const size_t effects_before = effects.size();
    try {
      auto r = p.cmd(txn);
      if (r) results.push_back({std::move(*r), std::nullopt, std::nullopt});
      else results.push_back({nullptr, r.error(), std::nullopt});
    } catch (const std::exception& e) {
      results.push_back({nullptr, Error::internal(std::string("unexpected failure: ") + e.what()), std::nullopt});
    }
    if (results.back().error) effects.resize(effects_before);  // a refused command has no effects
    results.back().audited_as = txn.take_audited_as();
  }
  txn.act_as(kServerActor);
  // Only the leader decides: a standby's state is the leader's, as journaled.
  std::vector<std::string> compacted;
  // Without room in the journal the leader's own writing work waits: each would fail and cost a rebuild.
  const bool writes_own = leadership_.leading() && !no_space_;
  if (writes_own) {
    if (lifecycle_tick(txn, options_, round_nodes(txn.now_ms()))) dirty_ = true;
    if (step_plans(txn, options_)) dirty_ = true;
    if (step_reservations(txn)) dirty_ = true;
    // Limits and start timeouts are whole seconds: one walk over the running jobs a second finds every job due.
    if (txn.now() != time_limits_checked_at_) {
      time_limits_checked_at_ = txn.now();
      if (end_jobs_past_time_limit(txn)) dirty_ = true;
      if (time_out_starts(txn)) dirty_ = true;
      if (fall_back_stalled_recoveries(txn)) dirty_ = true;
    }
    time_out_nodes(txn);
    compacted = compact_finished_jobs(txn);
  }

  const Time now = txn.now();
  if (!records.empty()) dirty_ = true;
  const auto pass_start = std::chrono::steady_clock::now();
  const bool wakeup_due = next_wakeup_ && now >= *next_wakeup_;
  const bool pass = writes_own && (wakeup_due || (dirty_ && pass_start >= next_pass_));
  double pass_seconds = 0;
  if (pass) {
    dirty_ = false;
    ScheduleResult sr = schedule(state_.cluster, now, ScheduleOptions{.fit_cache = &fit_cache_});
    next_wakeup_ = sr.next_wakeup;
    state_.reservation = reservation_seen(state_.cluster, sr.reservation);
    if (sr.bound_hit) {  // a cycle of decisions, a bug: say so in the log and the event stream
      spdlog::error("{}", sr.bound_hit->message);
      events.push_back({++state_.last_event, now, "error", "", "", sr.bound_hit->message, ""});
    }
    const auto steady_now = std::chrono::steady_clock::now();
    // Cheap passes are never held back, so on a small or idle cluster every answer shows its batch's decisions.
    const auto took = steady_now - pass_start;
    next_pass_ = took < kCheapPass ? steady_now : steady_now + took;
    pass_seconds = std::chrono::duration<double>(steady_now - pass_start).count();
    state_.observed.pass_seconds.observe(pass_seconds);
    for (const Decision& d : sr.decisions) {
      store::Record r{state_.last_seq + 1, now, store::decision_record(state_.cluster, d), kServerActor};
      note_decision(state_, r, events);
      if (const auto* admit = std::get_if<AdmitDecision>(&d)) {
        if (const auto* since = state_.waiting_since.find(admit->job.index())) {
          const double waited = std::chrono::duration<double>(steady_now - *since).count();
          const std::string& team = state_.cluster.teams[state_.cluster.jobs[admit->job.index()].team.index()].spec.name;
          for (TypeId type : placement_types(admit->placement))
            state_.scheduling_latency[{team, state_.cluster.catalog.at(type).name}].observe(waited);
          state_.waiting_since.erase(admit->job.index());
        }
      }
      records.push_back(std::move(r));
    }
    // Locality waits that began at this pass (the pass applied them): journaled, so a restart keeps them.
    for (const LocalityWaitStart& w : sr.locality_waits) {
      store::Record r{state_.last_seq + 1, now, store::LocalityWaitBegan{state_.cluster.jobs[w.job.index()].spec.name},
                      kServerActor};
      note_decision(state_, r, events);
      records.push_back(std::move(r));
    }
    // Jobs the pass ended because a dependency can never hold (core/model/dependency.h; the pass applied them), after its
    // decisions as replay applies them. The next pass looks again: a job waiting for one of them to end may run.
    for (const DependencyEnd& e : sr.dependency_ends) {
      const Job& j = state_.cluster.jobs[e.job.index()];
      const JobDependency& d = j.spec.after[e.which];
      store::Record r{state_.last_seq + 1, now, store::DependencyNeverHolds{j.spec.name, d.job, d.condition}, kServerActor};
      note_decision(state_, r, events);
      records.push_back(std::move(r));
      dirty_ = true;
    }
  }

  // Built-in admission checks answer for the runs that wait on them, this pass's admissions included
  // (admission_checks.h); HTTP checks are asked off this thread (admission_checker.h).
  if (writes_own && builtin_checks_seen_ != state_.last_event) {
    builtin_checks_seen_ = state_.last_event;
    if (answer_builtin_checks(txn)) dirty_ = true;
  }

  state_.observed.sample(state_.cluster, now);
  // Which runs the agents are given, with this batch's decisions and heartbeats (start_gate.h), before the answers.
  advance_start_gate(state_, txn.now_ms());

  // Answers are rendered before the batch is written so that each audit record can say what its request was
  // answered; a failed write replaces them all with the error below.
  std::vector<Reply> replies(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    if (results[i].error) {
      replies[i] = error_reply(*results[i].error);
    } else {
      try {
        replies[i] = results[i].render(state_);
        drain_pieces(replies[i]);  // the state moves on after this batch: nothing may read it later
      } catch (const std::exception& e) {
        replies[i] = error_reply(Error::internal(std::string("cannot render the answer: ") + e.what()));
      }
    }
    if (batch[i].ctx.audit) {
      store::Audit a = *batch[i].ctx.audit;
      a.status = replies[i].status;
      if (results[i].error) {
        // A refusal answered as "not found" is audited as the refusal it is.
        const Error& e = results[i].audited_as ? *results[i].audited_as : *results[i].error;
        a.status = http_status(e.code);
        a.message = e.message;
      }
      txn.act_as(batch[i].ctx.actor);
      if (auto st = txn.apply(std::move(a)); !st) spdlog::error("audit record: {}", st.error().message);
    }
  }

  Status durable = ok_status();
  if (!records.empty()) durable = store_->append(records);
  if (!durable) {
    // The state holds changes the journal does not: answer every change with the error and rebuild the state
    // from the journal, which is what was acknowledged.
    spdlog::error("journal write failed, {} records dropped: {}", records.size(), durable.error().message);
    // A shared store that lost its session may have lost the answer to a commit that happened.
    const bool session_lost = store_->shared() && !store_->leading();
    // It is a 503 (try again, here or at the next leader), not a 500: nothing is wrong with the request.
    for (size_t i = 0; i < batch.size(); ++i)
      if (!results[i].error)
        replies[i] = session_lost
                         ? error_reply(503, "Unavailable",
                                       "this server lost its database session while writing the change (" + durable.error().message +
                                           "); it was not acknowledged and this server no longer leads: read the object "
                                           "(from the next leader) to find out whether it was made")
                         : error_reply(Error::internal("the change could not be made durable (" + durable.error().message +
                                                       "); nothing was changed"));
    auto fresh = replay(/*publish=*/false);
    {
      MutexLock lock(mu_);
      ++stats_.rebuilds;
    }
    if (fresh) {
      adopt_rebuilt(std::move(*fresh));
      if (!session_lost) note_space_after_failure();
    } else if (store_->shared()) {
      // The database is gone (the write failed for that reason): step down, answer nothing from this state, and
      // rebuild it from the journal once the database is back (step_leadership). The next leader, this server
      // or another, starts from what the journal holds.
      spdlog::error("cannot rebuild the state from the journal now ({}); this server stands by until it can",
                    fresh.error().message);
      needs_rebuild_ = true;
      views_.close(kRebuildPending);
      leadership_.step_down();
    } else {
      spdlog::critical("cannot rebuild the state from the journal: {}", fresh.error().message);
      std::abort();  // the journal cannot be read back: running on would serve state nobody can recover
    }
    refresh_heartbeat_board({});
  } else {
    refresh_heartbeat_board(events);
    events_.publish(std::move(events));
    for (const ProvisionRequest& r : state_.provision_queue) provisioner_.launch(r, public_url_);
    if (!compacted.empty() && on_compacted_) on_compacted_(compacted);
    for (auto& effect : effects) {
      try {
        effect();
      } catch (const std::exception& e) {
        spdlog::error("an effect after a durable batch failed: {}", e.what());
      }
    }
  }
  state_.provision_queue.clear();
  provisioner_.reap();
  publish_tables();
  // Any command may have changed what is not journaled (a heartbeat's time, an exit report); reads never come here.
  views_.publish(state_changed_ || !batch.empty() || !records.empty() || pass || !durable, state_, /*publishable=*/!needs_rebuild_);
  state_changed_ = false;

  {
    MutexLock lock(mu_);
    ++stats_.batches;
    stats_.commands += batch.size();
    if (durable) stats_.records += records.size();
    stats_.heartbeat_board_mismatches = board_mismatches_;
    stats_.round_nodes_walks = round_nodes_.walks();
    stats_.round_nodes_missed = round_nodes_missed_;
    if (pass) {
      ++stats_.passes;
      stats_.pass_seconds += pass_seconds;
      stats_.max_pass_seconds = std::max(stats_.max_pass_seconds, pass_seconds);
    }
  }
  for (size_t i = 0; i < batch.size(); ++i) batch[i].answer.set_value(std::move(replies[i]));
  if (durable && leadership_.leading()) snapshots_.maybe_write(state_, views_);
}

}  // namespace allot::server
