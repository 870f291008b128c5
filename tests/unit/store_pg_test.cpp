// What only the PostgreSQL store has (the rest is in store_conformance_test.cpp): schema migrations, and the
// fencing of a leader that lost its hold on the journal.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "pg_test_instance.h"
#include "store/pg_store.h"

namespace allot::store::store_pg_test {
namespace {

using testing::PgTestInstance;

class StorePg : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    bool failed = false;
    auto* pg = PgTestInstance::get(&why, &failed);
    if (!pg) {
      if (failed) FAIL() << why;
      GTEST_SKIP() << "PostgreSQL store cases skipped: " << why;
    }
    url_ = pg->fresh_database();
  }
  std::unique_ptr<PgStore> leader(const std::string& url) {
    auto s = PgStore::open(url_);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) return nullptr;
    auto led = (*s)->try_lead(url);
    EXPECT_TRUE(led.ok() && *led);
    return std::move(*s);
  }
  size_t count() {
    auto s = PgStore::open(url_);
    EXPECT_TRUE(s.ok());
    size_t n = 0;
    EXPECT_TRUE((*s)->load([&](const Record&) {
                      ++n;
                      return ok_status();
                    }).ok());
    return n;
  }
  std::string url_;
};

std::vector<Record> cancels(uint64_t first, int n) {
  std::vector<Record> out;
  for (int i = 0; i < n; ++i) out.push_back({first + i, 100, Cancel{"job-" + std::to_string(first + i)}});
  return out;
}

TEST_F(StorePg, ASchemaOneJournalIsMigratedAndKeepsItsRecords) {
  // The layout of schema 1, written by hand as an older allot would have left it.
  ASSERT_EQ(PgTestInstance::exec(url_,
                                 "CREATE TABLE allot_schema (version integer NOT NULL); INSERT INTO allot_schema VALUES (1);"
                                 "CREATE TABLE allot_journal (seq bigint PRIMARY KEY, at bigint NOT NULL, kind text NOT NULL, body text NOT NULL);"
                                 "INSERT INTO allot_journal VALUES (1, 5, 'cancel', '{\"op\":\"cancel\",\"job\":\"old\"}')"),
            "");
  auto s = leader("http://127.0.0.1:1");
  ASSERT_TRUE(s);
  std::vector<Record> got;
  ASSERT_TRUE(s->load([&](const Record& r) {
                 got.push_back(r);
                 return ok_status();
               }).ok());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<Cancel>(got[0].op).job, "old");
  ASSERT_TRUE(s->append(cancels(2, 1)).ok());
  EXPECT_EQ(PgTestInstance::exec(url_, "DO $$ BEGIN IF (SELECT version FROM allot_schema) <> " +
                                           std::to_string(PgStore::schema_version()) + " THEN RAISE 'not migrated'; END IF; END $$"),
            "");
}

TEST_F(StorePg, AJournalFromANewerAllotIsRefused) {
  { ASSERT_TRUE(PgStore::open(url_).ok()); }
  ASSERT_EQ(PgTestInstance::exec(url_, "UPDATE allot_schema SET version = 99"), "");
  auto s = PgStore::open(url_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("written by a newer allot (journal schema 99"), std::string::npos) << s.error().message;
}

TEST_F(StorePg, ServersStartingTogetherMigrateOnce) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      auto s = PgStore::open(url_);
      if (!s) errors[i] = s.error().message;
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
}

