#include "server/writer/leadership.h"

#include <utility>

namespace allot::server {

std::string Leadership::leader_url() const {
  MutexLock lock(mu_);
  return leading_ ? advertise_url_ : leader_url_;
}

std::string Leadership::own_url() const {
  MutexLock lock(mu_);
  return advertise_url_;
}

void Leadership::set_advertise_url(std::string url) {
  MutexLock lock(mu_);
  advertise_url_ = std::move(url);
}

void Leadership::step_down() {
  leading_ = false;
  next_try_ = {};
  MutexLock lock(mu_);
  leader_url_.clear();  // not ourselves any more; the next try finds who leads
}

void Leadership::note_leader(std::string url) {
  MutexLock lock(mu_);
  leader_url_ = std::move(url);
}

bool Leadership::try_due(Clock::time_point now, bool force, std::chrono::milliseconds poll) {
  if (!force && now < next_try_) return false;
  next_try_ = now + poll;
  return true;
}

bool Leadership::check_due(Clock::time_point now, std::chrono::milliseconds poll) {
  if (now < next_check_) return false;
  next_check_ = now + poll;
  return true;
}

}  // namespace allot::server
