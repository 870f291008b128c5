#include "agent/agent.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>

#include <cstdio>

#include "auth/secret_file.h"
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>

#include "agent/fencing.h"
#include "agent/membership.h"
#include "agent/rendezvous_port.h"
#include "agent/watchdog.h"
#include "view/replica_failure.h"
#include "core/model/plans.h"

namespace allot::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// True when `path` is /tmp or below it: a private /tmp bound over it would hide it from the replica.
bool under_tmp(const std::string& path) {
  if (path.empty()) return false;
  std::error_code ec;
  const std::string p = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  return p == "/tmp" || p.rfind("/tmp/", 0) == 0;
}

// Job names come from users; keep them from escaping the work directory.
std::string safe_path_part(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

// Whether the server has all of a replica's log (or there is none to read).
bool fully_shipped(const std::string& log_path, uint64_t shipped) { return log_size(log_path) <= shipped; }

}  // namespace

Agent::Agent(AgentOptions options, Inventory inventory, client::ApiClient api, std::ostream& log)
    : opt_(std::move(options)), inv_(std::move(inventory)), api_(std::move(api)), log_(log), procs_(opt_.stop_grace, opt_.shim_program) {
  facts_.kind = inv_.kind;
  facts_.neuron_cores_per_device = inv_.neuron_cores_per_device;
  facts_.cpus = inv_.cpus;
  facts_.user = opt_.user.name;
  facts_.home = opt_.user.home;
  for (const auto& d : inv_.mig_devices) facts_.mig_uuids.push_back(d.uuid);
}

Agent::~Agent() {
  watch_stop_ = true;
  if (watcher_.joinable()) {
    watch_api_->cancel();
    watcher_.join();
  }
  if (lock_fd_ >= 0) close(lock_fd_);
  if (watchdog_fd_ >= 0) close(watchdog_fd_);  // the watchdog finds nothing left and exits
}

void Agent::say(const std::string& line) { log_ << "allot agent " << opt_.name << ": " << line << std::endl; }

std::string Agent::credential_path() const {
  return opt_.credential_file.empty() ? opt_.work_dir + "/credential" : opt_.credential_file;
}

bool Agent::choose_token() {
  if (auto saved = auth::read_token_file(credential_path())) {
    use_token(*saved);
    using_credential_ = true;
    return true;
  }
  using_credential_ = false;
  if (opt_.join_token.empty()) return false;
  use_token(opt_.join_token);
  return true;
}

// Saved before it is used, readable by the agent's user only: it is the node's identity.
void Agent::use_token(const std::string& token) {
  api_.set_token(token);
  MutexLock lock(watch_mu_);
  watch_token_ = token;
}

void Agent::watch_with(client::ApiClient api) { watch_api_ = std::move(api); }

