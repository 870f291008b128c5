#pragma once
// JobTable: every job ever submitted, indexed by JobId, in memory that follows the jobs still kept.
//
// IDs are never reused (decisions, events and journal records name jobs by ID), so a job compacted by retention
// (state.h, compact_finished) keeps its slot as a tombstone. A plain vector would keep a whole Job (over 500
// bytes) per job ever submitted, forever. The table stores jobs in chunks of kChunk consecutive IDs and frees a
// chunk once every one of its jobs is a tombstone; a freed chunk costs one empty vector header and a pointer
// (32 bytes per kChunk jobs). Its slots then read as the table's own chunk of shared tombstones.
//
// Indexing is on the scheduler's hot path: a job is one pointer per chunk away (at_), with no test for a freed
// chunk on const access (its pointer leads to the shared tombstones), one load more than a plain vector.
//
// Close to std::vector<Job> so that code indexing jobs reads the same:
// - `size()` is the next ID; `operator[]` takes any ID below it.
// - Const access to a slot in a freed chunk returns one of the table's shared tombstones. Its `id` is not valid
//   (it stands for every freed slot): code that holds an ID already knows it.
// - Non-const access to a slot in a freed chunk brings the chunk back (kChunk tombstones with their own IDs), so
//   that a reference is always to the job asked for; release_revived() frees such chunks again.
// - Iteration visits the jobs in ID order but skips freed chunks: those hold tombstones only, which every scan
//   over jobs skips anyway (terminal state, no team, `deleted`). Code that needs every ID uses size().
// - References stay valid while jobs are appended (a chunk never reallocates once it has room for kChunk jobs),
//   and until the chunk is freed.
//
// Views (view_of): a read-only table for other threads that shares every chunk unchanged since the previous view
// with it, so that publishing a view costs the chunks changed since then, not the whole table (the rule is
// chunk_views.h's, shared with ChunkTable; a view is immutable from the moment view_of returns it). Every mutable
// access (non-const operator[], back(), a non-const iterator's dereference, push_back, compact, a revive or
// release) stamps its chunk. REQUIRES of the owner: no mutable reference taken before view_of is written through after it (the writer
// takes views between batches, when no core call is running). Const access is not stamped and stays one load
// per chunk.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/model/chunk_views.h"
#include "core/model/model.h"

namespace allot {

// What a compacted job's slot holds: the same value however the job ended, so that a snapshot needs to say
// only which IDs are tombstones (store/cluster_snapshot.cpp). A terminal state and no team keep it out of
// every scan that looks for active jobs or for a team's jobs.
inline Job compacted_tombstone(JobId id) {
  Job tomb;
  tomb.id = id;
  tomb.state = JobState::kCancelled;
  tomb.deleted = true;
  tomb.compacted = true;
  return tomb;
}

class JobTable {
 public:
  static constexpr size_t kChunk = 64;
  using Chunk = std::vector<Job>;

  template <bool Const>
  class Iterator {
    using Table = std::conditional_t<Const, const JobTable, JobTable>;

   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Job;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const Job*, Job*>;
    using reference = std::conditional_t<Const, const Job&, Job&>;

    Iterator() = default;
    Iterator(Table* t, size_t chunk, size_t at) : t_(t), chunk_(chunk), at_(at) {}
    reference operator*() const {
      if constexpr (!Const) t_->touch(chunk_);  // a mutable reference may change the job
      return t_->at_[chunk_][at_];
    }
    pointer operator->() const { return &**this; }
    Iterator& operator++() {
      if (++at_ == t_->chunks_[chunk_]->size()) {
        at_ = 0;
        chunk_ = t_->next_stored(chunk_ + 1);
      }
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const Iterator& o) const { return chunk_ == o.chunk_ && at_ == o.at_; }

   private:
    Table* t_ = nullptr;
    size_t chunk_ = 0, at_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  JobTable() = default;
  // A copy is a live table of its own: every chunk copied (a copy of a view too), none shared.
  JobTable(const JobTable& o) : kept_(o.kept_), revived_(o.revived_), size_(o.size_) {
    chunks_.reserve(o.chunks_.size());
    for (const auto& c : o.chunks_) chunks_.push_back(c ? std::make_shared<Chunk>(*c) : nullptr);
    stamps_ = ChunkStamps(chunks_.size());
    point_all();
  }
  JobTable& operator=(const JobTable& o) {
    if (this != &o) {
      JobTable copy(o);
      *this = std::move(copy);
    }
    return *this;
  }
  // Moving keeps every buffer, tombstones_ included, so the pointers stay right.
  JobTable(JobTable&&) noexcept = default;
  JobTable& operator=(JobTable&&) noexcept = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  const Job& operator[](size_t id) const { return at_[id / kChunk][id % kChunk]; }
  Job& operator[](size_t id) {
    Job* c = at_[id / kChunk];
    if (c == tombstones_.data()) [[unlikely]]
      c = revive(id / kChunk);
    touch(id / kChunk);
    return c[id % kChunk];
  }
  Job& back() { return (*this)[size_ - 1]; }
  const Job& back() const { return (*this)[size_ - 1]; }

