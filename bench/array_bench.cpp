// Job arrays at scale (issue 31 item 2; core/model/array.h, docs/jobs.md "Arrays"): a real server on a fresh SQLite
// database in a temporary directory, 8 static nodes, and one array of N tasks (parallel 10) submitted as one
// POST /v1/jobs. Printed, as medians over --reps fresh servers: the submission's time (request to durable 201,
// every task journaled in one batch, the first scheduler pass included), the listing's time as `allot jobs` asks
// for it (GET /v1/jobs?arrays=summary: one item; the first read after the submission makes the read view, a copy
// of the state, so it is timed twice) and as `allot jobs --tasks` does (every page of
// GET /v1/jobs?arrays=tasks, 5,000 a page), `describe` of the array (GET /v1/jobs/NAME), the dashboard's page of
// the array's tasks (GET /v1/jobs?array=NAME&limit=100: the first 100, and with a state no task is in, which walks
// every task to find none), and a restart's start-up time (replaying N submit records).
//
//   array_bench [--tasks N=100000] [--reps N=3]
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/server.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "array_bench: %s\n", what.c_str());
  std::exit(1);
}

struct Server {
  std::filesystem::path dir;
  std::unique_ptr<allot::server::Server> server;
  std::string token;

  explicit Server(std::filesystem::path d) : dir(std::move(d)) { start(); }
  void start() {
    allot::server::ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.data_dir = dir.string();
    auto s = allot::server::Server::open(o);
    if (!s || !(*s)->start().ok()) die("cannot start the server");
    server = std::move(*s);
    std::ifstream in(dir / "admin-token");
    std::getline(in, token);
  }
  void stop() {
    server->stop();
    server.reset();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", server->port());
    c.set_keep_alive(true);
    c.set_read_timeout(600, 0);
    c.set_bearer_token_auth(token);
    return c;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int tasks = 100000, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--tasks")) tasks = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else die(std::string("unknown flag ") + argv[i] + "; flags: --tasks N --reps N");
  }
  spdlog::set_level(spdlog::level::warn);
  std::vector<double> submit, summary, summary_again, all_tasks, describe, task_page, task_page_none, restart;
  for (int rep = 0; rep < reps; ++rep) {
    const auto dir = std::filesystem::temp_directory_path() / ("allot-array-bench-" + std::to_string(::getpid()) + "-" + std::to_string(rep));
    std::filesystem::remove_all(dir);
    Server s(dir);
    auto c = s.client();
    auto setup = [&](const char* path, const std::string& body) {
      auto r = c.Post(path, body, "application/json");
      if (!r || r->status >= 300) die(std::string("setup ") + path + ": " + (r ? r->body : "no answer"));
    };
    setup("/v1/apply", R"({"teams": [{"name": "a", "allocation": [{"instance_type": "ml.g5.12xlarge", "instances": 8}]}]})");
    setup("/v1/nodes", R"([{"name": "n[1-8]", "instance_type": "ml.g5.12xlarge"}])");
    const json spec = {{"name", "sweep"}, {"team", "a"}, {"per_replica", {{"accelerators", 1}}}, {"command", {"run"}},
                       {"array", {{"count", tasks}, {"parallel", 10}}}};
    const std::string body = spec.dump();

    auto t = Clock::now();
    auto r = c.Post("/v1/jobs", body, "application/json");
    submit.push_back(ms_since(t));
    if (!r || r->status != 201) die("submission: " + (r ? r->body.substr(0, 400) : std::string("no answer")));

    t = Clock::now();
    auto l = c.Get("/v1/jobs?arrays=summary");
    summary.push_back(ms_since(t));
    if (!l || l->status != 200) die("listing");
    const json items = json::parse(l->body)["items"];
    if (items.size() != 1 || items[0]["task_count"] != tasks) die("summary listing: " + l->body.substr(0, 400));

    // Again, once the read view the first listing had made is current (no change since): the listing alone.
    t = Clock::now();
    auto l2 = c.Get("/v1/jobs?arrays=summary");
    summary_again.push_back(ms_since(t));
    if (!l2 || l2->status != 200) die("listing again");

    t = Clock::now();
    size_t listed = 0;
    std::string token;
    do {
      auto p = c.Get(("/v1/jobs?arrays=tasks&limit=5000" + (token.empty() ? "" : "&continue=" + token)).c_str());
      if (!p || p->status != 200) die("task listing");
      const json page = json::parse(p->body);
      listed += page["items"].size();
      token = page.value("continue", "");
    } while (!token.empty());
    all_tasks.push_back(ms_since(t));
    if (listed != static_cast<size_t>(tasks)) die("listed " + std::to_string(listed) + " tasks");

    t = Clock::now();
    auto d = c.Get("/v1/jobs/sweep");
    describe.push_back(ms_since(t));
    if (!d || d->status != 200) die("describe");

    // The dashboard's Jobs page on the array's tasks: one page of 100, and a filter that matches no task.
    t = Clock::now();
    auto tp = c.Get("/v1/jobs?array=sweep&limit=100");
    task_page.push_back(ms_since(t));
    if (!tp || tp->status != 200 || json::parse(tp->body)["items"].size() != 100) die("the array's first page of tasks");
    t = Clock::now();
    auto tn = c.Get("/v1/jobs?array=sweep&state=Succeeded&limit=100");
    task_page_none.push_back(ms_since(t));
    if (!tn || tn->status != 200 || !json::parse(tn->body)["items"].empty()) die("the array's tasks in a state none is in");

    s.stop();
    t = Clock::now();
    s.start();
    restart.push_back(ms_since(t));
    auto again = s.client().Get("/v1/jobs/sweep");
    if (!again || again->status != 200 || json::parse(again->body)["task_count"] != tasks) die("after the restart");
    std::printf("rep %d: submit %.0f ms, list summary %.1f ms (again %.1f ms), list %d tasks %.0f ms, describe %.1f ms, "
                "a page of its tasks %.1f ms (none matching %.1f ms), restart %.0f ms\n",
                rep, submit.back(), summary.back(), summary_again.back(), tasks, all_tasks.back(), describe.back(), task_page.back(),
                task_page_none.back(), restart.back());
    s.stop();
    std::filesystem::remove_all(dir);
  }
  std::printf("median of %d: an array of %d tasks: submit %.0f ms; allot jobs (summary) %.1f ms, again %.1f ms; allot jobs --tasks (%d pages) "
              "%.0f ms; describe %.1f ms; the dashboard's page of its tasks %.1f ms, none matching %.1f ms; restart %.0f ms\n",
              reps, tasks, median(submit), median(summary), median(summary_again), (tasks + 4999) / 5000, median(all_tasks),
              median(describe), median(task_page), median(task_page_none), median(restart));
}
