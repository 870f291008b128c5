// Memory of the core's state under retention (docs/deployment.md, "Retention"): N jobs are submitted, run and
// finished on 128 one-accelerator nodes, 100 every 10 simulated seconds, and every round compacts the jobs
// finished more than RETAIN seconds before (compact_finished, as the server's retention does). Printed: the
// process's resident memory (VmRSS, after giving freed memory back with malloc_trim), its peak (VmHWM), the jobs
// ever submitted and those still kept, and the time the compactions took in all.
// With retention the live state is about RETAIN / 10 * 100 jobs whatever N is, so memory should not grow with N.
// Also printed: the mean time of a scheduling pass over the first and the last 1,000 rounds once the state is
// steady, so that a pass whose cost follows the jobs ever submitted (rather than those kept) shows.
// Run: build/bench/retention_memory_bench [N=20000] [RETAIN seconds=600, -1: never]
// It uses only the core's public operations, so the same file builds against older versions for a comparison.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/pass/scheduler.h"
#include "core/model/state.h"

namespace {

using namespace allot;

long status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::strtol(line.c_str() + key.size() + 1, nullptr, 10);
  return -1;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "retention_memory_bench: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 20000;
  const long retain = argc > 2 ? std::atol(argv[2]) : 600;
  ClusterState s;
  for (int i = 0; i < 128; ++i)
    if (!add_node(s, NodeSpec{"n" + std::to_string(i), "ml.g5.8xlarge", "", {}}, 0).ok()) die("add_node failed");
  TeamSpec team;
  team.name = "a";
  AmountSpec all;
  all.instances = 128;
  team.allocation = {{"ml.g5.8xlarge", all}};
  if (!upsert_team(s, team).ok()) die("upsert_team failed");

  std::chrono::nanoseconds compacting{0};
  // Rounds [steady, steady + 1000) and the last 1,000: the live state is the same size in both.
  const long rounds = (n + 99) / 100, steady = retain >= 0 ? retain / 10 + 2 : 0;
  std::chrono::nanoseconds pass_first{0}, pass_last{0};
  long round = 0;
  Time now = 0;
  long submitted = 0;
  while (submitted < n) {
    now += 10;
    for (int i = 0; i < 100 && submitted < n; ++i, ++submitted) {
      JobSpec spec;
      spec.name = "job-" + std::to_string(submitted);
      spec.team = "a";
      PodSetSpec ps;
      ps.per_replica.accelerators = 1;
      spec.pod_sets = {ps};
      if (!submit_job(s, spec, now).ok()) die("submit_job failed");
    }
    const auto p0 = std::chrono::steady_clock::now();
    schedule(s, now);
    const auto took = std::chrono::steady_clock::now() - p0;
    if (round >= steady && round < steady + 1000) pass_first += took;
    if (round >= rounds - 1000) pass_last += took;
    ++round;
    std::vector<std::string> running;
    for (JobId id : s.running_jobs) running.push_back(s.jobs[id.index()].spec.name);
    for (const std::string& name : running)
      if (!finish_job(s, name, now + 5, true).ok()) die("finish_job failed");
    if (retain >= 0 && now + 5 - retain > 0) {
      const auto t0 = std::chrono::steady_clock::now();
      if (!compact_finished(s, now + 5 - retain, now + 5).ok()) die("compact_finished failed");
      compacting += std::chrono::steady_clock::now() - t0;
    }
  }
  malloc_trim(0);
  std::printf("jobs=%ld retain_s=%ld rss_kib=%ld hwm_kib=%ld jobs_ever=%zu jobs_kept=%llu compaction_ms=%.1f", n, retain,
              status_kib("VmRSS"), status_kib("VmHWM"), s.jobs.size(),
              static_cast<unsigned long long>(s.jobs.size() - s.compacted_jobs), compacting.count() / 1e6);
  if (rounds >= steady + 2000)
    std::printf(" pass_us_first1000=%.1f pass_us_last1000=%.1f", pass_first.count() / 1e6, pass_last.count() / 1e6);
  std::printf("\n");
  return 0;
}
