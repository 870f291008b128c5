#include "server/outside/admission_checker.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "server/outside/outgoing_post.h"
#include "server/version.h"
#include "server/outside/webhook_rules.h"

namespace allot::server {

AdmissionChecker::AdmissionChecker(AdmissionCheckOptions options, std::function<Reply(Command)> submit,
                                   std::function<bool()> leading, Clock clock)
    : options_(std::move(options)), submit_(std::move(submit)), leading_(std::move(leading)), clock_(std::move(clock)) {}

AdmissionChecker::~AdmissionChecker() { stop(); }

void AdmissionChecker::set_asks(std::vector<CheckAsk> asks) {
  MutexLock lock(mu_);
  std::map<Key, Entry> next;
  const auto now = std::chrono::steady_clock::now();
  for (CheckAsk& a : asks) {
    Key key{a.job, a.attempt, a.check};
    auto it = entries_.find(key);
    Entry e = it != entries_.end() ? std::move(it->second) : Entry{{}, 0, now, false, false};
    // The check's URL may have changed (a PUT replaced it): the next try goes to the new one at once.
    if (it != entries_.end() && e.ask.url != a.url) e.due = now, e.answered = false;
    e.ask = std::move(a);
    next.emplace(std::move(key), std::move(e));
  }
  entries_ = std::move(next);
  cv_.notify_all();
}

void AdmissionChecker::start() {
  for (int i = 0; i < std::max(1, options_.askers); ++i) askers_.emplace_back([this] { ask_loop(); });
}

void AdmissionChecker::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : askers_)
    if (t.joinable()) t.join();
  askers_.clear();
}

AdmissionChecker::Counters AdmissionChecker::counters() const {
  MutexLock lock(mu_);
  Counters c = counters_;
  c.waiting = entries_.size();
  return c;
}

Result<std::pair<store::CheckAnswer, std::string>> AdmissionChecker::ask(const CheckAsk& a) {
  auto url = parse_webhook_url(a.url);
  if (!url) return url.error();
  OutgoingPost post{{{"User-Agent", std::string("allot-admission-check/") + kVersion}, {"X-Allot-Admission-Check", a.check}},
                    a.body, options_.connect_timeout, options_.timeout};
  OutgoingAnswer answer = post_outgoing(*url, post);
  if (answer.status == 0) return Error::precondition(answer.error);
  if (answer.status < 200 || answer.status >= 300)
    return Error::precondition("the endpoint answered HTTP " + std::to_string(answer.status));
  return parse_check_reply(answer.body);
}

void AdmissionChecker::ask_loop() {
  MutexLock lock(mu_);
  for (;;) {
    if (stopping_) return;
    // The free ask due first.
    auto next = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (!it->second.busy && !it->second.answered && (next == entries_.end() || it->second.due < next->second.due)) next = it;
    if (next == entries_.end()) {
      cv_.wait(lock.native());
      continue;
    }
    if (next->second.due > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock.native(), next->second.due);
      continue;
    }
    if (!leading_()) {  // a standby asks nothing; look again in a while
      next->second.due = std::chrono::steady_clock::now() + options_.backoff;
      continue;
    }
    const Key key = next->first;
    const CheckAsk a = next->second.ask;
    next->second.busy = true;
    ++counters_.tries;
    lock.unlock();
    auto answer = ask(a);
    std::string error;
    if (answer) {
      // The writer journals it when the run still waits for the check (take_check_answer).
      const AdmissionCheckOptions opts = options_;
      Reply r = submit_([a, answer = *answer, opts](Txn& txn) -> Result<Render> {
        if (auto st = take_check_answer(txn, a.job, a.attempt, a.check, answer.first, answer.second, opts); !st) return st.error();
        return Render([](const ServerState&) { return Reply{204, "", ""}; });
      });
      if (r.status >= 300) error = "the server could not take the answer (HTTP " + std::to_string(r.status) + "): " + r.body.substr(0, 200);
    } else {
      error = answer.error().message;
    }
    lock.lock();
    // Counted before the entry is looked up: a journaled answer usually removes it (the writer's next asks no
    // longer list the run) before this thread takes the lock again.
    ++(error.empty() ? counters_.answers : counters_.failures);
    auto it = entries_.find(key);
    if (it == entries_.end()) continue;  // no longer asked (the run ended, the check was deleted, or it answered)
    Entry& e = it->second;
    e.busy = false;
    if (error.empty()) {
      e.answered = true;
      continue;
    }
    ++e.failures;
    const auto delay = retry_delay(e.failures, options_.backoff, options_.backoff_max);
    e.due = std::chrono::steady_clock::now() + delay;
    const int failures = e.failures;
    lock.unlock();
    spdlog::info("admission check {} for job {} (attempt {}): try {} failed: {}; next in {} ms", a.check, a.job, a.attempt,
                 failures, error, delay.count());
    const int64_t next_ms = clock_() + delay.count();
    (void)submit_([a, failures, error, next_ms](Txn& txn) -> Result<Render> {
      note_check_failure(txn.state(), a.job, a.attempt, a.check, failures, error, next_ms);
      return Render([](const ServerState&) { return Reply{204, "", ""}; });
    });
    lock.lock();
  }
}

}  // namespace allot::server
