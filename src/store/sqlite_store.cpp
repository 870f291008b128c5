#include "store/sqlite_store.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>

#include <sqlite3.h>

#include "store/journal_checksum.h"
#include "store/record_json.h"
#include "store/snapshot_parts.h"

namespace allot::store {

Status SqliteStore::check_space() {
  std::string dir = std::filesystem::path(path_).parent_path().string();
  if (dir.empty()) dir = ".";
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return ok_status();  // cannot tell: the next write will
  const uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free >= kMinFreeBytes) return ok_status();
  return Error::internal("no space left for the journal: " + std::to_string(free) + " bytes free in " + dir +
                         " (fewer than " + std::to_string(kMinFreeBytes) + ")");
}

namespace {
// Bumped when the journal's layout changes in a way older readers cannot read. 2: snapshots. 3: snapshots in parts.
// 4: checksums (journal_checksum.h).
constexpr int kSchemaVersion = 4;

// Migration i (counting from 1) takes the file from version i-1 to version i. A migration that has shipped is
// never edited: a change of layout is a new one at the end. (The journal table itself is created on open.)
const std::vector<std::vector<const char*>> kSqliteMigrations = {
    // 1: the journal alone.
    {},
    // 2: snapshots of the state at a journal position (store.h, Snapshot), the body in one row.
    {"CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)"},
    // 3: a snapshot's body in parts (snapshot_parts.h); `parts` = 0 keeps a version 2 snapshot readable.
    {"CREATE TABLE snapshot_parts (seq INTEGER NOT NULL, part INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (seq, part))",
     "ALTER TABLE snapshots ADD COLUMN parts INTEGER NOT NULL DEFAULT 0"},
    // 4: each record's checksum and, on the last record of each batch, the batch's chained one
    // (journal_checksum.h); the records already there have none, and every record from `checked_from` on must.
    {"ALTER TABLE journal ADD COLUMN sum TEXT", "ALTER TABLE journal ADD COLUMN chain TEXT",
     "CREATE TABLE journal_checks (checked_from INTEGER NOT NULL)",
     "INSERT INTO journal_checks (checked_from) SELECT COALESCE(MAX(seq), 0) + 1 FROM journal"},
};
}  // namespace

Error SqliteStore::error(const std::string& what) const {
  return Error::internal("database " + path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "cannot open"));
}

Status SqliteStore::exec(const char* sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string m = msg ? msg : "unknown error";
    sqlite3_free(msg);
    return Error::internal("database " + path_ + ": " + sql + ": " + m);
  }
  return ok_status();
}

