#include "core/scheduler.h"

#include <algorithm>
#include <map>

#include "core/admission.h"
#include "core/class_memo.h"
#include "core/preemption.h"
#include "core/quota.h"

namespace allot {
namespace {

class Loop {
 public:
  Loop(ClusterState& s, Time now, const ScheduleOptions& o) : s_(s), now_(now), options_(o), pristine_(pristine_room(s)) {}

  ScheduleResult run() {
    pass_.resize(s_.jobs.size());
    collect_waiting();
    free_.reset(s_, s_.room);
    // Each step admits one job or ends the loop, and a job is preempted only by one that outranks it or
    // reclaims quota, so the loop ends; the bound only guards against a bug.
    const int64_t bound = options_.max_steps > 0 ? options_.max_steps : 8 * static_cast<int64_t>(s_.jobs.size()) + 64;
    if (s_.policy.strict_fifo) {
      ++result_.steps;
      admit_strict_fifo();
    }
    bool fixed_point = s_.policy.strict_fifo;
    while (!fixed_point && result_.steps < bound) {
      step_starts_[result_.steps % kStepsNamed] = result_.decisions.size();
      ++result_.steps;
      if (admit_in_order(BorrowMode::kWithinNominalOnly)) continue;
      if (s_.policy.preemption && preempt_in_order(true)) continue;
      if (admit_borrowers()) continue;
      if (s_.policy.preemption && preempt_in_order(false)) continue;
      fixed_point = true;
    }
    if (!fixed_point) note_bound_hit();
    give_reasons();
    result_.next_wakeup = wakeup();
    return std::move(result_);
  }

 private:
  // The pass stopped at its bound: name the jobs of the decisions of its last steps, where a cycle shows.
  void note_bound_hit() {
    StepBoundHit hit;
    hit.steps = result_.steps;
    const int named_steps = std::min(result_.steps, kStepsNamed);
    const size_t from = step_starts_[(result_.steps - named_steps) % kStepsNamed];
    std::string names;
    auto name = [&](JobId id) {
      if (!id.valid() || std::find(hit.jobs.begin(), hit.jobs.end(), id) != hit.jobs.end()) return;
      hit.jobs.push_back(id);
      if (hit.jobs.size() <= kJobsNamed) names += (names.empty() ? "" : ", ") + s_.jobs[id.index()].spec.name;
    };
    for (size_t i = from; i < result_.decisions.size(); ++i) {
      name(result_.decisions[i].job);
      name(result_.decisions[i].preemptor);
    }
    if (hit.jobs.size() > kJobsNamed) names += ", ... (" + std::to_string(hit.jobs.size()) + " jobs)";
    hit.message = "scheduler pass stopped at its bound of " + std::to_string(hit.steps) +
                  " steps before reaching a fixed point (a cycle of decisions, which is a bug); jobs of the last " +
                  std::to_string(named_steps) + " steps: " + (names.empty() ? "none" : names);
    result_.bound_hit = std::move(hit);
  }

  bool ranks_by_priority() const { return s_.policy.task_prioritization == TaskPrioritization::kTaskRanking; }

  bool queue_before(const Job& a, const Job& b) const {
    if (ranks_by_priority() && a.priority != b.priority) return a.priority > b.priority;
    return a.arrival < b.arrival;
  }

  void collect_waiting() {
    waiting_.assign(s_.waiting_jobs.begin(), s_.waiting_jobs.end());
    for (JobId id : waiting_) join(id);
    sort_waiting();
  }

  // A job enters the pass's queue: its record gets what the phases read of it.
  void join(JobId id) {
    const Job& j = s_.jobs[id.index()];
    PassJob& p = pass_[id.index()];
    p.team = j.team.value;
    p.priority = j.priority;
    p.arrival = j.arrival;
    p.admission_class = memo_.admission_class(j);
    p.preemption_class = memo_.preemption_class(j);
    p.waiting = true;
  }

