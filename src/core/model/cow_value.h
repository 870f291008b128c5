#pragma once
// CowValue: one value whose copies share it until one of them writes (CowMap's rule, for a single value).
//
// The writer's published views copy the server's table of nodes (server/writer/server_state.h, view_of), and each
// node keeps tables that grow with the cluster's history: the (job, rank) of every replica ever placed there, and
// its last health changes. Copied with every view, they were most of a view's cost at 10,000 nodes
// (bench/view_copy_bench.cpp). Held here, a copy costs a pointer; the writer clones a node's table only when it
// changes it while a view still holds it.
//
// Thread safety: as CowMap's (cow_map.h): the value is written in place only when this holder is its only one (use
// count 1, then an acquire fence that orders the write after the dropped copies' reads); copies may be read and
// dropped on any thread meanwhile. REQUIRES: each holder is written by one thread at a time.
#include <atomic>
#include <memory>
#include <utility>

namespace allot {

template <class T>
class CowValue {
 public:
  CowValue() = default;

  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  // The value to change, cloned first when a copy holds it too.
  T& edit() {
    if (!p_) {
      p_ = std::make_shared<T>();
    } else if (p_.use_count() > 1) {
      p_ = std::make_shared<T>(*p_);
    } else {
      std::atomic_thread_fence(std::memory_order_acquire);  // see "Thread safety" above
    }
    return *p_;
  }
  // The value itself, for a reader on another thread that must keep it after this holder changes: the holder
  // clones it before its next write while the reader holds it.
  std::shared_ptr<const T> shared() const { return p_ ? p_ : std::make_shared<const T>(); }
  // Whether this holder and `other` share one value (for tests and benchmarks).
  bool shares_with(const CowValue& other) const { return p_ && p_ == other.p_; }

  friend bool operator==(const CowValue& a, const CowValue& b) { return *a == *b; }

 private:
  const T& value() const {
    static const T empty{};  // never written: a holder that was never edited reads as an empty value
    return p_ ? *p_ : empty;
  }
  std::shared_ptr<T> p_;  // null until first edited
};

}  // namespace allot
