#pragma once
// The journal of operations behind one interface, LevelDB-style: the server appends batches of records and
// replays them all on start; implementations are SQLite (embedded, the default), PostgreSQL (shared by several
// servers, one of which leads), and an in-memory store for tests that can inject failures. The same conformance
// suite (tests/unit/store_conformance_test.cpp) runs against each.
//
// Thread-safety: implementations are safe to call from several threads, but the server has one writer.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "store/record.h"

namespace allot::store {

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

  // "sqlite:/var/lib/allot/allot.db", for logs and messages (never a password).
  virtual std::string describe() const = 0;

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
  // The URL the current leader advertised; empty while no server leads.
  [[nodiscard]] virtual Result<std::string> leader_url() { return std::string(); }
};

// Opens the store a --database URL names: "sqlite:PATH" (the file and its directory are created when
// missing), "postgresql://USER@HOST[:PORT]/DB" (also postgres://; any libpq connection URL, its password
// and parameters included) or "mem:" (in memory, lost on exit; for tests).
Result<std::unique_ptr<Store>> open_store(const std::string& url);

}  // namespace allot::store
