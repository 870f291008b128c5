// Phase 3 of a step (phases.h): jobs that must borrow and fit without preemption, teams in borrower order
// (order.h: fair share or arrival), each team's jobs in queue order.
#include <optional>

#include "core/pass/phases.h"

namespace allot {

bool admit_borrowers(Pass& p) {
  const size_t teams = p.s.teams.size();
  std::vector<std::vector<JobId>> queues(teams);
  for (JobId id : p.waiting) {
    const Pass::PassJob& r = p.rec(id);
    if (r.waiting && !r.borrow_blocked) queues[r.team].push_back(id);
  }
  bool any = false;
  std::vector<size_t> pos(teams, 0);
  // Each team's next job that could be admitted, found at admission count `seen`. A head found before the
  // latest admission is checked again when it is chosen: that admission may have taken its room. Heads are
  // not all recomputed after every admission, which cost a placement per team per admission.
  struct Head {
    AdmissionAttempt attempt;
    int seen = 0;
    int reservation = 0;  // Pass::backfill_version when it was found
  };
  std::vector<std::optional<Head>> heads(teams);
  size_t head_count = 0;
  int admitted = 0;
  auto order = borrower_order(p.s, p.order, [&](uint32_t team) -> const Job& { return p.job(queues[team][pos[team]]); });
  auto find_head = [&](size_t team) {
    auto& q = queues[team];
    size_t& at = pos[team];
    if (heads[team]) {
      heads[team].reset();
      --head_count;
    }
    while (at < q.size()) {
      Pass::PassJob& r = p.rec(q[at]);
      const auto [a, reason] = p.attempt(q[at], BorrowMode::kAllowBorrowing);
      if (a->never()) r.never = true;
      const Job& j = p.job(q[at]);
      std::optional<JobId> holder = a->ok() ? p.reserved_by(*a, j) : std::nullopt;
      const AdmissionAttempt* clear = a->ok() && !holder ? p.keep_clear(j, *a, BorrowMode::kAllowBorrowing) : nullptr;
      if (clear) {
        heads[team] = Head{*clear, admitted, p.backfill_version};
        ++head_count;
        return;
      }
      r.borrow_blocked = true;
      if (!a->ok()) {
        r.why = reason;
        p.maybe_reserve(j, *a);
        p.maybe_reserve_backfill(j, *a);
      } else if (holder) {
        r.why = p.reserved_reason(*a, *holder);
      }  // else keep_clear gave the reason
      ++at;
    }
  };
  for (size_t team = 0; team < teams; ++team) {
    if (queues[team].empty()) continue;
    order->update(static_cast<uint32_t>(team));
    find_head(team);
  }
  const bool fair = p.s.policy.idle_compute == IdleCompute::kFairShare;
  while (head_count > 0) {
    size_t team = teams;
    for (size_t t = 0; t < teams; ++t)
      if (heads[t] && (team == teams || order->before(static_cast<uint32_t>(t), static_cast<uint32_t>(team)))) team = t;
    if (heads[team]->seen != admitted || heads[team]->reservation != p.backfill_version) {
      find_head(team);  // stale: the same job is tried again against the room as it is now
      continue;
    }
    const Job& j = p.job(queues[team][pos[team]]);
    std::string extra;
    if (fair && head_count > 1)
      extra = "; fair share put team " + p.s.teams[team].spec.name + " first among " + std::to_string(head_count) +
              " borrowing teams";
    const AdmissionAttempt a = std::move(heads[team]->attempt);
    heads[team].reset();
    --head_count;
    p.admit(j, a, extra);
    order->update(static_cast<uint32_t>(team));
    ++admitted;
    ++pos[team];
    any = true;
    find_head(team);
  }
  return any;
}

}  // namespace allot
