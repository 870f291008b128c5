// The journal's checksums (store/journal_checksum.h), on SQLite and PostgreSQL: a record changed behind the
// store's back, a batch removed whole, a batch's last record removed, a checksum removed, each stops the load with
// the record named and hands over no record of the damaged batch; journals written before checksums still read,
// and a standby following the journal finds damage the same way.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

#include "pg_test_instance.h"
#include "spec_builders.h"
#include "store/journal_checksum.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace allot::store::store_checksum_test {
namespace {

namespace fs = std::filesystem;
using allot::test::job_spec;

// Batches of 3 records each: 1-3, 4-6, 7-9; record 5 is the submission of job "train-a", 1 accelerator a replica.
std::vector<std::vector<Record>> journal() {
  std::vector<std::vector<Record>> out;
  for (uint64_t first : {1, 4, 7}) {
    std::vector<Record> b;
    for (uint64_t s = first; s < first + 3; ++s)
      b.push_back(s == 5 ? Record{s, 100, Submit{job_spec("train-a", "team-a")}} : Record{s, 100, Cancel{"job-" + std::to_string(s)}});
    out.push_back(std::move(b));
  }
  return out;
}

struct Loaded {
  Status status = ok_status();
  std::vector<uint64_t> seqs;
};
Loaded load_after(Store& s, uint64_t after) {
  Loaded out;
  out.status = s.load_after(after, [&](const Record& r) {
    out.seqs.push_back(r.seq);
    return ok_status();
  });
  return out;
}
std::string message(const Loaded& l) { return l.status ? "(loaded)" : l.status.error().message; }
bool says(const Loaded& l, const std::string& what) { return !l.status && l.status.error().message.find(what) != std::string::npos; }

TEST(JournalChecksum, SumsAreStableAndCoverEveryField) {
  const std::string sum = record_checksum(5, 100, "submit", "{}");
  EXPECT_EQ(sum.size(), 32u);
  EXPECT_EQ(sum, record_checksum(5, 100, "submit", "{}"));
  EXPECT_NE(sum, record_checksum(6, 100, "submit", "{}"));
  EXPECT_NE(sum, record_checksum(5, 101, "submit", "{}"));
  EXPECT_NE(sum, record_checksum(5, 100, "cancel", "{}"));
  EXPECT_NE(sum, record_checksum(5, 100, "submit", "{ }"));
  EXPECT_NE(chain_checksum("", {sum}), chain_checksum(chain_checksum("", {sum}), {sum}));
  // SHA-256 of the canonical form, cut to 128 bits: a known value, so that a change of the form is a new version.
  // (printf 'allot-record-1\n1\n0\ncancel\n{"job":"a","op":"cancel"}' | sha256sum | cut -c1-32)
  EXPECT_EQ(record_checksum(1, 0, "cancel", "{\"job\":\"a\",\"op\":\"cancel\"}"), "fe3704eb25c02ba50e77b98246a5f63e");
}

// The same cases against each store: `sql` runs a statement on the database behind the store's back, `table` is
// the journal's table name there.
class ChecksumCases {
 public:
  virtual ~ChecksumCases() = default;
  virtual std::unique_ptr<Store> open() = 0;
  virtual std::string sql(const std::string& statement) = 0;  // "" when it ran
  virtual std::string table() = 0;