void Agent::watch_loop() {
  // The poll's wait: long enough that an idle node asks rarely, short enough that a server gone silent is
  // noticed by the read timeout soon after.
  constexpr int kWaitMs = 20000;
  const std::string path = "/v1/agents/" + client::url_encode(opt_.name) + "/changes?wait_ms=" + std::to_string(kWaitMs) + "&known=";
  auto pause = [this](std::chrono::milliseconds d) {
    for (auto until = Clock::now() + d; Clock::now() < until && !watch_stop_;) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  watch_api_->set_timeout(std::chrono::milliseconds(kWaitMs + 10000));
  while (!watch_stop_) {
    std::string token, known;
    {
      MutexLock lock(watch_mu_);
      token = watch_token_;
      known = known_tag_;
    }
    if (known.empty()) {  // no heartbeat answered yet (or an old server): nothing to compare with
      pause(std::chrono::milliseconds(50));
      continue;
    }
    watch_api_->set_token(token);
    auto r = watch_api_->send("GET", path + known, nullptr);
    if (watch_stop_) break;
    if (r && r->status == 429) {
      // The server has as many watches as it lets wait (allot server --max-watches, half its connections by
      // default; 0 lets none): heartbeats only for a while.
      // Agents refused together spread their next tries over half the wait again.
      int wait_s = std::atoi(r->retry_after.c_str());
      wait_s = std::clamp(wait_s > 0 ? wait_s : 60, 1, 600);
      const auto jitter = std::chrono::milliseconds(static_cast<int64_t>(wait_s) * 500 * (std::hash<std::string>{}(opt_.name + known) % 1000) / 1000);
      ++watch_refusals_;
      pause(std::chrono::seconds(wait_s) + jitter);
      continue;
    }
    if (!r || r->status == 503) {  // unreachable, or a full server: the heartbeats go on; try again later
      pause(std::chrono::seconds(1));
      continue;
    }
    if (r->status == 404) {
      watch_unsupported_ = true;  // a server without the route: heartbeats only
      return;
    }
    if (r->status != 200) {
      pause(std::chrono::seconds(1));  // refused (a credential being replaced): the heartbeat loop handles it
      continue;
    }
    auto body = nlohmann::json::parse(r->body, nullptr, false);
    std::string tag;
    if (body.is_object() && body.contains("run_tag") && body["run_tag"].is_string()) tag = body["run_tag"].get<std::string>();
    // "": no answer published for the node (a standby, a node timed out): its heartbeats settle that.
    if (tag.empty()) continue;
    const bool carries_work = body.contains("run") && body["run"].is_array() && body.contains("as_of") && body["as_of"].is_number_unsigned();
    const uint64_t before = heartbeats_.load();
    {
      MutexLock lock(watch_mu_);
      if (tag == known_tag_) continue;
      if (carries_work) {
        // The run list and orders come with the tag: the heartbeat loop acts on them (apply()) without asking
        // the server again, and the next poll waits for the change after this one.
        known_tag_ = tag;
        known_as_of_ = std::max(known_as_of_, body["as_of"].get<uint64_t>());
        watch_news_ = std::move(body);
      }
    }
    poked_ = true;
    if (carries_work) continue;
    // A server that sends only the tag: the heartbeat loop heartbeats at once; ask again once that heartbeat is
    // done, or the same change would poke again.
    for (auto until = Clock::now() + opt_.heartbeat_interval * 2; heartbeats_.load() == before && Clock::now() < until && !watch_stop_;)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

bool Agent::take_watch_news() {
  std::optional<json> news;
  {
    MutexLock lock(watch_mu_);
    news = std::exchange(watch_news_, std::nullopt);
  }
  if (!news) return false;  // the watch wants a heartbeat (a server whose watch answer has no run list)
  // A heartbeat answered on the other connection may have brought a newer state meanwhile: this one is stale.
  const uint64_t as_of = (*news)["as_of"].get<uint64_t>();
  if (as_of > applied_as_of_) {
    applied_as_of_ = as_of;
    apply(*news);
  }
  // A watch answer stops nothing (stops answer a heartbeat's report): when it took replicas away, heartbeat now,
  // so that they are stopped and what waits for their capacity starts without waiting for the next interval.
  return !outgoing_unstopped();
}

Status Agent::save_credential(const std::string& credential) {
  return auth::write_secret_file(credential_path(), credential + "\n", "the node credential");
}

Status Agent::register_node() {
  if (!choose_token())
    return Error::unauthenticated("no token: pass an agent-join token (--token-file FILE or $ALLOT_TOKEN; an admin makes "
                                  "one with `allot token create --role agent-join`)");
  json body = {{"name", opt_.name},       {"instance_type", inv_.instance_type}, {"labels", opt_.labels},
               {"address", opt_.address}, {"inventory", inventory_json(inv_)},
               {"heartbeat_interval_ms", opt_.heartbeat_interval.count()}, {"boot", boot_}};
  if (!opt_.replaces.empty()) body["replaces"] = opt_.replaces;
  if (opt_.network_layers) body["network_layers"] = *opt_.network_layers;
  {
    // A server that does not know the node may count its journal from the start again (a new database):
    // answers are ordered anew from here.
    MutexLock lock(watch_mu_);
    known_tag_.clear();
    known_as_of_ = 0;
    watch_news_.reset();
  }
  applied_as_of_ = 0;
  auto r = call("/v1/agents/register", body, true);
  if (!r && r.error().code == ErrorCode::kUnauthenticated && using_credential_ && !opt_.join_token.empty()) {
    // The saved credential is not (or no longer) known, e.g. the server's journal was reset: join again.
    say("the saved node credential was refused (" + r.error().message + "); joining again with the join token");
    std::remove(credential_path().c_str());
    using_credential_ = false;
    use_token(opt_.join_token);
    r = call("/v1/agents/register", body, true);
  }
  if (!r) return r.error();
  if (r->contains("credential") && (*r)["credential"].is_string()) {
    const std::string credential = (*r)["credential"].get<std::string>();
    if (auto st = save_credential(credential); !st) return st;
    use_token(credential);
    using_credential_ = true;
    say("joined the cluster; the node credential is saved in " + credential_path());
  }
  say("registered as " + inv_.instance_type + (inv_.emulated ? " (emulated)" : "") + " with " + api_.url());
  return ok_status();
}

Status Agent::prepare() {
  std::error_code ec;
  fs::create_directories(opt_.work_dir, ec);
  if (ec) return Error::internal("cannot create the work directory " + opt_.work_dir + ": " + ec.message());
  // The agent's state (docs/security.md, "The agent's files"): replicas may pass through the work directory to
  // their own working directory, but not list it; what the agent keeps there is 0600 or 0700.
  if (auto st = make_private_dir(opt_.work_dir); !st) return st.error();
  if (geteuid() == 0 && chmod(opt_.work_dir.c_str(), 0711) != 0)
    return Error::internal("cannot set the mode of the work directory " + opt_.work_dir + ": " + std::strerror(errno));
  if (auto st = make_private_dir((fs::path(opt_.work_dir) / "_logs").string()); !st) return st.error();
  if (geteuid() == 0 && under_tmp(opt_.work_dir))
    say("private /tmp: off, the work directory " + opt_.work_dir + " is under /tmp, which a job's own /tmp would hide; "
        "give --work-dir elsewhere (e.g. /var/lib/allot-agent)");
  if (opt_.uid_range) {
    auto uids = TeamUids::load((fs::path(opt_.work_dir) / "team-uids.json").string(), *opt_.uid_range);
    if (!uids) return uids.error();
    team_uids_ = std::move(*uids);
    say("replicas run as their team's own uid from " + std::to_string(opt_.uid_range->first) + "-" +
        std::to_string(opt_.uid_range->last) + " (" + std::to_string(opt_.uid_range->block) + " per team)");
  } else if (geteuid() == 0) {
    say("replicas run as " + opt_.user.name + " (uid " + std::to_string(opt_.user.uid) +
        "), one team at a time; --run-as-range gives each team its own uid");
  } else {
    say("replicas run as the agent's own user (uid " + std::to_string(geteuid()) +
        "), which keeps teams apart from nothing: start the agent as root with --run-as-range on shared nodes");
  }
  const std::string lock_path = (fs::path(opt_.work_dir) / "agent.lock").string();
  state_path_ = (fs::path(opt_.work_dir) / "replicas.json").string();
  // Forked first: it must not share the lock below, which it takes when the agent is gone.
  if (auto w = start_watchdog(state_path_, lock_path, "allot agent " + opt_.name + " (watchdog): ")) {
    watchdog_fd_ = w->fd;
    watchdog_pid_ = w->pid;
    say("watchdog pid " + std::to_string(w->pid) + " ends the replicas' processes if this agent dies");
  } else {
    say(w.error().message + "; a restarted agent still ends what this one leaves behind");
  }
  // Two agents on one work directory would each take the other's replicas for leftovers and kill them. The
  // lock may be held for a moment by the watchdog of an agent that just died, sweeping.
  lock_fd_ = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return Error::internal("cannot open " + lock_path + ": " + std::strerror(errno));
  const auto until = Clock::now() + std::chrono::seconds(15);
  for (bool said = false; flock(lock_fd_, LOCK_EX | LOCK_NB) != 0; said = true) {
    if (Clock::now() >= until)
      return Error::precondition("another agent is using the work directory " + opt_.work_dir + " (it holds " +
                                 lock_path + "); give this one its own --work-dir");
    if (!said) say("waiting for " + lock_path + ": another agent, or the watchdog of one that just died, holds it");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto state = load_state(state_path_);
  if (!state) return state.error();
  end_leftovers(*state, [this](const std::string& line) { say(line); });
  (void)replica_pid_namespace();  // made now, so the log says at start where replicas run
  detect_containers();
  auto journal = AttemptJournal::load((fs::path(opt_.work_dir) / "attempts.json").string());
  if (!journal) return journal.error();
  journal_ = std::move(*journal);
  resume_from_journal();
  if (opt_.cgroups) {
    cgroups_ = Cgroups::detect(Cgroups::dir_name_for(opt_.name, fs::absolute(opt_.work_dir).lexically_normal().string()),
                               CgroupBases{.v2 = opt_.cgroup_parent});
    say(cgroups_.summary());
    // A replica cgroup no record names was made by an agent that died before it saved the record.
    for (const auto& dir : cgroups_.children()) {
      if (int n = kill_cgroup(dir); n > 0) say("ended " + std::to_string(n) + " leftover process(es) in " + dir);
      if (!remove_cgroup(dir)) say("cannot remove the leftover cgroup " + dir + "; it is not empty");
    }
  } else {
    say("cgroups: off (--no-cgroups); replicas run in their own process group only (no memory or CPU limits)");
  }
  persist();
  count_boot();
  MonitorOptions mo;
  mo.config = opt_.health;
  mo.context = CheckContext{inv_.emulated, accelerator_kind_name(inv_.kind), inv_.accelerators, opt_.work_dir, {}};
  mo.faults_path = opt_.faults_path;
  mo.kmsg_path = opt_.kmsg_path;
  mo.stress_program = opt_.stress_program.empty() ? fs::read_symlink("/proc/self/exe", ec).string() : opt_.stress_program;
  mo.stress_seconds = opt_.stress_seconds;
  monitor_ = std::make_unique<HealthMonitor>(std::move(mo), [this](const std::string& line) { say(line); });
  monitor_->start();
  say(std::to_string(opt_.health.checks.size()) + " health check(s); boot " + std::to_string(boot_) +
      (opt_.faults_path.empty() ? "" : "; emulated faults from " + opt_.faults_path));
  return ok_status();
}

void Agent::count_boot() {
  const std::string path = (fs::path(opt_.work_dir) / "boot").string();
  int n = 0;
  if (std::ifstream in(path); in) in >> n;
  boot_ = n + 1;
  if (auto st = auth::write_secret_file(path, std::to_string(boot_) + "\n", "the boot count"); !st) say(st.error().message);
}

void Agent::reboot() {
  say("the server asks for a reboot" + (opt_.reboot_command.empty() ? std::string(" (emulated: stopping the replicas, resetting the devices)")
                                                                     : ": running \"" + opt_.reboot_command + "\""));
  stop_all_replicas();
  pending_.clear();
  persist();
  if (!opt_.reboot_command.empty()) {
    // A real reboot ends this process; the agent's next start counts the boot. A command that returns (a
    // driver reset, say) counts as the reboot itself.
    auto o = run_shell(opt_.reboot_command, std::chrono::minutes(10));
    say("the reboot command " + std::string(o.exit_code == 0 ? "finished" : "failed (exit " + std::to_string(o.exit_code) + ")"));
  }
  count_boot();
  if (monitor_) monitor_->reboot();
  say("rebooted (boot " + std::to_string(boot_) + "); registering again");
  if (auto st = register_node(); !st) say("cannot register after the reboot, will retry: " + st.error().message);
}

void Agent::journal_exit(const std::string& key, int exit_code, int64_t oom_limit_mib) {
  if (auto st = journal_.ended(key, exit_code, oom_limit_mib); !st)
    say("cannot record the exit of " + key + " (" + st.error().message + "); if this agent restarts before reporting it, "
        "it is reported as lost");
}

void Agent::resume_from_journal() {
  // What the previous agent started and the server has not heard the end of. None of it still runs: the
  // replicas die with their agent (the watchdog, or end_leftovers above), so "adopting" one means reporting its
  // end, with its exit code when the previous agent collected it.
  for (const auto& [key, e] : journal_.entries()) {
    if (e.reported) continue;
    Replica r;
    r.a.job = e.job;
    r.a.rank = e.rank;
    r.a.attempt = e.attempt;
    r.log_path = e.log_path;
    r.exited = true;
    // A replica stopped for a log rule is reported with the rule, whether or not its exit was collected.
    r.log_rule = e.log_rule;
    r.oom_limit_mib = e.oom_limit_mib;
    r.lost = !e.exit_code && !e.log_rule;
    r.exit_code = e.exit_code.value_or(0);
    std::error_code ec;
    // How much of the log the server has is not recorded: what the previous agent shipped is not sent again,
    // and the rest may be missing, which the log says.
    r.shipped = r.log_path.empty() ? 0 : fs::file_size(r.log_path, ec);
    if (ec) r.shipped = 0;
    if (!r.log_path.empty())
      std::ofstream(r.log_path, std::ios::app)
          << "allot agent: the agent restarted while this replica " << (r.lost ? "ran; it was ended with its agent" : "was ending")
          << ", and lines written just before may be missing from this log\n";
    say("replica " + key + " was started by the previous agent; it " +
        (r.lost ? std::string("ended with it (reported as lost)") : "exited with code " + std::to_string(r.exit_code)) +
        "; it is not started again");
    replicas_[key] = std::move(r);
  }
}

void Agent::forget_attempts() {
  for (auto& gone : journal_.forget_unlisted(listed_))
    if (!gone.dir.empty()) unused_dirs_.insert(std::move(gone.dir));
  remove_unused_dirs();
}

void Agent::remove_unused_dirs() {
  // Retention (docs/deployment.md): an attempt the server has dropped takes its working directory with it, once no
  // rank of the attempt here still needs it (started, or its log not yet shipped), and the job's directory once
  // it is empty.
  if (unused_dirs_.empty()) return;
  std::set<std::string> in_use;
  for (const auto& [key, e] : journal_.entries()) in_use.insert(e.dir);
  for (const auto& [key, r] : replicas_) in_use.insert(fs::path(r.log_path).parent_path().string()), in_use.insert(fs::path(r.log_path).parent_path().lexically_normal().string());
  const fs::path root = (fs::path(opt_.work_dir) / "x").lexically_normal().parent_path();
  for (auto it = unused_dirs_.begin(); it != unused_dirs_.end();) {
    if (in_use.count(*it)) {
      ++it;
      continue;
    }
    // Only directories the agent made for its replicas: a journal edited by hand cannot point elsewhere.
    const fs::path dir = fs::path(*it).lexically_normal();
    const fs::path job_dir = dir.parent_path();
    std::error_code ec;
    if (job_dir.parent_path() == root) {
      fs::remove_all(dir, ec);
      if (ec) say("cannot remove " + dir.string() + ": " + ec.message());
      if (fs::is_empty(job_dir, ec) && !ec) fs::remove(job_dir, ec);
      // The attempt's logs, kept apart from its working directory (agent/log_capture.h), go with it once shipped.
      const fs::path log_dir = root / "_logs" / job_dir.filename() / dir.filename();
      if (!in_use.count(log_dir.lexically_normal().string())) {
        fs::remove_all(log_dir, ec);
        if (fs::is_empty(log_dir.parent_path(), ec) && !ec) fs::remove(log_dir.parent_path(), ec);
      }
    }
    it = unused_dirs_.erase(it);
  }
}

bool Agent::outgoing_alive() const {
  for (const auto& [key, r] : replicas_)
    if (alive(key) && !listed_.count(key)) return true;
  return false;
}

bool Agent::outgoing_unstopped() const {
  for (const auto& [key, r] : replicas_)
    if (alive(key) && !listed_.count(key) && !stopping(key)) return true;
  return false;
}

void Agent::persist() {
  std::vector<ReplicaRecord> list;
  for (const auto& [key, r] : records_) list.push_back(r);
  // Failing to write is not a reason to stop running jobs; it weakens only the cleanup after a crash.
  if (auto st = save_state(state_path_, list, cgroups_.dir(), cgroups_.extra_dirs()); !st) say("cannot record the running replicas: " + st.error().message);
}

void Agent::forget_cgroup(const std::string& path) {
  if (path.empty()) return;
  dead_cgroups_.push_back(path);
  for (auto& more : cgroups_.extra_paths(path)) dead_cgroups_.push_back(std::move(more));
}

void Agent::remove_cgroups() {
  std::erase_if(dead_cgroups_, [](const std::string& dir) { return remove_cgroup(dir); });
}

Result<json> Agent::call(const std::string& path, const json& body, bool heartbeat) {
  auto limit = std::chrono::milliseconds(30000);
  const auto now = Clock::now();
  if (server_timeout_ && !fenced_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        last_answered_send_ + fence_times(*server_timeout_).stop_after - now);
    limit = std::clamp(left, std::chrono::milliseconds(100), limit);
  } else if (fenced_ && procs_.size() > 0) {
    limit = std::chrono::milliseconds(200);  // replicas are being killed: back to poll() soon
  }
  api_.set_timeout(limit);
  auto r = api_.post(path, body);
  // Only registrations and heartbeats tell the server that the node is alive; an answered log upload does not.
  if (r && heartbeat) note_answer(now, *r);
  return r;
}

void Agent::note_answer(Clock::time_point sent, const json& answer) {
  const bool moved = sent > last_answered_send_;
  last_answered_send_ = std::max(last_answered_send_, sent);
  if (answer.is_object() && answer.contains("heartbeat_timeout_ms") && answer["heartbeat_timeout_ms"].is_number_integer()) {
    auto t = std::chrono::milliseconds(answer["heartbeat_timeout_ms"].get<int64_t>());
    if (t.count() > 0 && server_timeout_ != t) {
      auto f = fence_times(t);
      say("the server's failure timeout is " + std::to_string(t.count()) + " ms: replicas are stopped after " +
          std::to_string(f.stop_after.count()) + " ms without an answered heartbeat (fencing)");
      server_timeout_ = t;
      tell_watchdog_lease();
    }
  }
  if (moved) tell_watchdog_lease();
}

void Agent::tell_watchdog_lease() {
  if (watchdog_fd_ < 0 || !server_timeout_) return;
  const auto f = fence_times(*server_timeout_);
  send_lease(watchdog_fd_, Lease{last_answered_send_ + f.stop_after, last_answered_send_ + f.kill_after});
}

void Agent::check_fence(Clock::time_point now) {
  if (fenced_ || !lease_ran_out(now)) return;
  const auto f = fence_times(*server_timeout_);
  fenced_ = true;
  pending_.clear();  // the server may already be placing them elsewhere; its next answer says again
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_answered_send_);
  std::string why = "no heartbeat answered for " + std::to_string(silent.count()) + " ms (the server's failure timeout is " +
                    std::to_string(server_timeout_->count()) + " ms)";
  if (procs_.size() == 0) {
    say(why + "; fenced: nothing new starts until the server answers");
    return;
  }
  say(why + ": stopping " + std::to_string(procs_.size()) +
      " replica(s) so that their restart elsewhere cannot overlap them (fencing)");
  const auto grace = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                               last_answered_send_ + f.kill_after - now));
  for (const auto& key : procs_.keys()) {
    if (auto it = replicas_.find(key); it != replicas_.end()) it->second.fenced = why;
    procs_.stop(key, now, std::min(grace, opt_.stop_grace));
  }
}

