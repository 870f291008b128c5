#include "core/lifecycle/remote_copy.h"

#include <algorithm>
#include <array>
#include <utility>

namespace allot {

namespace {

constexpr std::array<std::pair<RemoteStep, const char*>, 7> kNames = {{
    {RemoteStep::kDispatched, "dispatched"},
    {RemoteStep::kRunning, "running"},
    {RemoteStep::kSucceeded, "succeeded"},
    {RemoteStep::kFailed, "failed"},
    {RemoteStep::kLost, "lost"},
    {RemoteStep::kWithdrawn, "withdrawn"},
    {RemoteStep::kEvent, "event"},
}};
static_assert(kNames.size() == std::size(kRemoteSteps), "every remote step has a name");

// A change of reason within the job's state (held, released, ...): in its history too.
void say(Job& j, std::string reason, ReasonCode code, Time now) {
  j.history.push_back({now, j.state, j.state, reason});
  j.reason = std::move(reason);
  j.reason_code = code;
  j.feasible = true;
}

std::string where(const RemoteCopyRef& c) { return "worker cluster " + c.worker + " as job " + c.copy; }

}  // namespace

const char* remote_step_name(RemoteStep s) {
  for (const auto& [step, name] : kNames)
    if (step == s) return name;
  return "dispatched";
}

std::optional<RemoteStep> parse_remote_step(std::string_view s) {
  for (const auto& [step, name] : kNames)
    if (s == name) return step;
  return std::nullopt;
}

std::string copy_name(std::string_view job, int n) { return std::string(job) + "-" + std::to_string(n); }

Status step_remote_copy(ClusterState& s, std::string_view name, RemoteStep step, const RemoteCopyRef& copy,
                        const std::string& reason, Time now, uint64_t worker_seq) {
  const Job* cj = s.find_job(name);
  if (!cj) return Error::not_found("no job named " + std::string(name));
  Job& j = s.jobs[cj->id.index()];
  if (!j.spec.multicluster) return Error::precondition("job " + j.spec.name + " is not dispatched to worker clusters");
  if (copy.worker.empty() || copy.copy.empty()) return Error::invalid("job " + j.spec.name + ": a copy names its worker and its name");
  RemoteCopy& r = j.remote;
  const bool live = r.live == copy;
  auto needs_live = [&]() -> Status {
    if (!live || !is_waiting(j.state))
      return Error::precondition("job " + j.spec.name + ": " + copy.copy + " in worker " + copy.worker +
                                 " is not its live copy (" + remote_step_name(step) + ")");
    return ok_status();
  };
  switch (step) {
    case RemoteStep::kDispatched:
      if (live && is_waiting(j.state)) {  // its live copy waits in its worker again (preempted there, say)
        r.running = false;
        r.waiting_since = now;
        say(j, "dispatched to " + where(copy) + "; waiting there" + (reason.empty() ? "" : ": " + reason), ReasonCode::kDispatched, now);
        return ok_status();
      }
      if (!is_waiting(j.state) || !r.live.worker.empty())
        return Error::precondition("job " + j.spec.name + " is " + job_state_name(j.state) +
                                   (r.live.worker.empty() ? "" : " with a live copy in worker " + r.live.worker) +
                                   "; only a waiting job without a copy is dispatched");
      r.live = copy;
      r.last = copy;
      r.running = false;
      r.events_seen = 0;
      r.waiting_since = now;
      ++r.dispatches;
      say(j, "dispatched to " + where(copy) + "; waiting for it to be admitted there", ReasonCode::kDispatched, now);
      return ok_status();
    case RemoteStep::kRunning:
      if (auto st = needs_live(); !st) return st;
      r.running = true;
      say(j, "running in " + where(copy) + (reason.empty() ? "" : ": " + reason), ReasonCode::kRemoteRunning, now);
      return ok_status();
    case RemoteStep::kSucceeded:
    case RemoteStep::kFailed:
      if (auto st = needs_live(); !st) return st;
      r.live = {};
      r.running = false;
      return end_remote_job(s, name, now, step == RemoteStep::kSucceeded,
                            "in " + where(copy) + (reason.empty() ? "" : ": " + reason));
    case RemoteStep::kLost:
      if (auto st = needs_live(); !st) return st;
      r.stale.push_back(copy);
      r.live = {};
      r.running = false;
      say(j, "worker cluster " + copy.worker + " was lost" + (reason.empty() ? "" : " (" + reason + ")") +
                 "; waiting to be dispatched again (its copy " + copy.copy + " is cancelled there when it answers)",
          ReasonCode::kDispatched, now);
      return ok_status();
    case RemoteStep::kEvent:
      if (auto st = needs_live(); !st) return st;
      if (worker_seq <= r.events_seen)
        return Error::precondition("job " + j.spec.name + ": event " + std::to_string(worker_seq) + " of copy " + copy.copy +
                                   " is not after the last one mirrored (" + std::to_string(r.events_seen) + ")");
      r.events_seen = worker_seq;
      return ok_status();
    case RemoteStep::kWithdrawn: {
      auto it = std::find(r.stale.begin(), r.stale.end(), copy);
      if (it != r.stale.end()) {
        r.stale.erase(it);
        return ok_status();
      }
      if (!live) return Error::precondition("job " + j.spec.name + " has no copy " + copy.copy + " in worker " + copy.worker);
      r.live = {};
      r.running = false;
      if (is_waiting(j.state))
        say(j, "its copy in " + where(copy) + " was withdrawn" + (reason.empty() ? "" : " (" + reason + ")") +
                   "; waiting to be dispatched again",
            ReasonCode::kDispatched, now);
      return ok_status();
    }
  }
  return ok_status();
}

}  // namespace allot
