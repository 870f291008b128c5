// Server benchmark (DESIGN.md, "Performance targets"): durable job submissions per second through the HTTP
// API on loopback with concurrent clients (group commit into SQLite with synchronous=FULL), and admission
// latency, from sending a submission to seeing the job Running, on an idle-enough cluster. Prints medians
// over repetitions; every repetition starts a fresh server on a fresh database in a temporary directory.
//
//   server_bench [--clients N] [--jobs N] [--reps N] [--latency-jobs N]
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "server/server.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  int clients = 32;
  int jobs = 20000;       // per throughput repetition
  int reps = 3;
  int latency_jobs = 2000;
};

struct Bench {
  std::filesystem::path dir;
  std::unique_ptr<allot::server::Server> server;
  std::string token;

  explicit Bench(const std::string& tag) {
    dir = std::filesystem::temp_directory_path() / ("allot-server-bench-" + std::to_string(::getpid()) + "-" + tag);
    std::filesystem::remove_all(dir);
    allot::server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.data_dir = dir.string();
    auto s = allot::server::Server::open(o);
    if (!s || !(*s)->start().ok()) {
      std::fprintf(stderr, "cannot start the server\n");
      std::exit(1);
    }
    server = std::move(*s);
    // The bootstrap admin's token (every endpoint needs one).
    std::ifstream in(dir / "admin-token");
    std::getline(in, token);
  }
  ~Bench() {
    server->stop();
    server.reset();
    std::filesystem::remove_all(dir);
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_keep_alive(true);
    c.set_tcp_nodelay(true);
    c.set_read_timeout(60, 0);
    c.set_bearer_token_auth(token);
    return c;
  }
  void post(const std::string& path, const std::string& body) const {
    auto c = client();
    auto r = c.Post(path.c_str(), body, "application/json");
    if (!r || r->status >= 300) {
      std::fprintf(stderr, "setup %s failed: %s\n", path.c_str(), r ? r->body.c_str() : "no answer");
      std::exit(1);
    }
  }
};

std::string job(const std::string& name, const std::string& team) {
  return json{{"name", name}, {"team", team}, {"replicas", 1}, {"per_replica", {{"accelerators", 1}}}, {"command", "true"}}.dump();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// Submissions per second, all acknowledged durable, from `clients` threads with keep-alive connections. The
// jobs stay pending (the team has quota but the cluster has few nodes), so the queue grows as it would under
// a burst.
struct Throughput {
  double per_second = 0;
  double per_batch = 0;  // commands per transaction
  uint64_t passes = 0;   // scheduler passes
  double avg_pass_ms = 0, max_pass_ms = 0;
};

Throughput throughput(const Args& a, int rep) {
  Bench b("tput" + std::to_string(rep));
  b.post("/v1/apply", R"({"teams": [{"name": "t", "allocation": [{"instance_type": "ml.p5.48xlarge", "instances": 100}]}]})");
  b.post("/v1/nodes", R"([{"name": "p[1-4]", "instance_type": "ml.p5.48xlarge"}])");
  const auto before = b.server->stats();
  std::atomic<int> next{0}, failed{0};
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c)
    threads.emplace_back([&] {
      auto cl = b.client();
      for (int i; (i = next++) < a.jobs;) {
        auto r = cl.Post("/v1/jobs", job("j" + std::to_string(i), "t"), "application/json");
        if (!r || r->status != 201) ++failed;
      }
    });
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto after = b.server->stats();
  if (failed) std::fprintf(stderr, "  %d submissions failed\n", failed.load());
  Throughput t;
  t.per_second = (a.jobs - failed) / secs;
  t.per_batch = static_cast<double>(after.commands - before.commands) / static_cast<double>(std::max<uint64_t>(1, after.batches - before.batches));
  t.passes = after.passes - before.passes;
  t.avg_pass_ms = 1000 * (after.pass_seconds - before.pass_seconds) / static_cast<double>(std::max<uint64_t>(1, t.passes));
  t.max_pass_ms = 1000 * after.max_pass_seconds;
  return t;
}

// Milliseconds from sending a submission to seeing it Running (in the submission's answer, which comes after
// the scheduler ran on its batch, or by polling), one submission at a time on a cluster with room; each job
// is cancelled afterwards so the cluster stays idle-enough.
std::vector<double> admission_latency(const Args& a, int rep) {
  Bench b("lat" + std::to_string(rep));
  b.post("/v1/apply", R"({"teams": [{"name": "t", "allocation": [{"instance_type": "ml.p5.48xlarge", "instances": 64}]}]})");
  b.post("/v1/nodes", R"([{"name": "p[1-64]", "instance_type": "ml.p5.48xlarge",
                           "labels": {"network-node-layer-3": "nn3"}}])");
  auto cl = b.client();
  std::vector<double> ms;
  for (int i = 0; i < a.latency_jobs; ++i) {
    const std::string name = "l" + std::to_string(i);
    auto t0 = Clock::now();
    auto r = cl.Post("/v1/jobs", job(name, "t"), "application/json");
    if (!r || r->status != 201) continue;
    std::string state = json::parse(r->body)["state"];
    while (state != "Running") {
      auto g = cl.Get(("/v1/jobs/" + name).c_str());
      if (!g) break;
      state = json::parse(g->body)["state"];
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    cl.Post(("/v1/jobs/" + name + "/cancel").c_str(), "", "application/json");
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--clients")) a.clients = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jobs")) a.jobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) a.reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--latency-jobs")) a.latency_jobs = std::atoi(argv[i + 1]);
  }
  spdlog::set_level(spdlog::level::warn);
  std::vector<double> rates, batches, p50, p99;
  for (int rep = 0; rep < a.reps; ++rep) {
    Throughput t = throughput(a, rep);
    rates.push_back(t.per_second);
    batches.push_back(t.per_batch);
    auto lat = admission_latency(a, rep);
    p50.push_back(percentile(lat, 0.50));
    p99.push_back(percentile(lat, 0.99));
    std::printf("rep %d: %.0f durable submissions/s (%.1f commands per transaction, %llu scheduler passes of %.2f ms on "
                "average, %.2f ms at most); admission p50 %.2f ms, p99 %.2f ms\n",
                rep, t.per_second, t.per_batch, static_cast<unsigned long long>(t.passes), t.avg_pass_ms, t.max_pass_ms,
                p50.back(), p99.back());
  }
  std::printf("server_bench: clients=%d jobs=%d reps=%d latency_jobs=%d\n", a.clients, a.jobs, a.reps, a.latency_jobs);
  std::printf("durable_submissions_per_second %.0f   (target >= 2000)\n", median(rates));
  std::printf("commands_per_transaction %.1f\n", median(batches));
  std::printf("admission_latency_p50_ms %.2f\n", median(p50));
  std::printf("admission_latency_p99_ms %.2f   (target <= 50)\n", median(p99));
  return 0;
}
