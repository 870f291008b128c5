#include "sim/trace_replay.h"

#include "core/lifecycle/in_place.h"
#include "core/model/plans.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <queue>
#include <set>

#include "core/pass/scheduler.h"
#include "sim/completions.h"
#include "sim/node_failures.h"
#include "sim/scenario_run.h"
#include "sim/trace_jobs.h"

namespace allot::sim {
namespace {

// A node failure or repair, in time order; ties keep the order they were planned in.
struct NodeEvent {
  Time at = 0;
  uint64_t seq = 0;
  enum class Kind { kFail, kRebooted, kReplaced } kind = Kind::kFail;
  size_t node = 0;  // index into the cluster's node specs
  bool operator>(const NodeEvent& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

// What the replay tracks of a trace job beyond the core's state.
struct Tracked {
  JobId id;
  int held = 0;                 // GPUs held while running (an elastic job: at its largest size)
  int held_now = 0;             // GPUs held by the current run (an elastic job's size changes)
  int64_t original_s = 0;       // the trace's duration: the useful work
  Time run_start = -1;          // -1: not running
  bool run_borrowing = false;
  int runs = 0;
  bool in_place = false;  // recovery: in_place
  int epoch = 0;          // the membership epoch the replay has charged the pauses of, in the current run
  int restarts = 0;       // the core's count of failure restarts when the current run was opened
  int64_t work_at_open = 0;  // the job's kept work when the current run was opened
};

class Replay {
 public:
  Replay(const Scenario& sc, const Trace& trace, const ReplayOptions& o, ClusterState s, TraceJobShape shape)
      : sc_(sc), trace_(trace), o_(o), s_(std::move(s)), shape_(std::move(shape)),
        draws_(o.seed, o.failures.mtbf_hours * 3600.0, o.failures.replace_share) {}

  Result<ReplayOutcome> run() {
    if (auto st = prepare(); !st) return st.error();
    size_t next_job = 0, next_event = 0;
    Time now = 0;
    std::optional<Time> wakeup;
    while (true) {
      std::optional<Time> t;
      auto consider = [&](std::optional<Time> x) {
        if (x && *x >= now && (!t || *x < *t)) t = x;
      };
      bool work_left = next_job < trace_.jobs.size() || !running_.empty();
      if (next_job < trace_.jobs.size()) consider(trace_.jobs[next_job].submit_s);
      while (next_event < sc_.events.size() && sc_.events[next_event].kind == EventKind::kExpect) ++next_event;
      if (next_event < sc_.events.size()) consider(sc_.events[next_event].at);
      consider(next_completion(s_, now));
      // Elastic jobs below their max wake the scheduler to grow even with nobody waiting.
      if (waiting_ > 0 || any_elastic_) consider(wakeup);
      // Failures only while there is work to disturb; repairs always (they may unblock waiting jobs).
      if (!node_events_.empty() && (work_left || node_events_.top().kind != NodeEvent::Kind::kFail))
        consider(node_events_.top().at);
      // Capacity plans (--plans) start, end and expire while there is work they could change.
      if (auto step = next_plan_step(s_); step && work_left) consider(step->at);
      // Reservations of the cluster file start and end the same way.
      if (auto step = next_reservation_step(s_); step && work_left) consider(step->at);
      if (!t) break;
      now = *t;
      bool changed = complete_jobs(now);
      changed |= node_events(now, work_left);
      if (auto step = next_plan_step(s_); step && step->at <= now) {
        std::vector<std::string> log;
        if (auto st = apply_due_plan_steps(s_, now, log); !st) return st.error();
        changed = true;
      }
      if (auto step = next_reservation_step(s_); step && step->at <= now) {
        std::vector<std::string> log;
        if (auto st = apply_due_reservation_steps(s_, now, log); !st) return st.error();
        changed = true;
      }
      while (next_event < sc_.events.size() && sc_.events[next_event].at == now) {
        const Event& e = sc_.events[next_event++];
        if (e.kind == EventKind::kExpect) continue;
        std::vector<std::string> log;
        if (auto st = apply_event(s_, e, log, out_.warnings); !st)
          return Error::invalid("cluster file line " + std::to_string(e.line) + ": " + st.error().message);
        changed = true;
      }
      while (next_job < trace_.jobs.size() && trace_.jobs[next_job].submit_s == now) {
        if (auto st = submit(next_job++, now); !st) return st.error();
        changed = true;
      }
      if (!changed && !(wakeup && *wakeup == now)) continue;
      ScheduleResult r = schedule(s_, now, ScheduleOptions{.fit_cache = &fits_});
      ++out_.schedule_calls;
      if (r.bound_hit) out_.warnings.push_back("t=" + std::to_string(now) + ": " + r.bound_hit->message);
      wakeup = r.next_wakeup;
      reconcile(r, now);
      note_reservation(r);
      sample(now);
      out_.end_s = std::max(out_.end_s, now);
    }
    return finish();
  }

 private:
  Status prepare() {
    for (size_t i = 0; i < trace_.jobs.size(); ++i)
      if (trace_.jobs[i].team.empty() || !s_.find_team(trace_.jobs[i].team))
        return Error::invalid("trace job " + trace_.jobs[i].id + " has no team of the cluster ('" + trace_.jobs[i].team +
                              "'); teams: " + s_.team_names());
    for (const Team& t : s_.teams) {
      int64_t gpus = 0;
      for (size_t k = 0; k < t.nominal.size(); ++k) gpus += t.nominal[k].accelerators;
      team_index_[t.id.index()] = out_.cluster.teams.size();
      out_.cluster.teams.push_back({t.spec.name, gpus});
    }
    for (const Node& n : s_.nodes)
      if (!n.removed) out_.cluster.total_gpus += s_.catalog.at(n.type).accelerators;
    out_.cluster.backfill = s_.policy.backfill;
    tracked_.resize(trace_.jobs.size());
    locality_map();
    if (o_.failures.mtbf_hours > 0)
      for (size_t i = 0; i < sc_.nodes.size(); ++i) plan(NodeEvent::Kind::kFail, i, draws_.time_to_failure());
    return ok_status();
  }

  // Each node's lowest-layer network domain, by name, in the tree locality is judged on.
  void locality_map() {
    const std::vector<NodeSpec>& specs = o_.locality_nodes.empty() ? sc_.nodes : o_.locality_nodes;
    ClusterState ref(s_.catalog, o_.locality_nodes.empty() ? sc_.topology_levels : o_.locality_levels);
    (void)add_nodes(ref, specs, 0);
    int level = ref.tree.lowest_labelled_level;
    for (const Node& n : ref.nodes) {
      int d = level >= 0 ? ref.tree.ancestor(n.id, level) : -1;
      domain_of_[n.name] = d >= 0 ? ref.tree.domains[d].name + "#" + std::to_string(d) : n.name;
      ++domain_nodes_[{domain_of_[n.name], ref.catalog.at(n.type).name}];
    }
    for (const auto& [key, count] : domain_nodes_) largest_domain_[key.second] = std::max(largest_domain_[key.second], count);
  }

  // A draw in [0, 1) for trace job i, from the seed and the index alone (splitmix64), so which jobs are elastic
  // does not depend on anything else the replay draws.
  // A draw in [0, 1) for trace job i, from the seed (splitmix64); `salt` keeps independent draws apart.
  double job_draw(size_t i, uint64_t salt) const {
    uint64_t z = o_.seed * 0x9e3779b97f4a7c15ULL + (i + 1) * 0xbf58476d1ce4e5b9ULL + salt;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) / static_cast<double>(uint64_t{1} << 53);
  }

  double elastic_draw(size_t i) const { return job_draw(i, 0); }
  double in_place_draw(size_t i) const { return job_draw(i, 0x2545f4914f6cdd1dULL); }

  // The job's wall-time limit: its duration times the factor (or a factor drawn between the two; trace_replay.h).
  int64_t time_limit_of(size_t i, int64_t duration_s) const {
    double factor = o_.time_limit_factor;
    if (o_.time_limit_factor_max > factor) factor *= std::pow(o_.time_limit_factor_max / factor, job_draw(i, 0x5851f42d4c957f2dULL));
    return static_cast<int64_t>(std::ceil(static_cast<double>(duration_s) * factor));
  }

  // GPUs a running job holds now.
  int held_now(const Tracked& t, const Job& j) const {
    return j.elastic() ? j.size() * shape_.accelerators_per_node : t.held;
  }

  void plan(NodeEvent::Kind kind, size_t node, Time at) { node_events_.push({at, seq_++, kind, node}); }

  Status submit(size_t i, Time now) {
    const TraceJob& tj = trace_.jobs[i];
    // Auto-resume as often as the core allows (1000 retries), so a failure never ends a trace job for good.
    int retries = o_.failures.mtbf_hours > 0 ? 1000 : 0;
    JobSpec spec = job_from_trace(tj, shape_, retries, o_.failures.checkpoint_s);
    if (o_.elastic_share > 0 && spec.pod_sets.front().replicas > 1 && elastic_draw(i) < o_.elastic_share) {
      PodSetSpec& ps = spec.pod_sets.front();
      ps.min_replicas = (ps.replicas + 1) / 2;
      any_elastic_ = true;
    }
    const bool in_place =
        o_.in_place_share > 0 && spec.pod_sets.front().replicas > 1 && in_place_draw(i) < o_.in_place_share;
    if (in_place) spec.recovery = Recovery::kInPlace;
    // The trace's own limit where it gives one (raised to the duration: Slurm ends a job a little after its
    // limit, and the replay runs each job for its whole duration), else one drawn from the factor.
    if (tj.time_limit_s) spec.time_limit_s = std::max(*tj.time_limit_s, tj.duration_s);
    else if (o_.time_limit_factor > 0) spec.time_limit_s = time_limit_of(i, tj.duration_s);
    auto id = submit_job(s_, spec, now);
    if (!id) return Error::invalid("trace job " + tj.id + ": " + id.error().message);
    // A trace job needs its duration of work, and a run after a preemption or a failure may need more than what is
    // left of a limit of F times that duration (the work since its last checkpoint is lost). The replay does not
    // stop jobs at their limits (the trace's jobs ran for their durations), so each run gets the whole limit
    // again, as with the team setting resets_on_restart: otherwise a restarted job ran past the limit that
    // reservations were planned from, which a server, stopping jobs at their limits, never sees.
    if (spec.time_limit_s) s_.jobs[id->index()].time_limit_resets = true;
    Tracked& t = tracked_[i];
    t.id = *id;
    t.held = held_gpus(shape_, tj.gpus);
    t.original_s = tj.duration_s;
    t.in_place = in_place;
    if (record_of_.size() <= id->index()) record_of_.resize(id->index() + 1, -1);
    record_of_[id->index()] = static_cast<int>(i);
    ++waiting_;
    return ok_status();
  }

  bool complete_jobs(Time now) {
    const std::vector<JobId> done = completed_by(s_, now);
    for (JobId id : done) (void)finish_job(s_, s_.jobs[id.index()].spec.name, now, true, "finished its work");
    return !done.empty();
  }

  bool node_events(Time now, bool work_left) {
    bool changed = false;
    while (!node_events_.empty() && node_events_.top().at == now) {
      NodeEvent e = node_events_.top();
      node_events_.pop();
      const NodeSpec& spec = sc_.nodes[e.node];
      if (e.kind == NodeEvent::Kind::kFail) {
        if (!work_left) continue;
        const Node* n = s_.find_node(spec.name);
        if (!n || n->health != NodeHealth::kSchedulable) continue;  // removed by the cluster file, or already down
        bool replace = draws_.needs_replacement();
        (void)fail_node_in_place(s_, spec.name, now,
                        replace ? NodeHealth::kUnschedulablePendingReplacement : NodeHealth::kUnschedulablePendingReboot);
        ++out_.node_failures;
        plan(replace ? NodeEvent::Kind::kReplaced : NodeEvent::Kind::kRebooted, e.node,
             now + (replace ? o_.failures.replace_s : o_.failures.reboot_s));
      } else {
        if (!s_.find_node(spec.name)) continue;
        if (e.kind == NodeEvent::Kind::kRebooted) {
          (void)set_node_health(s_, spec.name, NodeHealth::kSchedulable, now);
        } else {
          // A replacement is a new machine under the old name and labels: the old one leaves, the new one joins.
          (void)remove_node(s_, spec.name, now);
          (void)add_node(s_, spec, now);
        }
        plan(NodeEvent::Kind::kFail, e.node, now + draws_.time_to_failure());
      }
      changed = true;
    }
    return changed;
  }

  // Ends the runs that stopped (finished, preempted, failed) and starts the ones the scheduler admitted.
  void reconcile(const ScheduleResult& r, Time now) {
    std::set<uint32_t> resized;
    if (any_elastic_)
      for (const auto& d : r.decisions)
        if (const auto* x = std::get_if<ResizeDecision>(&d)) resized.insert(x->job.index());
    std::vector<size_t> still;
    for (size_t i : running_) {
      Tracked& t = tracked_[i];
      Job& j = s_.jobs[t.id.index()];
      if (j.state == JobState::kRunning && j.started_at == t.run_start) {
        if (t.in_place) charge_in_place_recoveries(t, j);
        still.push_back(i);
        continue;
      }
      if (j.state == JobState::kRunning && resized.count(t.id.index())) {
        // Resized: the run goes on at its new size from its checkpoint, and pays the restart like any other.
        account(i, now);
        t.held_now = held_now(t, j);
        busy_ += t.held_now;
        team_busy_[j.team.index()] += t.held_now;
        t.run_start = j.started_at;
        t.run_borrowing = j.borrowing;
        t.work_at_open = j.work_done_s;
        if (o_.failures.restart_overhead_s > 0) *j.spec.duration_s += o_.failures.restart_overhead_s;
        ++t.runs;
        if (t.in_place) charge_in_place_recoveries(t, j);
        still.push_back(i);
        continue;
      }
      close_run(i, now);
    }
    running_ = std::move(still);
    for (const auto& d : r.decisions) {
      const auto* admit = std::get_if<AdmitDecision>(&d);
      if (!admit || admit->job.index() >= record_of_.size()) continue;
      int rec = record_of_[admit->job.index()];
      if (rec < 0) continue;
      Tracked& t = tracked_[rec];
      Job& j = s_.jobs[t.id.index()];
      // Not running at the end of the pass (admitted, then preempted), or already opened by an earlier
      // admission of this pass (admitted, preempted, admitted again): nothing to open.
      if (j.state != JobState::kRunning || t.run_start >= 0) continue;
      if (t.runs == 0) {
        first_placement(rec, j, now);
        records_[rec].backfilled = admit->backfilled;
        // note_reservation() has not seen this pass yet: holder_rec_ is the holder the pass before.
        if (rec == holder_rec_) records_[rec].held_start_s = holding_planned_s_;
      }
      else if (o_.failures.restart_overhead_s > 0) *j.spec.duration_s += o_.failures.restart_overhead_s;
      ++t.runs;
      t.run_start = j.started_at;
      t.run_borrowing = j.borrowing;
      t.held_now = held_now(t, j);
      t.epoch = j.membership_epoch;
      t.restarts = j.restarts;
      t.work_at_open = j.work_done_s;
      --waiting_;
      running_.push_back(rec);
      busy_ += t.held_now;
      team_busy_[j.team.index()] += t.held_now;
    }
  }

  // A running job with recovery in_place that recovered since the last pass (its membership epoch went up: one per
  // recovery, core/lifecycle/in_place.h) keeps its run and all its work, but the whole job waited for each new rank to start
  // and copy the state from a peer: that pause is more run time at all its GPUs, held and not useful.
  void charge_in_place_recoveries(Tracked& t, Job& j) {
    const int recovered = j.membership_epoch - t.epoch;
    if (recovered <= 0) return;
    t.epoch = j.membership_epoch;
    out_.in_place_recoveries += recovered;
    if (o_.failures.in_place_overhead() > 0) *j.spec.duration_s += recovered * o_.failures.in_place_overhead();
    count_failure_loss(t, recovered * o_.failures.in_place_overhead() * t.held);
  }

  void count_failure_loss(const Tracked& t, int64_t gpu_seconds) {
    out_.failure_lost_gpu_seconds += gpu_seconds;
    if (t.held > shape_.accelerators_per_node) out_.failure_lost_multi_node_gpu_seconds += gpu_seconds;
  }

  // The start the holder's first reservation planned: the figure its first start is measured against. And the
  // holder of each pass, with the start planned when it began to hold the reservation without a break.
  void note_reservation(const ScheduleResult& r) {
    const int holder =
        r.reservation && r.reservation->holder.index() < record_of_.size() ? record_of_[r.reservation->holder.index()] : -1;
    if (holder != holder_rec_) {
      holder_rec_ = holder;
      holding_planned_s_ = holder >= 0 ? r.reservation->at : -1;
    }
    if (holder < 0) return;
    const int rec = holder;
    if (rec >= 0 && records_[rec].first_start_s < 0 && records_[rec].reserved_start_s < 0)
      records_[rec].reserved_start_s = r.reservation->at;
  }

  // Charges the current run's GPU-time up to now to its record and takes its GPUs off the busy count.
  void account(size_t i, Time now) {
    Tracked& t = tracked_[i];
    const Job& j = s_.jobs[t.id.index()];
    JobRecord& rec = records_[i];
    int64_t held = (now - t.run_start) * t.held_now;
    rec.total_gpu_seconds_held += held;
    if (t.run_borrowing) rec.borrowed_gpu_seconds += held;
    busy_ -= t.held_now;
    team_busy_[j.team.index()] -= t.held_now;
  }

  void close_run(size_t i, Time now) {
    Tracked& t = tracked_[i];
    const Job& j = s_.jobs[t.id.index()];
    JobRecord& rec = records_[i];
    account(i, now);
    // A failure ended the run: the GPU-time it held beyond the work it kept is lost, and so is the next run's
    // overhead. Work is counted at the job's full size (an elastic job below it works more slowly: state.h).
    if (j.restarts > t.restarts)
      count_failure_loss(t, (now - t.run_start) * t.held_now -
                                (j.work_done_s - t.work_at_open - o_.failures.restart_overhead_s) * t.held);
    // A node failure the job could not recover from in place (no free node for its lost replicas) restarted it.
    if (t.in_place) out_.in_place_fallbacks += j.restarts - t.restarts;
    t.run_start = -1;
    if (j.state == JobState::kSucceeded || j.state == JobState::kFailed || j.state == JobState::kCancelled) {
      if (j.state == JobState::kSucceeded) rec.end_s = now;
    } else {
      ++waiting_;  // back in the queue (or re-admitted this pass, which opens a run and takes it out again)
    }
  }

  void first_placement(size_t i, const Job& j, Time now) {
    JobRecord& rec = records_[i];
    rec.first_start_s = now;
    std::set<std::string> domains;
    auto nodes = j.placement.nodes();
    for (NodeId n : nodes) domains.insert(domain_of_[s_.nodes[n.index()].name]);
    rec.multi_node = nodes.size() > 1;
    rec.domains_used = rec.multi_node ? static_cast<int>(domains.size()) : 0;
    // Replay jobs of several nodes are whole-node replicas of one type: one domain of the empty cluster holds
    // them when it has that many nodes of the type.
    if (rec.multi_node && !j.placement.pod_sets.empty()) {
      auto it = largest_domain_.find(s_.catalog.at(j.placement.pod_sets.front().type).name);
      rec.fits_one_domain = it != largest_domain_.end() && static_cast<int64_t>(nodes.size()) <= it->second;
    }
  }

  void sample(Time now) {
    Sample smp;
    smp.t = now;
    smp.busy_gpus = busy_;
    smp.queued_jobs = waiting_;
    smp.team_busy_gpus.assign(out_.cluster.teams.size(), 0);
    for (const auto& [team, busy] : team_busy_) smp.team_busy_gpus[team_index_[team]] = busy;
    if (!out_.samples.empty() && out_.samples.back().t == now) out_.samples.back() = std::move(smp);
    else out_.samples.push_back(std::move(smp));
  }

  Result<ReplayOutcome> finish() {
    for (size_t i : std::vector<size_t>(running_)) close_run(i, out_.end_s);
    for (size_t i = 0; i < trace_.jobs.size(); ++i) {
      JobRecord& rec = records_[i];
      const TraceJob& tj = trace_.jobs[i];
      const Tracked& t = tracked_[i];
      rec.id = tj.id;
      rec.team = tj.team;
      rec.gpus = tj.gpus;
      rec.submit_s = tj.submit_s;
      if (!t.id.valid()) continue;
      const Job& j = s_.jobs[t.id.index()];
      rec.preemptions = j.preemptions;
      rec.restarts = j.restarts;
      int64_t kept = j.state == JobState::kSucceeded ? t.original_s : std::min(t.original_s, j.work_done_s);
      rec.useful_gpu_seconds = std::min(rec.total_gpu_seconds_held, kept * t.held);
    }
    out_.jobs = std::move(records_);
    return std::move(out_);
  }

  const Scenario& sc_;
  const Trace& trace_;
  const ReplayOptions& o_;
  ClusterState s_;
  FitCache fits_;  // what the passes on s_ remember of job shapes (core/placement/fit_cache.h)
  TraceJobShape shape_;
  FailureDraws draws_;
  std::priority_queue<NodeEvent, std::vector<NodeEvent>, std::greater<>> node_events_;
  uint64_t seq_ = 0;
  std::vector<Tracked> tracked_;
  int holder_rec_ = -1;             // the trace job that held the last pass's backfill reservation (-1: none)
  int64_t holding_planned_s_ = -1;  // the start planned when it began to hold it
  std::vector<int> record_of_;  // JobId index -> trace index, -1 for jobs of the cluster file's events
  std::vector<size_t> running_;  // trace indices of running jobs
  std::map<std::string, std::string> domain_of_;
  std::map<std::pair<std::string, std::string>, int64_t> domain_nodes_;  // (domain, instance type) -> nodes
  std::map<std::string, int64_t> largest_domain_;                        // instance type -> most nodes in one domain
  std::map<uint32_t, size_t> team_index_;
  std::map<uint32_t, int64_t> team_busy_;
  int64_t busy_ = 0;
  int64_t waiting_ = 0;
  bool any_elastic_ = false;
  std::vector<JobRecord> records_ = std::vector<JobRecord>(trace_.jobs.size());
  ReplayOutcome out_;
};

}  // namespace

Result<ReplayOutcome> run_replay(const Scenario& cluster, const Trace& trace, const ReplayOptions& options) {
  if (cluster.nodes.empty()) return Error::invalid("the cluster file has no nodes (cluster.nodes)");
  if (cluster.teams.empty()) return Error::invalid("the cluster file has no teams");
  auto s = cluster_from_scenario(cluster);
  if (!s) return s.error();
  auto shape = trace_job_shape(*s);
  if (!shape) return shape.error();
  Replay r(cluster, trace, options, std::move(*s), std::move(*shape));
  return r.run();
}

}  // namespace allot::sim
