// The agent's watch after a refusal (agent.cpp, watch_loop): a real `allot agent` against a small fake server
// (cpp-httplib) that answers registration and heartbeats, and refuses the first two watches with 429 and
// `Retry-After: 1` before it lets the third wait. The agent must
//   - ask again after each refusal, and not before the Retry-After has passed: the fake server stamps when it
//     answered each refusal and when the next watch arrived, on the machine's monotonic clock, which the agent's
//     pause also follows, so "at least 1 s later" holds however loaded the machine is;
//   - go on heartbeating meanwhile (the fake server counts the heartbeats between a refusal and the next watch);
//   - say once, not at every refusal, that the server has no room for its watch.
// No assertion bounds how long anything may take beyond generous deadlines for what must happen at all.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "durability_harness.h"

namespace {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kNode = "retry-1";
constexpr const char* kTag = "00000000000000aa";
constexpr int kRefusals = 2;

// What the fake server saw, under `mu`.
struct Seen {
  std::mutex mu;
  std::condition_variable changed;
  int heartbeats = 0;
  // Per watch request, in order: when it arrived, the heartbeats counted then, and when its answer was made
  // (for a refusal: before the answer is written, so before the agent can have read it).
  struct Watch {
    SteadyClock::time_point arrived, answered;
    int heartbeats_before = 0;
    std::string path;
  };
  std::vector<Watch> watches;
  bool stopping = false;
};

// Runs `allot agent` against `port` with its stderr in `log`; returns its pid.
pid_t start_agent(const std::string& allot, int port, const std::string& dir, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    int err = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    std::vector<std::string> args = {allot, "agent", "--server", "http://127.0.0.1:" + std::to_string(port), "--name", kNode,
                                     "--instance-type", "ml.g5.8xlarge", "--work-dir", dir + "/agent", "--token",
                                     "fake-join-token", "--heartbeat-interval", "0.2", "--stop-grace", "1", "--no-cgroups"};
    // As root the agent refuses root replicas without --allow-root; this agent runs none, but must start.
    if (getuid() == 0) args.insert(args.end(), {"--run-as", "nobody"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(allot.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

// SIGTERM, then SIGKILL if the agent has not exited within 20 s.
void stop_agent(pid_t pid) {
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    usleep(100'000);
  }
  ::kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " PATH/TO/allot\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  e2e::TempDir dir;
  Seen seen;
  httplib::Server fake;
  const std::string base = std::string("/v1/agents/") + kNode;
  fake.Post("/v1/agents/register", [](const httplib::Request&, httplib::Response& res) {
    // A long failure timeout: the agent never fences itself during the test.
    res.set_content(json{{"name", kNode}, {"heartbeat_timeout_ms", 600000}}.dump(), "application/json");
  });
  fake.Post(base + "/heartbeat", [&seen](const httplib::Request&, httplib::Response& res) {
    {
      std::lock_guard lock(seen.mu);
      ++seen.heartbeats;
      seen.changed.notify_all();
    }
    res.set_content(json{{"run", json::array()}, {"stop", json::array()}, {"heartbeat_timeout_ms", 600000},
                         {"run_tag", kTag}, {"as_of", 1}}.dump(),
                    "application/json");
  });
  fake.Post(base + "/logs", [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  fake.Get(base + "/changes", [&seen](const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(seen.mu);
    seen.watches.push_back({SteadyClock::now(), {}, seen.heartbeats, req.target});
    const size_t n = seen.watches.size();
    seen.changed.notify_all();
    if (n <= kRefusals) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(json{{"error", {{"code", "TooManyWatches"}, {"message", "fake server: no room"}}}}.dump(), "application/json");
      seen.watches.back().answered = SteadyClock::now();
      return;
    }
    // Let in: a long poll on which nothing changes, held until the test ends (or the agent's own wait).
    seen.changed.wait_for(lock, std::chrono::seconds(20), [&] { return seen.stopping; });
    res.set_content(json{{"run_tag", kTag}, {"as_of", 1}, {"run", json::array()}}.dump(), "application/json");
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  if (port <= 0) {
    std::cerr << "FAIL: the fake server cannot listen on loopback\n";
    return 1;
  }
  std::thread serving([&] { fake.listen_after_bind(); });

  const std::string log = dir.path() + "/agent.log";
  const pid_t agent = start_agent(argv[1], port, dir.path(), log);
  bool third = false;
  {
    std::unique_lock lock(seen.mu);
    third = seen.changed.wait_for(lock, std::chrono::seconds(60), [&] { return seen.watches.size() > kRefusals; });
  }
  // Give the heartbeat loop one more heartbeat after the retry before stopping the agent (bounded).
  {
    std::unique_lock lock(seen.mu);
    const int now = seen.heartbeats;
    seen.changed.wait_for(lock, std::chrono::seconds(10), [&] { return seen.heartbeats > now; });
  }
  stop_agent(agent);
  {
    std::lock_guard lock(seen.mu);
    seen.stopping = true;
    seen.changed.notify_all();
  }
  fake.stop();
  serving.join();

  E2E_CHECK(third, "the agent did not ask for its watch " << kRefusals + 1 << " times within 60 s; it asked "
                                                          << seen.watches.size() << " times");
  for (size_t i = 1; i < seen.watches.size() && i <= kRefusals; ++i) {
    const auto& refused = seen.watches[i - 1];
    const auto& next = seen.watches[i];
    const auto gap = std::chrono::duration_cast<std::chrono::milliseconds>(next.arrived - refused.answered);
    E2E_CHECK(gap >= std::chrono::milliseconds(1000),
              "watch " << i + 1 << " came " << gap.count() << " ms after refusal " << i << " said Retry-After: 1");
    E2E_CHECK(next.heartbeats_before > refused.heartbeats_before,
              "no heartbeat between refusal " << i << " and the next watch: the agent should heartbeat while it waits");
    E2E_CHECK(next.path.find("known=" + std::string(kTag)) != std::string::npos,
              "the retry should ask with the tag of the last heartbeat answer: " << next.path);
  }
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  const int said = count_of(text.str(), "no room for this agent's watch");
  E2E_CHECK(said == 1, "after " << kRefusals << " refusals the agent should say once that it has no room to watch, not "
                                << said << " times; its log:\n" << text.str());
  E2E_CHECK(count_of(text.str(), "no watch route") == 0, "a refused watch is not a missing route; the log:\n" << text.str());
  if (e2e::failures) return 1;
  std::cout << "agent_watch_retry: PASS\n";
  return 0;
}
