// Load generator (issue 12, "Load at scale"): a real `allot server` on loopback, driven by many emulated agents
// and many submitting clients from this one process, on SQLite or PostgreSQL.
//
// The agents do what src/agent does on the wire: each registers with an agent-join token (and then acts with the
// node credential it gets back), heartbeats every --heartbeat-ms with the state of its replicas, and "runs" the
// replicas the run list assigns to it as simulated processes: a replica exits with code 0 after a run time drawn
// from a seeded distribution (the same for a job whatever the thread timing), and the exit is reported at once in
// a heartbeat, as the real agent does after reaping a process. With --watch 1 (the default) each agent also keeps a
// watch (GET /v1/agents/{name}/changes) and starts the run list its answer brings; the watches of all agents are
// multiplexed on --watch-threads epoll threads, and the generator's own CPU is reported next to the server's.
//
// Phases, one server for all of them:
//   1. register the agents (mixed instance types, three network layers), then keep the jobs off every node: one
//      reservation of them all for a team that submits nothing (--hold-by reservation, the default), or every
//      node cordoned, one request each (--hold-by cordon);
//   2. queue: --jobs submissions from --clients clients as fast as the server takes them (submissions/s);
//   3. hold: --hold-s seconds with every job queued (heartbeat latency with the full queue, GET /v1/jobs pages);
//   4. drain: delete the reservation (or uncordon every node, one request each: at 10,000 nodes that took longer
//      than the drain itself, so the starts measured the uncordons); the queue runs out (admissions/s, job
//      starts/s on the agents);
//   5. paced: --paced-s seconds of submissions at --paced-rate (default half the drain's start rate) on the now
//      idle cluster (submit-to-start latency).
// Then every job must have started and succeeded; --check makes a mismatch the exit status (the smoke test).
//
// Once the first wave of jobs is placed, a job starts only where one ended, so the drain's start rate is bounded
// by the cluster too: its accelerators over a job's mean accelerator-seconds (printed as
// cluster_bound_starts_per_second; about 1,670/s for 1,000 nodes at the default --run-ms 1500). To measure the
// server's own rate, shorten the run time until that bound is well above it (--run-ms 500: about 5,000/s).
//
//   loadgen_bench --allot build/allot [--store sqlite|postgresql] [--nodes 1000] [--jobs 50000] [--clients 32]
//                 [--agent-threads 64] [--heartbeat-ms 1000] [--run-ms 1500] [--hold-s 10] [--paced-s 10]
//                 [--paced-rate R] [--seed 1] [--timeout-s 900] [--watch 1] [--watch-threads 2] [--check]
//                 [--hold-by reservation|cordon]
//                 [--server-arg ARG]...   (passed on to `allot server`, e.g. --server-arg --max-connections
//                 --server-arg 21000: every emulated agent connects from 127.0.0.1, so thousands of nodes need
//                 --max-connections and --max-connections-per-address of twice the nodes and more)
// It also reads the server's threads and RSS from /proc: at start, after registration (the nodes' cost), after
// the queue phase (the jobs' cost), and the most threads seen, sampled every 200 ms.
// And, per phase, how long the server's writer thread (named allot-writer) ran and how long it was runnable but
// waited for a core (its schedstat): on a machine the emulated agents saturate, the second is what a slow
// admission mostly is (bench/RESULTS.md, "10,000 agents: the writer first").
#include <httplib.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  std::string allot;
  std::string store = "sqlite";
  int nodes = 1000;
  int jobs = 50000;
  int clients = 32;
  // An agent thread heartbeats for its agents one after another: enough threads that a slow answer to one does
  // not make the others miss their heartbeats (a real agent waits for nobody).
  int agent_threads = 64;
  int heartbeat_ms = 1000;
  double run_ms = 1500;  // mean simulated run time of a replica
  double hold_s = 10;
  double paced_s = 10;
  double paced_rate = 0;  // 0: half the drain's start rate
  uint64_t seed = 1;
  double timeout_s = 900;
  bool check = false;
  // Each agent also watches its run tag (GET /v1/agents/{name}/changes, as src/agent does) and starts the run list
  // the watch answer brings; --watch 0 leaves the agents to their heartbeat intervals.
  bool watch = true;
  int watch_threads = 2;  // threads that multiplex the agents' watch connections (epoll)
  std::vector<std::string> server_args;  // more flags for `allot server`
  // How the queue phase keeps jobs off the nodes: "reservation" (one reservation of every node for a team with no
  // jobs, deleted in one request to start the drain) or "cordon" (every node cordoned, then uncordoned one request
  // at a time, as before 2026-12-02: at 10,000 nodes the uncordons took 48-89 s, so the drain measured them).
  std::string hold_by = "reservation";
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "loadgen: %s\n", why.c_str());
  std::exit(2);
}

double secs_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count(); }

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double unit(uint64_t h) { return static_cast<double>(h >> 11) / 9007199254740992.0; }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Latency samples shared by threads.
struct Samples {
  std::mutex mu;
  std::vector<double> ms;
  void add(double v) {
    std::lock_guard l(mu);
    ms.push_back(v);
  }
  std::vector<double> take() {
    std::lock_guard l(mu);
    return std::exchange(ms, {});
  }
};

// ---- the server process and its store ----

struct ServerProcess {
  fs::path dir;
  pid_t pid = -1;
  int port = 0;
  std::string admin;
  std::string pg_dir;

