#include "agent/agent.h"

#include "auth/secret_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>

namespace allot::agent {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Job names come from users; keep them from escaping the work directory.
std::string safe_path_part(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace

Agent::Agent(AgentOptions options, Inventory inventory, client::ApiClient api, std::ostream& log)
    : opt_(std::move(options)), inv_(std::move(inventory)), api_(std::move(api)), log_(log), procs_(opt_.stop_grace) {
  facts_.kind = inv_.kind;
  facts_.neuron_cores_per_device = inv_.neuron_cores_per_device;
  facts_.cpus = inv_.cpus;
}

void Agent::say(const std::string& line) { log_ << "allot agent " << opt_.name << ": " << line << std::endl; }

std::string Agent::credential_path() const {
  return opt_.credential_file.empty() ? opt_.work_dir + "/credential" : opt_.credential_file;
}

bool Agent::choose_token() {
  if (auto saved = auth::read_token_file(credential_path())) {
    api_.set_token(*saved);
    using_credential_ = true;
    return true;
  }
  using_credential_ = false;
  if (opt_.join_token.empty()) return false;
  api_.set_token(opt_.join_token);
  return true;
}

// Saved before it is used, readable by the agent's user only: it is the node's identity.
Status Agent::save_credential(const std::string& credential) {
  return auth::write_secret_file(credential_path(), credential + "\n", "the node credential");
}

Status Agent::register_node() {
  if (!choose_token())
    return Error::unauthenticated("no token: pass an agent-join token (--token-file FILE or $ALLOT_TOKEN; an admin makes "
                                  "one with `allot token create --role agent-join`)");
  json body = {{"name", opt_.name},       {"instance_type", inv_.instance_type}, {"labels", opt_.labels},
               {"address", opt_.address}, {"inventory", inventory_json(inv_)}};
  auto r = api_.post("/v1/agents/register", body);
  if (!r && r.error().code == ErrorCode::kUnauthenticated && using_credential_ && !opt_.join_token.empty()) {
    // The saved credential is not (or no longer) known, e.g. the server's journal was reset: join again.
    say("the saved node credential was refused (" + r.error().message + "); joining again with the join token");
    std::remove(credential_path().c_str());
    using_credential_ = false;
    api_.set_token(opt_.join_token);
    r = api_.post("/v1/agents/register", body);
  }
  if (!r) return r.error();
  if (r->contains("credential") && (*r)["credential"].is_string()) {
    const std::string credential = (*r)["credential"].get<std::string>();
    if (auto st = save_credential(credential); !st) return st;
    api_.set_token(credential);
    using_credential_ = true;
    say("joined the cluster; the node credential is saved in " + credential_path());
  }
  say("registered as " + inv_.instance_type + (inv_.emulated ? " (emulated)" : "") + " with " + api_.url());
  return ok_status();
}

Status Agent::run(const std::atomic<bool>& stop) {
  // Registration retries while the server is unreachable (it may be starting), but not when it refuses.
  auto backoff = std::chrono::milliseconds(200);
  while (!stop) {
    auto st = register_node();
    if (st) break;
    if (st.error().code != ErrorCode::kInternal) return st.error();
    say("cannot register yet: " + st.error().message);
    for (auto until = Clock::now() + backoff; Clock::now() < until && !stop;)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
  while (!stop) {
    if (auto st = cycle(); !st) return st.error();
    // Sleep until the next heartbeat, but look at the replicas meanwhile: an exit is reported at once.
    for (auto until = Clock::now() + opt_.heartbeat_interval; Clock::now() < until && !stop;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      bool exited = reap();
      if (exited) break;
    }
  }
  say("stopping " + std::to_string(procs_.size()) + " replica(s)");
  for (const auto& e : procs_.stop_all_and_wait()) {
    auto it = replicas_.find(e.key);
    if (it != replicas_.end()) it->second.exited = true, it->second.exit_code = e.exit_code;
  }
  ship_logs();
  (void)heartbeat();  // best effort: the server learns of the exits now rather than by timeout
  return ok_status();
}

bool Agent::reap() {
  bool any = false;
  for (const auto& e : procs_.poll(Clock::now())) {
    auto it = replicas_.find(e.key);
    if (it == replicas_.end()) continue;
    it->second.exited = true;
    it->second.exit_code = e.exit_code;
    say("replica " + e.key + " exited with code " + std::to_string(e.exit_code) + (e.stopped ? " (stopped)" : ""));
    any = true;
  }
  return any;
}

Status Agent::cycle() {
  (void)reap();
  start_pending();
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
  for (auto& [key, r] : replicas_) {
    std::ifstream in(r.log_path, std::ios::binary);
    if (!in) continue;
    in.seekg(static_cast<std::streamoff>(r.shipped));
    // Exited replicas are drained completely (bounded); running ones send one chunk per cycle.
    for (int chunks = 0; chunks < (r.exited ? 64 : 1); ++chunks) {
      std::string data(opt_.log_chunk_bytes, '\0');
      in.read(data.data(), static_cast<std::streamsize>(data.size()));
      data.resize(static_cast<size_t>(in.gcount()));
      if (data.empty()) break;
      auto res = api_.post("/v1/agents/" + client::url_encode(opt_.name) + "/logs",
                           {{"job", r.a.job}, {"rank", r.a.rank}, {"data", data}});
      if (!res && res.error().code == ErrorCode::kInternal) return;  // try again next cycle, same offset
      if (!res) {
        // The server refuses this log (it no longer knows the job): give it up, or the exit that waits
        // for it would never be reported.
        say("dropping the log of " + key + ": " + res.error().message);
        std::error_code ec;
        r.shipped = fs::file_size(r.log_path, ec);
        break;
      }
      r.shipped += data.size();
    }
  }
}

Status Agent::heartbeat() {
  json report = json::array();
  std::vector<std::string> reported;
  for (const auto& [key, r] : replicas_) {
    json e = {{"job", r.a.job}, {"rank", r.a.rank}, {"attempt", r.a.attempt}};
    if (r.exited) {
      // Hold the exit back until the log is shipped: the server must see all output of a finished replica.
      std::error_code ec;
      auto size = fs::file_size(r.log_path, ec);
      if (!ec && size > r.shipped) {
        continue;  // not reported at all until then: "running" would read as the current attempt
      } else {
        e["state"] = "exited";
        e["exit_code"] = r.exit_code;
        reported.push_back(key);
      }
    } else {
      e["state"] = "running";
    }
    report.push_back(e);
  }
  auto answer = api_.post("/v1/agents/" + client::url_encode(opt_.name) + "/heartbeat", {{"replicas", report}});
  if (!answer) return answer.error();
  for (const auto& k : reported) replicas_.erase(k);
  apply(*answer);
  return ok_status();
}

void Agent::apply(const json& answer) {
  if (!answer.is_object()) return;
  // The run list is the truth for this node: every current replica with its attempt. A stop names a slot
  // (job, rank) whose process here is not current, so it spares the attempt the run list names.
  std::map<std::string, Assignment> current;
  if (answer.contains("run") && answer["run"].is_array()) {
    for (const auto& j : answer["run"]) {
      auto a = assignment_from_json(j);
      if (!a) {
        say("ignoring an assignment: " + a.error().message);
        continue;
      }
      current[a->slot()] = *a;
    }
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
        if (procs_.running(key)) say("stopping replica " + key);
        procs_.stop(key, Clock::now());
      }
    }
  }
  for (const auto& [slot, a] : current) {
    if (started_.count(key_of(a))) continue;
    // An older attempt of the same replica still alive is stopped first; the new one waits for its exit.
    for (auto& [key, r] : replicas_)
      if (r.a.slot() == slot && !r.exited && r.a.attempt != a.attempt) procs_.stop(key, Clock::now());
    pending_[slot] = a;
  }
  start_pending();
}

void Agent::start_pending() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    bool busy = false;
    for (const auto& [key, r] : replicas_)
      if (r.a.slot() == it->first && procs_.running(key)) busy = true;
    if (busy) {
      ++it;
      continue;
    }
    start(it->second);
    it = pending_.erase(it);
  }
}

void Agent::start(const Assignment& a) {
  const std::string key = key_of(a);
  started_.insert(key);
  fs::path dir = fs::path(opt_.work_dir) / safe_path_part(a.job) / ("attempt-" + std::to_string(a.attempt));
  std::error_code ec;
  fs::create_directories(dir, ec);
  Replica r{a, (dir / ("rank-" + std::to_string(a.rank) + ".log")).string()};
  auto spec = launch_spec(a, facts_, r.log_path, dir.string());
  Result<pid_t> pid = spec ? procs_.start(key, *spec) : Result<pid_t>(spec.error());
  if (!pid) {
    // The server hears of it as an exit like any other failure, and its retry policy applies.
    say("cannot start replica " + key + ": " + pid.error().message);
    std::ofstream(r.log_path, std::ios::app) << "allot agent: cannot start this replica: " << pid.error().message << "\n";
    r.exited = true;
    r.exit_code = 127;
  } else {
    say("started replica " + key + " (pid " + std::to_string(*pid) + ", rank " + std::to_string(a.rank) + "/" +
        std::to_string(a.world_size) + ", cpus " + format_cpu_list(spec->cpus) + ")");
  }
  replicas_[key] = std::move(r);
}

}  // namespace allot::agent
