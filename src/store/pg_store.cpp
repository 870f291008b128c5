#include "store/pg_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <thread>

#include "store/journal_checksum.h"
#include "store/record_json.h"
#include "store/snapshot_parts.h"

namespace allot::store {

namespace {

// Advisory lock keys (below 2^31, so pg_locks shows them as classid 0, objid KEY, objsubid 1).
constexpr int64_t kLeaderLock = 0x616c6c6f;     // "allo": held by the leader's session for as long as it leads
constexpr int64_t kMigrationLock = 0x616c6c70;  // held by the transaction that migrates the schema

// Migration i (counting from 1) takes the schema from version i-1 to version i. A migration that has shipped
// is never edited: a change of layout is a new one at the end.
const std::vector<std::vector<const char*>> kMigrations = {
    // 1: the journal, as SQLite keeps it.
    {"CREATE TABLE allot_journal (seq bigint PRIMARY KEY, at bigint NOT NULL, kind text NOT NULL, body text NOT NULL)"},
    // 2: who leads: the epoch each new leader bumps (the fencing token its appends check) and its URL.
    {"CREATE TABLE allot_leader (id integer PRIMARY KEY CHECK (id = 1), epoch bigint NOT NULL, url text NOT NULL, "
     "since timestamptz NOT NULL DEFAULT now())",
     "INSERT INTO allot_leader (id, epoch, url) VALUES (1, 0, '')"},
    // 3: snapshots of the state at a journal position (store.h, Snapshot).
    {"CREATE TABLE allot_snapshots (seq bigint PRIMARY KEY, body text NOT NULL)"},
    // 4: a snapshot's body in parts (snapshot_parts.h); `parts` = 0 keeps a version 3 snapshot readable.
    {"CREATE TABLE allot_snapshot_parts (seq bigint NOT NULL, part integer NOT NULL, body text NOT NULL, PRIMARY KEY (seq, part))",
     "ALTER TABLE allot_snapshots ADD COLUMN parts integer NOT NULL DEFAULT 0"},
    // 5: the leader's lease (pg_store.h): until when it holds, and the backend of its session.
    {"ALTER TABLE allot_leader ADD COLUMN lease_until timestamptz NOT NULL DEFAULT now(), "
     "ADD COLUMN backend_pid integer NOT NULL DEFAULT 0"},
    // 6: each record's checksum and, on the last record of each batch, the batch's chained one
    // (journal_checksum.h); the records already there have none, and every record from `checked_from` on must.
    {"ALTER TABLE allot_journal ADD COLUMN sum text, ADD COLUMN chain text",
     "CREATE TABLE allot_journal_checks (checked_from bigint NOT NULL)",
     "INSERT INTO allot_journal_checks (checked_from) SELECT COALESCE(MAX(seq), 0) + 1 FROM allot_journal"},
};

constexpr int kJournalPage = 5000;  // records fetched per query while loading

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

std::string conn_message(pg_conn* c) {
  std::string m = c ? PQerrorMessage(c) : "no connection";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m.empty() ? "unknown error" : m;
}

// Runs one statement with text parameters; an error names what was being done and PostgreSQL's message.
Result<PgResult> run(pg_conn* c, const std::string& where, const std::string& sql, const std::vector<std::string>& params = {}) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p.c_str());
  PgResult r(PQexecParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
  const auto status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    return Error::internal("database " + where + ": " + sql.substr(0, 60) + (sql.size() > 60 ? "..." : "") + ": " +
                           conn_message(c));
  return r;
}

bool connection_ok(pg_conn* c) { return c && PQstatus(c) == CONNECTION_OK; }

}  // namespace

std::string url_without_password(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto at = url.find('@', scheme + 3);
  const auto slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  const auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon) + url.substr(at);
}

int PgStore::schema_version() { return static_cast<int>(kMigrations.size()); }

PgStore::PgStore(std::string url, PgOptions options)
    : url_(std::move(url)), described_(url_without_password(url_)), options_(std::move(options)) {}

PgStore::~PgStore() {
  if (conn_) PQfinish(conn_);
}

