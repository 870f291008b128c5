#include "store/mem_store.h"

namespace allot::store {

Status MemStore::append(const std::vector<Record>& batch) {
  std::lock_guard lock(mu_);
  if (fail_next_ > 0) {
    --fail_next_;
    return Error::internal(fail_message_);
  }
  uint64_t last = records_.empty() ? 0 : records_.back().seq;
  for (const Record& r : batch) {
    if (r.seq <= last) return Error::internal("journal records out of order: seq " + std::to_string(r.seq) +
                                              " after " + std::to_string(last));
    last = r.seq;
  }
  if (room_ && batch.size() > *room_) {
    *room_ = 0;
    return Error::internal("injected failure: no space left for " + std::to_string(batch.size()) + " records");
  }
  if (room_) *room_ -= batch.size();
  records_.insert(records_.end(), batch.begin(), batch.end());
  ++appends_;
  return ok_status();
}

Status MemStore::load_after(uint64_t after, const std::function<Status(const Record&)>& fn) {
  std::vector<Record> copy = records();
  for (const Record& r : copy) {
    if (r.seq <= after) continue;
    auto st = fn(r);
    if (!st) return st;
  }
  return ok_status();
}

Status MemStore::put_snapshot(uint64_t seq, const std::string& body) {
  std::lock_guard lock(mu_);
  const uint64_t last = records_.empty() ? 0 : records_.back().seq;
  if (seq > last)
    return Error::invalid("snapshot at record " + std::to_string(seq) + " is past the journal's end (" + std::to_string(last) + ")");
  snapshots_.push_back({seq, body});
  while (snapshots_.size() > static_cast<size_t>(kSnapshotsKept)) snapshots_.erase(snapshots_.begin());
  return ok_status();
}

Result<std::optional<Snapshot>> MemStore::latest_snapshot() {
  std::lock_guard lock(mu_);
  if (snapshots_.empty()) return std::optional<Snapshot>();
  return std::optional<Snapshot>(snapshots_.back());
}

void MemStore::fail_next_appends(int count, std::string message) {
  std::lock_guard lock(mu_);
  fail_next_ = count;
  fail_message_ = std::move(message);
}

void MemStore::make_room() {
  std::lock_guard lock(mu_);
  room_.reset();
}

Status MemStore::check_space() {
  std::lock_guard lock(mu_);
  if (room_ && *room_ == 0) return Error::internal("injected failure: no space left");
  return ok_status();
}

void MemStore::fail_after_records(size_t records) {
  std::lock_guard lock(mu_);
  room_ = records;
}

std::vector<Record> MemStore::records() const {
  std::lock_guard lock(mu_);
  return records_;
}

size_t MemStore::appends() const {
  std::lock_guard lock(mu_);
  return appends_;
}

}  // namespace allot::store