  // Queue order, on keys copied out of the jobs: sorting tens of thousands of IDs by reaching into each Job
  // costs a cache miss per comparison.
  void sort_waiting() {
    struct Entry {
      int priority;
      uint64_t arrival;
      JobId id;
    };
    std::vector<Entry> keys;
    keys.reserve(waiting_.size());
    const bool by_priority = ranks_by_priority();
    for (JobId id : waiting_) {
      const PassJob& p = pass_[id.index()];
      keys.push_back({by_priority ? p.priority : 0, p.arrival, id});
    }
    std::sort(keys.begin(), keys.end(), [](const Entry& a, const Entry& b) {
      return a.priority != b.priority ? a.priority > b.priority : a.arrival < b.arrival;
    });
    for (size_t i = 0; i < keys.size(); ++i) waiting_[i] = keys[i].id;
  }

  // Every job still waiting says what blocks it: the last reason a phase gave, then why preemption could not
  // help (unless it never fits: then preemption is beside the point). Jobs share the pooled texts, so equal
  // reasons are joined once. The state applies them (explain_waiting).
  void give_reasons() {
    std::map<std::pair<const PooledReason*, const PooledReason*>, const PooledReason*> joined;
    result_.waiting.reserve(waiting_.size());
    for (JobId id : waiting_) {
      const PassJob& p = pass_[id.index()];
      const PooledReason* why = p.why;
      if (!p.waiting || !why || why->text.str().empty()) continue;
      const PooledReason* preempt_why = p.preempt_why;
      if (preempt_why && !preempt_why->text.str().empty() && why->code != ReasonCode::kNeverFits) {
        const PooledReason*& both = joined[{why, preempt_why}];
        if (!both) both = texts_.add(Explanation{why->code, why->feasible, why->text.str() + "; " + preempt_why->text.str()});
        why = both;
      }
      result_.waiting.push_back(WaitingReason{id, why->code, why->feasible, why->text});
    }
  }

  bool starving(const Job& j) const {
    return s_.policy.starvation_threshold_s > 0 && now_ - j.waiting_since >= s_.policy.starvation_threshold_s;
  }

  // A job that waits past the threshold reserves the instance types it could use: jobs after it in this step
  // may not take capacity there.
  void maybe_reserve(const Job& j, const AdmissionAttempt& a) {
    if (!starving(j) || a.never() || !a.quota_ok) return;
    for (TypeId t : candidate_types(s_, j)) {
      auto it = reserved_.find(t);
      if (it == reserved_.end() || !is_waiting(s_.jobs[it->second.index()].state) ||
          queue_before(j, s_.jobs[it->second.index()]))
        reserved_[t] = j.id;
    }
  }

  // The starving job, still waiting and ahead of `j` in the queue, that reserved a type this admission uses.
  std::optional<JobId> reserved_by(const AdmissionAttempt& a, const Job& j) const {
    for (const auto& ps : a.placement.pod_sets) {
      auto it = reserved_.find(ps.type);
      if (it == reserved_.end()) continue;
      const Job& holder = s_.jobs[it->second.index()];
      if (is_waiting(holder.state) && holder.id != j.id && queue_before(holder, j)) return it->second;
    }
    return std::nullopt;
  }

  const PooledReason* reserved_reason(const AdmissionAttempt& a, JobId holder) {
    return texts_.add(explain(ReasonCode::kReserved, "waiting: capacity of " + s_.catalog.at(a.type).name + " is reserved for job " +
                      s_.jobs[holder.index()].spec.name + ", which has waited past the starvation threshold"));
  }

