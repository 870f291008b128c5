// The SQLite store and the in-memory double: append and load, durability across reopen, batches all or
// nothing under injected failures, one server per database file.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "store/mem_store.h"
#include "store/sqlite_store.h"

namespace allot::store::store_sqlite_test {
namespace {

namespace fs = std::filesystem;

class StoreSqlite : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-store-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return (dir_ / "allot.db").string(); }
  fs::path dir_;
};

std::vector<Record> batch(uint64_t first, int n) {
  std::vector<Record> out;
  for (int i = 0; i < n; ++i) out.push_back({first + i, 100 + i, Cancel{"job-" + std::to_string(first + i)}});
  return out;
}

std::vector<Record> load_all(Store& s) {
  std::vector<Record> out;
  auto st = s.load([&](const Record& r) {
    out.push_back(r);
    return ok_status();
  });
  EXPECT_TRUE(st.ok()) << st.error().message;
  return out;
}

TEST_F(StoreSqlite, AppendedBatchesSurviveReopen) {
  {
    auto s = SqliteStore::open(db());
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_TRUE((*s)->append(batch(1, 3)).ok());
    ASSERT_TRUE((*s)->append(batch(4, 2)).ok());
    ASSERT_TRUE((*s)->append({}).ok());
  }
  auto s = SqliteStore::open(db());
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto all = load_all(**s);
  auto want = batch(1, 5);
  for (auto& r : want) r.at = 0;
  ASSERT_EQ(all.size(), 5u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].seq, i + 1);
    EXPECT_EQ(std::get<Cancel>(all[i].op).job, "job-" + std::to_string(i + 1));
  }
  EXPECT_EQ(all[1].at, 101);
}

TEST_F(StoreSqlite, BatchIsAllOrNothingUnderInjectedFailure) {
  int calls = 0;
  SqliteOptions options;
  options.fault_before_insert = [&calls](size_t i) -> Status {
    ++calls;
    if (calls > 3 && i == 2) return Error::internal("injected: disk full");  // third record of the second batch
    return ok_status();
  };
  auto s = SqliteStore::open(db(), options);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->append(batch(1, 3)).ok());
  auto failed = (*s)->append(batch(4, 5));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("disk full"), std::string::npos);
  EXPECT_EQ(load_all(**s).size(), 3u) << "no record of the failed batch may remain";
  // The store keeps working after a failed batch, and the same seqs can be written again.
  ASSERT_TRUE((*s)->append(batch(4, 1)).ok());
  EXPECT_EQ(load_all(**s).size(), 4u);
}

TEST_F(StoreSqlite, OutOfOrderSeqIsRefusedWhole) {
  auto s = SqliteStore::open(db());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->append(batch(1, 2)).ok());
  EXPECT_FALSE((*s)->append(batch(2, 2)).ok());  // seq 2 exists: the primary key refuses it
  EXPECT_EQ(load_all(**s).size(), 2u);
}

TEST_F(StoreSqlite, TextThatIsNotUtf8FailsTheBatchInsteadOfThrowing) {
  auto s = SqliteStore::open(db());
  ASSERT_TRUE(s.ok());
  std::vector<Record> bad = batch(1, 2);
  bad[1].op = Cancel{"\xff\xfe"};
  auto st = (*s)->append(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("cannot encode"), std::string::npos) << st.error().message;
  EXPECT_TRUE(load_all(**s).empty());
}

TEST_F(StoreSqlite, SecondServerOnTheSameFileIsRefused) {
  auto first = SqliteStore::open(db());
  ASSERT_TRUE(first.ok());
  auto second = SqliteStore::open(db());
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
}

TEST_F(StoreSqlite, CorruptRecordStopsLoadWithItsSeq) {
  {
    auto s = SqliteStore::open(db());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->append(batch(1, 2)).ok());
  }
  {
    // Damage one record behind the store's back.
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "UPDATE journal SET body = '{\"op\":\"cancel\"}' WHERE seq = 2", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  auto s = SqliteStore::open(db());
  ASSERT_TRUE(s.ok());
  auto st = (*s)->load([](const Record&) { return ok_status(); });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("record 2"), std::string::npos) << st.error().message;
}

