#include "server/outside/dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "client/http_client.h"
#include "client/spec_json.h"
#include "core/model/dependency.h"
#include "core/lifecycle/remote_copy.h"
#include "view/times.h"

namespace allot::server {

using nlohmann::json;

namespace {

constexpr size_t kMaxReason = 500;  // a worker's reason, as the manager's journal keeps it

std::string bounded(std::string s) {
  if (s.size() > kMaxReason) s = s.substr(0, kMaxReason) + "...";
  return s;
}

Result<client::Response> ask(const WorkerCluster& w, std::chrono::milliseconds timeout, const std::string& method,
                             const std::string& path, const json* body = nullptr) {
  auto api = client::ApiClient::connect(w.url, client::ConnectOptions{w.ca_file, w.token});
  if (!api) return api.error();
  api->set_timeout(timeout);
  const std::string text = body ? body->dump() : "";
  return api->send(method, path, body ? &text : nullptr);
}

Result<json> ask_json(const WorkerCluster& w, std::chrono::milliseconds timeout, const std::string& path) {
  auto r = ask(w, timeout, "GET", path);
  if (!r) return r.error();
  if (r->status != 200) return client::error_from_response(*r);
  try {
    return json::parse(r->body);
  } catch (const json::exception& e) {
    return Error::internal("worker " + w.name + " answered " + path + " with no JSON: " + e.what());
  }
}

// The copy as the worker's POST /v1/jobs takes it: the manager's spec under the copy's name, without what is the
// manager's own (its user, dependencies on its jobs, its capacity plans, the array it was a task of).
json copy_body(JobSpec spec, const std::string& copy) {
  spec.name = copy;
  spec.multicluster = false;
  spec.user.clear();
  spec.after.clear();
  spec.plan.clear();
  spec.array.reset();
  return client::job_body(spec);
}

JobDemand demand_of(const JobSpec& spec, const Catalog& catalog) {
  JobDemand d;
  for (const auto& ps : spec.pod_sets) {
    long long per = ps.per_replica.accelerators.value_or(0);
    if (ps.per_replica.whole_node && !ps.instance_type.empty())
      if (auto t = catalog.lookup(ps.instance_type)) per = catalog.at(*t).accelerators;
    d.accelerators[ps.instance_type] += per * ps.replicas;
  }
  return d;
}

}  // namespace

struct Dispatcher::JobWork {
  std::string job;
  std::string team;
  bool active = false;
  bool waiting = false;
  bool deps_hold = true;
  RemoteCopy remote;
  JobSpec spec;
};

Dispatcher::Dispatcher(MulticlusterOptions options, Catalog catalog, Writer& writer, Clock clock)
    : options_(std::move(options)), catalog_(std::move(catalog)), writer_(writer), clock_(std::move(clock)), started_ms_(clock_()) {}

Dispatcher::~Dispatcher() { stop(); }

void Dispatcher::start() {
  if (options_.workers.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Dispatcher::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Dispatcher::loop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    tick();
    lock.lock();
    const auto until = std::chrono::steady_clock::now() + options_.poll;
    while (!stopping_)
      if (cv_.wait_until(lock.native(), until) == std::cv_status::timeout) break;
  }
}

const WorkerCluster* Dispatcher::worker(const std::string& name) const {
  for (const auto& w : options_.workers)
    if (w.name == name) return &w;
  return nullptr;
}

bool Dispatcher::reachable(const std::string& worker) const { return answered_now_.count(worker) > 0; }

Status Dispatcher::journal(const std::string& job, RemoteStep step, const RemoteCopyRef& copy, std::string reason,
                           uint64_t worker_seq, std::string worker_kind) {
  store::RemoteCopyStep rec{job, step, copy.worker, copy.copy, bounded(std::move(reason)), worker_seq, bounded(std::move(worker_kind))};
  Reply r = writer_.call(
      [rec](Txn& txn) -> Result<Render> {
        if (auto st = txn.apply(rec); !st) return st.error();
        return Render([](const ServerState&) { return Reply{204, "", ""}; });
      },
      CallContext{kServerActor, std::nullopt});
  if (r.status >= 300) return Error::internal("job " + job + ": step " + remote_step_name(step) + " not journaled: " + r.body.substr(0, 200));
  if (step != RemoteStep::kEvent) spdlog::info("job {}: copy {} in worker {}: {}", job, copy.copy, copy.worker, remote_step_name(step));
  return ok_status();
}

WorkerView Dispatcher::view_of(const WorkerCluster& w, const std::string& team) {
  WorkerView v;
  v.name = w.name;
  auto cluster = ask_json(w, options_.timeout, "/v1/dashboard/cluster");
  if (!cluster) return v;
  auto t = ask(w, options_.timeout, "GET", "/v1/teams/" + client::url_encode(team));
  if (!t || (t->status != 200 && t->status != 404)) return v;
  try {
    for (const auto& it : cluster->at("instance_types"))
      v.free[it.at("instance_type").get<std::string>()] = it.at("accelerators").at("free").get<long long>();
    if (t->status == 200) {
      v.has_team = true;
      // Held in a variable: a range-for over a member of a temporary would read it after its end.
      const json team_view = json::parse(t->body);
      for (const auto& it : team_view.at("instance_types"))
        v.headroom[it.at("instance_type").get<std::string>()] =
            it.at("max").at("accelerators").get<long long>() - it.at("usage").at("accelerators").get<long long>();
    }
  } catch (const json::exception& e) {
    spdlog::warn("worker {}: its views could not be read: {}", w.name, e.what());
    return WorkerView{w.name};
  }
  v.answered = true;
  return v;
}

void Dispatcher::tick() {
  if (!writer_.leading()) return;
  std::vector<JobWork> work;
  Reply read = writer_.read(
      [&work](Txn& txn) -> Result<Render> {
        const ClusterState& s = txn.cluster();
        for (const Job& j : s.jobs) {
          if (j.compacted || !j.spec.multicluster) continue;
          const bool active = is_active(j.state);
          if (!active && j.remote.live.worker.empty() && j.remote.stale.empty()) continue;
          JobWork w{j.spec.name, s.teams[j.team.index()].spec.name, active, is_waiting(j.state), !waits_for_dependency(s, j), j.remote, {}};
          if (active) w.spec = j.spec;
          work.push_back(std::move(w));
        }
        return Render([](const ServerState&) { return Reply{204, "", ""}; });
      },
      CallContext{kServerActor, std::nullopt});
  if (read.status >= 300) return;

  // Which workers answer now: every round asks each one, so that their leases follow them whether or not they hold
  // copies.
  const int64_t now = clock_();
  answered_now_.clear();
  for (const auto& w : options_.workers) {
    auto r = ask(w, options_.timeout, "GET", "/v1/health");
    if (!r || r->status != 200) continue;
    answered_now_.insert(w.name);
    MutexLock lock(mu_);
    last_answer_ms_[w.name] = now;
  }
  // The copies' events first, so that the manager's event log tells what happened there before the step it led to.
  mirror_events(work);
  std::map<std::pair<std::string, std::string>, WorkerView> views;  // (worker, team), asked once a round
  for (const JobWork& w : work) {
    for (const RemoteCopyRef& stale : w.remote.stale)
      if (reachable(stale.worker)) withdraw(w.job, stale);
    const RemoteCopyRef& live = w.remote.live;
    if (!live.worker.empty()) {
      if (!w.active) {
        if (reachable(live.worker)) withdraw(w.job, live);
        continue;
      }
      if (reachable(live.worker)) {
        follow(w);
        continue;
      }
      int64_t last = started_ms_;
      {
        MutexLock lock(mu_);
        last = std::max(last, last_answer_ms_[live.worker]);
      }
      if (now - last >= options_.lease.count())
        (void)journal(w.job, RemoteStep::kLost, live,
                      "it answered nothing for " + std::to_string((now - last) / 1000) + " s, its lease is " +
                          std::to_string(options_.lease.count() / 1000) + " s");
      continue;
    }
    if (w.waiting && w.deps_hold) dispatch(w, views);
  }
}

void Dispatcher::follow(const JobWork& w) {
  const RemoteCopyRef& live = w.remote.live;
  const WorkerCluster* c = worker(live.worker);
  if (!c) return;  // a worker no longer configured: its copies wait for the lease (never answered)
  auto r = ask(*c, options_.timeout, "GET", "/v1/jobs/" + client::url_encode(live.copy));
  if (!r) return;
  if (r->status == 404) {
    // Journaled but never submitted (or submitted and lost with a worker's journal): submit it now, idempotently.
    const json body = copy_body(w.spec, live.copy);
    auto s = ask(*c, options_.timeout, "POST", "/v1/jobs", &body);
    if (s && s->status >= 400 && s->status < 500 && s->status != 409) {
      refused_[w.job].insert(live.worker);
      (void)journal(w.job, RemoteStep::kWithdrawn, live, "worker " + live.worker + " refused the copy: " + client::error_from_response(*s).message);
    }
    return;
  }
  if (r->status != 200) return;
  json j;
  try {
    j = json::parse(r->body);
  } catch (const json::exception&) {
    return;
  }
  const std::string state = j.value("state", "");
  const std::string reason = j.value("reason", "");
  const bool waits_there = state == "Pending" || state == "Suspended";
  if (waits_there && !w.remote.running && options_.dispatch_timeout.count() > 0 &&
      clock_() / 1000 - w.remote.waiting_since >= options_.dispatch_timeout.count() / 1000) {
    time_out(w);
    return;
  }
  if (state == "Running" && !w.remote.running) (void)journal(w.job, RemoteStep::kRunning, live, reason);
  else if (waits_there && w.remote.running) (void)journal(w.job, RemoteStep::kDispatched, live, reason);
  else if (state == "Succeeded") (void)journal(w.job, RemoteStep::kSucceeded, live, reason);
  else if (state == "Failed") (void)journal(w.job, RemoteStep::kFailed, live, reason);
  else if (state == "Cancelled") (void)journal(w.job, RemoteStep::kFailed, live, "cancelled there: " + reason);
}

void Dispatcher::mirror_events(const std::vector<JobWork>& work) {
  // Per worker that answers, its live copies: copy name -> (the job, the copy's last event mirrored).
  std::map<std::string, std::map<std::string, std::pair<std::string, uint64_t>>> copies;
  for (const JobWork& w : work)
    if (w.active && !w.remote.live.worker.empty() && reachable(w.remote.live.worker))
      copies[w.remote.live.worker][w.remote.live.copy] = {w.job, w.remote.events_seen};
  constexpr int kPagesPerLook = 10;  // 10,000 events: what a worker keeps; the rest waits for the next look
  for (auto& [name, live] : copies) {
    const WorkerCluster* c = worker(name);
    if (!c) continue;
    // Where to read on: where the last look stopped (a copy dispatched since has only later events); after a start,
    // from the oldest of the copies' last events mirrored (0 for a copy none of whose events were: the worker's
    // oldest kept event on).
    uint64_t since = UINT64_MAX;
    if (auto cursor = events_read_.find(name); cursor != events_read_.end())
      since = cursor->second;
    else
      for (const auto& [copy, job_seen] : live) since = std::min(since, job_seen.second);
    for (int page = 0; page < kPagesPerLook; ++page) {
      auto r = ask_json(*c, options_.timeout, "/v1/events?since=" + std::to_string(since));
      if (!r) break;
      size_t count = 0;
      uint64_t next = since;
      try {
        const json& events = r->at("events");
        count = events.size();
        for (const json& e : events) {
          const uint64_t seq = e.at("seq").get<uint64_t>();
          if (!e.contains("job") || !e["job"].is_string()) continue;
          auto it = live.find(e["job"].get<std::string>());
          if (it == live.end() || seq <= it->second.second) continue;
          // Not journaled (the writer refused it, or the job changed since the read): the next look reads it again.
          if (!journal(it->second.first, RemoteStep::kEvent, RemoteCopyRef{name, it->first}, e.value("message", ""), seq,
                       e.value("kind", "")))
            return;
          it->second.second = seq;
        }
        next = r->at("next").get<uint64_t>();
      } catch (const json::exception& e) {
        spdlog::warn("worker {}: its events could not be read: {}", name, e.what());
        break;
      }
      // A worker that renumbered its events (restarted from an older snapshot) answers a `next` behind: read from
      // its start again; the copies' own marks keep what was mirrored from being mirrored twice.
      since = next < since ? 0 : next;
      events_read_[name] = since;
      if (count < 1000) break;
    }
  }
}

void Dispatcher::time_out(const JobWork& w) {
  const RemoteCopyRef& live = w.remote.live;
  const WorkerCluster* c = worker(live.worker);
  if (!c) return;
  auto r = ask(*c, options_.timeout, "POST", "/v1/jobs/" + client::url_encode(live.copy) + "/cancel");
  if (!r) return;
  // 200: cancelled (admitted there between the look and the cancel, it stops at once: the job runs in one cluster
  // either way); 404: it never got there. 409: it ended there meanwhile, which the next look follows.
  if (r->status != 200 && r->status != 404) return;
  if (journal(w.job, RemoteStep::kWithdrawn, live,
              "not admitted there within the dispatch timeout of " + std::to_string(options_.dispatch_timeout.count() / 1000) + " s"))
    passed_over_[w.job] = live.worker;
}

void Dispatcher::withdraw(const std::string& job, const RemoteCopyRef& copy) {
  const WorkerCluster* c = worker(copy.worker);
  if (!c) return;
  auto r = ask(*c, options_.timeout, "POST", "/v1/jobs/" + client::url_encode(copy.copy) + "/cancel");
  if (!r) return;
  // 200: cancelled; 409: it had ended there; 404: it never got there. The copy is no longer anywhere either way.
  if (r->status == 200 || r->status == 409 || r->status == 404) (void)journal(job, RemoteStep::kWithdrawn, copy, "");
}

void Dispatcher::dispatch(const JobWork& w, std::map<std::pair<std::string, std::string>, WorkerView>& views) {
  std::vector<WorkerView> seen;
  for (const auto& c : options_.workers) {
    if (!reachable(c.name)) {
      seen.push_back(WorkerView{c.name});
      continue;
    }
    auto key = std::make_pair(c.name, w.team);
    auto it = views.find(key);
    if (it == views.end()) it = views.emplace(key, view_of(c, w.team)).first;
    seen.push_back(it->second);
  }
  const JobDemand d = demand_of(w.spec, catalog_);
  // A worker the job just timed out in goes last: it is chosen again only when no other can admit the job now.
  std::set<std::string> excluded = refused_[w.job];
  auto passed = passed_over_.find(w.job);
  if (passed != passed_over_.end()) excluded.insert(passed->second);
  DispatchChoice choice = choose_worker(d, seen, excluded);
  if (passed != passed_over_.end()) {
    if (!choice.worker) choice = choose_worker(d, seen, refused_[w.job]);
    passed_over_.erase(passed);
  }
  if (!choice.worker) {
    // Said once per change, not at every look.
    if (std::exchange(waiting_why_[w.job], choice.why) != choice.why)
      spdlog::info("job {}: no worker cluster can admit it now: {}", w.job, choice.why);
    return;
  }
  waiting_why_.erase(w.job);
  const RemoteCopyRef copy{*choice.worker, copy_name(w.job, w.remote.dispatches + 1)};
  if (!journal(w.job, RemoteStep::kDispatched, copy, "")) return;
  // What it takes there counts at once for the jobs after it in this round.
  for (auto& [key, v] : views)
    if (key.first == copy.worker)
      for (const auto& [type, need] : d.accelerators) {
        v.free[type] -= need;
        if (key.second == w.team) v.headroom[type] -= need;
      }
  const json body = copy_body(w.spec, copy.copy);
  auto s = ask(*worker(copy.worker), options_.timeout, "POST", "/v1/jobs", &body);
  if (s && s->status >= 400 && s->status < 500 && s->status != 409) {
    refused_[w.job].insert(copy.worker);
    (void)journal(w.job, RemoteStep::kWithdrawn, copy, "worker " + copy.worker + " refused the copy: " + client::error_from_response(*s).message);
  }
  // Not answered: the next round finds the copy missing there (404) and submits it again.
}

json Dispatcher::workers_json() const {
  MutexLock lock(mu_);
  json list = json::array();
  for (const auto& w : options_.workers) {
    json o = {{"name", w.name}, {"url", w.url}};
    auto it = last_answer_ms_.find(w.name);
    o["last_answer"] = it == last_answer_ms_.end() ? json(nullptr) : json(view::rfc3339_ms(it->second));
    const int64_t last = std::max(started_ms_, it == last_answer_ms_.end() ? 0 : it->second);
    o["lost"] = clock_() - last >= options_.lease.count();
    list.push_back(std::move(o));
  }
  return {{"teams", options_.teams}, {"lease_s", options_.lease.count() / 1000}, {"poll_s", options_.poll.count() / 1000},
          {"workers", std::move(list)}};
}

Result<std::string> Dispatcher::copy_logs(const RemoteCopyRef& copy, int replica, int64_t tail) const {
  const WorkerCluster* c = worker(copy.worker);
  if (!c) return Error::not_found("worker cluster " + copy.worker + " is not in this manager's --workers file");
  std::string path = "/v1/jobs/" + client::url_encode(copy.copy) + "/logs?replica=" + std::to_string(replica);
  if (tail > 0) path += "&tail=" + std::to_string(tail);
  auto r = ask(*c, options_.timeout, "GET", path);
  if (!r) return Error::internal("worker cluster " + copy.worker + " did not answer for the logs of copy " + copy.copy + ": " + r.error().message);
  if (r->status != 200) {
    Error e = client::error_from_response(*r);
    return Error{e.code, "worker cluster " + copy.worker + ", copy " + copy.copy + ": " + e.message};
  }
  return r->body;
}

}  // namespace allot::server
