#include "core/scheduler.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/admission.h"
#include "core/preemption.h"
#include "core/quota.h"
#include "core/topology_levels.h"

namespace allot {
namespace {

class Loop {
 public:
  Loop(ClusterState& s, Time now) : s_(s), now_(now), pristine_(pristine_room(s)) {}

  ScheduleResult run() {
    collect_waiting();
    free_ = free_accelerators(s_, s_.room);
    // Each step admits one job or ends the loop, and a job is preempted only by one that outranks it or
    // reclaims quota, so the loop ends; the bound only guards against a bug.
    const size_t bound = 8 * s_.jobs.size() + 64;
    if (s_.policy.strict_fifo) {
      ++result_.steps;
      admit_strict_fifo();
    }
    while (!s_.policy.strict_fifo && result_.steps < static_cast<int>(bound)) {
      ++result_.steps;
      if (admit_in_order(BorrowMode::kWithinNominalOnly)) continue;
      if (s_.policy.preemption && preempt_in_order(true)) continue;
      if (admit_borrowers()) continue;
      if (s_.policy.preemption && preempt_in_order(false)) continue;
      break;
    }
    for (JobId id : waiting_) {
      Job& j = s_.jobs[id.index()];
      if (!is_waiting(j.state) || why_[id].empty()) continue;
      if (!preempt_why_[id].empty() && !why_[id].starts_with("never")) why_[id] += "; " + preempt_why_[id];
      // A suspended job keeps saying why it stopped, then why it still waits.
      if (j.state == JobState::kSuspended && !j.history.empty() && j.history.back().to == JobState::kSuspended)
        j.reason = j.history.back().reason + "; waiting: " + why_[id];
      else
        j.reason = std::move(why_[id]);
    }
    result_.next_wakeup = wakeup();
    return std::move(result_);
  }

 private:
  bool ranks_by_priority() const { return s_.policy.task_prioritization == TaskPrioritization::kTaskRanking; }

  bool queue_before(const Job& a, const Job& b) const {
    if (ranks_by_priority() && a.priority != b.priority) return a.priority > b.priority;
    return a.arrival < b.arrival;
  }

  void collect_waiting() {
    waiting_.assign(s_.waiting_jobs.begin(), s_.waiting_jobs.end());
    std::sort(waiting_.begin(), waiting_.end(),
              [&](JobId a, JobId b) { return queue_before(s_.jobs[a.index()], s_.jobs[b.index()]); });
  }

  bool starving(const Job& j) const {
    return s_.policy.starvation_threshold_s > 0 && now_ - j.waiting_since >= s_.policy.starvation_threshold_s;
  }

  // A job that waits past the threshold reserves the instance types it could use: jobs after it in this step
  // may not take capacity there.
  void maybe_reserve(const Job& j, const AdmissionAttempt& a) {
    if (!starving(j) || a.never || !a.quota_ok) return;
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
    free_ = free_accelerators(s_, s_.room);
    d.reason = admit_reason(j, a, extra);
    Job& mj = s_.jobs[j.id.index()];
    mj.reason = d.reason;
    mj.history.back().reason = d.reason;
    why_[j.id].clear();
    result_.decisions.push_back(std::move(d));
  }

  // Phase 1 (and the within-nominal part of every step): admissions without preemption, in queue order.
  bool admit_in_order(BorrowMode mode) {
    bool any = false;
    for (JobId id : waiting_) {
      const Job& j = s_.jobs[id.index()];
      if (!is_waiting(j.state) || blocked_[id]) continue;
      AdmissionAttempt a = try_admit(s_, s_.room, s_.usage, j, mode, &pristine_, nullptr, &free_);
      if (a.never) never_[id] = true;
      if (a.ok) {
        if (auto r = reserved_by(a, j)) {
          why_[id] = "waiting: capacity of " + s_.catalog.at(a.type).name + " is reserved for job " +
                     s_.jobs[r->index()].spec.name + ", which has waited past the starvation threshold";
          continue;
        }
        admit(j, a, "");
        any = true;
        continue;
      }
      // Admissions only take room, so a job that does not fit now will not fit later in this step.
      blocked_[id] = true;
      if (mode == BorrowMode::kWithinNominalOnly && !a.quota_ok && a.reason == "needs to borrow") continue;
      why_[id] = a.reason;
      maybe_reserve(j, a);
    }
    return any;
  }