  std::string admit_reason(const Job& j, const AdmissionAttempt& a, const std::string& extra) const {
    const Team& t = s_.teams[j.team.index()];
    std::string nodes;
    int shown = 0;
    auto ids = a.placement.nodes();
    for (NodeId n : ids) {
      if (shown++ == 8) {
        nodes += ", ... (" + std::to_string(ids.size()) + " nodes)";
        break;
      }
      nodes += (nodes.empty() ? "" : ", ") + s_.nodes[n.index()].name;
    }
    std::string out = "admitted on " + nodes;
    if (a.borrowing) {
      std::string what;
      for (const auto& ps : a.placement.pod_sets) {
        Resources b = borrowed(s_, s_.usage, j.team, ps.type);
        what = format_resources(b) + " of " + s_.catalog.at(ps.type).name;
      }
      out += "; team " + t.spec.name + " borrows idle quota (now " + what + " above its nominal quota)";
    } else {
      out += " within team " + t.spec.name + "'s nominal quota";
    }
    return out + extra;
  }

  void admit(const Job& j, const AdmissionAttempt& a, const std::string& extra) {
    Decision d;
    d.kind = Decision::Kind::kAdmit;
    d.job = j.id;
    d.placement = a.placement;
    d.borrowing = a.borrowing;
    // The reason names the borrowed amount after admission, so apply first and describe after.
    auto st = admit_job(s_, j.id, a.placement, a.borrowing, now_, "");
    (void)st;  // the job is waiting (checked by callers) and the placement came from the same state
    ++epoch_;
    free_.took(s_, s_.room, j, a.placement);
    d.reason = admit_reason(j, a, extra);
    Job& mj = s_.jobs[j.id.index()];
    mj.reason = d.reason;
    mj.history.back().reason = d.reason;
    pass_[j.id.index()].why = nullptr;
    pass_[j.id.index()].waiting = false;
    result_.decisions.push_back(std::move(d));
  }

  // try_admit on the live state, answered from the class memo (class_memo.h) when a job of the same class was
  // tried since the last change. `attempt` points at the memo's entry or at success_, valid until the next call.
  struct Tried {
    const AdmissionAttempt* attempt;
    const PooledReason* reason;  // pooled; null on success
  };
  Tried attempt(JobId id, BorrowMode mode) {
    ClassMemo::Admission& m = memo_.admission(pass_[id.index()].admission_class, mode);
    if (m.epoch == epoch_) return {&m.failure, m.reason};
    const Job& j = s_.jobs[id.index()];
    AdmissionAttempt a = try_admit(
        s_, s_.room, s_.usage, j,
        AdmitOptions{.mode = mode, .pristine = &pristine_, .free = &free_.free(), .scratch = &scratch_});
    if (a.ok) {
      success_ = std::move(a);
      return {&success_, nullptr};
    }
    m.epoch = epoch_;
    m.reason = texts_.add(a.why);
    m.failure = std::move(a);
    return {&m.failure, m.reason};
  }

  // Phase 1 (and the within-nominal part of every step): admissions without preemption, in queue order.
  bool admit_in_order(BorrowMode mode) {
    bool any = false;
    for (JobId id : waiting_) {
      PassJob& p = pass_[id.index()];
      if (!p.waiting || p.blocked) continue;
      const auto [a, reason] = attempt(id, mode);
      if (a->never()) p.never = true;
      const Job& j = s_.jobs[id.index()];
      if (a->ok) {
        if (auto r = reserved_by(*a, j)) {
          p.why = reserved_reason(*a, *r);
          continue;
        }
        admit(j, *a, "");
        any = true;
        continue;
      }
      // Admissions only take room, so a job that does not fit now will not fit later in this step.
      p.blocked = true;
      if (mode == BorrowMode::kWithinNominalOnly && !a->quota_ok && a->why.code == ReasonCode::kNeedsBorrow) continue;
      p.why = reason;
      maybe_reserve(j, *a);
    }
    return any;
  }

