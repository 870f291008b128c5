// One conformance suite for every durable store (STYLE.md, practice 8): the same cases run against SQLite and
// against a real PostgreSQL 15 that the test starts itself (pg_test_instance.h). Every record kind written reads
// back equal; a journal of a live run replays into the same state; batches survive a restart and are whole or
// absent under a fault in the middle of a batch; a second writer is refused or waits for the first to go.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "core/pass/scheduler.h"
#include "pg_test_instance.h"
#include "spec_builders.h"
#include "store/pg_store.h"
#include "store/replay.h"
#include "store/snapshot_parts.h"
#include "store/sqlite_store.h"
#include "store_samples.h"
#include "view/state_json.h"

namespace allot::store::store_conformance_test {
namespace {

namespace fs = std::filesystem;
using allot::test::job_spec;
using FaultHook = std::function<Status(size_t)>;

class StoreConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      std::string why;
      bool failed = false;
      auto* pg = testing::PgTestInstance::get(&why, &failed);
      if (!pg) {
        if (failed) FAIL() << why;
        GTEST_SKIP() << "PostgreSQL store cases skipped: " << why;
      }
      url_ = pg->fresh_database();
    } else {
      std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
      std::replace(name.begin(), name.end(), '/', '_');
      dir_ = fs::temp_directory_path() / ("allot-conformance-" + std::to_string(::getpid()) + "-" + name);
      fs::remove_all(dir_);
      fs::create_directories(dir_);
      url_ = (dir_ / "allot.db").string();
    }
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  bool postgres() const { return GetParam() == "postgresql"; }

  // Opens the store under test; `fault` is called before each record of a batch is written. A shared store
  // is made to lead, as the server makes it before it writes.
  // `part` is called before each part of a snapshot is written.
  Result<std::unique_ptr<Store>> open(FaultHook fault = {}, bool lead = true, FaultHook part = {}) {
    std::unique_ptr<Store> s;
    if (postgres()) {
      auto pg = PgStore::open(url_, PgOptions{.fault_before_insert = std::move(fault), .insert_chunk = 1,
                                              .before_snapshot_part = std::move(part)});
      if (!pg) return pg.error();
      s = std::move(*pg);
    } else {
      auto lite = SqliteStore::open(url_, SqliteOptions{.fault_before_insert = std::move(fault), .before_snapshot_part = std::move(part)});
      if (!lite) return lite.error();
      s = std::move(*lite);
    }
    if (lead) {
      auto led = s->try_lead("http://127.0.0.1:1");
      if (!led) return led.error();
      if (!*led) return Error::precondition("the store did not take the lead");
    }
    return s;
  }
  std::unique_ptr<Store> must_open() {
    auto s = open();
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s ? std::move(*s) : nullptr;
  }

