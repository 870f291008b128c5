#pragma once
// Replica logs as agents send them: one file per job and rank under <data dir>/logs, bounded to the last
// `max_bytes` (older output is dropped when a file grows past twice that, so trimming is rare).
// Directory names encode job names, so no name can reach outside the logs directory, and a name too long to
// encode within a file name is hashed (key()), so that every valid name can be stored.
//
// Thread-safety: all members are safe to call from any thread.
#include <mutex>
#include <optional>
#include <string>

#include "core/model/result.h"

namespace allot::server {

class LogStore {
 public:
  LogStore(std::string dir, size_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  // Which run of the replica a chunk comes from, and the node it ran on.
  struct Attempt {
    int attempt = 0;
    std::string node;
    int folded = 0;  // the job's Job::attempt_folded: the line names attempt - folded (server_state.h, attempt_shown)
  };
  // With `attempt`: where the chunk's attempt differs from the previous chunk's, a line naming the attempt and
  // its node goes first ("allot: ==> attempt 1 of replica 0 on node gpu-2 <=="), so attempts stay apart even
  // when a late chunk of an older one arrives after a newer one began. The log's first attempt 0 needs none.
  // Attempts are told apart by the whole number; the line and the "first attempt 0" test use the number shown.
  Status append(const std::string& job, int rank, const std::string& data, const std::optional<Attempt>& attempt = std::nullopt);
  // Where a job's logs are, under the logs directory: the name with every byte but letters, digits, '-' and '_'
  // written %XX ('.' is %2E), or, when that is longer than a file name may be (255 bytes), its first 120 bytes,
  // '~' and the name's SHA-256 in hex (185 bytes). Names that fit keep the spelling they always had, so the logs
  // of an existing data directory stay where they are.
  static std::string key(const std::string& job);
  // The last `tail` bytes (all that is kept when tail is 0); empty when nothing was logged; an error saying why
  // when the log exists but cannot be read.
  Result<std::string> read(const std::string& job, int rank, size_t tail) const;
  // Drops every replica's log of the job (a deleted job: a new job of that name starts with none).
  Status remove(const std::string& job);

 private:
  std::string path(const std::string& job, int rank) const;
  // The attempt of the last chunk appended (a small file beside the log, so a restarted server knows it).
  int last_attempt(const std::string& log_path) const;
  const std::string dir_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
};

}  // namespace allot::server