  // The strict-FIFO baseline: one line in arrival order, borrowing allowed, no preemption; the first job that
  // cannot run now blocks the rest (a job that can never run is skipped, or the queue would stop for good).
  void admit_strict_fifo() {
    std::vector<JobId> line = waiting_;
    std::stable_sort(line.begin(), line.end(),
                     [&](JobId a, JobId b) { return s_.jobs[a.index()].arrival < s_.jobs[b.index()].arrival; });
    const PooledReason* behind = nullptr;  // the reason of every job after the head
    for (JobId id : line) {
      PassJob& p = pass_[id.index()];
      if (!p.waiting) continue;
      if (behind) {
        p.why = behind;
        continue;
      }
      const auto [a, reason] = attempt(id, BorrowMode::kAllowBorrowing);
      const Job& j = s_.jobs[id.index()];
      if (a->ok) {
        admit(j, *a, "");
        continue;
      }
      p.why = reason;
      if (!a->never()) behind = texts_.add(explain(ReasonCode::kStrictFifo, "waiting: strict FIFO, behind job " + j.spec.name));
    }
  }

  // Phase 3: borrowers in fair-share order (lowest borrowed dominant share per unit of weight first, ties to
  // the higher weight, then to the earlier arrival) or in arrival order.
  bool admit_borrowers() {
    const size_t teams = s_.teams.size();
    std::vector<std::vector<JobId>> queues(teams);
    for (JobId id : waiting_) {
      const PassJob& p = pass_[id.index()];
      if (p.waiting && !p.borrow_blocked) queues[p.team].push_back(id);
    }
    bool any = false;
    std::vector<size_t> pos(teams, 0);
    // Each team's next job that could be admitted, found at admission count `seen`. A head found before the
    // latest admission is checked again when it is chosen: that admission may have taken its room. Heads are
    // not all recomputed after every admission, which cost a placement per team per admission.
    struct Head {
      AdmissionAttempt attempt;
      int seen = 0;
    };
    std::vector<std::optional<Head>> heads(teams);
    size_t head_count = 0;
    // A team's fair-share value changes only when its own usage does, that is when one of its jobs is admitted.
    std::vector<Share> share(teams);
    const bool fair = s_.policy.idle_compute == IdleCompute::kFairShare;
    int admitted = 0;
    auto find_head = [&](size_t team) {
      auto& q = queues[team];
      size_t& p = pos[team];
      if (heads[team]) {
        heads[team].reset();
        --head_count;
      }
      while (p < q.size()) {
        PassJob& pj = pass_[q[p].index()];
        const auto [a, reason] = attempt(q[p], BorrowMode::kAllowBorrowing);
        if (a->never()) pj.never = true;
        const Job& j = s_.jobs[q[p].index()];
        std::optional<JobId> holder = a->ok ? reserved_by(*a, j) : std::nullopt;
        if (a->ok && !holder) {
          heads[team] = Head{*a, admitted};
          ++head_count;
          return;
        }
        pj.borrow_blocked = true;
        if (!a->ok) {
          pj.why = reason;
          maybe_reserve(j, *a);
        } else {
          pj.why = reserved_reason(*a, *holder);
        }
        ++p;
      }
    };
    for (size_t team = 0; team < teams; ++team) {
      if (queues[team].empty()) continue;
      if (fair) share[team] = fair_share_value(s_, s_.usage, TeamId(static_cast<uint32_t>(team)));
      find_head(team);
    }
    auto better = [&](size_t x, size_t y) {
      const Job& jx = s_.jobs[queues[x][pos[x]].index()];
      const Job& jy = s_.jobs[queues[y][pos[y]].index()];
      if (fair) {
        if (!(share[x] == share[y])) return share[x] < share[y];
        int wx = s_.teams[x].spec.fair_share_weight, wy = s_.teams[y].spec.fair_share_weight;
        if (wx != wy) return wx > wy;
      }
      return queue_before(jx, jy);
    };
    while (head_count > 0) {
      size_t team = teams;
      for (size_t t = 0; t < teams; ++t)
        if (heads[t] && (team == teams || better(t, team))) team = t;
      if (heads[team]->seen != admitted) {
        find_head(team);  // stale: the same job is tried again against the room as it is now
        continue;
      }
      const Job& j = s_.jobs[queues[team][pos[team]].index()];
      std::string extra;
      if (fair && head_count > 1)
        extra = "; fair share put team " + s_.teams[team].spec.name + " first among " + std::to_string(head_count) +
                " borrowing teams";
      const AdmissionAttempt a = std::move(heads[team]->attempt);
      heads[team].reset();
      --head_count;
      admit(j, a, extra);
      if (fair) share[team] = fair_share_value(s_, s_.usage, j.team);
      ++admitted;
      ++pos[team];
      any = true;
      find_head(team);
    }
    return any;
  }

