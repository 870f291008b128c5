// Server benchmark (DESIGN.md, "Performance targets"): durable job submissions per second through the HTTP
// API on loopback with concurrent clients (group commit into SQLite with synchronous=FULL), and admission
// latency, from sending a submission to seeing the job Running, on an idle-enough cluster. Prints medians
// over repetitions; every repetition starts a fresh server on a fresh database in a temporary directory.
//
//   server_bench [--clients N] [--jobs N] [--reps N] [--latency-jobs N]
//
// With --listers-mode: submissions while other clients page the job list (issue 25, item 7). One server is
// loaded with --preload pending jobs; then, for each count of listers in --listers (default 0,1,4), --submitters
// clients submit one job at a time for --seconds while that many clients page GET /v1/jobs?limit=--page (from
// the start again at the end of the list). Prints, per phase, the submissions' latency p50/p99, submissions per
// second, pages per second and their latency, and the load average; the phases repeat --reps times and the
// medians end the output.
//
//   server_bench --listers-mode [--preload N] [--listers 0,1,4] [--submitters N] [--seconds S] [--page N] [--reps N]
//                [--listing-nice N]   (ServerOptions::listing_nice: 0 renders listings at the server's priority)
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

#include "server/http/read_seats.h"
#include "server/server.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Args {
  int clients = 32;
  int jobs = 20000;       // per throughput repetition
  int reps = 3;
  int latency_jobs = 2000;
  bool listers_mode = false;
  int preload = 50000;
  std::vector<int> listers = {0, 1, 4};
  int submitters = 4;
  double seconds = 8;
  int page = 5000;
  int listing_nice = allot::server::ReadSeats::kDefaultNice;
};

struct Bench {
  std::filesystem::path dir;
  std::unique_ptr<allot::server::Server> server;
  std::string token;

  explicit Bench(const std::string& tag, int listing_nice = allot::server::ReadSeats::kDefaultNice) {
    dir = std::filesystem::temp_directory_path() / ("allot-server-bench-" + std::to_string(::getpid()) + "-" + tag);
    std::filesystem::remove_all(dir);
    allot::server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.data_dir = dir.string();
    o.listing_nice = listing_nice;
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

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "?" : one;
}

struct ListersPhase {
  double submit_p50 = 0, submit_p99 = 0, submit_max = 0, submits_per_s = 0;
  double pages_per_s = 0, page_p50 = 0, page_p99 = 0;
  int refused_pages = 0;  // 503: the bound on concurrent listings
  int failed_submits = 0;
  uint64_t views = 0;        // views the writer published during the phase
  double copy_ms = 0;        // its time spent copying the state for them
  uint64_t chunks_copied = 0, chunks_shared = 0;  // the job table's chunks those views copied, and shared
};

ListersPhase listers_phase(const Bench& b, const Args& a, int listers, std::atomic<int>& next_name) {
  std::atomic<bool> stop{false};
  const auto views_before = b.server->view_stats();
  std::vector<std::vector<double>> submit_ms(a.submitters), page_ms(listers);
  std::atomic<int> refused{0}, failed{0};
  std::vector<std::thread> threads;
  for (int l = 0; l < listers; ++l)
    threads.emplace_back([&, l] {
      auto c = b.client();
      std::string cont;
      const std::string base = "/v1/jobs?limit=" + std::to_string(a.page);
      while (!stop) {
        const auto t0 = Clock::now();
        auto r = c.Get((base + (cont.empty() ? "" : "&continue=" + cont)).c_str());
        if (!r) continue;
        if (r->status == 503) {
          ++refused;
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          continue;
        }
        page_ms[l].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        // The token is the answer's last member: found without parsing megabytes of JSON, which would cost this
        // process (and so the server in it) CPU that a lister on another machine does not.
        cont.clear();
        const std::string key = R"(,"continue":")";
        if (const size_t at = r->body.rfind(key); at != std::string::npos && r->body.size() > at + key.size() + 2)
          cont = r->body.substr(at + key.size(), r->body.size() - 2 - (at + key.size()));
      }
    });
  // The listers get going before the submissions are timed.
  if (listers) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = Clock::now();
  const auto until = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(a.seconds));
  std::vector<std::thread> subs;
  for (int s = 0; s < a.submitters; ++s)
    subs.emplace_back([&, s] {
      auto c = b.client();
      while (Clock::now() < until) {
        const auto t = Clock::now();
        auto r = c.Post("/v1/jobs", job("s" + std::to_string(next_name++), "t"), "application/json");
        if (!r || r->status != 201) {
          ++failed;
          continue;
        }
        submit_ms[s].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
      }
    });
  for (auto& t : subs) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();
  std::vector<double> all_submits, all_pages;
  for (auto& v : submit_ms) all_submits.insert(all_submits.end(), v.begin(), v.end());
  for (auto& v : page_ms) all_pages.insert(all_pages.end(), v.begin(), v.end());
  ListersPhase p;
  p.submit_p50 = percentile(all_submits, 0.5);
  p.submit_p99 = percentile(all_submits, 0.99);
  p.submit_max = percentile(all_submits, 1.0);
  p.submits_per_s = static_cast<double>(all_submits.size()) / secs;
  p.pages_per_s = static_cast<double>(all_pages.size()) / secs;
  p.page_p50 = percentile(all_pages, 0.5);
  p.page_p99 = percentile(all_pages, 0.99);
  p.refused_pages = refused;
  p.failed_submits = failed;
  const auto views_after = b.server->view_stats();
  p.views = views_after.views_published - views_before.views_published;
  p.copy_ms = 1000 * (views_after.copy_seconds - views_before.copy_seconds);
  p.chunks_copied = views_after.chunks_copied - views_before.chunks_copied;
  p.chunks_shared = views_after.chunks_shared - views_before.chunks_shared;
  return p;
}

