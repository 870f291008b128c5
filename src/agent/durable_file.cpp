#include "agent/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace allot::agent {

Status write_file_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Error::internal("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return Error::internal("cannot write " + tmp + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) return Error::internal("cannot sync " + tmp + ": " + std::strerror(errno));
  if (rename(tmp.c_str(), path.c_str()) != 0)
    return Error::internal("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  // The rename itself is durable once the directory is synced.
  if (int dfd = open(std::filesystem::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  return ok_status();
}

}  // namespace allot::agent