Status PgStore::connect_locked() {
  if (connection_ok(conn_)) return ok_status();
  if (conn_) PQfinish(conn_);
  // Defaults first, then the URL, whose own parameters override them (expand_dbname). Keepalives on both ends
  // bound how long a leader cut off from the database keeps its lock: PostgreSQL ends a session whose peer
  // stopped answering after about 5 + 3 * 2 seconds, and with it the lock.
  const char* keys[] = {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
                        "application_name", "options", "dbname", nullptr};
  const char* values[] = {"10", "1", "5", "2", "3", "allot server",
                          "-c tcp_keepalives_idle=5 -c tcp_keepalives_interval=2 -c tcp_keepalives_count=3",
                          url_.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!connection_ok(conn_)) {
    std::string m = conn_message(conn_);
    PQfinish(conn_);
    conn_ = nullptr;
    return Error::internal("cannot connect to PostgreSQL at " + described_ + ": " + m);
  }
  // Notices ("relation ... already exists, skipping") are not errors; libpq would print them on stderr.
  PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
  // Acknowledged means committed: whatever the database's default, this session waits for each commit to be
  // flushed (and sent to synchronous standbys where the database has them).
  for (const char* sql : {"SET synchronous_commit = on", "SET client_encoding = 'UTF8'"})
    if (auto r = run(conn_, described_, sql); !r) return r.error();
  return ok_status();
}

void PgStore::lose_session_locked() {
  leading_ = false;
  if (conn_) PQfinish(conn_);  // also releases the advisory lock if the session still had it
  conn_ = nullptr;
}