  // Appends the job with the next ID (job.id must be size()).
  void push_back(Job job) {
    if (size_ % kChunk == 0) {
      chunks_.push_back(std::make_shared<Chunk>());
      kept_.push_back(0);
      at_.push_back(nullptr);
      stamps_.add_chunk();
    }
    Chunk& c = *chunks_.back();
    if (c.capacity() < kChunk) {  // a new chunk, or a copied table's last chunk, which may have less room
      c.reserve(kChunk);
      at_.back() = c.data();
    }
    if (!job.compacted) ++kept_.back();
    c.push_back(std::move(job));
    ++size_;
    touch(chunks_.size() - 1);
    free_if_all_compacted(chunks_.size() - 1);
  }
  // Appends n tombstones (a snapshot's run of compacted jobs) without building the chunks they fill.
  void append_compacted(size_t n) {
    while (n > 0) {
      if (size_ % kChunk == 0 && n >= kChunk) {
        chunks_.emplace_back();
        kept_.push_back(0);
        at_.push_back(tombstones());
        stamps_.add_chunk();
        size_ += kChunk;
        n -= kChunk;
        continue;
      }
      push_back(compacted_tombstone(JobId(static_cast<uint32_t>(size_))));
      --n;
    }
  }
  // Turns the job into a tombstone (compacted_tombstone), and frees its chunk when that was the last job kept
  // in it. REQUIRES: id < size(). A tombstone stays one: compacting it again changes nothing.
  void compact(size_t id) {
    Job& j = (*this)[id];
    if (j.compacted) return;
    j = compacted_tombstone(JobId(static_cast<uint32_t>(id)));
    --kept_[id / kChunk];
    free_if_all_compacted(id / kChunk);
  }
  // Frees again the chunks that non-const access brought back (they hold tombstones only).
  void release_revived() {
    for (size_t c : revived_) free_if_all_compacted(c);
    revived_.clear();
  }

  // Chunks that hold jobs (not freed): memory is about this times kChunk * sizeof(Job).
  size_t chunks_stored() const {
    size_t n = 0;
    for (const auto& c : chunks_) n += c && !c->empty();
    return n;
  }

  using ViewCost = ChunkViewCost;
  // A read-only table equal to `live`, sharing with `previous` (a view of the same live table, or null) every
  // chunk the live table has not changed since `previous` was taken; the other chunks are copied (chunk_views.h).
  // The view and the views it shares chunks with may be read on any thread while the live table changes: the
  // chunks they share are never written. REQUIRES: the result is only ever read (held const).
  static JobTable view_of(JobTable& live, const JobTable* previous, ViewCost* cost = nullptr) {
    JobTable v;
    v.kept_ = live.kept_;
    v.size_ = live.size_;
    const ViewCost counted = live.stamps_.take_view(live.chunks_, previous ? &previous->chunks_ : nullptr,
                                                    previous ? &previous->stamps_ : nullptr, v.chunks_, v.stamps_);
    v.at_.resize(v.chunks_.size());
    for (size_t c = 0; c < v.chunks_.size(); ++c) v.at_[c] = v.chunks_[c] ? v.chunks_[c]->data() : v.tombstones();
    if (cost) *cost = counted;
    return v;
  }

  iterator begin() { return {this, next_stored(0), 0}; }
  iterator end() { return {this, chunks_.size(), 0}; }
  const_iterator begin() const { return {this, next_stored(0), 0}; }
  const_iterator end() const { return {this, chunks_.size(), 0}; }

 private:
  size_t next_stored(size_t chunk) const {
    while (chunk < chunks_.size() && (!chunks_[chunk] || chunks_[chunk]->empty())) ++chunk;
    return chunk;
  }
  void touch(size_t chunk) { stamps_.touch(chunk); }
  // Only a full chunk is freed: the last chunk still takes new jobs.
  void free_if_all_compacted(size_t chunk) {
    if (kept_[chunk] != 0 || !chunks_[chunk] || chunks_[chunk]->size() != kChunk) return;
    chunks_[chunk].reset();
    at_[chunk] = tombstones();
    touch(chunk);
  }
  Job* revive(size_t chunk) {
    auto c = std::make_shared<Chunk>();
    c->reserve(kChunk);
    for (size_t i = 0; i < kChunk; ++i) c->push_back(compacted_tombstone(JobId(static_cast<uint32_t>(chunk * kChunk + i))));
    chunks_[chunk] = std::move(c);
    revived_.push_back(chunk);
    touch(chunk);
    return at_[chunk] = chunks_[chunk]->data();
  }
  // The shared tombstones a freed chunk's slots read as, made on first use (a table that never frees a chunk,
  // as without retention, has none).
  Job* tombstones() {
    if (tombstones_.empty()) tombstones_.assign(kChunk, compacted_tombstone(JobId()));
    return tombstones_.data();
  }
  void point_all() {
    tombstones_.clear();
    at_.assign(chunks_.size(), nullptr);
    for (size_t c = 0; c < chunks_.size(); ++c) {
      if (!chunks_[c]) {
        at_[c] = tombstones();
        continue;
      }
      if ((c + 1) * kChunk > size_) chunks_[c]->reserve(kChunk);  // the last, still filling: its pointer stays valid
      at_[c] = chunks_[c]->data();
    }
  }

  // [id / kChunk]; null: freed. A live table's chunks are its own; a view's may be shared with other views.
  std::vector<std::shared_ptr<Chunk>> chunks_;
  std::vector<Job*> at_;                  // [id / kChunk]: chunks_[c]->data(), or tombstones_ for a freed chunk
  std::vector<uint8_t> kept_;             // [id / kChunk]: jobs in the chunk that are not tombstones
  std::vector<size_t> revived_;           // freed chunks that non-const access brought back
  size_t size_ = 0;
  std::vector<Job> tombstones_;           // kChunk compacted_tombstone(JobId()): what a freed chunk's slots read as
  ChunkStamps stamps_;                    // [id / kChunk] (chunk_views.h)
};

}  // namespace allot
