#pragma once
// ReadSeats: a bound on the heavy reads (job listings) a server renders at once.
//
// A listing page of thousands of jobs is rendered on its request thread from the published view (writer.h), off
// the writer; it still takes a core while it runs. On a machine with few cores, several listers rendering at
// once take the cores the writer needs, and every submission waits (issue 25, item 7). So at most `seats`
// listings are rendered at once; one more waits for a seat up to `wait` (a page takes tens of milliseconds to
// render, so a short wait serves it in turn), and is then refused: the caller answers 503 with Retry-After
// (docs/api.md). A seat is held while the page is rendered, not while it is written to the client, so a slow
// client holds no seat (and a client that goes away mid-answer leaves nothing held).
//
// Thread-safety: every member from any thread.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>

namespace allot::server {

class ReadSeats {
 public:
  explicit ReadSeats(size_t seats) : free_(seats), seats_(seats) {}

  // A taken seat, given back when destroyed.
  class Seat {
   public:
    explicit Seat(ReadSeats* owner) : owner_(owner) {}
    Seat(Seat&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    Seat& operator=(Seat&&) = delete;
    Seat(const Seat&) = delete;
    ~Seat() {
      if (owner_) owner_->give_back();
    }

   private:
    ReadSeats* owner_;
  };

  // A seat, once one is free within `wait`; nullopt when every seat stayed taken that long (counted as refused).
  std::optional<Seat> take(std::chrono::milliseconds wait);

  size_t seats() const { return seats_; }
  size_t in_use() const;
  uint64_t refused() const;

 private:
  void give_back();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t free_;          // guarded by mu_
  uint64_t refused_ = 0;  // guarded by mu_
  const size_t seats_;
};

}  // namespace allot::server
