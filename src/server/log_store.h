#pragma once
// Replica logs as agents send them: one file per job and rank under <data dir>/logs, bounded to the last
// `max_bytes` (older output is dropped when a file grows past twice that, so trimming is rare).
// File names encode job names, so no name can reach outside the logs directory.
//
// Thread-safety: all members are safe to call from any thread.
#include <mutex>
#include <string>

#include "core/result.h"

namespace allot::server {

class LogStore {
 public:
  LogStore(std::string dir, size_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

  Status append(const std::string& job, int rank, const std::string& data);
  // The last `tail` bytes (all that is kept when tail is 0); empty when nothing was logged.
  Result<std::string> read(const std::string& job, int rank, size_t tail) const;
  // Drops every replica's log of the job (a deleted job: a new job of that name starts with none).
  Status remove(const std::string& job);

 private:
  std::string path(const std::string& job, int rank) const;
  const std::string dir_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
};

}  // namespace allot::server