  // Replaces the body of one stored record behind the store's back.
  void damage(uint64_t seq, const std::string& body) {
    const std::string sql = std::string("UPDATE ") + (postgres() ? "allot_journal" : "journal") + " SET body = '" + body +
                            "' WHERE seq = " + std::to_string(seq);
    if (postgres()) {
      ASSERT_EQ(testing::PgTestInstance::exec(url_, sql), "");
    } else {
      sqlite3* raw = nullptr;
      ASSERT_EQ(sqlite3_open(url_.c_str(), &raw), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(raw);
    }
  }

  // Runs one statement behind the store's back (SQLite: with the store closed, since it holds the file).
  void exec_sql(const std::string& sql) {
    if (postgres()) {
      ASSERT_EQ(testing::PgTestInstance::exec(url_, sql), "");
    } else {
      sqlite3* raw = nullptr;
      ASSERT_EQ(sqlite3_open(url_.c_str(), &raw), SQLITE_OK);
      char* msg = nullptr;
      const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &msg);
      EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (msg ? msg : "");
      sqlite3_free(msg);
      sqlite3_close(raw);
    }
  }
  // The number of rows in one of the store's tables, named without its prefix ("snapshot_parts").
  int64_t count_rows(const std::string& table) {
    const std::string name = (postgres() ? "allot_" : "") + table;
    if (postgres()) {
      // PgTestInstance::exec answers only errors: the count comes back as the text of one raised on purpose.
      const std::string out =
          testing::PgTestInstance::exec(url_, "DO $$ BEGIN RAISE 'rows=%', (SELECT count(*) FROM " + name + "); END $$");
      const auto at = out.find("rows=");
      EXPECT_NE(at, std::string::npos) << out;
      return at == std::string::npos ? -1 : std::atoll(out.c_str() + at + 5);
    }
    sqlite3* raw = nullptr;
    EXPECT_EQ(sqlite3_open(url_.c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(raw, ("SELECT count(*) FROM " + name).c_str(), -1, &q, nullptr) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
      n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(raw);
    return n;
  }

  std::string url_;
  fs::path dir_;
};

// Text whose UTF-8 characters of 1 to 4 bytes fall across every part boundary: 3 MiB and a little.
std::string snapshot_text() {
  std::string out;
  const char* pieces[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x9a\x80", "{\"job\":\"x\"}"};
  for (size_t i = 0; out.size() < 3 * kSnapshotPartBytes + 77; ++i) out += pieces[i % 5];
  return out;
}

std::vector<Record> cancels(uint64_t first, int n) {
  std::vector<Record> out;
  for (int i = 0; i < n; ++i) out.push_back({first + i, 100 + i, Cancel{"job-" + std::to_string(first + i)}});
  return out;
}

std::vector<Record> load_all(Store& s, uint64_t after = 0) {
  std::vector<Record> out;
  auto st = s.load_after(after, [&](const Record& r) {
    out.push_back(r);
    return ok_status();
  });
  EXPECT_TRUE(st.ok()) << st.error().message;
  return out;
}

TEST_P(StoreConformance, EveryRecordKindReadsBackEqualAfterARestart) {
  std::vector<Record> written;
  uint64_t seq = 0;
  for (const Op& op : every_kind())
    written.push_back({++seq, 1700000000 + static_cast<Time>(seq), op, Actor{.token = "tok-" + std::to_string(seq), .role = auth::Role::kAdmin, .teams = {"a", "b"}, .node = "n1"}});
  written.back().actor = Actor{};  // a record without an actor (the server's, or from before actors)
  {
    auto s = must_open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->append(std::vector<Record>(written.begin(), written.begin() + 5)).ok());
    ASSERT_TRUE(s->append(std::vector<Record>(written.begin() + 5, written.end())).ok());
    ASSERT_TRUE(s->append({}).ok());
  }
  auto s = must_open();
  ASSERT_TRUE(s);
  EXPECT_EQ(load_all(*s), written);
  std::set<std::string> kinds;
  for (const Record& r : load_all(*s)) kinds.insert(op_name(r.op));
  EXPECT_EQ(kinds.size(), std::variant_size_v<Op>) << "a record kind is missing from the suite";
}

TEST_P(StoreConformance, LoadAfterGivesOnlyLaterRecords) {
  auto s = must_open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->append(cancels(1, 7)).ok());
  auto tail = load_all(*s, 4);
  ASSERT_EQ(tail.size(), 3u);
  EXPECT_EQ(tail.front().seq, 5u);
  EXPECT_TRUE(load_all(*s, 7).empty());
}

// A live run's journal (operations and the scheduler's decisions), written through the store in batches and
// replayed from it into a fresh state, gives the state the live run had.
TEST_P(StoreConformance, ReplayFromTheStoreGivesTheLiveState) {
  ClusterState live;
  std::vector<Record> journal;
  uint64_t seq = 0;
  auto op = [&](Op o, Time at) {
    Record r{seq + 1, at, std::move(o)};
    if (!apply_record(live, r).ok()) return;
    journal.push_back({++seq, at, r.op});
    for (const Decision& d : schedule(live, at).decisions) journal.push_back({++seq, at, decision_record(live, d)});
  };
  TeamSpec a{.name = "a"}, b{.name = "b"};
  AmountSpec two;
  two.instances = 2;
  a.allocation = b.allocation = {{"ml.g5.8xlarge", two}};
  a.borrow_limit = b.borrow_limit = 100;
  op(UpsertTeam{a}, 0);
  op(UpsertTeam{b}, 0);
  for (int i = 1; i <= 4; ++i) op(AddNode{NodeSpec{"n" + std::to_string(i), "ml.g5.8xlarge", "", {}}, "", true}, 1);
  op(Submit{job_spec("a-big", "a").replicas(4)}, 2);  // borrows b's idle quota
  op(Submit{job_spec("b-1", "b")}, 3);    // reclaims: a-big is preempted
  op(Drain{"n2"}, 4);
  op(Finish{"b-1", true, "done"}, 5);
  op(Submit{job_spec("b-2", "b").replicas(2)}, 6);
  op(Cancel{"b-2"}, 7);
  // Retention: b-1 (finished at 5) leaves, b-2 (cancelled at 7) stays, and b-1's name is taken again.
  op(CompactFinished{5}, 8);
  op(Submit{job_spec("b-1", "b")}, 9);
  ASSERT_EQ(live.compacted_jobs, 1u);
  ASSERT_GT(journal.size(), 10u);
  {
    auto s = must_open();
    ASSERT_TRUE(s);
    for (size_t i = 0; i < journal.size(); i += 3)
      ASSERT_TRUE(s->append(std::vector<Record>(journal.begin() + i, journal.begin() + std::min(journal.size(), i + 3))).ok());
  }
  auto s = must_open();
  ASSERT_TRUE(s);
  ClusterState replayed;
  auto st = s->load([&](const Record& r) { return apply_record(replayed, r); });
  ASSERT_TRUE(st.ok()) << st.error().message;
  // The replayed state is the fixed point the live scheduler left; running it decides nothing and refreshes the
  // explanations of waiting jobs (not journaled), as the server does after replay.
  EXPECT_TRUE(schedule(replayed, 9).decisions.empty());
  ASSERT_EQ(replayed.jobs.size(), live.jobs.size());
  for (size_t i = 0; i < live.jobs.size(); ++i) {
    ASSERT_EQ(replayed.jobs[i].compacted, live.jobs[i].compacted) << "job " << i;
    if (!live.jobs[i].compacted) {
      EXPECT_EQ(view::job_json(replayed, replayed.jobs[i]), view::job_json(live, live.jobs[i]));
    }
  }
  EXPECT_EQ(replayed.compacted_jobs, 1u);
  EXPECT_EQ(replayed.find_job("b-1")->attempt_base, live.find_job("b-1")->attempt_base);
  for (size_t i = 0; i < live.nodes.size(); ++i)
    EXPECT_EQ(view::node_json(replayed, replayed.nodes[i]), view::node_json(live, live.nodes[i]));
  EXPECT_EQ(replayed.usage, live.usage);
}

// A capacity plan's life as the server journals it (core/model/plans.h): created, stepped to Active, its nodes joining
// with the plan label, a job on the plan admitted, the steps to Ending (the job checkpointed and requeued) and
// Expired (the nodes leave), and a second plan deleted while a job waits for it. Replayed from the store, it gives
// the live state.
TEST_P(StoreConformance, APlanLifeReplaysFromTheStore) {
  ClusterState live;
  std::vector<Record> journal;
  uint64_t seq = 0;
  auto op = [&](Op o, Time at) {
    Record r{seq + 1, at, std::move(o)};
    auto st = apply_record(live, r);
    ASSERT_TRUE(st.ok()) << op_name(r.op) << ": " << st.error().message;
    journal.push_back({++seq, at, r.op});
    for (const Decision& d : schedule(live, at).decisions) journal.push_back({++seq, at, decision_record(live, d)});
  };
  TeamSpec a{.name = "a"};
  AmountSpec one;
  one.instances = 1;
  a.allocation = {{"ml.g5.8xlarge", one}};
  op(UpsertTeam{a}, 0);
  op(AddNode{NodeSpec{"n1", "ml.g5.8xlarge", "", {}}, "", true}, 0);
  op(CreatePlan{PlanSpec{"p", "ml.g5.8xlarge", 2, 100, 1000, 100, "a", {}}}, 0);
  op(CreatePlan{PlanSpec{"q", "ml.g5.8xlarge", 1, 5000, 6000, 0, "", {}}}, 0);
  JobSpec j;
  j.name = "on-plan";
  j.team = "a";
  j.plan = "p";
  PodSetSpec ps;
  ps.replicas = 2;
  ps.per_replica.accelerators = 1;
  j.pod_sets = {ps};
  op(Submit{j}, 1);
  j.name = "on-q";
  j.plan = "q";
  j.pod_sets[0].replicas = 1;
  op(Submit{j}, 1);
  ASSERT_EQ(live.find_job("on-plan")->state, JobState::kPending);
  op(PlanStepRecord{"p", "Active"}, 100);
  for (const char* n : {"p-1", "p-2"})
    op(AddNode{NodeSpec{n, "ml.g5.8xlarge", "", {{"allot.dev/plan", "p"}}}, "", true}, 101);
  ASSERT_EQ(live.find_job("on-plan")->state, JobState::kRunning);
  op(PlanStepRecord{"p", "Ending"}, 900);
  ASSERT_EQ(live.find_job("on-plan")->state, JobState::kSuspended);
  op(PlanStepRecord{"p", "Expired"}, 1000);
  op(DeletePlan{"q"}, 1001);
  {
    auto s = must_open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->append(journal).ok());
  }
  auto s = must_open();
  ASSERT_TRUE(s);
  ClusterState replayed;
  auto st = s->load([&](const Record& r) { return apply_record(replayed, r); });
  ASSERT_TRUE(st.ok()) << st.error().message;
  EXPECT_TRUE(schedule(replayed, 1002).decisions.empty());
  schedule(live, 1002);  // the same explanations on both sides
  ASSERT_EQ(replayed.jobs.size(), live.jobs.size());
  for (size_t i = 0; i < live.jobs.size(); ++i)
    EXPECT_EQ(view::job_json(replayed, replayed.jobs[i]), view::job_json(live, live.jobs[i]));
  for (size_t i = 0; i < live.plans.size(); ++i)
    EXPECT_EQ(view::plan_json(replayed, replayed.plans[i]), view::plan_json(live, live.plans[i]));
  EXPECT_EQ(replayed.find_job("on-plan")->reason_code, ReasonCode::kPlanEnded);
  EXPECT_EQ(replayed.find_job("on-q")->reason_code, ReasonCode::kPlanEnded);
  EXPECT_EQ(replayed.find_node("p-1"), nullptr);
  EXPECT_EQ(replayed.usage, live.usage);
}