Status Agent::run(const std::atomic<bool>& stop) {
  if (auto st = prepare(); !st) return st.error();
  // Registration retries while the server is unreachable (it may be starting), but not when it refuses.
  auto backoff = std::chrono::milliseconds(200);
  while (!stop) {
    auto st = register_node();
    if (st) break;
    // A plan's node that starts before its plan is refused until the plan is Active (core/model/plans.h): it waits.
    const bool plan_not_started = opt_.labels.count(std::string(kPlanLabel)) && st.error().reason == ErrorReason::kPlanNotStarted;
    if (st.error().code != ErrorCode::kInternal && !plan_not_started) return st.error();
    say("cannot register yet: " + st.error().message);
    for (auto until = Clock::now() + backoff; Clock::now() < until && !stop;)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  if (watch_api_ && !stop) watcher_ = std::thread([this] { watch_loop(); });
  bool said_unsupported = false;
  uint64_t said_refusals = 0;
  while (!stop) {
    if (auto st = cycle(); !st) return st.error();
    if (watch_unsupported_ && !said_unsupported) {
      say("the server has no watch route (GET /v1/agents/{name}/changes): new work is seen at heartbeats only");
      said_unsupported = true;
    }
    // Sleep until the next heartbeat, but look at the replicas meanwhile: an exit is reported at once, and
    // new work the watch saw is asked for at once.
    for (auto until = Clock::now() + opt_.heartbeat_interval; Clock::now() < until && !stop;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(poked_ ? 0 : 20));
      if (poked_.exchange(false) && !take_watch_news()) break;
      if (watch_refusals_ > said_refusals) {
        if (said_refusals == 0)
          say("the server has no room for this agent's watch now (429, it keeps connections for heartbeats): new work "
              "is seen at heartbeats until a later watch is let in");
        said_refusals = watch_refusals_;
      }
      check_fence(Clock::now());
      bool exited = reap();
      if (exited || exit_checks_finished()) break;
    }
  }
  if (watcher_.joinable()) {
    watch_stop_ = true;
    watch_api_->cancel();
    watcher_.join();
  }
  say("stopping " + std::to_string(procs_.size()) + " replica(s)");
  stop_all_replicas();
  persist();
  for (int i = 0; i < 50 && !dead_cgroups_.empty(); ++i) {
    remove_cgroups();
    if (!dead_cgroups_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  cgroups_.remove_if_empty();
  ship_logs();
  (void)heartbeat();  // best effort: the server learns of the exits now rather than by timeout
  return ok_status();
}

bool Agent::reap() {
  bool any = false;
  bool changed = false;
  for (const auto& e : procs_.poll(Clock::now())) {
    if (pull_exited(e)) {
      any = true;
      continue;
    }
    changed |= records_.erase(e.key) > 0;
    auto it = replicas_.find(e.key);
    // A replica past its memory limit is ended by the kernel (SIGKILL, exit code 137), which says nothing to it.
    // The kernel's count of out-of-memory kills in its cgroup is read before the cgroup goes (remove_cgroups
    // below); the end is then reported as oom_killed, the job's own fault (docs/resiliency.md).
    const int64_t kills = e.cgroup.empty() ? 0 : oom_kills(e.cgroup);
    // A replica that exits 0 although one of its processes was killed has handled it: that is no failure.
    const int64_t oom_limit_mib = kills > 0 && e.exit_code != 0 && it != replicas_.end() && it->second.a.memory_mib > 0 &&
                                          cgroups_.limits_memory()
                                      ? std::max(it->second.a.memory_mib, kMinMemoryMib)
                                      : 0;
    forget_cgroup(e.cgroup);
    // Its output to the last byte, before the exit can be reported.
    const std::optional<LogRuleFiring> late = capture_.finish(e.key, std::chrono::milliseconds(1000));
    journal_exit(e.key, e.exit_code, oom_limit_mib);
    if (it == replicas_.end()) continue;
    // A rule fired on the last lines, which the replica printed just before it exited: reported with its end.
    if (late && !it->second.log_rule) log_rule_fired(e.key, it->second, *late, Clock::now());
    if (it->second.a.container) {
      end_container(e.key, it->second, e);
      changed = true;
    }
    it->second.exited = true;
    // Past the lease the watchdog may have stopped it a moment before check_fence() did (they keep the same lease,
    // docs/resiliency.md "Leases and fencing"): an end then is fencing's whoever sent the signal.
    if (it->second.fenced.empty() && lease_ran_out(Clock::now()))
      it->second.fenced = "it ended after its lease ran out (no heartbeat answered for 3/4 of the server's failure timeout of " +
                          std::to_string(server_timeout_->count()) + " ms)";
    drop_private_tmp(it->second.a.job, it->second.private_tmp);
    it->second.exit_code = e.exit_code;
    say("replica " + e.key + " exited with code " + std::to_string(e.exit_code) + (e.stopped ? " (stopped)" : ""));
    if (oom_limit_mib > 0) {
      // Its log says so, for whoever reads `allot logs` of the failed job. No health checks run for it: the node
      // is not suspected.
      const std::string why = "the out-of-memory killer ended " + std::to_string(kills) +
                              " process(es) of this replica: it used more than its memory limit of " +
                              memory_max_value(it->second.a.memory_mib) + " bytes (" + std::to_string(oom_limit_mib) +
                              " MiB, from its request; OOMKilled)";
      (void)append_log_line(it->second.log_path, "allot agent: " + why);
      say("replica " + e.key + ": " + why);
      it->second.oom_limit_mib = oom_limit_mib;
    } else if (!e.stopped && e.exit_code != 0) {
      check_health_after_exit(e.key, e.exit_code);
    }
    any = true;
  }
  if (changed) persist();
  if (!dead_cgroups_.empty()) remove_cgroups();
  notice_pid_namespace_end();
  if (watchdog_pid_ > 0 && waitpid(watchdog_pid_, nullptr, WNOHANG) == watchdog_pid_) {
    say("the watchdog exited; if this agent dies now, its restart ends what the replicas leave behind");
    watchdog_pid_ = 0;
  }
  return any;
}

int Agent::replica_pid_namespace() {
  notice_pid_namespace_end();
  if (pidns_) return pidns_->fd();
  if (!pidns_problem_.empty()) return -1;  // said once at start
  if (opt_.pid_namespace) {
    auto ns = ReplicaPidNamespace::create(opt_.shim_program);
    if (ns) {
      pidns_ = std::move(*ns);
      say("replicas run in a PID namespace of their own (its first process: pid " + std::to_string(pidns_->init()) +
          "): every process they start dies with this agent");
      return pidns_->fd();
    }
    pidns_problem_ = ns.error().message;
  } else {
    pidns_problem_ = "--no-pid-namespace";
  }
  say("replicas share the agent's PID namespace (" + pidns_problem_ +
      "): what a replica starts outlives the agent, its watchdog and the replica's shim killed together, until an "
      "agent starts here again");
  return -1;
}

void Agent::notice_pid_namespace_end() {
  if (!pidns_) return;
  const pid_t init = pidns_->init();
  int status = 0;
  if (!pidns_->ended(&status)) return;
  pidns_.reset();
  say("the replicas' PID namespace ended (its first process, pid " + std::to_string(init) + ", " +
      (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                           : "exited with code " + std::to_string(WEXITSTATUS(status))) +
      "): every process in it was killed; the next replica starts in a new one");
}

Status Agent::cycle() {
  (void)reap();
  check_log_rules(Clock::now());
  record_containers();
  check_fence(Clock::now());
  // Nothing starts here: only apply() starts replicas, right after the newest run list, so that the server never
  // takes a replica it no longer lists for stopped while the agent still means to start it (docs/scheduling.md).
  if (monitor_ && monitor_->hung()) {
    // An emulated hang: the node says nothing, as a hung machine would (its replicas fence themselves).
    if (!said_hung_) say("emulated hang: no heartbeats, no logs");
    said_hung_ = true;
    return ok_status();
  }
  said_hung_ = false;
  ship_logs();
  auto st = heartbeat();
  if (!st) {
    if (st.error().code == ErrorCode::kNotFound || st.error().code == ErrorCode::kUnauthenticated) {
      // The server no longer knows this node (a new database, or the node was removed): join again.
      say("the server does not know this node or its credential (" + st.error().message + "); registering again");
      if (auto r = register_node(); !r && r.error().code != ErrorCode::kInternal) return r.error();
    } else if (st.error().code == ErrorCode::kInternal) {
      if (server_reachable_) say("heartbeat failed, will retry: " + st.error().message);
      server_reachable_ = false;
    } else {
      say("heartbeat rejected: " + st.error().message);
    }
    return ok_status();
  }
  if (!server_reachable_) say("the server is reachable again");
  server_reachable_ = true;
  return ok_status();
}

void Agent::ship_logs() {
  // An exited replica's log gets this many tries that fail while the server answers heartbeats; then the rest is
  // given up, and the log ends with a line that says so.
  constexpr int kLogTries = 10;
  const std::string path = "/v1/agents/" + client::url_encode(opt_.name) + "/logs";
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    auto& [key, r] = *it;
    bool give_up = false;
    std::string why;
    {
      // Exited replicas are drained completely (bounded); running ones send one chunk per cycle.
      for (int chunks = 0; chunks < (r.exited ? 64 : 1); ++chunks) {
        auto chunk = read_log_chunk(r.log_path, r.shipped, opt_.log_chunk_bytes);
        if (!chunk) {
          say("cannot ship the log of " + key + ": " + chunk.error().message);
          break;
        }
        std::string data = std::move(*chunk);
        if (data.empty()) break;
        // The attempt lets the server keep one log per rank with a line between attempts.
        auto res = call(path, {{"job", r.a.job}, {"rank", r.a.rank}, {"attempt", r.a.attempt}, {"data", data}}, false);
        if (res) {
          r.shipped += data.size();
          r.log_failures = 0;
          continue;
        }
        if (res.error().code != ErrorCode::kInternal) {
          // The server refuses this log (it no longer knows the job): give it up.
          say("dropping the log of " + key + ": " + res.error().message);
          r.shipped = log_size(r.log_path);
          break;
        }
        // Unreachable, or the server failed to store it: the same offset next cycle. Counted only while heartbeats
        // are answered (a server that is down holds every log alike, and they all go once it is back).
        if (r.exited && server_reachable_ && ++r.log_failures >= kLogTries) give_up = true, why = res.error().message;
        break;
      }
    }
    if (give_up) {
      const uint64_t size = log_size(r.log_path);
      const uint64_t lost = size < r.shipped ? 0 : size - r.shipped;
      const std::string mark = "\nallot agent: this log is incomplete: the last " + std::to_string(lost) +
                               " bytes could not be delivered after " + std::to_string(kLogTries) + " tries (" + why + ")\n";
      auto res = call(path, {{"job", r.a.job}, {"rank", r.a.rank}, {"attempt", r.a.attempt}, {"data", mark}}, false);
      say("giving up the rest of the log of " + key + " (" + std::to_string(lost) + " bytes): " + why +
          (res ? "; the log says it is incomplete" : "; the mark could not be delivered either: " + res.error().message));
      r.shipped = std::max(r.shipped, size);
    }
    // A replica whose end the server has is kept only until its log is shipped.
    if (r.end_reported && fully_shipped(r.log_path, r.shipped)) it = replicas_.erase(it);
    else ++it;
  }
  remove_unused_dirs();
}

Status Agent::heartbeat() {
  json report = json::array();
  std::vector<std::string> reported;
  for (const auto& [key, r] : replicas_) {
    if (r.end_reported) continue;  // only its log is left to ship
    json e = {{"job", r.a.job}, {"rank", r.a.rank}, {"attempt", r.a.attempt}};
    if (r.exited) {
      // Reported at once, whatever is left of its log: a log upload that keeps failing must not hold the end of a
      // run hostage (its log follows, ship_logs()).
      if (r.port_in_use) {
        e["state"] = "not_started";
        e["cause"] = "port_in_use";
        e["port"] = r.port_in_use;
      } else if (r.lost) {
        e["state"] = "lost";
      } else {
        e["state"] = "exited";
        e["exit_code"] = r.exit_code;
      }
      // A failure of its own (below) says more than that it was fenced.
      if (!r.fenced.empty())
        e["failure"] = {{"reason", view::replica_failure_reason_name(view::ReplicaFailureReason::kFenced)}, {"message", r.fenced}};
      if (r.oom_limit_mib > 0)
        e["failure"] = {{"reason", view::replica_failure_reason_name(view::ReplicaFailureReason::kOomKilled)},
                        {"memory_limit_mib", r.oom_limit_mib}};
      if (!r.pull_failure.empty())
        e["failure"] = {{"reason", view::replica_failure_reason_name(view::ReplicaFailureReason::kImagePull)}, {"message", r.pull_failure}};
      if (r.log_rule)
        e["failure"] = {{"reason", view::replica_failure_reason_name(view::ReplicaFailureReason::kLogRule)},
                        {"rule", {{"kind", log_rule_kind_name(r.log_rule->kind)}, {"index", r.log_rule->index}}},
                        {"line", r.log_rule->line}};
      reported.push_back(key);
    } else if (r.after_pull) {
      e["state"] = "pulling";
    } else {
      e["state"] = "running";
      // What the replica really got: on an emulated node the planned CPUs are folded onto this machine's.
      if (!r.cpus.empty()) e["cpus"] = r.cpus;
    }
    report.push_back(e);
  }
  json body = {{"replicas", report}};
  if (monitor_) {
    body["health"] = monitor_->report();
    body["health"]["boot"] = boot_;
    // Which requested limits replicas here get (agent/cgroups.h); the node's `limits_enforced` on the server.
    body["health"]["limits_enforced"] = {{"memory", cgroups_.limits_memory()}, {"cpu", cgroups_.limits_cpu()}};
  }
  auto answer = call("/v1/agents/" + client::url_encode(opt_.name) + "/heartbeat", body, true);
  uint64_t as_of = 0;
  if (answer && answer->is_object() && answer->contains("as_of") && (*answer)["as_of"].is_number_unsigned())
    as_of = (*answer)["as_of"].get<uint64_t>();
  if (answer && answer->is_object() && answer->contains("run_tag") && (*answer)["run_tag"].is_string()) {
    MutexLock lock(watch_mu_);
    // Not back to an older tag than the watch already brought (the two connections' answers may cross).
    if (as_of >= known_as_of_) {
      known_tag_ = (*answer)["run_tag"].get<std::string>();
      known_as_of_ = as_of;
    }
  }
  ++heartbeats_;  // after the tag: the watch asks again with it
  if (!answer) return answer.error();
  if (fenced_) {
    say("the server answers again" + std::string(reported.empty() ? "" : "; reported the exits of the fenced replicas"));
    fenced_ = false;
    server_reachable_ = true;  // said just now
  }
  for (const auto& k : reported) replicas_[k].end_reported = true;
  if (auto st = journal_.reported(reported); !st)
    say("cannot record that the server has " + std::to_string(reported.size()) + " exit(s): " + st.error().message);
  // Replicas with nothing left to ship go now rather than at the next cycle.
  std::erase_if(replicas_, [](const auto& kv) { return kv.second.end_reported && fully_shipped(kv.second.log_path, kv.second.shipped); });
  // Always acted on: it answers this heartbeat's report (its stop list), and is at least as new as any watch
  // answer taken before it was sent.
  applied_as_of_ = std::max(applied_as_of_, as_of);
  apply(*answer);
  return ok_status();
}

void Agent::apply(const json& answer) {
  if (!answer.is_object()) return;
  if (answer.value("reboot", false)) {
    reboot();
    return;
  }
  if (answer.value("deep_check", false) && monitor_) monitor_->request_deep_check();
  // The run list is the truth for this node: every current replica with its attempt. A stop names a slot
  // (job, rank) whose process here is not current, so it spares the attempt the run list names.
  std::map<std::string, Assignment> current;
  const bool has_run = answer.contains("run") && answer["run"].is_array();
  if (has_run) {
    for (const auto& j : answer["run"]) {
      auto a = assignment_from_json(j);
      if (!a) {
        say("ignoring an assignment: " + a.error().message);
        continue;
      }
      current[a->slot()] = *a;
    }
    listed_.clear();
    for (const auto& [slot, a] : current) listed_.insert(key_of(a));
    forget_attempts();
    // A start that waited and is no longer listed (or listed with another attempt) never happens.
    std::erase_if(pending_, [&](const auto& p) { return !listed_.count(key_of(p.second)); });
  }
  if (answer.contains("stop") && answer["stop"].is_array()) {
    for (const auto& s : answer["stop"]) {
      if (!s.is_object() || !s.contains("job") || !s.contains("rank") || !s["job"].is_string() || !s["rank"].is_number_integer())
        continue;
      const std::string slot = s["job"].get<std::string>() + "/" + std::to_string(s["rank"].get<int>());
      const int only_attempt = s.value("attempt", -1);
      auto cur = current.find(slot);
      if (cur == current.end()) pending_.erase(slot);
      for (auto& [key, r] : replicas_) {
        if (r.a.slot() != slot || r.exited) continue;
        if (only_attempt >= 0 ? r.a.attempt != only_attempt : cur != current.end() && r.a.attempt == cur->second.attempt)
          continue;
        if (alive(key)) say("stopping replica " + key);
        stop_replica(key, Clock::now());
      }
    }
  }
  for (const auto& [slot, a] : current) {
    if (a.membership)
      if (auto it = replicas_.find(key_of(a)); it != replicas_.end() && !it->second.exited && a.membership->epoch > it->second.membership_epoch)
        update_membership(it->first, it->second, a);
    if (journal_.contains(key_of(a))) continue;
    // An older attempt of the same replica still alive is stopped first; the new one waits for its exit.
    for (auto& [key, r] : replicas_)
      if (r.a.slot() == slot && !r.exited && r.a.attempt != a.attempt) stop_replica(key, Clock::now());
    // Held: the server has not yet confirmed that nothing it would overlap still runs elsewhere.
    if (a.hold) {
      pending_.erase(slot);
      continue;
    }
    pending_[slot] = a;
  }
  start_pending();
}

std::string Agent::membership_path(const Assignment& a) const {
  return (fs::path(opt_.work_dir) / safe_path_part(a.job) / ("attempt-" + std::to_string(a.attempt)) / "membership.json").string();
}

void Agent::update_membership(const std::string& key, Replica& r, const Assignment& listed) {
  // What the replica's environment said at its start is kept (its env cannot change); the file and the signal say
  // what changed. The rest of the assignment (command, devices) is the same run's.
  r.a.membership = listed.membership;
  r.a.master_addr = listed.master_addr;
  r.a.master_port = listed.master_port;
  r.a.world_size = listed.world_size;
  if (auto st = write_membership(membership_path(r.a), r.a); !st) {
    say("replica " + key + ": cannot write its membership: " + st.error().message);
    return;  // tried again at the next answer
  }
  r.membership_epoch = listed.membership->epoch;
  std::string told = "wrote membership epoch " + std::to_string(r.membership_epoch) + " (MASTER " + r.a.master_addr + ":" +
                     std::to_string(r.a.master_port) + ")";
  const auto pid = procs_.pid(key);
  if (listed.membership->signal != 0 && pid && *pid > 0) {
    // The process group, as a stop is sent: a launcher (torchrun) and its workers all hear it.
    if (::kill(-*pid, listed.membership->signal) == 0) told += " and sent " + listed.membership->signal_name;
    else told += "; " + listed.membership->signal_name + " not sent: " + std::strerror(errno);
  }
  say("replica " + key + ": " + told);
  (void)append_log_line(r.log_path, "allot agent: membership epoch " + std::to_string(r.membership_epoch) + " (MASTER_ADDR " +
                                        r.a.master_addr + ", MASTER_PORT " + std::to_string(r.a.master_port) +
                                        "): an in-place recovery replaced a replica on a failed node");
}

void Agent::start_pending() {
  if (fenced_) return;  // the server may have given these slots to another node meanwhile
  // Stops before starts: the capacity of a replica the server has taken away (preempted, restarted, cancelled) is
  // free only once its process is gone; until then the node starts nothing new (docs/scheduling.md).
  if (!pending_.empty() && outgoing_alive()) return;
  for (auto it = pending_.begin(); it != pending_.end();) {
    bool busy = false;
    for (const auto& [key, r] : replicas_)
      if (r.a.slot() == it->first && alive(key)) busy = true;
    if (busy) {
      ++it;
      continue;
    }
    start(it->second);
    it = pending_.erase(it);
  }
}

Result<Identity> Agent::identity_for(const Assignment& a, const std::string& home) {
  if (team_uids_) return team_uids_->identity_for(a.team.empty() ? "_" : a.team, home);
  // One user for every replica: a root agent could keep teams apart but was told to use one uid, so it runs one
  // team's replicas at a time. (An agent that is not root cannot switch users at all: development only.)
  if (geteuid() == 0)
    for (const auto& [key, r] : replicas_)
      if (!r.exited && r.a.team != a.team && alive(key))
        return Error::precondition("this agent runs every replica as " + opt_.user.name + " (uid " + std::to_string(opt_.user.uid) +
                                   ") and a replica of team " + r.a.team + " runs here; replicas of two teams never share a uid. "
                                   "Start the agent with --run-as-range FIRST-LAST to give each team its own");
  return opt_.user;
}

void Agent::drop_private_tmp(const std::string& job, const std::string& dir) {
  if (dir.empty()) return;
  for (const auto& [key, r] : replicas_)
    if (r.a.job == job && !r.exited) return;
  std::error_code ec;
  fs::remove_all(dir, ec);  // does not follow the symlinks a job left there
}

void Agent::start(const Assignment& a) {
  const std::string key = key_of(a);
  const std::string attempt_part = "attempt-" + std::to_string(a.attempt);
  const fs::path job_dir = fs::path(opt_.work_dir) / safe_path_part(a.job);
  const fs::path dir = job_dir / attempt_part;
  const fs::path log_dir = fs::path(opt_.work_dir) / "_logs" / safe_path_part(a.job) / attempt_part;
  Replica r;
  r.a = a;
  r.log_path = (log_dir / ("rank-" + std::to_string(a.rank) + ".log")).string();
  if (a.rank == 0)
    if (auto free = rendezvous_port_free(a.master_port); !free) {
      // The node's problem, not the job's: not started and not recorded as started; the server requeues the job
      // without using a retry, and its next attempt gets another port.
      say("not starting replica " + key + ": " + free.error().message);
      (void)make_private_dir(log_dir.string());
      (void)append_log_line(r.log_path, "allot agent: this run was not started: " + free.error().message +
                                            "; the job is requeued with another port");
      r.exited = true;
      r.port_in_use = a.master_port;
      replicas_[key] = std::move(r);
      return;
    }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (geteuid() == 0) (void)chmod(job_dir.c_str(), 0711);  // a job's attempts are not listed to other users
  // Recorded before it starts, so that no later agent on this work directory starts it again.
  if (auto st = journal_.started({a.job, a.rank, a.attempt, dir.string(), r.log_path, std::nullopt, false}); !st) {
    say("cannot start replica " + key + ": " + st.error().message);
    (void)make_private_dir(log_dir.string());
    (void)append_log_line(r.log_path, "allot agent: cannot start this replica: the agent could not record its start (" +
                                          st.error().message + ")");
    r.exited = true;
    r.exit_code = 127;
    replicas_[key] = std::move(r);
    return;
  }
  std::vector<std::string> pull_argv;
  Result<LaunchSpec> spec = [&]() -> Result<LaunchSpec> {
    if (ec) return Error::internal("cannot create the working directory " + dir.string() + ": " + ec.message());
    if (auto st = make_private_dir(log_dir.string()); !st) return st.error();
    auto who = identity_for(a, dir.string());
    if (!who) return who.error();
    Assignment run = a;
    if (!a.checkpoint_root.empty()) {
      // The job's own checkpoint directory, the same for every run on every node (on a shared file system).
      fs::path ckpt = fs::path(a.checkpoint_root) / safe_path_part(a.job);
      fs::create_directories(ckpt, ec);
      if (ec) say("replica " + key + ": cannot create the checkpoint directory " + ckpt.string() + ": " + ec.message());
      else if (who->uid != geteuid())
        if (auto st = give_dir_to(ckpt.string(), *who); !st) say("replica " + key + ": " + st.error().message);
      run.checkpoint_dir = ckpt.string();
    }
    if (a.membership) {
      // Written before the start, so a new rank reads the membership it joins (agent/membership.h).
      run.env["ALLOT_MEMBERSHIP_FILE"] = membership_path(a);
      if (auto st = write_membership(membership_path(a), a); !st) return st.error();
      r.membership_epoch = a.membership->epoch;
    }
    MachineFacts facts = facts_;
    facts.user = who->name;
    facts.home = who->home;
    auto s = launch_spec(run, facts, "", dir.string());
    if (!s) return s.error();
    if (who->uid != geteuid())
      if (auto st = give_dir_to(dir.string(), *who); !st) return st.error();
    if (a.container) {
      // podman (root) runs it, in the team's user namespace: its /tmp is the image's own.
      auto c = container_launch(run, *s, *who, log_dir.string());
      if (!c) return c.error();
      r.container = c->name;
      r.pidfile = c->pidfile;
      pull_argv = std::move(c->pull_argv);
      return std::move(c->run);
    }
    if (who->uid != geteuid()) s->run_as = *who;
    // The job's /tmp on this node, shared by its replicas here and no one else's; not where the replica's own
    // directories are under /tmp, which it would hide (docs/security.md).
    if (geteuid() == 0 && !under_tmp(opt_.work_dir) && !under_tmp(a.checkpoint_root)) {
      r.private_tmp = (job_dir / "tmp").string();
      fs::create_directories(r.private_tmp, ec);
      if (ec) return Error::internal("cannot create the job's /tmp " + r.private_tmp + ": " + ec.message());
      if (auto st = give_dir_to(r.private_tmp, *who); !st) return st.error();
      s->private_tmp = r.private_tmp;
    }
    return s;
  }();
  if (!spec) {
    // The server hears of it as an exit like any other failure, and its retry policy applies.
    say("cannot start replica " + key + ": " + spec.error().message);
    (void)append_log_line(r.log_path, "allot agent: cannot start this replica: " + spec.error().message);
    r.exited = true;
    r.exit_code = 127;
    journal_exit(key, 127);
    replicas_[key] = std::move(r);
    drop_private_tmp(a.job, replicas_[key].private_tmp);
    return;
  }
  if (!pull_argv.empty()) {
    // The image first (docs/jobs.md, "Images"): the replica reports `pulling` meanwhile, and its run starts when
    // the pull succeeds (pull_ended). The pull's output goes to a file of the agent's, read for its failure.
    LaunchSpec pull;
    pull.argv = std::move(pull_argv);
    pull.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, {"HOME", "/root"}, {"LANG", "C.UTF-8"}};
    pull.log_path = (log_dir / ("pull-rank-" + std::to_string(a.rank) + ".out")).string();
    pull.work_dir = log_dir.string();
    std::error_code rm;
    fs::remove(pull.log_path, rm);
    if (auto pid = procs_.start(key + "#pull", pull); !pid) {
      say("cannot pull " + a.container->image + " for replica " + key + ": " + pid.error().message);
      (void)append_log_line(r.log_path, "allot agent: cannot pull the image " + a.container->image + ": " + pid.error().message);
      r.exited = true;
      r.exit_code = 125;
      r.pull_failure = a.container->image + ": " + pid.error().message;
      journal_exit(key, 125);
      replicas_[key] = std::move(r);
      return;
    }
    say("pulling " + a.container->image + " for replica " + key);
    r.after_pull = std::move(*spec);
    replicas_[key] = std::move(r);
    return;
  }
  launch(key, std::move(r), std::move(*spec));
}

