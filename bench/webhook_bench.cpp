// Webhook benchmark (issue 31 item 6): does a webhook cost the writer anything? Clients submit and cancel jobs
// (each cancellation is a job.cancelled event) through the HTTP API while a cluster-wide webhook asks for
// job.cancelled and its receiver on loopback is (a) absent (no webhook), (b) fast (answers at once), or (c) slow
// (holds each delivery --slow-ms before answering). Prints, per repetition and as medians: submit+cancel pairs per
// second, and for (b) and (c) the deliveries made, dropped and the seconds from the last cancellation until the
// queue drained (or --drain-s passed). Every repetition starts a fresh server on a fresh SQLite database.
//
//   webhook_bench [--clients N] [--jobs N] [--reps N] [--slow-ms N] [--queue N] [--drain-s S]
#include <httplib.h>
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
  int clients = 16;
  int jobs = 4000;
  int reps = 3;
  int slow_ms = 200;
  size_t queue = 10000;
  double drain_s = 30;
};

enum class Mode { kNone, kFast, kSlow };
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kNone: return "no webhook";
    case Mode::kFast: return "fast receiver";
    case Mode::kSlow: return "slow receiver";
  }
  return "?";
}

struct Receiver {
  httplib::Server http;
  std::thread thread;
  std::atomic<int> hits{0};
  int port = 0;
  explicit Receiver(int hold_ms) {
    http.Post("/hook", [this, hold_ms](const httplib::Request&, httplib::Response& res) {
      if (hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
      ++hits;
      res.status = 204;
    });
    port = http.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { http.listen_after_bind(); });
  }
  ~Receiver() {
    http.stop();
    thread.join();
  }
};

struct Result {
  double pairs_per_s = 0;
  int delivered = 0;
  double dropped = 0;
  double drain_s = 0;
};

double metric(httplib::Client& c, const std::string& series) {
  auto r = c.Get("/metrics");
  if (!r) return -1;
  const size_t at = r->body.find("\n" + series + " ");
  return at == std::string::npos ? -1 : std::atof(r->body.c_str() + at + series.size() + 2);
}

Result run(const Args& a, Mode mode, int rep) {
  const auto dir = std::filesystem::temp_directory_path() / ("allot-webhook-bench-" + std::to_string(::getpid()) + "-" + std::to_string(rep));
  std::filesystem::remove_all(dir);
  allot::server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.data_dir = dir.string();
  o.webhooks.queue = a.queue;
  auto s = allot::server::Server::open(o);
  if (!s || !(*s)->start().ok()) {
    std::fprintf(stderr, "cannot start the server\n");
    std::exit(1);
  }
  auto server = std::move(*s);
  std::string token;
  std::ifstream(dir / "admin-token") >> token;
  auto client = [&] {
    httplib::Client c("127.0.0.1", server->port());
    c.set_keep_alive(true);
    c.set_read_timeout(60, 0);
    c.set_bearer_token_auth(token);
    return c;
  };
  auto admin = client();
  admin.Post("/v1/apply", R"({"teams": [{"name": "t", "allocation": [{"instance_type": "ml.p5.48xlarge", "instances": 100}]}]})",
             "application/json");
  std::unique_ptr<Receiver> rx;
  if (mode != Mode::kNone) {
    rx = std::make_unique<Receiver>(mode == Mode::kSlow ? a.slow_ms : 0);
    auto r = admin.Post("/v1/webhooks",
                        json{{"url", "http://127.0.0.1:" + std::to_string(rx->port) + "/hook"}, {"events", {"job.cancelled"}}}.dump(),
                        "application/json");
    if (!r || r->status != 201) {
      std::fprintf(stderr, "cannot make the webhook: %s\n", r ? r->body.c_str() : "no answer");
      std::exit(1);
    }
  }
  std::atomic<int> next{0}, failed{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < a.clients; ++c)
    threads.emplace_back([&] {
      auto cl = client();
      for (int i; (i = next++) < a.jobs;) {
        const std::string name = "j" + std::to_string(i);
        auto r = cl.Post("/v1/jobs", json{{"name", name}, {"team", "t"}, {"per_replica", {{"accelerators", 1}}}, {"command", "true"}}.dump(),
                         "application/json");
        auto k = cl.Post(("/v1/jobs/" + name + "/cancel").c_str(), "", "application/json");
        if (!r || r->status != 201 || !k || k->status != 200) ++failed;
      }
    });
  for (auto& t : threads) t.join();
  const auto t1 = Clock::now();
  Result out;
  out.pairs_per_s = (a.jobs - failed) / std::chrono::duration<double>(t1 - t0).count();
  if (failed) std::fprintf(stderr, "  %d submit+cancel pairs failed\n", failed.load());
  if (rx) {
    // Drained: every cancellation delivered or dropped, or the time is up.
    while (std::chrono::duration<double>(Clock::now() - t1).count() < a.drain_s) {
      const double queued = metric(admin, "allot_webhook_queue_length");
      if (queued == 0 && rx->hits + metric(admin, "allot_webhook_deliveries_total{result=\"dropped\"}") >= a.jobs - failed) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    out.drain_s = std::chrono::duration<double>(Clock::now() - t1).count();
    out.delivered = rx->hits;
    out.dropped = metric(admin, "allot_webhook_deliveries_total{result=\"dropped\"}");
  }
  server->stop();
  server.reset();
  rx.reset();
  std::filesystem::remove_all(dir);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--clients") a.clients = std::atoi(v);
    else if (k == "--jobs") a.jobs = std::atoi(v);
    else if (k == "--reps") a.reps = std::atoi(v);
    else if (k == "--slow-ms") a.slow_ms = std::atoi(v);
    else if (k == "--queue") a.queue = static_cast<size_t>(std::atol(v));
    else if (k == "--drain-s") a.drain_s = std::atof(v);
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  std::printf("webhook_bench: %d clients, %d submit+cancel pairs per repetition, slow receiver %d ms, queue %zu\n",
              a.clients, a.jobs, a.slow_ms, a.queue);
  for (Mode m : {Mode::kNone, Mode::kFast, Mode::kSlow}) {
    std::vector<double> rate, delivered, dropped, drain;
    for (int r = 0; r < a.reps; ++r) {
      // Alternate the order of modes' repetitions only across runs: each repetition is a fresh server.
      Result res = run(a, m, r);
      std::printf("  %-14s rep %d: %.0f pairs/s", mode_name(m), r, res.pairs_per_s);
      if (m != Mode::kNone) std::printf(", delivered %d, dropped %.0f, drained in %.2f s", res.delivered, res.dropped, res.drain_s);
      std::printf("\n");
      rate.push_back(res.pairs_per_s), delivered.push_back(res.delivered), dropped.push_back(res.dropped), drain.push_back(res.drain_s);
    }
    std::printf("%-14s median: %.0f pairs/s", mode_name(m), median(rate));
    if (m != Mode::kNone) std::printf(", delivered %.0f, dropped %.0f, drained in %.2f s", median(delivered), median(dropped), median(drain));
    std::printf("\n");
  }
  return 0;
}
