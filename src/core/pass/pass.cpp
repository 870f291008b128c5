#include "core/pass/pass.h"

#include <algorithm>
#include <unordered_map>

#include "core/model/dependency.h"
#include "core/model/overloaded.h"
#include "core/quota/quota.h"
#include "core/lifecycle/start_timeout.h"
#include "core/lifecycle/time_limit.h"

namespace allot {

Pass::Pass(ClusterState& state, Time t, const ScheduleOptions& o)
    : s(state), now(t), options(o), order(state), pristine(pristine_room(state)), fits(o.fit_cache ? *o.fit_cache : own_fits_),
      pool(pool_totals(state, state.usage)), usage_changes_(state.teams.size(), 0) {
  live.track(state, &state.room);
  scratch.live = &live;
  locality_waits_ = state.policy.locality_wait_s > 0;
  for (const PriorityClassSpec& c : state.policy.priority_classes) locality_waits_ |= c.locality_wait_s.value_or(0) > 0;
  for (const Team& t : state.teams) user_limits_ |= !t.user_limits.empty();
  if (user_limits_) tally_ = UserTally::count(state);
  arrays_ = ArrayThrottle::count(state);
  user_closed_.outcome = Refusal::kUser;
  user_closed_.why = explain(ReasonCode::kUserLimit, "waiting: its user is at a per-user limit");
}

void Pass::room_changes(const Job& j, const Placement& p) {
  // Exclusive domains open or close every node under them, not only the placement's: start afresh then.
  for (const PodSet& ps : j.pod_sets)
    if (ps.topology.exclusive_level >= 0) return live.changed_all();
  live.changed(p);
}

namespace {

std::vector<TypeId> types_of(const Placement& p, std::vector<TypeId> types = {}) {
  for (const auto& ps : p.pod_sets)
    if (std::find(types.begin(), types.end(), ps.type) == types.end()) types.push_back(ps.type);
  return types;
}

}  // namespace

void Pass::usage_leaves(TeamId team, const std::vector<TypeId>& types) { pool_share_out(pool, s, s.usage, team, types); }

void Pass::usage_returns(TeamId team, const std::vector<TypeId>& types) {
  pool_share_in(pool, s, s.usage, team, types);
  ++usage_changes_[team.index()];
}

const PreemptionHints& Pass::hints() {
  if (hints_epoch_ != epoch) {
    hints_ = preemption_hints(s);
    hints_epoch_ = epoch;
  }
  return hints_;
}

void Pass::collect_waiting() {
  // A held or backing-off job is passed over (start_timeout.h, passed_over), and so is one whose dependencies
  // wait (dependency.h): it gets its reason here and does not enter the queue, so it blocks no one (strict FIFO,
  // reservations). One whose dependency can never hold is returned to be ended, held or not.
  waiting.clear();
  dependents_.clear();
  throttled_.clear();
  backoff_ends_ = std::nullopt;
  for (JobId id : s.waiting_jobs) {
    const Job& j = job(id);
    DependencyVerdict deps;
    if (j.depends) {
      deps = judge_dependencies(s, j);
      if (deps.state == DependencyState::kNever) {
        result.dependency_ends.push_back(DependencyEnd{id, deps.which});
        continue;
      }
    }
    if (passed_over(j, now)) {
      if (!j.held && !j.spec.multicluster && (!backoff_ends_ || j.backoff_until < *backoff_ends_)) backoff_ends_ = j.backoff_until;
    } else if (deps.state == DependencyState::kWaits) {
      dependents_.push_back(id);  // its reason at the end of the pass (give_reasons), naming states as they are then
    } else if (j.array >= 0) {
      arrays_.offer(j);  // the array's throttle (array.h) sorts its tasks out below
    } else if (user_limits_ && user_gate(id).closed) {
      hold_for_user(id);  // like dependents_: its reason at the end of the pass
    } else {
      waiting.push_back(id);
    }
  }
  if (arrays_.any()) {
    // Tasks within their arrays' parallelism go on as any job would; the rest are passed over, their reason at the
    // end of the pass (like dependents_).
    std::vector<JobId> enter;
    arrays_.settle(s, enter, throttled_);
    for (JobId id : enter) {
      if (user_limits_ && user_gate(id).closed) hold_for_user(id);
      else waiting.push_back(id);
    }
  }
  for (JobId id : waiting) join(id);
  if (user_limits_)
    for (JobId id : waiting) note_queued(id);
  sort_waiting();
}

void Pass::hold_for_user(JobId id) {
  PassJob& r = rec(id);
  if (r.user_held) return;
  r.user_held = true;
  user_held_.push_back(id);
}

void Pass::note_queued(JobId id) {
  const Job& j = job(id);
  if (limits_of(s.teams[j.team.index()], j.spec.user)) queued_by_user_[UserTally::key(j.team, j.spec.user)].push_back(id);
}

void Pass::enter_or_hold(JobId id) {
  if (user_limits_ && user_gate(id).closed) {
    hold_for_user(id);
    return;
  }
  join(id);
  if (std::find(waiting.begin(), waiting.end(), id) == waiting.end()) waiting.push_back(id);
  if (user_limits_) note_queued(id);
}

void Pass::user_started(const Job& j) {
  if (!limits_of(s.teams[j.team.index()], j.spec.user)) return;
  tally_.add(s, j);
  auto it = queued_by_user_.find(UserTally::key(j.team, j.spec.user));
  if (it == queued_by_user_.end()) return;
  std::vector<JobId>& queued = it->second;
  for (size_t i = 0; i < queued.size();) {
    const JobId w = queued[i];
    PassJob& r = rec(w);
    if (!r.waiting) {  // admitted, or held already: no longer in the queue
      queued[i] = queued.back();
      queued.pop_back();
      continue;
    }
    ++i;
    if (!user_gate(w).closed) continue;
    r.waiting = false;  // out of the queue: every phase passes it over, give_reasons names its limit
    hold_for_user(w);
  }
}

void Pass::user_stopped(const Job& j) {
  if (!limits_of(s.teams[j.team.index()], j.spec.user)) return;
  bool any = false;
  for (size_t i = 0; i < user_held_.size();) {
    const JobId id = user_held_[i];
    const Job& other = job(id);
    if (other.team != j.team || other.spec.user != j.spec.user || !is_waiting(other.state) || user_gate(id).closed) {
      ++i;
      continue;
    }
    user_held_[i] = user_held_.back();
    user_held_.pop_back();
    rec(id).user_held = false;
    join(id);
    if (std::find(waiting.begin(), waiting.end(), id) == waiting.end()) waiting.push_back(id);
    note_queued(id);
    any = true;
  }
  if (any) sort_waiting();
}

bool Pass::rejoin_dependents() {
  bool any = false;
  for (size_t i = 0; i < dependents_.size();) {
    const JobId id = dependents_[i];
    if (judge_dependencies(s, job(id)).state != DependencyState::kHolds) {
      ++i;
      continue;
    }
    dependents_[i] = dependents_.back();
    dependents_.pop_back();
    // A task of an array waits for the next pass, whose throttle counts it with its array's other tasks.
    if (job(id).array >= 0) {
      throttled_.push_back(id);
      continue;
    }
    enter_or_hold(id);  // its user may be at a limit
    any = true;
  }
  if (any) sort_waiting();
  return any;
}

void Pass::join(JobId id) {
  const Job& j = job(id);
  PassJob& p = rec(id);
  p.team = j.team.value;
  p.priority = j.priority;
  p.arrival = j.arrival;
  // core/model/reservations.h: a reservation for one user, or one the job names, makes jobs alike in all else differ.
  const bool alone = !j.spec.reservation.empty() || user_reservation_for(s, j.team);
  const ClassMemo::Classes c = memo.classes_of(j, alone);
  p.admission_class = c.admission;
  p.preemption_class = c.preemption;
  p.waiting = true;
}

bool Pass::queue_before(const Job& a, const Job& b) const { return order.jobs_before(a, b); }

void Pass::sort_waiting() {
  // join() copied each job's priority and arrival into its record, which the sort reads instead of the Job.
  order.sort_by(waiting, [&](JobId id) {
    const PassJob& p = rec(id);
    return std::pair<int, uint64_t>{p.priority, p.arrival};
  });
}

Pass::Tried Pass::attempt(JobId id, BorrowMode mode) {
  // A job whose user's gate closed during this pass (a phase's list made before) leaves the queue here; one whose
  // gate is open on some types only is tried on those, apart from the class memo (its answer is the user's).
  std::vector<TypeId> only_types;
  if (user_limits_) {
    UserGate g = user_gate(id);
    if (g.closed) {
      rec(id).waiting = false;
      hold_for_user(id);
      return {&user_closed_, texts.add(user_closed_.why)};
    }
    only_types = std::move(g.only_types);
  }
  const bool restricted = !only_types.empty();
  ClassMemo::Admission& m = memo.admission(rec(id).admission_class, mode);
  if (!restricted && m.epoch == epoch) return {&m.failure, m.reason};
  AdmissionAttempt a = try_admit(s, s.room, s.usage, job(id),
                                 AdmitOptions{.mode = mode, .pristine = &pristine, .fit_cache = &fits, .only_types = restricted ? &only_types : nullptr,
                                              .free = &free.free(), .scratch = &scratch, .pool = &pool});
  if (a.ok()) {
    // Not kept in the class memo: whether a job still waits for locality depends on when it began waiting.
    if (locality_waits_) {
      rec(id).waits_for_locality = false;
      if (std::optional<Explanation> why = held_for_locality(job(id), a)) {
        held_ = AdmissionAttempt{};
        held_.outcome = Refusal::kLocality;
        held_.why = std::move(*why);
        return {&held_, texts.add(held_.why)};
      }
    }
    success_ = std::move(a);
    return {&success_, nullptr};
  }
  if (restricted) {
    restricted_ = std::move(a);
    return {&restricted_, texts.add(restricted_.why)};
  }
  m.epoch = epoch;
  m.reason = texts.add(a.why);
  m.failure = std::move(a);
  return {&m.failure, m.reason};
}

std::string placed_nodes_text(const ClusterState& s, const Placement& p) {
  std::string nodes;
  int shown = 0;
  auto ids = p.nodes();
  for (NodeId n : ids) {
    if (shown++ == 8) {
      nodes += ", ... (" + std::to_string(ids.size()) + " nodes)";
      break;
    }
    nodes += (nodes.empty() ? "" : ", ") + s.nodes[n.index()].name;
  }
  return nodes;
}

// The reason names what the team borrows once the job runs: its usage after admission, worked out before the
// decision is applied so that the decision carries its reason into the state.
RefText Pass::admit_reason(const Job& j, const AdmissionAttempt& a, const RefText& extra) const {
  const Team& t = s.teams[j.team.index()];
  const std::string nodes = placed_nodes_text(s, a.placement);
  std::string out = "admitted on " + nodes;
  if (j.elastic()) {
    const size_t e = static_cast<size_t>(j.elastic_pod_set);
    out += " at " + std::to_string(a.placement.pod_sets[e].replicas.size()) + " of " + std::to_string(j.max_size()) +
           " replicas (elastic, min " + std::to_string(j.min_size()) + ")";
  }
  if (a.borrowing()) {
    std::vector<Resources> after = s.usage[j.team.index()];
    for (const auto& ps : a.placement.pod_sets)
      after[ps.type.index()] += ps.per_replica * static_cast<int64_t>(ps.replicas.size());
    std::string what;
    for (const auto& ps : a.placement.pod_sets) {
      Resources b = max0(t.counted(ps.type, after[ps.type.index()]) - t.nominal[ps.type.index()]);
      what = format_resources(b) + " of " + s.catalog.at(ps.type).name;
    }
    out += "; team " + t.spec.name + " borrows idle quota (now " + what + " above its nominal quota)";
  } else {
    out += " within team " + t.spec.name + "'s nominal quota";
  }
  return out + extra;
}

void Pass::admit(const Job& j, const AdmissionAttempt& a, const RefText& extra) {
  const JobId id = j.id;
  AdmitDecision d{.job = id, .placement = a.placement, .borrowing = a.borrowing(), .reason = admit_reason(j, a, extra)};
  d.backfilled = behind_holder(j);
  if (backfill && backfill->holder != id) count_at(*backfill, j, d.placement, now, 1);
  room_changes(j, d.placement);
  const std::vector<TypeId> types = types_of(d.placement);
  usage_leaves(j.team, types);
  auto st = apply_decision(s, d, now);
  (void)st;  // the job is waiting (checked by callers) and the placement came from the same state
  usage_returns(j.team, types);
  ++epoch;
  free.took(s, s.room, job(id), d.placement);
  rec(id).why = nullptr;
  rec(id).waiting = false;
  if (d.borrowing) borrowed_since_plans_ = true;
  result.decisions.push_back(std::move(d));
  if (user_limits_) user_started(job(id));
}

bool Pass::plan_again() {
  if (!borrowed_since_plans_) return false;
  borrowed_since_plans_ = false;
  bool any = false;
  for (JobId w : waiting) {
    PassJob& r = rec(w);
    any |= r.waiting && r.preempt_tried;
    r.preempt_tried = false;
  }
  return any;
}

void Pass::preempt(PreemptDecision d) {
  const JobId victim = d.job;
  if (user_limits_) tally_.remove(s, job(victim));  // before the placement goes
  if (backfill) count_at(*backfill, job(victim), job(victim).placement, now, -1);
  room_changes(job(victim), job(victim).placement);
  const TeamId team = job(victim).team;
  const std::vector<TypeId> types = types_of(job(victim).placement);
  usage_leaves(team, types);
  auto st = apply_decision(s, d, now);
  (void)st;  // victims are running jobs of this same state
  usage_returns(team, types);
  ++epoch;
  result.decisions.push_back(std::move(d));
  // The victim waits again: it goes back into consideration with everything else (unless its user is at a limit).
  if (!user_limits_) {
    join(victim);
    if (std::find(waiting.begin(), waiting.end(), victim) == waiting.end()) {
      waiting.push_back(victim);
      sort_waiting();
    }
    return;
  }
  user_stopped(job(victim));
  enter_or_hold(victim);
  sort_waiting();
}

void Pass::resize(ResizeDecision d) {
  live.changed_all();  // the job gives back its old placement and takes the new one
  if (user_limits_) tally_.remove(s, job(d.job));
  if (backfill) count_at(*backfill, job(d.job), job(d.job).placement, now, -1);
  const TeamId team = job(d.job).team;
  const std::vector<TypeId> types = types_of(d.placement, types_of(job(d.job).placement));
  usage_leaves(team, types);
  auto st = apply_decision(s, d, now);
  usage_returns(team, types);
  if (user_limits_) tally_.add(s, job(d.job));
  if (backfill) count_at(*backfill, job(d.job), job(d.job).placement, now, 1);
  (void)st;  // a running elastic job of this same state, placed against it
  ++epoch;
  // A resize gives back nodes as well as taking them, which the index cannot follow node by node.
  free.reset(s, s.room);
  result.decisions.push_back(std::move(d));
}

std::optional<Explanation> Pass::held_for_locality(const Job& j, const AdmissionAttempt& a) {
  if (!locality_waits_) return std::nullopt;
  auto hold = locality_hold(s, pristine, j, a, now, j.locality_wait_from.value_or(now), one_domain_);
  if (!hold) return std::nullopt;
  PassJob& r = rec(j.id);
  r.waits_for_locality = true;
  if (!j.locality_wait_from && !r.locality_wait_began) {
    r.locality_wait_began = true;
    result.locality_waits.push_back(LocalityWaitStart{j.id, now});
  }
  return std::move(hold->why);
}

bool Pass::would_hold_for_locality(const Job& j, const AdmissionAttempt& a) {
  return locality_waits_ && locality_hold(s, pristine, j, a, now, j.locality_wait_from.value_or(now), one_domain_);
}

void Pass::keep_locality_waits() {
  auto& w = result.locality_waits;
  w.erase(std::remove_if(w.begin(), w.end(), [&](const LocalityWaitStart& x) { return !pass[x.job.index()].waiting; }),
          w.end());
}

bool Pass::starving(const Job& j) const {
  return s.policy.starvation_threshold_s > 0 && now - j.waiting_since >= s.policy.starvation_threshold_s;
}

// Whether holding capacity for a job with attempt `a` could let it run: quota allows it and only placement failed
// (a job that fits is admitted, not reserved for; callers pass failures only).
static bool placement_stands_in_way(const AdmissionAttempt& a) {
  return std::visit(Overloaded{[](const Admitted&) { return true; },
                               [](Refusal r) {
                                 switch (r) {
                                   case Refusal::kPlacement: return true;
                                   case Refusal::kQuota:
                                   case Refusal::kPlan:
                                   case Refusal::kReservation:
                                   case Refusal::kLocality:
                                   case Refusal::kUser: return false;
                                 }
                                 return false;  // not reached
                               }},
                    a.outcome);
}

// Whether a backfill reservation could help a job with attempt `a`: not admitted, and what it lacks is quota or
// room (whose holders' time limits say when they free it), not its plan, reservation, locality or user limit.
static bool backfill_could_help(const AdmissionAttempt& a) {
  return std::visit(Overloaded{[](const Admitted&) { return false; },
                               [](Refusal r) {
                                 switch (r) {
                                   case Refusal::kQuota:
                                   case Refusal::kPlacement: return true;
                                   case Refusal::kPlan:
                                   case Refusal::kReservation:
                                   case Refusal::kLocality:
                                   case Refusal::kUser: return false;
                                 }
                                 return false;  // not reached
                               }},
                    a.outcome);
}

void Pass::maybe_reserve(const Job& j, const AdmissionAttempt& a) {
  if (!starving(j) || a.never() || !placement_stands_in_way(a)) return;
  for (TypeId t : candidate_types(s, j)) {
    auto it = reserved.find(t);
    if (it == reserved.end() || !is_waiting(job(it->second).state) || queue_before(j, job(it->second)))
      reserved[t] = j.id;
  }
}

std::optional<JobId> Pass::reserved_by(const AdmissionAttempt& a, const Job& j) const {
  for (const auto& ps : a.placement.pod_sets) {
    auto it = reserved.find(ps.type);
    if (it == reserved.end()) continue;
    const Job& holder = job(it->second);
    if (is_waiting(holder.state) && holder.id != j.id && queue_before(holder, j)) return it->second;
  }
  return std::nullopt;
}

const PooledReason* Pass::reserved_reason(const AdmissionAttempt& a, JobId holder) {
  return texts.add(explain(ReasonCode::kReserved, "waiting: capacity of " + s.catalog.at(a.type).name +
                                                      " is reserved for " + job_ref(job(holder).spec.name, s.teams[job(holder).team.index()].spec.name) +
                                                      ", which has waited past the starvation threshold"));
}

std::string Pass::backfill_text() const {
  return reserved_nodes_text(s, *backfill) + (backfill->nodes.size() == 1 ? " is" : " are") + " reserved from t=" +
         std::to_string(backfill->at);
}

void Pass::maybe_reserve_backfill(const Job& j, const AdmissionAttempt& a) {
  if (!s.policy.backfill || a.never() || !backfill_could_help(a)) return;
  if (j.priority < s.policy.backfill_min_priority) return;  // below the class that may reserve: it only fills in
  const bool again = backfill_considered_ == j.id;
  if (!again && backfill_considered_.valid() && pass[backfill_considered_.index()].waiting &&
      !queue_before(j, job(backfill_considered_)))
    return;
  if (!again) {
    backfill_considered_ = j.id;
    backfill = plan_reservation(s, j, now);
    ++backfill_version;
  }
  if (backfill)
    rec(j.id).why = texts.add(explain(a.why.code, a.why.text + "; " + backfill_text() + " for it (backfill)", a.why.feasible));
}

bool Pass::behind_holder(const Job& j) const {
  return backfill && backfill->holder != j.id && pass[backfill->holder.index()].waiting && queue_before(job(backfill->holder), j);
}

const PooledReason* Pass::reserved_for_holder(const Job& j, bool quota) {
  const Job& holder = job(backfill->holder);
  const std::optional<int64_t> left = time_left(j, now);
  return texts.add(explain(
      ReasonCode::kReserved,
      "waiting: " + backfill_text() + " for " + job_ref(holder.spec.name, s.teams[holder.team.index()].spec.name) +
          " (backfill), and this job " +
          (left ? "would still run then (its time limit ends at t=" + std::to_string(now + *left) + ")"
                : "has no time limit to show that it ends before then") +
          (quota ? " and take quota that job needs then" : "")));
}

const AdmissionAttempt* Pass::keep_clear(const Job& j, const AdmissionAttempt& a, BorrowMode mode) {
  if (!behind_holder(j)) return &a;
  const AdmissionAttempt* chosen = &a;
  if (!clear_of(*backfill, j, a.placement, now)) {
    const RoomTable off = without_reserved(s.room, *backfill);
    backfilled_ = try_admit(s, off, s.usage, j, AdmitOptions{.mode = mode});
    if (!backfilled_.ok()) {
      rec(j.id).why = reserved_for_holder(j, false);
      return nullptr;
    }
    // Off the reserved nodes it may be spread where the first placement was not: then it waits for locality.
    if (std::optional<Explanation> why = held_for_locality(j, backfilled_)) {
      rec(j.id).why = texts.add(std::move(*why));
      return nullptr;
    }
    chosen = &backfilled_;
  }
  // Off the reserved nodes it may still hold, at the reserved time, quota the holder needs then.
  if (!quota_clear_of(s, *backfill, j, chosen->placement, now)) {
    rec(j.id).why = reserved_for_holder(j, true);
    return nullptr;
  }
  return chosen;
}

// The last reason a phase gave, then why preemption could not help (unless the job never fits: then
// preemption is beside the point). Equal reasons are joined once: a pass over 50,000 waiting jobs meets a few
// thousand pairs, looked up by hash (a tree of pairs cost a cache miss per level for every job), and jobs of
// one class often follow one another, so the last pair is checked first.
void Pass::give_reasons() {
  // Jobs still passed over for their dependencies: what they wait for, as the pass leaves the jobs they name. Jobs
  // of one team naming one job with the same condition (a fan-out) share one text, made once.
  std::unordered_map<uint64_t, SharedText> one_named;
  for (JobId id : dependents_) {
    const Job& j = job(id);
    uint64_t key = UINT64_MAX;
    if (j.after.size() == 1 && j.spec.after.size() == 1)
      key = (uint64_t{j.after[0].value} << 2 | static_cast<uint64_t>(j.spec.after[0].condition)) << 20 | j.team.value;
    if (key != UINT64_MAX && j.team.value < (1u << 20))
      if (auto it = one_named.find(key); it != one_named.end()) {
        result.waiting.push_back(WaitingReason{id, ReasonCode::kDependency, true, it->second});
        continue;
      }
    Explanation e = explain_dependency_wait(s, j);
    SharedText text(std::move(e.text));
    if (key != UINT64_MAX && j.team.value < (1u << 20)) one_named.emplace(key, text);
    result.waiting.push_back(WaitingReason{id, e.code, e.feasible, text});
  }
  // Tasks kept out by their array's throttle: one text per array.
  std::unordered_map<int32_t, SharedText> array_text;
  for (JobId id : throttled_) {
    const Job& j = job(id);
    auto it = array_text.find(j.array);
    if (it == array_text.end()) it = array_text.emplace(j.array, SharedText(ArrayThrottle::why(j).text)).first;
    result.waiting.push_back(WaitingReason{id, ReasonCode::kArrayThrottle, true, it->second});
  }
  // Jobs passed over for their user's limits: which limit, as the pass leaves what the user holds.
  for (JobId id : user_held_) {
    if (pass[id.index()].waiting || !is_waiting(job(id).state)) continue;
    UserGate g = user_gate(id);
    if (g.closed) result.waiting.push_back(WaitingReason{id, g.why.code, g.why.feasible, SharedText(std::move(g.why.text))});
  }
  using Pair = std::pair<const PooledReason*, const PooledReason*>;
  struct PairHash {
    size_t operator()(const Pair& p) const {
      return std::hash<const void*>()(p.first) * 0x9E3779B97F4A7C15ull ^ std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<Pair, const PooledReason*, PairHash> joined;
  Pair last{nullptr, nullptr};
  const PooledReason* last_joined = nullptr;
  result.waiting.reserve(waiting.size());
  for (JobId id : waiting) {
    const PassJob& p = rec(id);
    const PooledReason* why = p.why;
    if (!p.waiting || !why || why->text.str().empty()) continue;
    const PooledReason* preempt_why = p.preempt_why;
    if (preempt_why && !preempt_why->text.str().empty() && why->code != ReasonCode::kNeverFits) {
      const Pair key{why, preempt_why};
      if (key != last) {
        const PooledReason*& both = joined[key];
        if (!both) {
          // Sized once: thousands of these texts, each built by concatenation, cost two or three allocations.
          // A text naming jobs joins with its references (ref_text.h); most name none and take the sized path.
          const RefText &a = why->text.ref_text(), &b = preempt_why->text.ref_text();
          if (!a.refs().empty() || !b.refs().empty() || !a.refs_known() || !b.refs_known()) {
            both = texts.add(Explanation{why->code, why->feasible, a + "; " + b});
          } else {
            std::string text;
            text.reserve(a.str().size() + 2 + b.str().size());
            text.append(a.str()).append("; ").append(b.str());
            both = texts.add(Explanation{why->code, why->feasible, std::move(text)});
          }
        }
        last = key;
        last_joined = both;
      }
      why = last_joined;
    }
    result.waiting.push_back(WaitingReason{id, why->code, why->feasible, why->text});
  }
}

std::optional<Time> Pass::wakeup() const {
  std::optional<Time> t;
  auto consider = [&](Time x) {
    if (x > now && (!t || x < *t)) t = x;
  };
  // Elastic jobs below their max may grow once they have held their size, and the capacity they could grow
  // into has been idle, for the delay.
  const int64_t delay = s.policy.elastic_grow_delay_s;
  std::vector<char> grows(s.catalog.size(), 0);
  bool any_grows = false;
  for (JobId id : s.running_jobs) {
    const Job& j = job(id);
    if (!j.elastic() || j.size() >= j.max_size()) continue;
    consider(j.started_at + delay);
    for (const auto& ps : j.placement.pod_sets) grows[ps.type.index()] = 1;
    any_grows = true;
  }
  if (any_grows)
    for (size_t n = 0; n < s.room.size(); ++n)
      if (s.room[n].usable && grows[s.room[n].type.index()] && s.room[n].free.accelerators > 0)
        consider(s.room_changed_at[n] + delay);
  if (backoff_ends_) consider(*backoff_ends_);  // a job backing off after a start timeout may run again then
  bool anyone_waiting = false;
  for (JobId id : waiting) anyone_waiting |= pass[id.index()].waiting;
  if (!anyone_waiting) return t;
  if (s.policy.min_runtime_s > 0)
    for (JobId id : s.running_jobs) consider(job(id).started_at + s.policy.min_runtime_s);
  // A job waiting for locality runs spread when its wait ends, if no domain had room by then.
  if (locality_waits_)
    for (JobId id : waiting)
      if (pass[id.index()].waiting && pass[id.index()].waits_for_locality)
        consider(job(id).locality_wait_from.value_or(now) + locality_wait_of(s, job(id)));
  if (s.policy.starvation_threshold_s > 0)
    for (JobId id : s.waiting_jobs)
      if (!passed_over(job(id), now) && !waits_for_dependency(s, job(id)))
        consider(job(id).waiting_since + s.policy.starvation_threshold_s);
  return t;
}

void Pass::note_bound_hit() {
  StepBoundHit hit;
  hit.steps = result.steps;
  const int named_steps = std::min(result.steps, kStepsNamed);
  const size_t from = step_starts_[(result.steps - named_steps) % kStepsNamed];
  std::string names;
  auto name = [&](JobId id) {
    if (!id.valid() || std::find(hit.jobs.begin(), hit.jobs.end(), id) != hit.jobs.end()) return;
    hit.jobs.push_back(id);
    if (hit.jobs.size() <= kJobsNamed) names += (names.empty() ? "" : ", ") + job(id).spec.name;
  };
  for (size_t i = from; i < result.decisions.size(); ++i) {
    name(decision_job(result.decisions[i]));
    if (const auto* p = std::get_if<PreemptDecision>(&result.decisions[i])) name(p->preemptor);
  }
  if (hit.jobs.size() > kJobsNamed) names += ", ... (" + std::to_string(hit.jobs.size()) + " jobs)";
  hit.message = "scheduler pass stopped at its bound of " + std::to_string(hit.steps) +
                " steps before reaching a fixed point (a cycle of decisions, which is a bug); jobs of the last " +
                std::to_string(named_steps) + " steps: " + (names.empty() ? "none" : names);
  result.bound_hit = std::move(hit);
}

}  // namespace allot