void Agent::launch(const std::string& key, Replica r, LaunchSpec spec) {
  const Assignment& a = r.a;
  int output_fd = -1;
  Result<pid_t> pid = [&]() -> Result<pid_t> {
    auto out = capture_.open(key, r.log_path, a.log_rules, a.rank);
    if (!out) return out.error();
    output_fd = *out;
    spec.output_fd = output_fd;
    // A container's limits are podman's (--memory, --cpus): it makes the container's cgroup itself.
    if (cgroups_.available() && !a.container) {
      const std::string name = "r-" + safe_path_part(a.job) + "-" + std::to_string(a.rank) + "-" + std::to_string(a.attempt);
      auto cg = cgroups_.create(name, {.vcpu_milli = a.vcpu_milli, .memory_mib = a.memory_mib});
      if (cg) spec.cgroup = *cg, spec.more_cgroups = cgroups_.extra_paths(*cg);
      else say("replica " + key + " runs without its own cgroup, so without memory or CPU limits: " + cg.error().message);
    }
    // A container's processes are podman's, in its own namespace (agent/pid_namespace.h says why not this one).
    if (!a.container) spec.pid_namespace = replica_pid_namespace();
    return procs_.start(key, spec);
  }();
  if (output_fd >= 0) close(output_fd);  // the child has its copy; the pipe ends when the replica's processes do
  if (!pid) {
    // The server hears of it as an exit like any other failure, and its retry policy applies.
    say("cannot start replica " + key + ": " + pid.error().message);
    capture_.finish(key, std::chrono::milliseconds(0));
    (void)append_log_line(r.log_path, "allot agent: cannot start this replica: " + pid.error().message);
    r.exited = true;
    r.exit_code = 127;
    journal_exit(key, 127);
    forget_cgroup(spec.cgroup);
    replicas_[key] = std::move(r);
    drop_private_tmp(a.job, replicas_[key].private_tmp);
    return;
  }
  records_[key] = ReplicaRecord{key, *pid, *pid, process_start_time(*pid).value_or(0), spec.cgroup, spec.more_cgroups};
  r.cpus = format_cpu_list(spec.cpus);
  r.progress_at = Clock::now();  // the first progress line is due within `every` of the start
  persist();
  say("started replica " + key + " (pid " + std::to_string(*pid) + ", rank " + std::to_string(a.rank) + "/" +
      std::to_string(a.world_size) + ", cpus " + format_cpu_list(spec.cpus) + ", uid " +
      std::to_string(spec.run_as ? spec.run_as->uid : geteuid()) +
      (a.container ? ", container " + r.container + " of " + a.container->image : std::string()) + ")");
  replicas_[key] = std::move(r);
}

