#pragma once
// The scheduler's orders behind one small interface (Mesos's allocator sorters): which client is served
// first, where a client is a waiting job (queue order) or a borrowing team (borrower order). A pass asks
// `before` and tells the sorter when a client's standing changed (`update`: a team's usage after one of its
// jobs was admitted); nothing else in the pass knows how an order is made.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/quota/quota.h"
#include "core/model/state.h"

namespace allot {

class Sorter {
 public:
  virtual ~Sorter() = default;
  // Client `c`'s standing changed; later answers must reflect it.
  virtual void update(uint32_t c) = 0;
  // Whether client `a` is served before client `b`: a strict weak order, total on distinct clients.
  virtual bool before(uint32_t a, uint32_t b) const = 0;
};

// Queue order of waiting jobs (clients: JobId values): task ranking (priority weight, then arrival) or fcfs
// (arrival), per policy.task_prioritization.
class QueueOrder final : public Sorter {
 public:
  explicit QueueOrder(const ClusterState& s) : s_(s) {}
  void update(uint32_t) override {}  // a job's priority and arrival never change during a pass
  bool before(uint32_t a, uint32_t b) const override { return jobs_before(s_.jobs[a], s_.jobs[b]); }
  bool jobs_before(const Job& a, const Job& b) const;
  // Sorts `jobs` into queue order. The keys are copied out first: sorting tens of thousands of IDs by reaching
  // into each Job costs a cache miss per comparison.
  void sort(std::vector<JobId>& jobs) const;
  // The same, with each job's (priority, arrival) from `key_of(id)`: a caller that holds them in a compact
  // record (a pass) spares the sort a read of every Job, one cache miss each on a long queue.
  template <class KeyOf>
  void sort_by(std::vector<JobId>& jobs, KeyOf key_of) const;

 private:
  template <class Entry>
  static bool sort_by_priority_groups(const std::vector<Entry>& keys, std::vector<JobId>& jobs);
  bool by_priority() const;
  const ClusterState& s_;
};

template <class KeyOf>
void QueueOrder::sort_by(std::vector<JobId>& jobs, KeyOf key_of) const {
  struct Entry {
    int priority;
    uint64_t arrival;
    JobId id;
  };
  std::vector<Entry> keys;
  keys.reserve(jobs.size());
  const bool priority_first = by_priority();
  bool by_arrival = true;  // the jobs come in strictly increasing arrival
  for (JobId id : jobs) {
    const auto [priority, arrival] = key_of(id);
    by_arrival = by_arrival && (keys.empty() || keys.back().arrival < arrival);
    keys.push_back({priority_first ? priority : 0, arrival, id});
  }
  // A pass collects its queue in ID order, which is mostly arrival order, and a queue holds a handful of
  // priorities: the order is then the jobs grouped by priority, each group in the order given, made in two linear
  // walks rather than a comparison sort (7% of a pass over 50,000 jobs). Arrivals strictly increasing make every
  // key distinct, so both ways give the one order there is.
  if (by_arrival && sort_by_priority_groups(keys, jobs)) return;
  std::sort(keys.begin(), keys.end(), [](const Entry& a, const Entry& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.arrival < b.arrival;
  });
  for (size_t i = 0; i < keys.size(); ++i) jobs[i] = keys[i].id;
}

// Writes the entries' IDs into `jobs` grouped by priority, highest first, each group in the entries' order. False,
// `jobs` untouched, when there are too many priorities for that to pay.
template <class Entry>
bool QueueOrder::sort_by_priority_groups(const std::vector<Entry>& keys, std::vector<JobId>& jobs) {
  constexpr size_t kMaxGroups = 16;
  int priorities[kMaxGroups];
  size_t groups = 0;
  for (const Entry& e : keys) {
    if (groups > 0 && priorities[groups - 1] == e.priority) continue;  // runs of one priority are common
    if (std::find(priorities, priorities + groups, e.priority) != priorities + groups) continue;
    if (groups == kMaxGroups) return false;
    priorities[groups++] = e.priority;
  }
  std::sort(priorities, priorities + groups, std::greater<int>());
  size_t start[kMaxGroups + 1] = {};
  auto group_of = [&](int priority) { return static_cast<size_t>(std::find(priorities, priorities + groups, priority) - priorities); };
  for (const Entry& e : keys) ++start[group_of(e.priority) + 1];
  for (size_t g = 1; g <= groups; ++g) start[g] += start[g - 1];
  for (const Entry& e : keys) jobs[start[group_of(e.priority)]++] = e.id;
  return true;
}

// Borrower order of teams (clients: TeamId values) that have a job able to borrow now; `head(team)` is that
// job. policy.idle_compute fair-share: lowest (borrowed dominant share / weight) first (quota.h), ties to the
// higher weight, then to the head job in queue order; fcfs: by head job in queue order.
using HeadOf = std::function<const Job&(uint32_t team)>;
std::unique_ptr<Sorter> borrower_order(const ClusterState& s, const QueueOrder& queue, HeadOf head);

}  // namespace allot
