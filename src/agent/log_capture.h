#pragma once
// Replicas' output reaches their logs through pipes the agent owns (docs/security.md, "Logs"). A replica's stdout
// and stderr are the write end of a pipe; a thread of the agent reads the other end and appends what comes to
// the replica's log, a file in a directory only the agent can write (<work dir>/_logs, 0700). The agent never
// opens a path the replica controls to read or write its log: a replica that replaces a file in its working
// directory with a symlink to /etc/shadow changes nothing the agent reads or ships.
//
// Every log file is opened with O_NOFOLLOW and checked with fstat (a regular file, owned by the agent, one
// link) before it is written or read, so that even a log directory someone managed to write into cannot
// redirect the agent through a symlink or a hard link.
//
// Thread-safety: open(), finish() and close_all() may be called from any thread; the reader thread is the only
// one that writes into the log files while a pipe is open.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/thread_annotations.h"
#include "core/lifecycle/log_rules.h"
#include "core/model/result.h"

namespace allot::agent {

// Opens `path` for appending (created 0600 when missing) without following a symlink, and checks that it is a
// regular file of this process's user with a single link. The descriptor is O_CLOEXEC.
Result<int> open_log_for_append(const std::string& path);
// Up to `max` bytes of the log at `path` from `offset`, opened with O_NOFOLLOW and checked as above. A missing
// file reads as empty.
Result<std::string> read_log_chunk(const std::string& path, uint64_t offset, size_t max);
// The size of the log at `path` (0 when missing), through the same checks.
uint64_t log_size(const std::string& path);
// Appends a line the agent writes itself (why a replica could not start, the out-of-memory killer) to a log.
Status append_log_line(const std::string& path, std::string_view line);
// Creates `dir` and its parents as needed, each created one 0700; the last is made 0700 even if it existed.
Status make_private_dir(const std::string& dir);

class LogCapture {
 public:
  LogCapture();  // the reader thread starts with the first open()
  ~LogCapture();  // stops the reader; pipes still open are drained once and closed
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // A pipe for the replica `key` whose output goes to the log at `log_path` (opened as open_log_for_append
  // does). Returns the write end for the child's stdout and stderr; the caller closes it once the child has
  // it (after fork). The write end is O_CLOEXEC, so only the descriptors the child dup2()s survive its exec.
  //
  // With `rules` (not empty), each line of the output is matched as it is captured (core/lifecycle/log_rules.h): fired() and
  // progress_lines() tell the agent what the matcher saw.
  Result<int> open(const std::string& key, const std::string& log_path, const LogRules& rules = {}, int rank = 0)
      EXCLUDES(mu_);
  // The replica has exited: waits at most `wait` for the end of its output (every process holding the pipe gone;
  // the agent kills the replica's group and cgroup when its leader exits, so this is quick), writes what is left,
  // and closes the pipe and the log. A process that escaped both and keeps the pipe open loses what it writes
  // after that. No-op for an unknown key. Returns the log rule that fired on the output, if one did (also on its
  // last line, which may lack its newline).
  std::optional<LogRuleFiring> finish(const std::string& key, std::chrono::milliseconds wait) EXCLUDES(mu_);
  // The log rule that fired on the output of `key` so far (the first one; a rule fires once), if any.
  std::optional<LogRuleFiring> fired(const std::string& key) EXCLUDES(mu_);
  // How many lines of the output of `key` matched its progress pattern so far (0 for an unknown key).
  uint64_t progress_lines(const std::string& key) EXCLUDES(mu_);

 private:
  struct Stream {
    int read_fd = -1;
    int log_fd = -1;
    bool eof = false;
    std::unique_ptr<LogLineMatcher> matcher;  // null: the replica has no log rules
    std::optional<LogRuleFiring> fired;
  };
  void run() EXCLUDES(mu_);
  // Reads what the pipe holds and appends it to the log; marks the stream at its end. The stream is one of
  // streams_, so its caller holds mu_ (or is the destructor, after the reader has stopped).
  static void drain(Stream& s);
  void wake();

  Mutex mu_;
  std::condition_variable ended_;                         // a stream reached its end
  std::map<std::string, Stream> streams_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  int wake_fds_[2] = {-1, -1};  // a self-pipe that interrupts the reader's poll; set by the constructor only
  std::thread reader_ GUARDED_BY(mu_);  // started by the first open(), under mu_
};

}  // namespace allot::agent
