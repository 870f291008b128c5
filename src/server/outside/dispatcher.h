#pragma once
// Several clusters (docs/multicluster.md): a manager server's dispatcher, on a thread of its own, never the
// writer's. Every `poll` it reads the jobs of the dispatched teams from the writer's published view, asks every
// worker cluster for its quota and capacity views (GET /v1/teams/{team}, GET /v1/dashboard/cluster) and for each
// copy's state (GET /v1/jobs/{copy}), and acts:
//
//   - a waiting job without a copy goes to the worker that can admit it now (dispatch_choice.h): the step
//     `dispatched` is journaled first, then the copy (named JOB-N, core/lifecycle/remote_copy.h copy_name) is submitted there;
//   - a copy admitted there, waiting there again, or ended there is mirrored (steps `running`, `dispatched`,
//     `succeeded`, `failed`), with the worker's reason;
//   - a worker that answered nothing for `lease` is lost: each of its live copies gets the step `lost` and its job is
//     dispatched again, elsewhere when another worker can admit it; the stale copy is cancelled in the lost worker
//     once it answers again (`withdrawn`);
//   - a job cancelled here has its copy cancelled there (`withdrawn`), and so is a copy that waited there longer than
//     the dispatch timeout: its job is dispatched again, passing that worker over for the next choice when another
//     can admit it now;
//   - the events of each live copy there (GET /v1/events, read on from where the last look stopped) are mirrored
//     here, one step `event` each, numbered by the worker: a copy's event is mirrored once (Job::remote.events_seen).
//
// Exactly one copy is a job's own at a time (Job::remote.live): the dispatcher dispatches only a job without one, so
// a job runs in one worker, except while a lost worker that still runs its stale copy has not answered again (a
// network partition: the lease is the time the manager gives it to come back before running the job elsewhere).
//
// A fault in the middle: a dispatch journaled but never submitted (a manager killed between the two) is found at
// the next look, after a restart too: the worker answers 404 for the copy, and it is submitted then; one submitted
// twice is answered 409 by the worker, which is taken as done. A step the writer could not journal is decided
// again at the next look. A restarted manager gives every worker a fresh lease (it does not know when they last
// answered), so a restart never makes a worker lost early. Only a leading server dispatches.
//
// Thread-safety: workers_json() and copy_logs() from any thread; start()/stop() from the server's.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/catalog.h"
#include "server/outside/dispatch_choice.h"
#include "server/options.h"
#include "common/thread_annotations.h"
#include "server/writer/writer.h"

namespace allot::server {

class Dispatcher {
 public:
  Dispatcher(MulticlusterOptions options, Catalog catalog, Writer& writer, Clock clock);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  void start();
  void stop();

  // GET /v1/workers: each worker's name, URL, lease and when it last answered; never its token.
  nlohmann::json workers_json() const;
  // GET /v1/jobs/{job}/logs of a manager's job: the copy's log, read from its worker.
  Result<std::string> copy_logs(const RemoteCopyRef& copy, int replica, int64_t tail) const;

 private:
  struct JobWork;
  void loop();
  void tick();
  const WorkerCluster* worker(const std::string& name) const;
  WorkerView view_of(const WorkerCluster& w, const std::string& team);
  Status journal(const std::string& job, RemoteStep step, const RemoteCopyRef& copy, std::string reason,
                 uint64_t worker_seq = 0, std::string worker_kind = "");
  void follow(const JobWork& w);
  void mirror_events(const std::vector<JobWork>& work);
  void time_out(const JobWork& w);
  void withdraw(const std::string& job, const RemoteCopyRef& copy);
  void dispatch(const JobWork& w, std::map<std::pair<std::string, std::string>, WorkerView>& views);
  bool reachable(const std::string& worker) const;

  const MulticlusterOptions options_;
  const Catalog catalog_;
  Writer& writer_;
  const Clock clock_;
  const int64_t started_ms_;

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::map<std::string, int64_t> last_answer_ms_ GUARDED_BY(mu_);  // per worker, its last answer (0: none yet)
  std::set<std::string> answered_now_;             // dispatcher thread only: the workers that answered this round
  std::map<std::string, std::set<std::string>> refused_;  // dispatcher thread only: job -> workers that refused it
  std::map<std::string, std::string> waiting_why_;        // dispatcher thread only: job -> why no worker took it
  std::map<std::string, uint64_t> events_read_;          // dispatcher thread only: worker -> its events read up to
  std::map<std::string, std::string> passed_over_;        // dispatcher thread only: job -> the worker it timed out in
  std::thread thread_;
};

}  // namespace allot::server
