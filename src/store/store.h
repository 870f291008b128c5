#pragma once
// The journal of operations behind one interface, LevelDB-style: the server appends batches of records and
// replays them all on start; implementations are SQLite (embedded, the default), an in-memory store for tests
// that can inject failures, and (not built in this version) PostgreSQL.
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
  // texts are UTF-8 (others fail the batch).
  [[nodiscard]] virtual Status append(const std::vector<Record>& batch) = 0;

  // Calls `fn` for every record in journal order; stops at, and returns, the first error.
  [[nodiscard]] virtual Status load(const std::function<Status(const Record&)>& fn) = 0;

  // "sqlite:/var/lib/allot/allot.db", for logs and messages.
  virtual std::string describe() const = 0;
};

// Opens the store a --database URL names: "sqlite:PATH" (the file and its directory are created when
// missing) or "mem:" (in memory, lost on exit; for tests). "postgresql://..." is recognised and refused in
// this version with a message that says so.
Result<std::unique_ptr<Store>> open_store(const std::string& url);

}  // namespace allot::store
