// Start-up time of `allot server` with and without a snapshot (docs/deployment.md, "Snapshots"), in two modes.
//
// By jobs (the default; issue 25 item 6): for each size in --jobs (10,000, 50,000 and 200,000 by default) a SQLite
// journal is written the way the server writes it: each job submitted (with its audit record), admitted by the
// scheduler on 256 nodes and finished 100 submissions later, so that a few hundred run at any time and the rest are
// finished jobs the state keeps (retention keeps a day of them). A snapshot of the state at the end, with the newest
// 10,000 events as the server's snapshot thread takes them, is written last. Then the real server is started
// (Server::start: open, restore, replay, bind) --runs times with the snapshot and as many with --no-snapshots,
// alternated, and the medians are printed beside the journal's bytes (the record bodies and their checksums) and
// the snapshot's body bytes. A standby's catch-up from nothing reads the same way (Writer::replay).
//
// By records (--records N, the older table in bench/RESULTS.md): a journal of N records, started without a
// snapshot, with the latest 50,000 records before the end, and with one at the end.
//
// Run: build/bench/startup_bench [--jobs 10000,50000,200000] [--runs 5] [--format 1|2]    or    build/bench/startup_bench --records N
// --format 1 writes the snapshots as versions before format 2 did (one JSON document; still read), for a before
// and after on one build and one machine load. To profile one start: --keep DIR writes the journals under DIR once and starts them again on later runs, and
// --only-snapshot starts only with the snapshot (then `perf record -g build/bench/startup_bench --jobs 50000 --runs 1
// --keep DIR --only-snapshot`).
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <sqlite3.h>

#include <algorithm>
#include <deque>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include "core/pass/scheduler.h"
#include "server/server.h"
#include "server/writer/state_snapshot.h"
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

struct Written {
  uint64_t records = 0;
  size_t snapshot_bytes = 0;  // the last snapshot's body
};

// The newest events a snapshot holds (ServerOptions::event_ring's default).
constexpr size_t kEventRing = 10000;

// --format 1: snapshots as versions before format 2 wrote them (one JSON document), for the "before" column.
int snapshot_format = 2;

