#pragma once
// ChunkTable: a vector whose read views share, chunk by chunk, what did not change since the previous view.
//
// The writer publishes a copy of its state for readers on other threads (server/writer/server_state.h, view_of).
// At 10,000 nodes, copying the cluster's nodes (each with its name, labels and topology path) was 5.8% of the
// writer's time while 20,000 jobs were submitted and run (bench/RESULTS.md, 2026-12-03), though a batch changes a
// few nodes at most. Held here, a view copies the chunks changed since the previous view and shares the others
// with it: JobTable's rule (job_table.h, "Views"), for a table without tombstones.
//
// The view rule (which chunks a view shares, and why that is safe) is chunk_views.h's, shared with JobTable. A write
// must say so (edit(i), push_back, pop_back), which stamps its chunk. Reading is through const access only
// (operator[], back(), iteration), so a read through a non-const reference never counts as a change.
// REQUIRES of the owner: no reference from edit() taken before view_of is written through after it (the writer
// takes views between batches).
//
// References stay valid while elements are appended (a chunk never reallocates once it has room for kChunk).
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "core/model/chunk_views.h"

namespace allot {

template <class T>
class ChunkTable {
 public:
  static constexpr size_t kChunk = 64;
  using Chunk = std::vector<T>;
  using value_type = T;

  class const_iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    const_iterator() = default;
    const_iterator(const ChunkTable* t, size_t i) : t_(t), i_(i) {}
    reference operator*() const { return (*t_)[i_]; }
    pointer operator->() const { return &(*t_)[i_]; }
    reference operator[](difference_type n) const { return (*t_)[i_ + n]; }
    const_iterator& operator++() { return ++i_, *this; }
    const_iterator operator++(int) { return {t_, i_++}; }
    const_iterator& operator--() { return --i_, *this; }
    const_iterator operator--(int) { return {t_, i_--}; }
    const_iterator& operator+=(difference_type n) { return i_ += n, *this; }
    const_iterator& operator-=(difference_type n) { return i_ -= n, *this; }
    friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
    friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
    friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
    friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }
    auto operator<=>(const const_iterator& o) const { return i_ <=> o.i_; }

   private:
    const ChunkTable* t_ = nullptr;
    size_t i_ = 0;
  };
  using iterator = const_iterator;

  ChunkTable() = default;
  // A copy is a live table of its own: every chunk copied (a copy of a view too), none shared.
  ChunkTable(const ChunkTable& o) : size_(o.size_) {
    chunks_.reserve(o.chunks_.size());
    for (const auto& c : o.chunks_) {
      auto mine = std::make_shared<Chunk>();
      mine->reserve(kChunk);
      mine->insert(mine->end(), c->begin(), c->end());
      at_.push_back(mine->data());
      chunks_.push_back(std::move(mine));
    }
    stamps_ = ChunkStamps(chunks_.size());
  }
  ChunkTable& operator=(const ChunkTable& o) {
    if (this != &o) {
      ChunkTable copy(o);
      *this = std::move(copy);
    }
    return *this;
  }
  ChunkTable(ChunkTable&&) noexcept = default;
  ChunkTable& operator=(ChunkTable&&) noexcept = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return at_[i / kChunk][i % kChunk]; }
  const T& front() const { return (*this)[0]; }
  const T& back() const { return (*this)[size_ - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  // The element to change. REQUIRES: i < size().
  T& edit(size_t i) {
    stamps_.touch(i / kChunk);
    return at_[i / kChunk][i % kChunk];
  }
  void push_back(T v) {
    if (size_ % kChunk == 0) {
      auto c = std::make_shared<Chunk>();
      c->reserve(kChunk);
      chunks_.push_back(std::move(c));
      at_.push_back(chunks_.back()->data());
      stamps_.add_chunk();
    }
    chunks_.back()->push_back(std::move(v));
    stamps_.touch(chunks_.size() - 1);
    ++size_;
  }
  // Takes back the last element (a join undone). REQUIRES: !empty().
  void pop_back() {
    stamps_.touch(chunks_.size() - 1);
    chunks_.back()->pop_back();
    if (chunks_.back()->empty()) {
      chunks_.pop_back();
      at_.pop_back();
      stamps_.pop_chunk();
    }
    --size_;
  }
  void clear() {
    chunks_.clear();
    at_.clear();
    stamps_.clear();
    size_ = 0;
  }

  friend bool operator==(const ChunkTable& a, const ChunkTable& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (!(a[i] == b[i])) return false;
    return true;
  }

  using ViewCost = ChunkViewCost;
  // A read-only table equal to `live`, sharing with `previous` (a view of the same live table, or null) every
  // chunk the live table has not changed since `previous` was taken; the other chunks are copied (chunk_views.h).
  // REQUIRES: the result is only ever read (held const).
  static ChunkTable view_of(ChunkTable& live, const ChunkTable* previous, ViewCost* cost = nullptr) {
    ChunkTable v;
    v.size_ = live.size_;
    const ViewCost counted = live.stamps_.take_view(live.chunks_, previous ? &previous->chunks_ : nullptr,
                                                    previous ? &previous->stamps_ : nullptr, v.chunks_, v.stamps_);
    v.at_.resize(v.chunks_.size());
    for (size_t c = 0; c < v.chunks_.size(); ++c) v.at_[c] = v.chunks_[c]->data();
    if (cost) *cost = counted;
    return v;
  }
  // Whether element i is the same memory here and in `other` (for tests and benchmarks).
  bool shares(size_t i, const ChunkTable& other) const {
    return i < size_ && i < other.size_ && chunks_[i / kChunk] == other.chunks_[i / kChunk];
  }

 private:
  std::vector<std::shared_ptr<Chunk>> chunks_;  // [i / kChunk]; a live table's are its own, a view's may be shared
  std::vector<T*> at_;                          // [i / kChunk]: chunks_[c]->data()
  size_t size_ = 0;
  ChunkStamps stamps_;  // [i / kChunk] (chunk_views.h)
};

}  // namespace allot
