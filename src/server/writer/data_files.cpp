#include "server/writer/data_files.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace allot::server {
namespace {

namespace fs = std::filesystem;

// Whether `inner` is `outer` or lies below it (both made absolute and normal, without following links).
bool inside(const fs::path& outer, const fs::path& inner) {
  const fs::path o = fs::absolute(outer).lexically_normal(), i = fs::absolute(inner).lexically_normal();
  auto oi = o.begin(), ii = i.begin();
  for (; oi != o.end() && !oi->empty(); ++oi, ++ii)
    if (ii == i.end() || *oi != *ii) return false;
  return true;
}

// Sets `path` (never through a symbolic link) to `mode` when it allows more than `mode` does; names it in the log.
Status tighten(const fs::path& path, mode_t mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok_status();
    return Error::internal("cannot read the mode of " + path.string() + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) return ok_status();  // chmod would change what the link points at
  const mode_t now = st.st_mode & 07777;
  if ((now & ~mode) == 0) return ok_status();
  const mode_t want = now & mode;
  if (::chmod(path.c_str(), want) != 0)
    return Error::internal("cannot tighten the mode of " + path.string() + ": " + std::strerror(errno));
  spdlog::warn("{} was mode {:04o}, readable by others: tightened to {:04o} (docs/security.md, \"Files at rest\")", path.string(), now, want);
  return ok_status();
}

// Every file 0600 (at most) and directory 0700 below `dir`, the checkpoint directory's tree excepted.
Status tighten_tree(const fs::path& dir, const fs::path& skip) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    if (!skip.empty() && inside(skip, p)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    const bool is_dir = it->is_directory(ec) && !it->is_symlink(ec);
    if (auto st = tighten(p, is_dir ? 0700 : 0600); !st) return st;
  }
  if (ec) return Error::internal("cannot read the data directory " + dir.string() + ": " + ec.message());
  return ok_status();
}

// A new database file, created owner-only before SQLite opens it.
Status create_private(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return ok_status();
    return Error::internal("cannot create the database " + path.string() + ": " + std::strerror(errno));
  }
  ::close(fd);
  return ok_status();
}

}  // namespace

unsigned data_dir_mode(const std::string& data_dir, const std::string& checkpoint_dir) {
  return !checkpoint_dir.empty() && inside(data_dir, checkpoint_dir) ? 0711 : 0700;
}

Status secure_data_files(const DataFiles& files) {
  const fs::path dir(files.data_dir);
  const mode_t mode = data_dir_mode(files.data_dir, files.checkpoint_dir);
  std::error_code ec;
  const bool existed = fs::exists(dir, ec);
  if (!existed) {
    // Created owner-only (mkdir applies the umask, so the mode is set again after).
    fs::create_directories(dir, ec);
    if (ec) return Error::internal("cannot create the data directory " + dir.string() + ": " + ec.message());
    if (::chmod(dir.c_str(), mode) != 0)
      return Error::internal("cannot set the mode of the data directory " + dir.string() + ": " + std::strerror(errno));
  } else {
    if (auto st = tighten(dir, mode); !st) return st;
    const fs::path skip = files.checkpoint_dir.empty() || !inside(dir, files.checkpoint_dir) ? fs::path() : fs::path(files.checkpoint_dir);
    if (auto st = tighten_tree(dir, skip); !st) return st;
  }
  // The replicas' logs: their parent directory made owner-only before the first one is written.
  const fs::path logs = dir / "logs";
  if (!fs::exists(logs, ec)) {
    fs::create_directories(logs, ec);
    if (!ec && ::chmod(logs.c_str(), 0700) != 0) ec = std::error_code(errno, std::generic_category());
    if (ec) return Error::internal("cannot create the log directory " + logs.string() + ": " + ec.message());
  }
  if (files.sqlite_path.empty()) return ok_status();
  const fs::path db(files.sqlite_path);
  if (db.has_parent_path() && !fs::exists(db.parent_path(), ec)) {
    fs::create_directories(db.parent_path(), ec);
    if (!ec && ::chmod(db.parent_path().c_str(), 0700) != 0) ec = std::error_code(errno, std::generic_category());
    if (ec) return Error::internal("cannot create the directory " + db.parent_path().string() + ": " + ec.message());
  }
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    if (auto st = tighten(db.string() + suffix, 0600); !st) return st;
  return create_private(db);
}

}  // namespace allot::server
