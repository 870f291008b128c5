// The job table (core/model/job_table.h) against a plain vector, and what retention (core compact_finished) does with
// it: memory follows the jobs kept, the finished-jobs index follows every change, attempt numbers stay apart.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <set>
#include <utility>

#include "core/pass/scheduler.h"
#include "core/model/state.h"
#include "store/cluster_snapshot.h"

#include "spec_builders.h"
#include "published_readers.h"

namespace allot::job_table_test {
namespace {

using allot::test::job_spec;

Job named(size_t id, const std::string& name) {
  Job j;
  j.id = JobId(static_cast<uint32_t>(id));
  j.spec.name = name;
  return j;
}

// The table reads, by index and by iteration, as the plain vector it replaces; iteration leaves out tombstones
// only; exactly the chunks with a job kept (or the last, still filling) hold memory.
void expect_same(const JobTable& table, const std::vector<Job>& plain) {
  ASSERT_EQ(table.size(), plain.size());
  size_t needed = 0;
  for (size_t c = 0; c * JobTable::kChunk < plain.size(); ++c) {
    bool kept = false;
    for (size_t i = c * JobTable::kChunk; i < std::min(plain.size(), (c + 1) * JobTable::kChunk); ++i) kept |= !plain[i].compacted;
    needed += kept || (c + 1) * JobTable::kChunk > plain.size();
  }
  EXPECT_EQ(table.chunks_stored(), needed);
  for (size_t i = 0; i < plain.size(); ++i) {
    const Job& t = table[i];
    ASSERT_EQ(t.compacted, plain[i].compacted) << "job " << i;
    EXPECT_EQ(t.spec.name, plain[i].spec.name) << "job " << i;
    if (!t.compacted) {
      EXPECT_EQ(t.id, plain[i].id);
    }
  }
  size_t next = 0;
  for (const Job& j : table) {
    ASSERT_LT(j.id.index(), plain.size());
    ASSERT_GE(j.id.index(), next) << "iteration is in ID order";
    for (; next < j.id.index(); ++next) EXPECT_TRUE(plain[next].compacted) << "iteration skipped job " << next << ", which is kept";
    EXPECT_EQ(j.spec.name, plain[j.id.index()].spec.name);
    ++next;
  }
  for (; next < plain.size(); ++next) EXPECT_TRUE(plain[next].compacted) << "iteration skipped job " << next << ", which is kept";
}

TEST(JobTable, ReadsAsAPlainVectorUnderRandomAppendsAndCompactions) {
  for (uint32_t seed = 1; seed <= 8; ++seed) {
    std::mt19937 rng(seed);
    JobTable table;
    std::vector<Job> plain;
    for (int step = 0; step < 3000; ++step) {
      const int what = static_cast<int>(rng() % 10);
      if (what < 5 || plain.empty()) {
        Job j = named(plain.size(), "j" + std::to_string(plain.size()));
        table.push_back(j);
        plain.push_back(std::move(j));
      } else if (what < 9) {
        // Compact mostly old jobs, as retention does, sometimes any.
        const size_t n = plain.size();
        const size_t id = what < 8 ? rng() % std::min<size_t>(n, 200) + (n > 200 ? rng() % (n - 199) / 2 : 0) : rng() % n;
        // Compacting a tombstone again changes nothing, but by non-const access it brings its chunk back
        // until release_revived (compact_finished compacts only jobs not yet compacted, then releases).
        table.compact(id);
        if (rng() % 2) table.release_revived();
        plain[id] = compacted_tombstone(JobId(static_cast<uint32_t>(id)));
      } else {
        // A snapshot's run of tombstones, from a restore.
        const size_t run = rng() % 150;
        table.append_compacted(run);
        for (size_t i = 0; i < run; ++i) plain.push_back(compacted_tombstone(JobId(static_cast<uint32_t>(plain.size()))));
      }
      if (step % 500 == 499) {
        table.release_revived();
        SCOPED_TRACE("seed " + std::to_string(seed) + ", step " + std::to_string(step));
        expect_same(table, plain);
        // A copy reads the same, and takes new jobs as the original does.
        JobTable copy = table;
        std::vector<Job> plain_copy = plain;
        copy.push_back(named(plain_copy.size(), "copy"));
        plain_copy.push_back(named(plain_copy.size(), "copy"));
        expect_same(copy, plain_copy);
      }
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_same(table, plain);
  }
}

TEST(JobTable, CompactingEveryJobOfAChunkFreesIt) {
  JobTable table;
  for (size_t i = 0; i < 10 * JobTable::kChunk + 5; ++i) table.push_back(named(i, "j"));
  EXPECT_EQ(table.chunks_stored(), 11u);
  for (size_t i = 0; i < 10 * JobTable::kChunk - 1; ++i) table.compact(i);
  // Chunks 0-8 are freed; chunk 9 still holds one job, and the last chunk is still filling.
  EXPECT_EQ(table.chunks_stored(), 2u);
  table.compact(10 * JobTable::kChunk - 1);
  EXPECT_EQ(table.chunks_stored(), 1u);
  for (size_t i = 10 * JobTable::kChunk; i < table.size(); ++i) table.compact(i);
  EXPECT_EQ(table.chunks_stored(), 1u) << "the last chunk is kept while it still takes new jobs";
  for (size_t i = table.size(); i < 11 * JobTable::kChunk; ++i) table.push_back(named(i, "late"));
  EXPECT_EQ(table.chunks_stored(), 1u);
  EXPECT_EQ(table.size(), 11 * JobTable::kChunk);
  EXPECT_EQ(table[11 * JobTable::kChunk - 1].spec.name, "late");
  EXPECT_TRUE(std::as_const(table)[3].compacted);
}

TEST(JobTable, NonConstAccessToAFreedChunkGivesTheJobAskedForUntilReleased) {
  JobTable table;
  for (size_t i = 0; i < 2 * JobTable::kChunk; ++i) table.push_back(named(i, "j"));
  for (size_t i = 0; i < JobTable::kChunk; ++i) table.compact(i);
  ASSERT_EQ(table.chunks_stored(), 1u);
  EXPECT_FALSE(std::as_const(table)[7].id.valid()) << "const access reads the shared tombstone";
  Job& seven = table[7];
  EXPECT_TRUE(seven.compacted);
  EXPECT_EQ(seven.id, JobId(7)) << "non-const access reads the job's own tombstone";
  EXPECT_EQ(table.chunks_stored(), 2u);
  table.release_revived();
  EXPECT_EQ(table.chunks_stored(), 1u);
}

// --- Views (JobTable::view_of) ---------------------------------------------------------------------------

// A view reads as the table did when it was taken, whatever the live table does afterwards.
TEST(JobTableView, KeepsItsValuesWhenTheLiveTableChangesASharedChunk) {
  JobTable live;
  for (size_t i = 0; i < 3 * JobTable::kChunk; ++i) live.push_back(named(i, "j" + std::to_string(i)));
  const JobTable first = JobTable::view_of(live, nullptr);
  JobTable::ViewCost cost;
  const JobTable second = JobTable::view_of(live, &first, &cost);
  EXPECT_EQ(cost.chunks_copied, 0u) << "nothing changed since the first view";
  EXPECT_EQ(cost.chunks_shared, 3u);
  live[70].spec.name = "changed";
  EXPECT_EQ(first[70].spec.name, "j70");
  EXPECT_EQ(second[70].spec.name, "j70") << "a chunk shared between views is never written";
  const JobTable third = JobTable::view_of(live, &second, &cost);
  EXPECT_EQ(cost.chunks_copied, 1u) << "only the changed chunk is copied";
  EXPECT_EQ(cost.chunks_shared, 2u);
  EXPECT_EQ(third[70].spec.name, "changed");
  EXPECT_EQ(second[70].spec.name, "j70");
  EXPECT_EQ(&third[0], &second[0]) << "an unchanged chunk is the previous view's";
  EXPECT_NE(&third[0], &live[0]) << "and never the live table's";
}

TEST(JobTableView, EveryKindOfMutableAccessMarksTheChunk) {
  JobTable live;
  for (size_t i = 0; i < 2 * JobTable::kChunk + 3; ++i) live.push_back(named(i, "j"));
  JobTable view = JobTable::view_of(live, nullptr);
  JobTable::ViewCost cost;
  // back(): the last chunk.
  live.back().spec.name = "back";
  view = JobTable::view_of(live, &view, &cost);
  EXPECT_EQ(std::as_const(view).back().spec.name, "back");  // a view is only read
  EXPECT_EQ(cost.chunks_copied, 1u);
  // A non-const iteration's dereference.
  for (Job& j : live)
    if (j.id.index() == 5) j.spec.name = "iterated";
  view = JobTable::view_of(live, &view, &cost);
  EXPECT_EQ(std::as_const(view)[5].spec.name, "iterated");
  // An append to the last chunk, which the previous view holds with fewer jobs.
  live.push_back(named(live.size(), "appended"));
  view = JobTable::view_of(live, &view, &cost);
  EXPECT_EQ(view.size(), 2 * JobTable::kChunk + 4);
  EXPECT_EQ(std::as_const(view).back().spec.name, "appended");
  EXPECT_EQ(cost.chunks_copied, 1u);
  EXPECT_EQ(cost.chunks_shared, 2u);
  // Const reads mark nothing.
  size_t named_j = 0;
  for (const Job& j : std::as_const(live)) named_j += j.spec.name == "j";
  EXPECT_EQ(std::as_const(live)[7].spec.name, "j");
  view = JobTable::view_of(live, &view, &cost);
  EXPECT_EQ(cost.chunks_copied, 0u);
  EXPECT_GT(named_j, 0u);
}

TEST(JobTableView, KeepsFreedAndRevivedChunksApart) {
  JobTable live;
  for (size_t i = 0; i < 3 * JobTable::kChunk; ++i) live.push_back(named(i, "j" + std::to_string(i)));
  const JobTable before = JobTable::view_of(live, nullptr);
  for (size_t i = 0; i < JobTable::kChunk; ++i) live.compact(i);  // frees chunk 0
  ASSERT_EQ(live.chunks_stored(), 2u);
  EXPECT_EQ(before[3].spec.name, "j3") << "the view keeps the jobs the live table freed";
  EXPECT_FALSE(before[3].compacted);
  JobTable::ViewCost cost;
  const JobTable freed = JobTable::view_of(live, &before, &cost);
  EXPECT_TRUE(freed[3].compacted);
  EXPECT_EQ(freed.chunks_stored(), 2u);
  EXPECT_EQ(cost.chunks_shared, 2u);
  // Non-const access brings chunk 0 back; the views before read it as they did.
  EXPECT_EQ(live[3].id, JobId(3));
  live[3].spec.name = "revived";
  EXPECT_TRUE(freed[3].compacted);
  EXPECT_FALSE(freed[3].id.valid()) << "still the shared tombstone";
  EXPECT_EQ(before[3].spec.name, "j3");
  const JobTable revived = JobTable::view_of(live, &freed, &cost);
  EXPECT_EQ(revived[3].spec.name, "revived");
  EXPECT_EQ(cost.chunks_copied, 1u);
  live.release_revived();
  const JobTable released = JobTable::view_of(live, &revived, &cost);
  EXPECT_TRUE(released[3].compacted);
  EXPECT_EQ(released.chunks_stored(), 2u);
  EXPECT_EQ(revived[3].spec.name, "revived");
  // Tombstones appended by a restore.
  live.append_compacted(2 * JobTable::kChunk);
  const JobTable appended = JobTable::view_of(live, &released, &cost);
  EXPECT_EQ(appended.size(), 5 * JobTable::kChunk);
  EXPECT_TRUE(appended[4 * JobTable::kChunk].compacted);
  EXPECT_EQ(released.size(), 3 * JobTable::kChunk);
}

TEST(JobTableView, SharesNothingWithTheViewOfAnotherTable) {
  JobTable live;
  for (size_t i = 0; i < 2 * JobTable::kChunk; ++i) live.push_back(named(i, "old"));
  const JobTable old_view = JobTable::view_of(live, nullptr);
  // A state rebuilt from the journal: another table, whose stamps say nothing about the old view's chunks.
  JobTable rebuilt;
  for (size_t i = 0; i < 2 * JobTable::kChunk; ++i) rebuilt.push_back(named(i, "new"));
  JobTable::ViewCost cost;
  const JobTable view = JobTable::view_of(rebuilt, &old_view, &cost);
  EXPECT_EQ(cost.chunks_shared, 0u);
  EXPECT_EQ(view[0].spec.name, "new");
  // Nor does a copy of the live table (a table of its own) share with the original's views.
  JobTable copy = live;
  copy[1].spec.name = "copy";
  const JobTable copy_view = JobTable::view_of(copy, &old_view, &cost);
  EXPECT_EQ(cost.chunks_shared, 0u);
  EXPECT_EQ(copy_view[1].spec.name, "copy");
  EXPECT_EQ(old_view[1].spec.name, "old");
}

// Random changes and views; every view, read again after all later changes, is the table as it was when taken.
TEST(JobTableView, EveryViewReadsAsItsMomentUnderRandomChanges) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    JobTable live;
    std::vector<Job> plain;
    // Each view beside what the table held at its moment: per job, whether it was compacted and its name (all the
    // checks below compare; a copy of every Job per view was most of this test's time).
    std::vector<std::pair<JobTable, std::vector<std::pair<bool, std::string>>>> views;
    size_t shared = 0;
    for (int step = 0; step < 2000; ++step) {
      const int what = static_cast<int>(rng() % 12);
      if (what < 4 || plain.empty()) {
        Job j = named(plain.size(), "j" + std::to_string(plain.size()));
        live.push_back(j);
        plain.push_back(std::move(j));
      } else if (what < 7) {
        const size_t id = rng() % plain.size();
        const std::string name = "s" + std::to_string(step);
        live[id].spec.name = name;  // on a tombstone: revived, then renamed (compaction never reads names)
        plain[id].spec.name = name;
        if (plain[id].compacted) plain[id].id = JobId(static_cast<uint32_t>(id));
      } else if (what < 10) {
        const size_t id = rng() % std::min<size_t>(plain.size(), 300);
        if (!plain[id].compacted) {
          live.compact(id);
          plain[id] = compacted_tombstone(JobId(static_cast<uint32_t>(id)));
        }
        if (rng() % 3 == 0) live.release_revived();
      } else if (what == 10) {
        const size_t run = rng() % 100;
        live.append_compacted(run);
        for (size_t i = 0; i < run; ++i) plain.push_back(compacted_tombstone(JobId(static_cast<uint32_t>(plain.size()))));
      } else {
        JobTable::ViewCost cost;
        JobTable v = JobTable::view_of(live, views.empty() ? nullptr : &views.back().first, &cost);
        shared += cost.chunks_shared;
        std::vector<std::pair<bool, std::string>> then;
        then.reserve(plain.size());
        for (const Job& j : plain) then.emplace_back(j.compacted, j.compacted ? std::string() : j.spec.name);
        views.emplace_back(std::move(v), std::move(then));
      }
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_GT(shared, 0u) << "views shared chunks";
    for (size_t v = 0; v < views.size(); ++v) {
      const JobTable& view = views[v].first;
      const auto& then = views[v].second;
      ASSERT_EQ(view.size(), then.size()) << "view " << v;
      for (size_t i = 0; i < then.size(); ++i) {
        ASSERT_EQ(view[i].compacted, then[i].first) << "view " << v << ", job " << i;
        if (!then[i].first) ASSERT_EQ(view[i].spec.name, then[i].second) << "view " << v << ", job " << i;
      }
    }
  }
}

// Readers on other threads read views while the owner changes the live table and takes new views: the chunks
// they read are never written (a ThreadSanitizer build reports it if they were).
TEST(JobTableView, ReadersOnOtherThreadsSeeEachViewWhole) {
  JobTable live;
  for (size_t i = 0; i < 8 * JobTable::kChunk; ++i) live.push_back(named(i, "0"));
  // The owner renames every job of a chunk at once: a view's chunk holds one round's name throughout.
  test_support::PublishedReaders<JobTable> readers(std::make_shared<const JobTable>(JobTable::view_of(live, nullptr)),
                                                   [](const JobTable& v) {
                                                     int torn = 0;
                                                     for (size_t i = 0; i < v.size(); ++i)
                                                       torn += v[i].spec.name != v[i / JobTable::kChunk * JobTable::kChunk].spec.name;
                                                     return torn;
                                                   });
  for (int round = 1; round <= 200; ++round) {
    // One chunk changes in most rounds (the others are shared); all of them every tenth, so both paths run.
    const size_t changed = static_cast<size_t>(round) % 8;
    for (size_t i = 0; i < live.size(); ++i)
      if (round % 10 == 0 || i / JobTable::kChunk == changed) live[i].spec.name = std::to_string(round);
    readers.publish(std::make_shared<const JobTable>(JobTable::view_of(live, readers.latest())));
  }
  EXPECT_EQ(readers.stop(), 0);
}

// --- Retention on a whole cluster state ------------------------------------------------------------------

class RetentionTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 0; n < 4; ++n) ASSERT_TRUE(add_node(s, NodeSpec{"n" + std::to_string(n), "ml.g5.8xlarge", "", {}}, 0).ok());
    TeamSpec t;
    t.name = "a";
    AmountSpec amount;
    amount.instances = 4;
    t.allocation = {{"ml.g5.8xlarge", amount}};
    ASSERT_TRUE(upsert_team(s, t).ok());
  }
  // The finished jobs not yet compacted, by (finished_at, ID), from every job (what compaction used to scan).
  std::set<std::pair<Time, uint32_t>> finished_by_scan() const {
    std::set<std::pair<Time, uint32_t>> out;
    for (size_t i = 0; i < s.jobs.size(); ++i)
      if (const Job& j = std::as_const(s.jobs)[i]; !j.compacted && !is_active(j.state)) out.insert({finished_at(j), static_cast<uint32_t>(i)});
    return out;
  }
  ClusterState s;
};

