#pragma once
// Preemption candidates in victim order (preemption.h: lowest priority first, then most recently started, then
// latest arrival), put in order only as far as they are read.
//
// Why: a plan on a large cluster has thousands of candidates (every running job of every team above its quota
// on the type), and sorting them all was a fifth of a plan's time, while the greedy choice usually stops after
// a few. at(i) sorts the next chunk of the candidates not yet in order (the smallest of them, found by
// nth_element, then sorted), doubling the chunk each time, so a plan that reads k candidates pays about
// n + k log k comparisons, and one that reads them all about what one sort costs.
//
// The order is the same as one std::sort by victim_order(): the order is total (arrival is unique per job, and
// the job ID settles what arrival could not), so the first k candidates in order are one set, however found.
// The keys are copied out of the jobs, so that comparisons do not chase a pointer into each job.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/model/model.h"

namespace allot {

class OrderedVictims {
 public:
  struct Key;
  void add(const Job& j) { add(Key{j.priority, j.started_at, j.arrival, j.id.index(), &j}); }
  // `k` must hold the job's own fields (a copy kept elsewhere, such as PreemptionHints).
  void add(const Key& k) {
    keys_.push_back(k);
    sorted_ = 0;
  }
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }

  // The i-th candidate in victim order (i < size()).
  const Job* at(size_t i) {
    if (i >= sorted_) sort_through(i);
    return keys_[i].job;
  }

  // Every candidate, in victim order.
  std::vector<const Job*> all() {
    if (!keys_.empty()) sort_through(keys_.size() - 1);
    std::vector<const Job*> out;
    out.reserve(keys_.size());
    for (const Key& k : keys_) out.push_back(k.job);
    return out;
  }

  // The same answer as victim_order(*a.job, *b.job), from the copied keys.
  struct Key {
    int priority;
    Time started_at;
    uint64_t arrival;
    uint32_t id;
    const Job* job;
  };
  static bool before(const Key& a, const Key& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.started_at != b.started_at) return a.started_at > b.started_at;
    if (a.arrival != b.arrival) return a.arrival > b.arrival;
    return a.id < b.id;
  }

 private:
  static constexpr size_t kFirstChunk = 16;

  // Puts keys_[sorted_, i] (and a chunk beyond) in order.
  void sort_through(size_t i) {
    const size_t chunk = std::max({kFirstChunk, sorted_, i + 1 - sorted_});
    const size_t end = std::min(keys_.size(), sorted_ + chunk);
    auto first = keys_.begin() + static_cast<std::ptrdiff_t>(sorted_);
    auto last = keys_.begin() + static_cast<std::ptrdiff_t>(end);
    if (last != keys_.end()) std::nth_element(first, last, keys_.end(), before);
    std::sort(first, last, before);
    sorted_ = end;
  }

  std::vector<Key> keys_;
  size_t sorted_ = 0;  // keys_[0, sorted_) are the first candidates in victim order, in order
};

}  // namespace allot
