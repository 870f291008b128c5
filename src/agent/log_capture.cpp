#include "agent/log_capture.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

namespace allot::agent {
namespace {

std::string err_text(int err) { return std::strerror(err); }

// The checks every log descriptor passes: a regular file (not a FIFO or a device someone put in its place),
// owned by the agent's user, and with one link (a hard link to /etc/shadow would be a regular root file too).
Status check_log_fd(int fd, const std::string& path) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return Error::internal("cannot stat the log " + path + ": " + err_text(errno));
  if (!S_ISREG(st.st_mode)) return Error::internal("the log " + path + " is not a regular file; not using it");
  if (st.st_uid != geteuid()) return Error::internal("the log " + path + " belongs to uid " + std::to_string(st.st_uid) + ", not the agent's; not using it");
  if (st.st_nlink > 1) return Error::internal("the log " + path + " has other links; not using it");
  return ok_status();
}

void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // a full disk loses log lines, never the replica
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

Result<int> open_log_for_append(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) return Error::internal("cannot open the log " + path + ": " + err_text(errno));
  if (auto st = check_log_fd(fd, path); !st) {
    close(fd);
    return st.error();
  }
  return fd;
}

Result<std::string> read_log_chunk(const std::string& path, uint64_t offset, size_t max) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::string();
    return Error::internal("cannot open the log " + path + ": " + err_text(errno));
  }
  if (auto st = check_log_fd(fd, path); !st) {
    close(fd);
    return st.error();
  }
  std::string data(max, '\0');
  size_t got = 0;
  while (got < max) {
    ssize_t r = pread(fd, data.data() + got, max - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  data.resize(got);
  return data;
}

uint64_t log_size(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return 0;
  struct stat st {};
  uint64_t size = check_log_fd(fd, path) && fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  close(fd);
  return size;
}

Status append_log_line(const std::string& path, std::string_view line) {
  auto fd = open_log_for_append(path);
  if (!fd) return fd.error();
  std::string text(line);
  if (text.empty() || text.back() != '\n') text += '\n';
  write_all(*fd, text.data(), text.size());
  close(*fd);
  return ok_status();
}

Status make_private_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path p;
  for (const auto& part : fs::path(dir)) {
    p /= part;
    if (mkdir(p.c_str(), 0700) != 0 && errno != EEXIST) return Error::internal("cannot create " + p.string() + ": " + err_text(errno));
  }
  // The last one must be the agent's own directory, not a symlink placed there.
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error::internal("cannot open the directory " + dir + ": " + err_text(errno));
  struct stat st {};
  Status out = ok_status();
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid()) out = Error::internal(dir + " is not the agent's own directory");
  else if (fchmod(fd, 0700) != 0) out = Error::internal("cannot make " + dir + " private: " + err_text(errno));
  close(fd);
  return out;
}

LogCapture::LogCapture() {
  if (pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) wake_fds_[0] = wake_fds_[1] = -1;
}

LogCapture::~LogCapture() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake();
  if (reader_.joinable()) reader_.join();
  for (auto& [key, s] : streams_) {
    drain(s);
    if (s.read_fd >= 0) close(s.read_fd);
    close(s.log_fd);
  }
  for (int fd : wake_fds_)
    if (fd >= 0) close(fd);
}

void LogCapture::wake() {
  if (wake_fds_[1] >= 0) (void)!write(wake_fds_[1], "x", 1);
}

Result<int> LogCapture::open(const std::string& key, const std::string& log_path, const LogRules& rules, int rank) {
  auto log_fd = open_log_for_append(log_path);
  if (!log_fd) return log_fd.error();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    int err = errno;
    close(*log_fd);
    return Error::internal("cannot make a pipe for the output of " + key + ": " + err_text(err));
  }
  // The reader's end never blocks the reader; the replica's end blocks the replica only when the agent falls a
  // whole pipe behind, which a larger pipe makes rarer (best effort: the system's limit may be lower).
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  (void)fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
  {
    MutexLock lock(mu_);
    if (auto old = streams_.find(key); old != streams_.end()) {
      drain(old->second);
      if (old->second.read_fd >= 0) close(old->second.read_fd);
      close(old->second.log_fd);
      streams_.erase(old);
    }
    streams_[key] = Stream{fds[0], *log_fd, false, rules.empty() ? nullptr : std::make_unique<LogLineMatcher>(rules, rank), std::nullopt};
    // Started with the first replica, not with the agent: the agent forks its watchdog while it is still
    // single-threaded (agent.h, prepare()).
    if (!reader_.joinable()) reader_ = std::thread([this] { run(); });
  }
  wake();
  return fds[1];
}