Result<std::unique_ptr<SqliteStore>> SqliteStore::open(const std::string& path, SqliteOptions options) {
  std::unique_ptr<SqliteStore> s(new SqliteStore(path, std::move(options)));
  if (sqlite3_open_v2(path.c_str(), &s->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    return s->error("cannot open");
  sqlite3_busy_timeout(s->db_, 200);
  // Exclusive locking is taken by the first write below and kept: a second server on the same file fails
  // here rather than interleaving its journal with ours. In exclusive mode WAL needs no shared memory file.
  // A WAL checkpoint runs inside the commit that crosses wal_autocheckpoint pages, before that batch is answered,
  // and takes time in proportion to the pages it copies (at SQLite's default of 1,000 pages, 40-145 ms under load
  // in bench/loadgen_bench): at 200 pages there are five times as many, each a fifth as long, so the batches
  // that carry one wait less.
  for (const char* sql : {"PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
                          "PRAGMA wal_autocheckpoint=200",
                          "BEGIN IMMEDIATE",
                          "CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, "
                          "kind TEXT NOT NULL, body TEXT NOT NULL)",
                          "COMMIT"}) {
    auto st = s->exec(sql);
    if (!st) {
      if (sqlite3_errcode(s->db_) == SQLITE_BUSY || sqlite3_errcode(s->db_) == SQLITE_LOCKED)
        return Error::precondition("database " + path + " is in use by another allot server");
      return st.error();
    }
  }
  sqlite3_stmt* v = nullptr;
  int version = 0;
  if (sqlite3_prepare_v2(s->db_, "PRAGMA user_version", -1, &v, nullptr) == SQLITE_OK && sqlite3_step(v) == SQLITE_ROW)
    version = sqlite3_column_int(v, 0);
  sqlite3_finalize(v);
  if (version > kSchemaVersion)
    return Error::precondition("database " + path + " was written by a newer allot (journal format " +
                               std::to_string(version) + ", this version reads " + std::to_string(kSchemaVersion) + ")");
  if (version < kSchemaVersion) {
    // Every step from the file's version to this one's, in one transaction with the version they reach.
    if (auto st = s->exec("BEGIN IMMEDIATE"); !st) return st.error();
    std::vector<std::string> steps;
    for (int m = version; m < kSchemaVersion; ++m)
      for (const char* sql : kSqliteMigrations[m]) steps.emplace_back(sql);
    steps.push_back("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    for (const std::string& sql : steps)
      if (auto st = s->exec(sql.c_str()); !st) {
        (void)s->exec("ROLLBACK");
        return st.error();
      }
    if (auto st = s->exec("COMMIT"); !st) {
      (void)s->exec("ROLLBACK");
      return st.error();
    }
  }
  if (sqlite3_prepare_v2(s->db_, "INSERT INTO journal (seq, at, kind, body, sum, chain) VALUES (?, ?, ?, ?, ?, ?)", -1,
                         &s->insert_, nullptr) != SQLITE_OK)
    return s->error("cannot prepare the insert");
  if (sqlite3_prepare_v2(s->db_, "SELECT checked_from FROM journal_checks", -1, &v, nullptr) != SQLITE_OK ||
      sqlite3_step(v) != SQLITE_ROW) {
    sqlite3_finalize(v);
    return s->error("cannot read journal_checks (the journal's checksums start)");
  }
  s->checked_from_ = static_cast<uint64_t>(sqlite3_column_int64(v, 0));
  sqlite3_finalize(v);
  return s;
}

SqliteStore::~SqliteStore() {
  sqlite3_finalize(insert_);
  sqlite3_close(db_);
}

Status SqliteStore::append(const std::vector<Record>& batch) {
  if (batch.empty()) return ok_status();
  // Serialize before taking the lock and opening the transaction: the transaction holds only the writes.
  auto encoded = record_bodies(batch);
  if (!encoded) return encoded.error();
  const std::vector<std::string>& bodies = *encoded;
  std::vector<RecordKey> keys;
  keys.reserve(batch.size());
  for (const Record& r : batch) keys.push_back({r.seq, r.at, op_name(r.op)});
  auto lock = appends_first_.lock(mu_);
  if (!last_chain_) {
    auto chain = last_chain_locked();
    if (!chain) return chain.error();
    last_chain_ = std::move(*chain);
  }
  const BatchSums sums = seal_batch(*last_chain_, keys, bodies);
  auto st = exec("BEGIN IMMEDIATE");
  if (!st) return st;
  for (size_t i = 0; i < batch.size(); ++i) {
    Status rec = options_.fault_before_insert ? options_.fault_before_insert(i) : ok_status();
    if (rec) {
      sqlite3_reset(insert_);
      sqlite3_bind_int64(insert_, 1, static_cast<sqlite3_int64>(batch[i].seq));
      sqlite3_bind_int64(insert_, 2, batch[i].at);
      sqlite3_bind_text(insert_, 3, op_name(batch[i].op), -1, SQLITE_STATIC);
      sqlite3_bind_text(insert_, 4, bodies[i].data(), static_cast<int>(bodies[i].size()), SQLITE_STATIC);
      sqlite3_bind_text(insert_, 5, sums.records[i].data(), static_cast<int>(sums.records[i].size()), SQLITE_STATIC);
      if (i + 1 == batch.size())
        sqlite3_bind_text(insert_, 6, sums.chain.data(), static_cast<int>(sums.chain.size()), SQLITE_STATIC);
      else
        sqlite3_bind_null(insert_, 6);
      if (sqlite3_step(insert_) != SQLITE_DONE) rec = error("cannot append record " + std::to_string(batch[i].seq));
    }
    if (!rec) {
      sqlite3_reset(insert_);
      (void)exec("ROLLBACK");
      return rec;
    }
  }
  sqlite3_reset(insert_);
  st = exec("COMMIT");
  if (!st) {
    (void)exec("ROLLBACK");
    last_chain_.reset();  // read again before the next batch
    return st;
  }
  last_chain_ = sums.chain;
  return ok_status();
}

Result<std::string> SqliteStore::last_chain_locked() {
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT chain FROM journal WHERE chain IS NOT NULL ORDER BY seq DESC LIMIT 1", -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the journal's last checksum");
  std::string chain;
  const int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) chain = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("cannot read the journal's last checksum");
  return chain;
}

Status SqliteStore::load_after(uint64_t after, const std::function<Status(const Record&)>& fn) {
  std::lock_guard lock(mu_);
  // Reading starts at the batch that holds record `after` + 1, after the last batch end at or before `after`, so
  // that its chain can be checked (journal_checksum.h); records up to `after` are checked, not handed over.
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT seq, chain FROM journal WHERE seq <= ? AND seq >= ? AND chain IS NOT NULL ORDER BY seq DESC LIMIT 1",
                         -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the journal");
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(after));
  sqlite3_bind_int64(q, 2, static_cast<sqlite3_int64>(checked_from_));
  uint64_t start = std::min(after + 1, checked_from_);
  std::string chain;
  int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    start = static_cast<uint64_t>(sqlite3_column_int64(q, 0)) + 1;
    chain = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("cannot read the journal");
  if (sqlite3_prepare_v2(db_, "SELECT seq, at, kind, body, sum, chain FROM journal WHERE seq >= ? ORDER BY seq", -1, &q,
                         nullptr) != SQLITE_OK)
    return error("cannot read the journal");
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(start));
  JournalReader reader(path_, std::move(chain), checked_from_, after, fn);
  auto text = [&](int col) {
    const char* t = reinterpret_cast<const char*>(sqlite3_column_text(q, col));
    return t ? std::string_view(t, static_cast<size_t>(sqlite3_column_bytes(q, col))) : std::string_view();
  };
  Status result = ok_status();
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    result = reader.row({.seq = static_cast<uint64_t>(sqlite3_column_int64(q, 0)),
                         .at = sqlite3_column_int64(q, 1),
                         .kind = text(2),
                         .body = text(3),
                         .sum = text(4),
                         .chain = text(5)});
    if (!result) break;
  }
  if (result && rc != SQLITE_DONE) result = error("cannot read the journal");
  if (result) result = reader.end();
  sqlite3_finalize(q);
  return result;
}