// A fault in the middle of a batch (after some of its records were sent, in the same transaction) leaves none
// of the batch behind; the store goes on and the same seqs can be written again.
TEST_P(StoreConformance, TornBatchLeavesNothingBehind) {
  int calls = 0;
  auto s = open([&calls](size_t i) -> Status {
    ++calls;
    if (calls > 3 && i == 2) return Error::internal("injected: the disk filled up");
    return ok_status();
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->append(cancels(1, 3)).ok());
  auto failed = (*s)->append(cancels(4, 5));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("disk filled up"), std::string::npos) << failed.error().message;
  EXPECT_EQ(load_all(**s).size(), 3u) << "no record of the failed batch may remain";
  ASSERT_TRUE((*s)->append(cancels(4, 1)).ok());
  s->reset();  // closed, then opened again: a restart
  auto again = must_open();
  ASSERT_TRUE(again);
  EXPECT_EQ(load_all(*again).size(), 4u);
}

TEST_P(StoreConformance, ASeqAlreadyWrittenFailsTheWholeBatch) {
  auto s = must_open();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->append(cancels(1, 2)).ok());
  EXPECT_FALSE(s->append(cancels(2, 2)).ok());
  EXPECT_EQ(load_all(*s).size(), 2u);
}

TEST_P(StoreConformance, TextThatIsNotUtf8FailsTheBatch) {
  auto s = must_open();
  ASSERT_TRUE(s);
  std::vector<Record> bad = cancels(1, 2);
  bad[1].op = Cancel{"\xff\xfe"};
  auto st = s->append(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("cannot encode"), std::string::npos) << st.error().message;
  EXPECT_TRUE(load_all(*s).empty());
}

