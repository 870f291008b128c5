#include "agent/kmsg.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allot::agent {

std::string kmsg_text(std::string_view record) {
  while (!record.empty() && (record.back() == '\n' || record.back() == '\r')) record.remove_suffix(1);
  if (record.empty() || record.front() == ' ') return "";
  // `prio,seq,usec,flags;`: digits and commas, then the flags field, then ';'.
  const size_t semi = record.find(';');
  if (semi != std::string_view::npos && semi < 64 && record.front() >= '0' && record.front() <= '9') {
    int commas = 0;
    for (size_t i = 0; i < semi; ++i) commas += record[i] == ',';
    if (commas >= 3) record.remove_prefix(semi + 1);
  }
  if (record.size() > KmsgReader::kMaxLine) record = record.substr(0, KmsgReader::kMaxLine);
  return std::string(record);
}

std::optional<XidEvent> parse_xid(std::string_view line) {
  constexpr std::string_view kMark = "NVRM: Xid (";
  const size_t at = line.find(kMark);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kMark.size());
  const size_t close = rest.find("): ");
  if (close == std::string_view::npos || close == 0 || close > 64) return std::nullopt;
  XidEvent e;
  e.device = std::string(rest.substr(0, close));
  rest.remove_prefix(close + 3);
  size_t digits = 0;
  while (digits < rest.size() && digits < 6 && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits == 0 || (digits < rest.size() && rest[digits] != ',' && rest[digits] != ' ')) return std::nullopt;
  e.xid = std::stoi(std::string(rest.substr(0, digits)));
  std::string_view text = line.substr(at);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  e.text = std::string(text.substr(0, 200));
  return e;
}

Result<KmsgReader> KmsgReader::open(const std::string& path) {
  KmsgReader r;
  r.path_ = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
    r.fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (r.fd_ < 0)
      return Error::precondition("cannot read the kernel log " + path + ": " + std::strerror(errno) +
                                 " (it needs root, or kernel.dmesg_restrict=0)");
    // Only what the kernel logs from now on: an XID of an earlier boot or before this agent is not this node's now.
    if (::lseek(r.fd_, 0, SEEK_END) < 0) {
      const int err = errno;
      ::close(r.fd_);
      return Error::precondition("cannot seek to the end of the kernel log " + path + ": " + std::strerror(err));
    }
    return r;
  }
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return Error::invalid("--kmsg " + path + " is neither /dev/kmsg nor a regular file");
    r.offset_ = static_cast<uint64_t>(st.st_size);
  }
  return r;
}

KmsgReader::KmsgReader(KmsgReader&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), offset_(o.offset_), lost_(o.lost_) {
  o.fd_ = -1;
}

KmsgReader& KmsgReader::operator=(KmsgReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    offset_ = o.offset_;
    lost_ = o.lost_;
    o.fd_ = -1;
  }
  return *this;
}

KmsgReader::~KmsgReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<std::string>> KmsgReader::read_new() { return fd_ >= 0 ? read_device() : read_file(); }

Result<std::vector<std::string>> KmsgReader::read_device() {
  std::vector<std::string> out;
  // Each read() of /dev/kmsg returns one whole record; a buffer smaller than the record fails with EINVAL.
  char buf[8192];
  for (size_t total = 0; total < kMaxRead;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EAGAIN) break;
      if (errno == EINTR) continue;
      if (errno == EPIPE) {  // records were overwritten before we read them; the next read goes on after them
        ++lost_;
        continue;
      }
      return Error::internal("cannot read the kernel log " + path_ + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    total += static_cast<size_t>(n);
    std::string_view rec(buf, static_cast<size_t>(n));
    // A record's message ends at its first newline; what follows is its dictionary (" KEY=value" lines).
    if (auto nl = rec.find('\n'); nl != std::string_view::npos) rec = rec.substr(0, nl);
    if (std::string text = kmsg_text(rec); !text.empty()) out.push_back(std::move(text));
  }
  return out;
}

Result<std::vector<std::string>> KmsgReader::read_file() {
  std::vector<std::string> out;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return out;  // not written yet: from its start once it is
    return Error::internal("cannot read the kernel log " + path_ + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Error::internal("cannot read the kernel log " + path_ + ": " + std::strerror(err));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < offset_) offset_ = 0;  // truncated or replaced: its lines are new
  std::string data;
  data.resize(static_cast<size_t>(std::min<uint64_t>(size - offset_, kMaxRead)));
  size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::pread(fd, data.data() + got, data.size() - got, static_cast<off_t>(offset_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  data.resize(got);
  // Whole lines only: a line being written is read once it ends, unless it alone fills the read.
  size_t end = data.rfind('\n');
  if (end == std::string::npos) {
    if (data.size() < kMaxRead) return out;
    end = data.size() - 1;
  }
  size_t start = 0;
  while (start <= end) {
    size_t nl = data.find('\n', start);
    if (nl == std::string::npos || nl > end) nl = end + 1;
    if (std::string text = kmsg_text(std::string_view(data).substr(start, nl - start)); !text.empty()) out.push_back(std::move(text));
    start = nl + 1;
  }
  offset_ += end + 1;
  return out;
}

}  // namespace allot::agent