Status PgStore::migrate_locked() {
  auto fail = [this](const Error& e) -> Status {
    (void)run(conn_, described_, "ROLLBACK");
    return e;
  };
  if (auto r = run(conn_, described_, "BEGIN"); !r) return r.error();
  if (auto r = run(conn_, described_, "SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLock) + ")"); !r) return fail(r.error());
  if (auto r = run(conn_, described_, "CREATE TABLE IF NOT EXISTS allot_schema (version integer NOT NULL)"); !r) return fail(r.error());
  auto v = run(conn_, described_, "SELECT version FROM allot_schema");
  if (!v) return fail(v.error());
  int version = 0;
  if (PQntuples(v->get()) == 0) {
    if (auto r = run(conn_, described_, "INSERT INTO allot_schema (version) VALUES (0)"); !r) return fail(r.error());
  } else {
    version = std::atoi(PQgetvalue(v->get(), 0, 0));
  }
  const int latest = schema_version();
  if (version > latest)
    return fail(Error::precondition("database " + described_ + " was written by a newer allot (journal schema " +
                                    std::to_string(version) + ", this version reads up to " + std::to_string(latest) + ")"));
  for (int m = version; m < latest; ++m)
    for (const char* sql : kMigrations[m])
      if (auto r = run(conn_, described_, sql); !r)
        return fail(Error::internal("migrating to schema " + std::to_string(m + 1) + ": " + r.error().message));
  if (auto r = run(conn_, described_, "UPDATE allot_schema SET version = " + std::to_string(latest)); !r) return fail(r.error());
  if (auto r = run(conn_, described_, "COMMIT"); !r) return r.error();
  return ok_status();
}

Result<std::unique_ptr<PgStore>> PgStore::open(const std::string& url, PgOptions options) {
  std::unique_ptr<PgStore> s(new PgStore(url, std::move(options)));
  std::lock_guard lock(s->mu_);
  if (auto st = s->connect_locked(); !st) return st.error();
  if (auto st = s->migrate_locked(); !st) return st.error();
  auto from = run(s->conn_, s->described_, "SELECT checked_from FROM allot_journal_checks");
  if (!from) return from.error();
  if (PQntuples(from->get()) != 1) return Error::internal("database " + s->described_ + ": allot_journal_checks has no row");
  s->checked_from_ = std::strtoull(PQgetvalue(from->get(), 0, 0), nullptr, 10);
  return s;
}

Status PgStore::fail_write_locked(const Error& e) {
  // Roll back, or, when the session itself is gone, stop leading for good. A commit whose answer was lost may or
  // may not have happened; it was not acknowledged either way.
  last_chain_.reset();
  if (connection_ok(conn_)) (void)run(conn_, described_, "ROLLBACK");
  if (!connection_ok(conn_)) {
    lose_session_locked();
    return Error::internal(e.message + " (the connection to the database was lost; this server no longer leads)");
  }
  return e;
}

Status PgStore::begin_fenced_locked() {
  if (!leading_ || !connection_ok(conn_)) {
    if (leading_) lose_session_locked();
    return Error::precondition("database " + described_ +
                               ": this server does not lead (another allot server writes the journal, or this one lost "
                               "its session); nothing was written");
  }
  if (auto r = run(conn_, described_, "BEGIN"); !r) return fail_write_locked(r.error());
  // The fence: the row lock keeps a new leader from bumping the epoch until this transaction ends, and a
  // changed epoch means another server took over: this one must not write.
  auto e = run(conn_, described_, "SELECT epoch FROM allot_leader WHERE id = 1 FOR SHARE");
  if (!e) return fail_write_locked(e.error());
  const int64_t epoch = PQntuples(e->get()) == 1 ? std::atoll(PQgetvalue(e->get(), 0, 0)) : -1;
  if (epoch != epoch_) {
    (void)run(conn_, described_, "ROLLBACK");
    (void)run(conn_, described_, "SELECT pg_advisory_unlock_all()");
    leading_ = false;
    return Error::precondition("database " + described_ + ": this server lost the lead (epoch " + std::to_string(epoch_) +
                               ", now " + std::to_string(epoch) + "); nothing was written");
  }
  return ok_status();
}

Status PgStore::put_snapshot(uint64_t seq, const std::string& body) {
  const std::string seq_text = std::to_string(seq);
  // Checks, inside a fenced transaction, that the journal holds record `seq`; true when a snapshot there exists.
  auto check_locked = [&]() -> Result<bool> {
    auto last = run(conn_, described_, "SELECT COALESCE(MAX(seq), 0) FROM allot_journal");
    if (!last) return last.error();
    const auto end = static_cast<uint64_t>(std::strtoull(PQgetvalue(last->get(), 0, 0), nullptr, 10));
    if (seq > end)
      return Error::invalid("snapshot at record " + seq_text + " is past the journal's end (" + std::to_string(end) + ")");
    auto there = run(conn_, described_, "SELECT 1 FROM allot_snapshots WHERE seq = $1::bigint", {seq_text});
    if (!there) return there.error();
    return PQntuples(there->get()) > 0;
  };
  {
    std::lock_guard lock(mu_);
    if (auto st = begin_fenced_locked(); !st) return st;
    auto exists = check_locked();
    if (!exists) return fail_write_locked(exists.error());
    if (auto r = run(conn_, described_, "COMMIT"); !r) return fail_write_locked(r.error());
    // One at the same position holds the same state: rewriting its parts in place could only tear it.
    if (*exists) return ok_status();
  }
  // Each part in its own fenced transaction, the lock let go in between, so that appends go on meanwhile.
  auto parts = write_parts(body, options_.snapshot_part_bytes, options_.before_snapshot_part, appends_first_, mu_,
                            [&](size_t i, std::string_view text) -> Status {
                              if (auto st = begin_fenced_locked(); !st) return st;
                              if (auto r = run(conn_, described_,
                                               "INSERT INTO allot_snapshot_parts (seq, part, body) VALUES ($1::bigint, $2::integer, $3) "
                                               "ON CONFLICT (seq, part) DO UPDATE SET body = EXCLUDED.body",
                                               {seq_text, std::to_string(i), std::string(text)});
                                  !r)
                                return fail_write_locked(r.error());
                              if (auto r = run(conn_, described_, "COMMIT"); !r) return fail_write_locked(r.error());
                              return ok_status();
                            });
  if (!parts) return parts.error();
  {
    // The snapshot exists from this commit on, whole; older ones beyond kSnapshotsKept go with it.
    appends_first_.let_appends_go();
    std::lock_guard lock(mu_);
    if (auto st = begin_fenced_locked(); !st) return st;
    if (auto exists = check_locked(); !exists) return fail_write_locked(exists.error());
    const std::string n = std::to_string(*parts);
    for (const auto& [sql, params] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"DELETE FROM allot_snapshot_parts WHERE seq = $1::bigint AND part >= $2::integer", {seq_text, n}},
             {"INSERT INTO allot_snapshots (seq, body, parts) VALUES ($1::bigint, '', $2::integer) "
              "ON CONFLICT (seq) DO UPDATE SET body = EXCLUDED.body, parts = EXCLUDED.parts",
              {seq_text, n}},
             {"DELETE FROM allot_snapshots WHERE seq NOT IN (SELECT seq FROM allot_snapshots ORDER BY seq DESC LIMIT " +
                  std::to_string(kSnapshotsKept) + ")",
              {}}})
      if (auto r = run(conn_, described_, sql, params); !r) return fail_write_locked(r.error());
    if (auto r = run(conn_, described_, "COMMIT"); !r) return fail_write_locked(r.error());
  }
  // The parts of dropped snapshots, and of any whose writing stopped before its last step, one part per
  // transaction. Only the leader writes snapshots, one at a time, so no part deleted here belongs to a snapshot
  // being written (a deposed leader's next part is refused by the fence).
  for (;;) {
    appends_first_.let_appends_go();
    std::lock_guard lock(mu_);
    if (auto st = begin_fenced_locked(); !st) return st;
    auto r = run(conn_, described_,
                 "DELETE FROM allot_snapshot_parts WHERE (seq, part) IN (SELECT seq, part FROM allot_snapshot_parts "
                 "WHERE seq NOT IN (SELECT seq FROM allot_snapshots) LIMIT 1)");
    if (!r) return fail_write_locked(r.error());
    const bool deleted = std::atoi(PQcmdTuples(r->get())) > 0;
    if (auto c = run(conn_, described_, "COMMIT"); !c) return fail_write_locked(c.error());
    if (!deleted) break;
  }
  return ok_status();
}