  void write_journal() {
    auto s = open();
    ASSERT_TRUE(s);
    for (const auto& b : journal()) ASSERT_TRUE(s->append(b).ok());
    auto all = load_after(*s, 0);
    ASSERT_TRUE(all.status.ok()) << message(all);
    EXPECT_EQ(all.seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }

  // The case: the submission renamed and its accelerators changed from 1 to 7, valid JSON either way.
  void a_changed_record_is_named() {
    write_journal();
    ASSERT_EQ(sql("UPDATE " + table() + " SET body = replace(replace(body, '\"train-a\"', '\"train-b\"'), "
                  "'\"accelerators\":1}', '\"accelerators\":7}') WHERE seq = 5"),
              "");
    ASSERT_EQ(sql("SELECT 1 FROM " + table() + " WHERE seq = 5 AND body LIKE '%\"accelerators\":7}%' AND body LIKE '%\"train-b\"%'"), "");
    auto s = open();
    auto got = load_after(*s, 0);
    EXPECT_TRUE(says(got, "journal record 5 (submit, job train-b) in the batch from record 4 does not match its checksum"))
        << message(got);
    EXPECT_TRUE(says(got, "Restore the database from a backup")) << message(got);
    // The batches before it were handed over, nothing of its own.
    EXPECT_EQ(got.seqs, (std::vector<uint64_t>{1, 2, 3}));
    // Reading after the damage (from a snapshot past it) does not read it.
    EXPECT_TRUE(load_after(*s, 6).status.ok());
  }

  // A batch removed whole breaks the chain of the next one.
  void a_removed_batch_breaks_the_chain() {
    write_journal();
    ASSERT_EQ(sql("DELETE FROM " + table() + " WHERE seq BETWEEN 4 AND 6"), "");
    auto s = open();
    auto got = load_after(*s, 0);
    EXPECT_TRUE(says(got, "journal record 9 (cancel, job job-9) in the batch from record 7 ends a batch whose chained checksum "
                          "does not match"))
        << message(got);
    EXPECT_EQ(got.seqs, (std::vector<uint64_t>{1, 2, 3}));
  }

  // The last record of the last batch removed: the journal ends inside a batch. The last record of a middle batch
  // removed: the two batches read as one, whose chain does not match.
  void a_removed_batch_end_is_found() {
    write_journal();
    ASSERT_EQ(sql("DELETE FROM " + table() + " WHERE seq = 9"), "");
    {
      auto s = open();
      auto got = load_after(*s, 0);
      EXPECT_TRUE(says(got, "the journal ends inside a batch: records 7 and after")) << message(got);
      EXPECT_EQ(got.seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
    }
    ASSERT_EQ(sql("DELETE FROM " + table() + " WHERE seq = 3"), "");
    auto s = open();
    auto got = load_after(*s, 0);
    EXPECT_TRUE(says(got, "journal record 6 (cancel, job job-6) in the batch from record 1 ends a batch whose chained")) << message(got);
  }

  // Removing a record's checksum is damage too (records written before checksums existed are the only ones
  // without).
  void a_removed_checksum_is_damage() {
    write_journal();
    ASSERT_EQ(sql("UPDATE " + table() + " SET sum = NULL WHERE seq = 8"), "");
    auto s = open();
    auto got = load_after(*s, 0);
    EXPECT_TRUE(says(got, "journal record 8 (cancel, job job-8) in the batch from record 7 has no checksum")) << message(got);
  }

  // Reading from the middle of a batch (a snapshot or a standby's position) still checks the whole batch, and
  // appends after a reopen chain on to what is there.
  void reading_from_any_position_checks_the_batch() {
    write_journal();
    {
      auto s = open();
      EXPECT_EQ(load_after(*s, 5).seqs, (std::vector<uint64_t>{6, 7, 8, 9}));
      ASSERT_TRUE(s->append({{10, 100, Cancel{"job-10"}}}).ok());
      auto all = load_after(*s, 0);
      EXPECT_TRUE(all.status.ok()) << message(all);
      EXPECT_EQ(all.seqs.size(), 10u);
    }
    ASSERT_EQ(sql("UPDATE " + table() + " SET at = 99 WHERE seq = 4"), "");
    auto s = open();
    auto got = load_after(*s, 5);
    EXPECT_TRUE(says(got, "journal record 4 (cancel, job job-4)")) << message(got);
    EXPECT_TRUE(got.seqs.empty());
  }
};

// --- SQLite ---

class StoreChecksumSqlite : public ::testing::Test, public ChecksumCases {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("allot-checksum-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return (dir_ / "allot.db").string(); }
  std::unique_ptr<Store> open() override {
    auto s = SqliteStore::open(db());
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) return nullptr;
    return std::move(*s);
  }
  // A SELECT that finds no row is an error, so that a test can check what a statement did.
  std::string sql(const std::string& statement) override {
    sqlite3* raw = nullptr;
    if (sqlite3_open(db().c_str(), &raw) != SQLITE_OK) return "cannot open";
    int rows = 0;
    char* err = nullptr;
    const int rc = sqlite3_exec(raw, statement.c_str(), [](void* n, int, char**, char**) { return ++*static_cast<int*>(n), 0; },
                                &rows, &err);
    std::string out = rc == SQLITE_OK ? "" : (err ? err : "failed");
    sqlite3_free(err);
    sqlite3_close(raw);
    if (out.empty() && statement.rfind("SELECT", 0) == 0 && rows == 0) out = "no row";
    return out;
  }
  std::string table() override { return "journal"; }
  fs::path dir_;
};

TEST_F(StoreChecksumSqlite, AChangedRecordIsNamed) { a_changed_record_is_named(); }
TEST_F(StoreChecksumSqlite, ARemovedBatchBreaksTheChain) { a_removed_batch_breaks_the_chain(); }
TEST_F(StoreChecksumSqlite, ARemovedBatchEndIsFound) { a_removed_batch_end_is_found(); }
TEST_F(StoreChecksumSqlite, ARemovedChecksumIsDamage) { a_removed_checksum_is_damage(); }
TEST_F(StoreChecksumSqlite, ReadingFromAnyPositionChecksTheBatch) { reading_from_any_position_checks_the_batch(); }

// A journal of format 3 (no checksums) reads after the migration, its records unchecked; the records appended
// after it are checked, and the first of them chains from nothing.
TEST_F(StoreChecksumSqlite, AJournalWithoutChecksumsStillReads) {
  ASSERT_EQ(sql("CREATE TABLE journal (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, kind TEXT NOT NULL, body TEXT NOT NULL);"
                "INSERT INTO journal VALUES (1, 5, 'cancel', '{\"op\":\"cancel\",\"job\":\"old\"}');"
                "INSERT INTO journal VALUES (2, 5, 'cancel', '{\"op\":\"cancel\",\"job\":\"older\"}');"
                "CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);"
                "CREATE TABLE snapshot_parts (seq INTEGER NOT NULL, part INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (seq, part));"
                "ALTER TABLE snapshots ADD COLUMN parts INTEGER NOT NULL DEFAULT 0;"
                "PRAGMA user_version=3;"),
            "");
  {
    auto s = open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->append({{3, 6, Cancel{"new"}}, {4, 6, Cancel{"newer"}}}).ok());
    auto all = load_after(*s, 0);
    EXPECT_TRUE(all.status.ok()) << message(all);
    EXPECT_EQ(all.seqs, (std::vector<uint64_t>{1, 2, 3, 4}));
    EXPECT_EQ(load_after(*s, 1).seqs, (std::vector<uint64_t>{2, 3, 4}));
    EXPECT_EQ(load_after(*s, 3).seqs, (std::vector<uint64_t>{4}));
  }
  EXPECT_EQ(sql("SELECT 1 FROM journal_checks WHERE checked_from = 3"), "");
  // The old records are not checked (they have nothing to check against); the new ones are.
  ASSERT_EQ(sql("UPDATE journal SET body = '{\"op\":\"cancel\",\"job\":\"changed\"}' WHERE seq = 1"), "");
  {
    auto s = open();  // SQLite holds its file exclusively while open
    EXPECT_TRUE(load_after(*s, 0).status.ok());
  }
  ASSERT_EQ(sql("UPDATE journal SET body = '{\"op\":\"cancel\",\"job\":\"changed\"}' WHERE seq = 3"), "");
  auto s = open();
  auto got = load_after(*s, 0);
  EXPECT_TRUE(says(got, "journal record 3 (cancel, job changed) in the batch from record 3 does not match")) << message(got);
  EXPECT_EQ(got.seqs, (std::vector<uint64_t>{1, 2}));
}

// --- PostgreSQL ---

class StoreChecksumPg : public ::testing::Test, public ChecksumCases {
 protected:
  void SetUp() override {
    std::string why;
    bool failed = false;
    auto* pg = testing::PgTestInstance::get(&why, &failed);
    if (!pg) {
      if (failed) FAIL() << why;
      GTEST_SKIP() << "PostgreSQL checksum cases skipped: " << why;
    }
    url_ = pg->fresh_database();
  }
  std::unique_ptr<Store> open() override {
    auto s = PgStore::open(url_);
    EXPECT_TRUE(s.ok()) << s.error().message;
    if (!s) return nullptr;
    auto led = (*s)->try_lead("http://127.0.0.1:1");
    EXPECT_TRUE(led.ok() && *led);
    return std::move(*s);
  }
  std::string sql(const std::string& statement) override {
    if (statement.rfind("SELECT", 0) == 0)
      return testing::PgTestInstance::exec(url_, "DO $$ BEGIN IF NOT EXISTS (" + statement + ") THEN RAISE 'no row'; END IF; END $$");
    return testing::PgTestInstance::exec(url_, statement);
  }
  std::string table() override { return "allot_journal"; }
  std::string url_;
};

TEST_F(StoreChecksumPg, AChangedRecordIsNamed) { a_changed_record_is_named(); }
TEST_F(StoreChecksumPg, ARemovedBatchBreaksTheChain) { a_removed_batch_breaks_the_chain(); }
TEST_F(StoreChecksumPg, ARemovedBatchEndIsFound) { a_removed_batch_end_is_found(); }
TEST_F(StoreChecksumPg, ARemovedChecksumIsDamage) { a_removed_checksum_is_damage(); }
TEST_F(StoreChecksumPg, ReadingFromAnyPositionChecksTheBatch) { reading_from_any_position_checks_the_batch(); }

// A standby follows the leader's journal with load_after from the last record it applied: a record changed after
// the leader wrote it stops the standby there, named, and the records after it are not handed over.
TEST_F(StoreChecksumPg, AStandbyFindsDamageAsItFollows) {
  auto leader = open();
  ASSERT_TRUE(leader);
  auto standby = PgStore::open(url_);
  ASSERT_TRUE(standby.ok()) << standby.error().message;
  const auto batches = journal();
  ASSERT_TRUE(leader->append(batches[0]).ok());
  auto first = load_after(**standby, 0);
  ASSERT_TRUE(first.status.ok()) << message(first);
  ASSERT_EQ(first.seqs.back(), 3u);
  ASSERT_TRUE(leader->append(batches[1]).ok());
  ASSERT_TRUE(leader->append(batches[2]).ok());
  ASSERT_EQ(sql("UPDATE allot_journal SET body = replace(body, '\"train-a\"', '\"train-b\"') WHERE seq = 5"), "");
  auto next = load_after(**standby, 3);
  EXPECT_TRUE(says(next, "journal record 5 (submit, job train-b) in the batch from record 4 does not match its checksum"))
      << message(next);
  EXPECT_TRUE(next.seqs.empty());
  // Appends go on chaining from the journal's end.
  ASSERT_TRUE(leader->append({{10, 100, Cancel{"job-10"}}}).ok());
  EXPECT_TRUE(load_after(**standby, 6).status.ok());
}

// A schema-5 journal (before checksums) reads after the migration; the records appended after are checked.
TEST_F(StoreChecksumPg, AJournalWithoutChecksumsStillReads) {
  {
    auto s = open();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->append(journal()[0]).ok());
  }
  // Back to schema 5 as an older allot left it: no checksums.
  ASSERT_EQ(sql("ALTER TABLE allot_journal DROP COLUMN sum, DROP COLUMN chain; DROP TABLE allot_journal_checks;"
                "UPDATE allot_schema SET version = 5"),
            "");
  auto s = open();
  ASSERT_TRUE(s);
  EXPECT_EQ(sql("SELECT 1 FROM allot_journal_checks WHERE checked_from = 4"), "");
  ASSERT_TRUE(s->append(journal()[1]).ok());
  auto all = load_after(*s, 0);
  EXPECT_TRUE(all.status.ok()) << message(all);
  EXPECT_EQ(all.seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(sql("UPDATE allot_journal SET at = 1 WHERE seq = 6"), "");
  EXPECT_TRUE(says(load_after(*s, 0), "journal record 6 (cancel, job job-6)"));
}

}  // namespace
}  // namespace allot::store::store_checksum_test
