#include "server/lifecycle/log_store.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "auth/token.h"

namespace allot::server {

namespace fs = std::filesystem;

namespace {

// Letters, digits, '-' and '_' stay; everything else (including '.' and '/') becomes %XX.
std::string encode(const std::string& name) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : name) {
    if (std::isalnum(c) || c == '-' || c == '_') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// A directory name on Linux file systems is at most NAME_MAX (255) bytes.
constexpr size_t kMaxFileName = 255;
// What a long name keeps of its encoding in front of its hash, so that a person listing the directory still
// sees whose log it is.
constexpr size_t kKeptPrefix = 120;

}  // namespace

std::string LogStore::key(const std::string& job) {
  std::string enc = encode(job);
  if (enc.size() <= kMaxFileName) return enc;  // every log stored before long names were hashed is still here
  size_t cut = kKeptPrefix;
  while (cut > 0 && (enc[cut - 1] == '%' || (cut >= 2 && enc[cut - 2] == '%'))) --cut;  // not inside a %XX
  // '~' is never in an encoding (it becomes %7E), so a hashed key cannot be another name's plain one.
  return enc.substr(0, cut) + "~" + auth::hash_secret(job);
}

namespace {

// The last `tail` bytes of the file (all of it when tail is 0); "" when there is no such file (nothing logged),
// an error saying why when there is one that cannot be read.
Result<std::string> read_tail(const std::string& path, size_t tail) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) return std::string();
  if (ec) return Error::internal("cannot look at it: " + ec.message());
  if (status.type() != fs::file_type::regular) return Error::internal("it is not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::internal(std::string("cannot open it: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto end = in.tellg();
  if (end < 0) return Error::internal("cannot find its end");
  const auto size = static_cast<size_t>(end);
  const size_t start = tail > 0 && tail < size ? size - tail : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string out(size - start, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  if (!in) return Error::internal(std::string("cannot read it: ") + std::strerror(errno));
  return out;
}

// What an append that failed says: whose log, and why, so that the agent and an operator reading its answer
// know it was the server's disk and not the upload.
Error store_failed(const std::string& job, int rank, const std::string& why) {
  return Error::internal("the server cannot store the log of job " + job + " replica " + std::to_string(rank) + ": " + why);
}

}  // namespace

std::string LogStore::path(const std::string& job, int rank) const {
  return dir_ + "/" + key(job) + "/" + std::to_string(rank) + ".log";
}

int LogStore::last_attempt(const std::string& log_path) const {
  std::ifstream in(log_path + ".attempt");
  int a = -1;
  if (!(in >> a)) return -1;
  return a;
}

Status LogStore::append(const std::string& job, int rank, const std::string& data, const std::optional<Attempt>& attempt) {
  std::lock_guard lock(mu_);
  const std::string p = path(job, rank);
  std::error_code ec;
  fs::create_directories(fs::path(p).parent_path(), ec);
  if (ec) return store_failed(job, rank, "cannot create its directory: " + ec.message());
  std::string separator;
  if (attempt) {
    const int last = last_attempt(p);
    if (attempt->attempt != last) {
      const auto size = fs::file_size(p, ec);
      const bool empty = ec || size == 0;
      // A chunk below the job's folded base is an earlier job's of the same name: its number as it came.
      const int shown = attempt->attempt >= attempt->folded ? attempt->attempt - attempt->folded : attempt->attempt;
      if (!(empty && last < 0 && shown == 0)) {
        // A line of its own, even when the previous attempt's output ended without a newline.
        if (!empty) {
          auto end_byte = read_tail(p, 1);
          if (!end_byte) return store_failed(job, rank, end_byte.error().message);
          if (*end_byte != "\n") separator = "\n";
        }
        separator += "allot: ==> attempt " + std::to_string(shown) + " of replica " + std::to_string(rank) +
                     " on node " + attempt->node + " <==\n";
      }
      std::ofstream mark(p + ".attempt", std::ios::trunc);
      mark << attempt->attempt << "\n";
      if (!mark) return store_failed(job, rank, std::string("cannot write its attempt mark: ") + std::strerror(errno));
    }
  }
  {
    std::ofstream out(p, std::ios::binary | std::ios::app);
    out.write(separator.data(), static_cast<std::streamsize>(separator.size()));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return store_failed(job, rank, std::string("cannot write it: ") + std::strerror(errno));
  }
  if (fs::file_size(p, ec) > 2 * max_bytes_) {
    auto kept = read_tail(p, max_bytes_);
    if (!kept) return store_failed(job, rank, "cannot trim it: " + kept.error().message);
    const std::string tmp = p + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(kept->data(), static_cast<std::streamsize>(kept->size()));
      if (!out) return store_failed(job, rank, std::string("cannot trim it: ") + std::strerror(errno));
    }
    fs::rename(tmp, p, ec);
    if (ec) return store_failed(job, rank, "cannot trim it: " + ec.message());
  }
  return ok_status();
}

Result<std::string> LogStore::read(const std::string& job, int rank, size_t tail) const {
  std::lock_guard lock(mu_);
  auto text = read_tail(path(job, rank), tail == 0 ? max_bytes_ : std::min(tail, 2 * max_bytes_));
  if (!text) return Error::internal("the server cannot read the log of job " + job + " replica " + std::to_string(rank) + ": " + text.error().message);
  return text;
}

Status LogStore::remove(const std::string& job) {
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::remove_all(dir_ + "/" + key(job), ec);
  if (ec) return Error::internal("cannot remove the logs of job " + job + ": " + ec.message());
  return ok_status();
}

}  // namespace allot::server
