#pragma once
// Whether this server leads its store, and who does when it does not (docs/deployment.md, "Several servers"). On
// a store that is not shared the server always leads; on a shared one (PostgreSQL) the writer tries to take the
// lead every leader_poll while it is a standby, and asks the store every leader_poll whether it still leads
// (writer.cpp, step_leadership). One flag says it, read by request threads (to redirect writes) and by the writer.
//
// Threads: leading(), leader_url() and own_url() from any thread; the rest from the writer's thread (the URL to
// advertise is set before it starts).
#include <atomic>
#include <chrono>
#include <optional>
#include <string>

#include "common/thread_annotations.h"

namespace allot::server {

class Leadership {
 public:
  using Clock = std::chrono::steady_clock;

  bool leading() const { return leading_.load(); }
  // Where writes go: this server's own URL while it leads, else the leader's last known (empty while none is).
  std::string leader_url() const EXCLUDES(mu_);
  // The URL the other servers redirect writes to while this one leads.
  std::string own_url() const EXCLUDES(mu_);
  void set_advertise_url(std::string url) EXCLUDES(mu_);

  // At the start: a server alone on its store leads, one on a shared store starts as a standby.
  void begin(bool alone) { leading_ = alone; }
  void lead() { leading_ = true; }
  // Deposed: the leader is unknown until the next try, which is due at once.
  void step_down() EXCLUDES(mu_);
  // Another server leads, at `url` (empty while the store does not know it).
  void note_leader(std::string url) EXCLUDES(mu_);
  // Whether a standby's try to take the lead is due (always when `force`); if so, the next is due `poll` later.
  bool try_due(Clock::time_point now, bool force, std::chrono::milliseconds poll);
  // Whether the leader's check that it still leads is due; if so, the next is due `poll` later.
  bool check_due(Clock::time_point now, std::chrono::milliseconds poll);

 private:
  std::atomic<bool> leading_{true};
  mutable Mutex mu_;
  std::string leader_url_ GUARDED_BY(mu_);
  std::string advertise_url_ GUARDED_BY(mu_);
  Clock::time_point next_try_{};    // the writer's thread only
  Clock::time_point next_check_{};  // the writer's thread only
};

}  // namespace allot::server
