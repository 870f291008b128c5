#pragma once
// The shared store: the journal in a PostgreSQL database (libpq), for several `allot server` processes of which
// exactly one writes (docs/deployment.md).
//
// Durability: one transaction per batch with synchronous_commit on (set for the session, whatever the database's
// default), so a batch is committed (and, where the database replicates synchronously, replicated) when append
// returns, or not there at all.
//
// Checksums: every record carries its own and each batch's last record the batch's chained one
// (journal_checksum.h), written by append and checked by load_after, so by a standby as it follows too.
//
// Schema: the tables are created and migrated on open, one numbered migration at a time, under a transaction-level
// advisory lock so that servers starting together migrate once; a database written by a newer allot is refused.
//
// Leadership and fencing: the leader is the session holding a session-level advisory lock. Its every append
// checks, inside the batch's transaction and with the row locked, that the epoch in allot_leader is still the
// one it set when it took the lock. PostgreSQL releases the lock when the session ends (the server was killed,
// the connection broke, keepalives found the peer gone), and this store never reconnects while it leads: a
// deposed leader's appends fail, so it can never write after another server took over. Its reads reconnect.
//
// The lease: a leader whose process hangs (SIGSTOP, a VM paused) keeps its session, and so its lock, for as long
// as PostgreSQL sees the connection alive, which is for ever. So the leader also holds a lease in allot_leader,
// `lease_until` on the database's clock, renewed by confirm_lead() (every leader_poll between batches); the row
// names the leader's backend. A standby that finds the lock held and the lease expired ends that backend
// (pg_terminate_backend), which releases the lock, and takes the lead with a new epoch: the old leader, if it ever
// runs again, finds its session gone and its epoch superseded, and writes nothing (the fence above).
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "store/snapshot_parts.h"
#include "store/store.h"

struct pg_conn;

namespace allot::store {

struct PgOptions {
  // Test hook: called before each record of a batch is sent; an error aborts the transaction, as a lost
  // connection in the middle of a batch would.
  std::function<Status(size_t index_in_batch)> fault_before_insert;
  // Records per INSERT statement; tests set 1 so that a fault falls between statements of one transaction.
  size_t insert_chunk = 500;
  // Test hook: called before each part of a snapshot is written, without the store's lock; an error stops the
  // snapshot there, as a crash would.
  std::function<Status(size_t part)> before_snapshot_part;
  // Bytes per part of a snapshot (snapshot_parts.h); bench/snapshot_stall_bench compares sizes with it.
  size_t snapshot_part_bytes = kSnapshotPartBytes;
  // How long a leader's lease lasts from its last renewal (see the note at the top). Renewed every leader_poll
  // (0.5 s by default), so 5 s rides out a batch or a pause of a few seconds, and a hung leader is replaced within
  // about 6 s (docs/deployment.md).
  std::chrono::milliseconds leader_lease{5000};
};

class PgStore final : public Store {
 public:
  // Connects, migrates the schema to this version's, and refuses a database written by a newer one.
  static Result<std::unique_ptr<PgStore>> open(const std::string& url, PgOptions options = {});
  ~PgStore() override;
  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  Status append(const std::vector<Record>& batch) override;
  Status load_after(uint64_t after, const std::function<Status(const Record&)>& fn) override;
  Status put_snapshot(uint64_t seq, const std::string& body) override;
  Result<std::optional<Snapshot>> latest_snapshot() override;
  std::string describe() const override { return described_; }

  bool shared() const override { return true; }
  Result<bool> try_lead(const std::string& url) override;
  bool leading() const override;
  bool confirm_lead() override;
  Result<std::string> leader_url() override;

  // The journal's schema version this build writes (allot_schema.version).
  static int schema_version();

 private:
  PgStore(std::string url, PgOptions options);
  // Connects when there is no usable connection. REQUIRES: mu_ held, not leading.
  Status connect_locked();
  // Marks the store deposed after its session failed while it led.
  void lose_session_locked();
  Status migrate_locked();
  // Opens a write transaction after checking, inside it, that this store still leads (the epoch fence).
  // REQUIRES: mu_ held.
  Status begin_fenced_locked();
  // Ends a failed write transaction; a lost session deposes this store. Returns the error to report.
  Status fail_write_locked(const Error& e);
  // The lock is held by another session: ends that session when the lease it holds expired, and waits a moment
  // for the lock to be let go. True when the lock is then this session's. REQUIRES: mu_ held, connected.
  Result<bool> take_over_expired_locked();
  // SQL: the lease's end, lease_until from now on the database's clock.
  std::string lease_end_sql() const;

  const std::string url_;
  const std::string described_;  // the URL without its password
  PgOptions options_;
  mutable std::mutex mu_;
  AppendsFirst appends_first_;
  pg_conn* conn_ = nullptr;
  bool leading_ = false;
  int64_t epoch_ = 0;  // allot_leader.epoch this store set when it took the lead
  uint64_t checked_from_ = 1;               // the first record that must carry a checksum (journal_checksum.h)
  std::optional<std::string> last_chain_;  // the last batch's chain while leading; unknown after a failure
};

// "postgresql://allot:secret@db/allot?sslmode=require" -> "postgresql://allot@db/allot?sslmode=require".
std::string url_without_password(const std::string& url);

}  // namespace allot::store