// Random submissions, runs, failures, cancellations, deletions and compactions: the finished-jobs index always
// equals a scan of every job, a compaction takes exactly the jobs the scan says, and a snapshot round trip
// gives the same jobs, index and attempt bookkeeping.
TEST_F(RetentionTableTest, TheFinishedIndexFollowsEveryChange) {
  std::mt19937 rng(7);
  Time now = 1;
  std::vector<std::string> names;
  for (int step = 0; step < 4000; ++step, ++now) {
    const int what = static_cast<int>(rng() % 12);
    if (what < 5) {
      // Names come back now and then, after a delete or a compaction.
      const std::string name = "job-" + std::to_string(rng() % 400);
      if (!s.find_job(name)) {
        ASSERT_TRUE(submit_job(s, job_spec(name, "a"), now).ok());
      }
    } else if (what < 7) {
      schedule(s, now);
    } else if (what < 9 && !s.running_jobs.empty()) {
      const Job& j = s.jobs[s.running_jobs.sorted().front().index()];
      ASSERT_TRUE(finish_job(s, j.spec.name, now, what == 7).ok());
    } else if (what == 9 && !s.waiting_jobs.empty()) {
      ASSERT_TRUE(cancel_job(s, std::as_const(s.jobs)[s.waiting_jobs.sorted().back().index()].spec.name, now).ok());
    } else if (const auto finished = finished_by_scan(); what == 10 && !finished.empty()) {
      const Job& j = s.jobs[finished.rbegin()->second];
      if (!j.deleted) {
        ASSERT_TRUE(delete_job(s, j.spec.name).ok());
      }
    } else if (what == 11 && step >= 1000) {  // the first compaction builds the index from 1,000 steps' jobs
      const Time cutoff = now - static_cast<Time>(rng() % 200);
      std::vector<JobId> expected;
      for (const auto& [at, id] : finished_by_scan())
        if (at <= cutoff) expected.push_back(JobId(id));
      std::sort(expected.begin(), expected.end());
      auto gone = compact_finished(s, cutoff, now);
      ASSERT_TRUE(gone.ok()) << gone.error().message;
      EXPECT_EQ(*gone, expected);
    }
    if (s.finished_indexed) {
      ASSERT_EQ(s.finished_jobs, finished_by_scan()) << "step " << step;
    } else {
      ASSERT_TRUE(s.finished_jobs.empty()) << "no index before retention is used: step " << step;
    }
  }
  ASSERT_TRUE(s.finished_indexed);
  ASSERT_TRUE(compact_finished(s, now, now).ok());
  // Memory: exactly the chunks that hold an active job (or still take new jobs) are left.
  std::set<size_t> active_chunks{(s.jobs.size() - 1) / JobTable::kChunk};
  for (JobId id : s.running_jobs) active_chunks.insert(id.index() / JobTable::kChunk);
  for (JobId id : s.waiting_jobs) active_chunks.insert(id.index() / JobTable::kChunk);
  EXPECT_EQ(s.jobs.chunks_stored(), active_chunks.size());
  EXPECT_LT(s.jobs.chunks_stored() * 2, (s.jobs.size() + JobTable::kChunk - 1) / JobTable::kChunk) << "most chunks were freed";
  EXPECT_GT(s.compacted_jobs, 500u);

  auto restored = store::cluster_from_json(store::cluster_to_json(s));
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(store::cluster_to_json(*restored), store::cluster_to_json(s));
  EXPECT_FALSE(restored->finished_indexed) << "built again on first use";
  keep_finished_index(*restored);
  EXPECT_EQ(restored->finished_jobs, s.finished_jobs);
  EXPECT_EQ(restored->jobs.chunks_stored(), s.jobs.chunks_stored());
}