TEST_P(StoreConformance, ADamagedRecordStopsTheLoadNamingItsSeq) {
  {
    auto s = must_open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->append(cancels(1, 3)).ok());
  }
  damage(2, "{\"op\":\"cancel\"}");
  auto s = must_open();
  ASSERT_TRUE(s);
  int seen = 0;
  auto st = s->load([&](const Record&) {
    ++seen;
    return ok_status();
  });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("record 2"), std::string::npos) << st.error().message;
  EXPECT_EQ(seen, 0) << "no record of a damaged batch is handed over (store/journal_checksum.h)";
  s.reset();  // SQLite holds its file exclusively while open
  damage(2, "not json");
  s = must_open();
  ASSERT_TRUE(s);
  st = s->load([](const Record&) { return ok_status(); });
  ASSERT_FALSE(st.ok());
  // Its checksum finds it first; the kind comes from the row, the body names no job.
  EXPECT_NE(st.error().message.find("journal record 2 (cancel) in the batch from record 1 does not match its checksum"), std::string::npos)
      << st.error().message;
}

// Two writers on one journal: SQLite refuses the second open; PostgreSQL lets the second open as a standby that
// cannot take the lead, and whose appends are refused, until the first is gone. The standby then leads, reads
// what the first wrote, and goes on after it.
TEST_P(StoreConformance, ASecondWriterIsRefusedOrWaitsForTheFirst) {
  auto first = must_open();
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->append(cancels(1, 2)).ok());
  auto second = open({}, /*lead=*/false);
  if (!first->shared()) {
    ASSERT_FALSE(second.ok());
    EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
    return;
  }
  ASSERT_TRUE(second.ok()) << second.error().message;
  auto led = (*second)->try_lead("http://127.0.0.1:2");
  ASSERT_TRUE(led.ok()) << led.error().message;
  EXPECT_FALSE(*led);
  auto url = (*second)->leader_url();
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(*url, "http://127.0.0.1:1");
  auto refused = (*second)->append(cancels(3, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("does not lead"), std::string::npos) << refused.error().message;
  EXPECT_EQ(load_all(**second).size(), 2u);
  ASSERT_TRUE(first->append(cancels(3, 1)).ok());
  EXPECT_EQ(load_all(**second, 2).size(), 1u) << "a standby follows what the leader writes";

  first.reset();  // the leader's session ends (as when its process dies)
  // The database lets go of the lock once the ended session's backend has exited, a moment later.
  for (int i = 0; i < 200; ++i) {
    led = (*second)->try_lead("http://127.0.0.1:2");
    ASSERT_TRUE(led.ok()) << led.error().message;
    if (*led) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(*led);
  EXPECT_EQ(*(*second)->leader_url(), "http://127.0.0.1:2");
  ASSERT_TRUE((*second)->append(cancels(4, 1)).ok());
  EXPECT_EQ(load_all(**second).size(), 4u);
}

// Snapshots: the newest one is read back after a restart, only the newest kSnapshotsKept are kept, and one past
// the journal's end is refused. On a shared store only the leader writes one.
TEST_P(StoreConformance, SnapshotsSurviveARestartAndOnlyTheNewestAreKept) {
  {
    auto s = must_open();
    ASSERT_TRUE(s);
    auto none = s->latest_snapshot();
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_FALSE(none->has_value());
    ASSERT_TRUE(s->append(cancels(1, 9)).ok());
    ASSERT_TRUE(s->put_snapshot(3, "{\"at\":3}").ok());
    ASSERT_TRUE(s->put_snapshot(6, "{\"at\":6}").ok());
    ASSERT_TRUE(s->put_snapshot(9, std::string(200000, 'x')).ok());  // large bodies, whole
    auto past = s->put_snapshot(10, "{}");
    ASSERT_FALSE(past.ok());
    EXPECT_NE(past.error().message.find("past the journal's end (9)"), std::string::npos) << past.error().message;
  }
  auto s = must_open();
  ASSERT_TRUE(s);
  auto latest = s->latest_snapshot();
  ASSERT_TRUE(latest.ok()) << latest.error().message;
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->seq, 9u);
  EXPECT_EQ((*latest)->body, std::string(200000, 'x'));
  const std::string count_sql = std::string("SELECT count(*) FROM ") + (postgres() ? "allot_snapshots" : "snapshots");
  if (postgres()) {
    EXPECT_EQ(testing::PgTestInstance::exec(url_, "DO $$ BEGIN IF (" + count_sql + ") <> " + std::to_string(Store::kSnapshotsKept) +
                                                      " THEN RAISE 'snapshots kept: %', (" + count_sql + "); END IF; END $$"),
              "");
    auto standby = open({}, /*lead=*/false);
    ASSERT_TRUE(standby.ok()) << standby.error().message;
    auto refused = (*standby)->put_snapshot(9, "{}");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("does not lead"), std::string::npos) << refused.error().message;
  } else {
    s.reset();  // the file is opened exclusively
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(url_.c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, count_sql.c_str(), -1, &q, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(q, 0), Store::kSnapshotsKept);
    sqlite3_finalize(q);
    sqlite3_close(raw);
  }
}

