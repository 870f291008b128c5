#pragma once
// A set of job IDs with constant-time insert and erase and iteration over one compact array, in no particular
// order. The scheduler walks the waiting and running jobs at every pass; a tree set made that walk a pointer
// chase through memory scattered among the jobs themselves.
//
// The position index is paged by ID (id_pages.h) and a page goes once no member is left in it, so the set's
// memory follows its members, not the jobs ever submitted (IDs are never reused).
#include <cstdint>
#include <utility>
#include <vector>

#include "core/model/id_pages.h"
#include "core/model/ids.h"

namespace allot {

class JobSet {
 public:
  void insert(JobId id) {
    const size_t i = id.index();
    if (i >= pos_.size()) {
      pos_.resize(i + 1);
      in_page_.resize((pos_.size() + IdPages<uint32_t>::kPage - 1) / IdPages<uint32_t>::kPage, 0);
    }
    if (contains(id)) return;
    members_.push_back(id);
    pos_[i] = static_cast<uint32_t>(members_.size());
    ++in_page_[pos_.page_of(i)];
  }
  void erase(JobId id) {
    if (!contains(id)) return;
    // The last member takes the erased one's place.
    const size_t i = id.index();
    const uint32_t at = std::as_const(pos_)[i] - 1;
    const JobId last = members_.back();
    members_[at] = last;
    pos_[last.index()] = at + 1;
    members_.pop_back();
    pos_[i] = 0;
    if (--in_page_[pos_.page_of(i)] == 0) pos_.release(pos_.page_of(i));
  }
  bool contains(JobId id) const { return id.index() < pos_.size() && pos_[id.index()] != 0; }
  size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty(); }
  std::vector<JobId>::const_iterator begin() const { return members_.begin(); }
  std::vector<JobId>::const_iterator end() const { return members_.end(); }
  // The members in ID order (submission order), where an order must not depend on the history of changes.
  std::vector<JobId> sorted() const;
  // Pages of the position index that hold members (tests: the index follows the members).
  size_t pages_held() const { return pos_.pages_allocated(); }

 private:
  std::vector<JobId> members_;
  IdPages<uint32_t> pos_;          // [JobId]: index in members_ + 1, or 0 when absent
  std::vector<uint16_t> in_page_;  // [page of pos_]: members in it; a page is released when it falls to 0
};

}  // namespace allot
