#pragma once
// The threads that ask HTTP admission checks (admission_checks.h; docs/api.md, "Admission checks"), off the
// writer's thread. After every durable batch that moved the events or the checks, the writer hands this class the
// asks (check_asks: each HTTP check a run waits for) as data; a run no longer listed is no longer asked. Asker
// threads POST each ask's job summary to its check's URL (outgoing_post.h: timeouts, no redirects, TLS verified)
// and hand a usable answer ({"state": ready|retry|reject}) back to the writer as a command (take_check_answer),
// which journals it. A try that gets no usable answer (no connection, a timeout, a status other than 2xx, a body
// that is not an answer) is noted on the job (note_check_failure: its description says why and when the next try
// goes) and tried again after retry_delay(failures) (webhook_rules.h): backoff doubled each time up to backoff_max.
// Only a leading server asks.
//
// What a crash loses: the tries under way and their backoff. Answers are journaled; a restarted server (or a new
// leader) hands the asks of the runs still waiting to its checker, which asks them again at once.
//
// Thread-safety: every public member may be called from any thread.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "server/outside/admission_checks.h"
#include "server/options.h"
#include "server/http/reply.h"
#include "common/thread_annotations.h"
#include "server/writer/writer.h"

namespace allot::server {

class AdmissionChecker {
 public:
  // `submit` runs a command on the writer and waits for its answer (Writer::call, as the server).
  AdmissionChecker(AdmissionCheckOptions options, std::function<Reply(Command)> submit, std::function<bool()> leading, Clock clock);
  ~AdmissionChecker();
  AdmissionChecker(const AdmissionChecker&) = delete;
  AdmissionChecker& operator=(const AdmissionChecker&) = delete;

  // The asks as of the last durable batch (Writer::set_on_check_asks). Asks already known keep their backoff.
  void set_asks(std::vector<CheckAsk> asks);
  void start();
  void stop();  // tries under way finish (each within its timeouts); the rest are dropped

  struct Counters {
    uint64_t tries = 0;      // POSTs made
    uint64_t answers = 0;    // usable answers handed to the writer
    uint64_t failures = 0;   // tries without a usable answer
    uint64_t waiting = 0;    // asks known now
  };
  Counters counters() const;

 private:
  using Key = std::tuple<std::string, int, std::string>;  // job, attempt, check
  using SteadyTime = std::chrono::steady_clock::time_point;
  struct Entry {
    CheckAsk ask;
    int failures = 0;
    SteadyTime due{};
    bool busy = false;      // an asker holds it
    bool answered = false;  // its answer went to the writer: not asked again while it is listed
  };
  void ask_loop();
  // One try: the answer, or an error saying why there is none.
  Result<std::pair<store::CheckAnswer, std::string>> ask(const CheckAsk& a);

  const AdmissionCheckOptions options_;
  const std::function<Reply(Command)> submit_;
  const std::function<bool()> leading_;
  const Clock clock_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Entry> entries_ GUARDED_BY(mu_);
  Counters counters_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> askers_;
};

}  // namespace allot::server
