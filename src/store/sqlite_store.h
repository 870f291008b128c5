#pragma once
// The embedded store: one SQLite file in WAL mode with synchronous=FULL, one transaction per batch, so a
// batch is durable when append returns and a crash (kill -9, power loss) keeps every appended batch whole or
// not at all. The database is opened in exclusive locking mode: a second server on the same file is refused
// instead of writing over the first.
//
// Schema (PRAGMA user_version): 1 is the journal alone; 2 adds the snapshots table; 3 writes a snapshot's body in
// parts (snapshot_parts.h); 4 adds the records' checksums (journal_checksum.h: columns `sum` and `chain`, table
// `journal_checks`). An older file is migrated on open; a file from a newer allot is refused.
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string_view>

#include "store/snapshot_parts.h"
#include "store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace allot::store {

struct SqliteOptions {
  // Test hook: called before each record of a batch is written; an error aborts the transaction, as an I/O
  // failure in the middle of a batch would.
  std::function<Status(size_t index_in_batch)> fault_before_insert;
  // Test hook: called before each part of a snapshot is written, without the store's lock; an error stops the
  // snapshot there, as a crash would.
  std::function<Status(size_t part)> before_snapshot_part;
  // Bytes per part of a snapshot (snapshot_parts.h); bench/snapshot_stall_bench compares sizes with it.
  size_t snapshot_part_bytes = kSnapshotPartBytes;
};

// The database file of a sqlite: URL (sqlite:PATH, sqlite://rel/path, sqlite:///abs/path); empty for other URLs.
std::string sqlite_path_of(const std::string& url);

class SqliteStore final : public Store {
 public:
  // Creates the file (not its directory) and the schema when missing.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path, SqliteOptions options = {});
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  Status append(const std::vector<Record>& batch) override;
  Status load_after(uint64_t after, const std::function<Status(const Record&)>& fn) override;
  Status put_snapshot(uint64_t seq, const std::string& body) override;
  Result<std::optional<Snapshot>> latest_snapshot() override;
  std::string describe() const override { return "sqlite:" + path_; }
  // Less than kMinFreeBytes free for the database's directory is no room (statvfs).
  Status check_space() override;
  static constexpr uint64_t kMinFreeBytes = 1 << 20;

 private:
  SqliteStore(std::string path, SqliteOptions options) : path_(std::move(path)), options_(std::move(options)) {}
  Status exec(const char* sql);
  Result<uint64_t> journal_end_locked();
  // The chain checksum of the journal's last batch; empty when none has one.
  Result<std::string> last_chain_locked();
  Status write_locked(const char* sql, std::initializer_list<int64_t> ints, std::optional<std::string_view> text, bool in_txn);
  Error error(const std::string& what) const;

  std::string path_;
  SqliteOptions options_;
  std::mutex mu_;
  AppendsFirst appends_first_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  uint64_t checked_from_ = 1;               // the first record that must carry a checksum
  std::optional<std::string> last_chain_;  // the last batch's chain once read or written; unknown after a failure
};

}  // namespace allot::store
