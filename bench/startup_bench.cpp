// Start-up time of `allot server` on a 100,000-record SQLite journal, without and with snapshots
// (docs/deployment.md, "Snapshots"). The journal is written the way the server writes it: jobs submitted (each with
// its audit record), admitted by the scheduler on 256 nodes and finished, 25,000 of them; the live state at the end
// holds every one of them. Then the real server is started (Server::start: open, restore, replay, bind) five times
// in each configuration, and the median is printed:
//   - no snapshot (--no-snapshots): the whole journal is replayed;
//   - the latest snapshot 50,000 records before the end (the worst case under the default --snapshot-every);
//   - the latest snapshot at the end.
// Run: build/bench/startup_bench [records]
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>
#include <unistd.h>

#include "core/scheduler.h"
#include "server/server.h"
#include "server/state_snapshot.h"
#include "store/replay.h"
#include "store/sqlite_store.h"

namespace {

using namespace allot;
using namespace allot::store;
namespace fs = std::filesystem;

JobSpec job(int i) {
  JobSpec j;
  j.name = "job-" + std::to_string(i);
  j.team = i % 2 ? "a" : "b";
  PodSetSpec ps;
  ps.name = "workers";
  ps.replicas = 1 + i % 2;
  ps.instance_type = "ml.p5.48xlarge";
  ps.per_replica.accelerators = 4;
  j.pod_sets = {ps};
  j.command = {"/bin/sh", "-c", "python train.py --epochs 10"};
  return j;
}

// Writes the journal and, at each of `snapshot_at`, a snapshot of the state then. Returns the records written.
uint64_t write_journal(const std::string& path, uint64_t records, const std::vector<uint64_t>& snapshot_at) {
  auto store = SqliteStore::open(path);
  if (!store) throw std::runtime_error(store.error().message);
  server::ServerState st;
  std::vector<Record> batch;
  std::vector<server::Event> events;
  const Actor admin{"adm1", "admin", {}, {}};
  size_t next_snapshot = 0;
  auto flush = [&] {
    if (auto s = (*store)->append(batch); !s) throw std::runtime_error(s.error().message);
    batch.clear();
    while (next_snapshot < snapshot_at.size() && snapshot_at[next_snapshot] <= st.last_seq) {
      if (auto s = (*store)->put_snapshot(st.last_seq, server::encode_state_snapshot(st, {})); !s)
        throw std::runtime_error(s.error().message);
      ++next_snapshot;
    }
  };
  Time now = 1700000000;
  auto op = [&](Op o, Actor actor) {
    Record r{st.last_seq + 1, now, std::move(o), std::move(actor)};
    events.clear();
    if (auto s = server::apply(st, r, events); !s) throw std::runtime_error(s.error().message);
    batch.push_back(std::move(r));
  };
  op(CreateToken{TokenRecord{"adm1", std::string(64, 'a'), auth::Role::kAdmin, {}, "", 0, "bench"}}, admin);
  for (const char* name : {"a", "b"}) {
    TeamSpec t;
    t.name = name;
    AmountSpec half;
    half.instances = 128;
    t.allocation = {{"ml.p5.48xlarge", half}};
    op(UpsertTeam{t}, admin);
  }
  for (int n = 0; n < 256; ++n)
    op(AddNode{NodeSpec{"gpu-" + std::to_string(n), "ml.p5.48xlarge", "", {{"network-node-layer-3", "nn-" + std::to_string(n / 16)}}},
               "10.0.0.1", false},
       admin);
  flush();
  for (int i = 0; st.last_seq < records; ++i) {
    ++now;
    op(Submit{job(i)}, admin);
    op(Audit{"POST /v1/jobs", "job-" + std::to_string(i), 201, ""}, admin);
    for (const Decision& d : schedule(st.cluster, now).decisions) {
      Record r{st.last_seq + 1, now, decision_record(st.cluster, d), Actor{"server", "server", {}, {}}};
      events.clear();
      server::note_decision(st, r, events);
      batch.push_back(std::move(r));
    }
    // Jobs finish 100 submissions later: a few hundred run at any time, the rest are history.
    if (i >= 100) op(Finish{"job-" + std::to_string(i - 100), true, "exited 0"}, admin);
    if (batch.size() >= 64) flush();
  }
  flush();
  return st.last_seq;
}

double start_seconds(const fs::path& dir, bool use_snapshots) {
  server::ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.data_dir = dir.string();
  o.database = "sqlite:" + (dir / "allot.db").string();
  o.use_snapshots = use_snapshots;
  o.snapshot_every_records = 0;  // measure reading, not writing
  o.snapshot_interval = std::chrono::milliseconds(0);
  auto s = server::Server::open(o);
  if (!s) throw std::runtime_error(s.error().message);
  const auto t0 = std::chrono::steady_clock::now();
  if (auto st = (*s)->start(); !st) throw std::runtime_error(st.error().message);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Stopping before the listener thread is listening would leave it listening forever (cpp-httplib): wait until
  // it answers.
  httplib::Client c("127.0.0.1", (*s)->port());
  for (int i = 0; i < 500; ++i) {
    if (auto r = c.Get("/v1/health"); r && r->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  (*s)->stop();
  return took;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t records = argc > 1 ? std::stoull(argv[1]) : 100000;
  spdlog::set_level(spdlog::level::warn);
  const fs::path root = fs::temp_directory_path() / ("allot-startup-bench-" + std::to_string(::getpid()));
  fs::remove_all(root);
  struct Config {
    const char* name;
    bool snapshots;
    std::vector<uint64_t> at;  // where snapshots are written (relative to the end when 0 stands for "the end")
  };
  const uint64_t half = records > 50000 ? records - 50000 : records / 2;
  const std::vector<Config> configs = {{"no snapshot (whole journal)", false, {}},
                                       {"snapshot 50,000 records before the end", true, {half}},
                                       {"snapshot at the end", true, {records}}};
  try {
    for (const Config& c : configs) {
      const fs::path dir = root / std::to_string(&c - configs.data());
      fs::create_directories(dir);
      const uint64_t written = write_journal((dir / "allot.db").string(), records, c.at);
      std::vector<double> runs;
      for (int i = 0; i < 5; ++i) runs.push_back(start_seconds(dir, c.snapshots));
      std::printf("%-42s journal %llu records, db %.1f MB: start-up median %.3f s (min %.3f, max %.3f, 5 runs)\n", c.name,
                  static_cast<unsigned long long>(written), static_cast<double>(fs::file_size(dir / "allot.db")) / 1e6,
                  median_of(runs), *std::min_element(runs.begin(), runs.end()), *std::max_element(runs.begin(), runs.end()));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::cerr << "startup_bench: " << e.what() << "\n";
    fs::remove_all(root);
    return 1;
  }
  fs::remove_all(root);
  return 0;
}