  std::string start_postgres() {
    pg_dir = (dir / "pg").string();
    std::string cmd = std::string("bash ") + ALLOT_SOURCE_DIR + "/tests/support/pg_instance.sh start " + pg_dir;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) die("cannot run " + cmd);
    char buf[512];
    std::string out;
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    int rc = ::pclose(p);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
      std::fprintf(stderr, "loadgen: PostgreSQL cannot be installed here; skipping\n");
      std::exit(77);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    if (rc != 0 || out.rfind("postgresql://", 0) != 0) die("pg_instance.sh start failed: " + out);
    return out;
  }

  void start(const Args& a) {
    dir = fs::temp_directory_path() / ("allot-loadgen-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<std::string> argv = {a.allot, "server", "--listen", "127.0.0.1:0", "--data", (dir / "data").string()};
    // 2048 connections unless --server-arg says otherwise.
    if (std::find(a.server_args.begin(), a.server_args.end(), "--max-connections") == a.server_args.end())
      argv.insert(argv.end(), {"--max-connections", "2048"});
    for (const auto& arg : a.server_args) argv.push_back(arg);
    if (a.store == "postgresql") {
      argv.push_back("--database");
      argv.push_back(start_postgres());
    } else if (a.store != "sqlite") {
      die("--store must be sqlite or postgresql, not " + a.store);
    }
    const std::string log = (dir / "server.log").string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, (dir / "server.err.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<char*> cargv;
    for (auto& s : argv) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    if (posix_spawn(&pid, a.allot.c_str(), &fa, nullptr, cargv.data(), environ) != 0) die("cannot start " + a.allot);
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; i < 600 && port == 0; ++i) {
      std::ifstream in(log);
      std::stringstream ss;
      ss << in.rdbuf();
      auto at = ss.str().find("http://127.0.0.1:");
      if (at != std::string::npos) port = std::atoi(ss.str().c_str() + at + 17);
      if (port == 0) {
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == pid) die("allot server exited at start; see " + (dir / "server.err.log").string());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (port == 0) die("allot server did not print its URL within 60 s");
    std::ifstream tok(dir / "data" / "admin-token");
    std::getline(tok, admin);
    if (admin.empty()) die("the server wrote no admin token");
  }

  // CPU seconds (user + system) and peak RSS (MiB) of the server, from /proc.
  double cpu_seconds() const { return cpu_seconds_of(std::to_string(pid)); }
  static double cpu_seconds_of(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/stat");
    std::string s((std::istreambuf_iterator<char>(in)), {});
    auto rp = s.rfind(')');
    if (rp == std::string::npos) return 0;
    std::istringstream f(s.substr(rp + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; f >> field; ++i) {  // field 3 is the state
      if (i == 14) utime = std::stod(field);
      if (i == 15) { stime = std::stod(field); break; }
    }
    return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  // The load generator's own, every thread of it: on the same cores as the server, it takes from it.
  static double own_cpu_seconds() { return cpu_seconds_of("self"); }
  // The server's writer thread (named allot-writer): seconds on a core and seconds runnable but waiting for one
  // (/proc/PID/task/TID/schedstat), so that a phase shows whether a slow admission was the writer's work or its
  // wait for a core. Unknown (negative) for a server whose threads have no names.
  struct WriterTime {
    double run_s = -1, wait_s = -1;
    WriterTime operator-(const WriterTime& o) const {
      if (run_s < 0 || o.run_s < 0) return {};
      return {run_s - o.run_s, wait_s - o.wait_s};
    }
  };
  WriterTime writer_time() const {
    const fs::path tasks = fs::path("/proc") / std::to_string(pid) / "task";
    std::error_code ec;
    for (const auto& task : fs::directory_iterator(tasks, ec)) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      if (!std::getline(comm, name) || name != "allot-writer") continue;
      std::ifstream stat(task.path() / "schedstat");
      double run_ns = 0, wait_ns = 0;
      if (stat >> run_ns >> wait_ns) return {run_ns / 1e9, wait_ns / 1e9};
    }
    return {};
  }
  // A field of /proc/PID/status in its unit (VmRSS: kB, Threads: a count); 0 when missing.
  double status_field(const std::string& name) const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind(name + ":", 0) == 0) return std::stod(line.substr(name.size() + 1));
    return 0;
  }
  double rss_mib() const { return status_field("VmRSS") / 1024.0; }
  double peak_rss_mib() const {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
    return 0;
  }

  void stop() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      int st = 0;
      for (int i = 0; i < 100 && ::waitpid(pid, &st, WNOHANG) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (::waitpid(pid, &st, WNOHANG) == 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
      }
      pid = -1;
    }
    if (!pg_dir.empty()) {
      std::string cmd = std::string("bash ") + ALLOT_SOURCE_DIR + "/tests/support/pg_instance.sh stop " + pg_dir + " >/dev/null 2>&1";
      (void)std::system(cmd.c_str());
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

httplib::Client client(int port, const std::string& token) {
  httplib::Client c("127.0.0.1", port);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  c.set_read_timeout(120, 0);
  c.set_bearer_token_auth(token);
  return c;
}

json call(httplib::Client& c, const char* method, const std::string& path, const json& body = nullptr) {
  auto r = std::strcmp(method, "GET") == 0 ? c.Get(path) : c.Post(path, body.is_null() ? "" : body.dump(), "application/json");
  if (!r || r->status >= 300)
    die(std::string(method) + " " + path + " failed: " + (r ? std::to_string(r->status) + " " + r->body : httplib::to_string(r.error())));
  return r->body.empty() ? json() : json::parse(r->body);
}

// ---- the cluster: nodes, teams, jobs ----

struct TypeMix {
  const char* name;
  double share;
  int accelerators;  // as the server's catalog (src/core/model/catalog.cpp) has it; only for the cluster's bound below
};
// Mixed instance types: 8-GPU H100 and A100 nodes, 16-core Trainium nodes, 4-GPU A10G nodes.
const TypeMix kTypes[] = {
    {"ml.p5.48xlarge", 0.5, 8}, {"ml.p4d.24xlarge", 0.25, 8}, {"ml.trn1.32xlarge", 0.15, 16}, {"ml.g5.12xlarge", 0.10, 4}};
constexpr int kTeams = 10;

std::string type_of_node(int i, int nodes) {
  double x = (static_cast<double>(i) + 0.5) / nodes, acc = 0;
  for (const auto& t : kTypes)
    if (x < (acc += t.share)) return t.name;
  return kTypes[0].name;
}
int count_of_type(const std::string& type, int nodes) {
  int n = 0;
  for (int i = 0; i < nodes; ++i) n += type_of_node(i, nodes) == type;
  return n;
}

std::string node_name(int i) {
  char b[32];
  std::snprintf(b, sizeof b, "lg-%04d", i);
  return b;
}

// A job: its shape from the seed and its index alone.
struct JobShape {
  int replicas = 1;
  int accelerators = 1;
  int team = 0;
  double run_ms = 0;
};
JobShape shape_of(const Args& a, int i) {
  uint64_t h = splitmix(a.seed * 1000003 + static_cast<uint64_t>(i));
  JobShape s;
  s.team = static_cast<int>(h % kTeams);
  const double u = unit(splitmix(h));
  // Mostly small jobs, some whole nodes, a few of two and four nodes.
  if (u < 0.40) s.accelerators = 1;
  else if (u < 0.65) s.accelerators = 2;
  else if (u < 0.82) s.accelerators = 4;
  else if (u < 0.95) s.accelerators = 8;
  else if (u < 0.99) s.replicas = 2, s.accelerators = 8;
  else s.replicas = 4, s.accelerators = 8;
  // Exponential run time around the mean, kept within [0.1, 5] means so one job cannot hold the end.
  const double e = -std::log(1.0 - 0.999 * unit(splitmix(h ^ 0x5bd1e995)));
  s.run_ms = a.run_ms * std::clamp(e, 0.1, 5.0);
  return s;
}

json job_body(const Args& a, int i) {
  JobShape s = shape_of(a, i);
  json j = {{"name", "lg-job-" + std::to_string(i)}, {"team", "team-" + std::to_string(s.team)}, {"replicas", s.replicas},
            {"per_replica", {{"accelerators", s.accelerators}}}, {"command", "simulated"}};
  if (s.replicas > 1) j["topology"] = {{"preferred", "network-node-layer-3"}};
  return j;
}

// The most job starts per second the cluster itself allows once it is full: its accelerators over the mean
// accelerator-seconds a job of [from, to) holds them. However fast the server, a drain longer than the first wave
// of starts cannot go faster than this; the run time (--run-ms) sets it.
double cluster_bound(const Args& a, int from, int to) {
  double accelerators = 0;
  for (const auto& t : kTypes) accelerators += t.accelerators * count_of_type(t.name, a.nodes);
  double held = 0;  // accelerator-seconds
  for (int i = from; i < to; ++i) {
    const JobShape s = shape_of(a, i);
    held += s.replicas * s.accelerators * s.run_ms / 1000;
  }
  return held > 0 ? accelerators * (to - from) / held : 0;
}

int job_index(const std::string& name) {
  if (name.rfind("lg-job-", 0) != 0) return -1;
  return std::atoi(name.c_str() + 7);
}

// ---- what every job went through, by index (nanoseconds on the steady clock; 0 = not yet) ----

struct Ledger {
  explicit Ledger(size_t n) : submitted(n), admitted(n), started(n), finished(n), world(n) {}
  std::vector<std::atomic<int64_t>> submitted, admitted, started, finished;
  std::vector<std::atomic<int>> world;  // replicas that reported their exit
  std::atomic<int> accepted{0}, refused{0}, starts{0}, exits{0}, done{0}, admits{0}, finishes{0};
};

// ---- emulated agents ----

struct Replica {
  int job = 0;
  int rank = 0;
  int attempt = 0;
  int64_t end_ns = 0;
};

struct EmulatedAgent {
  std::string name, type, credential;
  json labels;
  std::map<std::pair<int, int>, Replica> replicas;  // (job, rank)
  // Replicas whose exit the server has, by (job, rank) and attempt: a multi-node job stays in the run list until
  // its last replica exits, and an exited replica must not start again meanwhile.
  std::map<std::pair<int, int>, int> exited;
  int64_t next_hb_ns = 0;
  int64_t last_answer_ns = 0;
  uint64_t applied_as_of = 0;  // as_of of the newest answer acted on (heartbeat or watch)
};

// What an agent's watch shares with the thread that heartbeats for it.
struct WatchState {
  std::mutex mu;
  std::string tag;             // run_tag of the newest answer seen
  uint64_t as_of = 0;          // its as_of
  std::optional<json> news;    // a watch answer the heartbeat thread has not acted on
  std::atomic<bool> poked{false};
};

struct Agents {
  const Args& a;
  int port;
  Ledger& ledger;
  std::vector<EmulatedAgent> agents;
  std::atomic<bool> stop{false};
  Samples hb_ms;  // heartbeat round trips
  std::atomic<int> hb_errors{0};
  std::atomic<int> watch_answers{0}, watch_errors{0};
  std::atomic<int64_t> watch_cpu_ns{0};  // CPU time of the watch threads
  std::atomic<int64_t> max_gap_ns{0};  // the longest time any agent went between answered heartbeats
  std::vector<std::thread> threads;
  std::unique_ptr<WatchState[]> watch;

  Agents(const Args& args, int p, Ledger& l) : a(args), port(p), ledger(l), watch(new WatchState[static_cast<size_t>(args.nodes)]) {
    for (int i = 0; i < a.nodes; ++i) {
      EmulatedAgent ag;
      ag.name = node_name(i);
      ag.type = type_of_node(i, a.nodes);
      // Three network layers: 1 spine per 256 nodes, 1 aggregation per 64, 1 rack switch per 16.
      ag.labels = {{"topology.k8s.aws/network-node-layer-1", "nn1-" + std::to_string(i / 256)},
                   {"topology.k8s.aws/network-node-layer-2", "nn2-" + std::to_string(i / 64)},
                   {"topology.k8s.aws/network-node-layer-3", "nn3-" + std::to_string(i / 16)}};
      agents.push_back(std::move(ag));
    }
  }

  void register_all(const std::string& join) {
    std::atomic<int> next{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < a.agent_threads; ++t)
      ts.emplace_back([&] {
        auto c = client(port, join);
        for (int i; (i = next++) < a.nodes;) {
          EmulatedAgent& ag = agents[i];
          json body = {{"name", ag.name}, {"instance_type", ag.type}, {"labels", ag.labels}, {"address", "127.0.0.1"},
                       {"heartbeat_interval_ms", a.heartbeat_ms}, {"boot", 0}};
          json r = call(c, "POST", "/v1/agents/register", body);
          if (!r.contains("credential")) die("registration of " + ag.name + " gave no credential");
          ag.credential = r["credential"].get<std::string>();
        }
      });
    for (auto& t : ts) t.join();
  }

  void heartbeat(httplib::Client& c, EmulatedAgent& ag, WatchState& w) {
    const int64_t now = now_ns();
    json reps = json::array();
    std::vector<std::pair<int, int>> exited;
    for (const auto& [key, r] : ag.replicas) {
      json e = {{"job", "lg-job-" + std::to_string(r.job)}, {"rank", r.rank}, {"attempt", r.attempt}};
      if (now >= r.end_ns) {
        e["state"] = "exited";
        e["exit_code"] = 0;
        exited.push_back(key);
      } else {
        e["state"] = "running";
      }
      reps.push_back(std::move(e));
    }
    const std::string body = json{{"replicas", std::move(reps)}}.dump();
    httplib::Headers h = {{"Authorization", "Bearer " + ag.credential}};
    auto t0 = Clock::now();
    auto r = c.Post("/v1/agents/" + ag.name + "/heartbeat", h, body, "application/json");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    ag.next_hb_ns = now_ns() + int64_t{a.heartbeat_ms} * 1'000'000;
    if (!r || r->status != 200) {
      ++hb_errors;
      return;
    }
    hb_ms.add(ms);
    const int64_t answered = now_ns();
    if (ag.last_answer_ns) {
      int64_t gap = answered - ag.last_answer_ns, seen = max_gap_ns;
      while (gap > seen && !max_gap_ns.compare_exchange_weak(seen, gap)) {}
    }
    ag.last_answer_ns = answered;
    for (const auto& key : exited) {
      ag.exited[key] = ag.replicas[key].attempt;
      ag.replicas.erase(key);
      ++ledger.exits;
      int64_t zero = 0;
      const JobShape s = shape_of(a, key.first);
      if (++ledger.world[key.first] == s.replicas && ledger.finished[key.first].compare_exchange_strong(zero, now_ns())) ++ledger.done;
    }
    json answer = json::parse(r->body, nullptr, false);
    if (!answer.is_object() || !answer.contains("run")) return;
    const uint64_t as_of = answer.value("as_of", uint64_t{0});
    if (answer.contains("run_tag") && answer["run_tag"].is_string()) {
      std::lock_guard lock(w.mu);
      if (as_of >= w.as_of) {  // not back to an older tag than the watch brought
        w.tag = answer["run_tag"].get<std::string>();
        w.as_of = as_of;
      }
    }
    ag.applied_as_of = std::max(ag.applied_as_of, as_of);
    apply_run(ag, answer);
  }

  // The heartbeat thread: acts on a watch answer, unless a heartbeat answer as new came meanwhile.
  void take_news(EmulatedAgent& ag, WatchState& w) {
    std::optional<json> news;
    {
      std::lock_guard lock(w.mu);
      news = std::exchange(w.news, std::nullopt);
    }
    if (!news) return;
    const uint64_t as_of = news->value("as_of", uint64_t{0});
    if (as_of <= ag.applied_as_of) return;
    ag.applied_as_of = as_of;
    apply_run(ag, *news);
  }

  void apply_run(EmulatedAgent& ag, const json& answer) {
    // The run list is the truth for this node (src/agent/agent.cpp): start what is new, stop what is gone.
    std::map<std::pair<int, int>, Replica> current;
    std::map<std::pair<int, int>, int> still_exited;
    const int64_t at = now_ns();
    for (const auto& as : answer["run"]) {
      const int job = job_index(as.value("job", ""));
      if (job < 0 || job >= static_cast<int>(ledger.started.size())) continue;
      Replica rep{job, as.value("rank", 0), as.value("attempt", 0), 0};
      if (auto x = ag.exited.find({job, rep.rank}); x != ag.exited.end() && x->second == rep.attempt) {
        still_exited.insert(*x);
        continue;
      }
      auto it = ag.replicas.find({job, rep.rank});
      if (it != ag.replicas.end() && it->second.attempt == rep.attempt) {
        current[{job, rep.rank}] = it->second;
        continue;
      }
      rep.end_ns = at + static_cast<int64_t>(shape_of(a, job).run_ms * 1e6);
      current[{job, rep.rank}] = rep;
      int64_t zero = 0;
      if (ledger.started[job].compare_exchange_strong(zero, at)) ++ledger.starts;
    }
    ag.replicas = std::move(current);
    ag.exited = std::move(still_exited);
  }

  void run_thread(int t) {
    auto c = client(port, "");
    while (!stop) {
      const int64_t now = now_ns();
      int64_t next_due = now + 5'000'000;
      for (size_t i = t; i < agents.size(); i += a.agent_threads) {
        EmulatedAgent& ag = agents[i];
        int64_t due = ag.next_hb_ns;
        for (const auto& [k, r] : ag.replicas) due = std::min(due, r.end_ns);  // an exit is reported at once
        if (watch[i].poked.exchange(false)) take_news(ag, watch[i]);
        if (due <= now) {
          heartbeat(c, ag, watch[i]);
          if (stop) return;
        } else {
          next_due = std::min(next_due, due);
        }
      }
      const int64_t wait = next_due - now_ns();
      if (wait > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(wait, 5'000'000)));
    }
  }

  // The agents' watches, as src/agent/agent.cpp (Agent::watch_loop) does them: a long poll per agent against the
  // newest tag it knows; the answer's run list goes to the agent's heartbeat thread (take_news). An agent holds
  // one blocking connection for it; here a few threads multiplex all of them with epoll (plain HTTP/1.1 on
  // keep-alive connections), so the emulation does not take a thread per agent from the cores the server runs on.
  struct WatchConn {
    int fd = -1;
    std::string out, in;
    size_t sent = 0;
    std::string known;
    int64_t not_before_ns = 0;  // idle until then (no tag yet, or a refusal)
    bool busy = false;          // a poll is under way
  };

  void watch_mux(int t) {
    const int ep = ::epoll_create1(0);
    if (ep < 0) die("epoll_create1 failed");
    std::vector<size_t> mine;
    for (size_t i = static_cast<size_t>(t); i < agents.size(); i += static_cast<size_t>(a.watch_threads)) mine.push_back(i);
    std::vector<WatchConn> conns(mine.size());
    auto close_conn = [&](WatchConn& c) {
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
      c.busy = false;
      c.in.clear();
    };
    auto begin = [&](size_t k) {
      WatchConn& c = conns[k];
      EmulatedAgent& ag = agents[mine[k]];
      if (c.fd < 0) {
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        int one = 1;
        ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 && errno != EINPROGRESS) die("watch: connect failed");
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
        ev.data.u64 = k;
        ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
      }
      c.out = "GET /v1/agents/" + ag.name + "/changes?wait_ms=20000&known=" + c.known +
              " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + ag.credential + "\r\n\r\n";
      c.sent = 0;
      c.in.clear();
      c.busy = true;
    };
    auto flush = [&](WatchConn& c) {
      while (c.busy && c.sent < c.out.size()) {
        ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += static_cast<size_t>(n);
        else if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS || errno == ENOTCONN)) return;  // still connecting
        else return close_conn(c);
      }
    };
    // One whole answer in c.in: Content-Length bodies only (the server sends no chunked answers here).
    auto answered = [&](size_t k) {
      WatchConn& c = conns[k];
      const size_t head_end = c.in.find("\r\n\r\n");
      if (head_end == std::string::npos) return false;
      size_t length = 0;
      std::string head = c.in.substr(0, head_end);
      std::transform(head.begin(), head.end(), head.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (auto at = head.find("content-length:"); at != std::string::npos) length = std::strtoul(head.c_str() + at + 15, nullptr, 10);
      if (c.in.size() < head_end + 4 + length) return false;
      const int status = c.in.size() > 12 ? std::atoi(c.in.c_str() + 9) : 0;
      json body = json::parse(c.in.substr(head_end + 4, length), nullptr, false);
      const bool closing = head.find("connection: close") != std::string::npos;
      c.busy = false;
      c.in.clear();
      if (closing) close_conn(c);
      WatchState& w = watch[mine[k]];
      if (status != 200 || !body.is_object()) {
        ++watch_errors;
        c.not_before_ns = now_ns() + (status == 429 ? 60'000'000'000 : 1'000'000'000);
        return true;
      }
      ++watch_answers;
      const std::string tag = body.value("run_tag", "");
      if (tag.empty() || !body.contains("run")) return true;
      std::lock_guard lock(w.mu);
      if (tag == w.tag) return true;
      w.tag = tag;
      w.as_of = std::max(w.as_of, body.value("as_of", uint64_t{0}));
      w.news = std::move(body);
      w.poked = true;
      return true;
    };
    std::vector<epoll_event> events(256);
    timespec cpu0{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
    int64_t next_scan = 0;
    while (!stop) {
      const int64_t now = now_ns();
      if (now >= next_scan) {  // start the polls of idle agents whose tag moved or is known at last
        next_scan = now + 5'000'000;
        for (size_t k = 0; k < conns.size(); ++k) {
          WatchConn& c = conns[k];
          if (c.busy || now < c.not_before_ns) continue;
          WatchState& w = watch[mine[k]];
          {
            std::lock_guard lock(w.mu);
            c.known = w.tag;
          }
          if (c.known.empty()) continue;
          begin(k);
          flush(c);
        }
      }
      const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 5);
      for (int e = 0; e < n; ++e) {
        const size_t k = events[e].data.u64;
        WatchConn& c = conns[k];
        if (c.fd < 0) continue;
        if (events[e].events & EPOLLOUT) flush(c);
        if (c.fd < 0 || !(events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
        char buf[16384];
        bool eof = false;
        for (;;) {
          ssize_t got = ::recv(c.fd, buf, sizeof buf, 0);
          if (got > 0) c.in.append(buf, static_cast<size_t>(got));
          else if (got < 0 && errno == EAGAIN) break;
          else {
            eof = true;
            break;
          }
        }
        if (c.busy) answered(k);
        if (eof) {
          // The server closed the connection (keep-alive limits): a poll cut short is asked again on a new one.
          if (c.busy) {
            ++watch_errors;
            c.not_before_ns = now_ns() + 100'000'000;
          }
          close_conn(c);
        }
      }
    }
    for (auto& c : conns) close_conn(c);
    ::close(ep);
    timespec cpu1{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    watch_cpu_ns += (cpu1.tv_sec - cpu0.tv_sec) * 1'000'000'000 + (cpu1.tv_nsec - cpu0.tv_nsec);
  }

  void start() {
    // Spread the first heartbeats over one interval, as agents started at different times would be.
    const int64_t now = now_ns();
    for (size_t i = 0; i < agents.size(); ++i)
      agents[i].next_hb_ns = now + static_cast<int64_t>(i) * a.heartbeat_ms * 1'000'000 / static_cast<int64_t>(agents.size());
    for (int t = 0; t < a.agent_threads; ++t) threads.emplace_back([this, t] { run_thread(t); });
    if (a.watch)
      for (int t = 0; t < a.watch_threads; ++t) threads.emplace_back([this, t] { watch_mux(t); });
  }
  void join() {
    stop = true;
    for (auto& t : threads) t.join();
  }
};

// ---- the event stream: when the server admitted each job ----

struct Watcher {
  std::atomic<bool> stop{false};
  std::atomic<int> truncated{0};
  std::thread th;
  void start(int port, const std::string& token, Ledger& ledger) {
    th = std::thread([this, port, token, &ledger] {
      auto c = client(port, token);
      c.set_read_timeout(10, 0);
      uint64_t since = 0;
      while (!stop) {
        auto r = c.Get("/v1/events?since=" + std::to_string(since) + "&wait=1");
        if (!r || r->status != 200) continue;
        const int64_t at = now_ns();
        json page = json::parse(r->body, nullptr, false);
        if (!page.is_object()) continue;
        if (page.value("truncated", false)) ++truncated;
        for (const auto& e : page["events"]) {
          since = std::max<uint64_t>(since, e.value("seq", uint64_t{0}));
          const std::string kind = e.value("kind", "");
          const int job = job_index(e.value("job", ""));
          if (job < 0 || job >= static_cast<int>(ledger.admitted.size())) continue;
          int64_t zero = 0;
          if (kind == "admit" && ledger.admitted[job].compare_exchange_strong(zero, at)) ++ledger.admits;
          if (kind == "finish") ++ledger.finishes;
        }
        if (page.contains("next")) since = std::max<uint64_t>(since, page["next"].get<uint64_t>());
      }
    });
  }
  void join() {
    stop = true;
    th.join();
  }
};

// ---- GET /v1/jobs pages while the load runs ----

struct Lister {
  std::atomic<bool> stop{false};
  Samples page_ms;
  std::thread th;
  void start(int port, const std::string& token) {
    th = std::thread([this, port, token] {
      auto c = client(port, token);
      std::string cont;
      while (!stop) {
        auto t0 = Clock::now();
        auto r = c.Get("/v1/jobs?limit=500" + (cont.empty() ? "" : "&continue=" + cont));
        if (r && r->status == 200) {
          page_ms.add(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          json page = json::parse(r->body, nullptr, false);
          cont = page.is_object() && page.contains("continue") ? page["continue"].get<std::string>() : "";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  void join() {
    stop = true;
    th.join();
  }
};

// Submits jobs [from, to) from `clients` threads; at `rate` per second when rate > 0.
void submit(const Args& a, int port, const std::string& token, Ledger& ledger, int from, int to, double rate) {
  std::atomic<int> next{from};
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < a.clients; ++t)
    ts.emplace_back([&] {
      auto c = client(port, token);
      for (int i; (i = next++) < to;) {
        if (rate > 0) std::this_thread::sleep_until(t0 + std::chrono::duration<double>((i - from) / rate));
        const std::string body = job_body(a, i).dump();
        ledger.submitted[i] = now_ns();
        auto r = c.Post("/v1/jobs", body, "application/json");
        if (r && r->status == 201) {
          ++ledger.accepted;
          // The answer comes after the scheduler ran on its batch: a job admitted at once says so.
          json j = json::parse(r->body, nullptr, false);
          int64_t zero = 0;
          if (j.is_object() && j.value("state", "") == "Running" && ledger.admitted[i].compare_exchange_strong(zero, now_ns()))
            ++ledger.admits;
        } else {
          ++ledger.refused;
          if (ledger.refused < 5) std::fprintf(stderr, "submission %d refused: %s\n", i, r ? r->body.c_str() : httplib::to_string(r.error()).c_str());
        }
      }
    });
  for (auto& t : ts) t.join();
}

// The rate at which `times` (ns, 0 = never) happened between the 10th and 90th percentile of them: the sustained
// rate, without the ramp at either end.
double sustained_rate(std::vector<std::atomic<int64_t>>& times, int from, int to) {
  std::vector<int64_t> v;
  for (int i = from; i < to; ++i)
    if (int64_t t = times[i]) v.push_back(t);
  if (v.size() < 10) return 0;
  std::sort(v.begin(), v.end());
  const size_t lo = v.size() / 10, hi = v.size() * 9 / 10;
  const double span = static_cast<double>(v[hi] - v[lo]) / 1e9;
  return span > 0 ? static_cast<double>(hi - lo) / span : 0;
}

std::vector<double> delays_ms(std::vector<std::atomic<int64_t>>& from, std::vector<std::atomic<int64_t>>& to, int lo, int hi) {
  std::vector<double> out;
  for (int i = lo; i < hi; ++i)
    if (from[i] && to[i]) out.push_back(static_cast<double>(to[i] - from[i]) / 1e6);
  return out;
}

// Waits until done(), or until progress() has not moved for `stall` (jobs a failed node took down never start
// or finish here), or the deadline.
void wait_until(const std::function<bool()>& done, const std::function<int64_t()>& progress, Clock::time_point deadline,
                const char* what) {
  const auto stall = std::chrono::seconds(30);
  int64_t last = progress();
  auto moved = Clock::now();
  while (!done()) {
    if (Clock::now() > deadline) {
      std::fprintf(stderr, "loadgen: timed out waiting for %s\n", what);
      return;
    }
    if (int64_t p = progress(); p != last) last = p, moved = Clock::now();
    if (Clock::now() - moved > stall) {
      std::fprintf(stderr, "loadgen: no progress for 30 s while waiting for %s; going on\n", what);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

constexpr const char* kHoldTeam = "lg-hold";

// Every node kept from the queued jobs (or given back), in one request with --hold-by reservation: a reservation
// of every node for a team that submits nothing, created Active, deleted to start the drain.
void hold_all(const Args& a, int port, const std::string& token, bool hold) {
  auto c = client(port, token);
  const std::string path = std::string("/v1/reservations/") + kHoldTeam;  // named for its team
  auto r = [&] {
    if (!hold) return c.Delete(path);
    const auto tomorrow = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() + 86400;
    char nodes[64];
    std::snprintf(nodes, sizeof nodes, "lg-[0000-%04d]", a.nodes - 1);  // node_name()'s spelling, as a host list
    return c.Put(path, json{{"team", kHoldTeam}, {"nodes", nodes}, {"start", "now"}, {"end", tomorrow}}.dump(), "application/json");
  }();
  if (!r || r->status >= 300)
    die(std::string(hold ? "PUT " : "DELETE ") + path + " failed: " + (r ? std::to_string(r->status) + " " + r->body : httplib::to_string(r.error())));
}

// Every node cordoned (or not), from the submitting clients' threads.
void cordon_all(const Args& a, int port, const std::string& token, bool cordon) {
  std::atomic<int> next{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < std::min(a.clients, 16); ++t)
    ts.emplace_back([&] {
      auto c = client(port, token);
      for (int i; (i = next++) < a.nodes;) call(c, "POST", "/v1/nodes/" + node_name(i) + (cordon ? "/cordon" : "/uncordon"));
    });
  for (auto& t : ts) t.join();
}

int count_jobs(int port, const std::string& token, const char* state) {
  auto c = client(port, token);
  int n = 0;
  std::string cont;
  do {
    json page = call(c, "GET", std::string("/v1/jobs?limit=5000&state=") + state + (cont.empty() ? "" : "&continue=" + cont));
    n += static_cast<int>(page["items"].size());
    cont = page.contains("continue") ? page["continue"].get<std::string>() : "";
  } while (!cont.empty());
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto v = [&]() -> std::string {
      if (i + 1 >= argc) die(k + " needs a value");
      return argv[++i];
    };
    if (k == "--allot") a.allot = v();
    else if (k == "--store") a.store = v();
    else if (k == "--nodes") a.nodes = std::stoi(v());
    else if (k == "--jobs") a.jobs = std::stoi(v());
    else if (k == "--clients") a.clients = std::stoi(v());
    else if (k == "--agent-threads") a.agent_threads = std::stoi(v());
    else if (k == "--heartbeat-ms") a.heartbeat_ms = std::stoi(v());
    else if (k == "--run-ms") a.run_ms = std::stod(v());
    else if (k == "--hold-s") a.hold_s = std::stod(v());
    else if (k == "--paced-s") a.paced_s = std::stod(v());
    else if (k == "--paced-rate") a.paced_rate = std::stod(v());
    else if (k == "--seed") a.seed = std::stoull(v());
    else if (k == "--timeout-s") a.timeout_s = std::stod(v());
    else if (k == "--check") a.check = true;
    else if (k == "--watch") a.watch = std::stoi(v()) != 0;
    else if (k == "--watch-threads") a.watch_threads = std::max(1, std::stoi(v()));
    else if (k == "--server-arg") a.server_args.push_back(v());
    else if (k == "--hold-by") {
      a.hold_by = v();
      if (a.hold_by != "reservation" && a.hold_by != "cordon") die("--hold-by takes reservation or cordon, not " + a.hold_by);
    } else die("unknown option " + k + " (see the comment at the top of bench/loadgen_bench.cpp)");
  }
  if (a.allot.empty()) die("--allot PATH (the allot binary) is required");
  if (a.nodes < 1 || a.jobs < 1 || a.clients < 1 || a.agent_threads < 1 || a.heartbeat_ms < 10 || a.run_ms <= 0)
    die("--nodes, --jobs, --clients, --agent-threads must be positive, --heartbeat-ms >= 10, --run-ms > 0");
  ::signal(SIGPIPE, SIG_IGN);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.timeout_s));

  ServerProcess server;
  server.start(a);
  std::printf("loadgen: %s server (pid %d) on port %d, %d nodes, %d jobs, %d clients, heartbeat %d ms, run %.0f ms mean, seed %llu\n",
              a.store.c_str(), static_cast<int>(server.pid), server.port, a.nodes, a.jobs, a.clients, a.heartbeat_ms, a.run_ms,
              static_cast<unsigned long long>(a.seed));
  std::fflush(stdout);

  // Teams share every type by their allocation; idle capacity is lent.
  auto admin = client(server.port, server.admin);
  json teams = json::array();
  for (int t = 0; t < kTeams; ++t) {
    json alloc = json::array();
    for (const auto& ty : kTypes)
      if (int n = count_of_type(ty.name, a.nodes); n > 0)
        alloc.push_back({{"instance_type", ty.name}, {"instances", std::max(1, n / kTeams)}});
    // Borrowing up to 100x the allocation: every job fits some team's reach on a small cluster too (a 4-node job
    // on 20 nodes), so every job runs in the end.
    teams.push_back({{"name", "team-" + std::to_string(t)}, {"allocation", alloc},
                     {"sharing", {{"strategy", "LendAndBorrow"}, {"borrow_limit", 10000}}}});
  }
  // The team that holds every node during the queue phase (--hold-by reservation): no allocation, no jobs.
  teams.push_back({{"name", kHoldTeam}, {"allocation", json::array()}});
  call(admin, "POST", "/v1/apply", {{"teams", teams}});
  const std::string join = call(admin, "POST", "/v1/tokens", {{"role", "agent-join"}})["token"];

  const int paced_jobs = a.paced_rate > 0 ? static_cast<int>(a.paced_rate * a.paced_s) : 0;
  // Without a rate yet, room for the paced phase at up to 5,000/s.
  const int total = a.jobs + (a.paced_rate > 0 ? paced_jobs : static_cast<int>(5000 * a.paced_s));
  Ledger ledger(static_cast<size_t>(total));
  Agents agents(a, server.port, ledger);
  // The server's threads, sampled until the end (the most seen); its RSS before the nodes, after them, after the jobs.
  std::atomic<bool> sampling{true};
  std::atomic<int> max_threads{0};
  std::thread sampler([&] {
    while (sampling) {
      max_threads = std::max(max_threads.load(), static_cast<int>(server.status_field("Threads")));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  const double rss_empty = server.rss_mib();
  auto t0 = Clock::now();
  agents.register_all(join);
  const double register_s = secs_since(t0);
  std::printf("registered %d agents in %.2f s\n", a.nodes, register_s);
  agents.start();
  Watcher watcher;
  watcher.start(server.port, server.admin, ledger);
  t0 = Clock::now();
  if (a.hold_by == "cordon") cordon_all(a, server.port, server.admin, true);
  else hold_all(a, server.port, server.admin, true);
  std::printf("held %d nodes (%s) in %.2f s\n", a.nodes, a.hold_by.c_str(), secs_since(t0));
  const double cpu0 = server.cpu_seconds();
  const double own_cpu0 = ServerProcess::own_cpu_seconds();
  const auto writer0 = server.writer_time();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // every agent heartbeating and watching
  const double rss_nodes = server.rss_mib();
  const double threads_nodes = server.status_field("Threads");

  // 2. queue
  t0 = Clock::now();
  submit(a, server.port, server.admin, ledger, 0, a.jobs, 0);
  const double submit_s = secs_since(t0);
  const double cpu_queue = server.cpu_seconds() - cpu0;
  const auto writer_queue = server.writer_time() - writer0;
  const double rss_queued = server.rss_mib();
  const double threads_queued = server.status_field("Threads");
  std::printf("queued %d jobs in %.2f s (%d refused)\n", ledger.accepted.load(), submit_s, ledger.refused.load());
  std::fflush(stdout);

  // 3. hold, every job queued
  agents.hb_ms.take();
  Lister lister;
  lister.start(server.port, server.admin);
  std::this_thread::sleep_for(std::chrono::duration<double>(a.hold_s));
  const auto hb_hold = agents.hb_ms.take();
  const auto pages_hold = lister.page_ms.take();

  // 4. drain
  const double cpu_drain0 = server.cpu_seconds();
  const double own_drain0 = ServerProcess::own_cpu_seconds();
  const auto writer_drain0 = server.writer_time();
  t0 = Clock::now();
  if (a.hold_by == "cordon") cordon_all(a, server.port, server.admin, false);
  else hold_all(a, server.port, server.admin, false);
  std::printf("released %d nodes (%s) in %.2f s (%d jobs started meanwhile)\n", a.nodes, a.hold_by.c_str(), secs_since(t0),
              ledger.starts.load());
  std::fflush(stdout);
  auto progress = [&]() -> int64_t { return ledger.starts.load() + ledger.done.load(); };
  wait_until([&] { return ledger.starts.load() >= ledger.accepted.load(); }, progress, deadline, "every queued job to start");
  const double drain_s = secs_since(t0);
  const double cpu_drain = server.cpu_seconds() - cpu_drain0;
  const double own_drain = ServerProcess::own_cpu_seconds() - own_drain0;
  const auto writer_drain = server.writer_time() - writer_drain0;
  const double start_rate = sustained_rate(ledger.started, 0, a.jobs);
  const double admit_rate = sustained_rate(ledger.admitted, 0, a.jobs);
  wait_until([&] { return ledger.done.load() >= ledger.starts.load(); }, progress, deadline, "every started job to finish");
  const auto hb_drain = agents.hb_ms.take();
  const auto pages_drain = lister.page_ms.take();
  lister.join();
  std::printf("drained in %.2f s: %d started\n", drain_s, ledger.starts.load());
  std::fflush(stdout);

  // 5. paced, on the idle cluster
  const double rate = a.paced_rate > 0 ? a.paced_rate : std::max(1.0, std::floor(start_rate / 2));
  const int paced_to = std::min(total, a.jobs + static_cast<int>(rate * a.paced_s));
  const int accepted_before = ledger.accepted;
  std::printf("pacing %d jobs at %.0f/s\n", paced_to - a.jobs, rate);
  std::fflush(stdout);
  const auto writer_paced0 = server.writer_time();
  submit(a, server.port, server.admin, ledger, a.jobs, paced_to, rate);
  wait_until([&] { return ledger.starts.load() >= ledger.accepted.load() && ledger.done.load() >= ledger.accepted.load(); },
             progress, deadline, "every paced job to start and finish");
  const auto hb_paced = agents.hb_ms.take();
  const auto writer_paced = server.writer_time() - writer_paced0;
  const double cpu_total = server.cpu_seconds() - cpu0;
  const double own_total = ServerProcess::own_cpu_seconds() - own_cpu0;
  const double rss = server.peak_rss_mib();
  sampling = false;
  sampler.join();

  agents.join();
  watcher.join();
  const int succeeded = count_jobs(server.port, server.admin, "Succeeded");
  const int failed = count_jobs(server.port, server.admin, "Failed");
  server.stop();

  auto admit_lat = delays_ms(ledger.submitted, ledger.admitted, a.jobs, paced_to);
  auto start_lat = delays_ms(ledger.submitted, ledger.started, a.jobs, paced_to);
  auto pickup_lat = delays_ms(ledger.admitted, ledger.started, a.jobs, paced_to);
  std::printf("\nloadgen results (%s; %d nodes, %d + %d jobs)\n", a.store.c_str(), a.nodes, a.jobs, ledger.accepted.load() - accepted_before);
  std::printf("submissions_per_second          %.0f   (queue phase, %d clients)\n", a.jobs / submit_s, a.clients);
  std::printf("admissions_per_second           %.0f   (drain phase, 10th-90th percentile)\n", admit_rate);
  std::printf("job_starts_per_second           %.0f   (drain phase, replicas started on the agents, 10th-90th percentile; target >= %d)\n",
              start_rate, a.store == "sqlite" ? 2000 : 1000);
  const double bound = cluster_bound(a, 0, a.jobs);
  std::printf("cluster_bound_starts_per_second %.0f   (the cluster's accelerators over a job's mean accelerator-seconds at --run-ms %.0f: "
              "no server starts jobs faster once the first wave is placed)\n", bound, a.run_ms);
  if (const double target = a.store == "sqlite" ? 2000 : 1000; bound < 1.5 * target)
    std::printf("note: the cluster's bound is within 1.5x of the target, so the drain's rate measures the cluster more than the "
                "server; shorten --run-ms to measure the server\n");
  std::printf("drain_seconds                   %.2f   (%d jobs: the nodes' release to the last start)\n", drain_s, a.jobs);
  std::printf("paced_rate_per_second           %.0f   (%d jobs)\n", rate, paced_to - a.jobs);
  std::printf("submit_to_admit_p50_ms          %.2f\n", percentile(admit_lat, 0.5));
  std::printf("submit_to_admit_p99_ms          %.2f   (target < 100)\n", percentile(admit_lat, 0.99));
  std::printf("submit_to_agent_start_p50_ms    %.2f   (%s)\n", percentile(start_lat, 0.5),
              a.watch ? "agents start the run list their watch brings" : "--watch 0: includes the wait for the node's next heartbeat");
  std::printf("submit_to_agent_start_p99_ms    %.2f\n", percentile(start_lat, 0.99));
  std::printf("admit_to_agent_start_p50_ms     %.2f   (the admission's event seen until an agent's run list has it)\n", percentile(pickup_lat, 0.5));
  std::printf("admit_to_agent_start_p99_ms     %.2f   (p95 %.2f, p98 %.2f)\n", percentile(pickup_lat, 0.99),
              percentile(pickup_lat, 0.95), percentile(pickup_lat, 0.98));
  std::printf("heartbeat_p99_ms_queue_full     %.2f   (%zu heartbeats with %d jobs queued; target < 50)\n", percentile(hb_hold, 0.99), hb_hold.size(), a.jobs);
  std::printf("heartbeat_p50_ms_queue_full     %.2f\n", percentile(hb_hold, 0.5));
  std::printf("heartbeat_p99_ms_drain          %.2f   (%zu heartbeats)\n", percentile(hb_drain, 0.99), hb_drain.size());
  std::printf("heartbeat_p99_ms_paced          %.2f   (%zu heartbeats)\n", percentile(hb_paced, 0.99), hb_paced.size());
  std::printf("heartbeat_errors                %d\n", agents.hb_errors.load());
  std::printf("heartbeat_max_gap_ms            %.0f   (longest time an agent went between answered heartbeats; the server's timeout is 15000)\n",
              static_cast<double>(agents.max_gap_ns.load()) / 1e6);
  std::printf("jobs_page_p50_ms_queue_full     %.2f   (GET /v1/jobs?limit=500, %zu pages)\n", percentile(pages_hold, 0.5), pages_hold.size());
  std::printf("jobs_page_p99_ms_queue_full     %.2f\n", percentile(pages_hold, 0.99));
  std::printf("jobs_page_p99_ms_drain          %.2f   (%zu pages)\n", percentile(pages_drain, 0.99), pages_drain.size());
  std::printf("server_cpu_seconds              %.1f   (queue %.1f, drain %.1f)\n", cpu_total, cpu_queue, cpu_drain);
  if (writer_queue.run_s >= 0 && writer_drain.run_s >= 0 && writer_paced.run_s >= 0)
    std::printf("writer_run_wait_seconds         queue %.2f/%.2f, drain %.2f/%.2f, paced %.2f/%.2f   (the writer thread on a "
                "core / runnable, waiting for one)\n",
                writer_queue.run_s, writer_queue.wait_s, writer_drain.run_s, writer_drain.wait_s, writer_paced.run_s,
                writer_paced.wait_s);
  else
    std::printf("writer_run_wait_seconds         unknown   (no thread named allot-writer in the server)\n");
  std::printf("server_peak_rss_mib             %.0f\n", rss);
  std::printf("registration_seconds            %.2f   (%d agents, one after another per agent thread)\n", register_s, a.nodes);
  std::printf("server_rss_mib                  %.0f empty, %.0f with the nodes, %.0f with the jobs queued\n", rss_empty, rss_nodes, rss_queued);
  std::printf("server_kib_per_node             %.1f   (RSS with the nodes heartbeating and watching, less empty, per node)\n",
              (rss_nodes - rss_empty) * 1024.0 / a.nodes);
  std::printf("server_kib_per_job              %.1f   (RSS with the jobs queued, less with the nodes, per job)\n",
              (rss_queued - rss_nodes) * 1024.0 / a.jobs);
  std::printf("server_threads                  %.0f with the nodes, %.0f with the jobs queued, %d at most\n", threads_nodes,
              threads_queued, max_threads.load());
  std::printf("loadgen_cpu_seconds             %.1f   (drain %.1f; this process: clients, emulated agents, watches, on the server's cores)\n",
              own_total, own_drain);
  if (a.watch)
    std::printf("watch_emulation                 %.1f CPU s, %d answers, %d errors   (%d epoll threads)\n",
                static_cast<double>(agents.watch_cpu_ns.load()) / 1e9, agents.watch_answers.load(), agents.watch_errors.load(), a.watch_threads);
  std::printf("events_truncated_reads          %d\n", watcher.truncated.load());
  std::printf("counts: accepted %d, refused %d, started %d, finished (agents) %d, finish events %d, Succeeded %d, Failed %d\n",
              ledger.accepted.load(), ledger.refused.load(), ledger.starts.load(), [&] {
                int n = 0;
                for (int i = 0; i < total; ++i) n += ledger.finished[i] != 0;
                return n;
              }(), ledger.finishes.load(), succeeded, failed);
  if (a.check) {
    int finished = 0;
    for (int i = 0; i < total; ++i) finished += ledger.finished[i] != 0;
    const int n = ledger.accepted;
    if (ledger.refused || ledger.starts != n || finished != n || succeeded != n || failed != 0) {
      std::printf("CHECK FAILED: every submitted job must be accepted, started, finished and Succeeded\n");
      return 1;
    }
    std::printf("check passed\n");
  }
  return 0;
}
