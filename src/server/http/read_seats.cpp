#include "server/http/read_seats.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allot::server {

namespace {
// Lowers the calling thread's CPU priority by `nice` (Linux keeps a nice value per thread); returns how much it
// was lowered (0 when setpriority refused).
int lower_seat_thread_priority(int nice) {
  if (nice == 0) return 0;
  const auto tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int before = ::getpriority(PRIO_PROCESS, tid);
  if (before == -1 && errno != 0) return 0;
  if (::setpriority(PRIO_PROCESS, tid, before + nice) != 0) {
    spdlog::warn("job listings render at the server's own priority: setpriority({}) failed: {}", before + nice, std::strerror(errno));
    return 0;
  }
  return ::getpriority(PRIO_PROCESS, tid) - before;
}
}  // namespace

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
  const int granted = lower_seat_thread_priority(nice);
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
