#include <filesystem>

#include "store/mem_store.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace allot::store {

std::string sqlite_path_of(const std::string& url) {
  if (url.rfind("sqlite:", 0) != 0) return "";
  std::string path = url.substr(7);
  if (path.rfind("//", 0) == 0) path = path.substr(2);  // sqlite:///abs/path and sqlite://rel/path
  return path;
}

Result<std::unique_ptr<Store>> open_store(const std::string& url) {
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) {
    auto s = PgStore::open(url);
    if (!s) return s.error();
    return std::unique_ptr<Store>(std::move(*s));
  }
  if (url == "mem:" || url == "memory:") return std::unique_ptr<Store>(new MemStore());
  if (url.rfind("sqlite:", 0) != 0)
    return Error::invalid("unknown database URL '" + url + "'; use sqlite:PATH or postgresql://USER@HOST[:PORT]/DB");
  const std::string path = sqlite_path_of(url);
  if (path.empty()) return Error::invalid("--database sqlite: needs a file path, as in sqlite:./allot-data/allot.db");
  std::error_code ec;
  auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) return Error::internal("cannot create directory " + dir.string() + ": " + ec.message());
  auto s = SqliteStore::open(path);
  if (!s) return s.error();
  return std::unique_ptr<Store>(std::move(*s));
}

}  // namespace allot::store
