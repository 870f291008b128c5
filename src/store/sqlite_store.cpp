#include "store/sqlite_store.h"

#include <sqlite3.h>

#include "store/record_json.h"

namespace allot::store {

namespace {
// Bumped when the journal's layout changes in a way older readers cannot read. 2: snapshots.
constexpr int kSchemaVersion = 2;
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
    // Migrations from 0 (a new file) or 1 (the journal alone), in one transaction with the version they reach.
    for (const char* sql : {"BEGIN IMMEDIATE", "CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)"})
      if (auto st = s->exec(sql); !st) return st.error();
    for (const std::string& sql : {"PRAGMA user_version=" + std::to_string(kSchemaVersion), std::string("COMMIT")})
      if (auto st = s->exec(sql.c_str()); !st) {
        (void)s->exec("ROLLBACK");
        return st.error();
      }
  }
  if (sqlite3_prepare_v2(s->db_, "INSERT INTO journal (seq, at, kind, body) VALUES (?, ?, ?, ?)", -1, &s->insert_,
                         nullptr) != SQLITE_OK)
    return s->error("cannot prepare the insert");
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
  std::lock_guard lock(mu_);
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
    return st;
  }
  return ok_status();
}

Status SqliteStore::load_after(uint64_t after, const std::function<Status(const Record&)>& fn) {
  std::lock_guard lock(mu_);
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT seq, at, body FROM journal WHERE seq > ? ORDER BY seq", -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the journal");
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(after));
  Status result = ok_status();
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    auto seq = static_cast<uint64_t>(sqlite3_column_int64(q, 0));
    Time at = sqlite3_column_int64(q, 1);
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 2));
    auto r = record_from_row(seq, at, text ? text : "", path_);
    if (!r) {
      result = r.error();
      break;
    }
    result = fn(*r);
    if (!result) break;
  }
  if (result && rc != SQLITE_DONE) result = error("cannot read the journal");
  sqlite3_finalize(q);
  return result;
}

Status SqliteStore::put_snapshot(uint64_t seq, const std::string& body) {
  std::lock_guard lock(mu_);
  auto st = exec("BEGIN IMMEDIATE");
  if (!st) return st;
  auto fail = [this](Error e) -> Status {
    (void)exec("ROLLBACK");
    return e;
  };
  sqlite3_stmt* q = nullptr;
  sqlite3_int64 last = 0;
  if (sqlite3_prepare_v2(db_, "SELECT COALESCE(MAX(seq), 0) FROM journal", -1, &q, nullptr) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
    last = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  if (seq > static_cast<uint64_t>(last))
    return fail(Error::invalid("snapshot at record " + std::to_string(seq) + " is past the journal's end (" + std::to_string(last) + ")"));
  if (sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO snapshots (seq, body) VALUES (?, ?)", -1, &q, nullptr) != SQLITE_OK)
    return fail(error("cannot prepare the snapshot insert"));
  sqlite3_bind_int64(q, 1, static_cast<sqlite3_int64>(seq));
  sqlite3_bind_text(q, 2, body.data(), static_cast<int>(body.size()), SQLITE_STATIC);
  const int rc = sqlite3_step(q);
  sqlite3_finalize(q);
  if (rc != SQLITE_DONE) return fail(error("cannot write the snapshot at record " + std::to_string(seq)));
  const std::string prune = "DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT " +
                            std::to_string(kSnapshotsKept) + ")";
  if (st = exec(prune.c_str()); !st) return fail(st.error());
  if (st = exec("COMMIT"); !st) return fail(st.error());
  return ok_status();
}

Result<std::optional<Snapshot>> SqliteStore::latest_snapshot() {
  std::lock_guard lock(mu_);
  sqlite3_stmt* q = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT seq, body FROM snapshots ORDER BY seq DESC LIMIT 1", -1, &q, nullptr) != SQLITE_OK)
    return error("cannot read the snapshots");
  std::optional<Snapshot> out;
  const int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(q, 1));
    out = Snapshot{static_cast<uint64_t>(sqlite3_column_int64(q, 0)),
                   std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(q, 1)))};
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return error("cannot read the snapshots");
  return out;
}

}  // namespace allot::store