void LogCapture::drain(Stream& s) {
  if (s.read_fd < 0) return;
  char buf[65536];
  for (;;) {
    ssize_t r = read(s.read_fd, buf, sizeof buf);
    if (r > 0) {
      write_all(s.log_fd, buf, static_cast<size_t>(r));
      // Matched after it is in the log, so that the log holds every line a rule fired on.
      if (s.matcher)
        if (auto f = s.matcher->feed(std::string_view(buf, static_cast<size_t>(r))); f && !s.fired) s.fired = std::move(f);
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {  // every writer is gone
      s.eof = true;
      close(s.read_fd);
      s.read_fd = -1;
    }
    return;  // EAGAIN: nothing more for now
  }
}

void LogCapture::run() {
  std::vector<pollfd> fds;
  std::vector<std::string> keys;
  for (;;) {
    fds.clear();
    keys.clear();
    {
      MutexLock lock(mu_);
      if (stop_) return;
      for (auto& [key, s] : streams_) {
        if (s.read_fd < 0) continue;
        fds.push_back({s.read_fd, POLLIN, 0});
        keys.push_back(key);
      }
    }
    fds.push_back({wake_fds_[0], POLLIN, 0});
    // Without a wake pipe (pipe2 failed), a bounded poll still notices new streams.
    if (poll(fds.data(), fds.size(), wake_fds_[0] >= 0 ? -1 : 100) < 0 && errno != EINTR) return;
    if (fds.back().revents & POLLIN) {
      char buf[64];
      while (read(wake_fds_[0], buf, sizeof buf) > 0) {
      }
    }
    bool any_ended = false;
    {
      MutexLock lock(mu_);
      for (size_t i = 0; i + 1 < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = streams_.find(keys[i]);
        // finish() may have closed it meanwhile (and the number been reused): only the same descriptor counts.
        if (it == streams_.end() || it->second.read_fd != fds[i].fd) continue;
        drain(it->second);
        any_ended |= it->second.eof;
      }
    }
    if (any_ended) ended_.notify_all();
  }
}

std::optional<LogRuleFiring> LogCapture::fired(const std::string& key) {
  MutexLock lock(mu_);
  auto it = streams_.find(key);
  return it == streams_.end() ? std::nullopt : it->second.fired;
}

uint64_t LogCapture::progress_lines(const std::string& key) {
  MutexLock lock(mu_);
  auto it = streams_.find(key);
  return it == streams_.end() || !it->second.matcher ? 0 : it->second.matcher->progress_lines();
}

std::optional<LogRuleFiring> LogCapture::finish(const std::string& key, std::chrono::milliseconds wait) {
  MutexLock lock(mu_);
  auto it = streams_.find(key);
  if (it == streams_.end()) return std::nullopt;
  // A loop here, not a predicate: the analysis sees that the lock is held around the read (thread_annotations.h).
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!streams_.at(key).eof)
    if (ended_.wait_until(lock.native(), until) == std::cv_status::timeout) break;
  Stream& s = streams_.at(key);
  drain(s);
  if (s.matcher && !s.fired) s.fired = s.matcher->finish();
  std::optional<LogRuleFiring> fired = std::move(s.fired);
  if (s.read_fd >= 0) close(s.read_fd);
  close(s.log_fd);
  streams_.erase(key);
  lock.unlock();
  wake();  // the reader drops the descriptor from its poll set
  return fired;
}

}  // namespace allot::agent