int listers_main(const Args& a) {
  Bench b("listers", a.listing_nice);
  b.post("/v1/apply", R"({"teams": [{"name": "t", "allocation": [{"instance_type": "ml.p5.48xlarge", "instances": 100}]}]})");
  b.post("/v1/nodes", R"([{"name": "p[1-4]", "instance_type": "ml.p5.48xlarge"}])");
  std::printf("server_bench --listers-mode: preloading %d jobs (load average %s)\n", a.preload, load_average().c_str());
  {
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int c = 0; c < 16; ++c)
      threads.emplace_back([&] {
        auto cl = b.client();
        for (int i; (i = next++) < a.preload;) cl.Post("/v1/jobs", job("p" + std::to_string(i), "t"), "application/json");
      });
    for (auto& t : threads) t.join();
  }
  std::atomic<int> next_name{0};
  std::vector<std::vector<ListersPhase>> phases(a.listers.size());
  for (int rep = 0; rep < a.reps; ++rep)
    for (size_t i = 0; i < a.listers.size(); ++i) {
      const std::string load = load_average();
      ListersPhase p = listers_phase(b, a, a.listers[i], next_name);
      phases[i].push_back(p);
      std::printf("rep %d, %d listers (load %s): submit p50 %.2f ms, p99 %.2f ms, max %.1f ms, %.0f submissions/s%s; "
                  "%.1f pages/s, page p50 %.1f ms, p99 %.1f ms, %d refused (503); %llu views copied in %.0f ms "
                  "(%.1f ms each; job chunks %llu copied, %llu shared)\n",
                  rep, a.listers[i], load.c_str(), p.submit_p50, p.submit_p99, p.submit_max, p.submits_per_s,
                  p.failed_submits ? (", " + std::to_string(p.failed_submits) + " failed").c_str() : "", p.pages_per_s,
                  p.page_p50, p.page_p99, p.refused_pages, static_cast<unsigned long long>(p.views), p.copy_ms,
                  p.views ? p.copy_ms / static_cast<double>(p.views) : 0.0, static_cast<unsigned long long>(p.chunks_copied),
                  static_cast<unsigned long long>(p.chunks_shared));
      std::fflush(stdout);
    }
  const auto stats = b.server->stats();
  std::printf("server_bench --listers-mode: preload=%d submitters=%d seconds=%.1f page=%d reps=%d (medians)\n", a.preload,
              a.submitters, a.seconds, a.page, a.reps);
  for (size_t i = 0; i < a.listers.size(); ++i) {
    auto med = [&](double ListersPhase::*f) {
      std::vector<double> v;
      for (const auto& p : phases[i]) v.push_back(p.*f);
      return median(v);
    };
    std::printf("listers %d: submit_p50_ms %.2f  submit_p99_ms %.2f  submissions_per_s %.0f  pages_per_s %.1f  page_p50_ms %.1f  "
                "page_p99_ms %.1f\n",
                a.listers[i], med(&ListersPhase::submit_p50), med(&ListersPhase::submit_p99), med(&ListersPhase::submits_per_s),
                med(&ListersPhase::pages_per_s), med(&ListersPhase::page_p50), med(&ListersPhase::page_p99));
  }
  (void)stats;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--listers-mode")) a.listers_mode = true;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--listers-mode")) continue;
    if (!std::strcmp(argv[i], "--clients")) a.clients = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jobs")) a.jobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) a.reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--latency-jobs")) a.latency_jobs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--preload")) a.preload = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--submitters")) a.submitters = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds")) a.seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--page")) a.page = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--listing-nice")) a.listing_nice = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--listers")) {
      a.listers.clear();
      for (const char* p = argv[i + 1]; *p;) {
        a.listers.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    }
  }
  spdlog::set_level(spdlog::level::warn);
  if (a.listers_mode) return listers_main(a);
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