// A snapshot larger than a part is written in parts and reads back byte for byte; between its parts the journal
// takes appends (the store's lock is not held across the whole snapshot, which used to stall every request).
TEST_P(StoreConformance, ASnapshotInPartsReadsBackWholeAndAppendsGoOnBetweenItsParts) {
  const std::string body = snapshot_text();
  {
    Store* raw = nullptr;
    std::future<Status> append;
    bool appended_between = false;
    auto s = open({}, /*lead=*/true, [&](size_t part) {
      if (part == 1) {
        // From another thread: if the snapshot held the lock here, this append would wait for all of it.
        append = std::async(std::launch::async, [&] { return raw->append(cancels(4, 1)); });
        appended_between = append.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
      }
      return ok_status();
    });
    ASSERT_TRUE(s.ok()) << s.error().message;
    raw = s->get();
    ASSERT_TRUE((*s)->append(cancels(1, 3)).ok());
    ASSERT_TRUE((*s)->put_snapshot(3, body).ok());
    EXPECT_TRUE(appended_between) << "an append waited for the whole snapshot";
    if (append.valid()) {
      auto st = append.get();
      EXPECT_TRUE(st.ok()) << st.error().message;
    }
    EXPECT_EQ(load_all(**s).size(), 4u);
  }
  EXPECT_GE(count_rows("snapshot_parts"), 4);
  auto s = must_open();
  ASSERT_TRUE(s);
  auto latest = s->latest_snapshot();
  ASSERT_TRUE(latest.ok()) << latest.error().message;
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->seq, 3u);
  EXPECT_TRUE((*latest)->body == body) << "the snapshot read back differs (" << (*latest)->body.size() << " bytes, "
                                       << body.size() << " written)";
}

