#include "server/read_seats.h"

namespace allot::server {

std::optional<ReadSeats::Seat> ReadSeats::take(std::chrono::milliseconds wait) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, wait, [&] { return free_ > 0; })) {
    ++refused_;
    return std::nullopt;
  }
  --free_;
  return Seat(this);
}

void ReadSeats::give_back() {
  {
    std::lock_guard lock(mu_);
    ++free_;
  }
  cv_.notify_one();
}

size_t ReadSeats::in_use() const {
  std::lock_guard lock(mu_);
  return seats_ - free_;
}

uint64_t ReadSeats::refused() const {
  std::lock_guard lock(mu_);
  return refused_;
}

}  // namespace allot::server