  // Would the capacity this job borrows be reclaimed at once by a pending job of another lending team? Such a
  // job fits within its own nominal quota and could be placed once the victims are gone.
  const PooledReason* would_oscillate(const Job& j, const PreemptionPlan& plan) {
    RoomTable room = s_.room;
    UsageTable usage = s_.usage;
    std::vector<JobId> victims;
    for (const auto& v : plan.victims) victims.push_back(v.job);
    release_jobs(s_, victims, room, usage);
    for (JobId id : waiting_) {
      if (!pass_[id.index()].waiting) continue;
      const Job& p = s_.jobs[id.index()];
      if (p.team == j.team || !s_.teams[p.team.index()].lends()) continue;
      AdmissionAttempt a =
          try_admit(s_, room, usage, p, AdmitOptions{.mode = BorrowMode::kWithinNominalOnly, .scratch = &scratch_});
      if (!a.ok) continue;
      return texts_.add(explain(ReasonCode::kOscillation, "waiting: it would borrow capacity that job " + p.spec.name + " of team " +
                        s_.teams[p.team.index()].spec.name + " can reclaim at once within its nominal quota"));
    }
    return nullptr;
  }

  // Phases 2 and 4: admissions that need preemption, in queue order; at most one per step.
  bool preempt_in_order(bool want_within_nominal) {
    const PreemptionHints hints = preemption_hints(s_);
    for (JobId id : waiting_) {
      PassJob& p = pass_[id.index()];
      if (!p.waiting || p.preempt_tried || p.never) continue;
      ClassMemo::Preemption& m = memo_.preemption(p.preemption_class);
      const Job& j = s_.jobs[id.index()];
      // Phase 2 takes the jobs that stay within their team's nominal quota, phase 4 the rest.
      if (m.epoch != epoch_)
        m = ClassMemo::Preemption{.epoch = epoch_, .within_nominal = within_nominal_quota(s_, s_.usage, j)};
      if (m.within_nominal != want_within_nominal) continue;
      p.preempt_tried = true;
      if (m.tried) {
        // A job of the same class found no plan at this epoch: this one would not either. Oscillation is
        // told apart from "no plan" because a later phase rewrites why and preempt_why is joined at the end.
        (m.oscillates ? p.why : p.preempt_why) = m.why_not;
        continue;
      }
      m.tried = true;
      Explanation why_not;
      auto plan = plan_preemption(s_, j, PreemptionQuery{.allow_reclaim = true, .now = now_, .hints = &hints}, why_not);
      if (!plan) {
        p.preempt_why = m.why_not = texts_.add(std::move(why_not));
        continue;
      }
      if (plan->admission.borrowing) {
        if (const PooledReason* osc = would_oscillate(j, *plan)) {
          m.oscillates = true;
          p.why = m.why_not = osc;
          continue;
        }
      }
      execute(j, *plan);
      return true;
    }
    return false;
  }

