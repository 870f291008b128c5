#include "store/sqlite_store.h"

#include <sqlite3.h>

#include "store/record_json.h"

namespace allot::store {

namespace {
// Bumped when the journal's layout changes in a way older readers cannot read.
constexpr int kSchemaVersion = 1;
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
  for (const char* sql : {"PRAGMA locking_mode=EXCLUSIVE", "PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
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
  if (version == 0) {
    auto st = s->exec(("PRAGMA user_version=" + std::to_string(kSchemaVersion)).c_str());
    if (!st) return st.error();
  } else if (version > kSchemaVersion) {
    return Error::precondition("database " + path + " was written by a newer allot (journal format " +
                               std::to_string(version) + ", this version reads " + std::to_string(kSchemaVersion) + ")");
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

}  // namespace allot::store
