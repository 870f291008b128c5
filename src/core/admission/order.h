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
  template <class KeyOf>
  static bool sort_by_priority_groups(std::vector<JobId>& jobs, KeyOf key_of, bool priority_first);
  bool by_priority() const;
  const ClusterState& s_;
};

template <class KeyOf>
void QueueOrder::sort_by(std::vector<JobId>& jobs, KeyOf key_of) const {
  const bool priority_first = by_priority();
  // A pass collects its queue from the waiting set, which keeps jobs in submission (arrival) order until removals
  // reorder it (job_set.h), so a first pass over a long queue gets it in arrival order; and a queue holds a handful
  // of priorities. The order is then the jobs grouped by priority, each group in the order given, made in linear
  // walks rather than a comparison sort (7% of a pass over 50,000 jobs), and without a table of keys (1.2 MB of
  // fresh pages for 50,000 jobs). Arrivals strictly increasing make every key distinct, so both ways give the one
  // order there is.
  if (sort_by_priority_groups(jobs, key_of, priority_first)) return;
  struct Entry {
    int priority;
    uint64_t arrival;
    JobId id;
  };
  std::vector<Entry> keys;
  keys.reserve(jobs.size());
  for (JobId id : jobs) {
    const auto [priority, arrival] = key_of(id);
    keys.push_back({priority_first ? priority : 0, arrival, id});
  }
  std::sort(keys.begin(), keys.end(), [](const Entry& a, const Entry& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.arrival < b.arrival;
  });
  for (size_t i = 0; i < keys.size(); ++i) jobs[i] = keys[i].id;
}

// When `jobs` come in strictly increasing arrival with at most kMaxGroups priorities (one group without
// `priority_first`): reorders them grouped by priority, highest first, each group in the order given. Otherwise
// false, `jobs` untouched.
template <class KeyOf>
bool QueueOrder::sort_by_priority_groups(std::vector<JobId>& jobs, KeyOf key_of, bool priority_first) {
  constexpr size_t kMaxGroups = 16;
  int priorities[kMaxGroups];
  size_t groups = 0;
  uint64_t last_arrival = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto [priority, arrival] = key_of(jobs[i]);
    if (i > 0 && arrival <= last_arrival) return false;
    last_arrival = arrival;
    const int p = priority_first ? priority : 0;
    if (groups > 0 && priorities[groups - 1] == p) continue;  // runs of one priority are common
    if (std::find(priorities, priorities + groups, p) != priorities + groups) continue;
    if (groups == kMaxGroups) return false;
    priorities[groups++] = p;
  }
  if (groups <= 1) return true;  // one group: already in order
  std::sort(priorities, priorities + groups, std::greater<int>());
  std::vector<uint8_t> group(jobs.size());
  size_t start[kMaxGroups + 1] = {};
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int p = key_of(jobs[i]).first;
    group[i] = static_cast<uint8_t>(std::find(priorities, priorities + groups, p) - priorities);
    ++start[group[i] + 1];
  }
  for (size_t g = 1; g <= groups; ++g) start[g] += start[g - 1];
  std::vector<JobId> sorted(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) sorted[start[group[i]]++] = jobs[i];
  std::copy(sorted.begin(), sorted.end(), jobs.begin());  // in place: phases may be walking `jobs`
  return true;
}

// Borrower order of teams (clients: TeamId values) that have a job able to borrow now; `head(team)` is that
// job. policy.idle_compute fair-share: lowest (borrowed dominant share / weight) first (quota.h), ties to the
// higher weight, then to the head job in queue order; fcfs: by head job in queue order.
using HeadOf = std::function<const Job&(uint32_t team)>;
std::unique_ptr<Sorter> borrower_order(const ClusterState& s, const QueueOrder& queue, HeadOf head);

}  // namespace allot