// attempts_used stays within kAttemptsKept names; a name folded away still numbers its attempts after every
// attempt of the old job, and a name still listed numbers them right after its own.
TEST_F(RetentionTableTest, AttemptNumbersStayApartAfterTheNamesAreFolded) {
  Time now = 1;
  auto run_and_fail = [&](const std::string& name, int restarts) {
    JobSpec spec = job_spec(name, "a");
    spec.max_retries = restarts;
    ASSERT_TRUE(submit_job(s, spec, now++).ok());
    for (int r = 0; r <= restarts; ++r) {
      schedule(s, now++);
      ASSERT_EQ(s.find_job(name)->state, JobState::kRunning);
      ASSERT_TRUE(finish_job(s, name, now++, false, "exit 1").ok());
    }
    ASSERT_EQ(s.find_job(name)->state, JobState::kFailed);
  };
  run_and_fail("restarted", 3);  // attempts 0..3
  ASSERT_TRUE(compact_finished(s, now - 1, now).ok());
  EXPECT_EQ(s.attempts_used.at("restarted"), 4);
  for (size_t i = 0; i < ClusterState::kAttemptsKept; ++i) {
    ASSERT_TRUE(submit_job(s, job_spec("once-" + std::to_string(i), "a"), now).ok());
    ASSERT_TRUE(cancel_job(s, "once-" + std::to_string(i), now++).ok());
  }
  ASSERT_TRUE(compact_finished(s, now - 1, now).ok());
  EXPECT_TRUE(s.attempts_used.empty()) << "folded: more than kAttemptsKept names";
  EXPECT_EQ(s.attempts_folded, 4);
  ASSERT_TRUE(submit_job(s, job_spec("restarted", "a"), now++).ok());
  EXPECT_EQ(s.find_job("restarted")->attempt_base, 4) << "the old job's attempts 0..3 are never taken for the new one's";
  EXPECT_EQ(s.find_job("restarted")->attempt_folded, 4) << "from the fold: not shown (server attempt_shown)";
  ASSERT_TRUE(submit_job(s, job_spec("never-used", "a"), now++).ok());
  EXPECT_EQ(s.find_job("never-used")->attempt_base, 4);
  EXPECT_EQ(s.find_job("never-used")->attempt_base - s.find_job("never-used")->attempt_folded, 0)
      << "a new name is shown from attempt 0, as without the fold";
  // A name deleted after the fold is listed again, and numbers its attempts after its own.
  run_and_fail("later", 0);
  EXPECT_EQ(s.find_job("later")->attempt_base, 4);
  ASSERT_TRUE(delete_job(s, "later").ok());
  EXPECT_EQ(s.attempts_used.at("later"), 5);
  ASSERT_TRUE(submit_job(s, job_spec("later", "a"), now++).ok());
  EXPECT_EQ(s.find_job("later")->attempt_base, 5);
  EXPECT_EQ(s.find_job("later")->attempt_folded, 0) << "listed: shown after its own runs, as after a delete";

  auto restored = store::cluster_from_json(store::cluster_to_json(s));
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->attempts_folded, 4);
  EXPECT_EQ(restored->find_job("never-used")->attempt_folded, 4);
  EXPECT_EQ(restored->find_job("later")->attempt_folded, 0);
}

