#include "agent/run_as.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace allot::agent {
namespace {

Identity from_passwd(const passwd& pw) {
  Identity id{pw.pw_name, pw.pw_uid, pw.pw_gid, {}, pw.pw_dir ? pw.pw_dir : "/"};
  // getgrouplist fills at most `n` entries and says how many it needs when that is too few.
  int n = 32;
  for (int tries = 0; tries < 4; ++tries) {
    id.groups.assign(static_cast<size_t>(n), 0);
    int want = n;
    if (getgrouplist(pw.pw_name, pw.pw_gid, id.groups.data(), &want) >= 0) {
      id.groups.resize(static_cast<size_t>(want));
      return id;
    }
    n = want > n ? want : n * 2;
  }
  id.groups = {pw.pw_gid};  // the primary group alone rather than more privileges than the user has
  return id;
}

std::optional<Identity> find(const std::string& user) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  bool numeric = !user.empty() && user.find_first_not_of("0123456789") == std::string::npos && user.size() < 10;
  if (numeric) getpwuid_r(static_cast<uid_t>(std::stoul(user)), &pw, buf.data(), buf.size(), &found);
  else getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (!found) return std::nullopt;
  return from_passwd(pw);
}

}  // namespace

Result<Identity> lookup_user(const std::string& user) {
  if (user.empty()) return Error::invalid("--run-as needs a user name or numeric id, e.g. --run-as nobody");
  auto id = find(user);
  if (!id) return Error::invalid("--run-as " + user + ": no such user on this machine (see /etc/passwd)");
  return *id;
}

Identity current_identity() {
  if (auto id = find(std::to_string(geteuid()))) return *id;
  // A uid without a passwd entry (containers do this): still a valid identity for running as ourselves.
  Identity id{std::to_string(geteuid()), geteuid(), getegid(), {getegid()}, "/"};
  return id;
}

Result<Identity> replica_identity(const std::string& run_as, bool allow_root) {
  const uid_t self = geteuid();
  Identity who;
  if (run_as.empty()) {
    who = current_identity();
  } else {
    auto id = lookup_user(run_as);
    if (!id) return id.error();
    who = *id;
    if (self != 0 && who.uid != self)
      return Error::invalid("--run-as " + run_as + ": the agent runs as uid " + std::to_string(self) +
                            " and cannot switch to uid " + std::to_string(who.uid) +
                            "; start the agent as root or leave --run-as out to run replicas as the agent's user");
  }
  if (who.uid == 0 && !allow_root)
    return Error::invalid(std::string("replicas would run as root (") +
                          (run_as.empty() ? "the agent runs as root and no --run-as was given" : "--run-as " + run_as) +
                          "), and a job's command is whatever a cluster member submitted; pass --run-as USER "
                          "(e.g. --run-as nobody) to run them as an unprivileged user, or --allow-root to run "
                          "them as root anyway");
  return who;
}

Status give_dir_to(const std::string& dir, const Identity& who) {
  if (who.uid == geteuid()) return ok_status();
  // Opened without following a symlink and changed through the descriptor: a job that replaced one of its
  // directories with a link to /etc must not be handed /etc.
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const bool ok = fd >= 0 && fchown(fd, who.uid, who.gid) == 0 && fchmod(fd, 0700) == 0;
  const int err = errno;
  if (fd >= 0) close(fd);
  if (!ok)
    return Error::internal("cannot give " + dir + " to user " + who.name + " (uid " + std::to_string(who.uid) +
                           "): " + std::strerror(err));
  return ok_status();
}

}  // namespace allot::agent
