#include "server/log_store.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

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

std::string read_tail(const std::string& path, size_t tail) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  const size_t start = tail > 0 && tail < size ? size - tail : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string out(size - start, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  return out;
}

}  // namespace

std::string LogStore::path(const std::string& job, int rank) const {
  return dir_ + "/" + encode(job) + "/" + std::to_string(rank) + ".log";
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
  if (ec) return Error::internal("cannot create the log directory for job " + job + ": " + ec.message());
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
        if (!empty && read_tail(p, 1) != "\n") separator = "\n";
        separator += "allot: ==> attempt " + std::to_string(shown) + " of replica " + std::to_string(rank) +
                     " on node " + attempt->node + " <==\n";
      }
      std::ofstream mark(p + ".attempt", std::ios::trunc);
      mark << attempt->attempt << "\n";
      if (!mark) return Error::internal("cannot write the log of job " + job + " replica " + std::to_string(rank));
    }
  }
  {
    std::ofstream out(p, std::ios::binary | std::ios::app);
    out.write(separator.data(), static_cast<std::streamsize>(separator.size()));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return Error::internal("cannot write the log of job " + job + " replica " + std::to_string(rank));
  }
  if (fs::file_size(p, ec) > 2 * max_bytes_) {
    std::string kept = read_tail(p, max_bytes_);
    const std::string tmp = p + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(kept.data(), static_cast<std::streamsize>(kept.size()));
      if (!out) return Error::internal("cannot trim the log of job " + job);
    }
    fs::rename(tmp, p, ec);
    if (ec) return Error::internal("cannot trim the log of job " + job + ": " + ec.message());
  }
  return ok_status();
}

Result<std::string> LogStore::read(const std::string& job, int rank, size_t tail) const {
  std::lock_guard lock(mu_);
  return read_tail(path(job, rank), tail == 0 ? max_bytes_ : std::min(tail, 2 * max_bytes_));
}

Status LogStore::remove(const std::string& job) {
  std::lock_guard lock(mu_);
  std::error_code ec;
  fs::remove_all(dir_ + "/" + encode(job), ec);
  if (ec) return Error::internal("cannot remove the logs of job " + job + ": " + ec.message());
  return ok_status();
}

}  // namespace allot::server
