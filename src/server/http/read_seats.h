#pragma once
// ReadSeats: a bound on the heavy reads (job listings) a server renders at once, and the threads they render on.
//
// A listing page of thousands of jobs is rendered from the published view (writer.h), off the writer; it still
// takes a core while it runs. On a machine with few cores, several listers rendering at once take the cores the
// writer needs, and every submission waits (issue 25, item 7). So:
// - at most `seats` listings are rendered at once; one more waits for a seat up to `wait` (a page takes tens of
//   milliseconds to render, so a short wait serves it in turn), and is then refused: the caller answers 503 with
//   Retry-After (docs/api.md);
// - each seat renders on a thread of its own that runs at a lower CPU priority (`nice` above the process's,
//   setpriority(2) on that thread only): when the writer, heartbeats or submissions want a core, the kernel gives
//   it to them first, and a listing takes what they leave. A listing that finds the cores idle runs at full
//   speed. The threads are the server's for its whole life (a thread cannot raise its priority again without
//   privilege, so request threads never lower theirs).
// A seat is held while its page is rendered, not while it is written to the client, so a slow client holds no
// seat (and a client that goes away mid-answer leaves nothing held).
//
// Thread-safety: every member from any thread; a Seat from the thread that took it.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"

namespace allot::server {

class ReadSeats {
 public:
  // How much lower than the process's the seats' threads run by default (allot server --listing-nice).
  static constexpr int kDefaultNice = 10;

  // `seats` threads at `nice` above the process's priority (0: the same; setpriority's bounds apply).
  explicit ReadSeats(size_t seats, int nice = kDefaultNice);
  ~ReadSeats();
  ReadSeats(const ReadSeats&) = delete;
  ReadSeats& operator=(const ReadSeats&) = delete;

  // A taken seat, given back when destroyed.
  class Seat {
   public:
    Seat(ReadSeats* owner, size_t index) : owner_(owner), index_(index) {}
    Seat(Seat&& o) noexcept : owner_(o.owner_), index_(o.index_) { o.owner_ = nullptr; }
    Seat& operator=(Seat&&) = delete;
    Seat(const Seat&) = delete;
    ~Seat() {
      if (owner_) owner_->give_back(index_);
    }
    // Runs `work` on the seat's thread (at its lower priority) and returns once it has run; what it throws is
    // thrown here.
    void run(const std::function<void()>& work);

   private:
    ReadSeats* owner_;
    size_t index_;
  };

  // A seat, once one is free within `wait`; nullopt when every seat stayed taken that long (counted as refused).
  std::optional<Seat> take(std::chrono::milliseconds wait);

  size_t seats() const { return slots_.size(); }
  // The priority the seats' threads run at, above the process's (what setpriority granted: 0 when it refused).
  int nice() const;
  size_t in_use() const;
  uint64_t refused() const;

 private:
  struct Slot {
    bool taken = false;
    const std::function<void()>* work = nullptr;  // handed to the thread by Seat::run; null when done
    std::exception_ptr error;
    std::thread thread;
  };
  void give_back(size_t index);
  void serve(size_t index, int nice);

  mutable Mutex mu_;
  std::condition_variable seat_freed_;  // a seat was given back
  std::condition_variable work_cv_;     // work handed to a slot, done, or stopping
  std::vector<Slot> slots_;  // the slots' fields are guarded by mu_; the vector itself never changes after construction
  uint64_t refused_ GUARDED_BY(mu_) = 0;
  int nice_granted_ GUARDED_BY(mu_) = 0;
  size_t started_ GUARDED_BY(mu_) = 0;  // threads that have set their priority
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace allot::server