Result<std::optional<Snapshot>> PgStore::latest_snapshot() {
  std::lock_guard lock(mu_);
  if (!connection_ok(conn_)) {
    if (leading_) lose_session_locked();
    if (auto st = connect_locked(); !st) return st.error();
  }
  // One statement, so the row and its parts are read from the same database snapshot even while a leader prunes.
  auto r = run(conn_, described_,
               "WITH s AS (SELECT seq, body, parts FROM allot_snapshots ORDER BY seq DESC LIMIT 1) "
               "SELECT s.seq, s.body, s.parts, p.part, p.body FROM s LEFT JOIN allot_snapshot_parts p ON p.seq = s.seq "
               "ORDER BY p.part");
  if (!r) return Error::internal("cannot read the snapshots: " + r.error().message);
  const int rows = PQntuples(r->get());
  if (rows == 0) return std::optional<Snapshot>();
  PGresult* res = r->get();
  Snapshot out{static_cast<uint64_t>(std::strtoull(PQgetvalue(res, 0, 0), nullptr, 10)),
               std::string(PQgetvalue(res, 0, 1), PQgetlength(res, 0, 1))};
  const auto expected = static_cast<size_t>(std::atoll(PQgetvalue(res, 0, 2)));
  if (expected == 0) return std::optional<Snapshot>(std::move(out));  // written whole (schema 3)
  std::vector<std::pair<int64_t, std::string>> parts;
  for (int i = 0; i < rows; ++i)
    if (!PQgetisnull(res, i, 3)) parts.emplace_back(std::atoll(PQgetvalue(res, i, 3)), std::string(PQgetvalue(res, i, 4), PQgetlength(res, i, 4)));
  auto body = join_snapshot(out.seq, expected, parts);
  if (!body) return body.error();
  out.body = std::move(*body);
  return std::optional<Snapshot>(std::move(out));
}

