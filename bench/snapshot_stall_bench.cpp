// How long journal appends wait while a snapshot is written (docs/deployment.md, "Snapshots"). One thread appends
// a batch of 40 records every 2 ms, as the server's writer does at about 1,000 submissions/s; another writes a
// snapshot of --snapshot-mb megabytes of text every second, --snapshots times. Each append's latency is put in
// one of two groups, "a snapshot was being written" or not, and their p50/p99/max are printed for snapshots
// written whole (one transaction, as before) and in parts of --part-kb (the store's default, 1 MiB).
//
// Run: build/bench/snapshot_stall_bench [--snapshot-mb 15] [--snapshots 5] [--part-kb 1024]
//                                       [--pg-url postgresql://USER@HOST:PORT/DB]   (also PostgreSQL; a fresh DB)
// A figure, never a test: the machine's disk and load decide the numbers; compare the two rows of one run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace {

using namespace allot;
using namespace allot::store;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Args {
  size_t snapshot_mb = 15;
  int snapshots = 5;
  size_t part_kb = kSnapshotPartBytes / 1024;
  std::string pg_url;
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Letters that do not compress, so that PostgreSQL stores as many bytes as SQLite does.
std::string body_of(size_t bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(bytes, 'a');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

struct Figures {
  std::vector<double> during, outside, snapshot_ms;
};

Figures run(Store& store, const Args& a) {
  Figures f;
  std::atomic<bool> writing{false}, done{false};
  // A shared database may hold the records of an earlier run: go on after them.
  uint64_t end = 0;
  (void)store.load_after(0, [&](const Record& r) {
    end = r.seq;
    return ok_status();
  });
  std::atomic<uint64_t> last{end};
  std::thread appender([&] {
    uint64_t seq = end;
    auto next = Clock::now();
    while (!done) {
      std::vector<Record> batch;
      for (int i = 0; i < 40; ++i, ++seq) batch.push_back({seq + 1, 0, Cancel{"job-" + std::to_string(seq + 1)}});
      const bool during = writing;
      const auto start = Clock::now();
      if (auto st = store.append(batch); !st) {
        std::fprintf(stderr, "append: %s\n", st.error().message.c_str());
        std::exit(1);
      }
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      (during || writing ? f.during : f.outside).push_back(ms);
      last = seq;
      next += std::chrono::milliseconds(2);
      std::this_thread::sleep_until(next);
      if (Clock::now() > next + std::chrono::milliseconds(50)) next = Clock::now();  // behind: do not burst
    }
  });
  for (int i = 0; i < a.snapshots; ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::string body = body_of(a.snapshot_mb << 20, static_cast<uint32_t>(i));
    writing = true;
    const auto start = Clock::now();
    if (auto st = store.put_snapshot(last, body); !st) {
      std::fprintf(stderr, "snapshot: %s\n", st.error().message.c_str());
      std::exit(1);
    }
    f.snapshot_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    writing = false;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  done = true;
  appender.join();
  return f;
}

void print(const char* store, const char* how, const Figures& f) {
  std::printf("%-10s %-18s appends during a snapshot: n %5zu p50 %7.2f p99 %8.2f max %8.2f ms | otherwise: n %5zu p50 %6.2f "
              "p99 %7.2f ms | snapshot write median %7.1f ms\n",
              store, how, f.during.size(), percentile(f.during, 0.5), percentile(f.during, 0.99),
              f.during.empty() ? 0 : *std::max_element(f.during.begin(), f.during.end()), f.outside.size(),
              percentile(f.outside, 0.5), percentile(f.outside, 0.99), percentile(f.snapshot_ms, 0.5));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--snapshot-mb") a.snapshot_mb = std::stoul(v);
    else if (k == "--snapshots") a.snapshots = std::stoi(v);
    else if (k == "--part-kb") a.part_kb = std::stoul(v);
    else if (k == "--pg-url") a.pg_url = v;
    else {
      std::fprintf(stderr, "snapshot_stall_bench: unknown option %s (see the comment at the top of the file)\n", k.c_str());
      return 2;
    }
  }
  const size_t whole = a.snapshot_mb << 21;  // larger than the body: one part, one transaction
  const std::string part_name = "parts of " + std::to_string(a.part_kb) + " KiB";
  for (size_t part_bytes : {whole, a.part_kb << 10}) {
    const char* how = part_bytes == whole ? "whole" : part_name.c_str();
    const fs::path dir = fs::temp_directory_path() / ("allot-snapshot-stall-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    {
      auto s = SqliteStore::open((dir / "allot.db").string(), SqliteOptions{.snapshot_part_bytes = part_bytes});
      if (!s) {
        std::fprintf(stderr, "%s\n", s.error().message.c_str());
        return 1;
      }
      print("sqlite", how, run(**s, a));
    }
    fs::remove_all(dir);
    if (!a.pg_url.empty()) {
      auto s = PgStore::open(a.pg_url, PgOptions{.snapshot_part_bytes = part_bytes});
      if (!s) {
        std::fprintf(stderr, "%s\n", s.error().message.c_str());
        return 1;
      }
      auto led = (*s)->try_lead("http://127.0.0.1:1");
      if (!led || !*led) {
        std::fprintf(stderr, "the PostgreSQL store did not take the lead\n");
        return 1;
      }
      print("postgresql", how, run(**s, a));
    }
  }
  return 0;
}
