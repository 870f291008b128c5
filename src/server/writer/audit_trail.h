#pragma once
// The audit trail kept in memory (GET /v1/audit): the newest entries, oldest first.
//
// Every change a request asks for adds an entry, so at scale the trail holds as many entries as there are jobs,
// and every view the writer publishes is a copy of the state (writer.h). An entry never changes once written,
// so each is held once, immutable, and shared: copying the trail copies a pointer per entry, not its texts. The
// entries' reference counts are atomic, so a view dropped on another thread frees safely what it alone held.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>

#include "store/record.h"

namespace allot::server {

// One entry of the audit trail: an Audit record with its actor, time and place in the journal.
struct AuditEntry {
  uint64_t seq = 0;
  Time at = 0;
  store::Actor actor;
  store::Audit audit;
};

class AuditTrail {
  using Entries = std::deque<std::shared_ptr<const AuditEntry>>;

 public:
  // Reads the entries themselves (the pointers are the trail's own business).
  class const_iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = AuditEntry;
    using difference_type = std::ptrdiff_t;
    using pointer = const AuditEntry*;
    using reference = const AuditEntry&;

    const_iterator() = default;
    explicit const_iterator(Entries::const_iterator it) : it_(it) {}
    reference operator*() const { return **it_; }
    pointer operator->() const { return it_->get(); }
    const_iterator& operator++() {
      ++it_;
      return *this;
    }
    const_iterator operator++(int) { return const_iterator(it_++); }
    const_iterator& operator--() {
      --it_;
      return *this;
    }
    const_iterator operator--(int) { return const_iterator(it_--); }
    bool operator==(const const_iterator& o) const { return it_ == o.it_; }

   private:
    Entries::const_iterator it_;
  };
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  void push_back(AuditEntry e) { entries_.push_back(std::make_shared<const AuditEntry>(std::move(e))); }
  void pop_front() { entries_.pop_front(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const AuditEntry& front() const { return *entries_.front(); }
  const AuditEntry& back() const { return *entries_.back(); }

  const_iterator begin() const { return const_iterator(entries_.begin()); }
  const_iterator end() const { return const_iterator(entries_.end()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

 private:
  Entries entries_;
};

}  // namespace allot::server