Status PgStore::append(const std::vector<Record>& batch) {
  if (batch.empty()) return ok_status();
  auto encoded = record_bodies(batch);
  if (!encoded) return encoded.error();
  const std::vector<std::string>& bodies = *encoded;
  std::vector<RecordKey> keys;
  keys.reserve(batch.size());
  for (const Record& r : batch) keys.push_back({r.seq, r.at, op_name(r.op)});
  BatchSums sums = seal_batch("", keys, bodies);  // the chain is sealed again once the previous one is known
  auto lock = appends_first_.lock(mu_);
  auto fail = [this](const Error& e) -> Status { return fail_write_locked(e); };
  if (auto st = begin_fenced_locked(); !st) return st;
  if (!last_chain_) {
    // Inside the fenced transaction: nobody else appends while this store leads.
    auto c = run(conn_, described_, "SELECT chain FROM allot_journal WHERE chain IS NOT NULL ORDER BY seq DESC LIMIT 1");
    if (!c) return fail(c.error());
    last_chain_ = PQntuples(c->get()) == 1 ? std::string(PQgetvalue(c->get(), 0, 0)) : std::string();
  }
  sums.chain = chain_checksum(*last_chain_, sums.records);
  std::string sql;
  std::vector<std::string> params;
  size_t in_statement = 0;  // records in the statement being built
  auto flush = [&]() -> Status {
    if (params.empty()) return ok_status();
    auto r = run(conn_, described_, sql, params);
    sql.clear();
    params.clear();
    in_statement = 0;
    if (!r) return r.error();
    return ok_status();
  };
  const size_t chunk = std::max<size_t>(1, options_.insert_chunk);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (options_.fault_before_insert)
      if (auto st = options_.fault_before_insert(i); !st) return fail(st.error());
    if (params.empty()) sql = "INSERT INTO allot_journal (seq, at, kind, body, sum, chain) VALUES ";
    const size_t n = params.size();
    const bool last = i + 1 == batch.size();
    sql += (n ? ",($" : "($") + std::to_string(n + 1) + "::bigint,$" + std::to_string(n + 2) + "::bigint,$" +
           std::to_string(n + 3) + ",$" + std::to_string(n + 4) + ",$" + std::to_string(n + 5) + "," +
           (last ? "$" + std::to_string(n + 6) : std::string("NULL")) + ")";
    params.push_back(std::to_string(batch[i].seq));
    params.push_back(std::to_string(batch[i].at));
    params.push_back(op_name(batch[i].op));
    params.push_back(bodies[i]);
    params.push_back(sums.records[i]);
    if (last) params.push_back(sums.chain);
    if (++in_statement >= chunk)
      if (auto st = flush(); !st) return fail(Error::internal("cannot append from record " + std::to_string(batch[i].seq) + ": " + st.error().message));
  }
  if (auto st = flush(); !st) return fail(Error::internal("cannot append record(s) up to " + std::to_string(batch.back().seq) + ": " + st.error().message));
  if (auto r = run(conn_, described_, "COMMIT"); !r) return fail(r.error());
  last_chain_ = std::move(sums.chain);
  return ok_status();
}

Status PgStore::load_after(uint64_t after, const std::function<Status(const Record&)>& fn) {
  std::lock_guard lock(mu_);
  if (!connection_ok(conn_)) {
    if (leading_) lose_session_locked();
    if (auto st = connect_locked(); !st) return st;
  }
  // Reading starts at the batch that holds record `after` + 1, after the last batch end at or before `after`, so
  // that its chain can be checked (journal_checksum.h); records up to `after` are checked, not handed over.
  auto boundary = run(conn_, described_,
                      "SELECT seq, chain FROM allot_journal WHERE seq <= $1::bigint AND seq >= $2::bigint AND chain IS NOT NULL "
                      "ORDER BY seq DESC LIMIT 1",
                      {std::to_string(after), std::to_string(checked_from_)});
  if (!boundary) return Error::internal("cannot read the journal: " + boundary.error().message);
  uint64_t last = std::min(after + 1, checked_from_) - 1;  // rows after this one are read
  std::string chain;
  if (PQntuples(boundary->get()) == 1) {
    last = std::strtoull(PQgetvalue(boundary->get(), 0, 0), nullptr, 10);
    chain = PQgetvalue(boundary->get(), 0, 1);
  }
  // A standby reads here while the leader appends: every page sees whole batches (each is one transaction), and a
  // batch cut by a page's end is checked once the next page brings its last record.
  JournalReader reader(described_, std::move(chain), checked_from_, after, fn);
  for (;;) {
    auto rows = run(conn_, described_,
                    "SELECT seq, at, kind, body, sum, chain FROM allot_journal WHERE seq > $1::bigint ORDER BY seq LIMIT " +
                        std::to_string(kJournalPage),
                    {std::to_string(last)});
    if (!rows) return Error::internal("cannot read the journal: " + rows.error().message);
    PGresult* res = rows->get();
    const int n = PQntuples(res);
    auto text = [&](int i, int col) {
      return PQgetisnull(res, i, col) ? std::string_view() : std::string_view(PQgetvalue(res, i, col), PQgetlength(res, i, col));
    };
    for (int i = 0; i < n; ++i) {
      const auto seq = static_cast<uint64_t>(std::strtoull(PQgetvalue(res, i, 0), nullptr, 10));
      if (auto st = reader.row({.seq = seq,
                                .at = std::strtoll(PQgetvalue(res, i, 1), nullptr, 10),
                                .kind = text(i, 2),
                                .body = text(i, 3),
                                .sum = text(i, 4),
                                .chain = text(i, 5)});
          !st)
        return st;
      last = seq;
    }
    if (n < kJournalPage) return reader.end();
  }
}

std::string PgStore::lease_end_sql() const {
  return "clock_timestamp() + interval '" + std::to_string(options_.leader_lease.count()) + " milliseconds'";
}

