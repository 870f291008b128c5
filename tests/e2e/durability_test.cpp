// Durability end to end: clients submit jobs concurrently to a real `allot server`, the server is killed
// with SIGKILL in the middle of the stream, restarted on the same data directory, and every submission that
// was acknowledged (201) must be there exactly once; unacknowledged ones may or may not be. Three rounds, on
// loopback, a few seconds in all.
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "durability_harness.h"

namespace {

constexpr int kClients = 8;
constexpr int kRounds = 3;

nlohmann::json job(const std::string& name) {
  return {{"name", name}, {"team", "t"}, {"replicas", 1}, {"per_replica", {{"accelerators", 1}}}, {"command", "true"}};
}

// Submits until the server stops answering; returns the names acknowledged with 201.
void submit_stream(int port, const std::string& token, int round, int id, std::mutex& mu, std::set<std::string>& acked, std::atomic<int>& count) {
  auto c = e2e::client(port, token);
  for (int i = 0;; ++i) {
    const std::string name = "r" + std::to_string(round) + "-c" + std::to_string(id) + "-" + std::to_string(i);
    auto r = e2e::wrap(c.Post("/v1/jobs", job(name).dump(), "application/json"));
    if (r.status == 0) return;  // the server is gone
    if (r.status == 201) {
      std::lock_guard lock(mu);
      acked.insert(name);
      ++count;
    } else {
      E2E_CHECK(false, "submission " << name << " answered " << r.status << ": " << r.body);
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: durability_test PATH/TO/allot\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  e2e::TempDir dir;
  std::set<std::string> acked;
  std::mutex mu;
  for (int round = 0; round < kRounds; ++round) {
    e2e::ServerProcess server(argv[1], dir.path());
    if (!server.start()) return 1;
    auto c = e2e::client(server.port(), server.admin_token());
    if (round == 0) {
      auto r = e2e::wrap(c.Post("/v1/apply",
                                R"({"teams": [{"name": "t", "allocation": [{"instance_type": "ml.g5.8xlarge", "instances": 4}]}]})",
                                "application/json"));
      E2E_CHECK(r.status == 200, "apply: " << r.status << " " << r.body);
      // A few nodes, so that some jobs are admitted and decisions are journaled too.
      r = e2e::wrap(c.Post("/v1/nodes", R"([{"name": "n[1-4]", "instance_type": "ml.g5.8xlarge"}])", "application/json"));
      E2E_CHECK(r.status == 201, "nodes: " << r.status << " " << r.body);
    }
    std::atomic<int> count{0};
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i)
      clients.emplace_back(submit_stream, server.port(), server.admin_token(), round, i, std::ref(mu), std::ref(acked), std::ref(count));
    // Kill it mid-stream: after a few hundred acknowledgements, or after 5 s whatever happened.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (count < 300 + 200 * round && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    server.kill9();
    for (auto& t : clients) t.join();
    std::cerr << "round " << round << ": " << count << " acknowledged before kill -9\n";
    E2E_CHECK(count > 0, "no submission was acknowledged in round " << round);
  }

  e2e::ServerProcess server(argv[1], dir.path());
  if (!server.start()) return 1;
  auto c = e2e::client(server.port(), server.admin_token());
  auto r = e2e::all_jobs(c);
  E2E_CHECK(r.status == 200 && r.json.is_array(), "GET /v1/jobs: " << r.status);
  std::map<std::string, int> seen;
  int admitted = 0;
  for (const auto& j : r.json) {
    ++seen[j["name"].get<std::string>()];
    admitted += j["state"] == "Running";
  }
  int missing = 0, duplicated = 0;
  for (const auto& name : acked)
    if (!seen.count(name)) ++missing;
  for (const auto& [name, n] : seen)
    if (n != 1) ++duplicated;
  std::cerr << acked.size() << " acknowledged, " << seen.size() << " present after restart (" << admitted << " running), "
            << missing << " missing, " << duplicated << " duplicated\n";
  E2E_CHECK(missing == 0, missing << " acknowledged submissions were lost");
  E2E_CHECK(duplicated == 0, duplicated << " jobs appear more than once");
  E2E_CHECK(admitted == 4, "the 4 single-GPU nodes should run 4 jobs, not " << admitted);
  E2E_CHECK(server.terminate() == 0, "the server did not stop cleanly on SIGTERM");
  if (e2e::failures) std::cerr << dir.path() << "/server.log has the server's log\n";
  std::cerr << (e2e::failures ? "FAILED" : "PASSED") << "\n";
  return e2e::failures ? 1 : 0;
}