bool Agent::alive(const std::string& key) const { return procs_.running(key) || procs_.running(key + "#pull"); }

bool Agent::stopping(const std::string& key) const { return procs_.stopping(key) || procs_.stopping(key + "#pull"); }

void Agent::stop_replica(const std::string& key, Clock::time_point now) {
  procs_.stop(key, now);
  procs_.stop(key + "#pull", now);  // a replica stopped while its image is pulled never starts
}

bool Agent::pull_exited(const Exited& e) {
  constexpr std::string_view kPull = "#pull";
  if (!e.key.ends_with(kPull)) return false;
  pull_ended(e.key.substr(0, e.key.size() - kPull.size()), e);
  return true;
}

void Agent::stop_all_replicas() {
  for (const auto& e : procs_.stop_all_and_wait()) {
    if (pull_exited(e)) continue;
    capture_.finish(e.key, std::chrono::milliseconds(1000));
    auto it = replicas_.find(e.key);
    if (it != replicas_.end() && it->second.a.container) end_container(e.key, it->second, e);
    if (it != replicas_.end()) it->second.exited = true, it->second.exit_code = e.exit_code;
    journal_exit(e.key, e.exit_code);
    records_.erase(e.key);
    forget_cgroup(e.cgroup);
  }
}

void Agent::pull_ended(const std::string& key, const Exited& e) {
  auto it = replicas_.find(key);
  if (it == replicas_.end()) return;
  Replica& r = it->second;
  const std::string image = r.a.container ? r.a.container->image : std::string("?");
  if (e.exit_code == 0 && !e.stopped && !fenced_ && r.after_pull) {
    say("pulled " + image + " for replica " + key);
    LaunchSpec spec = std::move(*r.after_pull);
    r.after_pull.reset();
    Replica moved = std::move(r);
    replicas_.erase(it);
    launch(key, std::move(moved), std::move(spec));
    return;
  }
  r.after_pull.reset();
  r.exited = true;
  r.exit_code = e.exit_code;
  if (e.stopped || fenced_) {
    say("replica " + key + " was stopped while its image was pulled");
  } else {
    // The registry's answer, as podman printed it (its last lines, bounded): the reason the server shows.
    const std::string out_path = (fs::path(r.log_path).parent_path() / ("pull-rank-" + std::to_string(r.a.rank) + ".out")).string();
    std::string answer = read_tail(out_path, 1500);
    while (!answer.empty() && (answer.back() == '\n' || answer.back() == ' ')) answer.pop_back();
    if (answer.empty()) answer = "podman pull exited with code " + std::to_string(e.exit_code);
    // Reported in a heartbeat as JSON: printable ASCII only (a cut UTF-8 sequence would not encode), bounded.
    for (char& c : answer)
      if (static_cast<unsigned char>(c) < 0x20 ? c != '\n' : static_cast<unsigned char>(c) > 0x7e) c = '?';
    r.pull_failure = (image + ": " + answer).substr(0, view::kMaxReplicaFailureMessage);
    r.exit_code = 125;  // podman's own code for "the container could not be run"
    say("cannot pull " + r.pull_failure + " (replica " + key + ")");
    (void)append_log_line(r.log_path, "allot agent: cannot pull the image " + r.pull_failure);
  }
  journal_exit(key, r.exit_code);
}

}  // namespace allot::agent