// A snapshot whose writing stopped between its parts (a crash) is never read: the one before it is, and the
// next snapshot written removes the stopped one's parts. A part lost behind the store's back is an error that
// names the snapshot.
TEST_P(StoreConformance, ASnapshotStoppedBetweenItsPartsIsNotReadAndItsPartsAreRemoved) {
  const std::string body = snapshot_text();
  bool crash = false;
  {
    auto s = open({}, /*lead=*/true, [&](size_t part) -> Status {
      if (crash && part == 2) return Error::internal("injected: the server died here");
      return ok_status();
    });
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->append(cancels(1, 9)).ok());
    ASSERT_TRUE((*s)->put_snapshot(3, "{\"at\":3}").ok());
    crash = true;
    auto stopped = (*s)->put_snapshot(6, body);
    ASSERT_FALSE(stopped.ok());
    auto latest = (*s)->latest_snapshot();
    ASSERT_TRUE(latest.ok()) << latest.error().message;
    EXPECT_EQ((*latest)->seq, 3u);
  }
  EXPECT_EQ(count_rows("snapshot_parts"), 3);  // the one of snapshot 3, two of the stopped one
  {
    auto s = must_open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->put_snapshot(9, body).ok());
  }
  const int64_t parts_of_9 = static_cast<int64_t>(split_snapshot(body).size());
  EXPECT_EQ(count_rows("snapshot_parts"), 1 + parts_of_9);
  exec_sql(std::string("DELETE FROM ") + (postgres() ? "allot_" : "") + "snapshot_parts WHERE seq = 9 AND part = 1");
  auto s = must_open();
  ASSERT_TRUE(s);
  auto torn = s->latest_snapshot();
  ASSERT_FALSE(torn.ok());
  EXPECT_NE(torn.error().message.find("snapshot at journal record 9 is incomplete: part 1 of " + std::to_string(parts_of_9) +
                                      " is missing"),
            std::string::npos)
      << torn.error().message;
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreConformance, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace allot::store::store_conformance_test