  void execute(const Job& j, const PreemptionPlan& plan) {
    const Team& team = s_.teams[j.team.index()];
    std::string names;
    for (const auto& v : plan.victims) {
      const Job& victim = s_.jobs[v.job.index()];
      const Team& vt = s_.teams[victim.team.index()];
      std::string reason =
          v.reclaim ? "preempted (reclaim): team " + team.spec.name + " takes back its lent quota for job " + j.spec.name +
                          "; team " + vt.spec.name + " was above its nominal quota"
                    : "preempted by job " + j.spec.name + " of the same team (priority " +
                          (j.spec.priority.empty() ? "none" : j.spec.priority) + ", weight " + std::to_string(j.priority) +
                          " over " + (victim.spec.priority.empty() ? "none" : victim.spec.priority) + ", weight " +
                          std::to_string(victim.priority) + ")";
      Decision d;
      d.kind = Decision::Kind::kPreempt;
      d.job = v.job;
      d.preemptor = j.id;
      d.reason = reason;
      auto st = preempt_job(s_, v.job, now_, reason);
      (void)st;  // victims are running jobs of this same state
      ++epoch_;
      result_.decisions.push_back(std::move(d));
      names += (names.empty() ? "" : ", ") + victim.spec.name;
      // The victim waits again: it goes back into consideration with everything else.
      join(v.job);
      if (std::find(waiting_.begin(), waiting_.end(), v.job) == waiting_.end()) {
        waiting_.push_back(v.job);
        sort_waiting();
      }
    }
    free_.reset(s_, s_.room);  // the victims' accelerators are free again
    admit(j, plan.admission, "; after preempting " + names);
    // Room was released: every earlier "does not fit" may have changed.
    for (PassJob& p : pass_) p.blocked = p.borrow_blocked = p.preempt_tried = false;
  }

  std::optional<Time> wakeup() const {
    std::optional<Time> t;
    auto consider = [&](Time x) {
      if (x > now_ && (!t || x < *t)) t = x;
    };
    bool anyone_waiting = false;
    for (JobId id : waiting_) anyone_waiting |= pass_[id.index()].waiting;
    if (!anyone_waiting) return t;
    if (s_.policy.min_runtime_s > 0)
      for (JobId id : s_.running_jobs) consider(s_.jobs[id.index()].started_at + s_.policy.min_runtime_s);
    if (s_.policy.starvation_threshold_s > 0)
      for (JobId id : s_.waiting_jobs) consider(s_.jobs[id.index()].waiting_since + s_.policy.starvation_threshold_s);
    return t;
  }

  ClusterState& s_;
  Time now_;
  ScheduleOptions options_;
  // Where each of the last kStepsNamed steps began in result_.decisions (a ring indexed by step number), so a
  // pass that hits its bound can name the jobs of its last steps.
  static constexpr int kStepsNamed = 8;
  static constexpr size_t kJobsNamed = 20;
  size_t step_starts_[kStepsNamed] = {};
  RoomTable pristine_;
  FreeIndex free_;  // of s_.room, kept by admit() and execute()
  std::vector<JobId> waiting_;
  // What the pass keeps of each job, indexed by JobId: one compact record, so that the phases walking the
  // whole queue read it rather than the Job, whose fields lie far apart in memory.
  struct PassJob {
    uint64_t arrival = 0;
    int priority = 0;
    uint32_t team = 0;
    uint32_t admission_class = 0, preemption_class = 0;  // class_memo.h
    bool waiting = false;  // in the queue and not admitted: kept by join() and admit()
    bool blocked = false, borrow_blocked = false, preempt_tried = false, never = false;
    // Pooled in texts_: what the latest phase said, and why preemption could not help (kept apart because
    // later phases rewrite `why`; give_reasons joins them).
    const PooledReason* why = nullptr;
    const PooledReason* preempt_why = nullptr;
  };
  std::vector<PassJob> pass_;
  TextPool texts_;
  std::map<TypeId, JobId> reserved_;
  uint64_t epoch_ = 0;  // changes (admissions, preemptions) this pass has made to the state
  ClassMemo memo_;
  AdmissionAttempt success_;  // attempt()'s answer when the job fits
  PlacementScratch scratch_;
  ScheduleResult result_;
};

}  // namespace

ScheduleResult schedule(ClusterState& state, Time now, const ScheduleOptions& options) {
  ScheduleResult r = Loop(state, now, options).run();
  explain_waiting(state, r.waiting);
  return r;
}

}  // namespace allot
