// Usage reports (server/views/usage_ledger.h, docs/api.md "Usage"): a journal of N jobs over D days is made the way the
// writer makes one (submissions by 48 users of 8 teams in 3 priority classes, scheduler passes every minute,
// ends, 5% failures with a retry), on 160 nodes of each of two instance types (1,280 accelerators). Printed:
// the records, the time to replay them into a fresh server state (which builds the aggregates, as start-up does)
// against the same replay with the ledger's work left out of the count, the aggregates' rows and memory, the
// snapshot lines they add, and the report query's time (median of 50) for `by=team` and for all four keys over
// the last 30 days.
// Run: build/bench/usage_bench [N=100000] [D=30]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/pass/scheduler.h"
#include "server/writer/server_state.h"
#include "server/writer/state_snapshot.h"
#include "store/replay.h"

namespace {

using namespace allot;
using namespace allot::server;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "usage_bench: %s\n", what.c_str());
  std::exit(1);
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <class F>
double median_ms(int runs, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t = Clock::now();
    f();
    ms.push_back(seconds_since(t) * 1000);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100000;
  const long days = argc > 2 ? std::atol(argv[2]) : 30;
  const Time start = 1'800'000'000 / 3600 * 3600, end = start + days * 86400;
  const char* types[] = {"ml.g5.12xlarge", "ml.g5.48xlarge"};  // 4 and 8 A10G

  ServerState st;
  std::vector<Event> events;
  std::vector<store::Record> records;
  uint64_t seq = 0;
  auto put = [&](Time at, store::Op op, store::Actor actor = {}) {
    store::Record r{++seq, at, std::move(op), std::move(actor)};
    if (auto s = apply(st, r, events); !s) die(std::string(store::op_name(r.op)) + ": " + s.error().message);
    records.push_back(std::move(r));
    events.clear();
  };
  PolicySpec policy;
  policy.priority_classes = {PriorityClassSpec{"low", 1}, PriorityClassSpec{"high", 10}};
  put(start, store::SetPolicy{policy});
  for (int t = 0; t < 8; ++t) {
    TeamSpec team;
    team.name = "team-" + std::to_string(t);
    AmountSpec share;
    share.instances = 20;
    team.allocation = {{types[0], share}, {types[1], share}};
    put(start, store::UpsertTeam{team});
  }
  for (const char* type : types)
    for (int i = 0; i < 160; ++i) put(start, store::AddNode{NodeSpec{std::string(type) + "-" + std::to_string(i), type, "", {}}, "", false});

  std::mt19937_64 rng(31);
  std::vector<std::pair<Time, std::string>> ends;  // (when, job)
  std::vector<bool> fails;
  long submitted = 0;
  const double per_second = static_cast<double>(n) / static_cast<double>(end - start);
  double due = 0;
  const auto made = Clock::now();
  for (Time now = start; now < end; now += 60) {
    due += per_second * 60;
    for (; due >= 1 && submitted < n; due -= 1, ++submitted) {
      const int team = static_cast<int>(rng() % 8), user = static_cast<int>(rng() % 6), prio = static_cast<int>(rng() % 3);
      JobSpec job;
      job.name = "j" + std::to_string(submitted);
      job.team = "team-" + std::to_string(team);
      job.priority = prio == 0 ? "" : prio == 1 ? "low" : "high";
      job.checkpoint_interval_s = 600;
      job.max_retries = 1;
      PodSetSpec ps;
      ps.name = "main";
      ps.replicas = 1 + static_cast<int>(rng() % 2);
      ps.instance_type = types[rng() % 2];
      ps.per_replica.accelerators = 4;
      job.pod_sets = {ps};
      put(now, store::Submit{job}, store::Actor{.token = "user-" + std::to_string(team) + "-" + std::to_string(user), .role = auth::Role::kMember, .teams = {job.team}});
    }
    // Runs that end by now: 5% fail once (the retry runs again).
    std::sort(ends.begin(), ends.end());
    while (!ends.empty() && ends.front().first <= now) {
      const std::string job = ends.front().second;
      ends.erase(ends.begin());
      const Job* j = st.cluster.find_job(job);
      if (!j || j->state != JobState::kRunning) continue;
      const bool fail = rng() % 20 == 0 && j->restarts == 0;
      put(now, store::Finish{job, !fail, fail ? "replica 0 exited with code 1" : ""});
    }
    ScheduleResult sr = schedule(st.cluster, now);
    for (const Decision& d : sr.decisions) {
      store::Record r{++seq, now, store::decision_record(st.cluster, d), {}};
      note_decision(st, r, events);
      events.clear();
      if (const auto* ad = std::get_if<AdmitDecision>(&d))
        ends.emplace_back(now + 600 + static_cast<Time>(rng() % (4 * 3600)), st.cluster.jobs[ad->job.index()].spec.name);
      records.push_back(std::move(r));
    }
  }
  std::printf("journal: %ld jobs over %ld days, %zu records (made in %.1f s)\n", submitted, days, records.size(), seconds_since(made));

  // Replay: what start-up, a standby and a rebuild after a failed write do; the ledger's part is its accrual and
  // rates, timed on a second replay by the same calls alone.
  ServerState replayed;
  const auto t0 = Clock::now();
  for (const auto& r : records)
    if (auto s = apply(replayed, r, events); !s) die("replay: " + s.error().message);
    else events.clear();
  const double replay_s = seconds_since(t0);
  std::printf("replay into a fresh state (builds the aggregates): %.2f s, %.1f us a record\n", replay_s, replay_s * 1e6 / records.size());
  UsageLedger ledger_only;
  const auto t1 = Clock::now();
  for (const auto& r : records) {
    ledger_only.accrue_to(r.at);
    if (!std::holds_alternative<store::Audit>(r.op)) ledger_only.refresh_rates(replayed.cluster);
  }
  std::printf("  of which the ledger's accrual and rate refresh (on the final state): %.2f s\n", seconds_since(t1));

  const UsageLedger& u = replayed.usage;
  std::printf("aggregates: %zu hourly rows, about %.1f MiB (%.0f bytes a row); %zu users of jobs kept\n", u.row_count(),
              u.memory_bytes() / 1048576.0, static_cast<double>(u.memory_bytes()) / std::max<size_t>(1, u.row_count()),
              u.users().size());
  const std::string snap = encode_state_snapshot(replayed, {});
  size_t usage_bytes = 0;
  for (const auto& r : u.rows()) usage_bytes += r.team.size() + r.user.size() + r.priority.size() + r.instance_type.size() + 120;
  std::printf("snapshot: %.1f MiB in all; the usage rows about %.1f MiB of it\n", snap.size() / 1048576.0, usage_bytes / 1048576.0);

  const std::vector<UsageDim> all = {UsageDim::kTeam, UsageDim::kUser, UsageDim::kPriority, UsageDim::kInstanceType};
  size_t rows_team = 0, rows_all = 0;
  const double by_team = median_ms(50, [&] { rows_team = u.report(end - 30 * 86400, end, end, {UsageDim::kTeam}, nullptr).rows.size(); });
  const double by_all = median_ms(50, [&] { rows_all = u.report(end - 30 * 86400, end, end, all, nullptr).rows.size(); });
  const double member = median_ms(50, [&] {
    u.report(end - 30 * 86400, end, end, all, [](const std::string& t) { return t == "team-3"; });
  });
  std::printf("report over the last 30 days: by=team %.2f ms (%zu rows); by all four keys %.2f ms (%zu rows); a member's (one team) %.2f ms\n",
              by_team, rows_team, by_all, rows_all, member);
  const auto a = replayed.usage.rows(), b = st.usage.rows();
  bool same = a.size() == b.size();
  for (size_t i = 0; same && i < a.size(); ++i)
    same = a[i].hour == b[i].hour && a[i].team == b[i].team && a[i].user == b[i].user && a[i].priority == b[i].priority &&
           a[i].instance_type == b[i].instance_type && a[i].figures == b[i].figures;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (!(a[i].hour == b[i].hour && a[i].team == b[i].team && a[i].user == b[i].user && a[i].figures == b[i].figures)) {
      std::printf("first difference: hour %ld %s %s %s %s: replayed used %ld lostp %ld lostf %ld q %ld adm %ld b %ld l %ld; live used %ld lostp %ld lostf %ld q %ld adm %ld b %ld l %ld (hour %ld %s %s)\n",
                  (long)a[i].hour, a[i].team.c_str(), a[i].user.c_str(), a[i].priority.c_str(), a[i].instance_type.c_str(),
                  (long)a[i].figures.used_s, (long)a[i].figures.lost_preemption_s, (long)a[i].figures.lost_failure_s, (long)a[i].figures.queued_s,
                  (long)a[i].figures.admitted, (long)a[i].figures.borrowed_s, (long)a[i].figures.lent_s, (long)b[i].figures.used_s,
                  (long)b[i].figures.lost_preemption_s, (long)b[i].figures.lost_failure_s, (long)b[i].figures.queued_s, (long)b[i].figures.admitted,
                  (long)b[i].figures.borrowed_s, (long)b[i].figures.lent_s, (long)b[i].hour, b[i].team.c_str(), b[i].user.c_str());
      break;
    }
  std::printf("replayed report equals the live one: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}