Result<bool> PgStore::take_over_expired_locked() {
  // Only the backend the row names, only while it still holds the lock, and only once its lease ended (on the
  // database's clock, which every server shares).
  auto ended = run(conn_, described_,
                   "SELECT pg_terminate_backend(k.pid) FROM pg_locks k, allot_leader l WHERE l.id = 1 AND "
                   "l.lease_until < clock_timestamp() AND k.pid = l.backend_pid AND k.locktype = 'advisory' AND k.granted "
                   "AND k.classid = 0 AND k.objid = " + std::to_string(kLeaderLock) + "::oid AND k.objsubid = 1 AND "
                   "k.database = (SELECT oid FROM pg_database WHERE datname = current_database())");
  if (!ended) return ended.error();
  if (PQntuples(ended->get()) == 0) return false;
  // The backend lets go of the lock as it exits, a few milliseconds later.
  for (int i = 0; i < 40; ++i) {
    auto got = run(conn_, described_, "SELECT pg_try_advisory_lock(" + std::to_string(kLeaderLock) + ")");
    if (!got) return got.error();
    if (std::string(PQgetvalue(got->get(), 0, 0)) == "t") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

Result<bool> PgStore::try_lead(const std::string& url) {
  std::lock_guard lock(mu_);
  if (leading_ && connection_ok(conn_)) return true;
  if (leading_) lose_session_locked();
  if (auto st = connect_locked(); !st) return st.error();
  auto got = run(conn_, described_, "SELECT pg_try_advisory_lock(" + std::to_string(kLeaderLock) + ")");
  if (!got) return got.error();
  if (std::string(PQgetvalue(got->get(), 0, 0)) != "t") {
    auto taken = take_over_expired_locked();
    if (!taken || !*taken) return taken;
  }
  auto e = run(conn_, described_,
               "UPDATE allot_leader SET epoch = epoch + 1, url = $1, since = now(), lease_until = " + lease_end_sql() +
                   ", backend_pid = pg_backend_pid() WHERE id = 1 RETURNING epoch",
               {url});
  if (!e || PQntuples(e->get()) != 1) {
    (void)run(conn_, described_, "SELECT pg_advisory_unlock_all()");
    if (!e) return e.error();
    return Error::internal("database " + described_ + ": the allot_leader row is missing");
  }
  epoch_ = std::atoll(PQgetvalue(e->get(), 0, 0));
  leading_ = true;
  last_chain_.reset();  // read again, inside the first batch's fenced transaction
  return true;
}

bool PgStore::confirm_lead() {
  std::lock_guard lock(mu_);
  if (!leading_) return false;
  // Renews the lease while the epoch is still this store's (no row: another server took over).
  auto e = connection_ok(conn_) ? run(conn_, described_,
                                      "UPDATE allot_leader SET lease_until = " + lease_end_sql() +
                                          " WHERE id = 1 AND epoch = $1::bigint RETURNING epoch",
                                      {std::to_string(epoch_)})
                                : Result<PgResult>(Error::internal("no connection"));
  if (!e || !connection_ok(conn_)) {
    lose_session_locked();
    return false;
  }
  if (PQntuples(e->get()) != 1 || std::atoll(PQgetvalue(e->get(), 0, 0)) != epoch_) {
    (void)run(conn_, described_, "SELECT pg_advisory_unlock_all()");
    leading_ = false;
    return false;
  }
  return true;
}

bool PgStore::leading() const {
  std::lock_guard lock(mu_);
  return leading_;
}

Result<std::string> PgStore::leader_url() {
  std::lock_guard lock(mu_);
  if (!connection_ok(conn_)) {
    if (leading_) lose_session_locked();
    if (auto st = connect_locked(); !st) return st.error();
  }
  // The row keeps the last leader's URL after it is gone; the lock says whether it is still there.
  auto r = run(conn_, described_,
               "SELECT l.url, EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted AND k.classid = 0 "
               "AND k.objid = " + std::to_string(kLeaderLock) + "::oid AND k.objsubid = 1 AND k.database = "
               "(SELECT oid FROM pg_database WHERE datname = current_database())) FROM allot_leader l WHERE l.id = 1");
  if (!r) return r.error();
  if (PQntuples(r->get()) != 1 || std::string(PQgetvalue(r->get(), 0, 1)) != "t") return std::string();
  return std::string(PQgetvalue(r->get(), 0, 0));
}

}  // namespace allot::store
