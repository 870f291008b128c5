#pragma once
// The view rule of the chunked tables (ChunkTable, chunk_table.h; JobTable, job_table.h): a read view shares with
// the previous view every chunk the live table has not written since that view was taken, and copies the others.
//
// A live table stamps a chunk with its epoch on every write (touch); taking a view moves the epoch on. So a chunk
// whose stamp is not after the previous view's epoch is exactly that view's chunk, and the new view may hold the
// same memory. Chunks are shared between views only, never with the live table: the writer's references always
// point into the table it changes, and a chunk a view holds is never written again.
//
// A table's identity (its lineage, made by the first view) tells its views from those of another table: a view of
// a different table, or of a copy, shares nothing.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace allot {

// What taking a view did: chunks copied from the live table, and chunks shared with the previous view.
struct ChunkViewCost {
  size_t chunks_copied = 0;
  size_t chunks_shared = 0;
};

class ChunkStamps {
 public:
  ChunkStamps() = default;
  // A live table of `chunks` chunks of its own: no view taken yet. (Stamps are not copied: a copy of a table, or of
  // a view, is a live table of its own, and makes its stamps this way.)
  explicit ChunkStamps(size_t chunks) : touched_(chunks, 1) {}
  ChunkStamps(const ChunkStamps&) = delete;
  ChunkStamps& operator=(const ChunkStamps&) = delete;
  ChunkStamps(ChunkStamps&&) noexcept = default;
  ChunkStamps& operator=(ChunkStamps&&) noexcept = default;

  // Live table: chunk c was (or may be) written.
  void touch(size_t c) { touched_[c] = epoch_; }
  void add_chunk() { touched_.push_back(epoch_); }
  void pop_chunk() { touched_.pop_back(); }
  void clear() { touched_.clear(); }

  // The chunks of a view of the live table whose stamps these are (`live`, null where a chunk is freed): each
  // shared with `previous` (the chunks and stamps of an earlier view, or both null) when unchanged since it was
  // taken, else copied. `view` becomes the new view's stamps. Writes after this are after the view.
  template <class Chunk>
  ChunkViewCost take_view(const std::vector<std::shared_ptr<Chunk>>& live, const std::vector<std::shared_ptr<Chunk>>* previous_chunks,
                          const ChunkStamps* previous, std::vector<std::shared_ptr<Chunk>>& out, ChunkStamps& view) {
    if (!lineage_) lineage_ = std::make_shared<const char>(0);
    const bool same = previous && previous_chunks && previous->source_ == lineage_;
    out.assign(live.size(), nullptr);
    ChunkViewCost cost;
    for (size_t c = 0; c < live.size(); ++c) {
      if (!live[c]) continue;  // freed: the view's slot reads as the table says (JobTable's tombstones)
      // A chunk still filling may have grown since `previous`: its stamp says so (appending touches it).
      if (same && c < previous_chunks->size() && (*previous_chunks)[c] && touched_[c] <= previous->taken_) {
        out[c] = (*previous_chunks)[c];
        ++cost.chunks_shared;
      } else {
        out[c] = std::make_shared<Chunk>(*live[c]);
        ++cost.chunks_copied;
      }
    }
    view.source_ = lineage_;
    view.taken_ = epoch_;
    ++epoch_;
    return cost;
  }

 private:
  // Live table: the epoch of each chunk's last write, the current epoch, and the table's identity.
  std::vector<uint64_t> touched_;
  uint64_t epoch_ = 1;
  std::shared_ptr<const char> lineage_;
  // View: the live table it was taken from, and that table's epoch then.
  std::shared_ptr<const char> source_;
  uint64_t taken_ = 0;
};

}  // namespace allot