TEST_F(StoreSqlite, OpenStoreUrls) {
  auto pg = open_store("postgresql://allot:secret@127.0.0.1:1/allot");  // nothing listens on port 1
  ASSERT_FALSE(pg.ok());
  EXPECT_NE(pg.error().message.find("cannot connect to PostgreSQL at postgresql://allot@127.0.0.1:1/allot"), std::string::npos)
      << pg.error().message;
  EXPECT_EQ(pg.error().message.find("secret"), std::string::npos) << "the password must not be shown";
  auto unknown = open_store("mysql://x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("sqlite:PATH"), std::string::npos);
  auto nested = open_store("sqlite:" + (dir_ / "a" / "b" / "x.db").string());
  ASSERT_TRUE(nested.ok()) << nested.error().message;
  EXPECT_TRUE(fs::exists(dir_ / "a" / "b" / "x.db"));
  EXPECT_TRUE(open_store("mem:").ok());
}

// A file from before snapshots (journal format 1) is migrated on open and keeps its records; one from a newer
// allot is refused.
TEST_F(StoreSqlite, AFormatOneFileIsMigratedAndANewerOneRefused) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "CREATE TABLE journal (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL);"
                         "INSERT INTO journal VALUES (1, 5, 'cancel', '{\"op\":\"cancel\",\"job\":\"old\"}');"
                         "PRAGMA user_version=1;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  {
    auto s = SqliteStore::open(db());
    ASSERT_TRUE(s.ok()) << s.error().message;
    auto records = load_all(**s);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(std::get<Cancel>(records[0].op).job, "old");
    ASSERT_TRUE((*s)->put_snapshot(1, "{}").ok());
  }
  ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version=5", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  auto newer = SqliteStore::open(db());
  ASSERT_FALSE(newer.ok());
  EXPECT_NE(newer.error().message.find("newer allot (journal format 5, this version reads 4)"), std::string::npos)
      << newer.error().message;
}

// A file of journal format 2 keeps its snapshot, written whole, readable after the migration to parts; the next
// snapshot is written in parts and the two coexist.
TEST_F(StoreSqlite, AFormatTwoSnapshotStaysReadableAfterTheMigration) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db().c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw,
                         "CREATE TABLE journal (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL);"
                         "INSERT INTO journal VALUES (1, 5, 'cancel', '{\"op\":\"cancel\",\"job\":\"a\"}');"
                         "INSERT INTO journal VALUES (2, 6, 'cancel', '{\"op\":\"cancel\",\"job\":\"b\"}');"
                         "CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);"
                         "INSERT INTO snapshots VALUES (1, '{\"whole\":1}');"
                         "PRAGMA user_version=2;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  auto s = SqliteStore::open(db());
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto old = (*s)->latest_snapshot();
  ASSERT_TRUE(old.ok()) << old.error().message;
  ASSERT_TRUE(old->has_value());
  EXPECT_EQ((*old)->seq, 1u);
  EXPECT_EQ((*old)->body, "{\"whole\":1}");
  ASSERT_TRUE((*s)->put_snapshot(2, "{\"parts\":2}").ok());
  auto next = (*s)->latest_snapshot();
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ((*next)->seq, 2u);
  EXPECT_EQ((*next)->body, "{\"parts\":2}");
}

TEST(StoreMem, InjectedFailuresLeaveTheJournalUnchanged) {
  MemStore s;
  ASSERT_TRUE(s.append(batch(1, 2)).ok());
  s.fail_next_appends(1);
  EXPECT_FALSE(s.append(batch(3, 2)).ok());
  EXPECT_EQ(s.records().size(), 2u);
  ASSERT_TRUE(s.append(batch(3, 2)).ok());
  s.fail_after_records(3);
  EXPECT_FALSE(s.append(batch(5, 4)).ok()) << "a batch larger than the room left fails whole";
  EXPECT_EQ(s.records().size(), 4u);
  EXPECT_EQ(s.appends(), 2u);
}

}  // namespace
}  // namespace allot::store::store_sqlite_test
