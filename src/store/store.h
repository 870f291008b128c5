#pragma once
// The journal of operations behind one interface, LevelDB-style: the server appends batches of records and
// replays them all on start; implementations are SQLite (embedded, the default), PostgreSQL (shared by several
// servers, one of which leads), and an in-memory store for tests that can inject failures. The same conformance
// suite (tests/unit/store_conformance_test.cpp) runs against each.
//
// Thread-safety: implementations are safe to call from several threads, but the server has one writer.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model/result.h"
#include "store/record.h"

namespace allot::store {

// The whole state at a journal position (the server's encoding, server/writer/state_snapshot.h): start-up and a
// standby's catch-up restore the latest one and replay only the records after `seq`. The journal keeps every
// record; a snapshot only saves reading them.
struct Snapshot {
  uint64_t seq = 0;
  std::string body;
};

class Store {
 public:
  virtual ~Store() = default;

  // Appends the records as one atomic step: when it returns ok every record is durable, otherwise none of
  // them is and the journal is as it was. REQUIRES: seqs strictly increase, after the last appended one;
  // texts are UTF-8 (others fail the batch). A shared store refuses appends unless this store leads.
  [[nodiscard]] virtual Status append(const std::vector<Record>& batch) = 0;

  // Calls `fn` for every record with a seq above `after`, in journal order; stops at, and returns, the first
  // error. A standby follows the journal with it, passing the last seq it applied.
  [[nodiscard]] virtual Status load_after(uint64_t after, const std::function<Status(const Record&)>& fn) = 0;
  // Every record, in journal order.
  [[nodiscard]] Status load(const std::function<Status(const Record&)>& fn) { return load_after(0, fn); }

  // Writes a snapshot of the state after record `seq` (appended before, by this store), and drops all but the
  // newest kSnapshotsKept. The body is written in parts, each in a transaction of its own so that appends from
  // other threads go on meanwhile (snapshot_parts.h); the snapshot appears whole in a last step or not at all.
  // One at a `seq` that already has one is not written again (it holds the same state). A shared store writes one only while it leads, under the same
  // fence as append: a deposed leader never writes a snapshot either.
  [[nodiscard]] virtual Status put_snapshot(uint64_t seq, const std::string& body) = 0;
  // The newest snapshot, if any.
  [[nodiscard]] virtual Result<std::optional<Snapshot>> latest_snapshot() = 0;
  static constexpr int kSnapshotsKept = 2;

  // "sqlite:/var/lib/allot/allot.db", for logs and messages (never a password).
  virtual std::string describe() const = 0;

  // Whether the journal has room for more (a full disk refuses every write until space returns): an error saying
  // why when it has not. The writer asks after a failed append, and then every quarter second until it has, to
  // refuse changes at once meanwhile instead of failing (and rebuilding after) each one. Cheap; any thread.
  [[nodiscard]] virtual Status check_space() { return ok_status(); }

  // --- Leadership: several servers on one shared journal (docs/deployment.md) ---
  // Whether other servers may have this journal open at the same time. A store that is not shared is opened
  // by one server only (SQLite refuses a second), which always leads.
  virtual bool shared() const { return false; }
  // Tries to become the journal's one writer, advertising `url` to the other servers; true when this store may
  // append from now on. A store that leads keeps leading until it loses its hold on the journal (then leading()
  // turns false and appends are refused: a deposed leader never writes).
  [[nodiscard]] virtual Result<bool> try_lead(const std::string& url) {
    (void)url;
    return true;
  }
  virtual bool leading() const { return true; }
  // Asks the database whether this store still leads (its session is alive and the epoch is still its own); a
  // store that finds it does not stops leading for good, as after a failed append. The leader calls it between
  // batches so that it steps down when the database goes away even while nobody writes.
  [[nodiscard]] virtual bool confirm_lead() { return leading(); }
  // The URL the current leader advertised; empty while no server leads.
  [[nodiscard]] virtual Result<std::string> leader_url() { return std::string(); }
};

// Opens the store a --database URL names: "sqlite:PATH" (the file and its directory are created when
// missing), "postgresql://USER@HOST[:PORT]/DB" (also postgres://; any libpq connection URL, its password
// and parameters included) or "mem:" (in memory, lost on exit; for tests).
Result<std::unique_ptr<Store>> open_store(const std::string& url);

}  // namespace allot::store
