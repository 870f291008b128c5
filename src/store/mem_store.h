#pragma once
// An in-memory Store for tests, with fault injection in the spirit of LevelDB's fault-injection Env: a test
// can make the next appends fail (as a full disk or an I/O error would) and check that the server answers
// with an error, changes nothing it acknowledged, and recovers.
#include <mutex>
#include <optional>

#include "store/store.h"

namespace allot::store {

class MemStore final : public Store {
 public:
  Status append(const std::vector<Record>& batch) override;
  Status load_after(uint64_t after, const std::function<Status(const Record&)>& fn) override;
  Status put_snapshot(uint64_t seq, const std::string& body) override;
  Result<std::optional<Snapshot>> latest_snapshot() override;
  std::string describe() const override { return "mem:"; }

  // The next `count` appends fail with `message` and leave the journal unchanged.
  void fail_next_appends(int count, std::string message = "injected write failure");
  // Appends fail from now on after `records` more records have been written in total; the failing batch is
  // still all-or-nothing (this models a disk that fills up in the middle of a batch).
  void fail_after_records(size_t records);
  // Space returns: appends are no longer limited (after fail_after_records).
  void make_room();
  // An error once fail_after_records' room is used up (a full disk), ok otherwise.
  Status check_space() override;

  std::vector<Record> records() const;
  size_t appends() const;  // successful appends so far

 private:
  mutable std::mutex mu_;
  std::vector<Record> records_;
  std::vector<Snapshot> snapshots_;  // oldest first
  size_t appends_ = 0;
  int fail_next_ = 0;
  std::string fail_message_;
  std::optional<size_t> room_;  // records that may still be written, when limited
};

}  // namespace allot::store
