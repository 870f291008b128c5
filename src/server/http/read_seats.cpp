#include "server/http/read_seats.h"

#include "server/thread_priority.h"

namespace allot::server {

ReadSeats::ReadSeats(size_t seats, int nice) : slots_(seats) {
  try {
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].thread = std::thread([this, i, nice] { serve(i, nice); });
  } catch (...) {  // no thread to be had: the ones started leave, and the server does not start
    {
      MutexLock lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (Slot& s : slots_)
      if (s.thread.joinable()) s.thread.join();
    throw;
  }
  // Every thread has its priority before the first listing (and nice() says what was granted).
  MutexLock lock(mu_);
  while (started_ != slots_.size()) work_cv_.wait(lock.native());
}

ReadSeats::~ReadSeats() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (Slot& s : slots_) s.thread.join();
}

void ReadSeats::serve(size_t index, int nice) {
  name_thread("allot-listing");
  const int granted = adjust_thread_nice(nice, "job listings' threads");
  MutexLock lock(mu_);
  if (index == 0) nice_granted_ = granted;
  ++started_;
  work_cv_.notify_all();
  Slot& slot = slots_[index];
  for (;;) {
    while (!stopping_ && !slot.work) work_cv_.wait(lock.native());
    if (!slot.work) return;  // stopping, nothing handed over
    const std::function<void()>* work = slot.work;
    lock.unlock();
    std::exception_ptr error;
    try {
      (*work)();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    slot.error = error;
    slot.work = nullptr;
    work_cv_.notify_all();
  }
}

void ReadSeats::Seat::run(const std::function<void()>& work) {
  MutexLock lock(owner_->mu_);
  Slot& slot = owner_->slots_[index_];
  slot.work = &work;
  owner_->work_cv_.notify_all();
  // The seat's thread leaves only once stopping_ is set and no work is handed to it: work handed over runs.
  while (slot.work != nullptr) owner_->work_cv_.wait(lock.native());
  if (std::exception_ptr error = std::exchange(slot.error, nullptr)) std::rethrow_exception(error);
}

std::optional<ReadSeats::Seat> ReadSeats::take(std::chrono::milliseconds wait) {
  MutexLock lock(mu_);
  auto free_slot = [&]() -> Slot* {
    for (Slot& s : slots_)
      if (!s.taken) return &s;
    return nullptr;
  };
  const auto until = std::chrono::steady_clock::now() + wait;
  Slot* s = free_slot();
  while (!s) {
    if (seat_freed_.wait_until(lock.native(), until) == std::cv_status::timeout && !(s = free_slot())) {
      ++refused_;
      return std::nullopt;
    }
    s = free_slot();
  }
  s->taken = true;
  return Seat(this, static_cast<size_t>(s - slots_.data()));
}

void ReadSeats::give_back(size_t index) {
  {
    MutexLock lock(mu_);
    slots_[index].taken = false;
  }
  seat_freed_.notify_one();
}

int ReadSeats::nice() const {
  MutexLock lock(mu_);
  return nice_granted_;
}

size_t ReadSeats::in_use() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const Slot& s : slots_) n += s.taken;
  return n;
}

uint64_t ReadSeats::refused() const {
  MutexLock lock(mu_);
  return refused_;
}

}  // namespace allot::server