// The leader's session is ended from outside (as when the database drops a connection it found dead). Another
// server takes the lead; the old one, still running, can no longer write, and says so.
TEST_F(StorePg, ALeaderWhoseSessionEndedNeverWritesAgain) {
  auto old_leader = leader("http://127.0.0.1:1");
  ASSERT_TRUE(old_leader);
  ASSERT_TRUE(old_leader->append(cancels(1, 2)).ok());
  auto standby = PgStore::open(url_);
  ASSERT_TRUE(standby.ok());
  ASSERT_EQ(PgTestInstance::exec(url_, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND "
                                       "objid = 1634495599::oid AND granted"),
            "");
  bool led = false;
  for (int i = 0; i < 100 && !led; ++i) {  // the ended session lets go of the lock as soon as its backend exits
    auto r = (*standby)->try_lead("http://127.0.0.1:2");
    ASSERT_TRUE(r.ok()) << r.error().message;
    led = *r;
    if (!led) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(led);
  auto refused = old_leader->append(cancels(3, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_FALSE(old_leader->leading());
  // It cannot take the lead back while the new leader holds it, so it stays refused.
  auto again = old_leader->try_lead("http://127.0.0.1:1");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_FALSE(*again);
  EXPECT_FALSE(old_leader->append(cancels(3, 1)).ok());
  ASSERT_TRUE((*standby)->append(cancels(3, 1)).ok());
  EXPECT_EQ(count(), 3u);
}

// A leader that hangs (SIGSTOP) keeps its session and its lock; its lease, renewed by confirm_lead(), does not
// outlive the hang. A standby takes over once the lease expired, ending the hung leader's session, and the old
// leader, running again, writes nothing.
TEST_F(StorePg, AStandbyTakesOverFromALeaderWhoseLeaseExpired) {
  PgOptions brief;
  brief.leader_lease = std::chrono::milliseconds(600);
  auto opened = PgStore::open(url_, brief);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto old_leader = std::move(*opened);
  auto led = old_leader->try_lead("http://127.0.0.1:1");
  ASSERT_TRUE(led.ok() && *led);
  ASSERT_TRUE(old_leader->append(cancels(1, 1)).ok());
  auto standby = PgStore::open(url_, brief);
  ASSERT_TRUE(standby.ok());
  // While the leader renews its lease, the standby does not take over.
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(old_leader->confirm_lead());
    auto r = (*standby)->try_lead("http://127.0.0.1:2");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_FALSE(*r) << "took over from a leader that renews its lease";
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  // The leader hangs: it neither renews nor writes, and its session stays open.
  bool took = false;
  const auto hung = std::chrono::steady_clock::now();
  for (int i = 0; i < 100 && !took; ++i) {
    auto r = (*standby)->try_lead("http://127.0.0.1:2");
    ASSERT_TRUE(r.ok()) << r.error().message;
    took = *r;
    if (!took) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(took) << "the standby never took over from a leader whose lease expired";
  EXPECT_GE(std::chrono::steady_clock::now() - hung, std::chrono::milliseconds(400));  // not before the lease ended
  EXPECT_EQ(*(*standby)->leader_url(), "http://127.0.0.1:2");
  // The old leader runs again: its session is gone and its epoch superseded.
  EXPECT_FALSE(old_leader->append(cancels(2, 1)).ok());
  EXPECT_FALSE(old_leader->leading());
  EXPECT_FALSE(old_leader->confirm_lead());
  ASSERT_TRUE((*standby)->append(cancels(2, 1)).ok());
  EXPECT_EQ(count(), 2u);
}

// The epoch is the fence inside every append's transaction: a leader whose epoch was superseded (another server
// took over by any means) writes nothing.
TEST_F(StorePg, AnAppendUnderASupersededEpochWritesNothing) {
  auto s = leader("http://127.0.0.1:1");
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->append(cancels(1, 1)).ok());
  ASSERT_EQ(PgTestInstance::exec(url_, "UPDATE allot_leader SET epoch = epoch + 1"), "");
  auto refused = s->append(cancels(2, 3));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("lost the lead"), std::string::npos) << refused.error().message;
  EXPECT_FALSE(s->leading());
  EXPECT_EQ(count(), 1u);
}

TEST_F(StorePg, NoLeaderUrlOnceTheLeaderIsGone) {
  auto s = leader("http://127.0.0.1:7");
  ASSERT_TRUE(s);
  auto other = PgStore::open(url_);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*(*other)->leader_url(), "http://127.0.0.1:7");
  s.reset();
  std::string url = "x";
  for (int i = 0; i < 100 && !url.empty(); ++i) {
    url = *(*other)->leader_url();
    if (!url.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(url, "");
}

TEST(StorePgUrl, PasswordsAreNeverShown) {
  EXPECT_EQ(url_without_password("postgresql://allot:s3cret@db.example:5432/allot?sslmode=require"),
            "postgresql://allot@db.example:5432/allot?sslmode=require");
  EXPECT_EQ(url_without_password("postgresql://allot@db/allot"), "postgresql://allot@db/allot");
  EXPECT_EQ(url_without_password("postgresql://db:5432/allot"), "postgresql://db:5432/allot");
}

}  // namespace
}  // namespace allot::store::store_pg_test