Result<uint64_t> SqliteStore::journal_end_locked() {
  sqlite3_stmt* q = nullptr;
  sqlite3_int64 last = 0;
  if (sqlite3_prepare_v2(db_, "SELECT COALESCE(MAX(seq), 0) FROM journal", -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the journal's end");
  if (sqlite3_step(q) == SQLITE_ROW) last = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return static_cast<uint64_t>(last);
}

// One statement with integer parameters and an optional text one, in a transaction of its own unless `in_txn`.
Status SqliteStore::write_locked(const char* sql, std::initializer_list<int64_t> ints, std::optional<std::string_view> text,
                                 bool in_txn) {
  if (!in_txn)
    if (auto st = exec("BEGIN IMMEDIATE"); !st) return st;
  sqlite3_stmt* q = nullptr;
  Status st = ok_status();
  if (sqlite3_prepare_v2(db_, sql, -1, &q, nullptr) != SQLITE_OK) {
    st = error(std::string("cannot prepare ") + sql);
  } else {
    int i = 1;
    for (int64_t v : ints) sqlite3_bind_int64(q, i++, v);
    if (text) sqlite3_bind_text(q, i, text->data(), static_cast<int>(text->size()), SQLITE_STATIC);
    if (sqlite3_step(q) != SQLITE_DONE) st = error(std::string("cannot run ") + sql);
  }
  sqlite3_finalize(q);
  if (!in_txn) {
    if (st) st = exec("COMMIT");
    if (!st) (void)exec("ROLLBACK");
  }
  return st;
}

Status SqliteStore::put_snapshot(uint64_t seq, const std::string& body) {
  const auto seq_arg = static_cast<int64_t>(seq);
  auto past_end = [&](uint64_t end) {
    return Error::invalid("snapshot at record " + std::to_string(seq) + " is past the journal's end (" + std::to_string(end) + ")");
  };
  {
    std::lock_guard lock(mu_);
    auto end = journal_end_locked();
    if (!end) return end.error();
    if (seq > *end) return past_end(*end);
    // One at the same position holds the same state: rewriting its parts in place could only tear it.
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, "SELECT 1 FROM snapshots WHERE seq = ?", -1, &q, nullptr) != SQLITE_OK)
      return error("cannot read the snapshots");
    sqlite3_bind_int64(q, 1, seq_arg);
    const bool exists = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    if (exists) return ok_status();
  }
  // Each part in its own transaction, the lock let go in between, so that appends go on while the parts are written.
  auto parts = write_parts(body, options_.snapshot_part_bytes, options_.before_snapshot_part, appends_first_, mu_,
                            [&](size_t i, std::string_view text) {
                              return write_locked("INSERT OR REPLACE INTO snapshot_parts (seq, part, body) VALUES (?, ?, ?)",
                                                  {seq_arg, static_cast<int64_t>(i)}, text, /*in_txn=*/false);
                            });
  if (!parts) return parts.error();
  {
    // The snapshot exists from this commit on, whole; older ones beyond kSnapshotsKept go with it. The journal's
    // end is not read again: it was at least `seq` above, and only grows (appends insert, nothing deletes, and this
    // process alone has the file open).
    appends_first_.let_appends_go();
    std::lock_guard lock(mu_);
    if (auto st = exec("BEGIN IMMEDIATE"); !st) return st;
    auto fail = [this](Error e) -> Status {
      (void)exec("ROLLBACK");
      return e;
    };
    const auto n = static_cast<int64_t>(*parts);
    if (auto st = write_locked("DELETE FROM snapshot_parts WHERE seq = ? AND part >= ?", {seq_arg, n}, std::nullopt, true); !st)
      return fail(st.error());
    if (auto st = write_locked("INSERT OR REPLACE INTO snapshots (seq, body, parts) VALUES (?, '', ?)", {seq_arg, n}, std::nullopt, true);
        !st)
      return fail(st.error());
    const std::string prune = "DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT " +
                              std::to_string(kSnapshotsKept) + ")";
    if (auto st = exec(prune.c_str()); !st) return fail(st.error());
    if (auto st = exec("COMMIT"); !st) return fail(st.error());
  }
  // The parts of dropped snapshots, and of any whose writing stopped before its last step, one part per
  // transaction for the same reason as above. Only this server writes snapshots, one at a time (the file is
  // opened exclusively), so no part deleted here belongs to a snapshot being written.
  for (;;) {
    appends_first_.let_appends_go();
    std::lock_guard lock(mu_);
    if (auto st = write_locked("DELETE FROM snapshot_parts WHERE rowid IN (SELECT rowid FROM snapshot_parts "
                               "WHERE seq NOT IN (SELECT seq FROM snapshots) LIMIT 1)",
                               {}, std::nullopt, /*in_txn=*/false);
        !st)
      return st;
    if (sqlite3_changes(db_) == 0) break;
  }
  return ok_status();
}