  // The strict-FIFO baseline: one line in arrival order, borrowing allowed, no preemption; the first job that
  // cannot run now blocks the rest (a job that can never run is skipped, or the queue would stop for good).
  void admit_strict_fifo() {
    std::vector<JobId> line = waiting_;
    std::stable_sort(line.begin(), line.end(),
                     [&](JobId a, JobId b) { return s_.jobs[a.index()].arrival < s_.jobs[b.index()].arrival; });
    const Job* head = nullptr;
    for (JobId id : line) {
      const Job& j = s_.jobs[id.index()];
      if (!is_waiting(j.state)) continue;
      if (head) {
        why_[id] = "waiting: strict FIFO, behind job " + head->spec.name;
        continue;
      }
      AdmissionAttempt a = try_admit(s_, s_.room, s_.usage, j, BorrowMode::kAllowBorrowing, &pristine_, nullptr, &free_);
      if (a.ok) {
        admit(j, a, "");
        continue;
      }
      why_[id] = a.reason;
      if (!a.never) head = &j;
    }
  }

  // Phase 3: borrowers in fair-share order (lowest borrowed dominant share per unit of weight first, ties to
  // the higher weight, then to the earlier arrival) or in arrival order.
  bool admit_borrowers() {
    std::map<TeamId, std::vector<JobId>> queues;
    for (JobId id : waiting_) {
      const Job& j = s_.jobs[id.index()];
      if (is_waiting(j.state) && !borrow_blocked_[id]) queues[j.team].push_back(id);
    }
    bool any = false;
    std::map<TeamId, size_t> pos;
    // Each team's next job that could be admitted, found at admission count `seen`. A head found before the
    // latest admission is checked again when it is chosen: that admission may have taken its room. Heads are
    // not all recomputed after every admission, which cost a placement per team per admission.
    struct Head {
      AdmissionAttempt attempt;
      int seen = 0;
    };
    std::map<TeamId, Head> heads;
    int admitted = 0;
    auto find_head = [&](TeamId team) {
      auto& q = queues[team];
      size_t& p = pos[team];
      while (p < q.size()) {
        const Job& j = s_.jobs[q[p].index()];
        AdmissionAttempt a = try_admit(s_, s_.room, s_.usage, j, BorrowMode::kAllowBorrowing, &pristine_, nullptr, &free_);
        if (a.never) never_[q[p]] = true;
        if (a.ok && !reserved_by(a, j)) {
          heads[team] = Head{std::move(a), admitted};
          return;
        }
        borrow_blocked_[q[p]] = true;
        if (!a.ok) {
          why_[q[p]] = a.reason;
          maybe_reserve(j, a);
        } else {
          why_[q[p]] = "waiting: capacity of " + s_.catalog.at(a.type).name + " is reserved for job " +
                       s_.jobs[reserved_by(a, j)->index()].spec.name + ", which has waited past the starvation threshold";
        }
        ++p;
      }
      heads.erase(team);
    };
    for (auto& [team, q] : queues) find_head(team);
    while (!heads.empty()) {
      auto better = [&](const std::pair<const TeamId, Head>& x, const std::pair<const TeamId, Head>& y) {
        const Job& jx = s_.jobs[queues[x.first][pos[x.first]].index()];
        const Job& jy = s_.jobs[queues[y.first][pos[y.first]].index()];
        if (s_.policy.idle_compute == IdleCompute::kFairShare) {
          Share sx = fair_share_value(s_, s_.usage, x.first), sy = fair_share_value(s_, s_.usage, y.first);
          if (!(sx == sy)) return sx < sy;
          int wx = s_.teams[x.first.index()].spec.fair_share_weight, wy = s_.teams[y.first.index()].spec.fair_share_weight;
          if (wx != wy) return wx > wy;
        }
        return queue_before(jx, jy);
      };
      auto best = std::min_element(heads.begin(), heads.end(), better);
      TeamId team = best->first;
      if (best->second.seen != admitted) {
        find_head(team);  // stale: the same job is tried again against the room as it is now
        continue;
      }
      const Job& j = s_.jobs[queues[team][pos[team]].index()];
      std::string extra;
      if (s_.policy.idle_compute == IdleCompute::kFairShare && heads.size() > 1)
        extra = "; fair share put team " + s_.teams[team.index()].spec.name + " first among " +
                std::to_string(heads.size()) + " borrowing teams";
      AdmissionAttempt a = std::move(best->second.attempt);
      heads.erase(best);
      admit(j, a, extra);
      ++admitted;
      ++pos[team];
      any = true;
      find_head(team);
    }
    return any;
  }

