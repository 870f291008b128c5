#pragma once
// A snapshot is written in parts, each in its own short transaction, and made visible by a last transaction that
// names how many parts it has (store.h, put_snapshot). One transaction for the whole body held the store's one
// connection, and so every journal append behind it, for as long as the body took to write: 330 ms for 15 MB in
// bench/loadgen_bench, a stall of every request in flight. With parts, an append waits at most for one part.
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/model/result.h"

namespace allot::store {

// Bytes per part: about 256 SQLite pages, a few milliseconds of writing.
inline constexpr size_t kSnapshotPartBytes = size_t{1} << 20;

// Cuts `body` into consecutive parts of at most `part_bytes` (at least 4) bytes, never inside a UTF-8 character,
// so that each part is valid text wherever the whole is (PostgreSQL checks every text value it stores). An empty
// body is one empty part.
std::vector<std::string_view> split_snapshot(std::string_view body, size_t part_bytes = kSnapshotPartBytes);

// Lets a journal append waiting for the store's lock go before the next part of a snapshot. A std::mutex is not
// fair: the thread writing the parts took it again at once after each part, and an append waited for several
// parts in a row (up to 250 ms for 30 ms parts in bench/snapshot_stall_bench).
class AppendsFirst {
 public:
  // For append(): takes `mu`, counted as waiting until it has it.
  std::unique_lock<std::mutex> lock(std::mutex& mu) {
    waiting_.fetch_add(1);
    std::unique_lock held(mu);
    waiting_.fetch_sub(1);
    return held;
  }
  // For the snapshot's thread, before it takes the lock for its next part: until no append waits for it.
  void let_appends_go() const {
    while (waiting_.load() > 0) std::this_thread::yield();
  }

 private:
  std::atomic<int> waiting_{0};
};

// The parts of `body`, cut at `part_bytes`, each written by `write_part(index, text)` while holding `mu` (in a
// transaction of its own, which write_part opens and commits), with `before_part(index)` (a test hook, may be
// empty: an error stops the writing there) called first and waiting appends let go before each. Returns how many
// parts were written, or the first error.
Result<size_t> write_parts(std::string_view body, size_t part_bytes, const std::function<Status(size_t)>& before_part,
                   AppendsFirst& appends, std::mutex& mu, const std::function<Status(size_t, std::string_view)>& write_part);

// Joins the parts read back for the snapshot after record `seq`, which must be numbered 0 .. `expected` - 1 in
// order; a gap is an error naming the snapshot and the first missing part.
Result<std::string> join_snapshot(uint64_t seq, size_t expected, const std::vector<std::pair<int64_t, std::string>>& parts);

}  // namespace allot::store