// Without retention (the simulator, `--retain-finished never`) finished jobs are not indexed at all; the first
// compaction or retention check builds the index from every job, and it follows every change from then on.
TEST_F(RetentionTableTest, TheFinishedIndexIsKeptOnlyOnceRetentionIsUsed) {
  Time now = 1;
  for (int i = 0; i < 300; ++i) {
    const std::string name = "j" + std::to_string(i);
    ASSERT_TRUE(submit_job(s, job_spec(name, "a"), now++).ok());
    schedule(s, now++);
    if (i % 3 == 0) ASSERT_TRUE(cancel_job(s, name, now++).ok());
    else if (s.find_job(name)->state == JobState::kRunning) ASSERT_TRUE(finish_job(s, name, now++, i % 3 == 1).ok());
  }
  EXPECT_FALSE(s.finished_indexed);
  EXPECT_TRUE(s.finished_jobs.empty()) << "no cost without retention";
  keep_finished_index(s);
  EXPECT_EQ(s.finished_jobs, finished_by_scan());
  EXPECT_GT(s.finished_jobs.size(), 250u);
  keep_finished_index(s);  // once: nothing changes
  EXPECT_EQ(s.finished_jobs, finished_by_scan());
  ASSERT_TRUE(submit_job(s, job_spec("after", "a"), now++).ok());
  ASSERT_TRUE(cancel_job(s, "after", now++).ok());
  EXPECT_EQ(s.finished_jobs, finished_by_scan()) << "kept up to date from then on";

  // A compaction builds it too, on a state that never had it.
  ClusterState fresh = s;
  fresh.finished_jobs.clear();
  fresh.finished_indexed = false;
  auto gone = compact_finished(fresh, 100, now);
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_FALSE(gone->empty());
  EXPECT_TRUE(fresh.finished_indexed);
  std::set<std::pair<Time, uint32_t>> left;
  for (const auto& f : s.finished_jobs)
    if (f.first > 100) left.insert(f);
  EXPECT_EQ(fresh.finished_jobs, left);
}

}  // namespace
}  // namespace allot::job_table_test
