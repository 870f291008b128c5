#include "auth/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace allot::auth {

Status write_secret_file(const std::string& path, const std::string& text, const std::string& what) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error::internal("cannot write " + what + " " + tmp + ": " + std::strerror(errno));
  bool ok = ::fchmod(fd, 0600) == 0;
  ok = ok && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ok && ::fsync(fd) == 0;
  int saved = errno;
  ::close(fd);
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false, saved = errno;
  if (!ok) {
    std::remove(tmp.c_str());
    return Error::internal("cannot write " + what + " " + path + ": " + std::strerror(saved));
  }
  return ok_status();
}

Result<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::invalid("cannot read the token file " + path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
  if (line.empty()) return Error::invalid("the token file " + path + " is empty");
  return line;
}

}  // namespace allot::auth