// Writes the journal until it has `records` records or `jobs` jobs were submitted (0: no bound), and, at each of
// `snapshot_at` (0 stands for the end), a snapshot of the state then with the newest kEventRing events.
Written write_journal(const std::string& path, uint64_t records, uint64_t jobs, const std::vector<uint64_t>& snapshot_at) {
  auto store = SqliteStore::open(path);
  if (!store) throw std::runtime_error(store.error().message);
  server::ServerState st;
  std::vector<Record> batch;
  std::vector<server::Event> events;
  std::deque<server::Event> ring;
  Written out;
  const Actor admin{.token = "adm1", .role = auth::Role::kAdmin};
  size_t next_snapshot = 0;
  auto snapshot = [&] {
    const std::vector<server::Event> kept(ring.begin(), ring.end());
    const std::string body =
        snapshot_format == 1 ? server::encode_state_snapshot_format1(st, kept) : server::encode_state_snapshot(st, kept);
    if (auto s = (*store)->put_snapshot(st.last_seq, body); !s) throw std::runtime_error(s.error().message);
    out.snapshot_bytes = body.size();
    ++next_snapshot;
  };
  auto flush = [&] {
    if (auto s = (*store)->append(batch); !s) throw std::runtime_error(s.error().message);
    batch.clear();
    while (next_snapshot < snapshot_at.size() && snapshot_at[next_snapshot] != 0 && snapshot_at[next_snapshot] <= st.last_seq) snapshot();
  };
  auto keep_events = [&] {
    for (auto& e : events) ring.push_back(std::move(e));
    while (ring.size() > kEventRing) ring.pop_front();
    events.clear();
  };
  Time now = 1700000000;
  auto op = [&](Op o, Actor actor) {
    Record r{st.last_seq + 1, now, std::move(o), std::move(actor)};
    if (auto s = server::apply(st, r, events); !s) throw std::runtime_error(s.error().message);
    keep_events();
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
  for (int i = 0; (records == 0 || st.last_seq < records) && (jobs == 0 || static_cast<uint64_t>(i) < jobs); ++i) {
    ++now;
    op(Submit{job(i)}, admin);
    op(Audit{"POST /v1/jobs", "job-" + std::to_string(i), 201, ""}, admin);
    for (const Decision& d : schedule(st.cluster, now).decisions) {
      Record r{st.last_seq + 1, now, decision_record(st.cluster, d), Actor{.token = "server", .role = store::Tokenless::kServer}};
      server::note_decision(st, r, events);
      keep_events();
      batch.push_back(std::move(r));
    }
    // Jobs finish 100 submissions later: a few hundred run at any time, the rest are history.
    if (i >= 100) op(Finish{"job-" + std::to_string(i - 100), true, "exited 0"}, admin);
    if (batch.size() >= 64) flush();
  }
  flush();
  if (next_snapshot < snapshot_at.size()) snapshot();  // the one at the end
  out.records = st.last_seq;
  return out;
}

// The journal's stored bytes: every record's body, kind and checksums (what a replay reads).
uint64_t journal_bytes(const fs::path& db) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) throw std::runtime_error("cannot open " + db.string());
  sqlite3_stmt* q = nullptr;
  uint64_t bytes = 0;
  if (sqlite3_prepare_v2(h,
                         "SELECT sum(length(CAST(body AS BLOB)) + length(kind) + coalesce(length(sum), 0) + "
                         "coalesce(length(chain), 0) + 16) FROM journal",
                         -1, &q, nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    bytes = static_cast<uint64_t>(sqlite3_column_int64(q, 0));
  sqlite3_finalize(q);
  sqlite3_close(h);
  return bytes;
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

// By records: the table of bench/RESULTS.md's "Full size on both stores" section.
int by_records(const fs::path& root, uint64_t records) {
  struct Config {
    const char* name;
    bool snapshots;
    std::vector<uint64_t> at;  // where snapshots are written (0: at the end)
  };
  const uint64_t half = records > 50000 ? records - 50000 : records / 2;
  const std::vector<Config> configs = {{"no snapshot (whole journal)", false, {}},
                                       {"snapshot 50,000 records before the end", true, {half}},
                                       {"snapshot at the end", true, {0}}};
  for (const Config& c : configs) {
    const fs::path dir = root / std::to_string(&c - configs.data());
    fs::create_directories(dir);
    const Written written = write_journal((dir / "allot.db").string(), records, 0, c.at);
    std::vector<double> runs;
    for (int i = 0; i < 5; ++i) runs.push_back(start_seconds(dir, c.snapshots));
    std::printf("%-42s journal %llu records, db %.1f MB: start-up median %.3f s (min %.3f, max %.3f, 5 runs)\n", c.name,
                static_cast<unsigned long long>(written.records), static_cast<double>(fs::file_size(dir / "allot.db")) / 1e6,
                median_of(runs), *std::min_element(runs.begin(), runs.end()), *std::max_element(runs.begin(), runs.end()));
    std::fflush(stdout);
  }
  return 0;
}

// By jobs: for each size, one journal with a snapshot at its end, started with and without it, alternated.
// With `keep`, the journals stay under `root` and one found there is started again instead of written (for perf).
int by_jobs(const fs::path& root, const std::vector<uint64_t>& sizes, int runs, bool keep, bool only_snapshot) {
  std::printf("%8s %9s %12s %12s %7s %14s %14s %8s\n", "jobs", "records", "journal MB", "snapshot MB", "ratio",
              "replay s", "snapshot s", "speed-up");
  for (const uint64_t jobs : sizes) {
    const fs::path dir = root / ("jobs-" + std::to_string(jobs));
    fs::create_directories(dir);
    Written written;
    if (keep && fs::exists(dir / "allot.db")) {
      auto store = SqliteStore::open((dir / "allot.db").string());
      auto snap = store ? (*store)->latest_snapshot() : Result<std::optional<Snapshot>>(store.error());
      if (!snap || !*snap) throw std::runtime_error("no snapshot in " + dir.string());
      written = {(*snap)->seq, (*snap)->body.size()};
    } else {
      written = write_journal((dir / "allot.db").string(), 0, jobs, {0});
    }
    const uint64_t journal = journal_bytes(dir / "allot.db");
    std::vector<double> with, without;
    for (int i = 0; i < runs; ++i) {
      if (!only_snapshot) without.push_back(start_seconds(dir, false));
      else without.push_back(0);
      with.push_back(start_seconds(dir, true));
    }
    const double a = median_of(without), b = median_of(with);
    std::printf("%8llu %9llu %12.1f %12.1f %7.2f %8.3f (%.3f-%.3f) %8.3f (%.3f-%.3f) %7.2fx\n", static_cast<unsigned long long>(jobs),
                static_cast<unsigned long long>(written.records), static_cast<double>(journal) / 1e6,
                static_cast<double>(written.snapshot_bytes) / 1e6, static_cast<double>(written.snapshot_bytes) / static_cast<double>(journal), a,
                *std::min_element(without.begin(), without.end()), *std::max_element(without.begin(), without.end()), b,
                *std::min_element(with.begin(), with.end()), *std::max_element(with.begin(), with.end()), a / b);
    std::fflush(stdout);
    if (!keep) fs::remove_all(dir);
  }
  return 0;
}

std::vector<uint64_t> sizes_from(const std::string& list) {
  std::vector<uint64_t> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    out.push_back(std::stoull(list.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t records = 0;
  std::vector<uint64_t> sizes = {10000, 50000, 200000};
  int runs = 5;
  std::optional<fs::path> keep;
  bool only_snapshot = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--records" && i + 1 < argc) records = std::stoull(argv[++i]);
    else if (a == "--jobs" && i + 1 < argc) sizes = sizes_from(argv[++i]);
    else if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::stoi(argv[++i]));
    else if (a == "--keep" && i + 1 < argc) keep = argv[++i];
    else if (a == "--only-snapshot") only_snapshot = true;
    else if (a == "--format" && i + 1 < argc) snapshot_format = std::stoi(argv[++i]);
    else {
      std::cerr << "usage: startup_bench [--jobs N,N,...] [--runs N] [--keep DIR [--only-snapshot]] [--format 1|2] | --records N\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::warn);
  ::umask(077);  // files as the server keeps them (docs/security.md), so that it has nothing to tighten
  const fs::path root = keep ? *keep : fs::temp_directory_path() / ("allot-startup-bench-" + std::to_string(::getpid()));
  if (!keep) fs::remove_all(root);
  int rc = 0;
  try {
    rc = records ? by_records(root, records) : by_jobs(root, sizes, runs, keep.has_value(), only_snapshot);
  } catch (const std::exception& e) {
    std::cerr << "startup_bench: " << e.what() << "\n";
    rc = 1;
  }
  if (!keep) fs::remove_all(root);
  return rc;
}