Result<std::optional<Snapshot>> SqliteStore::latest_snapshot() {
  std::lock_guard lock(mu_);
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT seq, body, parts FROM snapshots ORDER BY seq DESC LIMIT 1", -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the snapshots");
  std::optional<Snapshot> out;
  int64_t parts = 0;
  const int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
    out = Snapshot{static_cast<uint64_t>(sqlite3_column_int64(q, 0)),
                   std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(q, 1)))};
    parts = sqlite3_column_int64(q, 2);
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("cannot read the snapshots");
  if (!out || parts == 0) return out;  // none, or one written whole (journal format 2)
  if (sqlite3_prepare_v2(db_, "SELECT part, body FROM snapshot_parts WHERE seq = ? ORDER BY part", -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the snapshot's parts");
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(out->seq));
  std::vector<std::pair<int64_t, std::string>> read;
  int step;
  while ((step = sqlite3_step(q)) == SQLITE_ROW) {
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
    read.emplace_back(sqlite3_column_int64(q, 0), std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(q, 1))));
  }
  sqlite3_finalize(q);
  if (step != SQLITE_DONE) return error("cannot read the snapshot's parts");
  auto body = join_snapshot(out->seq, static_cast<size_t>(parts), read);
  if (!body) return body.error();
  out->body = std::move(*body);
  return out;
}

}  // namespace allot::store