  // Would the capacity this job borrows be reclaimed at once by a pending job of another lending team? Such a
  // job fits within its own nominal quota and could be placed once the victims are gone.
  std::optional<std::string> would_oscillate(const Job& j, const PreemptionPlan& plan) {
    RoomTable room = s_.room;
    UsageTable usage = s_.usage;
    std::vector<JobId> victims;
    for (const auto& v : plan.victims) victims.push_back(v.job);
    release_jobs(s_, victims, room, usage);
    std::set<TeamId> seen;
    for (JobId id : waiting_) {
      const Job& p = s_.jobs[id.index()];
      if (!is_waiting(p.state) || p.team == j.team || !s_.teams[p.team.index()].lends() || seen.count(p.team)) continue;
      AdmissionAttempt a = try_admit(s_, room, usage, p, BorrowMode::kWithinNominalOnly, nullptr);
      if (!a.ok) continue;
      seen.insert(p.team);
      return "waiting: it would borrow capacity that job " + p.spec.name + " of team " +
             s_.teams[p.team.index()].spec.name + " can reclaim at once within its nominal quota";
    }
    return std::nullopt;
  }

  // Phases 2 and 4: admissions that need preemption, in queue order; at most one per step.
  bool preempt_in_order(bool within_nominal) {
    const PreemptionHints hints = preemption_hints(s_);
    for (JobId id : waiting_) {
      const Job& j = s_.jobs[id.index()];
      if (!is_waiting(j.state) || preempt_tried_[id] || never_[id]) continue;
      // Phase 2 takes jobs whose team stays within nominal quota; phase 4 the rest.
      bool nominal = false;
      for (TypeId t : candidate_types(s_, j)) {
        auto req = job_request(s_, j, t, nullptr);
        bool all = !req.empty();
        for (const auto& [tt, r] : req) all &= (s_.usage[j.team.index()][tt.index()] + r).fits_in(s_.teams[j.team.index()].nominal[tt.index()]);
        nominal |= all;
      }
      if (nominal != within_nominal) continue;
      std::string why_not;
      auto plan = plan_preemption(s_, j, PreemptionQuery{.allow_reclaim = true, .now = now_, .hints = &hints}, why_not);
      preempt_tried_[id] = true;
      if (!plan) {
        // Kept apart from why_ because a later phase rewrites why_; the two are joined when the loop ends.
        preempt_why_[id] = why_not;
        continue;
      }
      if (plan->admission.borrowing) {
        if (auto osc = would_oscillate(j, *plan)) {
          why_[id] = *osc;
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
      result_.decisions.push_back(std::move(d));
      names += (names.empty() ? "" : ", ") + victim.spec.name;
      // The victim waits again: it goes back into consideration with everything else.
      if (std::find(waiting_.begin(), waiting_.end(), v.job) == waiting_.end()) {
        waiting_.push_back(v.job);
        std::sort(waiting_.begin(), waiting_.end(),
                  [&](JobId a, JobId b) { return queue_before(s_.jobs[a.index()], s_.jobs[b.index()]); });
      }
    }
    free_ = free_accelerators(s_, s_.room);  // the victims' accelerators are free again
    admit(j, plan.admission, "; after preempting " + names);
    // Room was released: every earlier "does not fit" may have changed.
    blocked_.clear();
    borrow_blocked_.clear();
    preempt_tried_.clear();
  }

  std::optional<Time> wakeup() const {
    std::optional<Time> t;
    auto consider = [&](Time x) {
      if (x > now_ && (!t || x < *t)) t = x;
    };
    bool anyone_waiting = false;
    for (JobId id : waiting_) anyone_waiting |= is_waiting(s_.jobs[id.index()].state);
    if (!anyone_waiting) return t;
    if (s_.policy.min_runtime_s > 0)
      for (JobId id : s_.running_jobs) consider(s_.jobs[id.index()].started_at + s_.policy.min_runtime_s);
    if (s_.policy.starvation_threshold_s > 0)
      for (JobId id : s_.waiting_jobs) consider(s_.jobs[id.index()].waiting_since + s_.policy.starvation_threshold_s);
    return t;
  }

  ClusterState& s_;
  Time now_;
  RoomTable pristine_;
  FreeAccelerators free_;  // of s_.room, kept by admit() and execute()
  std::vector<JobId> waiting_;
  // Per-job flags of this pass, indexed by JobId (a map here costs a tree walk per job per phase).
  struct Flags {
    std::vector<char> v;
    char& operator[](JobId id) {
      if (id.index() >= v.size()) v.resize(id.index() + 1, 0);
      return v[id.index()];
    }
    void clear() { std::fill(v.begin(), v.end(), 0); }
  };
  Flags blocked_, borrow_blocked_, preempt_tried_, never_;
  // Per-job reasons of this pass, indexed by JobId.
  struct Reasons {
    std::vector<std::string> v;
    std::string& operator[](JobId id) {
      if (id.index() >= v.size()) v.resize(id.index() + 1);
      return v[id.index()];
    }
  };
  Reasons why_, preempt_why_;
  std::map<TypeId, JobId> reserved_;
  ScheduleResult result_;
};

}  // namespace

ScheduleResult schedule(ClusterState& state, Time now) { return Loop(state, now).run(); }

}  // namespace allot
