#pragma once
// A set of job IDs with constant-time insert and erase and iteration over one compact array, in no particular
// order. The scheduler walks the waiting and running jobs at every pass; a tree set made that walk a pointer
// chase through memory scattered among the jobs themselves.
#include <cstdint>
#include <vector>

#include "core/ids.h"

namespace allot {

class JobSet {
 public:
  void insert(JobId id) {
    if (id.index() >= pos_.size()) pos_.resize(id.index() + 1, 0);
    if (pos_[id.index()] != 0) return;
    members_.push_back(id);
    pos_[id.index()] = static_cast<uint32_t>(members_.size());
  }
  void erase(JobId id) {
    if (!contains(id)) return;
    // The last member takes the erased one's place.
    const uint32_t at = pos_[id.index()] - 1;
    const JobId last = members_.back();
    members_[at] = last;
    pos_[last.index()] = at + 1;
    members_.pop_back();
    pos_[id.index()] = 0;
  }
  bool contains(JobId id) const { return id.index() < pos_.size() && pos_[id.index()] != 0; }
  size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  std::vector<JobId>::const_iterator begin() const { return members_.begin(); }
  std::vector<JobId>::const_iterator end() const { return members_.end(); }
  // The members in ID order (submission order), where an order must not depend on the history of changes.
  std::vector<JobId> sorted() const;

 private:
  std::vector<JobId> members_;
  std::vector<uint32_t> pos_;  // [JobId]: index in members_ + 1, or 0 when absent
};

}  // namespace allot
